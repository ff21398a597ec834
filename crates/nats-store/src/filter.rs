//! Subject filter matching for the store (`*` one token, `>` one or more trailing tokens).
//! Token matching is nats-subject's; the store adds one rule of its own: an empty filter selects
//! every subject, like an empty consumer filter in nats-server.

/// True when `subject` (a literal subject) matches `filter` (which may contain wildcards).
/// An empty filter matches everything, like an empty consumer filter in nats-server.
pub fn subject_matches_filter(subject: &str, filter: &str) -> bool {
    if is_full_wildcard(filter) {
        return !subject.is_empty();
    }
    nats_subject::subject_matches_filter(subject, filter)
}

/// True when the filter contains no wildcard token. A byte scan: every literal lookup asks this
/// first, and splitting into tokens cost several hundred instructions per call.
pub(crate) fn is_literal(filter: &str) -> bool {
    let bytes = filter.as_bytes();
    if bytes.is_empty() {
        return false;
    }
    // Most filters hold neither byte: a branch-free pass (vectorised) settles those.
    if !bytes
        .iter()
        .fold(false, |seen, byte| seen | (*byte == b'*') | (*byte == b'>'))
    {
        return true;
    }
    !bytes.iter().enumerate().any(|(position, byte)| {
        (*byte == b'*' || *byte == b'>')
            && (position == 0 || bytes[position - 1] == b'.')
            && bytes.get(position + 1).is_none_or(|next| *next == b'.')
    })
}

/// True when the filter selects every subject.
pub(crate) fn is_full_wildcard(filter: &str) -> bool {
    filter.is_empty() || filter == ">"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching() {
        assert!(subject_matches_filter("a.b.c", "a.b.c"));
        assert!(subject_matches_filter("a.b.c", "a.*.c"));
        assert!(subject_matches_filter("a.b.c", "a.>"));
        assert!(subject_matches_filter("a.b.c", ">"));
        assert!(subject_matches_filter("a.b.c", ""));
        assert!(!subject_matches_filter("a.b", "a.b.>"));
        assert!(!subject_matches_filter("a.b.c", "a.*"));
        assert!(!subject_matches_filter("a.b", "a.b.c"));
        assert!(subject_matches_filter("a", "*"));
        assert!(!subject_matches_filter("a.b", "*"));
    }

    /// The matcher this crate used before delegating to nats-subject, kept as the reference the
    /// delegation is checked against.
    fn previous_matcher(subject: &str, filter: &str) -> bool {
        if filter.is_empty() || filter == ">" {
            return !subject.is_empty();
        }
        let mut subject_tokens = subject.split('.');
        let mut filter_tokens = filter.split('.');
        loop {
            match (filter_tokens.next(), subject_tokens.next()) {
                (None, None) => return true,
                (Some(">"), Some(_)) => return true,
                (Some("*"), Some(_)) => {}
                (Some(f), Some(s)) if f == s => {}
                _ => return false,
            }
        }
    }

    #[test]
    fn nats_subject_agrees_on_edge_cases() {
        let subjects = [
            "a", "a.b", "a.b.c", "a..c", "a.", ".a", ".", "*", ">", "a.*", "a.>", "ab.c", "a.bc",
            "a.b.c.d",
        ];
        let filters = [
            "", ">", "*", "a", "a.*", "a.>", "*.>", "a.*.c", "a..c", "a.", ".a", "*.*", ">.c",
            "a.>.c", "*.b.*", "a.b.c.d", "a.b.c.>", "ab", "a.bc", ".", "a*", "*a", ">a", "a>",
            "a.b*.c", "a.*b", "*.", ".>", "..*", ">>",
        ];
        for subject in subjects {
            for filter in filters {
                assert_eq!(
                    subject_matches_filter(subject, filter),
                    previous_matcher(subject, filter),
                    "subject {subject:?} filter {filter:?}"
                );
                assert_eq!(
                    is_literal(filter),
                    !filter.is_empty() && !filter.split('.').any(|t| t == "*" || t == ">"),
                    "filter {filter:?}"
                );
                assert_eq!(
                    is_literal(filter),
                    !filter.is_empty() && nats_subject::is_literal(filter),
                    "filter {filter:?}"
                );
            }
        }
    }
}

//! Subject filter matching (`*` one token, `>` one or more trailing tokens).
//! Kept private to the store so it does not wait on nats-subject; semantics are nats-server's.

/// True when `subject` (a literal subject) matches `filter` (which may contain wildcards).
/// An empty filter matches everything, like an empty consumer filter in nats-server.
pub fn subject_matches_filter(subject: &str, filter: &str) -> bool {
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

/// True when the filter contains no wildcard token.
pub(crate) fn is_literal(filter: &str) -> bool {
    !filter.is_empty() && !filter.split('.').any(|token| token == "*" || token == ">")
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
}

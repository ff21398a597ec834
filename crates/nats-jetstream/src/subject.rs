//! The bits of the NATS subject grammar JetStream needs. Matching, overlap, subset and
//! validation come from `nats-subject` (one grammar for routing and streams); subject
//! transforms (`{{wildcard(n)}}`, `$n`) live here because only streams use them.

/// Whether `subject` (a literal, or itself a filter) is matched by `filter`.
pub(crate) fn matches(filter: &str, subject: &str) -> bool {
    nats_subject::subject_matches_filter(subject, filter)
}

/// Whether some literal subject could match both filters.
pub(crate) fn overlaps(first: &str, second: &str) -> bool {
    nats_subject::subjects_overlap(first, second)
}

/// Whether `subset` matches only subjects `superset` also matches.
pub(crate) fn is_subset(subset: &str, superset: &str) -> bool {
    nats_subject::is_subset_match(subset, superset)
}

/// A valid subject or filter: non-empty tokens, no whitespace, `>` only last, wildcards alone.
pub(crate) fn is_valid_filter(subject: &str) -> bool {
    nats_subject::is_valid_subject(subject)
}

/// A destination token's wildcard reference: `{{wildcard(n)}}` or legacy `$n`; `Ok(None)` for
/// a literal token, `Err` for an unsupported mapping function.
fn placeholder(token: &str) -> Result<Option<usize>, ()> {
    let trimmed = token.trim();
    if let Some(number) = trimmed.strip_prefix('$') {
        return number.parse().map(Some).map_err(|_| ());
    }
    let Some(inner) = trimmed
        .strip_prefix("{{")
        .and_then(|rest| rest.strip_suffix("}}"))
    else {
        return Ok(None);
    };
    let inner = inner.trim();
    let argument = inner
        .strip_prefix("wildcard(")
        .or_else(|| inner.strip_prefix("Wildcard("))
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or(())?;
    argument.trim().parse().map(Some).map_err(|_| ())
}

/// nats-server's `NewSubjectTransform` rules: both subjects valid, no `*` in the destination,
/// `>` in both or neither, wildcard references within the source's `*` count.
pub(crate) fn is_valid_transform(source: &str, destination: &str) -> bool {
    if destination.is_empty() {
        // No destination: no transform at all.
        return true;
    }
    let source = if source.is_empty() { ">" } else { source };
    if !is_valid_filter(source) || !is_valid_filter(destination) {
        return false;
    }
    let source_wildcards = source.split('.').filter(|token| *token == "*").count();
    let source_tail = source.split('.').next_back() == Some(">");
    let destination_tail = destination.split('.').next_back() == Some(">");
    if destination.split('.').any(|token| token == "*") || source_tail != destination_tail {
        return false;
    }
    destination
        .split('.')
        .all(|token| match placeholder(token) {
            Ok(None) => true,
            Ok(Some(index)) => index >= 1 && index <= source_wildcards,
            Err(()) => false,
        })
}

/// Map `subject` (matched by `source`) onto `destination`: `{{wildcard(n)}}` / `$n` take the
/// n-th token matched by a `*` of the source, a trailing `>` takes what the source's `>`
/// matched. `None` when the subject does not match.
pub(crate) fn transform(source: &str, destination: &str, subject: &str) -> Option<String> {
    if destination.is_empty() {
        return None;
    }
    let source = if source.is_empty() { ">" } else { source };
    if !matches(source, subject) {
        return None;
    }
    let subject_tokens: Vec<&str> = subject.split('.').collect();
    let mut captured: Vec<&str> = Vec::new();
    let mut tail = String::new();
    for (index, token) in source.split('.').enumerate() {
        match token {
            "*" => captured.push(subject_tokens.get(index)?),
            ">" => tail = subject_tokens.get(index..)?.join("."),
            _ => {}
        }
    }
    let mut output: Vec<String> = Vec::new();
    for token in destination.split('.') {
        if token == ">" {
            output.push(tail.clone());
            continue;
        }
        match placeholder(token) {
            Ok(Some(position)) => output.push(captured.get(position.checked_sub(1)?)?.to_string()),
            Ok(None) => output.push(token.to_string()),
            Err(()) => return None,
        }
    }
    Some(output.join("."))
}

#[cfg(test)]
mod tests {
    #[test]
    fn transforms() {
        assert_eq!(
            transform("orders.*", "copy.$1", "orders.a").as_deref(),
            Some("copy.a")
        );
        assert!(!is_valid_transform("orders.*", "copy.*"));
        assert!(!is_valid_transform("D15", "rp.>"));
        assert!(is_valid_transform("in.>", "out.>"));
        assert!(!is_valid_transform("a.*", "b.{{wildcard(2)}}"));
        assert_eq!(transform(">", "r.>", "a.b").as_deref(), Some("r.a.b"));
        assert_eq!(
            transform("a.*.*", "x.{{wildcard(2)}}.{{wildcard(1)}}", "a.1.2").as_deref(),
            Some("x.2.1")
        );
        assert_eq!(transform("a.*", "fixed", "a.1").as_deref(), Some("fixed"));
        assert_eq!(transform("a.*", "fixed", "b.1"), None);
    }

    use super::*;

    #[test]
    fn matching() {
        assert!(matches("orders.>", "orders.new"));
        assert!(matches("orders.>", "orders.new.eu"));
        assert!(!matches("orders.>", "orders"));
        assert!(matches("orders.*", "orders.new"));
        assert!(!matches("orders.*", "orders.new.eu"));
        assert!(matches(">", "a"));
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "a.c"));
    }

    #[test]
    fn overlap_and_subset() {
        assert!(overlaps("orders.>", "orders.new"));
        assert!(overlaps("orders.*", "*.new"));
        assert!(!overlaps("orders.*", "orders.new.eu"));
        assert!(overlaps("orders.*.eu", "orders.>"));
        assert!(is_subset("orders.new", "orders.>"));
        assert!(!is_subset("orders.>", "orders.*"));
        assert!(is_subset("orders.*", "orders.>"));
    }

    #[test]
    fn validity() {
        assert!(is_valid_filter("a.*.>"));
        assert!(!is_valid_filter("a.>.b"));
        assert!(!is_valid_filter("a..b"));
        assert!(!is_valid_filter("a b"));
        assert!(!is_valid_filter(""));
    }
}

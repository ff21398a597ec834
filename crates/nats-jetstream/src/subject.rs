//! The bits of the NATS subject grammar JetStream needs: validation, wildcard matching and
//! overlap between two filters. Kept local so JetStream does not depend on the sublist.

/// Whether `subject` (a literal, or itself a filter) is matched by `filter`.
pub(crate) fn matches(filter: &str, subject: &str) -> bool {
    let mut filter_tokens = filter.split('.');
    let mut subject_tokens = subject.split('.');
    loop {
        match (filter_tokens.next(), subject_tokens.next()) {
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(_)) => {}
            (Some(f), Some(s)) if f == s => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Whether some literal subject could match both filters.
pub(crate) fn overlaps(first: &str, second: &str) -> bool {
    let mut first_tokens = first.split('.');
    let mut second_tokens = second.split('.');
    loop {
        match (first_tokens.next(), second_tokens.next()) {
            (Some(">"), Some(_)) | (Some(_), Some(">")) => return true,
            (Some("*"), Some(_)) | (Some(_), Some("*")) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Whether `subset` matches only subjects `superset` also matches.
pub(crate) fn is_subset(subset: &str, superset: &str) -> bool {
    let mut sub_tokens = subset.split('.');
    let mut super_tokens = superset.split('.');
    loop {
        match (sub_tokens.next(), super_tokens.next()) {
            (Some(_), Some(">")) => return true,
            (Some(">"), Some(_)) => return false,
            (Some(_), Some("*")) => {}
            (Some("*"), Some(_)) => return false,
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// A valid subject or filter: non-empty tokens, no whitespace, `>` only last, wildcards alone.
pub(crate) fn is_valid_filter(subject: &str) -> bool {
    if subject.is_empty() {
        return false;
    }
    let tokens: Vec<&str> = subject.split('.').collect();
    let last = tokens.len() - 1;
    tokens.iter().enumerate().all(|(index, token)| {
        if token.is_empty() || token.chars().any(|c| c.is_whitespace()) {
            return false;
        }
        *token != ">" || index == last
    })
}

/// A literal subject: valid and without wildcard tokens.
pub(crate) fn is_literal(subject: &str) -> bool {
    is_valid_filter(subject) && subject.split('.').all(|token| token != "*" && token != ">")
}

#[cfg(test)]
mod tests {
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
        assert!(is_literal("a.b"));
        assert!(!is_literal("a.*"));
    }
}

//! The bits of the NATS subject grammar JetStream needs, as thin names over `nats-subject`
//! (one grammar for routing and streams): matching, overlap, subset, validation, and the
//! subject-transform validation (compiled transforms are `nats_subject::SubjectTransform`).

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

pub(crate) use nats_subject::is_valid_transform;

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
    }
}

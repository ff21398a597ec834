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

/// Map `subject` (matched by `source`) onto `destination`: `*` and `>` in the destination take
/// the tokens the source's wildcards matched, in order; `{{wildcard(n)}}` takes the n-th one;
/// a literal destination is used as is. `None` when the subject does not match.
pub(crate) fn transform(source: &str, destination: &str, subject: &str) -> Option<String> {
    let source = if source.is_empty() { ">" } else { source };
    if !matches(source, subject) {
        return None;
    }
    let subject_tokens: Vec<&str> = subject.split('.').collect();
    let mut captured: Vec<String> = Vec::new();
    for (index, token) in source.split('.').enumerate() {
        match token {
            "*" => captured.push(subject_tokens.get(index)?.to_string()),
            ">" => captured.push(subject_tokens.get(index..)?.join(".")),
            _ => {}
        }
    }
    let mut next_capture = 0;
    let mut output: Vec<String> = Vec::new();
    for token in destination.split('.') {
        let trimmed = token.trim();
        if trimmed == "*" || trimmed == ">" {
            output.push(captured.get(next_capture)?.clone());
            next_capture += 1;
        } else if let Some(inner) = trimmed
            .strip_prefix("{{")
            .and_then(|rest| rest.strip_suffix("}}"))
        {
            let inner = inner.trim();
            let number = inner
                .strip_prefix("wildcard(")
                .or_else(|| inner.strip_prefix("Wildcard("))
                .and_then(|rest| rest.strip_suffix(')'))?;
            let position: usize = number.trim().parse().ok()?;
            output.push(captured.get(position.checked_sub(1)?)?.clone());
        } else if let Some(number) = trimmed.strip_prefix('$') {
            let position: usize = number.parse().ok()?;
            output.push(captured.get(position.checked_sub(1)?)?.clone());
        } else {
            output.push(token.to_string());
        }
    }
    Some(output.join("."))
}

#[cfg(test)]
mod tests {
    #[test]
    fn transforms() {
        assert_eq!(
            transform("orders.*", "copy.*", "orders.a").as_deref(),
            Some("copy.a")
        );
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

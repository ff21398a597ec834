//! Truth tables for the subject grammar, following nats-server's sublist.go semantics.

use nats_subject::*;

#[test]
fn valid_subjects() {
    for subject in [
        "foo",
        "foo.bar",
        "*",
        ">",
        "foo.*",
        "foo.>",
        "*.*.>",
        "foo*",
        "foo.*bar",
        "foo.>bar",
        "a.b.c.d.e",
        "$JS.API.>",
        "_INBOX.abc.*",
    ] {
        assert!(is_valid_subject(subject), "{subject:?} should be valid");
    }
    for subject in [
        "",
        ".",
        "foo.",
        ".foo",
        "foo..bar",
        "foo.>.bar",
        ">.foo",
        "foo bar",
        "foo\tbar",
        "foo.\r",
        "foo\n",
        "a.b c",
    ] {
        assert!(!is_valid_subject(subject), "{subject:?} should be invalid");
    }
}

#[test]
fn literal_subjects() {
    for subject in [
        "foo",
        "foo.bar",
        "foo*",
        "foo.*bar",
        "foo.>bar",
        "$JS.API.INFO",
    ] {
        assert!(is_valid_literal_subject(subject), "{subject:?}");
        assert!(is_literal(subject));
    }
    for subject in ["*", ">", "foo.*", "foo.>", "*.bar", "", "foo..bar"] {
        assert!(!is_valid_literal_subject(subject), "{subject:?}");
    }
}

#[test]
fn queue_names() {
    assert!(is_valid_queue_name("workers"));
    assert!(is_valid_queue_name("q.*"));
    assert!(!is_valid_queue_name(""));
    assert!(!is_valid_queue_name("a b"));
    assert!(!is_valid_queue_name("a\tb"));
}

#[test]
fn tokens() {
    assert_eq!(tokenize("a.b.c").collect::<Vec<_>>(), vec!["a", "b", "c"]);
    assert_eq!(token_count("a.b.c"), 3);
    assert_eq!(token_count("a"), 1);
}

#[test]
fn subject_against_filter() {
    let table = [
        ("foo", "foo", true),
        ("foo", "bar", false),
        ("foo.bar", "foo.*", true),
        ("foo.bar", "*.bar", true),
        ("foo.bar", "*", false),
        ("foo.bar", ">", true),
        ("foo", ">", true),
        ("foo", "foo.>", false),
        ("foo.bar.baz", "foo.>", true),
        ("foo.bar.baz", "foo.*", false),
        ("foo.bar.baz", "foo.*.baz", true),
        ("foo.bar.baz", "foo.*.>", true),
        ("foo.bar", "foo.bar.baz", false),
        ("foo.bar.baz", "foo.bar", false),
        ("foo*", "foo*", true),
        ("foox", "foo*", false),
    ];
    for (subject, filter, expected) in table {
        assert_eq!(
            subject_matches_filter(subject, filter),
            expected,
            "{subject} ~ {filter}"
        );
    }
}

#[test]
fn overlap() {
    let table = [
        ("foo.*", "foo.bar", true),
        ("foo.*", "bar.*", false),
        ("foo.>", "foo.bar.baz", true),
        ("foo.>", "foo", false),
        ("*.bar", "foo.*", true),
        ("foo.*.baz", "foo.bar.*", true),
        ("foo.*", "foo.*.x", false),
        (">", "a", true),
        ("a.b", "a.c", false),
        ("a.b", "a.b", true),
        ("*", ">", true),
        ("foo.>", "*.*.>", true),
        ("foo.>", "bar.>", false),
        ("a.*.c", "a.b.d", false),
        ("a", "a.b", false),
    ];
    for (first, second, expected) in table {
        assert_eq!(
            subjects_overlap(first, second),
            expected,
            "{first} / {second}"
        );
        assert_eq!(
            subjects_overlap(second, first),
            expected,
            "{second} / {first}"
        );
    }
}

#[test]
fn subset() {
    let table = [
        ("foo.bar", "foo.*", true),
        ("foo.*", "foo.>", true),
        ("foo.>", "foo.*", false),
        ("foo.*", "foo.bar", false),
        ("foo.bar", "foo.bar", true),
        (">", ">", true),
        ("foo.>", ">", true),
        (">", "foo.>", false),
        ("foo", "foo.>", false),
        ("*.bar", "foo.*", false),
        ("foo.*", "*.*", true),
        ("foo.bar.baz", "foo.>", true),
        ("foo.*.baz", "foo.>", true),
        ("foo.*.baz", "foo.*.*", true),
        ("foo.*.*", "foo.*.baz", false),
        ("foo.bar", "foo.bar.>", false),
    ];
    for (subject, filter, expected) in table {
        assert_eq!(
            is_subset_match(subject, filter),
            expected,
            "{subject} ⊆ {filter}"
        );
    }
}

mod brute_force {
    use nats_subject::*;
    use proptest::prelude::*;

    /// Every literal subject of 1 to 5 tokens over {a, b, z}: long and varied enough to witness
    /// any overlap or any subset violation between the filters generated below (at most 4 tokens
    /// over {a, b, *, >}).
    fn literals() -> Vec<String> {
        let mut all = Vec::new();
        let mut current: Vec<String> = vec![String::new()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for prefix in &current {
                for token in ["a", "b", "z"] {
                    let subject = if prefix.is_empty() {
                        token.to_owned()
                    } else {
                        format!("{prefix}.{token}")
                    };
                    all.push(subject.clone());
                    next.push(subject);
                }
            }
            current = next;
        }
        all
    }

    fn filter() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "*"]), 1..4).prop_flat_map(
            |tokens| {
                let joined = tokens.join(".");
                prop_oneof![
                    Just(joined.clone()),
                    Just(format!("{joined}.>")),
                    Just(">".to_owned())
                ]
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn every_match_starts_with_the_literal_prefix(filter in filter()) {
            let prefix = literal_prefix(&filter);
            prop_assert!(filter.starts_with(prefix));
            for subject in literals() {
                if subject_matches_filter(&subject, &filter) {
                    prop_assert!(subject.starts_with(prefix), "{} ~ {} ({})", subject, filter, prefix);
                }
            }
        }

        #[test]
        fn overlap_and_subset_agree_with_enumeration(first in filter(), second in filter()) {
            let literals = literals();
            let matched_by = |filter: &str| -> Vec<bool> {
                literals.iter().map(|subject| subject_matches_filter(subject, filter)).collect()
            };
            let first_matches = matched_by(&first);
            let second_matches = matched_by(&second);
            let overlap = first_matches.iter().zip(&second_matches).any(|(x, y)| *x && *y);
            prop_assert_eq!(subjects_overlap(&first, &second), overlap, "overlap {} {}", first, second);
            let subset = first_matches.iter().zip(&second_matches).all(|(x, y)| !*x || *y);
            prop_assert_eq!(is_subset_match(&first, &second), subset, "subset {} {}", first, second);
        }
    }
}

#[test]
fn literal_prefixes() {
    for (filter, prefix) in [
        ("a.b.*.c", "a.b."),
        ("a.>", "a."),
        ("*", ""),
        (">", ""),
        ("*.a", ""),
        ("a.b", "a.b"),
        ("a*.b.*", "a*.b."),
        ("$JS.ACK.S.C.*.*.*.*.*", "$JS.ACK.S.C."),
    ] {
        assert_eq!(literal_prefix(filter), prefix, "{filter}");
    }
}

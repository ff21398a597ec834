//! Arbitrary subjects and filters through the grammar and a Sublist: no panics, and the Sublist
//! agrees with `subject_matches_filter`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nats_subject::{
    is_subset_match, is_valid_literal_subject, is_valid_subject, subject_matches_filter,
    subjects_overlap, Sublist,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('|');
    let subject = parts.next().unwrap_or_default();
    let filters: Vec<&str> = parts.collect();
    let sublist: Sublist<usize> = Sublist::with_cache_capacity(4);
    for (index, filter) in filters.iter().enumerate() {
        let inserted = sublist.insert(filter, None, index).is_ok();
        assert_eq!(inserted, is_valid_subject(filter));
        let _ = subjects_overlap(subject, filter);
        let _ = is_subset_match(subject, filter);
    }
    if is_valid_literal_subject(subject) {
        let mut expected: Vec<usize> = filters
            .iter()
            .enumerate()
            .filter(|(_, filter)| is_valid_subject(filter) && subject_matches_filter(subject, filter))
            .map(|(index, _)| index)
            .collect();
        expected.sort_unstable();
        for _ in 0..2 {
            let mut got = sublist.matches(subject).plain.clone();
            got.sort_unstable();
            assert_eq!(got, expected);
        }
    } else {
        let _ = sublist.matches(subject);
    }
});

//! Wildcard queries stay exact while the subject tree is maintained incrementally: after
//! appends, removals, purges (by subject, by wildcard, all), compaction and a reopen (clean and
//! after a crash), every wildcard pending count, next/last lookup and subject listing equals a
//! plain model of the live messages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use nats_store::{
    subject_matches_filter, FileStore, FileStoreOptions, MemStore, StreamStore, StreamStoreConfig,
    SyncPolicy,
};

/// Subjects that share prefixes, end inside each other and differ in depth, so tree nodes are
/// both terminal and inner and lose or keep their branch as subjects come and go.
const SUBJECTS: &[&str] = &[
    "a",
    "a.b",
    "a.b.c",
    "a.c",
    "a.b.d",
    "b.b.c",
    "b",
    "a.b.c.d.e",
    "c.a.b",
    "b.a",
    "ab",
    "a.bc",
    "x.y",
    "orders.eu.new",
    "orders.us.new",
    "orders.eu.paid",
];
const FILTERS: &[&str] = &[
    "*",
    "a.*",
    "*.b",
    "a.>",
    "*.*.c",
    "a.b.>",
    "*.>",
    "a.*.c",
    "*.*",
    "b.*.c",
    "*.b.*",
    "orders.*.new",
    "orders.eu.>",
    "q.>",
    "*.*.*.*.*",
];

/// Live messages by sequence.
type Model = BTreeMap<u64, String>;

fn check(store: &mut dyn StreamStore, model: &Model, when: &str) {
    let last_seq = store.state().last_seq;
    for filter in FILTERS {
        let filters = vec![filter.to_string()];
        let matching: Vec<(u64, &String)> = model
            .iter()
            .filter(|(_, subject)| subject_matches_filter(subject, filter))
            .map(|(seq, subject)| (*seq, subject))
            .collect();
        for start in [0, 1, last_seq / 3, last_seq / 2, last_seq, last_seq + 1] {
            let expected = matching.iter().filter(|(seq, _)| *seq >= start).count() as u64;
            assert_eq!(
                store.num_pending_matching(&filters, start, false),
                expected,
                "{when}: num_pending({filter}, {start})"
            );
            let last_per_subject: BTreeSet<&String> = matching
                .iter()
                .map(|(_, subject)| *subject)
                .filter(|subject| {
                    matching
                        .iter()
                        .rev()
                        .find(|(_, other)| other == subject)
                        .is_some_and(|(seq, _)| *seq >= start)
                })
                .collect();
            assert_eq!(
                store.num_pending_matching(&filters, start, true),
                last_per_subject.len() as u64,
                "{when}: num_pending({filter}, {start}, last per subject)"
            );
        }
        let mut walked = Vec::new();
        let mut cursor = 0;
        while let Some(message) = store.load_next_matching(&filters, cursor).unwrap() {
            walked.push(message.seq);
            cursor = message.seq + 1;
        }
        let expected: Vec<u64> = matching.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(
            walked, expected,
            "{when}: load_next_matching({filter}) walk"
        );
        assert_eq!(
            store.load_last(filter).unwrap().map(|message| message.seq),
            matching.last().map(|(seq, _)| *seq),
            "{when}: load_last({filter})"
        );
        let subjects: BTreeSet<String> = matching.iter().map(|(_, s)| s.to_string()).collect();
        let listed: BTreeSet<String> = store.subjects_state(filter).into_keys().collect();
        assert_eq!(listed, subjects, "{when}: subjects_state({filter})");
    }
    // Two overlapping filters: each message counts once.
    let pair = vec!["a.*".to_string(), "a.b.>".to_string()];
    let expected = model
        .values()
        .filter(|subject| {
            pair.iter()
                .any(|filter| subject_matches_filter(subject, filter))
        })
        .count() as u64;
    assert_eq!(
        store.num_pending_matching(&pair, 0, false),
        expected,
        "{when}: a.* + a.b.>"
    );
}

fn append(store: &mut dyn StreamStore, model: &mut Model, rounds: usize) {
    for round in 0..rounds {
        for (index, subject) in SUBJECTS.iter().enumerate() {
            if (round + index) % 3 == 0 {
                continue;
            }
            let (seq, _) = store.store_msg(subject, b"", b"payload", None).unwrap();
            model.insert(seq, subject.to_string());
        }
    }
}

fn purge_subject(store: &mut dyn StreamStore, model: &mut Model, filter: &str) {
    let expected = model
        .values()
        .filter(|subject| subject_matches_filter(subject, filter))
        .count() as u64;
    assert_eq!(
        store.purge_ex(filter, 0, 0).unwrap(),
        expected,
        "purge {filter}"
    );
    model.retain(|_, subject| !subject_matches_filter(subject, filter));
}

/// Every mutation the tree must follow, checked after each step.
fn exercise(store: &mut dyn StreamStore, model: &mut Model) {
    append(store, model, 6);
    check(store, model, "appended");
    // Removing every message of a subject drops its branch; removing some keeps it.
    let doomed: Vec<u64> = model
        .iter()
        .filter(|(seq, subject)| subject.as_str() == "a.b" || (*seq % 4 == 0))
        .map(|(seq, _)| *seq)
        .collect();
    for seq in doomed {
        assert!(store.remove(seq).unwrap());
        model.remove(&seq);
    }
    check(store, model, "removed");
    purge_subject(store, model, "a.b.c");
    check(store, model, "purged a.b.c");
    purge_subject(store, model, "orders.*.new");
    check(store, model, "purged orders.*.new");
    append(store, model, 2);
    check(store, model, "appended again");
    let floor = *model.keys().nth(model.len() / 2).unwrap();
    store.compact(floor).unwrap();
    model.retain(|seq, _| *seq >= floor);
    check(store, model, "compacted");
}

#[test]
fn memory_store_wildcards_follow_every_mutation() {
    let mut store = MemStore::new(StreamStoreConfig::default());
    let mut model = Model::new();
    exercise(&mut store, &mut model);
    store.purge().unwrap();
    model.clear();
    check(&mut store, &model, "purged all");
    append(&mut store, &mut model, 2);
    check(&mut store, &model, "appended after purge");
}

fn open(dir: &Path) -> FileStore {
    let options = FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(60)),
        block_size: 2048,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    };
    FileStore::open(dir, StreamStoreConfig::default(), options).unwrap()
}

#[test]
fn file_store_wildcards_follow_every_mutation_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let mut model = Model::new();
    exercise(&mut store, &mut model);
    store.close().unwrap();
    let mut store = open(dir.path());
    check(&mut store, &model, "reopened after close");
    append(&mut store, &mut model, 2);
    store.flush().unwrap();
    store.abandon();
    let mut store = open(dir.path());
    check(&mut store, &model, "reopened after crash");
    purge_subject(&mut store, &mut model, "a.>");
    check(&mut store, &model, "purged a.> after reopen");
    store.purge().unwrap();
    model.clear();
    check(&mut store, &model, "purged all");
    append(&mut store, &mut model, 2);
    check(&mut store, &model, "appended after purge");
    store.close().unwrap();
    let mut store = open(dir.path());
    check(&mut store, &model, "reopened after purge");
}

/// A wildcard match further away than the short scan a `load_next_matching` tries first: the
/// rest is bounded by the matching subjects' first/last from the tree.
#[test]
fn wildcard_next_beyond_the_short_scan() {
    let mut store = MemStore::new(StreamStoreConfig::default());
    for _ in 0..10_000 {
        store.store_msg("filler.x", b"", b"", None).unwrap();
    }
    let (first, _) = store.store_msg("orders.eu.new", b"", b"", None).unwrap();
    for _ in 0..10_000 {
        store.store_msg("filler.y", b"", b"", None).unwrap();
    }
    let (second, _) = store.store_msg("orders.us.new", b"", b"", None).unwrap();
    let filters = vec!["orders.*.new".to_string()];
    let next = |store: &mut MemStore, start| {
        store
            .load_next_matching(&filters, start)
            .unwrap()
            .map(|message| message.seq)
    };
    assert_eq!(next(&mut store, 1), Some(first));
    assert_eq!(next(&mut store, first + 1), Some(second));
    assert_eq!(next(&mut store, second + 1), None);
    let both = vec!["nothing.*".to_string(), "orders.us.new".to_string()];
    let found = store.load_next_matching(&both, 1).unwrap();
    assert_eq!(found.map(|message| message.seq), Some(second));
    assert!(store.remove(second).unwrap());
    assert_eq!(next(&mut store, first + 1), None);
}

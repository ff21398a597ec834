//! Model-based property tests: random operation sequences applied to a store and to a plain
//! BTreeMap model; every observation must agree, including across close/reopen and simulated
//! crashes (FileStore flushed to the OS, then abandoned).

use std::collections::BTreeMap;
use std::time::Duration;

use nats_store::{
    FileStore, FileStoreOptions, MemStore, StreamStore, StreamStoreConfig, SyncPolicy,
};
use proptest::prelude::*;

const SUBJECTS: [&str; 5] = ["a.1", "a.2", "b.1", "b.2.x", "c"];
const FILTERS: [&str; 6] = [">", "a.*", "a.1", "b.>", "*.1", "zzz"];

#[derive(Debug, Clone)]
enum Op {
    Store { subject: usize, len: usize },
    Remove { pick: usize },
    Erase { pick: usize },
    Purge,
    PurgeSubject { filter: usize, keep: u64 },
    Compact { ahead: u64 },
    Skip { count: u64 },
    Reopen { clean: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..SUBJECTS.len(), 0..300usize).prop_map(|(subject, len)| Op::Store { subject, len }),
        3 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Erase { pick }),
        1 => Just(Op::Purge),
        1 => (0..FILTERS.len(), 0..3u64).prop_map(|(filter, keep)| Op::PurgeSubject { filter, keep }),
        1 => (0..8u64).prop_map(|ahead| Op::Compact { ahead }),
        1 => (1..4u64).prop_map(|count| Op::Skip { count }),
        2 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
    ]
}

#[derive(Default)]
struct Model {
    messages: BTreeMap<u64, (String, Vec<u8>)>,
    last_seq: u64,
    /// Discard-old limits (0: none), applied as nats-server does after each store.
    max_msgs: usize,
    max_per_subject: usize,
}

impl Model {
    fn enforce_limits(&mut self, subject: &str) {
        if self.max_per_subject > 0 {
            loop {
                let seqs: Vec<u64> = self
                    .messages
                    .iter()
                    .filter(|(_, (s, _))| s == subject)
                    .map(|(seq, _)| *seq)
                    .collect();
                if seqs.len() <= self.max_per_subject {
                    break;
                }
                self.messages.remove(&seqs[0]);
            }
        }
        while self.max_msgs > 0 && self.messages.len() > self.max_msgs {
            let first = *self.messages.keys().next().unwrap();
            self.messages.remove(&first);
        }
    }
}

impl Model {
    fn first_seq(&self) -> u64 {
        self.messages
            .keys()
            .next()
            .copied()
            .unwrap_or(self.last_seq + 1)
    }
    fn matches(subject: &str, filter: &str) -> bool {
        nats_store::subject_matches_filter(subject, filter)
    }
}

fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq as usize + i) as u8).collect()
}

/// The store under test; kept typed so a FileStore can be abandoned like a crashed process.
enum Held {
    Mem(Box<MemStore>),
    File(Box<FileStore>),
}

impl Held {
    fn as_mut(&mut self) -> &mut dyn StreamStore {
        match self {
            Held::Mem(store) => store.as_mut(),
            Held::File(store) => store.as_mut(),
        }
    }
}

struct Subject {
    store: Held,
    dir: Option<tempfile::TempDir>,
    config: StreamStoreConfig,
}

fn options() -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(60)),
        block_size: 700,
        write_buffer_limit: 1024,
        defer_creation_sync: false,
    }
}

impl Subject {
    fn reopen(&mut self, clean: bool) {
        let Some(dir) = &self.dir else { return };
        let Held::File(mut store) = std::mem::replace(
            &mut self.store,
            Held::Mem(Box::new(MemStore::new(StreamStoreConfig::default()))),
        ) else {
            return;
        };
        if clean {
            store.close().unwrap();
            drop(store);
        } else {
            store.flush().unwrap();
            store.abandon();
        }
        let reopened =
            FileStore::open(dir.path().join("s"), self.config.clone(), options()).unwrap();
        assert!(
            reopened.recovery_report().is_clean(),
            "{:?}",
            reopened.recovery_report()
        );
        self.store = Held::File(Box::new(reopened));
    }
}

fn check(store: &mut dyn StreamStore, model: &Model) {
    let state = store.state();
    assert_eq!(state.msgs, model.messages.len() as u64, "msgs");
    assert_eq!(state.last_seq, model.last_seq, "last_seq");
    let expected_first = if model.last_seq == 0 {
        0
    } else {
        model.first_seq()
    };
    assert_eq!(state.first_seq, expected_first, "first_seq");
    let expected_deleted = if model.messages.is_empty() {
        0
    } else {
        model.last_seq - model.first_seq() + 1 - model.messages.len() as u64
    };
    assert_eq!(state.num_deleted, expected_deleted, "num_deleted");
    let subjects: std::collections::BTreeSet<&str> =
        model.messages.values().map(|(s, _)| s.as_str()).collect();
    assert_eq!(state.num_subjects, subjects.len() as u64, "num_subjects");
    for seq in 0..=model.last_seq + 1 {
        match model.messages.get(&seq) {
            Some((subject, data)) => {
                let message = store.load(seq).unwrap();
                assert_eq!(&message.subject, subject);
                assert_eq!(&message.payload[..], &data[..]);
            }
            None => assert!(store.load(seq).is_err(), "seq {seq} should be gone"),
        }
    }
    for filter in FILTERS {
        let expected_last = model
            .messages
            .iter()
            .rev()
            .find(|(_, (s, _))| Model::matches(s, filter))
            .map(|(seq, _)| *seq);
        assert_eq!(
            store.load_last(filter).unwrap().map(|m| m.seq),
            expected_last,
            "last {filter}"
        );
        for start in [0, model.first_seq(), model.last_seq / 2, model.last_seq] {
            let matching: Vec<u64> = model
                .messages
                .range(start..)
                .filter(|(_, (s, _))| Model::matches(s, filter))
                .map(|(seq, _)| *seq)
                .collect();
            assert_eq!(
                store.load_next(filter, start).unwrap().map(|m| m.seq),
                matching.first().copied(),
                "next {filter} {start}"
            );
            assert_eq!(
                store.num_pending(filter, start, false),
                matching.len() as u64,
                "pending {filter} {start}"
            );
        }
        let counts = store.subjects_state(filter);
        for (subject, subject_state) in &counts {
            let seqs: Vec<u64> = model
                .messages
                .iter()
                .filter(|(_, (s, _))| s == subject)
                .map(|(seq, _)| *seq)
                .collect();
            assert_eq!(subject_state.msgs, seqs.len() as u64, "{subject}");
            assert_eq!(
                Some(&subject_state.first_seq),
                seqs.first(),
                "{subject} first"
            );
            assert_eq!(Some(&subject_state.last_seq), seqs.last(), "{subject} last");
        }
    }
}

fn apply(subject: &mut Subject, model: &mut Model, op: &Op) {
    let store = subject.store.as_mut();
    match op {
        Op::Store {
            subject: index,
            len,
        } => {
            let name = SUBJECTS[*index];
            let seq = model.last_seq + 1;
            let data = payload(seq, *len);
            let (stored, _) = store.store_msg(name, b"", &data, None).unwrap();
            assert_eq!(stored, seq);
            model.messages.insert(seq, (name.to_string(), data));
            model.last_seq = seq;
            model.enforce_limits(name);
        }
        Op::Remove { pick } | Op::Erase { pick } => {
            let seq = if model.messages.is_empty() || pick % 4 == 0 {
                model.last_seq + 1 + (*pick as u64 % 3)
            } else {
                *model
                    .messages
                    .keys()
                    .nth(pick % model.messages.len())
                    .unwrap()
            };
            let existed = model.messages.remove(&seq).is_some();
            let removed = if matches!(op, Op::Erase { .. }) {
                store.erase(seq).unwrap()
            } else {
                store.remove(seq).unwrap()
            };
            assert_eq!(removed, existed);
        }
        Op::Purge => {
            let count = model.messages.len() as u64;
            assert_eq!(store.purge().unwrap(), count);
            model.messages.clear();
        }
        Op::PurgeSubject { filter, keep } => {
            let filter = FILTERS[*filter];
            let matching: Vec<u64> = model
                .messages
                .iter()
                .filter(|(_, (s, _))| Model::matches(s, filter))
                .map(|(seq, _)| *seq)
                .collect();
            let remove = matching.len().saturating_sub(*keep as usize);
            let remove = if *keep > 0 && *keep as usize >= matching.len() {
                0
            } else {
                remove
            };
            for seq in &matching[..remove] {
                model.messages.remove(seq);
            }
            if filter == ">" && *keep == 0 {
                // Full purge: first moves past last.
            }
            assert_eq!(store.purge_ex(filter, 0, *keep).unwrap(), remove as u64);
        }
        Op::Compact { ahead } => {
            let target = model.first_seq() + ahead;
            let doomed: Vec<u64> = model.messages.range(..target).map(|(s, _)| *s).collect();
            for seq in &doomed {
                model.messages.remove(seq);
            }
            let removed = store.compact(target).unwrap();
            if target > model.first_seq() || !doomed.is_empty() {
                assert_eq!(removed, doomed.len() as u64);
            }
            if target > model.last_seq + 1 {
                model.last_seq = target - 1;
            }
        }
        Op::Skip { count } => {
            store.skip_msgs(model.last_seq + 1, *count).unwrap();
            model.last_seq += count;
        }
        Op::Reopen { clean } => {
            store.flush().unwrap();
            subject.reopen(*clean);
        }
    }
}

fn limits() -> StreamStoreConfig {
    StreamStoreConfig {
        max_msgs: 12,
        max_msgs_per_subject: 3,
        ..StreamStoreConfig::default()
    }
}

fn file_subject(config: StreamStoreConfig) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path().join("s"), config.clone(), options()).unwrap();
    Subject {
        store: Held::File(Box::new(store)),
        dir: Some(dir),
        config,
    }
}

fn run(make: impl Fn() -> Subject, ops: &[Op]) {
    let mut subject = make();
    let mut model = Model {
        max_msgs: subject.config.max_msgs.max(0) as usize,
        max_per_subject: subject.config.max_msgs_per_subject.max(0) as usize,
        ..Model::default()
    };
    for op in ops {
        apply(&mut subject, &mut model, op);
        check(subject.store.as_mut(), &model);
    }
    subject.reopen(true);
    check(subject.store.as_mut(), &model);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn mem_store_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(|| Subject {
            store: Held::Mem(Box::new(MemStore::new(StreamStoreConfig::default()))),
            dir: None,
            config: StreamStoreConfig::default(),
        }, &ops);
    }

    #[test]
    fn file_store_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(|| file_subject(StreamStoreConfig::default()), &ops);
    }

    #[test]
    fn compressed_file_store_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        let config = StreamStoreConfig {
            compression: nats_store::Compression::S2,
            ..StreamStoreConfig::default()
        };
        run(|| file_subject(config.clone()), &ops);
    }

    #[test]
    fn limited_stores_match_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(|| Subject { store: Held::Mem(Box::new(MemStore::new(limits()))), dir: None, config: limits() }, &ops);
        run(|| file_subject(limits()), &ops);
    }
}

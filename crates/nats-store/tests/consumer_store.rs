//! Consumer store conformance: the same checks against the memory store, the file store, and the
//! file store reopened after every flush; then what only the file store has (its log stays
//! bounded, one flush writes what changed, the version-1 snapshot still reads, creation files).

use std::path::Path;
use std::time::Duration;

use nats_store::{
    ConsumerState, ConsumerStore, FileConsumerStore, FileStore, FileStoreOptions, MemStore,
    PendingDelivery, SequencePair, StreamStore, StreamStoreConfig, SyncPolicy,
};

/// Opens one consumer's store again, as a restarted server would.
trait Harness {
    fn open(&mut self) -> Box<dyn ConsumerStore>;
    /// After a flush: reopen (file) or keep going (memory).
    fn restart(&mut self, store: Box<dyn ConsumerStore>) -> Box<dyn ConsumerStore>;
}

/// A memory stream handing out its consumer's store, as the server gets it.
struct Memory(MemStore);

impl Harness for Memory {
    fn open(&mut self) -> Box<dyn ConsumerStore> {
        self.0.consumer_store("c").unwrap()
    }
    fn restart(&mut self, store: Box<dyn ConsumerStore>) -> Box<dyn ConsumerStore> {
        store
    }
}

struct File {
    dir: tempfile::TempDir,
    sync: bool,
    reopen: bool,
}

impl File {
    fn new(sync: bool, reopen: bool) -> Self {
        File {
            dir: tempfile::tempdir().unwrap(),
            sync,
            reopen,
        }
    }
}

impl Harness for File {
    fn open(&mut self) -> Box<dyn ConsumerStore> {
        let store = FileConsumerStore::open(self.dir.path(), "c", self.sync).unwrap();
        assert!(
            store.recovery_problems().is_empty(),
            "{:?}",
            store.recovery_report()
        );
        Box::new(store)
    }
    fn restart(&mut self, store: Box<dyn ConsumerStore>) -> Box<dyn ConsumerStore> {
        if !self.reopen {
            return store;
        }
        drop(store);
        self.open()
    }
}

fn pair(consumer_seq: u64, stream_seq: u64) -> SequencePair {
    SequencePair {
        consumer_seq,
        stream_seq,
    }
}

fn flushed(harness: &mut dyn Harness, mut store: Box<dyn ConsumerStore>) -> Box<dyn ConsumerStore> {
    store.flush().unwrap();
    harness.restart(store)
}

fn config_is_kept_and_replaced(harness: &mut dyn Harness) {
    let mut store = harness.open();
    assert!(store.config().is_empty());
    store.set_config(b"{\"first\":1}").unwrap();
    let mut store = flushed(harness, store);
    assert_eq!(store.config(), b"{\"first\":1}");
    store.set_config(b"{\"second\":2}").unwrap();
    let store = flushed(harness, store);
    assert_eq!(store.config(), b"{\"second\":2}");
}

fn deliveries_acks_and_floors(harness: &mut dyn Harness) {
    let mut store = harness.open();
    store.set_config(b"{}").unwrap();
    for seq in 1..=5 {
        store
            .update_delivered(seq, seq * 10, 1, seq as i64)
            .unwrap();
    }
    let mut store = flushed(harness, store);
    assert_eq!(store.delivered(), pair(5, 50));
    assert_eq!(store.state().pending.len(), 5);
    // Redelivery of 20 and an out-of-order ack of 30: the floor stays.
    store.update_delivered(6, 20, 2, 60).unwrap();
    store.update_acks(3, 30).unwrap();
    let mut store = flushed(harness, store);
    let state = store.state();
    assert_eq!(state.ack_floor, SequencePair::default());
    assert_eq!(state.redelivered.get(&20), Some(&1));
    assert_eq!(
        state.pending.get(&20),
        Some(&PendingDelivery {
            consumer_seq: 6,
            timestamp: 60
        })
    );
    assert!(!state.pending.contains_key(&30));
    // Acking the oldest moves the floor to just below the next pending message.
    // The floor moves to just below the oldest pending message (20, redelivered as consumer
    // sequence 6).
    store.update_acks(1, 10).unwrap();
    let mut store = flushed(harness, store);
    assert_eq!(store.state().ack_floor, pair(5, 19));
    for (consumer_seq, stream_seq) in [(6, 20), (4, 40), (5, 50)] {
        store.update_acks(consumer_seq, stream_seq).unwrap();
    }
    let store = flushed(harness, store);
    let state = store.state();
    assert!(state.pending.is_empty() && state.redelivered.is_empty());
    assert_eq!(state.ack_floor, state.delivered);
    assert_eq!(state.delivered, pair(6, 50));
}

fn whole_state_and_changed_only_agree(harness: &mut dyn Harness) {
    let mut store = harness.open();
    let mut state = ConsumerState::default();
    for seq in 1..=50 {
        state.apply_delivered(seq, seq, 1, 1000 + seq as i64);
    }
    store.set_state(state.clone()).unwrap();
    let mut store = flushed(harness, store);
    assert_eq!(store.state(), state);
    let mut changed = Vec::new();
    for seq in (1..=50).step_by(3) {
        state.apply_ack(seq, seq);
        changed.push(seq);
    }
    state.apply_delivered(51, 2, 2, 5000);
    changed.push(2);
    store.update_state(&state, &changed).unwrap();
    let mut store = flushed(harness, store);
    assert_eq!(store.state(), state);
    // A reset through set_state: the store follows whatever it is handed.
    let reset = ConsumerState {
        delivered: pair(0, 7),
        ack_floor: pair(0, 7),
        ..ConsumerState::default()
    };
    store.set_state(reset.clone()).unwrap();
    let store = flushed(harness, store);
    assert_eq!(store.state(), reset);
}

fn many_flushes_survive(harness: &mut dyn Harness) {
    let mut store = harness.open();
    let mut state = ConsumerState::default();
    for seq in 1..=300 {
        state.apply_delivered(seq, seq, 1, seq as i64);
        store.update_state(&state, &[seq]).unwrap();
        if seq % 3 == 0 {
            state.apply_ack(seq - 1, seq - 1);
            store.update_state(&state, &[seq - 1]).unwrap();
        }
        store.flush().unwrap();
        if seq % 50 == 0 {
            store = harness.restart(store);
            assert_eq!(store.state(), state, "after {seq} flushes");
        }
    }
}

fn delete_forgets(harness: &mut dyn Harness) {
    let mut store = harness.open();
    store.set_config(b"{}").unwrap();
    store.update_delivered(1, 1, 1, 1).unwrap();
    store.flush().unwrap();
    store.delete().unwrap();
    // A flush after delete writes nothing back.
    store.update_delivered(2, 2, 1, 2).unwrap();
    store.flush().unwrap();
    drop(store);
    let store = harness.open();
    assert_eq!(store.state(), ConsumerState::default());
    assert!(store.config().is_empty());
}

macro_rules! conformance {
    ($module:ident, $harness:expr) => {
        mod $module {
            use super::*;
            #[test]
            fn config_is_kept_and_replaced() {
                super::config_is_kept_and_replaced(&mut $harness);
            }
            #[test]
            fn deliveries_acks_and_floors() {
                super::deliveries_acks_and_floors(&mut $harness);
            }
            #[test]
            fn whole_state_and_changed_only_agree() {
                super::whole_state_and_changed_only_agree(&mut $harness);
            }
            #[test]
            fn many_flushes_survive() {
                super::many_flushes_survive(&mut $harness);
            }
            #[test]
            fn delete_forgets() {
                super::delete_forgets(&mut $harness);
            }
        }
    };
}

conformance!(memory, Memory(MemStore::new(StreamStoreConfig::default())));
conformance!(file, File::new(false, false));
conformance!(file_reopened, File::new(false, true));
conformance!(file_sync_always_reopened, File::new(true, true));

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|meta| meta.len()).unwrap_or(0)
}

#[test]
fn one_ack_per_flush_writes_a_few_bytes_and_the_log_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    let mut state = ConsumerState::default();
    for seq in 1..=20_000 {
        state.apply_delivered(seq, seq, 1, 1_700_000_000_000_000_000 + seq as i64);
    }
    store.set_state(state.clone()).unwrap();
    store.flush().unwrap();
    let consumer_dir = dir.path().join("c");
    let mut largest_log = 0;
    let mut before = file_len(&consumer_dir.join("state.log"));
    let mut frame_sizes = Vec::new();
    for seq in (10_001..=20_000).rev() {
        state.apply_ack(seq, seq);
        store.update_state(&state, &[seq]).unwrap();
        store.flush().unwrap();
        let after = file_len(&consumer_dir.join("state.log"));
        if after > before {
            frame_sizes.push(after - before);
        }
        largest_log = largest_log.max(after);
        before = after;
    }
    let largest_frame = frame_sizes.iter().max().copied().unwrap_or(0);
    // 8 bytes of framing, floors and one entry; a log restarted by compaction adds its header.
    assert!(
        largest_frame <= 24 + 16,
        "one ack wrote {largest_frame} bytes"
    );
    let typical = frame_sizes[frame_sizes.len() / 2];
    assert!(typical <= 24, "a typical ack wrote {typical} bytes");
    // Compaction keeps the log below the size of the whole state (24 bytes a pending message)
    // plus the frame that crossed it.
    assert!(
        largest_log <= 64 + 24 * 20_000 + 40,
        "log grew to {largest_log} bytes"
    );
    assert!(
        file_len(&consumer_dir.join("state.bin")) > 0,
        "the log was never compacted"
    );
    drop(store);
    let reopened = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    assert_eq!(reopened.state(), state);
}

#[test]
fn a_version_one_snapshot_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = ConsumerState::default();
    state.apply_delivered(1, 3, 1, 9);
    state.apply_delivered(2, 4, 1, 10);
    state.apply_ack(1, 3);
    std::fs::create_dir_all(dir.path().join("old")).unwrap();
    std::fs::write(dir.path().join("old/state.bin"), state.encode()).unwrap();
    std::fs::write(dir.path().join("old/config.bin"), b"{}").unwrap();
    let mut store = FileConsumerStore::open(dir.path(), "old", false).unwrap();
    assert_eq!(store.state(), state);
    assert_eq!(store.config(), b"{}");
    state.apply_ack(2, 4);
    store.update_acks(2, 4).unwrap();
    store.flush().unwrap();
    drop(store);
    let store = FileConsumerStore::open(dir.path(), "old", false).unwrap();
    assert_eq!(store.state(), state);
    assert!(store.recovery_problems().is_empty());
}

#[test]
fn creating_a_consumer_writes_only_its_directory_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let options = FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(120)),
        ..FileStoreOptions::default()
    };
    let mut stream =
        FileStore::open(dir.path().join("s"), StreamStoreConfig::default(), options).unwrap();
    let mut consumer = stream.consumer_store("durable").unwrap();
    consumer
        .set_config(b"{\"durable_name\":\"durable\"}")
        .unwrap();
    let consumer_dir = dir.path().join("s/consumers/durable");
    let mut files: Vec<String> = std::fs::read_dir(&consumer_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, vec!["config.bin".to_string()]);
    drop(consumer);
    assert_eq!(
        stream.consumer_names().unwrap(),
        vec!["durable".to_string()]
    );
    let again = stream.consumer_store("durable").unwrap();
    assert_eq!(again.config(), b"{\"durable_name\":\"durable\"}");
    assert_eq!(again.state(), ConsumerState::default());
}

#[test]
fn invalid_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["", ".", "..", "a/b", "a\\b", "a\0b"] {
        assert!(
            FileConsumerStore::open(dir.path(), name, false).is_err(),
            "{name:?}"
        );
    }
}

/// `flush_then` with `SyncPolicy::Always` (the fsync on the sync threads): every callback runs,
/// in order, successfully, also when nothing changed and across the log's compactions; what
/// they confirmed is there when the store is opened again.
#[test]
fn flush_then_confirms_in_order_after_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileConsumerStore::open(dir.path(), "c", true).unwrap();
    store.set_config(b"{}").unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut expected = Vec::new();
    for seq in 1..=8000u64 {
        store.update_delivered(seq, seq, 1, 5).unwrap();
        store.update_acks(seq, seq).unwrap();
        let repeats = if seq % 100 == 0 { 2 } else { 1 };
        for _ in 0..repeats {
            let sender = sender.clone();
            store
                .flush_then(Box::new(move |result| {
                    sender.send((seq, result.is_ok())).unwrap()
                }))
                .unwrap();
            expected.push((seq, true));
        }
    }
    let confirmed: Vec<(u64, bool)> = expected
        .iter()
        .map(|_| receiver.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    assert_eq!(confirmed, expected);
    assert!(
        dir.path().join("c").join("state.bin").exists(),
        "the log was compacted on the way (a snapshot written)"
    );
    drop(store);
    let reopened = FileConsumerStore::open(dir.path(), "c", true).unwrap();
    assert_eq!(reopened.state().ack_floor, pair(8000, 8000));
    assert_eq!(reopened.state().delivered, pair(8000, 8000));
}

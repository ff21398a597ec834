//! The first and last sequence never move backwards across a reopen, whatever was lost from the
//! block files (issue 17 item 2): a truncated or missing last block, every block gone after a
//! purge, lost delete logs. The stream continues after the last sequence it ever handed out, and
//! purged messages do not come back.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};

const MESSAGES: u64 = 500;

fn options() -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(60)),
        block_size: 16 * 1024,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    }
}

fn open(dir: &Path) -> FileStore {
    FileStore::open(dir, StreamStoreConfig::default(), options()).expect("open")
}

fn payload(seq: u64) -> Vec<u8> {
    format!("message-{seq}-{}", "x".repeat(60)).into_bytes()
}

/// `MESSAGES` messages, then a clean close or (as a killed process) a flush and abandon.
fn build(dir: &Path, clean_close: bool) {
    let mut store = open(dir);
    for seq in 1..=MESSAGES {
        assert_eq!(
            store
                .store_msg("seq.a", b"", &payload(seq), None)
                .expect("store")
                .0,
            seq
        );
    }
    if clean_close {
        store.close().expect("close");
    } else {
        store.flush().expect("flush");
        store.abandon();
    }
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|found| found == extension))
        .collect();
    paths.sort();
    paths
}

fn truncate(path: &Path, len: u64) {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(len))
        .expect("truncate");
}

/// Reopen after the damage: the last sequence is still `MESSAGES`, the next message gets the
/// one after, what survived reads back intact, and the repair itself survives another reopen.
fn check_continues(dir: &Path) {
    let mut store = open(dir);
    let state = store.state();
    assert_eq!(state.last_seq, MESSAGES, "{state:?}");
    assert!(state.msgs < MESSAGES, "damage lost nothing? {state:?}");
    assert!(
        store
            .recovery_report()
            .problems
            .iter()
            .any(|problem| problem.contains("handed out")),
        "{:?}",
        store.recovery_report()
    );
    for seq in 1..=MESSAGES {
        if let Ok(message) = store.load(seq) {
            assert_eq!(&message.payload[..], &payload(seq)[..], "seq {seq}");
        }
    }
    assert_eq!(
        store
            .store_msg("seq.a", b"", b"next", None)
            .expect("store")
            .0,
        MESSAGES + 1
    );
    store.close().expect("close");
    let mut store = open(dir);
    assert_eq!(store.state().last_seq, MESSAGES + 1);
    assert_eq!(
        &store.load(MESSAGES + 1).expect("load").payload[..],
        b"next"
    );
    assert!(
        store.recovery_report().is_clean(),
        "{:?}",
        store.recovery_report()
    );
}

#[test]
fn truncated_last_block_after_clean_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), true);
    let last = files(dir.path(), "blk").pop().expect("a block");
    let len = fs::metadata(&last).expect("metadata").len();
    truncate(&last, len / 2);
    check_continues(dir.path());
}

#[test]
fn truncated_last_block_after_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), false);
    let last = files(dir.path(), "blk").pop().expect("a block");
    let len = fs::metadata(&last).expect("metadata").len();
    truncate(&last, len / 2);
    check_continues(dir.path());
}

#[test]
fn last_blocks_removed_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), true);
    let blocks = files(dir.path(), "blk");
    assert!(blocks.len() > 3, "{blocks:?}");
    for block in &blocks[blocks.len() - 2..] {
        fs::remove_file(block).expect("remove block");
        let _ = fs::remove_file(block.with_extension("idx"));
    }
    check_continues(dir.path());
}

#[test]
fn every_block_lost_after_purge_keeps_both_sequences() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut store = open(dir.path());
        for seq in 1..=MESSAGES {
            store
                .store_msg("seq.a", b"", &payload(seq), None)
                .expect("store");
        }
        assert_eq!(store.purge().expect("purge"), MESSAGES);
        store.close().expect("close");
    }
    for block in files(dir.path(), "blk") {
        truncate(&block, 0);
    }
    let mut store = open(dir.path());
    let state = store.state();
    assert_eq!(
        (state.msgs, state.first_seq, state.last_seq),
        (0, MESSAGES + 1, MESSAGES),
        "{state:?}"
    );
    assert_eq!(
        store.store_msg("seq.a", b"", b"x", None).expect("store").0,
        MESSAGES + 1
    );
}

#[test]
fn lost_delete_logs_do_not_bring_compacted_messages_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let floor = 321;
    {
        let mut store = open(dir.path());
        for seq in 1..=MESSAGES {
            store
                .store_msg("seq.a", b"", &payload(seq), None)
                .expect("store");
        }
        store.compact(floor).expect("compact");
        store.flush().expect("flush");
        store.abandon();
    }
    // Without its delete logs (and indexes), the blocks still hold messages below the floor.
    for path in files(dir.path(), "del")
        .into_iter()
        .chain(files(dir.path(), "idx"))
    {
        fs::remove_file(path).expect("remove");
    }
    let mut store = open(dir.path());
    let state = store.state();
    assert_eq!(state.first_seq, floor, "{state:?}");
    assert_eq!(state.last_seq, MESSAGES, "{state:?}");
    assert_eq!(state.msgs, MESSAGES - floor + 1, "{state:?}");
    assert!(store.load(floor - 1).is_err());
    assert_eq!(
        &store.load(floor).expect("load").payload[..],
        &payload(floor)[..]
    );
}

#[test]
fn a_lost_mark_file_falls_back_to_the_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path(), true);
    fs::remove_file(dir.path().join("seq.hwm")).expect("remove mark");
    let mut store = open(dir.path());
    assert_eq!(store.state().last_seq, MESSAGES);
    assert!(store.recovery_report().is_clean());
    assert_eq!(
        store.store_msg("seq.a", b"", b"x", None).expect("store").0,
        MESSAGES + 1
    );
    store.close().expect("close");
    assert!(dir.path().join("seq.hwm").exists());
}

#[test]
fn sync_always_keeps_the_mark_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = FileStoreOptions {
        sync: SyncPolicy::Always,
        ..options()
    };
    {
        let mut store =
            FileStore::open(dir.path(), StreamStoreConfig::default(), options.clone()).unwrap();
        for seq in 1..=MESSAGES {
            store
                .store_msg("seq.a", b"", &payload(seq), None)
                .expect("store");
            if seq % 50 == 0 {
                store.flush().expect("flush");
            }
        }
        store.abandon();
    }
    let last = files(dir.path(), "blk").pop().expect("a block");
    truncate(&last, 40);
    check_continues(dir.path());
}

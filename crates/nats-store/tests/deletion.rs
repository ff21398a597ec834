//! Deleting stores: the directory leaves its name at once (renamed to trash) and its files are
//! removed in the background; trash is never listed as a consumer, and trash a crash left
//! behind is removed when its parent is listed.

use std::path::Path;
use std::time::{Duration, Instant};

use nats_store::{is_trash, FileStore, FileStoreOptions, StreamStore, StreamStoreConfig};

fn open(dir: &Path) -> FileStore {
    FileStore::open(
        dir,
        StreamStoreConfig::default(),
        FileStoreOptions::default(),
    )
    .unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Wait (bounded) until `dir` holds exactly `expected`.
fn await_entries(dir: &Path, expected: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = entries(dir);
        if found == expected {
            return;
        }
        assert!(Instant::now() < deadline, "{dir:?} holds {found:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_deleted_stream_leaves_its_name_at_once_and_its_files_soon() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = open(&dir);
    store.store_msg("orders.1", b"", b"one", None).unwrap();
    store.flush().unwrap();
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer.set_config(b"{}").unwrap();
    drop(consumer);
    store.delete().unwrap();
    assert!(!dir.exists(), "the name is free at once");
    // The same name can be created again right away, beside the trash being removed.
    let mut again = open(&dir);
    assert_eq!(again.state().msgs, 0);
    assert!(again.consumer_names().unwrap().is_empty());
    again.close().unwrap();
    // The trash is gone: removed, or kept as a spare for the next creation (below).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = entries(root.path());
        let (spares, others): (Vec<_>, Vec<_>) =
            found.iter().partition(|name| name.contains(".spare."));
        if others == ["orders"] && spares.len() <= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{root:?} holds {found:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn deferred() -> FileStoreOptions {
    FileStoreOptions {
        defer_creation_sync: true,
        block_size: 256,
        ..Default::default()
    }
}

/// The spare entries of `dir` (deleted stream directories kept for the next creation).
fn spares(dir: &Path) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|name| name.contains(".spare."))
        .collect()
}

#[test]
fn a_stream_created_after_a_deletion_reuses_its_directory_and_starts_empty() {
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().unwrap();
    let old = root.path().join("OLD");
    let mut store = FileStore::open(&old, StreamStoreConfig::default(), deferred()).unwrap();
    for n in 0..20 {
        store
            .store_msg(&format!("old.{n}"), b"", &[7u8; 64], None)
            .unwrap();
    }
    store.set_metadata(b"old config").unwrap();
    store.flush().unwrap();
    assert!(store.block_count() > 2, "several blocks");
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer.set_config(b"{}").unwrap();
    drop(consumer);
    store.delete().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while spares(root.path()).len() != 1 {
        assert!(Instant::now() < deadline, "{:?}", entries(root.path()));
        std::thread::sleep(Duration::from_millis(5));
    }
    let spare = root.path().join(&spares(root.path())[0]);
    assert_eq!(
        entries(&spare),
        ["000000000001.blk", "meta.spare", "seq.hwm"],
        "one block, the marks and the metadata's temporary file, nothing more"
    );
    let spare_inode = std::fs::metadata(&spare).unwrap().ino();

    let new = root.path().join("NEW");
    let mut store = FileStore::open(&new, StreamStoreConfig::default(), deferred()).unwrap();
    assert!(spares(root.path()).is_empty(), "the spare was taken");
    assert_eq!(std::fs::metadata(&new).unwrap().ino(), spare_inode);
    let state = store.state();
    assert_eq!(
        (state.msgs, state.first_seq, state.last_seq),
        (0, 0, 0),
        "as a new store: no sequence used"
    );
    assert!(store.metadata().is_empty());
    let creation = store.pending_creation().expect("a creation to sync");
    assert_eq!(
        creation.paths()[..2],
        [new.clone(), root.path().to_path_buf()],
        "its files are durable already: the directory and its parent are left"
    );
    store.set_metadata(b"new config").unwrap();
    assert_eq!(entries(&new), ["000000000001.blk", "meta.bin", "seq.hwm"]);
    creation.run().unwrap();
    assert_eq!(store.store_msg("new.1", b"", b"one", None).unwrap().0, 1);
    store.flush().unwrap();
    store.abandon();

    let mut store = FileStore::open(&new, StreamStoreConfig::default(), deferred()).unwrap();
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (1, 1, 1));
    assert_eq!(store.load(1).unwrap().subject, "new.1");
    assert_eq!(store.metadata(), b"new config");
    assert!(store.consumer_names().unwrap().is_empty());
    assert!(store.recovery_report().problems.is_empty());
}

#[test]
fn a_deleted_consumer_is_not_listed_and_its_name_is_free() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = open(&dir);
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer.set_config(b"{\"v\":1}").unwrap();
    consumer.delete().unwrap();
    assert!(store.consumer_names().unwrap().is_empty());
    let mut again = store.consumer_store("worker").unwrap();
    assert!(
        again.config().is_empty(),
        "a new consumer, not the deleted one"
    );
    again.set_config(b"{\"v\":2}").unwrap();
    drop(again);
    await_entries(&dir.join("consumers"), &["worker"]);
    assert_eq!(
        store.consumer_store("worker").unwrap().config(),
        b"{\"v\":2}"
    );
}

/// A consumer removed through its removal handle while its owner still holds the store (the
/// admin thread deleting it, the consumer's task not yet told): the name is free at once, and
/// the old store writes nothing more, neither into a consumer created again under the name nor
/// away with it at its own delete.
#[test]
fn a_consumer_removed_through_its_handle_leaves_a_store_of_the_same_name_alone() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = open(&dir);
    let mut old = store.consumer_store("worker").unwrap();
    old.set_config(b"{\"v\":1}").unwrap();
    old.update_delivered(1, 1, 1, 0).unwrap();
    old.flush().unwrap();
    let removal = old
        .removal()
        .expect("a file consumer store has a removal handle");
    removal.remove().unwrap();
    removal.remove().unwrap();
    assert!(
        store.consumer_names().unwrap().is_empty(),
        "the name is free at once"
    );

    let mut again = store.consumer_store("worker").unwrap();
    assert!(
        again.config().is_empty(),
        "a new consumer, not the removed one"
    );
    again.set_config(b"{\"v\":2}").unwrap();
    again.flush().unwrap();
    let files = |name: &str| entries(&dir.join("consumers").join(name));
    let written = files("worker");

    // The old store, still held by its owner, goes on as its task would: every write is
    // dropped, and its delete leaves the new directory where it is.
    for seq in 2..5 {
        old.update_delivered(seq, seq, 1, 0).unwrap();
        old.update_acks(seq, seq).unwrap();
    }
    old.flush().unwrap();
    old.set_config(b"{\"v\":3}").unwrap();
    old.flush_then(Box::new(|result| assert!(result.is_ok())))
        .unwrap();
    old.delete().unwrap();
    drop(old);
    assert_eq!(
        files("worker"),
        written,
        "the new consumer's files, untouched"
    );
    let reopened = store.consumer_store("worker").unwrap();
    assert_eq!(reopened.config(), b"{\"v\":2}");
    assert_eq!(
        reopened.delivered().stream_seq,
        0,
        "no state of the removed consumer"
    );
    await_entries(&dir.join("consumers"), &["worker"]);
}

#[test]
fn trash_left_by_a_crash_is_removed_and_never_listed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = open(&dir);
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer.set_config(b"{}").unwrap();
    drop(consumer);
    let leftover = "gone.deleted.1.2";
    assert!(is_trash(leftover) && !is_trash("worker"));
    let trash = dir.join("consumers").join(leftover);
    std::fs::create_dir_all(&trash).unwrap();
    std::fs::write(trash.join("config.bin"), b"{}").unwrap();
    assert_eq!(store.consumer_names().unwrap(), ["worker"]);
    await_entries(&dir.join("consumers"), &["worker"]);
}

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
    await_entries(root.path(), &["orders"]);
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

//! `defer_creation_sync`: a new stream store and a new consumer store under it leave the exact
//! files and directories whose fsync makes the creation durable in one pending `CreationSync`
//! (the owner runs it before it confirms, off its lock; the store runs it before the first
//! acknowledgement relying on it); a recovered store and a recovered consumer leave nothing.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use nats_store::{
    ConsumerState, FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy,
};

fn deferred(sync: SyncPolicy) -> FileStoreOptions {
    FileStoreOptions {
        defer_creation_sync: true,
        sync,
        ..FileStoreOptions::default()
    }
}

fn interval() -> SyncPolicy {
    SyncPolicy::Interval(Duration::from_secs(60))
}

/// Every ancestor of `dir`, deepest first, up to the root.
fn ancestors(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .filter(|path| !path.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .collect()
}

#[test]
fn a_new_stream_store_lists_its_files_then_every_directory_up_to_the_root() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("jetstream").join("streams").join("orders");
    let mut store =
        FileStore::open(&dir, StreamStoreConfig::default(), deferred(interval())).unwrap();
    store.set_metadata(b"{\"name\":\"orders\"}").unwrap();
    store.flush().unwrap();
    let pending = store
        .pending_creation()
        .expect("a new store's creation is pending");
    let paths = pending.paths();
    let files = [
        dir.join("meta.bin"),
        dir.join("000000000001.blk"),
        dir.join("seq.hwm"),
    ];
    for file in &files {
        assert!(paths.contains(file), "{file:?} in {paths:?}");
    }
    // Directories after the files, deepest first, up to the root: a parent that existed may
    // itself be new and unsynced (the server creates `jetstream/` with a plain mkdir).
    assert_eq!(paths[files.len()..], ancestors(&dir)[..]);
    // A plain flush (the creator's own) does not run it; the owner does, once.
    pending.run().unwrap();
    assert!(pending.is_done());
    assert!(store.pending_creation().is_none(), "done");
    // Metadata written after that is synced on its own.
    store
        .set_metadata(b"{\"name\":\"orders\",\"v\":2}")
        .unwrap();
    store.close().unwrap();

    let reopened =
        FileStore::open(&dir, StreamStoreConfig::default(), deferred(interval())).unwrap();
    assert!(
        reopened.pending_creation().is_none(),
        "recovered, not created"
    );
    assert_eq!(reopened.metadata(), b"{\"name\":\"orders\",\"v\":2}");
}

#[test]
fn sync_always_runs_the_pending_creation_before_the_first_acknowledgement() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = FileStore::open(
        &dir,
        StreamStoreConfig::default(),
        deferred(SyncPolicy::Always),
    )
    .unwrap();
    store.set_metadata(b"{}").unwrap();
    store.flush().unwrap();
    let pending = store.pending_creation().expect("pending after create");
    assert!(!pending.is_done(), "the creator's own flush leaves it");
    store.store_msg("orders.1", b"", b"one", None).unwrap();
    let (sender, receiver) = mpsc::channel();
    store
        .flush_then(Box::new(move |durable| {
            let _ = sender.send(durable.is_ok());
        }))
        .unwrap();
    assert!(receiver.recv_timeout(Duration::from_secs(10)).unwrap());
    assert!(
        pending.is_done(),
        "an acknowledged message relies on the store's names being durable"
    );
    assert!(store.pending_creation().is_none());
}

#[test]
fn a_new_consumer_store_lists_its_config_and_directories_after_its_stream() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut stream =
        FileStore::open(&dir, StreamStoreConfig::default(), deferred(interval())).unwrap();
    let stream_creation = stream.pending_creation().expect("stream pending");

    let mut consumer = stream.consumer_store("worker").unwrap();
    consumer
        .set_config(b"{\"durable_name\":\"worker\"}")
        .unwrap();
    let expected: Vec<PathBuf> = vec![
        dir.join("consumers").join("worker").join("config.bin"),
        dir.join("consumers").join("worker"),
        dir.join("consumers"),
        dir.clone(),
    ];
    let pending = consumer.pending_creation().expect("consumer pending");
    assert_eq!(pending.paths(), expected);
    // Running the consumer's creation runs its stream's first: a confirmed consumer implies a
    // durable stream.
    pending.run().unwrap();
    assert!(stream_creation.is_done(), "the stream's creation ran first");
    assert!(consumer.pending_creation().is_none(), "done");

    // The second consumer: `consumers/` exists already, so the stream directory is not listed.
    let mut second = stream.consumer_store("auditor").unwrap();
    second
        .set_config(b"{\"durable_name\":\"auditor\"}")
        .unwrap();
    let paths = second.pending_creation().expect("pending").paths();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert_eq!(paths[2], dir.join("consumers"));
    drop((consumer, second));
    stream.close().unwrap();

    let mut reopened =
        FileStore::open(&dir, StreamStoreConfig::default(), deferred(interval())).unwrap();
    let mut names = reopened.consumer_names().unwrap();
    names.sort();
    assert_eq!(names, ["auditor", "worker"]);
    let recovered = reopened.consumer_store("worker").unwrap();
    assert_eq!(recovered.config(), b"{\"durable_name\":\"worker\"}");
    assert!(recovered.pending_creation().is_none());
}

#[test]
fn a_consumer_under_sync_always_runs_its_creation_before_writing_state_durably() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut stream = FileStore::open(
        &dir,
        StreamStoreConfig::default(),
        deferred(SyncPolicy::Always),
    )
    .unwrap();
    let stream_creation = stream.pending_creation().expect("stream pending");
    let mut consumer = stream.consumer_store("worker").unwrap();
    consumer.set_config(b"{}").unwrap();
    let pending = consumer.pending_creation().expect("consumer pending");
    consumer.set_state(ConsumerState::default()).unwrap();
    consumer.flush().unwrap();
    assert!(pending.is_done() && stream_creation.is_done());
}

#[test]
fn without_the_option_nothing_is_left_pending() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("orders");
    let mut store = FileStore::open(
        &dir,
        StreamStoreConfig::default(),
        FileStoreOptions::default(),
    )
    .unwrap();
    store.set_metadata(b"{}").unwrap();
    assert!(store.pending_creation().is_none());
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer.set_config(b"{}").unwrap();
    assert!(consumer.pending_creation().is_none());
}

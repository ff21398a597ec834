//! Test helpers: store factories shared by the integration tests.
#![allow(dead_code)]

use nats_store::{Compression, MemStore, StreamStore, StreamStoreConfig};

/// Makes fresh stores for a test.
pub trait Factory {
    fn create(&self, config: StreamStoreConfig) -> Box<dyn StreamStore>;
}

pub struct MemFactory;

impl Factory for MemFactory {
    fn create(&self, config: StreamStoreConfig) -> Box<dyn StreamStore> {
        Box::new(MemStore::new(config))
    }
}

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use nats_store::{
    ConsumerStore, FileStore, FileStoreOptions, RemovedMessage, StoreError, StoredMessage,
    StreamState, SubjectState, SyncPolicy,
};

/// Small blocks so every test crosses block boundaries.
pub fn small_blocks() -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(120)),
        block_size: 512,
        write_buffer_limit: 64 * 1024,
        defer_creation_sync: false,
    }
}

pub struct FileFactory {
    reopen: bool,
    compression: Compression,
}

impl FileFactory {
    pub fn new() -> Self {
        FileFactory {
            reopen: false,
            compression: Compression::None,
        }
    }
    /// Stores that close (or crash after flushing) and reopen after every mutation.
    pub fn reopening() -> Self {
        FileFactory {
            reopen: true,
            compression: Compression::None,
        }
    }
    /// Stores with `compression: s2`, reopened after every mutation.
    pub fn compressed() -> Self {
        FileFactory {
            reopen: true,
            compression: Compression::S2,
        }
    }
}

impl Factory for FileFactory {
    fn create(&self, mut config: StreamStoreConfig) -> Box<dyn StreamStore> {
        config.compression = self.compression;
        let dir = tempfile::tempdir().unwrap();
        let store =
            FileStore::open(dir.path().join("stream"), config.clone(), small_blocks()).unwrap();
        if self.reopen {
            Box::new(ReopeningStore {
                dir,
                config,
                store: Some(store),
                mutations: Cell::new(0),
                closed: false,
            })
        } else {
            Box::new(KeepDir { _dir: dir, store })
        }
    }
}

/// A FileStore plus the temporary directory it lives in.
pub struct KeepDir {
    _dir: tempfile::TempDir,
    store: FileStore,
}

/// A FileStore that is reopened after every mutation, alternately after a clean close and after
/// a simulated crash (flushed to the OS, then abandoned without close).
pub struct ReopeningStore {
    dir: tempfile::TempDir,
    config: StreamStoreConfig,
    store: Option<FileStore>,
    mutations: Cell<u64>,
    closed: bool,
}

impl ReopeningStore {
    fn inner(&mut self) -> &mut FileStore {
        self.store.as_mut().unwrap()
    }
    fn reopen(&mut self) {
        if self.closed {
            return;
        }
        let count = self.mutations.get() + 1;
        self.mutations.set(count);
        let mut store = self.store.take().unwrap();
        if count.is_multiple_of(2) {
            store.close().unwrap();
            drop(store);
        } else {
            store.flush().unwrap();
            store.abandon();
        }
        let store = FileStore::open(
            self.dir.path().join("stream"),
            self.config.clone(),
            small_blocks(),
        )
        .unwrap();
        assert!(
            store.recovery_report().is_clean(),
            "{:?}",
            store.recovery_report()
        );
        self.store = Some(store);
    }
    fn after<T>(&mut self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        self.reopen();
        result
    }
}

impl StreamStore for KeepDir {
    fn config(&self) -> &StreamStoreConfig {
        self.store.config()
    }
    fn update_config(&mut self, config: StreamStoreConfig) -> Result<(), StoreError> {
        self.store.update_config(config)
    }
    fn store_msg(
        &mut self,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(u64, i64), StoreError> {
        self.store.store_msg(subject, headers, payload, ttl)
    }
    fn store_raw(
        &mut self,
        seq: u64,
        timestamp: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        self.store
            .store_raw(seq, timestamp, subject, headers, payload, ttl)
    }
    fn skip_msgs(&mut self, seq: u64, count: u64) -> Result<(), StoreError> {
        self.store.skip_msgs(seq, count)
    }
    fn flush(&mut self) -> Result<u64, StoreError> {
        self.store.flush()
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.store.sync()
    }
    fn load(&mut self, seq: u64) -> Result<StoredMessage, StoreError> {
        self.store.load(seq)
    }
    fn message_ttl(&mut self, seq: u64) -> Option<Duration> {
        self.store.message_ttl(seq)
    }
    fn load_next(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.store.load_next(filter, start_seq)
    }
    fn load_next_matching(
        &mut self,
        filters: &[String],
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.store.load_next_matching(filters, start_seq)
    }
    fn load_last(&mut self, filter: &str) -> Result<Option<StoredMessage>, StoreError> {
        self.store.load_last(filter)
    }
    fn load_prev(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.store.load_prev(filter, start_seq)
    }
    fn remove(&mut self, seq: u64) -> Result<bool, StoreError> {
        self.store.remove(seq)
    }
    fn erase(&mut self, seq: u64) -> Result<bool, StoreError> {
        self.store.erase(seq)
    }
    fn purge(&mut self) -> Result<u64, StoreError> {
        self.store.purge()
    }
    fn purge_ex(&mut self, filter: &str, up_to_seq: u64, keep: u64) -> Result<u64, StoreError> {
        self.store.purge_ex(filter, up_to_seq, keep)
    }
    fn compact(&mut self, seq: u64) -> Result<u64, StoreError> {
        self.store.compact(seq)
    }
    fn state(&self) -> StreamState {
        self.store.state()
    }
    fn deleted_seqs(&self) -> Vec<u64> {
        self.store.deleted_seqs()
    }
    fn subjects_state(&self, filter: &str) -> BTreeMap<String, SubjectState> {
        self.store.subjects_state(filter)
    }
    fn num_pending(&self, filter: &str, start_seq: u64, last_per_subject: bool) -> u64 {
        self.store.num_pending(filter, start_seq, last_per_subject)
    }
    fn num_pending_matching(
        &self,
        filters: &[String],
        start_seq: u64,
        last_per_subject: bool,
    ) -> u64 {
        self.store
            .num_pending_matching(filters, start_seq, last_per_subject)
    }
    fn seq_for_time(&self, timestamp: i64) -> u64 {
        self.store.seq_for_time(timestamp)
    }
    fn expire(&mut self, now: i64) -> Result<Vec<RemovedMessage>, StoreError> {
        self.store.expire(now)
    }
    fn next_expiry(&self) -> Option<i64> {
        self.store.next_expiry()
    }
    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.store.set_metadata(blob)
    }
    fn metadata(&self) -> &[u8] {
        self.store.metadata()
    }
    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.store.consumer_store(name)
    }
    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        self.store.consumer_names()
    }
    fn close(&mut self) -> Result<(), StoreError> {
        self.store.close()
    }
    fn delete(&mut self) -> Result<(), StoreError> {
        self.store.delete()
    }
}

impl StreamStore for ReopeningStore {
    fn config(&self) -> &StreamStoreConfig {
        self.store.as_ref().unwrap().config()
    }
    fn update_config(&mut self, config: StreamStoreConfig) -> Result<(), StoreError> {
        self.config = config.clone();
        let r = self.inner().update_config(config);
        self.after(r)
    }
    fn store_msg(
        &mut self,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(u64, i64), StoreError> {
        let r = self.inner().store_msg(subject, headers, payload, ttl);
        self.after(r)
    }
    fn store_raw(
        &mut self,
        seq: u64,
        timestamp: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        let r = self
            .inner()
            .store_raw(seq, timestamp, subject, headers, payload, ttl);
        self.after(r)
    }
    fn skip_msgs(&mut self, seq: u64, count: u64) -> Result<(), StoreError> {
        let r = self.inner().skip_msgs(seq, count);
        self.after(r)
    }
    fn flush(&mut self) -> Result<u64, StoreError> {
        self.inner().flush()
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.inner().sync()
    }
    fn load(&mut self, seq: u64) -> Result<StoredMessage, StoreError> {
        self.inner().load(seq)
    }
    fn message_ttl(&mut self, seq: u64) -> Option<Duration> {
        self.inner().message_ttl(seq)
    }
    fn load_next(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.inner().load_next(filter, start_seq)
    }
    fn load_next_matching(
        &mut self,
        filters: &[String],
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.inner().load_next_matching(filters, start_seq)
    }
    fn load_last(&mut self, filter: &str) -> Result<Option<StoredMessage>, StoreError> {
        self.inner().load_last(filter)
    }
    fn load_prev(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.inner().load_prev(filter, start_seq)
    }
    fn remove(&mut self, seq: u64) -> Result<bool, StoreError> {
        let r = self.inner().remove(seq);
        self.after(r)
    }
    fn erase(&mut self, seq: u64) -> Result<bool, StoreError> {
        let r = self.inner().erase(seq);
        self.after(r)
    }
    fn purge(&mut self) -> Result<u64, StoreError> {
        let r = self.inner().purge();
        self.after(r)
    }
    fn purge_ex(&mut self, filter: &str, up_to_seq: u64, keep: u64) -> Result<u64, StoreError> {
        let r = self.inner().purge_ex(filter, up_to_seq, keep);
        self.after(r)
    }
    fn compact(&mut self, seq: u64) -> Result<u64, StoreError> {
        let r = self.inner().compact(seq);
        self.after(r)
    }
    fn state(&self) -> StreamState {
        self.store.as_ref().unwrap().state()
    }
    fn deleted_seqs(&self) -> Vec<u64> {
        self.store.as_ref().unwrap().deleted_seqs()
    }
    fn subjects_state(&self, filter: &str) -> BTreeMap<String, SubjectState> {
        self.store.as_ref().unwrap().subjects_state(filter)
    }
    fn num_pending(&self, filter: &str, start_seq: u64, last_per_subject: bool) -> u64 {
        self.store
            .as_ref()
            .unwrap()
            .num_pending(filter, start_seq, last_per_subject)
    }
    fn num_pending_matching(
        &self,
        filters: &[String],
        start_seq: u64,
        last_per_subject: bool,
    ) -> u64 {
        self.store
            .as_ref()
            .unwrap()
            .num_pending_matching(filters, start_seq, last_per_subject)
    }
    fn seq_for_time(&self, timestamp: i64) -> u64 {
        self.store.as_ref().unwrap().seq_for_time(timestamp)
    }
    fn expire(&mut self, now: i64) -> Result<Vec<RemovedMessage>, StoreError> {
        let r = self.inner().expire(now);
        self.after(r)
    }
    fn next_expiry(&self) -> Option<i64> {
        self.store.as_ref().unwrap().next_expiry()
    }
    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        let r = self.inner().set_metadata(blob);
        self.after(r)
    }
    fn metadata(&self) -> &[u8] {
        self.store.as_ref().unwrap().metadata()
    }
    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.inner().consumer_store(name)
    }
    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        self.store.as_ref().unwrap().consumer_names()
    }
    fn close(&mut self) -> Result<(), StoreError> {
        self.closed = true;
        self.inner().close()
    }
    fn delete(&mut self) -> Result<(), StoreError> {
        self.closed = true;
        self.inner().delete()
    }
}

//! The stream's store and the one lock around it. This file is the only place that locks a
//! stream store.
//!
//! - [`StoreHandle::write`] (visible inside `stream/` only) is for the stream's own task: the
//!   ingest task holds it for one batch (checks, stores, one flush), never across a wait.
//! - [`StoreHandle::read`] is for everyone else (API reads, direct gets, consumers, mirrors and
//!   sources reading an origin): a [`ReadGuard`] offers the read calls and nothing that
//!   changes the stream's messages. Hold it briefly, never across an `.await` (the guard is not
//!   `Send`, so a spawned task cannot).
//!
//! The committed view: the leader of a replicated stream applies a batch to its store before it
//! proposes it (up to two batches in flight), so while a proposal is out the store holds messages that
//! may never exist (a leader cut off from its quorum; the next leader stores others under those
//! sequences). The ingest task marks each such batch with [`StoreHandle::propose_from`] (the state
//! before it, taken under the write lock) and [`StoreHandle::committed`] once it commits; a
//! [`ReadGuard`] then answers from the committed prefix only (its state is the one before the
//! oldest batch in flight, loads stop at its last sequence), as nats-server, whose leader stores a message only
//! once it is committed. Only the stream's own task reads past it ([`StoreHandle::read_raw`]).
//! The check is O(1) per read: a copy of the state taken once per batch.
//!
//! Lock order, enforced here: a store lock is a leaf. Nothing takes another store lock while
//! holding one (checked on every acquisition in debug builds), and nothing under a store lock
//! takes a consumer's state (the stream asks its consumers about interest only with its store
//! unlocked, `ingest/retention.rs`). A consumer may hold its own state while it reads the store.

use nats_store::{
    ConsumerStore, StoreError, StoredMessage, StreamState, StreamStore, SubjectState,
};
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

thread_local! {
    /// Whether this thread holds a stream store lock (the leaf check).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread as holding a store lock for as long as it lives.
struct Held {
    /// Whether the thread held one before (only a non-blocking `try_read` may nest).
    previous: bool,
}

impl Held {
    /// Before a blocking acquisition: the thread must hold no other store lock.
    fn acquire() -> Held {
        let held = Held::nested();
        debug_assert!(
            !held.previous,
            "a stream store lock was taken while another is held: store locks are leaves"
        );
        held
    }

    /// Before a non-blocking acquisition, which cannot deadlock.
    fn nested() -> Held {
        Held {
            previous: HOLDING.with(|holding| holding.replace(true)),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HOLDING.with(|holding| holding.set(self.previous));
    }
}

/// A stream's store. Cloning shares the same store (the stream's tasks keep a clone).
#[derive(Clone)]
pub(crate) struct StoreHandle {
    store: Arc<Mutex<Box<dyn StreamStore>>>,
    /// While batches the store holds are being proposed: the state before each, oldest first
    /// (the first is the committed prefix). Pushed only under the store lock; readers copy the
    /// first under the store lock.
    proposing: Arc<parking_lot::Mutex<VecDeque<StreamState>>>,
}

impl StoreHandle {
    pub(in crate::stream) fn new(store: Box<dyn StreamStore>) -> StoreHandle {
        StoreHandle {
            store: Arc::new(Mutex::new(store)),
            proposing: Arc::default(),
        }
    }

    /// The ingest task, holding the write lock, applies a batch it will propose: until it and
    /// the batches before it commit ([`StoreHandle::committed`]), readers see the state before
    /// the oldest of them. The guard proves the caller holds the lock.
    pub(in crate::stream) fn propose_from(
        &self,
        _writing: &mut dyn StreamStore,
        before: StreamState,
    ) {
        self.proposing.lock().push_back(before);
    }

    /// The oldest proposed batch committed: readers see up to the next one still proposed, or
    /// the whole store. Needs no store lock: what it holds up to there is committed by now.
    pub(in crate::stream) fn committed(&self) {
        self.proposing.lock().pop_front();
    }

    /// The store was replaced by the committed log: nothing in it is being proposed.
    pub(in crate::stream) fn replaced(&self) {
        self.proposing.lock().clear();
    }

    /// The writer's lock: the stream's own task only.
    pub(in crate::stream) fn write(&self) -> WriteGuard<'_> {
        let held = Held::acquire();
        WriteGuard {
            store: self.lock(),
            _held: held,
        }
    }

    /// A reader's lock: read calls only, held briefly.
    pub(crate) fn read(&self) -> ReadGuard<'_> {
        let held = Held::acquire();
        let store = self.lock();
        ReadGuard {
            committed: self.proposing.lock().front().copied(),
            store,
            _held: held,
        }
    }

    /// A reader's lock that sees the batch being proposed too: for the stream's own task only
    /// (its read-backs and the state it proposes).
    pub(in crate::stream) fn read_raw(&self) -> ReadGuard<'_> {
        let held = Held::acquire();
        ReadGuard {
            committed: None,
            store: self.lock(),
            _held: held,
        }
    }

    /// [`StoreHandle::read`] when the lock is free now (a reader that must not wait behind
    /// the writer's batch, as the direct-get fast path).
    pub(crate) fn try_read(&self) -> Option<ReadGuard<'_>> {
        let held = Held::nested();
        let store = match self.store.try_lock() {
            Ok(store) => store,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(ReadGuard {
            committed: self.proposing.lock().front().copied(),
            store,
            _held: held,
        })
    }

    /// std's futex mutex, not parking_lot's: a parking_lot lock that finds the lock taken
    /// spins with `sched_yield` before it parks, and under CPU load each yield can give the
    /// thread's core to other processes for a time slice. A consumer woken by a commit met the
    /// stream task's next batch that way and lost 1-4 ms, while the stream went on storing
    /// publishes answered meanwhile (issue 19: a KV watcher missed an update a purge removed in
    /// that time). std's lock spins briefly without yielding, then sleeps until the unlock.
    /// A panic under the lock leaves the store as parking_lot would: usable.
    fn lock(&self) -> MutexGuard<'_, Box<dyn StreamStore>> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counters of the committed prefix right now (a read lock for one call).
    pub(crate) fn state(&self) -> StreamState {
        self.read().state()
    }

    /// The counters of everything stored, a batch being proposed included: the stream's own task.
    pub(in crate::stream) fn raw_state(&self) -> StreamState {
        self.read_raw().state()
    }
}

/// The stream task's hold on its store, for one batch.
pub(crate) struct WriteGuard<'a> {
    store: MutexGuard<'a, Box<dyn StreamStore>>,
    _held: Held,
}

impl std::ops::Deref for WriteGuard<'_> {
    type Target = Box<dyn StreamStore>;
    fn deref(&self) -> &Self::Target {
        &self.store
    }
}

impl std::ops::DerefMut for WriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.store
    }
}

/// A reader's hold on a store: the read calls of [`StreamStore`], over the committed prefix
/// (see the module's doc).
pub(crate) struct ReadGuard<'a> {
    store: MutexGuard<'a, Box<dyn StreamStore>>,
    /// The committed state while a batch past it is being proposed.
    committed: Option<StreamState>,
    _held: Held,
}

impl ReadGuard<'_> {
    pub(crate) fn state(&self) -> StreamState {
        self.committed.unwrap_or_else(|| self.store.state())
    }

    /// The last sequence a reader may see, while a batch past it is being proposed.
    fn bound(&self) -> Option<u64> {
        self.committed.map(|state| state.last_seq)
    }

    /// `found` unless it lies past the committed prefix.
    fn visible(&self, found: Option<StoredMessage>) -> Option<StoredMessage> {
        match self.bound() {
            Some(last) => found.filter(|message| message.seq <= last),
            None => found,
        }
    }

    pub(crate) fn load(&mut self, seq: u64) -> Result<StoredMessage, StoreError> {
        if self.bound().is_some_and(|last| seq > last) {
            return Err(StoreError::NotFound);
        }
        self.store.load(seq)
    }

    pub(crate) fn load_next(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        let found = self.store.load_next(filter, start_seq)?;
        Ok(self.visible(found))
    }

    /// The per-message TTL of a message this guard showed (`StreamStore::message_ttl`).
    pub(crate) fn message_ttl(&mut self, seq: u64) -> Option<std::time::Duration> {
        self.store.message_ttl(seq)
    }

    pub(crate) fn load_next_matching(
        &mut self,
        filters: &[String],
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        let found = self.store.load_next_matching(filters, start_seq)?;
        Ok(self.visible(found))
    }

    pub(crate) fn load_last(&mut self, filter: &str) -> Result<Option<StoredMessage>, StoreError> {
        let found = self.store.load_last(filter)?;
        match (self.bound(), found) {
            (Some(last), Some(found)) if found.seq > last => self.load_prev(filter, last),
            (_, found) => Ok(found),
        }
    }

    pub(crate) fn load_prev(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        let start_seq = self.bound().map_or(start_seq, |last| start_seq.min(last));
        if start_seq == 0 {
            return Ok(None);
        }
        self.store.load_prev(filter, start_seq)
    }

    pub(crate) fn deleted_seqs(&self) -> Vec<u64> {
        let mut deleted = self.store.deleted_seqs();
        if let Some(last) = self.bound() {
            deleted.retain(|seq| *seq <= last);
        }
        deleted
    }

    /// Per-subject counts; while a batch is proposed, of the committed prefix (the batch's
    /// subjects corrected from the index: one look-up each).
    pub(crate) fn subjects_state(&mut self, filter: &str) -> BTreeMap<String, SubjectState> {
        let mut subjects = self.store.subjects_state(filter);
        let Some(last) = self.bound() else {
            return subjects;
        };
        let proposed: Vec<String> = subjects
            .iter()
            .filter(|(_, state)| state.last_seq > last)
            .map(|(subject, _)| subject.clone())
            .collect();
        for subject in proposed {
            let Some(state) = subjects.get(&subject).copied() else {
                continue;
            };
            let newer = self.store.num_pending(&subject, last + 1, false);
            let committed_last = if state.first_seq > last || newer >= state.msgs {
                None
            } else {
                self.store
                    .load_prev(&subject, last)
                    .ok()
                    .flatten()
                    .map(|message| message.seq)
            };
            match committed_last {
                Some(last_seq) => {
                    subjects.insert(
                        subject,
                        SubjectState {
                            msgs: state.msgs - newer,
                            first_seq: state.first_seq,
                            last_seq,
                        },
                    );
                }
                None => {
                    subjects.remove(&subject);
                }
            }
        }
        subjects
    }

    pub(crate) fn num_pending(&self, filter: &str, start_seq: u64, last_per_subject: bool) -> u64 {
        let pending = self.store.num_pending(filter, start_seq, last_per_subject);
        match self.bound() {
            Some(last) if !last_per_subject => {
                let start_past = start_seq.max(last + 1);
                pending.saturating_sub(self.store.num_pending(filter, start_past, false))
            }
            _ => pending,
        }
    }

    pub(crate) fn num_pending_matching(
        &self,
        filters: &[String],
        start_seq: u64,
        last_per_subject: bool,
    ) -> u64 {
        let pending = self
            .store
            .num_pending_matching(filters, start_seq, last_per_subject);
        match self.bound() {
            Some(last) if !last_per_subject => {
                let start_past = start_seq.max(last + 1);
                pending.saturating_sub(self.store.num_pending_matching(filters, start_past, false))
            }
            _ => pending,
        }
    }

    pub(crate) fn seq_for_time(&self, timestamp: i64) -> u64 {
        self.store.seq_for_time(timestamp)
    }

    /// The store's creation sync while it is pending (a file stream created moments ago).
    pub(crate) fn pending_creation(&self) -> Option<std::sync::Arc<nats_store::CreationSync>> {
        self.store.pending_creation()
    }

    /// Open (or create) the persisted state of consumer `name`, beside the stream's files.
    pub(crate) fn consumer_store(
        &mut self,
        name: &str,
    ) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.store.consumer_store(name)
    }

    pub(crate) fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        self.store.consumer_names()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle() -> StoreHandle {
        StoreHandle::new(Box::new(nats_store::MemStore::new(
            nats_store::StreamStoreConfig::default(),
        )))
    }

    #[test]
    fn readers_see_what_the_writer_stored() {
        let store = handle();
        store
            .write()
            .store_msg("a", b"", b"one", None)
            .expect("stored");
        let mut reader = store.read();
        assert_eq!(reader.state().msgs, 1);
        assert_eq!(reader.load(1).expect("loaded").payload.as_ref(), b"one");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "store locks are leaves")]
    fn a_second_store_lock_on_one_thread_is_refused() {
        let first = handle();
        let second = handle();
        let _held = first.read();
        let _ = second.read();
    }

    #[test]
    fn the_leaf_mark_is_cleared_when_the_guard_goes() {
        let first = handle();
        let second = handle();
        drop(first.read());
        assert_eq!(second.state().msgs, 0);
        assert!(first.try_read().is_some());
    }
}

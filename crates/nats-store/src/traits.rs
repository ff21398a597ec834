//! The storage traits the JetStream layer codes against.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::StreamStoreConfig;
use crate::consumer::{ConsumerState, SequencePair};
use crate::error::StoreError;
use crate::types::{RemovedMessage, StoredMessage, StreamState, SubjectState};

/// Runs once what it was registered for is durable (`Ok`), or can no longer become durable
/// (`Err`, e.g. a failed fsync). It may run on another thread, or before the registering call
/// returns; callbacks of one store run one at a time, in the order they were registered.
pub type DurableCallback = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A stream's message store. One owner (the stream task) drives it; every method is synchronous.
///
/// Sequences start at 1. Timestamps are nanoseconds since the Unix epoch. A filter is a subject
/// that may contain `*` and `>`; an empty filter or `>` selects everything.
pub trait StreamStore: Send {
    /// The limits currently enforced.
    fn config(&self) -> &StreamStoreConfig;

    /// Replace the limits; tightened limits are applied immediately (old messages removed).
    fn update_config(&mut self, config: StreamStoreConfig) -> Result<(), StoreError>;

    /// Append a message with the next sequence and the current time, enforcing every limit.
    /// Returns `(seq, timestamp)`. With discard-new a limit rejects with `MaxMessages`, `MaxBytes`
    /// or `MaxMessagesPerSubject`; `MaxMessageSize` always rejects. `ttl` is honoured only when
    /// `allow_msg_ttl` is set; [`crate::TTL_NEVER`] exempts the message from max_age.
    /// The message is visible to loads at once but durable only after [`StreamStore::flush`].
    fn store_msg(
        &mut self,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(u64, i64), StoreError>;

    /// Append a message at a given sequence and timestamp (mirrors, sourcing, replication).
    /// `seq` must be `last_seq + 1` (or anything above last when the store is empty, which moves first).
    fn store_raw(
        &mut self,
        seq: u64,
        timestamp: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(), StoreError>;

    /// Mark `count` sequences starting at `seq` (which must be `last_seq + 1`) as used but deleted.
    fn skip_msgs(&mut self, seq: u64, count: u64) -> Result<(), StoreError>;

    /// Write everything stored so far and make it as durable as the sync policy promises
    /// (with `SyncPolicy::Always`, one fsync covers the whole batch: group commit).
    /// Returns the last sequence covered. Also runs deferred maintenance (block compaction).
    /// The owner should also call it from a periodic timer (e.g. every few seconds): with an
    /// interval policy, fsync happens inside `flush` once the interval has passed.
    fn flush(&mut self) -> Result<u64, StoreError>;

    /// [`StreamStore::flush`] without waiting for the fsync: everything stored so far is
    /// written, and `on_durable` runs once it is as durable as the policy promises. With
    /// `SyncPolicy::Always` the FileStore's fsync runs on a sync thread while the owner goes on
    /// appending (several may be in flight; callbacks still run in registration order), so
    /// acknowledgements sent from `on_durable` are never early. When this returns `Err`,
    /// `on_durable` is dropped without running.
    fn flush_then(&mut self, on_durable: DurableCallback) -> Result<u64, StoreError> {
        let last = self.flush()?;
        on_durable(Ok(()));
        Ok(last)
    }

    /// Write and fsync now, whatever the policy.
    fn sync(&mut self) -> Result<(), StoreError>;

    /// Load one message by sequence; `NotFound` when deleted or out of range.
    fn load(&mut self, seq: u64) -> Result<StoredMessage, StoreError>;

    /// The per-message TTL message `seq` was stored with ([`crate::TTL_NEVER`] for "never"),
    /// None without one (or when it is not stored). Copying a stream's messages elsewhere
    /// (a snapshot, a scale-up) carries it with this.
    fn message_ttl(&mut self, seq: u64) -> Option<Duration>;

    /// First message with sequence >= `start_seq` whose subject matches `filter`.
    fn load_next(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError>;

    /// First message with sequence >= `start_seq` matching any of `filters` (empty slice: all).
    fn load_next_matching(
        &mut self,
        filters: &[String],
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError>;

    /// The newest message whose subject matches `filter`.
    fn load_last(&mut self, filter: &str) -> Result<Option<StoredMessage>, StoreError>;

    /// The newest message with sequence <= `start_seq` matching `filter` (direct get "prev").
    fn load_prev(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError>;

    /// Remove one message. Returns false when it did not exist.
    fn remove(&mut self, seq: u64) -> Result<bool, StoreError>;

    /// Remove one message and overwrite its bytes on disk. Returns false when it did not exist.
    fn erase(&mut self, seq: u64) -> Result<bool, StoreError>;

    /// Remove every message; first becomes last + 1. Returns how many were removed.
    fn purge(&mut self) -> Result<u64, StoreError>;

    /// nats-server `PurgeEx`: remove messages matching `filter` (empty/`>`: all) with sequence below
    /// `up_to_seq` (0: no bound), keeping the `keep` newest matching ones (0: keep none).
    /// Returns how many were removed.
    fn purge_ex(&mut self, filter: &str, up_to_seq: u64, keep: u64) -> Result<u64, StoreError>;

    /// Remove every message with sequence below `seq`; first becomes `seq` (even past last).
    /// Returns how many were removed.
    fn compact(&mut self, seq: u64) -> Result<u64, StoreError>;

    /// Current counters.
    fn state(&self) -> StreamState;

    /// Every deleted sequence between first and last (may be large: only on request).
    fn deleted_seqs(&self) -> Vec<u64>;

    /// Per-subject counts for subjects matching `filter`.
    fn subjects_state(&self, filter: &str) -> BTreeMap<String, SubjectState>;

    /// Messages matching `filter` with sequence >= `start_seq`, from the per-subject index.
    /// With `last_per_subject`, counts subjects whose newest message is at or after `start_seq`.
    fn num_pending(&self, filter: &str, start_seq: u64, last_per_subject: bool) -> u64;

    /// As [`StreamStore::num_pending`] for a set of filters (each message counted once).
    fn num_pending_matching(
        &self,
        filters: &[String],
        start_seq: u64,
        last_per_subject: bool,
    ) -> u64;

    /// First sequence whose timestamp is >= `timestamp` (last_seq + 1 when none).
    fn seq_for_time(&self, timestamp: i64) -> u64;

    /// Remove messages whose max_age or TTL has passed at `now` (nanos since epoch).
    fn expire(&mut self, now: i64) -> Result<Vec<RemovedMessage>, StoreError>;

    /// When the next message will be due for expiry (nanos since epoch), if any.
    fn next_expiry(&self) -> Option<i64>;

    /// Persist an opaque blob for the owner (the stream's JSON config), recovered on open.
    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError>;

    /// The blob last given to [`StreamStore::set_metadata`].
    fn metadata(&self) -> &[u8];

    /// A store opened with `defer_creation_sync` that was created (not recovered) and is not
    /// yet durable: the owner runs it ([`crate::CreationSync::run`]) before it confirms the
    /// creation. The store runs it itself before the first acknowledgement relying on it.
    /// None otherwise and once it has run.
    fn pending_creation(&self) -> Option<std::sync::Arc<crate::CreationSync>> {
        None
    }

    /// Create (or open, when it exists) the store of consumer `name`.
    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError>;

    /// Names of consumers whose stores exist (for recovery).
    fn consumer_names(&self) -> Result<Vec<String>, StoreError>;

    /// Flush, fsync and write the index snapshot; the store is unusable afterwards.
    fn close(&mut self) -> Result<(), StoreError>;

    /// Remove every file of the stream (consumers included); the store is unusable afterwards.
    fn delete(&mut self) -> Result<(), StoreError>;
}

/// A consumer's persisted state. Mirrors nats-server's consumer store semantics.
pub trait ConsumerStore: Send {
    /// Persist the consumer's configuration (opaque, usually its JSON).
    fn set_config(&mut self, blob: &[u8]) -> Result<(), StoreError>;

    /// A new consumer store under a stream store with `defer_creation_sync`, after its first
    /// [`ConsumerStore::set_config`], not yet durable (its stream's creation included, when that
    /// is still pending): the owner runs it before it confirms the creation; the store runs it
    /// before the first durable write of its state. None otherwise and once it has run.
    fn pending_creation(&self) -> Option<std::sync::Arc<crate::CreationSync>> {
        None
    }

    /// The configuration blob last set (empty when none).
    fn config(&self) -> Vec<u8>;

    /// Record a delivery. `delivery_count` 1 is a first delivery (adds to pending), higher counts
    /// are redeliveries (counted in `redelivered`). Deliveries at or below the ack floor are ignored.
    fn update_delivered(
        &mut self,
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
    ) -> Result<(), StoreError>;

    /// Record an ack: the message leaves pending; the ack floor moves up as far as contiguous.
    fn update_acks(&mut self, consumer_seq: u64, stream_seq: u64) -> Result<(), StoreError>;

    /// Replace the whole state (resets, ack-none consumers, snapshots).
    fn set_state(&mut self, state: ConsumerState) -> Result<(), StoreError>;

    /// Stage the caller's state when it knows what changed since its last call: `changed` names
    /// every stream sequence whose pending or redelivered entry was added, changed or removed
    /// (duplicates allowed); delivered and ack floor are always taken. Costs O(changed), not
    /// O(pending), where the store supports it; the default hands over a copy of the whole state.
    fn update_state(&mut self, state: &ConsumerState, changed: &[u64]) -> Result<(), StoreError> {
        let _ = changed;
        self.set_state(state.clone())
    }

    /// Problems met when this consumer's persisted state was opened (damage found and cut);
    /// empty when it opened cleanly. For the owner to log.
    fn recovery_problems(&self) -> Vec<String> {
        Vec::new()
    }

    /// Current state.
    fn state(&self) -> ConsumerState;

    /// Last delivered pair (cheap accessor).
    fn delivered(&self) -> SequencePair;

    /// Persist changes since the last flush (fsync per policy); when it returns they survive a
    /// process kill, and with `SyncPolicy::Always` a power cut.
    fn flush(&mut self) -> Result<(), StoreError>;

    /// [`ConsumerStore::flush`] without waiting for the fsync: the changes are written when it
    /// returns (they survive a process kill), and `on_durable` runs once they, and everything
    /// flushed before them, are as durable as the policy promises. With `SyncPolicy::Always`
    /// the FileConsumerStore's fsync runs on the store's sync threads, so the caller (the
    /// consumer's task) never waits on the disk. Called with nothing changed, `on_durable`
    /// still waits for the syncs already in flight. When this returns `Err`, `on_durable` is
    /// dropped without running.
    fn flush_then(&mut self, on_durable: DurableCallback) -> Result<(), StoreError> {
        self.flush()?;
        on_durable(Ok(()));
        Ok(())
    }

    /// A handle to remove this store's files from another thread while the store's owner still
    /// holds it ([`crate::ConsumerRemoval`]: the store writes nothing after); `None` for a store
    /// without files.
    fn removal(&self) -> Option<std::sync::Arc<crate::ConsumerRemoval>> {
        None
    }

    /// Remove the consumer's persisted state.
    fn delete(&mut self) -> Result<(), StoreError>;
}

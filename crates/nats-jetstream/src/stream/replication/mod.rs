//! Replicated streams: the seam between a stream and the log that replicates it.
//!
//! What lives here: [`Replicator`], the narrow trait the ingest task uses when its stream is
//! replicated (propose a batch, resolved once committed; whether this node leads; telling the
//! owner that this replica must be rebuilt); [`ReplicaMachine`], the follower-apply entry point
//! (apply a committed batch through `stream::apply::apply`, build and restore snapshots); the
//! batch codec (`codec.rs`).
//!
//! How a replicated stream runs: the leader's ingest task decides and applies its entries exactly
//! as an R1 stream does (the store is its working state), records them in a batch, proposes the
//! batch and sends the PubAcks, and wakes the consumers, only once the batch is committed (on a
//! quorum's disks). Its own batch comes back through [`ReplicaMachine::apply_committed`], which
//! recognises it by its id and skips it; every other replica applies it. A proposal that fails
//! leaves the leader's store ahead of the log, so the replica is rebuilt ([`Replicator::rebuilt`]
//! asks the owner to restart the group over a fresh store: the snapshot and the committed log
//! are the truth). Followers take no publishes.
//!
//! Snapshots ([`ReplicaMachine::snapshot`]) are the stream's config and its messages through the
//! last committed sequence, as one batch of entries (gaps as skips), followed by the committed
//! states of the stream's replicated consumers; restoring one replaces the store with a fresh
//! one and applies that batch. Both stream through a file (nats-raft's): the batch is written
//! and read a piece at a time, never whole in memory.
//!
//! Consumers of a replicated stream ride the same log: their records (create, state changes,
//! delete) are proposals of their own, marked by their first byte ([`CONSUMER_BATCH`]), which
//! every replica, the leader included, hands to the [`ConsumerReplicas`] the registry installed
//! (`consumer/replicated.rs`): this layer only routes them, it does not know consumers.
//!
//! Who calls it: the server's stream group (a Raft group per replicated stream) implements
//! [`Replicator`] and feeds committed entries to [`ReplicaMachine`]; the ingest task calls the
//! replicator. What it must not know: Raft, routes, the API.

pub(crate) mod codec;

/// The first byte of a proposal carrying consumer records (a stream batch starts with its
/// codec version, 1).
pub(crate) const CONSUMER_BATCH: u8 = 0xC1;
/// The first byte of a snapshot that carries consumer states after its stream batch.
const SNAPSHOT_WITH_CONSUMERS: u8 = 0xC2;

use super::apply::{apply, StreamEntry};
use super::{announce, storage, Stream};
use crate::SyncPolicy;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;

/// Why a proposal did not commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationError {
    /// This node does not lead the stream's group (or is handing the leadership over): the
    /// proposal was refused before it reached the log, so none of it can commit.
    #[error("not the stream leader")]
    NotLeader,
    /// The proposal reached the log, then a leader change discarded it here: it may still
    /// commit through the next leader (outcome unknown).
    #[error("proposal discarded by a leader change")]
    Discarded,
    /// This node's log cannot take the proposal: its disk is full (the operating system's
    /// reason). It may still commit through the next leader when it reached the log of others.
    #[error("raft log waits for space: {0}")]
    NoSpace(String),
    /// The group failed (offline, storage error, no quorum in time).
    #[error("replication failed: {0}")]
    Failed(String),
}

/// A proposal on its way to commit.
pub type ProposeFuture = Pin<Box<dyn Future<Output = Result<(), ReplicationError>> + Send>>;

/// A proposal being handed to the log: resolves once the log has it, with the Raft term it went
/// in and its commit to wait for ([`Replicator::submit`]).
pub type SubmitFuture =
    Pin<Box<dyn Future<Output = Result<(u64, ProposeFuture), ReplicationError>> + Send>>;

/// What a replicated stream's ingest task needs from its log.
pub trait Replicator: Send + Sync + 'static {
    /// Hands one encoded batch to the log; resolves once the log has it (a batch submitted
    /// after it goes after it in the log), with the Raft term it went in and the wait for its
    /// commit (durable on a quorum) and apply on this node. The ingest task keeps several in
    /// flight this way, each after the first submitted with the first one's `term`: refused
    /// unless this node still leads in that term.
    fn submit(&self, batch: Bytes, term: Option<u64>) -> SubmitFuture;

    /// Appends one encoded batch; resolves once it is committed and applied on this node.
    fn propose(&self, batch: Bytes) -> ProposeFuture {
        let submitted = self.submit(batch, None);
        Box::pin(async move { submitted.await?.1.await })
    }

    /// `Some(leadership)` while this node leads and has applied everything committed before its
    /// leadership began (it may decide from its store), `None` otherwise. The number changes
    /// with every leadership, also when a restarted group resumes the same Raft term: what the
    /// leader keeps in memory is rebuilt whenever it changes.
    fn leadership(&self) -> watch::Receiver<Option<u64>>;

    /// True from this node's election until it leads no more, also before [`leadership`] says
    /// it leads (its election's entry on its way to a quorum; for a bounded time): the stream
    /// subscribes its subjects from then on and its ingest task holds the publishes that
    /// arrive until it leads, instead of leaving publishers to hear "no responders" until the
    /// entry commits. Never, by default.
    ///
    /// [`leadership`]: Replicator::leadership
    fn elected(&self) -> watch::Receiver<bool> {
        watch::channel(false).1
    }

    /// This node's store holds entries that may never commit (a proposal failed): rebuild the
    /// replica ([`ReplicaMachine::reset`], then restart the group so the snapshot and the
    /// committed log are applied again).
    fn rebuilt(&self);

    /// The leader lease of the leadership this node holds now (asked when a replicated
    /// consumer starts): whether, by the clock, a quorum's word still backs it. A consumer
    /// delivers only while it holds, so a leader that was paused, or cut off, delivers nothing
    /// once its quorum may have elected another (its leadership watch flips only when its task
    /// runs).
    fn lease(&self) -> Arc<dyn Lease>;

    /// Whether every member of the group reads consumer records in their binary form
    /// (`consumer/replicated/codec.rs`): rnats builds from before it read only the JSON array,
    /// and a rolling upgrade runs both. The JSON array otherwise.
    fn binary_consumer_records(&self) -> bool {
        true
    }
}

/// A leader lease ([`Replicator::lease`]): must be cheap, it is read before every delivery batch.
pub trait Lease: Send + Sync + 'static {
    fn holds(&self) -> bool;
}

/// A lease that never holds (no group: nothing may be delivered).
pub struct NoLease;

impl Lease for NoLease {
    fn holds(&self) -> bool {
        false
    }
}

/// A lease the tests set by hand.
#[cfg(test)]
impl Lease for std::sync::atomic::AtomicBool {
    fn holds(&self) -> bool {
        self.load(Ordering::SeqCst)
    }
}

/// The committed states of a replicated stream's consumers, kept on every replica (installed by
/// the registry, implemented in `consumer/replicated.rs`). Called in log order.
pub(crate) trait ConsumerReplicas: Send + Sync + 'static {
    /// Applies one committed proposal of consumer records (the bytes after [`CONSUMER_BATCH`]).
    fn apply(&self, records: &[u8]) -> io::Result<()>;
    /// Every consumer's committed state, for a snapshot.
    fn snapshot(&self) -> Vec<u8>;
    /// Replaces every consumer's committed state with a snapshot's (empty: none).
    fn restore(&self, snapshot: &[u8]) -> io::Result<()>;
}

/// State shared by the leader's ingest task and the replica's apply entry point.
pub(crate) struct ReplicaShared {
    inner: Mutex<SharedInner>,
    /// Whether the ingest task may be deciding or proposing a batch now (false once it saw it
    /// no longer leads, its batches settled, or while it waits idle with none in flight): a
    /// handover waits for false, so that no batch is proposed once the transfer began.
    deciding: tokio::sync::watch::Sender<bool>,
}

impl Default for ReplicaShared {
    fn default() -> Self {
        ReplicaShared {
            inner: Mutex::default(),
            deciding: tokio::sync::watch::Sender::new(false),
        }
    }
}

#[derive(Default)]
struct SharedInner {
    /// Batches the ingest task applied itself before proposing them.
    local: HashSet<u64>,
    /// The stream's last sequence through the last committed batch.
    committed_last_seq: u64,
    /// The store went ahead of the log (a failed proposal): applies are refused until reset.
    diverged: bool,
}

impl ReplicaShared {
    pub(crate) fn set_deciding(&self, deciding: bool) {
        self.deciding
            .send_if_modified(|now| std::mem::replace(now, deciding) != deciding);
    }

    /// The ingest task applied batch `id` itself: skip it when it comes back committed.
    pub(crate) fn applied_locally(&self, id: u64) {
        self.inner.lock().local.insert(id);
    }

    pub(crate) fn mark_diverged(&self) {
        self.inner.lock().diverged = true;
    }

    pub(crate) fn is_diverged(&self) -> bool {
        self.inner.lock().diverged
    }
}

/// The ingest task's side of a replicated stream.
pub(crate) struct Replica {
    pub replicator: Arc<dyn Replicator>,
    pub shared: Arc<ReplicaShared>,
}

/// A replicated stream's apply entry point: committed batches, snapshots, restores. Cloning
/// shares the same replica.
#[derive(Clone)]
pub struct ReplicaMachine {
    stream: Arc<Stream>,
    shared: Arc<ReplicaShared>,
    store_root: PathBuf,
    sync: SyncPolicy,
    consumers: Option<Arc<dyn ConsumerReplicas>>,
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.to_string())
}

/// Whether `error` says the disk (or the quota) is full.
fn is_full(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

fn store_error(error: nats_store::StoreError) -> io::Error {
    io::Error::other(error.to_string())
}

impl ReplicaMachine {
    pub(crate) fn new(
        stream: Arc<Stream>,
        shared: Arc<ReplicaShared>,
        store_root: PathBuf,
        sync: SyncPolicy,
    ) -> ReplicaMachine {
        ReplicaMachine {
            stream,
            shared,
            store_root,
            sync,
            consumers: None,
        }
    }

    /// Resolves once the stream's ingest task proposes nothing more until it sees its next
    /// leadership: it saw it no longer leads and its batches in flight are settled, or it is
    /// idle with none in flight. For a handover: the stream stops leading first
    /// (`StreamGroup` leadership `None`), then this, then the transfer.
    pub async fn stopped_deciding(&self) {
        let mut deciding = self.shared.deciding.subscribe();
        let _ = deciding.wait_for(|deciding| !deciding).await;
    }

    /// Where committed consumer records go (before the group starts).
    pub(crate) fn set_consumers(&mut self, consumers: Arc<dyn ConsumerReplicas>) {
        self.consumers = Some(consumers);
    }

    /// Applies one committed batch (the bytes a [`Replicator::propose`] carried), in log order.
    /// The leader's own batches are already in its store and are skipped. An error means this
    /// replica can no longer follow the log: its group must stop and the replica be rebuilt.
    pub fn apply_committed(&self, batch: &[u8]) -> io::Result<()> {
        if let Some((&CONSUMER_BATCH, records)) = batch.split_first() {
            return match &self.consumers {
                Some(consumers) => consumers.apply(records),
                None => Ok(()),
            };
        }
        let mut batch = codec::decode_batch(batch).map_err(invalid)?;
        let last = {
            let mut store = self.stream.store.write();
            {
                let mut shared = self.shared.inner.lock();
                if shared.diverged {
                    return Err(io::Error::other(
                        "the replica went ahead of the log: rebuild it",
                    ));
                }
                if shared.local.remove(&batch.id) {
                    shared.committed_last_seq = batch.last_seq;
                    return Ok(());
                }
            }
            // Another leader's batch: consumers still running here stop delivering now.
            self.stream.followed.store(true, Ordering::SeqCst);
            let mut dedupe = DedupeFill::new(&self.stream);
            while let Some(entry) = batch.next_entry().map_err(invalid)? {
                apply(&mut **store, &entry).map_err(store_error)?;
                dedupe.applied(&entry);
            }
            dedupe.finish();
            match store.flush() {
                Ok(_) => {}
                // A full disk: the records stay buffered in the store and are written with a
                // later flush (the file store writes a failed write again from the same
                // offset). Nothing is lost meanwhile: the group's log holds the batch, and
                // stalls on the same disk until space returns. Failing the apply instead
                // would stop the group for good.
                Err(nats_store::StoreError::Io { path, source }) if is_full(&source) => {
                    tracing::warn!(stream = %self.stream.config().name, path = %path.display(), %source,
                        "replica write waits for space; kept in memory");
                }
                Err(error) => return Err(store_error(error)),
            }
            self.count_usage(&**store);
            let last = store.state().last_seq;
            self.shared.inner.lock().committed_last_seq = last;
            last
        };
        announce(&self.stream, last);
        Ok(())
    }

    /// Writes the stream's state through the last committed batch to `out`, as one batch of
    /// entries (the config, then every message in order with the gaps as skips), written a
    /// [`codec::PIECE`] at a time as the store is read (a large stream's snapshot is never
    /// whole in memory), then the consumers' committed states: `[SNAPSHOT_WITH_CONSUMERS]
    /// [u64 batch length][batch][consumer states]`, the length filled in once the batch is out.
    pub fn snapshot<W: io::Write + io::Seek + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let with_consumers = self.consumers.is_some();
        if with_consumers {
            out.write_all(&[SNAPSHOT_WITH_CONSUMERS])?;
            out.write_all(&[0; 8])?;
        }
        let config = self.stream.config();
        let mut buffer = Vec::with_capacity(codec::PIECE + (64 << 10));
        codec::start_batch(&mut buffer);
        codec::encode(
            &StreamEntry::Config {
                config: Box::new(config),
                created: self.stream.created,
            },
            &mut buffer,
        );
        let mut batch_length = 0u64;
        let mut flush = |buffer: &mut Vec<u8>, out: &mut W| -> io::Result<()> {
            out.write_all(buffer)?;
            batch_length += buffer.len() as u64;
            buffer.clear();
            Ok(())
        };
        let mut store = self.stream.store.write();
        let committed = self.shared.inner.lock().committed_last_seq;
        codec::finish_batch(&mut buffer, 0, committed);
        let mut next = 1;
        while next <= committed {
            let Some(message) = store.load_next(">", next).map_err(store_error)? else {
                break;
            };
            if message.seq > committed {
                break;
            }
            if message.seq > next {
                let gap = StreamEntry::Skip {
                    seq: next,
                    count: message.seq - next,
                };
                codec::encode(&gap, &mut buffer);
            }
            let ttl = store.message_ttl(message.seq);
            codec::encode_stored(&message, ttl, &mut buffer);
            next = message.seq + 1;
            if buffer.len() >= codec::PIECE {
                flush(&mut buffer, out)?;
            }
        }
        if next <= committed {
            let tail = StreamEntry::Skip {
                seq: next,
                count: committed - next + 1,
            };
            codec::encode(&tail, &mut buffer);
        }
        flush(&mut buffer, out)?;
        drop(store);
        let Some(consumers) = &self.consumers else {
            return Ok(());
        };
        let consumers = consumers.snapshot();
        out.seek(io::SeekFrom::Start(1))?;
        out.write_all(&batch_length.to_le_bytes())?;
        out.seek(io::SeekFrom::Start(9 + batch_length))?;
        out.write_all(&consumers)
    }

    /// Replaces the stream's store with a fresh one holding what `snapshot` holds, read in
    /// pieces ([`codec::BatchReader`]) to its end.
    pub fn restore<R: io::Read + ?Sized>(&self, snapshot: &mut R) -> io::Result<()> {
        let mut first = [0u8; 1];
        snapshot.read_exact(&mut first)?;
        let mut consumer_states = Vec::new();
        let last = if first[0] == SNAPSHOT_WITH_CONSUMERS {
            let mut length = [0u8; 8];
            snapshot.read_exact(&mut length)?;
            let length = u64::from_le_bytes(length);
            let mut batch = <&mut R as io::Read>::take(&mut *snapshot, length);
            let last = self.restore_batch(&mut batch)?;
            if batch.limit() > 0 {
                return Err(invalid("truncated snapshot"));
            }
            snapshot.read_to_end(&mut consumer_states)?;
            last
        } else {
            self.restore_batch(&mut io::Read::chain(&first[..], snapshot))?
        };
        if let Some(consumers) = &self.consumers {
            consumers.restore(&consumer_states)?;
        }
        announce(&self.stream, last);
        Ok(())
    }

    /// Replaces the store with a fresh one and applies the batch read from `batch`; the
    /// stream's last sequence after it.
    fn restore_batch<R: io::Read>(&self, batch: R) -> io::Result<u64> {
        let (_, _, mut batch) = codec::BatchReader::new(batch)?;
        let mut store = self.stream.store.write();
        self.stream.followed.store(true, Ordering::SeqCst);
        self.replace_with_fresh_store(&mut store)?;
        self.stream.dedupe.lock().reset(true);
        let mut dedupe = DedupeFill::new(&self.stream);
        while let Some(entry) = batch.next_entry()? {
            apply(&mut **store, &entry).map_err(store_error)?;
            dedupe.applied(&entry);
        }
        dedupe.finish();
        store.flush().map_err(store_error)?;
        self.count_usage(&**store);
        let last = store.state().last_seq;
        let mut shared = self.shared.inner.lock();
        shared.local.clear();
        shared.committed_last_seq = last;
        shared.diverged = false;
        // A batch left uncommitted went with the old store.
        self.stream.store.replaced();
        Ok(last)
    }

    /// Empties the replica (a fresh store) before its group starts again and re-applies its
    /// snapshot and committed log.
    pub fn reset(&self) -> io::Result<()> {
        let mut store = self.stream.store.write();
        self.replace_with_fresh_store(&mut store)?;
        self.stream.dedupe.lock().reset(true);
        self.count_usage(&**store);
        let mut shared = self.shared.inner.lock();
        shared.local.clear();
        shared.committed_last_seq = 0;
        shared.diverged = false;
        self.stream.store.replaced();
        drop(shared);
        drop(store);
        if let Some(consumers) = &self.consumers {
            consumers.restore(&[])?;
        }
        Ok(())
    }

    /// The replica's bytes count in its account's usage on this server whether it leads or
    /// follows, as every replica's store reports its own to nats-server's account usage (a
    /// cluster's usage is then the sum over the servers: `engine/cluster_usage.rs`).
    fn count_usage(&self, store: &dyn nats_store::StreamStore) {
        let (storage, replicas) = {
            let config = self.stream.config.read();
            (config.storage, config.replicas)
        };
        self.stream
            .count_usage(storage, replicas, store.state().bytes as i64);
    }

    /// Deletes the store in `slot` (its files and its directory lock go with it) and opens an
    /// empty store of the same config in its place.
    fn replace_with_fresh_store(
        &self,
        slot: &mut Box<dyn nats_store::StreamStore>,
    ) -> io::Result<()> {
        let config = self.stream.config();
        let placeholder = Box::new(nats_store::MemStore::new(super::ingest_store_config(
            &config,
        )));
        let mut current = std::mem::replace(slot, placeholder);
        current.delete().map_err(store_error)?;
        drop(current);
        let fresh =
            storage::open_store(&self.store_root, &config, self.sync).map_err(store_error)?;
        // Its new files synced here, as the store did inline before `defer_creation_sync`.
        if let Some(creation) = fresh.pending_creation() {
            creation.run().map_err(store_error)?;
        }
        *slot = fresh;
        Ok(())
    }
}

/// Fills the stream's duplicate window from the entries a replica applies (another leader's
/// batch, a snapshot), as the leader's ingest task fills it from what it stores, so that this
/// replica's window is whole should it lead (nats-server's replicas track message ids too).
/// Taken under the store's write lock; the window's own lock once per entry.
struct DedupeFill<'a> {
    stream: &'a Stream,
    now: i64,
    window: i64,
}

impl<'a> DedupeFill<'a> {
    fn new(stream: &'a Stream) -> DedupeFill<'a> {
        let window = stream.config.read().duplicate_window.0;
        DedupeFill {
            stream,
            now: crate::time_format::now_nanos(),
            window,
        }
    }

    fn applied(&mut self, entry: &StreamEntry<'_>) {
        match entry {
            StreamEntry::Message {
                seq,
                timestamp,
                headers,
                ..
            } => self.stream.dedupe.lock().applied_message(
                *seq,
                *timestamp,
                headers,
                self.now,
                self.window,
            ),
            StreamEntry::Skip { .. } => self.stream.dedupe.lock().last_msg_id.clear(),
            _ => {}
        }
    }

    /// Forgets what the window no longer covers.
    fn finish(self) {
        self.stream
            .dedupe
            .lock()
            .window
            .expire(self.now, self.window);
    }
}

/// Keeps the stream's subject subscriptions exactly while this node leads (nats-server's
/// followers do not subscribe either): publishes reach the leader only, and while no replica
/// leads a publisher hears "no responders" at once. From its election on
/// ([`Replicator::elected`]), before its election's entry commits: the publishes that arrive
/// meanwhile wait in the ingest task's queue until it leads (nats-server subscribes once that
/// entry is applied; here the subscription's way over the routes, the publishers' next attempt
/// and their way to this server overlap the commit). Ends with the stream or the leadership
/// watch.
pub(crate) async fn subscribe_while_leading(
    stream: std::sync::Weak<Stream>,
    mut leadership: watch::Receiver<Option<u64>>,
    mut elected: watch::Receiver<bool>,
) {
    let mut elections = true;
    // What was last set: subscribing again while subscribed would replace the subscriptions
    // (an `RS-` and an `RS+` on every route), and a publish crossing a route meanwhile would
    // be lost unanswered; the election and then the leadership each say "subscribed".
    let mut subscribed = None;
    loop {
        let leads = leadership.borrow_and_update().is_some() || *elected.borrow_and_update();
        match stream.upgrade() {
            Some(stream) if !stream.stopped.load(std::sync::atomic::Ordering::Acquire) => {
                if subscribed != Some(leads) {
                    stream.set_takes_publishes(leads);
                    subscribed = Some(leads);
                }
            }
            _ => return,
        }
        let changed = tokio::select! {
            changed = leadership.changed() => changed.is_ok(),
            changed = elected.changed(), if elections => {
                // A replicator without elections (its sender gone): the leadership alone.
                elections = changed.is_ok();
                true
            }
        };
        if !changed {
            if let Some(stream) = stream.upgrade() {
                stream.set_takes_publishes(false);
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests;

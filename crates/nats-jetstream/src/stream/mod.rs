//! A stream: its configuration, its store and the task that owns ingest.
//!
//! Who calls it: the stream registry (create/update/delete, recovery), the `$JS.API` handlers
//! (info, purge, message get/delete) and, later, consumers.
//!
//! Concurrency (the design consumers plug into):
//! - The store lives behind `Arc<Mutex<..>>` ([`Stream::store`]). The ingest task holds the lock
//!   for one batch at a time (checks, `store_msg` per message, one `flush`), never across a wait.
//!   Readers (API gets, direct gets, consumers reading with `load_next`) take it briefly.
//!   Lock order: stream `config` before `store`; nothing else is held while taking `store`.
//! - Every mutation goes through the stream's command queue ([`StreamCommand`]) so it is ordered
//!   with the publishes before it: a purge never overtakes a message that was acked before it.
//! - New messages are announced on [`Stream::last_sequence`] (a `watch` channel carrying the last
//!   stored sequence, sent after the batch is durable): consumers wait on it and then read from
//!   the store.
//! - Interest: consumers register their filter subjects and an [`InterestHolder`] in
//!   [`Stream::interest`]; interest retention stores only messages some consumer wants. Acks
//!   come back as [`StreamCommand::Acked`] and the stream's task decides (work queue: remove;
//!   interest: remove once no holder needs the message, asked with no store lock held).

pub(crate) mod apply;
mod config;
mod config_cell;
mod counter;
mod dedupe;
mod headers;
mod ingest;
mod interest;
mod mirror;
pub(crate) mod replication;
mod source_header;
mod sources;
pub(crate) mod storage;
mod store;

pub(crate) use config::{check_and_fill, check_update, with_static_metadata};
pub(crate) use config_cell::{ConfigCell, ConfigForm};
pub(crate) use headers::set_header;
use ingest::announce;
pub(crate) use ingest::{store_config as ingest_store_config, IngestContext};
pub(crate) use interest::{Interest, InterestHolder};
pub(crate) use mirror::spawn as spawn_mirror;
pub(crate) use source_header::index_name as source_index_name;
pub(crate) use sources::{info as sources_info, sync as sync_sources};
pub(crate) use store::{ReadGuard, StoreHandle};

use crate::transport::{Message, Transport};
use jetstream_api::{ApiError, StreamConfig};
use nats_store::StreamStore;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{oneshot, watch};

/// How mirrors and sources find their origin among this server's streams, by name. The
/// registry implements it; the stream layer never sees the registry.
pub(crate) trait StreamLookup: Send + Sync {
    fn stream(&self, name: &str) -> Option<Arc<Stream>>;
}

/// Work for the stream's ingest task, executed in arrival order.
pub(crate) enum StreamCommand {
    Publish(Message),
    /// A message one of the stream's sources hands over (sent only by `sources.rs`, never by a
    /// client subscription): stored like a publish, minus the checks nats-server skips for
    /// sourced messages (the `Nats-Stream-Source` refusal, a `Nats-TTL` the stream does not allow).
    Sourced(Message),
    Purge {
        filter: String,
        up_to_seq: u64,
        keep: u64,
        reply: oneshot::Sender<Result<u64, ApiError>>,
    },
    DeleteMessage {
        seq: u64,
        erase: bool,
        reply: oneshot::Sender<Result<bool, ApiError>>,
    },
    /// A consumer acknowledged `seq` (or delivered it, without acks): on a work-queue stream
    /// the message goes; on an interest stream it goes once no registered consumer needs it.
    Acked {
        seq: u64,
    },
    /// A consumer went away or started over: messages only it held back may go now.
    InterestReleased,
    UpdateConfig {
        config: Box<StreamConfig>,
        reply: oneshot::Sender<Result<(), ApiError>>,
    },
    /// Messages of the origin, for a mirror: stored under their own sequences and times.
    Mirror(Vec<nats_store::StoredMessage>),
    /// Flush and close (or delete) the store and end the task.
    Stop {
        delete: bool,
        reply: oneshot::Sender<()>,
    },
}

/// Publishes queued for the ingest task, bounded as nats-server bounds a stream's inbound
/// queue (100,000 messages or 128 MiB); beyond that publishes are refused with 429.
#[derive(Default)]
pub(crate) struct Backlog {
    messages: AtomicUsize,
    bytes: AtomicUsize,
}

const MAX_QUEUED_MESSAGES: usize = 100_000;
const MAX_QUEUED_BYTES: usize = 128 * 1024 * 1024;

impl Backlog {
    fn admit(&self, size: usize) -> bool {
        if self.messages.load(Ordering::Relaxed) >= MAX_QUEUED_MESSAGES
            || self.bytes.load(Ordering::Relaxed) + size > MAX_QUEUED_BYTES
        {
            return false;
        }
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(size, Ordering::Relaxed);
        true
    }

    /// Publishes waiting for the ingest task.
    pub(crate) fn queued(&self) -> usize {
        self.messages.load(Ordering::Relaxed)
    }

    /// Called by the ingest task for every publish it takes off the queue.
    pub(crate) fn release(&self, size: usize) {
        self.messages.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(size, Ordering::Relaxed);
    }
}

/// nats-server's answer to a publish that does not fit the queue: a `429 Too Many Requests`
/// status with the error PubAck as body.
fn refuse_overload(transport: &dyn Transport, stream: &str, reply: Option<bytes::Bytes>) {
    let Some(reply) = reply.filter(|reply| !reply.is_empty()) else {
        return;
    };
    let body = jetstream_api::PubAck::error(
        stream,
        jetstream_api::errors::STREAM_TOO_MANY_REQUESTS.to_error(),
    );
    transport.publish(Message {
        subject: reply,
        reply: None,
        headers: Some(bytes::Bytes::from_static(
            b"NATS/1.0 429 Too Many Requests\r\n\r\n",
        )),
        payload: bytes::Bytes::from(jetstream_api::json::encode_response(&body)),
    });
}

pub(crate) struct Stream {
    pub name: String,
    /// The config, and its encodings for the `$JS.API` answers.
    pub config: ConfigCell,
    /// Creation time, unix nanoseconds.
    pub created: i64,
    pub store: StoreHandle,
    pub last_sequence: watch::Sender<u64>,
    /// A stream of more than one replica: [`Stream::last_sequence`] is then the last committed
    /// sequence, and the leader's store may hold a batch beyond it that is still being proposed
    /// (and that a failed proposal drops).
    replicated: bool,
    pub interest: Interest,
    pub backlog: Arc<Backlog>,
    /// Set when the stream stops; tasks that follow it (mirroring) end.
    pub stopped: std::sync::atomic::AtomicBool,
    /// A replica applied another leader's entries (or a snapshot) since its replicated
    /// consumers were last started here: they deliver nothing more (set under the store's
    /// write lock before the entries are written, so a consumer that loads them sees it; the
    /// stop that follows the lost leadership comes asynchronously). Cleared by
    /// `consumer::replicated::activate`.
    pub followed: std::sync::atomic::AtomicBool,
    /// The duplicate window and the last message id (`dedupe.rs`): the ingest task's while it
    /// decides, a replica's apply's while it follows.
    pub(crate) dedupe: Mutex<dedupe::Dedupe>,
    /// Mirrors: when the origin was last read (unix nanos), 0 before the first contact.
    pub mirror_contact: std::sync::atomic::AtomicI64,
    /// Mirrors: set while the origin does not exist (`error` in the mirror info).
    pub mirror_origin_missing: std::sync::atomic::AtomicBool,
    /// Sources: one entry per configured source with its position (`sources.rs`).
    pub sources: sources::Sources,
    /// Every entry applied to the store, in order (tests compare replicas with it).
    #[cfg(test)]
    pub applied: Mutex<Vec<apply::StreamEntry<'static>>>,
    commands: tokio::sync::mpsc::UnboundedSender<StreamCommand>,
    subscriptions: Mutex<Vec<u64>>,
    /// Whether this server takes the stream's publishes: always for R1, while it leads for a
    /// replicated stream (as nats-server, whose followers do not subscribe: a publish while no
    /// replica leads gets "no responders" at once).
    takes_publishes: std::sync::atomic::AtomicBool,
    transport: Arc<dyn Transport>,
    /// The account usage, and the bytes of this stream counted in it with the replica count
    /// whose tier they count in; None once a delete has taken them out (writes still queued
    /// then count no more).
    usage: Arc<crate::resources::Usage>,
    counted_bytes: Mutex<Option<(i64, i64)>>,
}

/// How long a publish forwarded by a peer server still reaches a replicated stream's ingest
/// task after its leader withdrew its subscriptions (`Stream::withdraw_subjects`): the time the
/// `RS-` and a publish sent meanwhile take to cross on the route, with a wide margin for a
/// loaded machine (they were 19-32 ms apart at load 14; a route 264 ms late was seen at 12).
const WITHDRAWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Stream {
    /// Start the ingest task over an opened store and subscribe the stream's subjects.
    pub(crate) fn start(
        config: StreamConfig,
        created: i64,
        store: Box<dyn StreamStore>,
        context: IngestContext,
    ) -> Result<Arc<Stream>, std::io::Error> {
        let (stream, receiver) = Stream::new(config, created, store, &context, false);
        ingest::spawn(stream.clone(), receiver, context, None)?;
        stream.subscribe_subjects();
        Ok(stream)
    }

    /// Start a replicated stream: an empty store (the group's snapshot and committed log fill
    /// it), an ingest task that decides only while `replicator` says this node leads, and the
    /// apply entry point for the group. Called by the registry for an assignment of more than
    /// one replica (`registry/replicated.rs`) and by the replication tests.
    pub(crate) fn start_replicated(
        config: StreamConfig,
        created: i64,
        store_root: &std::path::Path,
        sync: crate::SyncPolicy,
        context: IngestContext,
        replicator: Arc<dyn replication::Replicator>,
    ) -> Result<(Arc<Stream>, replication::ReplicaMachine), std::io::Error> {
        // A directory still locked by the replica's previous incarnation (its group's state
        // machine not yet dropped after a stop) is told apart: the caller waits for it.
        let store = storage::open_store(store_root, &config, sync).map_err(|error| {
            let kind = match error {
                nats_store::StoreError::Locked(_) => std::io::ErrorKind::WouldBlock,
                _ => std::io::ErrorKind::Other,
            };
            std::io::Error::new(kind, error.to_string())
        })?;
        // A new replica's files synced here, inline (no API answer waits on them).
        if let Some(creation) = store.pending_creation() {
            creation
                .run()
                .map_err(|error| std::io::Error::other(error.to_string()))?;
        }
        let (stream, receiver) = Stream::new(config, created, store, &context, true);
        let shared = Arc::new(replication::ReplicaShared::default());
        let machine = replication::ReplicaMachine::new(
            stream.clone(),
            shared.clone(),
            store_root.to_path_buf(),
            sync,
        );
        machine.reset()?;
        let replica = replication::Replica { replicator, shared };
        let leadership = replica.replicator.leadership();
        let replica_elected = replica.replicator.elected();
        ingest::spawn(stream.clone(), receiver, context, Some(replica))?;
        stream.takes_publishes.store(false, Ordering::Release);
        tokio::spawn(replication::subscribe_while_leading(
            Arc::downgrade(&stream),
            leadership,
            replica_elected,
        ));
        Ok((stream, machine))
    }

    fn new(
        config: StreamConfig,
        created: i64,
        store: Box<dyn StreamStore>,
        context: &IngestContext,
        replicated: bool,
    ) -> (
        Arc<Stream>,
        tokio::sync::mpsc::UnboundedReceiver<StreamCommand>,
    ) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let last = store.state().last_seq;
        let (last_sequence, _) = watch::channel(last);
        let config_replicas = config.replicas;
        let stream = Arc::new(Stream {
            name: config.name.clone(),
            config: ConfigCell::new(config),
            created,
            store: StoreHandle::new(store),
            last_sequence,
            replicated,
            interest: Interest::default(),
            backlog: Arc::default(),
            stopped: Default::default(),
            followed: Default::default(),
            dedupe: Mutex::default(),
            mirror_contact: Default::default(),
            mirror_origin_missing: Default::default(),
            sources: Default::default(),
            #[cfg(test)]
            applied: Mutex::default(),
            commands: sender,
            subscriptions: Mutex::new(Vec::new()),
            takes_publishes: std::sync::atomic::AtomicBool::new(true),
            transport: context.transport.clone(),
            usage: context.usage.clone(),
            counted_bytes: Mutex::new(Some((0, config_replicas))),
        });
        (stream, receiver)
    }

    pub(crate) fn config(&self) -> StreamConfig {
        self.config.read().clone()
    }

    /// The last sequence a reader of the stream (a consumer) may see: for a replicated stream
    /// the last committed one, as nats-server, whose leader stores a message only once it is
    /// committed; `None` for an R1 stream, whose store holds nothing a reader may not see.
    pub(crate) fn readable_last(&self) -> Option<u64> {
        self.replicated.then(|| *self.last_sequence.borrow())
    }

    /// Send a command to the ingest task; false when it has stopped.
    pub(crate) fn send(&self, command: StreamCommand) -> bool {
        self.commands.send(command).is_ok()
    }

    /// (Re)create the internal subscriptions for the configured subjects, while this server
    /// takes the stream's publishes and the stream runs (checked under the subscriptions' lock,
    /// which `stop` takes after marking the stream stopped).
    pub(crate) fn subscribe_subjects(&self) {
        let mut ids = self.subscriptions.lock();
        for id in ids.drain(..) {
            self.transport.unsubscribe(id);
        }
        self.subscribe_into(&mut ids);
    }

    /// The subscriptions again after the ingest task withdrew them before refusing publishes
    /// (`ingest/replicated.rs`, `withdraw_before_refusing`), if this server still takes the
    /// stream's publishes; nothing when they exist (the leadership watch made them anew).
    pub(crate) fn resubscribe(&self) {
        let mut ids = self.subscriptions.lock();
        if ids.is_empty() {
            self.subscribe_into(&mut ids);
        }
    }

    /// Subscribes the configured subjects into `ids` (the subscriptions' list, locked), while
    /// this server takes the stream's publishes and the stream runs.
    fn subscribe_into(&self, ids: &mut Vec<u64>) {
        if !self.takes_publishes.load(Ordering::Acquire) || self.stopped.load(Ordering::Acquire) {
            return;
        }
        let subjects = self.config.read().subjects.clone();
        for stream_subject in subjects {
            let sender = self.commands.clone();
            let backlog = self.backlog.clone();
            let transport = self.transport.clone();
            let name = self.name.clone();
            let id = self.transport.subscribe(
                &stream_subject,
                None,
                Arc::new(move |message: Message| {
                    let size = message.payload.len()
                        + message.headers.as_ref().map_or(0, |headers| headers.len());
                    if !backlog.admit(size) {
                        refuse_overload(&*transport, &name, message.reply);
                        return;
                    }
                    // A closed queue means the stream is going away; the publish is dropped.
                    let _ = sender.send(StreamCommand::Publish(message));
                }),
            );
            ids.push(id);
        }
    }

    /// Waits (up to `timeout`) until this server takes the stream's publishes: its subject
    /// subscriptions exist (a replicated stream's leader subscribes from another task once its
    /// leadership shows). True when they do, or when the stream has no subjects.
    pub(crate) async fn subscribed_within(&self, timeout: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.config.read().subjects.is_empty() || !self.subscriptions.lock().is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    pub(crate) fn unsubscribe_subjects(&self) {
        let mut ids = self.subscriptions.lock();
        for id in ids.drain(..) {
            self.transport.unsubscribe(id);
        }
    }

    /// A replicated stream's leader stops taking publishes: its subscriptions go, but a publish
    /// a peer server forwarded before it heard so still reaches the ingest task for
    /// [`WITHDRAWN_GRACE`] (which refuses it with 10009 as not the leader, so its client
    /// retries on the next one instead of waiting out its timeout; issue 20).
    pub(crate) fn withdraw_subjects(&self) {
        let mut ids = self.subscriptions.lock();
        for id in ids.drain(..) {
            self.transport.withdraw(id, WITHDRAWN_GRACE);
        }
    }

    /// Whether this server takes the stream's publishes (an R1 stream's only replica, a
    /// replicated stream's leader): where its consumers run.
    pub(crate) fn takes_publishes(&self) -> bool {
        self.takes_publishes.load(Ordering::Acquire)
    }

    /// A replicated stream's leadership came (`true`) or went here.
    pub(crate) fn set_takes_publishes(&self, takes: bool) {
        self.takes_publishes.store(takes, Ordering::Release);
        if takes {
            self.subscribe_subjects();
        } else {
            self.withdraw_subjects();
        }
    }

    /// A consumer acknowledged `seq`: retention decides, on the stream's task, whether it stays.
    pub(crate) fn acked(&self, seq: u64) {
        if self.config.read().retention != jetstream_api::RetentionPolicy::Limits {
            self.send(StreamCommand::Acked { seq });
        }
    }

    /// A consumer left (or reset): interest retention re-checks what it held back.
    pub(crate) fn release_interest(&self) {
        if self.config.read().retention == jetstream_api::RetentionPolicy::Interest {
            self.send(StreamCommand::InterestReleased);
        }
    }

    /// The ingest task's store now holds `bytes` with the stream at `replicas` replicas: the
    /// account usage follows (until a delete), in the tier of `replicas` (the bytes counted
    /// before move there when the count changed, as nats-server moves a stream's usage).
    pub(crate) fn count_usage(
        &self,
        storage: jetstream_api::StorageType,
        replicas: i64,
        bytes: i64,
    ) {
        if let Some((counted, tier)) = self.counted_bytes.lock().as_mut() {
            if *tier != replicas {
                self.usage.add(storage, *tier, -*counted);
                self.usage.add(storage, replicas, bytes);
            } else if bytes != *counted {
                self.usage.add(storage, replicas, bytes - *counted);
            }
            (*counted, *tier) = (bytes, replicas);
        }
    }

    /// Deleted: the stream's bytes leave the account usage (once).
    pub(crate) fn release_usage(&self) {
        if let Some((counted, replicas)) = self.counted_bytes.lock().take() {
            self.usage
                .add(self.config.read().storage, replicas, -counted);
        }
    }

    /// Stop ingest and close (or delete) the store. A stop waits for the task to finish its
    /// queue and close the store. A delete takes the stream's bytes out of the account usage
    /// at once and waits only when the store has files (the task moves them away before a
    /// re-create of the name may open new ones): a memory stream's task finishes on its own.
    pub(crate) async fn stop(&self, delete: bool) {
        self.stopped.store(true, Ordering::Relaxed);
        self.sources.stop_all();
        self.unsubscribe_subjects();
        if delete {
            self.release_usage();
        }
        let wait = {
            let config = self.config.read();
            !delete || config.storage != jetstream_api::StorageType::Memory || config.replicas > 1
        };
        let (reply, done) = oneshot::channel();
        if self.send(StreamCommand::Stop { delete, reply }) && wait {
            let _ = done.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_bounds_messages_and_bytes() {
        let backlog = Backlog::default();
        assert!(backlog.admit(MAX_QUEUED_BYTES - 10));
        assert!(!backlog.admit(11), "byte bound");
        assert!(backlog.admit(10));
        backlog.release(MAX_QUEUED_BYTES - 10);
        backlog.release(10);
        for _ in 0..MAX_QUEUED_MESSAGES {
            assert!(backlog.admit(0));
        }
        assert!(!backlog.admit(0), "message bound");
        backlog.release(0);
        assert!(backlog.admit(0));
    }
}

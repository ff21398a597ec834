//! Consumers: stateful readers of a stream (pull and push), their acks, redelivery, persisted
//! state and their part in interest / work-queue retention.
//!
//! Who calls it: the `$JS.API.CONSUMER.*` handlers (create, info, names, list, delete, pause), the
//! engine's stream hooks (recovery at start, stop before a stream stops), and core routing through
//! the internal subscriptions a consumer owns (`MSG.NEXT`, `$JS.ACK.<stream>.<consumer>.>`,
//! `$JS.FC.<stream>.<consumer>.>`), whose handlers only enqueue.
//!
//! Concurrency: each consumer is one tokio task ([`task`]) that owns the delivery logic (waiting
//! requests, redelivery timers, flow control) and is fed by one channel. The ack bookkeeping lives
//! in [`Consumer::state`] behind a mutex so INFO and interest retention (the stream asks every
//! consumer, through [`InterestHolder`], whether it still needs a message) can read it without
//! a round trip. Acks reach the stream as `Stream::acked`; the stream decides what goes.
//! Lock order: a consumer's `state` may be held while taking its stream's `store`, never the
//! other way round, and never two consumers' states at once.
//!
//! `CONSUMER.INFO` (the `Consumer::info*` methods and `num_pending`) is built in [`info`].
//!
//! What it must not know: sockets, the wire protocol, the sublist (it talks to routing only
//! through [`crate::Transport`]).

pub(crate) mod apply;
mod config;
mod events;
mod info;
mod pull;
pub(crate) mod replicated;
mod task;
#[cfg(test)]
mod tests;

pub(crate) use apply::{ConsumerApplied, ConsumerEntry, ConsumerReplica};
pub(crate) use config::{check_config, check_update};
pub(crate) use info::num_pending;
pub(crate) use task::ack_subject as own_ack_subject;

/// A pull request decoded and admitted as the consumer task does it (`crate::fuzzing`).
pub(crate) fn admit_for_fuzzing(config: &ConsumerConfig, body: &[u8]) -> Result<(), Vec<u8>> {
    let request = jetstream_api::NextRequest::parse(body);
    let reply = bytes::Bytes::from_static(b"_INBOX.fuzz");
    let now = tokio::time::Instant::now();
    match pull::admit(config, reply, request, pull::is_json_body(body), now) {
        pull::Admission::Queue(_) => Ok(()),
        pull::Admission::Refuse(status) => Err(status),
    }
}

use crate::stream::{InterestHolder, Stream};
use crate::transport::{Message, Transport};
use jetstream_api::{AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy, Timestamp};
use nats_store::{ConsumerState, ConsumerStore, MemConsumerStore};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

/// nats-server's hash of the account name in v2 ack subjects (`getHash("$G")`: the first 8 bytes
/// of SHA-256 of the name, each mapped to a base-62 digit). Every client is in the global
/// account here, so it is a constant.
const GLOBAL_ACCOUNT_HASH: &str = "szMpdrwD";

/// Ids for [`crate::stream::Interest`] registrations.
pub(crate) static NEXT_INTEREST_ID: AtomicU64 = AtomicU64::new(1);

/// What a consumer persists as its config blob.
#[derive(Serialize, Deserialize)]
struct PersistedConfig {
    config: ConsumerConfig,
    created: Timestamp,
}

/// Work for a consumer's task.
pub(crate) enum Event {
    Ack {
        subject: bytes::Bytes,
        reply: Option<bytes::Bytes>,
        payload: bytes::Bytes,
    },
    Next {
        reply: bytes::Bytes,
        payload: bytes::Bytes,
        /// False when a `Nats-Required-Api-Level` header asks for more than we offer.
        level_met: bool,
    },
    FlowControlReply {
        subject: bytes::Bytes,
    },
    /// The config in [`Consumer::config`] changed: the task takes it and saves it to its store,
    /// then tells `saved` what of its store's creation is left to fsync (an ephemeral just made
    /// durable: its new files) ([`Consumer::config_updated`]).
    ConfigUpdated {
        saved: oneshot::Sender<Option<Arc<nats_store::CreationSync>>>,
    },
    /// A subscription that could match the push deliver subject came or went.
    InterestChanged,
    /// `CONSUMER.INFO` answered by the task itself, after every event queued before it: acks
    /// a client published before its info request are reflected, as nats-server's inline ack
    /// processing guarantees, with no wait beyond the queue ahead of it.
    Info {
        done: oneshot::Sender<ConsumerInfo>,
    },
    /// `CONSUMER.UNPIN`: drop the pin (the API handler checked the group).
    Unpin {
        group: String,
        done: oneshot::Sender<()>,
    },
    /// `CONSUMER.RESET`: restart from `sequence` (0: the ack floor); answers the info after
    /// the reset and the sequence it restarts from.
    Reset {
        sequence: u64,
        done: oneshot::Sender<Result<(ConsumerInfo, u64), jetstream_api::ApiError>>,
    },
    Stop {
        delete: bool,
        done: oneshot::Sender<()>,
    },
    /// The stream's leadership went elsewhere (a replicated consumer): waiting pull requests
    /// hear `409 Leadership Change` and the task ends; the committed state stays.
    LeadershipLost {
        done: oneshot::Sender<()>,
    },
}

/// Shared bookkeeping of a consumer (see the module doc for who reads it).
pub(crate) struct Shared {
    /// delivered = last delivered (next - 1); ack floor; pending; redelivery counts.
    pub state: ConsumerState,
    /// Stream sequences whose pending or redelivered entry changed since the state was last
    /// handed to the store (duplicates allowed): the flush passes only these to
    /// [`ConsumerStore::update_state`], so its cost follows the acks and deliveries since the
    /// last flush, not the number pending. Whoever changes an entry pushes its sequence here.
    pub changed: Vec<u64>,
    pub num_waiting: u64,
    pub push_bound: bool,
    pub last_delivered_active: Option<i64>,
    pub last_ack_active: Option<i64>,
    /// `pinned_client` consumers: the pin id and when it was handed out (unix nanos).
    pub pinned: Option<(String, i64)>,
    /// A replicated consumer's entries applied since its last flush, for its next proposal
    /// (`None`: not replicated).
    pub log: Option<Vec<ConsumerEntry>>,
    /// Every entry applied, in order (tests compare replicas with it).
    #[cfg(test)]
    pub applied: Vec<ConsumerEntry>,
}

pub(crate) struct Consumer {
    pub name: String,
    pub stream_name: String,
    /// The server's JetStream domain (None when not configured): the v2 ack subjects and the
    /// advisories name it.
    pub domain: Option<String>,
    pub created: i64,
    pub config: RwLock<ConsumerConfig>,
    pub state: Mutex<Shared>,
    /// A new file consumer's creation sync, pending until its files are durable: CONSUMER.CREATE
    /// answers (this one's, or an identical one's racing it) wait for it.
    pub creation: Option<Arc<nats_store::CreationSync>>,
    /// The handle that removes the files of the store the task holds, when it has files:
    /// [`stop_consumer`] removes them itself on a delete instead of waiting for the task. Set
    /// at start and by the task when it changes stores (an ephemeral made durable).
    pub(crate) removal: Mutex<Option<Arc<nats_store::ConsumerRemoval>>>,
    /// A durable consumer of a replicated stream: where its entries are proposed
    /// (`replicated.rs`).
    pub replication: Option<replicated::Proposals>,
    events: events::EventSender,
    interest_id: u64,
    /// The internal subscriptions (acks, pull requests, flow control), dropped by
    /// [`stop_consumer`] itself so a request sent after its answer finds no responder.
    subscriptions: Mutex<Vec<u64>>,
    transport: Arc<dyn Transport>,
    /// An ephemeral named by this server (created without a name): its config keeps the name
    /// for the server's own use, but answers leave `config.name` out, as nats-server's do.
    name_generated: AtomicBool,
}

/// `CONSUMER.INFO` of a consumer: `info.rs` (`info`, `info_in_order`, `committed_info`).
impl Consumer {
    pub(crate) fn send(&self, event: Event) -> bool {
        self.events.send(event)
    }

    /// Tell the task its config changed (written to [`Consumer::config`] already): the returned
    /// future resolves once the task saved it to its store (or is gone), to what of the store's
    /// creation is left to fsync. An update is answered after that, as nats-server writes the
    /// config before it answers: a kill -9 right after the answer keeps it.
    pub(crate) fn config_updated(
        &self,
    ) -> impl std::future::Future<Output = Option<Arc<nats_store::CreationSync>>> {
        let (saved, persisted) = oneshot::channel();
        self.send(Event::ConfigUpdated { saved });
        async move { persisted.await.ok().flatten() }
    }

    pub(crate) fn config(&self) -> ConsumerConfig {
        self.config.read().clone()
    }

    /// Marks an ephemeral whose name this server generated (see `name_generated`).
    pub(crate) fn set_name_generated(&self, generated: bool) {
        self.name_generated.store(generated, Ordering::Relaxed);
    }

    pub(crate) fn name_generated(&self) -> bool {
        self.name_generated.load(Ordering::Relaxed)
    }
}

impl InterestHolder for Consumer {
    /// Whether this consumer still needs stream message `seq` on `subject` (interest retention).
    fn needs(&self, seq: u64, subject: &str) -> bool {
        if !takes_subject(&self.config.read(), subject) {
            return false;
        }
        still_needs(&self.state.lock().state, seq)
    }
}

/// Whether a consumer of `config` takes messages stored on `subject`.
pub(crate) fn takes_subject(config: &ConsumerConfig, subject: &str) -> bool {
    let filters = config.filters();
    filters.is_empty()
        || filters
            .iter()
            .any(|filter| crate::subject::matches(filter, subject))
}

/// Whether a consumer in `state` still needs stream message `seq` (not acknowledged yet).
pub(crate) fn still_needs(state: &ConsumerState, seq: u64) -> bool {
    if seq <= state.ack_floor.stream_seq {
        return false;
    }
    if seq <= state.delivered.stream_seq {
        return state.pending.contains_key(&seq);
    }
    true
}

impl Shared {
    /// Apply one entry to this consumer's state (the only way it changes; `apply.rs`).
    pub(crate) fn apply(&mut self, entry: &ConsumerEntry) -> ConsumerApplied {
        #[cfg(test)]
        self.applied.push(entry.clone());
        if let Some(log) = &mut self.log {
            log.push(entry.clone());
        }
        apply::apply(
            ConsumerReplica {
                state: &mut self.state,
                changed: &mut self.changed,
            },
            entry,
        )
    }

    /// Messages below the stream's first sequence are gone (purge, limits): the consumer moves
    /// past them as nats-server's consumer purge does. True when something changed.
    pub(crate) fn skip_removed(&mut self, first_seq: u64) -> bool {
        let floor = first_seq.saturating_sub(1);
        if floor == 0 || self.state.ack_floor.stream_seq >= floor {
            return false;
        }
        self.apply(&ConsumerEntry::FirstMoved { first_seq }) == ConsumerApplied::Moved(true)
    }
}

/// The consumers of one stream, by name.
#[derive(Default)]
pub(crate) struct Consumers {
    map: RwLock<BTreeMap<String, Arc<Consumer>>>,
    /// The committed states of a replicated stream's durable consumers (set once, before any
    /// consumer starts, for a stream of more than one replica).
    replicated: std::sync::OnceLock<Arc<replicated::ReplicatedConsumers>>,
}

impl Consumers {
    /// The consumer set of a replicated stream.
    pub(crate) fn replicated_by(replicas: Arc<replicated::ReplicatedConsumers>) -> Consumers {
        let consumers = Consumers::default();
        let _ = consumers.replicated.set(replicas);
        consumers
    }

    /// A replicated stream's committed consumers (`None` for an R1 stream).
    pub(crate) fn replicated(&self) -> Option<&Arc<replicated::ReplicatedConsumers>> {
        self.replicated.get()
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Consumer>> {
        self.map.read().get(name).cloned()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Consumer>> {
        self.map.read().values().cloned().collect()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.map.read().keys().cloned().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().len()
    }

    fn remove(&self, name: &str) -> Option<Arc<Consumer>> {
        self.map.write().remove(name)
    }
}

/// A random 8-character name for an ephemeral consumer (nats-server hashes a NUID to 8 chars).
pub(crate) fn ephemeral_name() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let id = crate::nuid::next_id();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let mut name = String::with_capacity(8);
    for _ in 0..8 {
        name.push(ALPHABET[(hash % ALPHABET.len() as u64) as usize] as char);
        hash /= ALPHABET.len() as u64;
        hash ^= hash.rotate_left(17).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    name
}

/// Where the consumer starts: the first stream sequence it considers.
pub(crate) fn starting_sequence(stream: &Stream, config: &ConsumerConfig) -> u64 {
    let readable_last = stream.readable_last();
    let mut store = stream.store.read();
    let state = store.state();
    // A replicated stream's "new" starts after its last committed message (one still being
    // proposed is new to it).
    let last_seq = readable_last.map_or(state.last_seq, |last| last.min(state.last_seq));
    let first = state.first_seq.max(1);
    let filters: Vec<String> = config.filters().iter().map(|f| f.to_string()).collect();
    match config.deliver_policy {
        DeliverPolicy::All | DeliverPolicy::LastPerSubject => first,
        DeliverPolicy::New => last_seq + 1,
        DeliverPolicy::Last => {
            let last = if filters.is_empty() {
                store.load_last(">").ok().flatten()
            } else {
                filters
                    .iter()
                    .filter_map(|filter| store.load_last(filter).ok().flatten())
                    .max_by_key(|message| message.seq)
            };
            match last {
                Some(message) => message.seq,
                None => last_seq + 1,
            }
        }
        DeliverPolicy::ByStartSequence => config.opt_start_seq.max(first),
        DeliverPolicy::ByStartTime => {
            let time = config
                .opt_start_time
                .as_ref()
                .map(|time| time.unix_nanos())
                .unwrap_or(0);
            store.seq_for_time(time)
        }
    }
}

/// Where a consumer lives: its stream, the stream's consumer set, routing, the domain.
pub(crate) struct Home<'a> {
    pub stream: &'a Arc<Stream>,
    pub consumers: &'a Arc<Consumers>,
    pub transport: &'a Arc<dyn Transport>,
    pub domain: Option<&'a str>,
}

/// Start a consumer's task and subscriptions and add it to its stream's set.
pub(crate) fn start(
    home: &Home<'_>,
    config: ConsumerConfig,
    created: i64,
    mut store: Box<dyn ConsumerStore>,
    recovered: bool,
) -> Arc<Consumer> {
    let Home {
        stream,
        consumers,
        transport,
        domain,
    } = *home;
    let name = if config.name.is_empty() {
        config.durable_name.clone()
    } else {
        config.name.clone()
    };
    let mut state = store.state();
    #[cfg(test)]
    let mut applied = Vec::new();
    if !recovered {
        let start = starting_sequence(stream, &config);
        state = ConsumerState::default();
        let entry = ConsumerEntry::Reset {
            stream_seq: start.saturating_sub(1),
        };
        apply::apply(
            ConsumerReplica {
                state: &mut state,
                changed: &mut Vec::new(),
            },
            &entry,
        );
        #[cfg(test)]
        applied.push(entry);
        // A start past the beginning must survive a crash before the first periodic flush,
        // or a restarted `deliver_policy: new` consumer would replay the stream.
        if start > 1 {
            let written = store.set_state(state.clone()).and_then(|_| store.flush());
            if let Err(error) = written {
                tracing::error!(consumer = %name, %error, "writing initial consumer state failed");
            }
        }
    }
    let (sender, receiver) = events::EventSender::channel();
    // Durable consumers of a replicated stream propose what they apply; ephemerals stay R1
    // on the stream's leader, as on nats-server.
    let replication = consumers
        .replicated()
        .filter(|_| !config.durable_name.is_empty())
        .map(|replicas| {
            replicated::Proposals::spawn(replicas.clone(), name.clone(), transport.clone())
        });
    let consumer = Arc::new(Consumer {
        name: name.clone(),
        stream_name: stream.name.clone(),
        domain: domain
            .filter(|domain| !domain.is_empty())
            .map(str::to_string),
        created,
        config: RwLock::new(config.clone()),
        state: Mutex::new(Shared {
            state,
            changed: Vec::new(),
            num_waiting: 0,
            push_bound: false,
            last_delivered_active: None,
            last_ack_active: None,
            pinned: None,
            log: replication.as_ref().map(|_| Vec::new()),
            #[cfg(test)]
            applied,
        }),
        creation: store.pending_creation(),
        removal: Mutex::new(store.removal()),
        replication,
        events: sender,
        interest_id: NEXT_INTEREST_ID.fetch_add(1, Ordering::Relaxed),
        subscriptions: Mutex::new(Vec::new()),
        transport: transport.clone(),
        name_generated: AtomicBool::new(false),
    });
    stream.interest.add(
        consumer.interest_id,
        config.filters().iter().map(|f| f.to_string()).collect(),
        consumer.clone(),
    );
    consumers.map.write().insert(name.clone(), consumer.clone());
    *consumer.subscriptions.lock() = subscribe(&consumer, transport);
    task::spawn(
        consumer.clone(),
        stream.clone(),
        Arc::downgrade(consumers),
        transport.clone(),
        store,
        receiver,
    );
    consumer
}

/// The internal subscriptions, as nats-server makes them: acks in both forms only when the
/// consumer takes acks (v1 `$JS.ACK.<stream>.<consumer>` plus exactly five tokens; v2
/// `$JS.ACK.<domain|_>.<account hash>.<stream>.<consumer>` plus five or more, which clients
/// may ack on although we send v1), pull requests, and flow-control replies only with flow
/// control. Neither the ack policy nor flow control can change on update.
fn subscribe(consumer: &Arc<Consumer>, transport: &Arc<dyn Transport>) -> Vec<u64> {
    let stream = &consumer.stream_name;
    let name = &consumer.name;
    let config = consumer.config();
    let mut ids = Vec::with_capacity(4);
    if config.ack_policy != AckPolicy::None {
        let domain = consumer
            .domain
            .as_deref()
            .unwrap_or(jetstream_api::ack::NO_DOMAIN_TOKEN);
        for subject in [
            format!("$JS.ACK.{stream}.{name}.*.*.*.*.*"),
            format!("$JS.ACK.{domain}.{GLOBAL_ACCOUNT_HASH}.{stream}.{name}.*.*.*.*.>"),
        ] {
            let sender = consumer.events.clone();
            ids.push(transport.subscribe(
                &subject,
                None,
                Arc::new(move |message: Message| {
                    let _ = sender.send(Event::Ack {
                        subject: message.subject,
                        reply: message.reply,
                        payload: message.payload,
                    });
                }),
            ));
        }
    }
    let sender = consumer.events.clone();
    ids.push(transport.subscribe(
        &format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}"),
        None,
        Arc::new(move |message: Message| {
            if let Some(reply) = message.reply.filter(|reply| !reply.is_empty()) {
                let _ = sender.send(Event::Next {
                    reply,
                    payload: message.payload,
                    level_met: crate::level::required_level_met(message.headers.as_deref()),
                });
            }
        }),
    ));
    if config.flow_control {
        let sender = consumer.events.clone();
        ids.push(transport.subscribe(
            &format!("$JS.FC.{stream}.{name}.*"),
            None,
            Arc::new(move |message: Message| {
                let _ = sender.send(Event::FlowControlReply {
                    subject: message.subject,
                });
            }),
        ));
    }
    ids
}

/// Whether a consumer's state lives in files: durables on file streams, unless `mem_storage`
/// (an ephemeral made durable moves to files then).
fn keeps_files(stream: &Stream, config: &ConsumerConfig) -> bool {
    !config.durable_name.is_empty()
        && stream.config.read().storage == jetstream_api::StorageType::File
        && !config.memory_storage
}

/// Open the store a new consumer persists to: file-backed for durables on file streams (unless
/// `mem_storage`), memory otherwise.
pub(crate) fn open_store(
    stream: &Stream,
    config: &ConsumerConfig,
    name: &str,
    created: i64,
) -> Result<Box<dyn ConsumerStore>, nats_store::StoreError> {
    let mut store: Box<dyn ConsumerStore> = if keeps_files(stream, config) {
        stream.store.read().consumer_store(name)?
    } else {
        Box::new(MemConsumerStore::new())
    };
    save_config(&mut *store, config, created)?;
    Ok(store)
}

fn save_config(
    store: &mut dyn ConsumerStore,
    config: &ConsumerConfig,
    created: i64,
) -> Result<(), nats_store::StoreError> {
    let blob = serde_json::to_vec(&PersistedConfig {
        config: config.clone(),
        created: Timestamp::from_unix_nanos(created),
    })
    .unwrap_or_default();
    store.set_config(&blob)
}

/// Re-open every consumer persisted with a stream (server start).
pub(crate) fn recover_in_domain(
    stream: &Arc<Stream>,
    consumers: &Arc<Consumers>,
    transport: &Arc<dyn Transport>,
    domain: Option<&str>,
) {
    let names = match stream.store.read().consumer_names() {
        Ok(names) => names,
        Err(error) => {
            tracing::warn!(stream = %stream.name, %error, "listing consumers failed");
            return;
        }
    };
    for name in names {
        let store = match stream.store.read().consumer_store(&name) {
            Ok(store) => store,
            Err(error) => {
                tracing::warn!(stream = %stream.name, consumer = %name, %error, "consumer store unreadable");
                continue;
            }
        };
        let persisted: PersistedConfig = match serde_json::from_slice(&store.config()) {
            Ok(persisted) => persisted,
            Err(error) => {
                tracing::warn!(stream = %stream.name, consumer = %name, %error, "consumer config unreadable");
                continue;
            }
        };
        let home = Home {
            stream,
            consumers,
            transport,
            domain,
        };
        start(
            &home,
            persisted.config,
            persisted.created.unix_nanos(),
            store,
            true,
        );
    }
}

/// After a config update: the stream's interest follows the new filters.
pub(crate) fn refresh_interest(stream: &Stream, consumer: &Arc<Consumer>) {
    stream.interest.remove(consumer.interest_id);
    let filters = consumer
        .config
        .read()
        .filters()
        .iter()
        .map(|filter| filter.to_string())
        .collect();
    stream
        .interest
        .add(consumer.interest_id, filters, consumer.clone());
}

/// Stop (and with `delete`, remove) one consumer. It leaves the stream's set, its interest and
/// its subscriptions at once. A stop waits for the task to write its state; a delete waits
/// only for a replicated consumer, or when the store keeps files it could not remove here (the
/// task moves them away before a re-create of the name may open new ones); otherwise the task
/// finishes on its own (answers its waiting pull requests, drops its state) while the caller
/// goes on. A file store's directory is renamed away here, through its removal handle
/// (`nats_store::ConsumerRemoval`: the task's store writes nothing after it), so a delete
/// costs no round trip to the task.
pub(crate) async fn stop_consumer(
    stream: &Stream,
    consumers: &Consumers,
    name: &str,
    delete: bool,
) -> bool {
    let Some(consumer) = consumers.remove(name) else {
        return false;
    };
    stream.interest.remove(consumer.interest_id);
    for id in std::mem::take(&mut *consumer.subscriptions.lock()) {
        consumer.transport.unsubscribe(id);
    }
    let (done, finished) = oneshot::channel();
    let removed_here = delete && consumer.replication.is_none() && remove_files(&consumer);
    let wait = !delete
        || consumer.replication.is_some()
        || (!removed_here && keeps_files(stream, &consumer.config.read()));
    if consumer.send(Event::Stop { delete, done }) && wait {
        let _ = finished.await;
    }
    if delete {
        stream.release_interest();
    }
    true
}

/// Remove a deleted consumer's files through its store's removal handle: false when it has
/// none (no files, or the task has not yet opened the store it is moving to) or the removal
/// failed, and the task is left to do it.
fn remove_files(consumer: &Consumer) -> bool {
    let Some(removal) = consumer.removal.lock().clone() else {
        return false;
    };
    match removal.remove() {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(consumer = %consumer.name, %error, "deleting consumer state failed");
            false
        }
    }
}

/// Stop a replicated consumer on a server that no longer leads its stream (see
/// [`Event::LeadershipLost`]).
pub(crate) async fn leadership_lost(stream: &Stream, consumers: &Consumers, name: &str) {
    let Some(consumer) = consumers.remove(name) else {
        return;
    };
    stream.interest.remove(consumer.interest_id);
    let (done, finished) = oneshot::channel();
    if consumer.send(Event::LeadershipLost { done }) {
        let _ = finished.await;
    }
}

/// Stop every consumer of a stream (the stream is stopping or being deleted).
pub(crate) async fn stop_all(stream: &Stream, consumers: &Consumers, delete: bool) {
    for name in consumers.names() {
        stop_consumer(stream, consumers, &name, delete).await;
    }
}

/// Answers acks with a reply (AckSync, double ack) once what they changed is durable: an
/// empty message to each reply subject.
pub(crate) fn confirm(transport: &dyn Transport, replies: Vec<bytes::Bytes>) {
    // One flush for the run (a client's replies written by this task, see publish_all).
    transport.publish_all(&mut replies.into_iter().map(|reply| Message {
        subject: reply,
        reply: None,
        headers: None,
        payload: bytes::Bytes::new(),
    }));
}

/// Whether ack bookkeeping applies (ack none consumers count a message acked when delivered).
pub(crate) fn needs_ack(config: &ConsumerConfig) -> bool {
    config.ack_policy != AckPolicy::None
}

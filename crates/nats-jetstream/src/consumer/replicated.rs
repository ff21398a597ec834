//! Durable consumers of a replicated stream, replicated through the stream's own group (no
//! group per consumer, unlike nats-server; the consumer's leader is always the stream's).
//!
//! - Records ([`Record`]): a consumer's creation (config, creation time, starting sequence),
//!   the [`ConsumerEntry`]s its task applied since the last flush, its deletion. They are
//!   proposals of their own in the stream's log (`stream::replication::CONSUMER_BATCH`, then
//!   the binary form of [`codec`]), made
//!   by the API (create, delete) and by each consumer's [`Proposals`] task (entries, at the
//!   consumer's 100 ms flush or before an AckSync is answered).
//! - Every replica, the leader included, applies committed records to [`ReplicatedConsumers`]:
//!   the committed state of every durable consumer (`consumer::apply`, as the task applies
//!   them), carried by the stream group's snapshots. Followers run no consumer task.
//! - The leader runs the consumers' tasks from that state (`activate`, when it takes the
//!   stream's leadership) and stops them when it loses it (`follow_leadership_change`, before
//!   it takes the registry's admin lock: waiting pull requests get `409 Leadership Change`). Where a consumer does not run, its committed state
//!   holds the stream's interest for it ([`Dormant`]), so a new leader's first publishes on an
//!   interest stream are kept for consumers it has not started yet. An ack with a reply is answered only once the
//!   proposal holding it committed: a confirmed ack is never forgotten by the next leader.
//!
//! Who calls it: the registry (`registry/replicated.rs`: installs it on the stream's
//! `ReplicaMachine`, follows the stream's leadership), the API (create, delete), the consumer
//! task (`write_state`). What it must not know: Raft, routes.

mod codec;

use super::apply::{self, ConsumerEntry, ConsumerReplica};
use super::{Consumer, Consumers, Home};
use crate::stream::replication::{
    ConsumerReplicas, Lease, ReplicationError, Replicator, CONSUMER_BATCH,
};
use crate::stream::{InterestHolder, Stream};
use crate::transport::Transport;
use bytes::Bytes;
use jetstream_api::{errors, ApiError, ConsumerConfig};
use nats_store::{ConsumerState, ConsumerStore, MemConsumerStore, PendingDelivery, SequencePair};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// One change of the stream's replicated consumers, as the log carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Record {
    /// A new durable consumer: everything before `start_seq` counts as delivered and acked.
    /// Of an incarnation (`created`) already there: its new config, the state kept.
    Create {
        name: String,
        config: Box<ConsumerConfig>,
        created: i64,
        start_seq: u64,
    },
    /// Entries the consumer's task applied, in order.
    Entries {
        name: String,
        entries: Vec<ConsumerEntry>,
    },
    /// The consumer was deleted.
    Delete { name: String },
    /// A consumer brought in whole with its state (a stream scaled up from one replica).
    Import(Box<SnapshotConsumer>),
}

/// A consumer's committed config and state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Committed {
    pub config: ConsumerConfig,
    pub created: i64,
    pub state: ConsumerState,
}

/// A consumer in a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SnapshotConsumer {
    name: String,
    config: ConsumerConfig,
    created: i64,
    /// (consumer, stream) sequences.
    delivered: (u64, u64),
    ack_floor: (u64, u64),
    /// (stream sequence, consumer sequence, delivery time)
    pending: Vec<(u64, u64, i64)>,
    /// (stream sequence, redeliveries)
    redelivered: Vec<(u64, u64)>,
}

impl SnapshotConsumer {
    pub(crate) fn of(
        name: &str,
        config: &ConsumerConfig,
        created: i64,
        state: &ConsumerState,
    ) -> SnapshotConsumer {
        SnapshotConsumer {
            name: name.to_string(),
            config: config.clone(),
            created,
            delivered: (state.delivered.consumer_seq, state.delivered.stream_seq),
            ack_floor: (state.ack_floor.consumer_seq, state.ack_floor.stream_seq),
            pending: state
                .pending
                .iter()
                .map(|(seq, pending)| (*seq, pending.consumer_seq, pending.timestamp))
                .collect(),
            redelivered: state
                .redelivered
                .iter()
                .map(|(seq, count)| (*seq, *count))
                .collect(),
        }
    }

    fn committed(self) -> (String, Committed) {
        let pair = |(consumer_seq, stream_seq)| SequencePair {
            consumer_seq,
            stream_seq,
        };
        let state = ConsumerState {
            delivered: pair(self.delivered),
            ack_floor: pair(self.ack_floor),
            pending: self
                .pending
                .into_iter()
                .map(|(seq, consumer_seq, timestamp)| {
                    (
                        seq,
                        PendingDelivery {
                            consumer_seq,
                            timestamp,
                        },
                    )
                })
                .collect(),
            redelivered: self.redelivered.into_iter().collect(),
        };
        let committed = Committed {
            config: self.config,
            created: self.created,
            state,
        };
        (self.name, committed)
    }
}

/// The proposal that brings `consumers` into a stream's log with their states, in the form
/// `replicator`'s group reads.
pub(crate) fn import_batch(
    consumers: Vec<SnapshotConsumer>,
    replicator: &dyn Replicator,
) -> Result<Bytes, ReplicationError> {
    let records: Vec<Record> = consumers
        .into_iter()
        .map(|consumer| Record::Import(Box::new(consumer)))
        .collect();
    encode_records(&records, replicator)
}

/// A proposal of consumer records, as the stream's log carries it: the binary form when every
/// member of `replicator`'s group reads it, the JSON array otherwise (`codec.rs`).
fn encode_records(
    records: &[Record],
    replicator: &dyn Replicator,
) -> Result<Bytes, ReplicationError> {
    let mut batch = vec![CONSUMER_BATCH];
    let encoded = if replicator.binary_consumer_records() {
        codec::encode(records, &mut batch)
    } else {
        codec::encode_json(records, &mut batch)
    };
    encoded.map_err(|error| ReplicationError::Failed(error.to_string()))?;
    Ok(Bytes::from(batch))
}

fn invalid(error: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.to_string())
}

/// The committed states of a replicated stream's durable consumers, and the way to propose.
pub(crate) struct ReplicatedConsumers {
    committed: Mutex<BTreeMap<String, Committed>>,
    replicator: Arc<dyn Replicator>,
    /// The stream whose interest the consumers not running here hold.
    stream: Weak<Stream>,
    /// The interest registrations of the committed consumers not running here, by name.
    dormant: Mutex<HashMap<String, u64>>,
    /// The consumers whose task runs here (this server leads the stream).
    running: Mutex<HashSet<String>>,
    this: Weak<ReplicatedConsumers>,
}

/// A committed consumer not running here, as the stream's interest retention sees it: it
/// needs what its committed state has not acknowledged.
struct Dormant {
    replicas: Weak<ReplicatedConsumers>,
    name: String,
}

impl InterestHolder for Dormant {
    fn needs(&self, seq: u64, subject: &str) -> bool {
        let Some(replicas) = self.replicas.upgrade() else {
            return false;
        };
        let committed = replicas.committed.lock();
        committed.get(&self.name).is_some_and(|consumer| {
            super::takes_subject(&consumer.config, subject)
                && super::still_needs(&consumer.state, seq)
        })
    }
}

impl ReplicatedConsumers {
    pub(crate) fn new(
        replicator: Arc<dyn Replicator>,
        stream: Weak<Stream>,
    ) -> Arc<ReplicatedConsumers> {
        Arc::new_cyclic(|this| ReplicatedConsumers {
            committed: Mutex::new(BTreeMap::new()),
            replicator,
            stream,
            dormant: Mutex::new(HashMap::new()),
            running: Mutex::new(HashSet::new()),
            this: this.clone(),
        })
    }

    /// Consumer `name` runs here now: its own registration holds the stream's interest.
    fn started(&self, name: &str) {
        self.running.lock().insert(name.to_string());
        self.release_interest(name);
    }

    /// Consumer `name` stopped running here; while it is committed, its committed state holds
    /// the stream's interest for it.
    fn stopped(&self, name: &str) {
        self.running.lock().remove(name);
        self.hold_interest(name);
    }

    /// Consumer `name` does not run here (any more): its committed state holds the stream's
    /// interest for it. Idempotent; nothing for a consumer no longer committed.
    fn hold_interest(&self, name: &str) {
        let Some(stream) = self.stream.upgrade() else {
            return;
        };
        let Some(filters) = self.committed.lock().get(name).map(|consumer| {
            consumer
                .config
                .filters()
                .iter()
                .map(|filter| filter.to_string())
                .collect()
        }) else {
            return;
        };
        let mut dormant = self.dormant.lock();
        if dormant.contains_key(name) {
            return;
        }
        let id = super::NEXT_INTEREST_ID.fetch_add(1, Ordering::Relaxed);
        let holder = Arc::new(Dormant {
            replicas: self.this.clone(),
            name: name.to_string(),
        });
        stream.interest.add(id, filters, holder);
        dormant.insert(name.to_string(), id);
    }

    /// Consumer `name` runs here (its own registration holds the interest) or is gone.
    fn release_interest(&self, name: &str) {
        let Some(id) = self.dormant.lock().remove(name) else {
            return;
        };
        if let Some(stream) = self.stream.upgrade() {
            stream.interest.remove(id);
        }
    }

    /// Proposes `records`; resolves once they are committed (and applied here).
    pub(crate) async fn propose(&self, records: &[Record]) -> Result<(), ReplicationError> {
        self.replicator
            .propose(encode_records(records, &*self.replicator)?)
            .await
    }

    /// Every committed consumer, by name.
    pub(crate) fn committed(&self) -> BTreeMap<String, Committed> {
        self.committed.lock().clone()
    }

    /// The names of the committed consumers.
    pub(crate) fn names(&self) -> Vec<String> {
        self.committed.lock().keys().cloned().collect()
    }

    /// Whether `name` is a committed consumer.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.committed.lock().contains_key(name)
    }

    fn apply_record(committed: &mut BTreeMap<String, Committed>, record: Record) {
        match record {
            Record::Create {
                name,
                config,
                created,
                start_seq,
            } => {
                if let Some(existing) = committed.get_mut(&name) {
                    if existing.created == created {
                        existing.config = *config;
                        return;
                    }
                }
                let mut state = ConsumerState::default();
                apply::apply(
                    ConsumerReplica {
                        state: &mut state,
                        changed: &mut Vec::new(),
                    },
                    &ConsumerEntry::Reset {
                        stream_seq: start_seq.saturating_sub(1),
                    },
                );
                committed.insert(
                    name,
                    Committed {
                        config: *config,
                        created,
                        state,
                    },
                );
            }
            Record::Entries { name, entries } => {
                // Entries of a consumer deleted meanwhile are dropped.
                let Some(consumer) = committed.get_mut(&name) else {
                    return;
                };
                let mut changed = Vec::new();
                for entry in &entries {
                    if let ConsumerEntry::Config { config, .. } = entry {
                        consumer.config = (**config).clone();
                    }
                    apply::apply(
                        ConsumerReplica {
                            state: &mut consumer.state,
                            changed: &mut changed,
                        },
                        entry,
                    );
                    changed.clear();
                }
            }
            Record::Delete { name } => {
                committed.remove(&name);
            }
            Record::Import(consumer) => {
                let (name, consumer) = consumer.committed();
                committed.insert(name, consumer);
            }
        }
    }
}

impl ConsumerReplicas for ReplicatedConsumers {
    fn apply(&self, records: &[u8]) -> io::Result<()> {
        let records = codec::decode(records).map_err(invalid)?;
        // (name, whether a new consumer): registrations to change once the state is applied.
        let mut created = Vec::new();
        let mut deleted = Vec::new();
        {
            let mut committed = self.committed.lock();
            for record in records {
                match &record {
                    Record::Create {
                        name, created: at, ..
                    } => {
                        let new = committed.get(name).is_none_or(|known| known.created != *at);
                        created.push((name.clone(), new));
                    }
                    Record::Delete { name } => deleted.push(name.clone()),
                    Record::Import(consumer) => created.push((consumer.name.clone(), true)),
                    Record::Entries { .. } => {}
                }
                Self::apply_record(&mut committed, record);
            }
        }
        // A new consumer holds interest until it runs (its creator starts it on the leader);
        // an updated one not running here re-registers with its new filters.
        for (name, new) in created {
            let dormant = self.dormant.lock().contains_key(&name);
            if new || dormant {
                self.release_interest(&name);
                self.hold_interest(&name);
            }
        }
        for name in deleted {
            self.release_interest(&name);
        }
        Ok(())
    }

    fn snapshot(&self) -> Vec<u8> {
        let consumers: Vec<SnapshotConsumer> = self
            .committed
            .lock()
            .iter()
            .map(|(name, consumer)| {
                SnapshotConsumer::of(name, &consumer.config, consumer.created, &consumer.state)
            })
            .collect();
        serde_json::to_vec(&consumers).unwrap_or_default()
    }

    fn restore(&self, snapshot: &[u8]) -> io::Result<()> {
        let consumers: Vec<SnapshotConsumer> = if snapshot.is_empty() {
            Vec::new()
        } else {
            serde_json::from_slice(snapshot).map_err(invalid)?
        };
        let restored = consumers
            .into_iter()
            .map(SnapshotConsumer::committed)
            .collect();
        let names: Vec<String> = self.dormant.lock().keys().cloned().collect();
        for name in names {
            self.release_interest(&name);
        }
        *self.committed.lock() = restored;
        // Consumers running here keep their own registrations; a restore happens before this
        // server leads again (a new group start), whose leadership change restarts them.
        // (The names are taken first: `hold_interest` locks the committed states itself.)
        let running = self.running.lock().clone();
        let names: Vec<String> = self.committed.lock().keys().cloned().collect();
        for name in names {
            if !running.contains(&name) {
                self.hold_interest(&name);
            }
        }
        Ok(())
    }
}

/// What one consumer's task hands its proposer: the entries applied since the last flush and
/// the replies (AckSync) to send once they are committed; or a request to say when everything
/// handed over before it has been resolved ([`Proposals::drain`]).
enum Proposal {
    Entries(Vec<ConsumerEntry>, Vec<Bytes>),
    Drained(oneshot::Sender<()>),
}

/// How long a stopping consumer waits for its proposals still in flight to be resolved.
const DRAIN_BOUND: Duration = Duration::from_secs(10);

/// A live replicated consumer's way into the log: a task per consumer that proposes its
/// entries one proposal at a time (in order; what queues meanwhile goes in the next one) and
/// answers the acks they carry once committed.
///
/// A proposal that fails answers nothing, and neither does anything after it: the task's
/// state is then ahead of the committed one (the failed entries applied there, not here), so
/// a later ack could be confirmed on a delivery the log never recorded. A failure means the
/// leadership is going (openraft answers a write only when it is no longer leader, or the
/// group stopped), and the next leadership restarts the consumer from the committed state.
pub(crate) struct Proposals {
    sender: mpsc::UnboundedSender<Proposal>,
    /// Set once the consumer stopped here: a proposal still in flight then answers nothing.
    closed: Arc<AtomicBool>,
    /// The lease of the leadership the consumer started under (`Replicator::lease`).
    lease: Arc<dyn Lease>,
}

impl Proposals {
    pub(crate) fn spawn(
        replicas: Arc<ReplicatedConsumers>,
        name: String,
        transport: Arc<dyn Transport>,
    ) -> Proposals {
        let lease = replicas.replicator.lease();
        let (sender, mut receiver) = mpsc::unbounded_channel::<Proposal>();
        let closed = Arc::new(AtomicBool::new(false));
        let stopped = closed.clone();
        tokio::spawn(async move {
            let mut failed = false;
            while let Some(first) = receiver.recv().await {
                let (mut entries, mut replies, mut drained) = (Vec::new(), Vec::new(), None);
                let mut next = Some(first);
                while let Some(proposal) = next.take() {
                    match proposal {
                        Proposal::Entries(more, more_replies) => {
                            entries.extend(more);
                            replies.extend(more_replies);
                            next = receiver.try_recv().ok();
                        }
                        // What came before is proposed first; nothing after it is taken.
                        Proposal::Drained(done) => drained = Some(done),
                    }
                }
                if !failed && !entries.is_empty() {
                    let record = Record::Entries {
                        name: name.clone(),
                        entries,
                    };
                    if let Err(error) = replicas.propose(&[record]).await {
                        tracing::warn!(consumer = %name, %error, "consumer state not replicated");
                        failed = true;
                    }
                }
                if !failed && !stopped.load(Ordering::Acquire) {
                    super::confirm(&*transport, replies);
                }
                if let Some(done) = drained {
                    let _ = done.send(());
                }
            }
        });
        Proposals {
            sender,
            closed,
            lease,
        }
    }

    /// Whether this node's leadership still holds by its lease: deliveries wait while not.
    pub(crate) fn lease_holds(&self) -> bool {
        self.lease.holds()
    }

    /// Queues what the task applied since its last flush, with the replies it confirms.
    pub(crate) fn send(&self, entries: Vec<ConsumerEntry>, replies: Vec<Bytes>) {
        let _ = self.sender.send(Proposal::Entries(entries, replies));
    }

    /// Waits (bounded) until everything queued so far is committed or failed, then closes:
    /// the committed state then holds all this consumer's task will ever add to it, so a
    /// consumer started from it is not behind acks this one confirmed. Past the bound, what is
    /// still in flight answers nothing.
    pub(crate) async fn drain(&self) {
        let (done, drained) = oneshot::channel();
        if self.sender.send(Proposal::Drained(done)).is_ok() {
            let _ = tokio::time::timeout(DRAIN_BOUND, drained).await;
        }
        self.closed.store(true, Ordering::Release);
    }
}

/// A failed proposal as the API answers it.
pub(crate) fn api_error(error: ReplicationError) -> ApiError {
    match error {
        ReplicationError::NotLeader | ReplicationError::Discarded => {
            errors::CLUSTER_NOT_LEADER.to_error()
        }
        ReplicationError::NoSpace(reason) => errors::STREAM_STORE_FAILED.with_err(reason),
        ReplicationError::Failed(error) => errors::RAFT_GENERAL.with_err(error),
    }
}

/// Creates a durable consumer of a replicated stream on its leader: the creation is committed
/// in the stream's log first, then the consumer starts here from the state every replica
/// holds. Called under the registry's admin lock.
pub(crate) async fn create(
    home: &Home<'_>,
    replicas: &ReplicatedConsumers,
    config: ConsumerConfig,
    created: i64,
) -> Result<Arc<Consumer>, ApiError> {
    let name = config.name.clone();
    let start_seq = super::starting_sequence(home.stream, &config);
    let record = Record::Create {
        name: name.clone(),
        config: Box::new(config),
        created,
        start_seq,
    };
    replicas.propose(&[record]).await.map_err(api_error)?;
    let committed = replicas
        .committed
        .lock()
        .get(&name)
        .cloned()
        .ok_or_else(|| errors::CONSUMER_CREATE.with_err("consumer deleted while created"))?;
    let consumer = start_committed(home, &name, committed)
        .map_err(|error| errors::CONSUMER_STORE_FAILED.with_err(error))?;
    replicas.started(&name);
    Ok(consumer)
}

/// Commits a replicated consumer's new config (a creation record of the same incarnation
/// replaces the config and keeps the state) before it applies on the leader.
pub(crate) async fn update(
    replicas: &ReplicatedConsumers,
    consumer: &Consumer,
    config: &ConsumerConfig,
) -> Result<(), ApiError> {
    let record = Record::Create {
        name: consumer.name.clone(),
        config: Box::new(config.clone()),
        created: consumer.created,
        start_seq: 0,
    };
    replicas.propose(&[record]).await.map_err(api_error)
}

/// Starts consumer `name` here from its committed state.
fn start_committed(
    home: &Home<'_>,
    name: &str,
    committed: Committed,
) -> Result<Arc<Consumer>, nats_store::StoreError> {
    let mut store = MemConsumerStore::new();
    super::save_config(&mut store, &committed.config, committed.created)?;
    store.set_state(committed.state)?;
    tracing::debug!(consumer = %name, "replicated consumer started from its committed state");
    Ok(super::start(
        home,
        committed.config,
        committed.created,
        Box::new(store),
        true,
    ))
}

/// The stream's leader starts every committed consumer not running here, from its committed
/// state (pending deliveries are redelivered once their ack wait, counted from their delivery
/// time, runs out).
pub(crate) fn activate(home: &Home<'_>, replicas: &ReplicatedConsumers) {
    // This node leads and has applied everything committed before its term.
    home.stream.followed.store(false, Ordering::SeqCst);
    for (name, committed) in replicas.committed() {
        if home.consumers.get(&name).is_some() {
            continue;
        }
        match start_committed(home, &name, committed) {
            Ok(_) => replicas.started(&name),
            Err(error) => {
                tracing::error!(consumer = %name, %error, "replicated consumer not started")
            }
        }
    }
}

/// Deletes a replicated consumer: the deletion is committed in the stream's log before the
/// consumer stops here. False when there is no such consumer.
pub(crate) async fn delete(
    stream: &Stream,
    consumers: &Consumers,
    replicas: &ReplicatedConsumers,
    name: &str,
) -> Result<bool, ApiError> {
    if consumers.get(name).is_none() {
        return Ok(false);
    }
    let record = Record::Delete {
        name: name.to_string(),
    };
    replicas.propose(&[record]).await.map_err(api_error)?;
    replicas.running.lock().remove(name);
    Ok(super::stop_consumer(stream, consumers, name, true).await)
}

/// The stream's leadership went elsewhere: its replicated consumers stop here (waiting pull
/// requests hear `409 Leadership Change`); their committed state stays.
///
/// Every task stops before any drain is waited for: a drain can take up to [`DRAIN_BOUND`]
/// (a proposal in flight on a leader cut off from its quorum resolves only when the group
/// steps down), and a consumer still running meanwhile delivers what this node, now a
/// follower, applies from the next leader, under the consumer sequences that leader gives
/// them. (The consumer fault suite saw a push consumer on a healed, deposed leader deliver
/// 454 messages a second time, their first copies already acked, while its node waited
/// for the pull consumer's drain.)
///
/// Returns them for [`drain_stopped`].
async fn stop_replicated(stream: &Stream, consumers: &Consumers) -> Vec<Arc<Consumer>> {
    let replicated: Vec<Arc<Consumer>> = consumers
        .all()
        .into_iter()
        .filter(|consumer| consumer.replication.is_some())
        .collect();
    for consumer in &replicated {
        super::leadership_lost(stream, consumers, &consumer.name).await;
    }
    replicated
}

/// Waits for what the stopped consumers proposed: a next leadership here starts them from the
/// committed state, with everything this incarnation proposed in it (or failed), not behind
/// acks it confirmed.
async fn drain_stopped(stopped: &[Arc<Consumer>], replicas: &ReplicatedConsumers) {
    for consumer in stopped {
        if let Some(proposals) = &consumer.replication {
            proposals.drain().await;
            replicas.stopped(&consumer.name);
        }
    }
}

/// This server's leadership of the stream changed (`was_leading` before, `leads` now, or a new
/// leadership replacing the one before): the replicated consumers running here stop, then, if
/// it leads, start again from their committed state.
///
/// They stop before `admin_lock` (the registry's lock of consumer creation and deletion) is
/// taken: a CONSUMER.CREATE or DELETE holding it on a leader cut off from its quorum waits for
/// its proposal, and the consumers would go on delivering, and waiting pulls hear their `409
/// Leadership Change` only, after it. Under the lock those created meanwhile stop too, the
/// drains are waited for, and the next leadership starts them.
pub(crate) async fn follow_leadership_change(
    admin_lock: &tokio::sync::Mutex<()>,
    home: &Home<'_>,
    replicas: &ReplicatedConsumers,
    was_leading: bool,
    leads: bool,
) {
    let mut stopped = if was_leading {
        stop_replicated(home.stream, home.consumers).await
    } else {
        Vec::new()
    };
    let _guard = admin_lock.lock().await;
    if was_leading {
        stopped.extend(stop_replicated(home.stream, home.consumers).await);
        drain_stopped(&stopped, replicas).await;
    }
    if leads && !home.stream.stopped.load(Ordering::Relaxed) {
        activate(home, replicas);
    }
}

/// A first delivery, with acks, at time 7 (the replication tests' entries).
#[cfg(test)]
pub(crate) fn first_delivery(consumer_seq: u64, stream_seq: u64) -> ConsumerEntry {
    ConsumerEntry::Delivered {
        consumer_seq,
        stream_seq,
        delivery_count: 1,
        timestamp: 7,
        ack: true,
    }
}

#[cfg(test)]
mod tests;

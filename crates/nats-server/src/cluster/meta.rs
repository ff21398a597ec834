//! [`Meta`]: the JetStream meta group of this server: every JetStream-enabled rnats server of the
//! cluster in one Raft group (`_meta_`), found through announcements on routes.
//!
//! - Discovery: each server announces `{name, peer, formed, incarnation, level}` on
//!   `$RNATS.RAFT.HELLO` in the system account every second until the group has formed, every
//!   five after (`level`: what its build reads, `features.rs`).
//! - Bootstrap: the group starts without a membership. It is founded once, by one server: the
//!   lowest-named of the servers it knows, when it knows at least the expected size (its
//!   configured routes that are not itself, plus itself, as nats-server sizes its meta group)
//!   and none of them has formed a group yet. Every founder thus writes the same membership, and
//!   no two groups form where every server sees every other. Servers that come later are added
//!   by the leader (learner, caught up, then voter).
//! - What it shows: `/jsz` `meta_cluster` ([`Meta::cluster_info`]), the
//!   `$JS.EVENT.ADVISORY.DOMAIN.LEADER_ELECTED` advisory when this server becomes leader, and
//!   `$JS.API.META.LEADER.STEPDOWN` (system account, answered by the leader only).
//! - Who leads, and the tasks following leader changes: `meta_leadership.rs`.
//!
//! - What it holds: the stream assignments ([`super::assignments`]). Every member applies
//!   them; the member a stream is placed on creates, updates or removes it through JetStream
//!   (one task, in log order). The `$JS.API` side is [`super::placement`] (`impl Cluster`).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nats_jetstream::{JetStream, Message};
use nats_raft::{GroupConfig, GroupStatus, NodeId, RaftGroup, Role, StateMachine};
use parking_lot::Mutex;
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::assignments::{Assignments, Effect};
use super::network::{RouteNetwork, PREFIX};
use super::peer;
use super::placement::AccountMeta;
use super::stream_group::StreamGroups;
use crate::accounts::Account;
use crate::router::{Delivery, PendingFlush};

/// The meta group's name, as nats-server names it (also its directory).
pub const META_GROUP: &str = "_meta_";
/// The stepdown request subject.
pub const STEPDOWN_SUBJECT: &str = "$JS.API.META.LEADER.STEPDOWN";
/// Announcements before the group formed / after.
const HELLO_INTERVAL: Duration = Duration::from_secs(1);
const HELLO_EVERY_FORMED: u32 = 5;
/// A peer heard from within this long counts as current.
const CURRENT_WINDOW: Duration = Duration::from_secs(12);
/// A meta leader that no quorum acknowledged for this long no longer leads for the API
/// ([`Meta::leads`]), and from then on answers 10008 (`placement.rs`); a server without a
/// leader answers 10008 once its group has run this long (nats-server's `isLeaderless`: its
/// heartbeats go every 500 ms, the followers' lease is 4 s too).
pub(super) const META_QUORUM_LOST: Duration = Duration::from_secs(4);
/// The meta leader's lease (the group's `lost_quorum`): a leader no quorum acknowledged for this
/// long stops leading for the API ([`Meta::leads`]; nobody answers until another leads, or until
/// [`META_QUORUM_LOST`] when it answers 10008). Three of its heartbeats (openraft's, every
/// 500 ms). The voters of a leader whose route closed campaign this long plus nats-raft's
/// `OVERRIDE_MARGIN` (500 ms) after they last heard from it: the meta group's kill -9 failover,
/// about 2 s (4.5 s when this was [`META_QUORUM_LOST`]).
const META_LEASE: Duration = Duration::from_millis(1_500);
const _: () = assert!(META_LEASE.as_millis() <= META_QUORUM_LOST.as_millis());

/// What a server announced.
#[derive(Clone, Debug)]
pub(super) struct Known {
    pub(super) name: String,
    formed: bool,
    /// Its store's incarnation (`incarnation.rs`).
    pub(super) incarnation: u64,
    /// Its build's feature level (`features.rs`; 0 when it announced none).
    pub(super) level: u32,
    /// When its last announcement came.
    pub(super) heard: Instant,
}

/// The meta group on this server.
pub struct Meta {
    pub(super) server_name: String,
    pub(super) own_peer: String,
    pub(super) cluster_name: String,
    /// Servers expected at the group's founding; lowered when routed peers run without
    /// JetStream (`super::adjust_boot_size`).
    expected_size: std::sync::atomic::AtomicUsize,
    pub(super) group: Arc<RaftGroup>,
    pub(super) network: Arc<RouteNetwork>,
    system: Arc<Account>,
    /// This server's incarnation (`incarnation.rs`).
    incarnation: u64,
    /// Servers by peer id, this one included.
    pub(super) known: Mutex<BTreeMap<String, Known>>,
    /// Peer ids removed from the group (`$JS.API.SERVER.REMOVE`): never added back by this
    /// server while it leads.
    pub(super) removed: Mutex<BTreeSet<String>>,
    /// The applied assignments (shared with the state machine).
    pub(super) assignments: Arc<Mutex<Assignments>>,
    /// The Raft groups of the replicated streams placed here.
    pub(super) stream_groups: Arc<StreamGroups>,
    /// Held by the leader while it decides and proposes a membership change
    /// (`membership.rs`): one at a time.
    pub(super) membership: tokio::sync::Mutex<()>,
    /// To the task carrying out this server's part of applied entries (`carry_out`).
    pub(super) effects: tokio::sync::mpsc::UnboundedSender<Effect>,
    /// This group's subscriptions in the system account (announcements, requests it serves),
    /// taken at shutdown.
    subscriptions: Mutex<Vec<u64>>,
    /// Ends the effects task at shutdown (JetStream may start again in this process).
    stop_effects: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// `RaftGroup::leading` of the meta group: `Some` once a quorum confirmed this server's
    /// leadership ([`Meta::leads`]).
    pub(super) leading: tokio::sync::watch::Receiver<Option<u64>>,
    /// When the meta group started in this process.
    pub(super) started: Instant,
    /// A leader's member records are being proposed (`incarnation.rs`): one run at a time.
    pub(super) recording_members: Arc<std::sync::atomic::AtomicBool>,
}

/// The state machine: applies entries to the shared assignments and hands this server's part
/// to the effects task.
struct MetaState {
    assignments: Arc<Mutex<Assignments>>,
    own_peer: String,
    effects: tokio::sync::mpsc::UnboundedSender<Effect>,
}

impl StateMachine for MetaState {
    fn apply(&mut self, _index: u64, payload: Bytes) -> io::Result<()> {
        let now = OffsetDateTime::now_utc().unix_timestamp_nanos() as i64;
        let effect = self
            .assignments
            .lock()
            .apply(&payload, &self.own_peer, now)?;
        if let Some(effect) = effect {
            let _ = self.effects.send(effect);
        }
        Ok(())
    }

    /// The meta group's snapshot is small (the assignments): built in memory, then written.
    fn snapshot(&mut self, out: &mut dyn nats_raft::SnapshotOut) -> io::Result<()> {
        let snapshot = self.assignments.lock().snapshot()?;
        out.write_all(&snapshot)
    }

    fn restore(&mut self, snapshot: &mut dyn io::Read) -> io::Result<()> {
        let mut whole = Vec::new();
        snapshot.read_to_end(&mut whole)?;
        let effects = self.assignments.lock().restore(&whole, &self.own_peer)?;
        for effect in effects {
            let _ = self.effects.send(effect);
        }
        Ok(())
    }
}

/// Carries out this server's part of applied entries, in log order, once the meta group is
/// installed in JetStream (`ready`); ends when the group stops.
async fn carry_out(
    (jetstream, stream_groups): (JetStream, Arc<StreamGroups>),
    local: super::membership::LocalPlacement,
    ready: tokio::sync::oneshot::Receiver<()>,
    mut effects: tokio::sync::mpsc::UnboundedReceiver<Effect>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    if ready.await.is_err() {
        return;
    }
    loop {
        let effect = tokio::select! {
            effect = effects.recv() => effect,
            _ = &mut stop => None,
        };
        let Some(effect) = effect else {
            return;
        };
        match effect {
            Effect::Assigned(assignment) => {
                let _serial = local.serial.lock().await;
                jetstream.apply_stream_assignment(*assignment).await
            }
            Effect::Removed {
                account,
                name,
                created,
                reply,
                first_peer,
            } => {
                jetstream
                    .apply_stream_removal(&account, &name, created, reply, first_peer)
                    .await;
                stream_groups.close(&account, &name, created).await;
            }
            Effect::PeersChanged {
                account,
                name,
                created,
                peers,
            } => stream_groups.set_peers(&account, &name, created, &peers),
            Effect::Unplaced {
                account,
                name,
                created,
            } => {
                tokio::spawn(super::membership::leave(
                    jetstream.clone(),
                    stream_groups.clone(),
                    local.clone(),
                    (account, name, created),
                ));
            }
        }
    }
}

/// How to start the meta group.
pub struct MetaOptions {
    pub server_name: String,
    pub cluster_name: String,
    /// Servers expected in the group at its first start, this one included.
    pub expected_size: usize,
    /// The store's incarnation (`incarnation.rs`): with the name, it gives the node id.
    pub incarnation: u64,
    /// `<store>/jetstream/<system account>/_js_/_meta_`.
    pub directory: PathBuf,
}

impl Meta {
    /// Opens (or creates) the group's directory, starts the group and its tasks. Must run
    /// inside the server's runtime.
    pub async fn start(
        options: MetaOptions,
        system: Arc<Account>,
        jetstream: JetStream,
    ) -> Result<Arc<Meta>, String> {
        let own_peer = peer::incarnation_peer_id(&options.server_name, options.incarnation);
        let node_id = peer::node_id(&own_peer).ok_or("bad peer id")?;
        let network = RouteNetwork::start(system.clone(), own_peer.clone());
        let groups_root = options
            .directory
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        let stream_groups = StreamGroups::new(groups_root, network.clone(), node_id);
        let mut config = GroupConfig::new(META_GROUP, node_id, Vec::new(), options.directory);
        config.bootstrap = false;
        // A leadership resumed by a restart (openraft restores the vote this server cast for
        // itself) leads only once a quorum answered: the others may have elected a leader in a
        // later term meanwhile, and two servers would answer the API (`Meta::leads`).
        config.resumed_needs_quorum = true;
        config.lost_quorum = META_LEASE;
        let assignments = Arc::new(Mutex::new(Assignments::default()));
        let (effects, pending) = tokio::sync::mpsc::unbounded_channel();
        // A thread of its own, as JetStream's API threads: stream creation is not a task the
        // runtime's workers should run (nor one whose future must be `Send`).
        let runtime = tokio::runtime::Handle::current();
        let (ready_sender, ready) = tokio::sync::oneshot::channel();
        let (stop_effects, stop) = tokio::sync::oneshot::channel();
        let carried = (jetstream.clone(), stream_groups.clone());
        let local = super::membership::LocalPlacement {
            assignments: assignments.clone(),
            own_peer: own_peer.clone(),
            serial: Arc::default(),
        };
        std::thread::Builder::new()
            .name("js-meta-apply".into())
            .spawn(move || runtime.block_on(carry_out(carried, local, ready, pending, stop)))
            .map_err(|error| error.to_string())?;
        let state = MetaState {
            assignments: assignments.clone(),
            own_peer: own_peer.clone(),
            effects: effects.clone(),
        };
        let group = RaftGroup::start(config, Box::new(state), network.clone())
            .await
            .map_err(|error| error.to_string())?;
        let group = Arc::new(group);
        network.register(group.clone());
        let leading = group.leading();
        let mut known = BTreeMap::new();
        known.insert(
            own_peer.clone(),
            Known {
                name: options.server_name.clone(),
                formed: false,
                incarnation: options.incarnation,
                level: super::features::LEVEL,
                heard: Instant::now(),
            },
        );
        let meta = Arc::new(Meta {
            server_name: options.server_name,
            own_peer,
            cluster_name: options.cluster_name,
            expected_size: options.expected_size.max(1).into(),
            incarnation: options.incarnation,
            group,
            network,
            system,
            known: Mutex::new(known),
            removed: Mutex::new(BTreeSet::new()),
            assignments,
            stream_groups,
            membership: tokio::sync::Mutex::new(()),
            effects,
            subscriptions: Mutex::new(Vec::new()),
            stop_effects: Mutex::new(Some(stop_effects)),
            leading,
            started: Instant::now(),
            recording_members: Arc::default(),
        });
        meta.stream_groups.set_meta(Arc::downgrade(&meta));
        let for_accounts = meta.clone();
        let counted = Arc::downgrade(&meta);
        jetstream.set_cluster(
            move |account| {
                Arc::new(AccountMeta {
                    meta: for_accounts.clone(),
                    account: account.to_string(),
                })
            },
            move || counted.upgrade().map_or(0, |meta| meta.raft_groups()),
        );
        // Entries replayed while the group started wait for this: they need the cluster.
        let _ = ready_sender.send(());
        meta.spawn_tasks();
        Ok(meta)
    }

    fn spawn_tasks(self: &Arc<Self>) {
        let (hello_sender, hellos) = tokio::sync::mpsc::channel::<Message>(256);
        let hello = self.system.router.subscribe_internal(
            &format!("{PREFIX}.HELLO"),
            None,
            Arc::new(move |message: Message| {
                let _ = hello_sender.try_send(message);
            }),
        );
        self.subscriptions.lock().push(hello);
        self.serve(STEPDOWN_SUBJECT, |meta, message, arrived| async move {
            meta.stepdown(message, arrived).await
        });
        self.serve(
            super::membership::SERVER_REMOVE_SUBJECT,
            |meta, message, _| async move { meta.server_remove(message).await },
        );
        tokio::spawn(discover(Arc::downgrade(self), hellos));
        tokio::spawn(super::meta_leadership::watch_leader(Arc::downgrade(self)));
        tokio::spawn(super::meta_leadership::follow_leadership(
            Arc::downgrade(self),
            self.leading.clone(),
        ));
        super::stream_group::orphans::spawn(self);
    }

    /// Serves requests on `subject` in the system account, one at a time, with `handle`, which
    /// also gets when the request arrived: it may wait behind others while the leadership moves.
    pub(super) fn serve<F, Fut>(self: &Arc<Self>, subject: &str, handle: F)
    where
        F: Fn(Arc<Meta>, Message, Instant) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (sender, mut requests) = tokio::sync::mpsc::channel::<(Message, Instant)>(64);
        let id = self.system.router.subscribe_internal(
            subject,
            None,
            Arc::new(move |message: Message| {
                let _ = sender.try_send((message, Instant::now()));
            }),
        );
        self.subscriptions.lock().push(id);
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some((message, arrived)) = requests.recv().await {
                let Some(meta) = weak.upgrade() else {
                    return;
                };
                handle(meta, message, arrived).await;
            }
        });
    }

    pub fn group(&self) -> &Arc<RaftGroup> {
        &self.group
    }

    /// The server name of a node: as it announced itself, else as the meta log recorded it
    /// (`incarnation.rs`), else its peer id.
    pub(super) fn name_of(&self, node: NodeId) -> String {
        let peer = peer::peer_of(node);
        let announced = self.known.lock().get(&peer).map(|known| known.name.clone());
        announced
            .or_else(|| self.recorded_name(&peer))
            .unwrap_or(peer)
    }

    /// The system account's name (the Raft traffic's account).
    pub(super) fn system_account_name(&self) -> String {
        self.system.name.to_string()
    }

    /// One replica entry as nats-server's `PeerInfo` (`name`, `current`, `active`, `lag`,
    /// `peer`), seen from this server.
    pub(super) fn replica(&self, node: NodeId, status: &GroupStatus) -> Value {
        let peer = peer::peer_of(node);
        let own = node == self.group.node_id();
        let seen = if own {
            Some(Instant::now())
        } else {
            self.network.last_seen(&peer)
        };
        let recent = seen.is_some_and(|at| at.elapsed() < CURRENT_WINDOW);
        let lag = status
            .followers
            .iter()
            .find(|follower| follower.node == node)
            .map(|follower| follower.lag);
        let current = own
            || match status.role {
                Role::Leader => recent && lag == Some(0),
                _ => recent,
            };
        let mut replica = serde_json::Map::new();
        replica.insert("name".into(), json!(self.name_of(node)));
        replica.insert("current".into(), json!(current));
        let active = seen.map_or(0, |at| at.elapsed().as_nanos() as u64);
        replica.insert("active".into(), json!(if own { 0 } else { active }));
        // Not routed to us, or silent too long: what natscli's `server raft peer-remove`
        // requires before it removes a server.
        if !own && (!recent || !self.network.routed(&peer)) {
            replica.insert("offline".into(), json!(true));
        }
        if let Some(lag) = lag.filter(|lag| *lag > 0) {
            replica.insert("lag".into(), json!(lag));
        }
        replica.insert("peer".into(), json!(peer));
        Value::Object(replica)
    }

    /// The Raft groups this server runs (`ha_assets` of `/jsz`, `/varz` and STATSZ, through
    /// `JetStream::set_cluster`; nats-server's count of its raft nodes): the meta group and each
    /// replicated stream's group (consumers ride those).
    pub fn raft_groups(&self) -> usize {
        1 + self.stream_groups.count()
    }

    /// `/jsz` `meta_cluster`, as nats-server shows it: the leader's name and peer id, every
    /// other member as a replica, the size and quorum.
    pub fn cluster_info(&self) -> Value {
        let status = self.group.status();
        let size = if status.voters.is_empty() {
            self.expected_size()
        } else {
            status.voters.len()
        };
        let mut info = serde_json::Map::new();
        info.insert("name".into(), json!(self.cluster_name));
        if let Some(leader) = status.leader {
            info.insert("leader".into(), json!(self.name_of(leader)));
            info.insert("peer".into(), json!(peer::peer_of(leader)));
        }
        let own = self.group.node_id();
        let replicas: Vec<Value> = status
            .voters
            .iter()
            .filter(|node| **node != own)
            .map(|node| self.replica(*node, &status))
            .collect();
        if !replicas.is_empty() {
            info.insert("replicas".into(), Value::Array(replicas));
        }
        info.insert("cluster_size".into(), json!(size));
        info.insert("quorum_needed".into(), json!(size / 2 + 1));
        info.insert("pending".into(), json!(0));
        info.insert("pending_requests".into(), json!(0));
        info.insert("pending_infos".into(), json!(0));
        // nats-server's meta log `Size()`: entries past the last snapshot and the log's bytes.
        // `pending` (its queues of routed API requests) and the snapshot's time are not kept
        // here (docs/parity.md).
        let log = self.group.log_size();
        info.insert(
            "snapshot".into(),
            json!({
                "pending_entries": log.entries,
                "pending_size": log.bytes,
                "last_time": "0001-01-01T00:00:00Z",
            }),
        );
        Value::Object(info)
    }

    /// `/raftz`'s entry for the meta group (nats-server's `RaftzGroup`, the fields we have).
    pub fn raftz(&self) -> Value {
        let status = self.group.status();
        let state = match status.role {
            Role::Leader => "LEADER",
            Role::Follower | Role::Learner => "FOLLOWER",
            Role::Candidate => "CANDIDATE",
            Role::Offline | Role::Stopped => "CLOSED",
        };
        let size = status.voters.len();
        let mut peers = serde_json::Map::new();
        for node in status.voters.iter().chain(status.learners.iter()) {
            if *node == self.group.node_id() {
                continue;
            }
            let peer = peer::peer_of(*node);
            let mut entry = serde_json::Map::new();
            entry.insert("name".into(), json!(self.name_of(*node)));
            entry.insert("known".into(), json!(status.voters.contains(node)));
            if let Some(seen) = self.network.last_seen(&peer) {
                entry.insert(
                    "last_seen".into(),
                    json!(go_compat::duration::format_std(seen.elapsed())),
                );
            }
            peers.insert(peer, Value::Object(entry));
        }
        let mut group = serde_json::Map::new();
        group.insert("id".into(), json!(self.own_peer));
        group.insert("state".into(), json!(state));
        group.insert("size".into(), json!(size));
        group.insert("quorum_needed".into(), json!(size / 2 + 1));
        group.insert("committed".into(), json!(status.committed.unwrap_or(0)));
        group.insert("applied".into(), json!(status.applied.unwrap_or(0)));
        if let Some(leader) = status.leader {
            group.insert("leader".into(), json!(peer::peer_of(leader)));
        }
        group.insert("ever_had_leader".into(), json!(status.leader.is_some()));
        group.insert("term".into(), json!(status.term));
        group.insert("pindex".into(), json!(status.last_log_index.unwrap_or(0)));
        group.insert("system_account".into(), json!(true));
        group.insert("traffic_account".into(), json!(self.system.name.as_ref()));
        group.insert("peers".into(), Value::Object(peers));
        let mut groups = serde_json::Map::new();
        groups.insert(META_GROUP.into(), Value::Object(group));
        let mut accounts = serde_json::Map::new();
        accounts.insert(self.system.name.to_string(), Value::Object(groups));
        Value::Object(accounts)
    }

    pub(super) fn publish(&self, subject: &str, reply: Option<&Bytes>, payload: Value) {
        let subject = Bytes::copy_from_slice(subject.as_bytes());
        let payload = Bytes::from(serde_json::to_vec(&payload).unwrap_or_default());
        let delivery = Delivery {
            subject: &subject,
            reply,
            headers: None,
            payload: &payload,
        };
        let mut pending = PendingFlush::default();
        self.system.router.route(None, &delivery, &mut pending);
        pending.flush();
    }

    fn announce(&self) {
        let formed = !self.group.status().voters.is_empty();
        self.publish(
            &format!("{PREFIX}.HELLO"),
            None,
            json!({
                "name": self.server_name,
                "peer": self.own_peer,
                "formed": formed,
                "incarnation": self.incarnation,
                "level": super::features::LEVEL,
            }),
        );
    }

    /// Records an announcement; true when it came from a server not known before.
    fn record(&self, message: &Message) -> bool {
        let Ok(hello) = serde_json::from_slice::<Value>(&message.payload) else {
            return false;
        };
        let (Some(name), Some(peer_id), formed) = (
            hello["name"].as_str(),
            hello["peer"].as_str(),
            hello["formed"].as_bool().unwrap_or(false),
        ) else {
            return false;
        };
        let incarnation = hello["incarnation"].as_u64().unwrap_or(0);
        let level = hello["level"]
            .as_u64()
            .map_or(0, |level| u32::try_from(level).unwrap_or(u32::MAX));
        if peer_id == self.own_peer || peer::incarnation_peer_id(name, incarnation) != peer_id {
            return false;
        }
        self.network.seen(peer_id);
        let known = Known {
            name: name.to_string(),
            formed,
            incarnation,
            level,
            heard: Instant::now(),
        };
        self.known
            .lock()
            .insert(peer_id.to_string(), known)
            .is_none()
    }

    /// The founding membership, when this server is the one to found the group now.
    fn founders(&self) -> Option<Vec<NodeId>> {
        let known = self.known.lock();
        let others: Vec<(&String, &Known)> = known
            .iter()
            .filter(|(peer, _)| **peer != self.own_peer)
            .collect();
        if known.len() < self.expected_size() || others.iter().any(|(_, other)| other.formed) {
            return None;
        }
        if others
            .iter()
            .any(|(_, other)| other.name < self.server_name)
        {
            return None;
        }
        known.keys().map(|peer| peer::node_id(peer)).collect()
    }

    /// Servers known but not in the group (for the leader to add), except those removed with
    /// `$JS.API.SERVER.REMOVE` and earlier incarnations of a server.
    fn newcomers(&self, status: &GroupStatus) -> Vec<NodeId> {
        let removed = self.removed.lock().clone();
        let known: Vec<String> = self.known.lock().keys().cloned().collect();
        known
            .iter()
            .filter(|peer| !removed.contains(*peer) && !self.superseded(peer))
            .filter_map(|peer| peer::node_id(peer))
            .filter(|node| !status.voters.contains(node) && !status.learners.contains(node))
            .collect()
    }

    /// Hands leadership to another voter (bounded) before a graceful shutdown, then stops the
    /// group.
    /// Its subscriptions and Raft traffic end too, and the task applying its entries here: a
    /// JetStream turned on again by a reload starts a new group beside nothing of this one.
    pub async fn shutdown(&self) {
        self.transfer_meta_leadership().await;
        self.stream_groups.shutdown().await;
        self.group.shutdown().await;
        for id in std::mem::take(&mut *self.subscriptions.lock()) {
            self.system.router.unsubscribe_internal(id);
        }
        self.network.stop();
        if let Some(stop) = self.stop_effects.lock().take() {
            let _ = stop.send(());
        }
    }

    /// Servers expected at the group's founding, this one included.
    pub(super) fn expected_size(&self) -> usize {
        self.expected_size
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Lowers the founding size to the JetStream servers of the cluster (nats-server's
    /// `AdjustBootClusterSize`), before the group formed.
    pub(super) fn set_expected_size(&self, size: usize) {
        self.expected_size
            .store(size.max(1), std::sync::atomic::Ordering::Relaxed);
    }
}

/// Announces this server, learns the others, founds the group when it is this server's turn,
/// and (on the leader) adds the servers that are not members yet.
async fn discover(meta: std::sync::Weak<Meta>, mut hellos: tokio::sync::mpsc::Receiver<Message>) {
    let mut ticker = tokio::time::interval(HELLO_INTERVAL);
    let mut ticks: u32 = 0;
    let adding: Arc<Mutex<BTreeSet<NodeId>>> = Arc::default();
    let retiring: Arc<Mutex<BTreeSet<NodeId>>> = Arc::default();
    let mut founded = false;
    loop {
        let hello = tokio::select! {
            _ = ticker.tick() => None,
            hello = hellos.recv() => match hello {
                Some(hello) => Some(hello),
                None => return,
            },
        };
        let Some(meta) = meta.upgrade() else {
            return;
        };
        let status = meta.group.status();
        let formed = !status.voters.is_empty();
        match hello {
            None => {
                ticks = ticks.wrapping_add(1);
                if !formed || ticks.is_multiple_of(HELLO_EVERY_FORMED) {
                    meta.announce();
                }
            }
            Some(hello) => {
                if meta.record(&hello) {
                    // A newcomer learns of us without waiting for our next tick.
                    meta.announce();
                }
            }
        }
        if !formed && !founded {
            if let Some(members) = meta.founders() {
                founded = true;
                let names: Vec<String> = members.iter().map(|node| meta.name_of(*node)).collect();
                tracing::info!("JetStream cluster bootstrapping the meta group with {names:?}");
                if let Err(error) = meta.group.initialize(&members).await {
                    tracing::warn!("JetStream meta group bootstrap refused: {error}");
                }
            }
        }
        if meta.leads() {
            for node in meta.newcomers(&status) {
                if !adding.lock().insert(node) {
                    continue;
                }
                let group = meta.group.clone();
                let adding = adding.clone();
                let name = meta.name_of(node);
                tokio::spawn(async move {
                    match group.add_member(node).await {
                        Ok(()) => tracing::info!("JetStream meta group added {name}"),
                        Err(error) => tracing::debug!("adding {name} to the meta group: {error}"),
                    }
                    adding.lock().remove(&node);
                });
            }
            meta.retire_superseded(&status, &retiring);
            meta.record_members(&status);
        }
    }
}

//! Replicated streams' Raft groups on this server ([`StreamGroups`], [`ReplicatedStream`]): one
//! nats-raft group per stream of more than one replica assigned here, on the assignment's peers,
//! over the routes' Raft transport ([`RouteNetwork`], shared with the meta group).
//!
//! - Files: `<jetstream>/<system account>/_js_/<group>/raft` holds the group's log (each entry
//!   fdatasynced before this node acknowledges it to the leader), `.../store` the replica's
//!   stream store, which is rebuilt from the group's snapshot and log at every start.
//! - Leadership: the group's leader is the stream's leader. It alone takes publishes and
//!   answers the stream's requests; [`ReplicatedStream`] tells the stream (its `Replicator`)
//!   and the API (`StreamGroup::is_leader`) when this server leads.
//! - What clients see: STREAM.INFO's `cluster` block (`StreamGroup::cluster_info`), as
//!   nats-server fills it.
//! - The seams nats-jetstream reaches the group through (`Replicator`, `Lease`, `StreamGroup`)
//!   are implemented in [`seam`]; this file holds the groups, their start, rebuild and handovers.
//! - Directories of groups no longer assigned here (removed while this server was down) go
//!   once it is current with the meta group ([`orphans`]); trash names left by a stop or a
//!   crash go at start (`remove_trash`).
//!
//! Called by JetStream through `Cluster::stream_group` when an assignment is applied, and by the
//! meta layer (`meta.rs`) when an assignment is removed. Knows no stream internals: the stream
//! hands its `ReplicaMachine` in and proposes through the `Replicator` it gets.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use jetstream_api::Timestamp;
use nats_jetstream::{ReplicaMachine, StreamGroup};
use nats_raft::{GroupConfig, GroupStatus, NodeId, RaftGroup, Role, TickDriver};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::meta::Meta;
use super::network::RouteNetwork;
use super::peer;

pub(super) mod orphans;
mod seam;

/// How often a stream group's leader sends heartbeats (nats-server: 1 s). Its groups are many
/// (one per replicated stream), but their heartbeats leave together from the server's tick
/// driver (nats-raft's `tick_driver.rs`), so beating every 500 ms costs little at idle. (Before
/// the driver, 500 ms took 500 idle R3 streams to 2.6x nats-server's CPU, bench/README.md,
/// group scaling.) A dead or hung leader is noticed by the route's loss or its server's silence
/// (network.rs, `SILENT`, kept fresh by every server's keepalive), not by these heartbeats; they
/// renew the leader's lease, whose length ([`STREAM_QUORUM_LOST`]) sets how soon the voters of a
/// leader killed may elect another.
const STREAM_HEARTBEAT: Duration = Duration::from_millis(500);
/// A stream group's leader that no quorum acknowledged for this long stops leading for the
/// application (its lease, nats-raft's `lease.rs`): three heartbeats, well below openraft's
/// leader lease (the election timeout's maximum, 4 s) so no other leader can have been elected
/// on the voters' timers while it still leads. The voters of a leader whose route closed campaign
/// this long plus `OVERRIDE_MARGIN` (500 ms) after they last heard from it
/// (`RaftGroup::leader_unreachable`): the kill -9 failover, about 2 s (it was 3.5 s at 3 s).
const STREAM_QUORUM_LOST: Duration = Duration::from_millis(1_500);
// A server silent this long is hung for its peers, who then campaign on it (nats-raft waits until
// `lost_quorum` + `OVERRIDE_MARGIN` after they last heard from it, `RaftGroup::leader_unreachable`):
// silence noticed sooner would only wait there.
const _: () = assert!(
    STREAM_QUORUM_LOST.as_millis() + nats_raft::OVERRIDE_MARGIN.as_millis()
        <= super::network::SILENT.as_millis()
);
// Three heartbeats at least: one late or lost on a busy machine must not end a lease.
const _: () = assert!(STREAM_QUORUM_LOST.as_millis() >= 3 * STREAM_HEARTBEAT.as_millis());
/// How long a leader handing over waits for its proposals to apply, then for the new leader
/// after each request to take over.
const QUIET_HANDOVER: Duration = Duration::from_secs(2);
/// A founder of a new group other than the first founds it itself when it heard nothing of it
/// this long (times its rank among the founders, so two late founders do not campaign
/// together) after starting it: the first founder is gone or far behind. Below the election
/// timeout's minimum (2 s), which the first founder's own retry waits.
const FOUND_LATE_AFTER: Duration = Duration::from_millis(1_000);
/// Requests to take over a handing-over leader makes before it gives up (the successor can miss
/// one: a request late on a busy route finds it a log entry behind, and it refuses).
const HANDOVER_ATTEMPTS: usize = 3;
/// How often a replica that could not be rebuilt (a full disk) is tried again.
const REBUILD_RETRY: Duration = Duration::from_millis(500);

/// An account's stream: the key of the groups map.
type StreamKey = (String, String);

/// The replicated streams' groups of this server, by account and stream name.
pub struct StreamGroups {
    /// `<jetstream>/<system account>/_js_`.
    root: PathBuf,
    network: Arc<RouteNetwork>,
    own_node: NodeId,
    /// The meta group, for server names (set once it started).
    meta: OnceLock<Weak<Meta>>,
    groups: Mutex<HashMap<StreamKey, Arc<ReplicatedStream>>>,
    /// The ticks and heartbeats of every stream group of this server (nats-raft's
    /// `tick_driver.rs`), made with the first group.
    ticks: OnceLock<Arc<TickDriver>>,
    /// Set by [`StreamGroups::shutdown`] under `groups`' lock: a group opened after it (an
    /// assignment applied while the server stops) is closed from the start, so it never
    /// starts after the others were stopped.
    shut: AtomicBool,
}

impl StreamGroups {
    pub fn new(root: PathBuf, network: Arc<RouteNetwork>, own_node: NodeId) -> Arc<StreamGroups> {
        remove_trash(&root);
        Arc::new(StreamGroups {
            root,
            network,
            own_node,
            meta: OnceLock::new(),
            groups: Mutex::new(HashMap::new()),
            ticks: OnceLock::new(),
            shut: AtomicBool::new(false),
        })
    }

    pub(super) fn set_meta(&self, meta: Weak<Meta>) {
        let _ = self.meta.set(meta);
    }

    /// The running (or starting) group of `account`'s `stream`.
    pub fn get(&self, account: &str, stream: &str) -> Option<Arc<ReplicatedStream>> {
        self.groups
            .lock()
            .get(&(account.to_string(), stream.to_string()))
            .cloned()
    }

    /// The group of incarnation `created` of `stream` (account, name), on `peers`, named
    /// `group`: the one this server runs, or a new one (not started: the stream starts it with
    /// its replica). A group of an earlier incarnation is stopped and its files deleted first.
    /// The `joined` peers were placed after the group was founded: they never found it (the
    /// others found it with each other; the one server of a stream scaled up from one replica
    /// founds it alone and its leader adds the rest).
    pub async fn open(
        &self,
        stream: &StreamKey,
        created: i64,
        group: &str,
        peers: &[String],
        joined: &[String],
    ) -> Arc<ReplicatedStream> {
        let members: Vec<NodeId> = peers
            .iter()
            .filter_map(|peer| peer::node_id(peer))
            .collect();
        let founders: Vec<NodeId> = peers
            .iter()
            .filter(|peer| !joined.contains(peer))
            .filter_map(|peer| peer::node_id(peer))
            .collect();
        let joining = !founders.contains(&self.own_node);
        let stale = {
            let groups = self.groups.lock();
            match groups.get(stream) {
                Some(existing) if existing.name == group && existing.created == created => {
                    // The assignment's peers now: a server placed on the stream again before
                    // its earlier removal let the group go must not keep that removal's target.
                    let existing = existing.clone();
                    drop(groups);
                    *existing.target.lock() = members;
                    tokio::spawn(super::membership::reconcile(existing.clone()));
                    return existing;
                }
                Some(existing) => Some(existing.created),
                None => None,
            }
        };
        if let Some(stale) = stale {
            self.close(&stream.0, &stream.1, stale).await;
        }
        let (leadership, _) = watch::channel(None);
        let opened = Arc::new(ReplicatedStream {
            name: group.to_string(),
            created,
            node: self.own_node,
            target: Mutex::new(members.clone()),
            joining,
            founders,
            held: AtomicBool::new(false),
            handing_over: watch::channel(false).0,
            raft_leadership: Mutex::new(None),
            raft_elected: AtomicBool::new(false),
            elected: watch::channel(false).0,
            reconciling: tokio::sync::Mutex::new(()),
            closed: AtomicBool::new(false),
            rebuilding: AtomicBool::new(false),
            withdrawn: AtomicBool::new(false),
            members,
            directory: self.root.join(group),
            network: self.network.clone(),
            ticks: self
                .ticks
                .get_or_init(|| TickDriver::new(STREAM_HEARTBEAT))
                .clone(),
            meta: self.meta.get().cloned().unwrap_or_default(),
            group: Mutex::new(None),
            machine: Mutex::new(None),
            leadership,
            leader_since: Mutex::new(None),
        });
        {
            let mut groups = self.groups.lock();
            if self.shut.load(Ordering::SeqCst) {
                opened.closed.store(true, Ordering::SeqCst);
            }
            groups.insert(stream.clone(), opened.clone());
        }
        opened
    }

    /// Stops the group of incarnation `created` of `account`'s `stream` (its assignment was
    /// removed or replaced) and deletes its files.
    pub async fn close(&self, account: &str, stream: &str, created: i64) {
        let key = (account.to_string(), stream.to_string());
        let closed = {
            let mut groups = self.groups.lock();
            match groups.get(&key) {
                Some(existing) if existing.created == created => groups.remove(&key),
                _ => None,
            }
        };
        let Some(closed) = closed else {
            return;
        };
        closed.closed.store(true, Ordering::SeqCst);
        closed.stop().await;
        // In the background, after the replica store's own removal (its directory is inside).
        if let Err(error) = nats_store::remove_dir_soon(&closed.directory) {
            tracing::warn!(group = %closed.name, %error, "removing a stream group's files");
        }
    }

    /// Stops the groups of `account`'s streams (an update disabled its JetStream here); their
    /// files stay, for the groups opened again when it is enabled.
    pub async fn stop_account(&self, account: &str) {
        let stopped: Vec<Arc<ReplicatedStream>> = {
            let mut groups = self.groups.lock();
            let keys: Vec<StreamKey> = groups
                .keys()
                .filter(|(owner, _)| owner == account)
                .cloned()
                .collect();
            keys.iter().filter_map(|key| groups.remove(key)).collect()
        };
        for group in stopped {
            group.closed.store(true, Ordering::SeqCst);
            group.stop().await;
        }
    }

    /// The meta group changed the peers of incarnation `created` of `account`'s `stream`: the
    /// group's target membership, which its leader brings the voters to
    /// (`membership::reconcile`, started here).
    pub fn set_peers(&self, account: &str, stream: &str, created: i64, peers: &[String]) {
        let Some(running) = self
            .get(account, stream)
            .filter(|running| running.created == created)
        else {
            return;
        };
        *running.target.lock() = peers
            .iter()
            .filter_map(|peer| peer::node_id(peer))
            .collect();
        tokio::spawn(super::membership::reconcile(running));
    }

    /// How many replicated streams' groups run here.
    pub fn count(&self) -> usize {
        self.groups.lock().len()
    }

    /// Lame duck mode: every group this server leads hands its leadership to a caught-up
    /// voter; waits (bounded by `wait`) until each names another leader. The number handed over.
    pub async fn transfer_leaderships(&self, wait: Duration) -> usize {
        let streams: Vec<Arc<ReplicatedStream>> = self.groups.lock().values().cloned().collect();
        let deadline = tokio::time::Instant::now() + wait;
        let own = self.own_node;
        let mut handovers = tokio::task::JoinSet::new();
        for stream in streams {
            handovers.spawn(async move { stream.hand_over(own, deadline).await });
        }
        let mut moved = 0;
        while let Some(handed) = handovers.join_next().await {
            moved += usize::from(handed.unwrap_or(false));
        }
        moved
    }

    /// Stops every group (server shutdown); their files stay. Each is closed for good first,
    /// so neither a rebuild in flight nor a stream starting its group opened just before
    /// starts it again; a group opened after this is closed from the start.
    pub async fn shutdown(&self) {
        let groups: Vec<Arc<ReplicatedStream>> = {
            let groups = self.groups.lock();
            self.shut.store(true, Ordering::SeqCst);
            groups.values().cloned().collect()
        };
        for group in groups {
            group.closed.store(true, Ordering::SeqCst);
            group.stop().await;
        }
    }
}

/// Where a leader leaving (lame duck mode) hands its leadership: the voter least behind. Under
/// a steady publish load no follower is ever at lag 0; openraft's transfer has the target
/// catch up to the leader's last entry before it takes over.
pub(super) fn handover_target(status: &GroupStatus, own: NodeId) -> Option<NodeId> {
    if status.role != Role::Leader {
        return None;
    }
    status
        .followers
        .iter()
        .filter(|follower| follower.node != own && status.voters.contains(&follower.node))
        .min_by_key(|follower| follower.lag)
        .map(|follower| follower.node)
}

/// One replicated stream's Raft group on this server.
pub struct ReplicatedStream {
    /// The group's name (`S-R3F-…`), the same on every peer.
    name: String,
    /// The stream incarnation the group replicates (its `created`).
    pub(super) created: i64,
    pub(super) node: NodeId,
    /// The founding members (a group this server founds is initialized with them).
    members: Vec<NodeId>,
    /// The members the meta group assigns now: the leader brings the group's voters to these
    /// (`membership.rs`).
    pub(super) target: Mutex<Vec<NodeId>>,
    /// Placed here after the group was founded: join it, never found it.
    joining: bool,
    /// The members that found the group (all but the `joined` peers of its assignment).
    founders: Vec<NodeId>,
    /// The leadership is kept from the stream (`StreamGroup::hold_leadership`).
    held: AtomicBool,
    /// A stepdown's handover runs: set from the stepdown's answer until the stream's requests
    /// are answered again (`StreamGroup::handover`).
    handing_over: watch::Sender<bool>,
    /// The group's own leadership, as `RaftGroup::leading` last said.
    raft_leadership: Mutex<Option<u64>>,
    /// The group's own election, as `RaftGroup::elected` last said.
    raft_elected: AtomicBool,
    /// True from this server's election until it leads no more, unless the leadership is held
    /// (`Replicator::elected`: the stream subscribes its subjects then and holds what arrives
    /// until it leads).
    elected: watch::Sender<bool>,
    /// One membership change at a time (`membership.rs`).
    pub(super) reconciling: tokio::sync::Mutex<()>,
    /// Set once the group is closed for good: a rebuild in flight must not restart it.
    closed: AtomicBool,
    /// A rebuild runs (`rebuild`): another one asked meanwhile is left to it.
    rebuilding: AtomicBool,
    /// The meta group took this server off the stream's peers: its group does not campaign
    /// (`RaftGroup::set_campaigning`), also once restarted by a rebuild.
    withdrawn: AtomicBool,
    directory: PathBuf,
    network: Arc<RouteNetwork>,
    ticks: Arc<TickDriver>,
    meta: Weak<Meta>,
    group: Mutex<Option<Arc<RaftGroup>>>,
    machine: Mutex<Option<ReplicaMachine>>,
    /// `Some(leadership number)` while this server leads and has applied everything before its
    /// leadership (`RaftGroup::leading`: a new number for each leadership, also one resumed in
    /// the same term by a rebuilt group).
    leadership: watch::Sender<Option<u64>>,
    /// When this server's current leadership began.
    leader_since: Mutex<Option<(u64, Timestamp)>>,
}

/// nats-raft's view of the replica.
struct Apply(ReplicaMachine);

impl nats_raft::StateMachine for Apply {
    fn apply(&mut self, _index: u64, payload: Bytes) -> io::Result<()> {
        self.0.apply_committed(&payload)
    }

    fn snapshot(&mut self, out: &mut dyn nats_raft::SnapshotOut) -> io::Result<()> {
        self.0.snapshot(out)
    }

    fn restore(&mut self, snapshot: &mut dyn io::Read) -> io::Result<()> {
        self.0.restore(snapshot)
    }
}

impl ReplicatedStream {
    pub(super) fn raft(&self) -> Option<Arc<RaftGroup>> {
        self.group.lock().clone()
    }

    fn name_of(&self, node: NodeId) -> String {
        match self.meta.upgrade() {
            Some(meta) => meta.name_of(node),
            None => peer::peer_of(node),
        }
    }

    /// Starts (or restarts) the group over `machine` and follows its leadership.
    async fn start_group(self: &Arc<Self>, machine: ReplicaMachine) -> Result<(), String> {
        let mut config = GroupConfig::new(
            self.name.clone(),
            self.node,
            self.members.clone(),
            self.directory.join("raft"),
        );
        // Founded below, once registered, unless peers already run it.
        config.bootstrap = false;
        config.heartbeat_interval = STREAM_HEARTBEAT;
        config.lost_quorum = STREAM_QUORUM_LOST;
        config.tick_driver = Some(self.ticks.clone());
        let state = Box::new(Apply(machine.clone()));
        let group = RaftGroup::start(config, state, self.network.clone())
            .await
            .map_err(|error| error.to_string())?;
        let group = Arc::new(group);
        if self.withdrawn.load(Ordering::Acquire) {
            group.set_campaigning(false);
        }
        self.network.register(group.clone());
        // A new group is founded by its first founder alone: openraft's `initialize` campaigns
        // at once, and founders campaigning together split the first term's votes (no leader
        // until an election timer expires, 2-4 s). The others start it empty and grant that
        // campaign, held by the network until the group runs here if it came first
        // (network.rs, EARLY_VOTE_WAIT); they found it themselves only if nothing reached them
        // for a while (`found_late`). A peer's request before the registration or since (a vote
        // or entries here) means the group already runs there: founding it again would campaign
        // and depose its leader (see RouteNetwork::take_asked).
        let asked = self.network.take_asked(&self.name);
        let status = group.status();
        let fresh = never_started(&status);
        let rank = self
            .founders
            .iter()
            .position(|founder| *founder == self.node);
        match rank {
            Some(0) if fresh && !asked && !self.joining => {
                if let Err(error) = group.initialize(&self.founders).await {
                    tracing::debug!(group = %self.name, %error, "raft initialize skipped");
                }
            }
            Some(rank) if fresh && !self.joining => {
                // The first founder asked here, or placed later: found it after the others.
                let rank = if rank == 0 { self.founders.len() } else { rank };
                tokio::spawn(found_late(
                    Arc::downgrade(self),
                    FOUND_LATE_AFTER * rank as u32,
                ));
            }
            _ if fresh => {
                tracing::info!(group = %self.name, "stream group already runs on peers: joining it");
            }
            _ => {}
        }
        {
            // Checked under the lock `stop` takes: a group closed meanwhile (its stream was
            // removed or placed elsewhere while a rebuild restarted it) is not brought back.
            let mut running = self.group.lock();
            if self.closed.load(Ordering::SeqCst) {
                drop(running);
                self.network.unregister(group.group());
                group.shutdown().await;
                return Err(format!("stream group {} was closed", self.name));
            }
            *running = Some(group.clone());
        }
        *self.machine.lock() = Some(machine);
        relay(
            Arc::downgrade(self),
            group.elected(),
            false,
            |stream, elected| {
                stream.set_raft_elected(elected);
            },
        );
        relay(
            Arc::downgrade(self),
            group.leading(),
            None,
            |stream, leading| {
                stream.leadership_changed(leading);
                if leading.is_some() {
                    // A new leader finishes a membership change its predecessor left.
                    tokio::spawn(super::membership::reconcile(stream.clone()));
                }
            },
        );
        Ok(())
    }

    /// The group's own election, as `RaftGroup::elected` says.
    fn set_raft_elected(&self, elected: bool) {
        self.raft_elected.store(elected, Ordering::SeqCst);
        self.elected_changed();
    }

    fn elected_changed(&self) {
        let elected = self.raft_elected.load(Ordering::SeqCst) && !self.held.load(Ordering::SeqCst);
        self.elected
            .send_if_modified(|current| std::mem::replace(current, elected) != elected);
    }

    fn leadership_changed(&self, leadership: Option<u64>) {
        *self.raft_leadership.lock() = leadership;
        let leadership = leadership.filter(|_| !self.held.load(Ordering::SeqCst));
        {
            let mut since = self.leader_since.lock();
            match leadership {
                Some(leadership) if since.is_none_or(|(known, _)| known != leadership) => {
                    *since = Some((leadership, Timestamp::now()));
                }
                Some(_) => {}
                None => *since = None,
            }
        }
        if leadership.is_some() {
            tracing::info!(group = %self.name, "JetStream cluster new stream leader");
        }
        self.leadership.send_replace(leadership);
    }

    async fn stop(&self) {
        let group = self.group.lock().take();
        if let Some(group) = group {
            self.network.unregister(group.group());
            group.shutdown().await;
        }
        self.set_raft_elected(false);
        self.leadership.send_replace(None);
    }

    /// The replica went ahead of the log: restart the group over an emptied store. On a full
    /// disk the fresh store cannot be made (nor the group's files written): tried again every
    /// [`REBUILD_RETRY`] until it can, so the replica comes back by itself when space returns.
    async fn rebuild(self: Arc<Self>) {
        let Some(machine) = self.machine.lock().clone() else {
            return;
        };
        if self.rebuilding.swap(true, Ordering::SeqCst) {
            // One rebuild at a time: the one running restarts the group.
            return;
        }
        // A leader hands its leadership to a caught-up voter first (its store could not take
        // a write: a full disk), so the stream goes on there at once rather than after an
        // election timeout. Not while its log waits for space: its core is held by that write.
        if let Some(group) = self.raft() {
            let leads = group.status().role == nats_raft::Role::Leader;
            if leads && group.log_stalled().is_none() {
                let deadline = tokio::time::Instant::now() + QUIET_HANDOVER;
                let moved = self.hand_over(self.node, deadline).await;
                tracing::info!(group = %self.name, moved, "leadership handed over before the rebuild");
            }
        }
        self.stop().await;
        let mut reported = false;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                self.rebuilding.store(false, Ordering::SeqCst);
                return;
            }
            let error = match machine.reset() {
                Ok(()) => match self.start_group(machine.clone()).await {
                    Ok(()) => break,
                    Err(error) => format!("stream group not restarted: {error}"),
                },
                Err(error) => format!("stream replica not reset: {error}"),
            };
            if !reported {
                tracing::error!(group = %self.name, %error, "stream replica not rebuilt; trying again until it is");
                reported = true;
            }
            tokio::time::sleep(REBUILD_RETRY).await;
        }
        self.rebuilding.store(false, Ordering::SeqCst);
        if reported {
            tracing::info!(group = %self.name, "stream replica rebuilt");
        }
    }

    /// Hands this server's leadership of the group to a caught-up voter and waits until another
    /// leads, until `deadline`; whether the leadership moved. The stream stops leading first
    /// ([`ReplicatedStream::quiesce`]).
    async fn hand_over(&self, own: NodeId, deadline: tokio::time::Instant) -> bool {
        let elsewhere = |status: &GroupStatus| status.leader.is_some_and(|leader| leader != own);
        let Some(group) = self.raft() else {
            return false;
        };
        if handover_target(&group.status(), own).is_none() {
            return elsewhere(&group.status());
        }
        let remaining = || deadline.saturating_duration_since(tokio::time::Instant::now());
        self.quiesce(&group, remaining().min(QUIET_HANDOVER)).await;
        let mut moved = false;
        for _ in 0..HANDOVER_ATTEMPTS {
            let Some(target) = handover_target(&group.status(), own) else {
                moved = elsewhere(&group.status());
                break;
            };
            let wait = remaining().min(QUIET_HANDOVER);
            if wait.is_zero() || group.transfer_leader(target).await.is_err() {
                break;
            }
            if group.wait_for(wait, elsewhere).await.is_ok() {
                moved = true;
                break;
            }
        }
        self.hold_leadership(false);
        moved
    }

    /// Before a handover: the stream stops leading (no publishes taken, the queued ones refused
    /// with 10009 so their clients retry on the next leader) and what it proposed is applied,
    /// waited for up to `bound`. A publish proposed once the group began its transfer would be
    /// refused, and the replica rebuilt by restarting its group, which ends the transfer: the
    /// successor then waits for entries no one sends, and the stream stays leaderless until an
    /// election. The caller lets go of the leadership again ([`StreamGroup::hold_leadership`]).
    pub(super) async fn quiesce(&self, group: &RaftGroup, bound: Duration) {
        self.hold_leadership(true);
        let started = tokio::time::Instant::now();
        // The ingest task keeps up to two batches in flight and may be deciding the next one:
        // it proposes nothing more once it says so.
        let machine = self.machine.lock().clone();
        if let Some(machine) = machine {
            let _ = tokio::time::timeout(bound, machine.stopped_deciding()).await;
        }
        let settled = |status: &GroupStatus| status.applied >= status.last_log_index;
        let _ = group
            .wait_for(bound.saturating_sub(started.elapsed()), settled)
            .await;
    }

    /// Hands the leadership to `successor` once nothing is in flight here: the stream stops
    /// leading first (no publishes taken, the queued ones refused with 10009 so their clients
    /// retry on the next leader), what it proposed is applied (a batch cut short by the handover
    /// would leave its publishers without a PubAck until their timeout), then the group hands
    /// over, asked again while the successor has not taken over; bounded. The stream leads
    /// again if the group still names this server after all (its group refuses proposals while
    /// a handover is pending: a batch refused so is answered with 10009, see the ingest task).
    pub(super) async fn quiet_handover(&self, group: &RaftGroup, successor: NodeId) {
        self.quiesce(group, QUIET_HANDOVER).await;
        let own = self.node;
        let elsewhere = |status: &GroupStatus| status.leader.is_some_and(|leader| leader != own);
        for _ in 0..HANDOVER_ATTEMPTS {
            if group.transfer_leader(successor).await.is_err()
                || group.wait_for(QUIET_HANDOVER, elsewhere).await.is_ok()
            {
                break;
            }
        }
        self.hold_leadership(false);
    }

    /// Off: this server was taken off the stream's peers, and its group stops campaigning (it
    /// never hears of the membership that leaves it out). On: placed back.
    pub(super) fn set_campaigning(&self, on: bool) {
        self.withdrawn.store(!on, Ordering::Release);
        if let Some(group) = self.raft() {
            group.set_campaigning(on);
        }
    }
}

/// A founder that did not found its new group at start (not its first founder) founds it
/// `after` that, if the group still has no log, no vote and no leader here (nothing of the
/// first founder's campaign reached it): a liveness fallback, the first election otherwise being
/// the first founder's.
async fn found_late(stream: Weak<ReplicatedStream>, after: Duration) {
    tokio::time::sleep(after).await;
    let Some(stream) = stream.upgrade() else {
        return;
    };
    if stream.closed.load(Ordering::SeqCst) || stream.withdrawn.load(Ordering::Acquire) {
        return;
    }
    let Some(group) = stream.raft() else {
        return;
    };
    let status = group.status();
    if !never_started(&status) || status.leader.is_some() {
        return;
    }
    tracing::info!(group = %stream.name, "stream group: no word from its first founder, founding it");
    if let Err(error) = group.initialize(&stream.founders).await {
        tracing::debug!(group = %stream.name, %error, "raft initialize skipped");
    }
}

/// Whether the group never ran on this node: no term, no log, no commit it once knew of.
fn never_started(status: &GroupStatus) -> bool {
    status.term == 0 && status.last_log_index.is_none() && status.protected_until.is_none()
}

/// Removes, in the background, the group directories a stop or a crash left under `root`
/// renamed to a trash name ([`StreamGroups::close`] hands them to nats-store's remover, which
/// may not have finished): nothing else lists `_js_`. Group names never hold a `.`, so a trash
/// name is never a group's.
fn remove_trash(root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if nats_store::is_trash(&entry.file_name().to_string_lossy()) {
            nats_store::remove_leftover(entry.path());
        }
    }
}

/// Hands each value of a group's `watch` to `apply` on the stream while the stream lives, and
/// `closed` once the group's side of the watch is gone (its core stopped).
fn relay<T: Clone + Send + Sync + 'static>(
    stream: Weak<ReplicatedStream>,
    mut watch: watch::Receiver<T>,
    closed: T,
    apply: impl Fn(&Arc<ReplicatedStream>, T) + Send + 'static,
) {
    tokio::spawn(async move {
        loop {
            let value = watch.borrow_and_update().clone();
            let Some(live) = stream.upgrade() else {
                return;
            };
            apply(&live, value);
            drop(live);
            if watch.changed().await.is_err() {
                if let Some(live) = stream.upgrade() {
                    apply(&live, closed);
                }
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::remove_trash;
    use std::time::{Duration, Instant};

    #[test]
    fn a_group_directory_left_in_the_trash_is_removed_at_start_and_groups_stay() {
        let root = tempfile::tempdir().expect("tempdir");
        let trash = root.path().join("S-R3F-abcd1234.deleted.4242.7");
        let group = root.path().join("S-R3F-keep5678");
        for dir in [&trash, &group] {
            std::fs::create_dir_all(dir.join("store/streams/ORDERS")).expect("dirs");
            std::fs::write(dir.join("store/streams/ORDERS/000000000001.blk"), b"x").expect("file");
        }
        remove_trash(root.path());
        let deadline = Instant::now() + Duration::from_secs(10);
        while trash.exists() {
            assert!(Instant::now() < deadline, "{} still there", trash.display());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(group.join("store/streams/ORDERS/000000000001.blk").exists());
    }
}

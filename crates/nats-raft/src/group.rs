//! [`RaftGroup`]: one Raft group on this node (start/stop, propose, membership, leader transfer),
//! its supervision and its commit-index protection. What it reports about itself is in
//! `group/status.rs`, a peer's message to it in `group/dispatch.rs`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::impls::EmptyNode;
use openraft::{ChangeMembers, Raft};
use tokio::sync::watch;

use crate::config::GroupConfig;
use crate::log_file::TornTail;
use crate::log_store::{LogStore, OpenReport, Shared};
use crate::network::{Network, NetworkFactory};
use crate::state_machine::{StateMachine, StateMachineAdapter};
use crate::types::{NodeId, Proposal, TypeConfig};

mod dispatch;
mod lost_leader;
mod restarted_leader;
mod status;

pub use lost_leader::OVERRIDE_MARGIN;
pub use status::{FollowerProgress, GroupStatus, LogCounters, LogSize, Role};

/// How long a shutdown waits for openraft's state machine worker to quit.
const MACHINE_STOP_WAIT: Duration = Duration::from_secs(10);

/// Errors of group operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RaftGroupError {
    /// The configuration was refused.
    #[error("invalid raft config: {0}")]
    Config(String),
    /// Opening or reading the group's files failed.
    #[error("raft storage: {0}")]
    Storage(String),
    /// This node is not the leader (or is handing the leadership over); `leader` is the
    /// current one if known. A proposal refused so never reached the log.
    #[error("not the leader (leader: {leader:?})")]
    NotLeader { leader: Option<NodeId> },
    /// The proposal reached this node's log, then a leader change discarded it here: it may
    /// still commit through the next leader (its outcome is unknown).
    #[error("proposal discarded on a leader change, outcome unknown (leader: {leader:?})")]
    Discarded { leader: Option<NodeId> },
    /// The group's core stopped (a storage error or a panic); restart it from its directory.
    #[error("raft group offline: {0}")]
    Offline(String),
    /// A membership change was refused.
    #[error("membership change refused: {0}")]
    Membership(String),
    /// A condition was not reached in time.
    #[error("timed out waiting for the group")]
    Timeout,
}

/// A submitted proposal's wait for its commit ([`RaftGroup::submit`]).
pub type Committing =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<u64, RaftGroupError>> + Send>>;

/// The reply to a leader's append handed to the group ([`RaftGroup::submit_append`]), ready once
/// its entries are on this node's disk.
pub type AppendReply = std::pin::Pin<Box<dyn std::future::Future<Output = Bytes> + Send>>;

/// What the log looked like when the group started.
#[derive(Debug, Clone)]
pub struct RecoveryReport {
    /// The first bad record, if the log had to be cut.
    pub torn_tail: Option<TornTail>,
    pub last_index: Option<u64>,
    /// The commit index recorded before the restart.
    pub recorded_commit: Option<u64>,
}

pub(crate) struct Supervision {
    stopping: AtomicBool,
    pub(crate) offline: watch::Sender<Option<String>>,
    /// 0: not protected; otherwise the index to reach before voting or leading.
    protected_until: AtomicU64,
    /// The application took this node out of the group ([`RaftGroup::set_campaigning`]).
    withdrawn: AtomicBool,
}

/// openraft's refusal or failure of a write.
type WriteError =
    openraft::errors::RaftError<TypeConfig, openraft::errors::ClientWriteError<TypeConfig>>;

impl Supervision {
    /// A refused or failed write, as the group's error.
    fn write_error(&self, error: WriteError) -> RaftGroupError {
        use openraft::errors::{ClientWriteError, RaftError};
        match error {
            RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => {
                RaftGroupError::NotLeader {
                    leader: forward.leader_id,
                }
            }
            RaftError::APIError(ClientWriteError::LogEntryDiscarded(forward)) => {
                RaftGroupError::Discarded {
                    leader: forward.leader_id,
                }
            }
            RaftError::Fatal(fatal) => self.offline_error(fatal.to_string()),
            RaftError::APIError(api) => RaftGroupError::Membership(api.to_string()),
        }
    }

    /// The group is offline: the reason recorded, or `fallback`.
    fn offline_error(&self, fallback: String) -> RaftGroupError {
        RaftGroupError::Offline(self.offline.borrow().clone().unwrap_or(fallback))
    }

    fn may_campaign(&self) -> bool {
        self.protected_until.load(Ordering::Acquire) == 0 && !self.withdrawn.load(Ordering::Acquire)
    }
}

/// One Raft group on this node.
pub struct RaftGroup {
    raft: Raft<TypeConfig, StateMachineAdapter>,
    group: Arc<str>,
    node_id: NodeId,
    network: Arc<dyn Network>,
    log: Arc<Shared>,
    supervision: Arc<Supervision>,
    membership_changes: tokio::sync::Mutex<()>,
    recovery: RecoveryReport,
    leader_contact: Arc<crate::leader_contact::LeaderContact>,
    /// The group's place in the node's tick driver, if it has one (given up at shutdown).
    driven: std::sync::Mutex<Option<Arc<crate::tick_driver::Driven>>>,
    leading_since: Arc<crate::leading_since::LeadingSince>,
    lease: Arc<crate::lease::LeaderLease>,
    lost_quorum: Duration,
    /// When this group started here: a voter restarted since it last acknowledged a leader
    /// counts that leader's lease from no earlier than this ([`OVERRIDE_MARGIN`]).
    started: tokio::time::Instant,
    resumed_needs_quorum: bool,
    /// The snapshot being received in chunks from the leader, if any.
    incoming_snapshot: Arc<crate::snapshot_chunks::Incoming>,
    /// Resolves once openraft's state machine worker has dropped the application's machine.
    machine_gone: tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

fn storage_error(error: impl std::fmt::Display) -> RaftGroupError {
    RaftGroupError::Storage(error.to_string())
}

impl RaftGroup {
    /// Opens the group's directory (recovering its log), restores the application from the last
    /// snapshot and starts the Raft core. Must run inside a tokio runtime.
    pub async fn start(
        config: GroupConfig,
        state_machine: Box<dyn StateMachine>,
        network: Arc<dyn Network>,
    ) -> Result<RaftGroup, RaftGroupError> {
        let started = tokio::time::Instant::now();
        let mut raft_config = config.raft_config()?;
        let directory = config.directory.clone();
        let (alive, machine_gone) = tokio::sync::oneshot::channel();
        let opened = tokio::task::spawn_blocking(move || {
            let (store, shared, report) = LogStore::open(&directory)?;
            let adapter = StateMachineAdapter::open(&directory, state_machine, alive)?;
            Ok::<_, std::io::Error>((store, shared, report, adapter))
        })
        .await
        .map_err(storage_error)?;
        let (store, log, report, adapter) = opened.map_err(storage_error)?;
        let OpenReport {
            torn_tail,
            last_index,
            recorded_commit,
        } = report;
        if let Some(tail) = &torn_tail {
            tracing::warn!(group = %config.group, ?tail, "raft log had a bad record; cut there");
        }
        // Commit-index protection: the log ends before what this node once knew was committed.
        let protected_until = match (recorded_commit, last_index) {
            (Some(commit), Some(last)) if commit > last => commit,
            (Some(commit), None) => commit.max(1),
            _ => 0,
        };
        // A node that led before it stopped does not resume its leadership at start-up
        // (openraft's leader restore, on by default, is off): it comes back a follower and leads
        // again only through an election, in a new term. A leader sends entries to its followers
        // before its own fdatasync covers them, so a quorum of followers may commit an entry the
        // leader then loses to a power cut; resuming the same term, it appended a different entry
        // at that index, which the followers took for the one they held (the same term and
        // index), and their state machines stopped on the sequence mismatch (parity cluster
        // power_loss, about 1 in 35 cuts of all three nodes). The same holds for a log cut
        // before its recorded commit (commit-index protection below).
        raft_config.enable_leader_restore = Some(false);
        let raft_config = Arc::new(raft_config);
        let group: Arc<str> = Arc::from(config.group.as_str());
        let factory = NetworkFactory {
            group: group.clone(),
            network: network.clone(),
        };
        let raft = Raft::build(config.node_id, raft_config, factory, store, adapter)
            .await
            .map_err(|fatal| RaftGroupError::Offline(fatal.to_string()))?;
        let (offline, _) = watch::channel(None);
        let supervision = Arc::new(Supervision {
            stopping: AtomicBool::new(false),
            offline,
            protected_until: AtomicU64::new(protected_until),
            withdrawn: AtomicBool::new(false),
        });
        if protected_until > 0 {
            tracing::warn!(
                group = %config.group,
                recorded_commit = protected_until,
                ?last_index,
                "raft log ends before its recorded commit: not voting or leading until caught up"
            );
            raft.runtime_config().elect(false);
        }
        raft.run();
        // A sole voter elects itself at once instead of waiting out an election timeout. A node
        // of a larger group that led comes back a follower and campaigns with a pre-vote as soon
        // as it reaches a peer (`restarted_leader.rs`): granted only by peers still following it.
        let sole_voter = {
            let metrics = raft.metrics().borrow_watched().clone();
            let voters: Vec<NodeId> = metrics.membership_config.membership().voter_ids().collect();
            voters == [config.node_id]
        };
        if sole_voter && protected_until == 0 {
            if let Err(error) = raft.trigger().elect(false).await {
                tracing::debug!(group = %config.group, %error, "campaign at start-up refused");
            }
        } else if protected_until == 0 {
            restarted_leader::campaign(
                raft.clone(),
                network.clone(),
                Arc::from(config.group.as_str()),
                config.node_id,
                supervision.clone(),
            );
        }
        spawn_supervisor(raft.clone(), supervision.clone(), group.clone());
        let leader_contact = Arc::new(crate::leader_contact::LeaderContact::new());
        let driven = match &config.tick_driver {
            Some(driver) if driver.heartbeat() != config.heartbeat_interval => {
                return Err(RaftGroupError::Config(format!(
                    "tick driver interval {:?} differs from the heartbeat interval {:?}",
                    driver.heartbeat(),
                    config.heartbeat_interval
                )));
            }
            Some(driver) => driver
                .fresh_window(config.election_timeout.0)
                .map(|fresh| driver.register(raft.clone(), leader_contact.clone(), fresh)),
            None => None,
        };
        let leading_since = Arc::new(crate::leading_since::LeadingSince::default());
        let lease = Arc::new(crate::lease::LeaderLease::new());
        leading_since.watch(&raft, lease.clone(), config.lost_quorum);
        crate::stall_handover::StallHandover {
            raft: raft.clone(),
            network: network.clone(),
            group: group.clone(),
            node_id: config.node_id,
            lease: lease.clone(),
        }
        .spawn(log.stalled.subscribe());
        let this = RaftGroup {
            raft,
            group,
            node_id: config.node_id,
            network,
            log,
            supervision,
            membership_changes: tokio::sync::Mutex::new(()),
            lost_quorum: config.lost_quorum,
            started,
            resumed_needs_quorum: config.resumed_needs_quorum,
            machine_gone: tokio::sync::Mutex::new(Some(machine_gone)),
            incoming_snapshot: Arc::new(crate::snapshot_chunks::Incoming::new(
                config.directory.clone(),
            )),
            recovery: RecoveryReport {
                torn_tail,
                last_index,
                recorded_commit,
            },
            leader_contact,
            driven: std::sync::Mutex::new(driven),
            leading_since,
            lease,
        };
        if config.bootstrap && last_index.is_none() && protected_until == 0 {
            let members: BTreeSet<NodeId> = config.members.iter().copied().collect();
            // Refused when already initialised (e.g. a peer's log reached us first): not an error.
            if let Err(error) = this.raft.initialize(members).await {
                tracing::debug!(group = %this.group, %error, "raft initialize skipped");
            }
        }
        Ok(this)
    }

    /// Founds the group with `members` now, when it was started without `bootstrap` (the
    /// application decided later who the founders are). Refused once the group has a log.
    pub async fn initialize(&self, members: &[NodeId]) -> Result<(), RaftGroupError> {
        self.check_online()?;
        let members: BTreeSet<NodeId> = members.iter().copied().collect();
        self.raft
            .initialize(members)
            .await
            .map_err(|error| RaftGroupError::Membership(error.to_string()))
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// What recovery found when the group started.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Appends `payload` to the log; resolves once it is committed (on a quorum's disks) and
    /// applied here, with its log index. Concurrent proposals are batched into shared appends and
    /// fsyncs. Only the leader accepts proposals.
    ///
    /// While this node's log waits for space (a full disk, see `log_store.rs`) a proposal is
    /// refused at once with [`RaftGroupError::Storage`] and the operating system's reason, and
    /// one in flight when the log stalls is answered so too: it may still commit through the
    /// next leader (as [`RaftGroupError::Discarded`]), but its caller is not kept waiting.
    pub async fn propose(&self, payload: Bytes) -> Result<u64, RaftGroupError> {
        self.submit(payload, None).await?.1.await
    }

    /// Hands `payload` to the group's core and returns once the core has it, with the Raft term
    /// it goes in and the wait for its commit (resolving as [`RaftGroup::propose`] does).
    /// Proposals submitted one after another enter the log in that order, so a leader may keep
    /// several in flight. With `term`, the proposal enters the log only if this node still
    /// leads in that term (refused as not the leader otherwise): a proposal decided on top of
    /// earlier ones still in flight must not commit under another leadership than theirs.
    pub async fn submit(
        &self,
        payload: Bytes,
        term: Option<u64>,
    ) -> Result<(u64, Committing), RaftGroupError> {
        self.check_online()?;
        let mut stalled = self.log.stalled.subscribe();
        if let Some(reason) = stalled.borrow_and_update().clone() {
            return Err(RaftGroupError::Storage(reason));
        }
        let term = match term {
            Some(term) => term,
            None => {
                let metrics = self.raft.metrics();
                let metrics = metrics.borrow_watched();
                if metrics.current_leader != Some(self.node_id) {
                    return Err(RaftGroupError::NotLeader {
                        leader: metrics.current_leader,
                    });
                }
                metrics.current_term
            }
        };
        crate::timeline::step!(self.group, "propose bytes={}", payload.len());
        let (responder, receiver) = openraft::impls::ProgressResponder::complete_only();
        let leader = crate::types::LeaderId {
            term,
            node_id: self.node_id,
        };
        if let Err(fatal) = self
            .raft
            .write(Proposal(payload))
            .responder(responder)
            .with_leader(leader)
            .await
        {
            return Err(self.supervision.offline_error(fatal.to_string()));
        }
        let supervision = self.supervision.clone();
        let group = self.group.clone();
        let commit = async move {
            tokio::select! {
                written = receiver => match written {
                    Ok(Ok(response)) => {
                        crate::timeline::step!(group, "committed index={}", response.log_id().index);
                        Ok(response.log_id().index)
                    }
                    Ok(Err(error)) => {
                        Err(supervision.write_error(openraft::errors::RaftError::APIError(error)))
                    }
                    Err(_) => Err(supervision.offline_error("raft core stopped".to_string())),
                },
                Ok(stalled) = stalled.wait_for(Option::is_some) => {
                    Err(RaftGroupError::Storage(stalled.clone().unwrap_or_default()))
                }
            }
        };
        Ok((term, Box::pin(commit)))
    }

    /// Why this node's log waits for space, while it does (see `log_store.rs`).
    pub fn log_stalled(&self) -> Option<String> {
        self.log.stalled.borrow().clone()
    }

    fn map_write_error(&self, error: WriteError) -> RaftGroupError {
        self.supervision.write_error(error)
    }

    fn offline_error(&self, fallback: String) -> RaftGroupError {
        self.supervision.offline_error(fallback)
    }

    fn check_online(&self) -> Result<(), RaftGroupError> {
        match self.supervision.offline.borrow().clone() {
            Some(reason) => Err(RaftGroupError::Offline(reason)),
            None => Ok(()),
        }
    }

    /// `Some(leadership)` while this node leads for the application: it is the leader, has
    /// applied everything its log held when that leadership began (every entry committed by
    /// earlier leaders is applied here too: from then on the application may decide on its
    /// applied state) and has heard from a quorum within [`GroupConfig::lost_quorum`]. `None`
    /// otherwise (and once the core stops). A leader cut off from its quorum thus stops taking
    /// work within that interval, as a nats-server leader steps down. The number is unique to
    /// each leadership (a new term, a term resumed by a restarted group, a quorum regained), so
    /// a watcher can tell a new leadership from the one it knew (`leadership.rs`).
    pub fn leading(&self) -> watch::Receiver<Option<u64>> {
        crate::leadership::watch(
            &self.raft,
            self.supervision.clone(),
            self.log.stalled.subscribe(),
            self.lost_quorum,
            self.resumed_needs_quorum,
        )
    }

    /// True from the moment this node wins an election until it leads no more: also before
    /// [`RaftGroup::leading`] says it leads (its election's entry not yet committed and
    /// applied), for at most [`GroupConfig::lost_quorum`] then (`leadership.rs`
    /// `elected_watch`). An application makes itself reachable with it and holds what arrives
    /// until it leads.
    pub fn elected(&self) -> watch::Receiver<bool> {
        crate::leadership::elected_watch(
            &self.raft,
            self.supervision.clone(),
            self.log.stalled.subscribe(),
            self.lost_quorum,
            self.resumed_needs_quorum,
        )
    }

    /// This group's leader lease (`lease.rs`): whether, by the clock now, this node leads on a
    /// quorum's word heard within [`GroupConfig::lost_quorum`]. One atomic load per check, for
    /// work a deposed leader must not do even before [`RaftGroup::leading`]'s watch says so
    /// (a paused process resumes with its watchers not yet run).
    pub fn lease(&self) -> Arc<crate::lease::LeaderLease> {
        self.lease.clone()
    }

    /// Resolves with the reason when the group goes offline.
    pub fn offline_watch(&self) -> watch::Receiver<Option<String>> {
        self.supervision.offline.subscribe()
    }

    /// Asks the leader (this node) to hand leadership to `to`.
    pub async fn transfer_leader(&self, to: NodeId) -> Result<(), RaftGroupError> {
        self.check_online()?;
        if self.status().role != Role::Leader {
            return Err(RaftGroupError::NotLeader {
                leader: self.status().leader,
            });
        }
        self.raft
            .trigger()
            .transfer_leader(to)
            .await
            .map_err(|fatal| self.offline_error(fatal.to_string()))
    }

    /// Adds `node` as a voter: first as a learner that catches up, then promoted. Membership
    /// changes of one group run one at a time.
    pub async fn add_member(&self, node: NodeId) -> Result<(), RaftGroupError> {
        self.check_online()?;
        let _serialised = self.membership_changes.lock().await;
        self.raft
            .add_learner(node, EmptyNode {}, true)
            .await
            .map_err(|error| self.map_write_error(error))?;
        self.raft
            .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([node])), false)
            .await
            .map_err(|error| self.map_write_error(error))?;
        Ok(())
    }

    /// Removes `node` from the group (voter or learner).
    pub async fn remove_member(&self, node: NodeId) -> Result<(), RaftGroupError> {
        self.check_online()?;
        let _serialised = self.membership_changes.lock().await;
        self.raft
            .change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([node])), false)
            .await
            .map_err(|error| self.map_write_error(error))?;
        Ok(())
    }

    /// Builds a snapshot now (normally automatic after `snapshot_after_entries`).
    pub async fn snapshot_now(&self) -> Result<(), RaftGroupError> {
        self.raft
            .trigger()
            .snapshot()
            .await
            .map_err(|fatal| self.offline_error(fatal.to_string()))
    }

    /// Turns the group's timers (ticks, heartbeats, elections) on or off at runtime, to quiesce an
    /// idle group. While off, a leader failure goes unnoticed until they are turned back on.
    pub fn set_active(&self, active: bool) {
        let runtime = self.raft.runtime_config();
        runtime.tick(active);
        runtime.heartbeat(active);
        runtime.elect(active && self.supervision.may_campaign());
    }

    /// Whether this node may campaign for the group (`false`: it never starts an election,
    /// neither on its timer nor on [`RaftGroup::leader_unreachable`]; it still answers its
    /// leader and votes). For a node the application took out of the group: a removed member
    /// never receives the membership that leaves it out (the leader stops sending to it), so
    /// without this it would campaign alone, and, placed back, its higher term would depose
    /// the leader. Placed back, it campaigns again.
    pub fn set_campaigning(&self, on: bool) {
        self.supervision.withdrawn.store(!on, Ordering::Release);
        self.raft
            .runtime_config()
            .elect(self.supervision.may_campaign());
    }

    /// Stops the group; its directory can be started again.
    pub async fn shutdown(&self) {
        self.supervision.stopping.store(true, Ordering::Release);
        if let Ok(mut driven) = self.driven.lock() {
            driven.take();
        }
        if let Err(error) = self.raft.shutdown().await {
            tracing::debug!(group = %self.group, %error, "raft core ended with an error on shutdown");
        }
        // openraft's core returns before its state machine worker has quit, and that worker may
        // still be applying committed entries: an application that rebuilds its state and starts
        // the group again must not see a late apply of the old one (it filled a replica's fresh
        // store with the tail of the log before the new group re-applied it from the start).
        if let Some(gone) = self.machine_gone.lock().await.take() {
            if tokio::time::timeout(MACHINE_STOP_WAIT, gone).await.is_err() {
                tracing::warn!(group = %self.group, "raft state machine worker still running after shutdown");
            }
        }
    }
}

/// Watches the core: when it exits without a shutdown request, the group is marked offline with
/// the reason and the error is logged. Also lifts the commit-index protection once caught up.
fn spawn_supervisor(
    raft: Raft<TypeConfig, StateMachineAdapter>,
    supervision: Arc<Supervision>,
    group: Arc<str>,
) {
    tokio::spawn(async move {
        let mut metrics = raft.metrics();
        // Protection: wait until the commit index reaches the recorded one.
        let target = supervision.protected_until.load(Ordering::Acquire);
        if target > 0 {
            loop {
                let committed = metrics
                    .borrow_watched()
                    .local_committed
                    .as_ref()
                    .map(|log_id| log_id.index);
                if committed.is_some_and(|index| index >= target) {
                    supervision.protected_until.store(0, Ordering::Release);
                    raft.runtime_config().elect(supervision.may_campaign());
                    tracing::info!(%group, target, "raft log caught up past its recorded commit; voting again");
                    break;
                }
                if metrics.changed().await.is_err() {
                    break;
                }
            }
        }
        let mut server_metrics = raft.server_metrics();
        while server_metrics.changed().await.is_ok() {}
        if supervision.stopping.load(Ordering::Acquire) {
            return;
        }
        let reason = match &metrics.borrow_watched().running_state {
            Err(fatal) => format!("raft core stopped: {fatal}"),
            Ok(()) => "raft core stopped unexpectedly".to_string(),
        };
        tracing::error!(%group, %reason, "raft group offline");
        supervision.offline.send_replace(Some(reason));
    });
}

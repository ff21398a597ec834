//! nats-jetstream's side of a replicated stream's Raft group: the seams it reaches the group
//! through. The stream proposes and follows its leadership through a [`Replicator`]
//! (`GroupReplicator`: proposals, the leadership watch, rebuilds, the leader lease its consumers
//! check, the feature gate for binary consumer records); the API reads and steers the group through
//! [`StreamGroup`] (`impl StreamGroup for ReplicatedStream`: leadership, how long it has been
//! leaderless, waiting for the first leader, STREAM.INFO's `cluster` block as nats-server fills
//! it, holding the leadership from the stream, STREAM.LEADER.STEPDOWN). The group itself (start,
//! rebuild, handovers) is in `stream_group.rs`.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jetstream_api::{errors, ApiError, ClusterInfo, Nanos, PeerInfo};
use nats_jetstream::{
    GroupFuture, Lease, NoLease, ProposeFuture, ReplicaMachine, ReplicationError, Replicator,
    StreamGroup, SubmitFuture,
};
use nats_raft::{GroupStatus, NodeId, RaftGroupError, Role};
use tokio::sync::watch;

use super::ReplicatedStream;
use crate::cluster::features::Feature;
use crate::cluster::peer;

/// A peer heard from within this long counts as current (nats-server: the leader's heartbeat
/// interval several times over).
const CURRENT_WINDOW: Duration = Duration::from_secs(10);
/// A new stream's other leader counts as leading steadily while heard from within this (two
/// of its heartbeats, `STREAM_HEARTBEAT`, and some) ...
const OTHER_LEADER_CONTACT: Duration = Duration::from_millis(2200);
/// ... for this long; then it has answered the stream's creation and this server stops waiting.
const OTHER_LEADER_STEADY: Duration = Duration::from_millis(2500);

impl ReplicatedStream {
    /// One replica entry (`PeerInfo`) as the leader sees it (and a follower its leader).
    fn replica(&self, node: NodeId, lag: Option<u64>) -> PeerInfo {
        let peer = peer::peer_of(node);
        let seen = self.network.last_seen(&peer);
        let recent = seen.is_some_and(|at| at.elapsed() < CURRENT_WINDOW);
        PeerInfo {
            name: self.name_of(node),
            current: recent && lag == Some(0),
            offline: seen.is_none_or(|at| at.elapsed() >= CURRENT_WINDOW),
            active: Nanos(seen.map_or(0, |at| {
                i64::try_from(Instant::now().duration_since(at).as_nanos()).unwrap_or(i64::MAX)
            })),
            lag: lag.unwrap_or(0),
            peer,
            pending: false,
        }
    }
}

/// The stream's side: proposals and leadership.
struct GroupReplicator(Arc<ReplicatedStream>);

impl Replicator for GroupReplicator {
    fn submit(&self, batch: Bytes, term: Option<u64>) -> SubmitFuture {
        let group = self.0.raft();
        Box::pin(async move {
            let Some(group) = group else {
                return Err(ReplicationError::NotLeader);
            };
            let (term, committing) = group.submit(batch, term).await.map_err(replication_error)?;
            let commit: ProposeFuture =
                Box::pin(async move { committing.await.map(drop).map_err(replication_error) });
            Ok((term, commit))
        })
    }

    fn leadership(&self) -> watch::Receiver<Option<u64>> {
        self.0.leadership.subscribe()
    }

    fn elected(&self) -> watch::Receiver<bool> {
        self.0.elected.subscribe()
    }

    fn rebuilt(&self) {
        tokio::spawn(self.0.clone().rebuild());
    }

    fn lease(&self) -> Arc<dyn Lease> {
        match self.0.raft() {
            Some(group) => Arc::new(RaftLease(group.lease())),
            None => Arc::new(NoLease),
        }
    }

    fn binary_consumer_records(&self) -> bool {
        self.0.reads(Feature::BinaryConsumerRecords)
    }
}

/// A proposal's failure, as the stream sees it.
fn replication_error(error: RaftGroupError) -> ReplicationError {
    match error {
        RaftGroupError::NotLeader { .. } => ReplicationError::NotLeader,
        RaftGroupError::Discarded { .. } => ReplicationError::Discarded,
        RaftGroupError::Storage(reason) => ReplicationError::NoSpace(reason),
        error => ReplicationError::Failed(error.to_string()),
    }
}

/// The group's leader lease, as the stream's consumers read it.
struct RaftLease(Arc<nats_raft::LeaderLease>);

impl Lease for RaftLease {
    fn holds(&self) -> bool {
        self.0.holds()
    }
}

impl ReplicatedStream {
    /// Whether every member of the group (the assigned peers, and the group's voters and
    /// learners while a change is under way) reads `feature` (`features.rs`).
    fn reads(&self, feature: Feature) -> bool {
        let mut members: std::collections::BTreeSet<NodeId> =
            self.target.lock().iter().copied().collect();
        if let Some(group) = self.raft() {
            let status = group.status();
            members.extend(status.members());
        }
        self.meta
            .upgrade()
            .is_some_and(|meta| meta.reads(feature, members))
    }
}

impl StreamGroup for ReplicatedStream {
    fn replicator(self: Arc<Self>) -> Arc<dyn Replicator> {
        Arc::new(GroupReplicator(self))
    }

    fn store_root(&self) -> PathBuf {
        self.directory.join("store")
    }

    fn start(self: Arc<Self>, machine: ReplicaMachine) -> GroupFuture<Result<(), String>> {
        Box::pin(async move { self.start_group(machine).await })
    }

    fn is_leader(&self) -> bool {
        self.leadership.borrow().is_some()
    }

    fn is_elected(&self) -> bool {
        self.raft()
            .is_some_and(|group| group.status().role == Role::Leader)
    }

    fn leading_since(&self) -> Option<Instant> {
        // The group's leadership in its term, as nats-raft saw it taken (`None` while this node
        // is not openraft's leader): it precedes `is_leader`, and a leadership that lapsed for
        // want of a quorum's word, and came back in the same term or not yet (a loaded machine,
        // paused followers), counts from its start.
        let led_for = self.raft()?.status().led_for?;
        Instant::now().checked_sub(led_for)
    }

    fn leaderless_for(&self) -> Option<Duration> {
        if self.is_leader() {
            return None;
        }
        let status = self.raft()?.status();
        // A member never heard from (this server just started) proves nothing yet.
        let since_heard = |node: NodeId| {
            self.network
                .last_seen(&peer::peer_of(node))
                .map_or(Duration::ZERO, |at| at.elapsed())
        };
        // Hearing from any other member means a leader is elected or being elected there.
        let heard_any = status
            .voters
            .iter()
            .filter(|node| **node != self.node)
            .map(|node| since_heard(*node))
            .min()
            .unwrap_or_default();
        let leaderless = match status.leader {
            // Leading in openraft without a quorum's acknowledgement (`leading` gave up).
            Some(leader) if leader == self.node => status.without_quorum_for().unwrap_or_default(),
            Some(leader) => since_heard(leader),
            None => heard_any,
        }
        .min(heard_any);
        // A member routed to us (a route coming back, or a hung one) may lead or answer there.
        let cut_off = status
            .voters
            .iter()
            .filter(|node| **node != self.node)
            .all(|node| !self.network.routed(&peer::peer_of(*node)));
        (cut_off && !leaderless.is_zero()).then_some(leaderless)
    }

    fn wait_for_leader(self: Arc<Self>, timeout: Duration) -> GroupFuture<Option<bool>> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            let mut leadership = self.leadership.subscribe();
            let mut steady_other: Option<(NodeId, tokio::time::Instant)> = None;
            loop {
                // This server leads, and a quorum acknowledged it: until then openraft refuses
                // its writes (the leader lease), and a publish sent on the answer would get
                // 10009 where nats-server's new leader takes it.
                if leadership.borrow_and_update().is_some()
                    && self.raft().is_none_or(|group| {
                        let status = group.status();
                        status.voters.len() <= 1 || status.quorum_acked.is_some()
                    })
                {
                    return Some(true);
                }
                // Another server leads: it answers, once it has led steadily (heard from within
                // a heartbeat or two) for a while. A leader seen only for a moment may lose
                // the role before it answered (a new group's first leader, beaten by a vote
                // of the same term 8 ms after its election, left a create unanswered while
                // the others had stopped waiting), so until then this server waits on, and
                // answers if it is elected itself.
                let now = tokio::time::Instant::now();
                let other = self.raft().and_then(|group| {
                    let leader = group
                        .status()
                        .leader
                        .filter(|leader| *leader != self.node)?;
                    group.is_current(OTHER_LEADER_CONTACT).then_some(leader)
                });
                match (other, steady_other) {
                    (Some(leader), Some((seen, since))) if leader == seen => {
                        if now.duration_since(since) >= OTHER_LEADER_STEADY {
                            return Some(false);
                        }
                    }
                    (Some(leader), _) => steady_other = Some((leader, now)),
                    (None, _) => steady_other = None,
                }
                let wake = now + Duration::from_millis(50);
                if wake > deadline {
                    return None;
                }
                let _ = tokio::time::timeout_at(wake, leadership.changed()).await;
            }
        })
    }

    fn cluster_info(&self) -> Option<ClusterInfo> {
        let group = self.raft()?;
        let status = group.status();
        let meta = self.meta.upgrade()?;
        if status.voters.len() <= 1 {
            // A stream scaled down to R1 keeps a one-member group (docs/parity.md); it is shown as
            // nats-server shows an R1 stream: the cluster's name and its server, nothing more.
            return Some(ClusterInfo {
                name: meta.cluster_name.clone(),
                leader: status
                    .leader
                    .map(|leader| self.name_of(leader))
                    .unwrap_or_default(),
                ..Default::default()
            });
        }
        let mut info = ClusterInfo {
            name: meta.cluster_name.clone(),
            raft_group: self.name.clone(),
            system_account: true,
            traffic_account: meta.system_account_name(),
            ..Default::default()
        };
        if self
            .leaderless_for()
            .is_some_and(|age| age >= nats_jetstream::cluster::LEADERLESS_ANSWER)
        {
            // As nats-server: no leader named, and every member listed, this one included.
            let mut replicas: Vec<PeerInfo> = status
                .voters
                .iter()
                .map(|node| {
                    if *node == self.node {
                        PeerInfo {
                            name: self.name_of(*node),
                            current: true,
                            peer: peer::peer_of(*node),
                            ..Default::default()
                        }
                    } else {
                        self.replica(*node, None)
                    }
                })
                .collect();
            replicas.sort_by(|a, b| a.name.cmp(&b.name));
            info.replicas = replicas;
            return Some(info);
        }
        if let Some(leader) = status.leader {
            info.leader = self.name_of(leader);
        }
        if status.role == Role::Leader {
            info.leader_since = self.leader_since.lock().map(|(_, since)| since);
            let mut replicas: Vec<PeerInfo> = status
                .voters
                .iter()
                .filter(|node| **node != self.node)
                .map(|node| {
                    let lag = status
                        .followers
                        .iter()
                        .find(|follower| follower.node == *node)
                        .map(|follower| follower.lag);
                    self.replica(*node, lag)
                })
                .collect();
            replicas.sort_by(|a, b| a.name.cmp(&b.name));
            info.replicas = replicas;
        } else if let Some(leader) = status.leader {
            // A follower lists every other member too, as a nats-server follower does: the
            // leader as last heard from, the other followers (whose progress it does not
            // follow) as not current, never active.
            let mut replicas: Vec<PeerInfo> = status
                .voters
                .iter()
                .filter(|node| **node != self.node)
                .map(|node| {
                    if *node == leader {
                        self.replica(*node, Some(0))
                    } else {
                        PeerInfo {
                            name: self.name_of(*node),
                            peer: peer::peer_of(*node),
                            ..Default::default()
                        }
                    }
                })
                .collect();
            replicas.sort_by(|a, b| a.name.cmp(&b.name));
            info.replicas = replicas;
        }
        Some(info)
    }

    fn handover(&self) -> Option<GroupFuture<()>> {
        let mut handing_over = self.handing_over.subscribe();
        if !*handing_over.borrow_and_update() {
            return None;
        }
        // Also over when the group is dropped (the sender with it).
        Some(Box::pin(async move {
            let _ = handing_over.wait_for(|on| !on).await;
        }))
    }

    fn hold_leadership(&self, held: bool) {
        self.held.store(held, Ordering::SeqCst);
        self.elected_changed();
        let leadership = *self.raft_leadership.lock();
        self.leadership_changed(leadership);
    }

    fn step_down(self: Arc<Self>, preferred: Option<String>) -> GroupFuture<Result<(), ApiError>> {
        Box::pin(async move {
            let group = self
                .raft()
                .ok_or_else(|| errors::CLUSTER_NOT_LEADER.to_error())?;
            let status = group.status();
            if status.role != Role::Leader {
                return Err(errors::CLUSTER_NOT_LEADER.to_error());
            }
            let target = self.step_down_target(preferred, &status)?;
            // Answered once the stream stopped taking publishes, as nats-server answers once its
            // node stepped down: the handover (what is in flight proposed and applied first,
            // then the transfer) goes on behind the answer. It took 3-95 ms in a debug build and
            // was the whole of the answer's delay (issue 20); a publisher sent the answer's way
            // meanwhile hears "no responders" (or 10009 for what was queued) and asks again.
            // The stream leads again only if the group still names this server once the
            // successor had its time.
            // The reads this server would have answered meanwhile are kept until someone
            // answers them again (`StreamGroup::handover`).
            self.handing_over.send_replace(true);
            self.hold_leadership(true);
            tokio::spawn(async move {
                self.quiesce(&group, super::QUIET_HANDOVER).await;
                // The successor's election entry comes after everything this leader proposed.
                let proposed = group.status().last_log_index;
                let own = self.node;
                let elsewhere =
                    |status: &GroupStatus| status.leader.is_some_and(|leader| leader != own);
                if let Err(error) = group.transfer_leader(target).await {
                    tracing::warn!(group = %self.name, %error, "stream leader stepdown: transfer failed");
                } else {
                    let _ = group.wait_for(super::QUIET_HANDOVER, elsewhere).await;
                }
                self.hold_leadership(false);
                // The successor answers once it has applied its election's entry; this server
                // learns that entry is committed a little later (its next append), so by then
                // the successor answers the kept reads.
                let answered_again = |status: &GroupStatus| {
                    self.is_leader() || (elsewhere(status) && status.applied > proposed)
                };
                let _ = group.wait_for(super::QUIET_HANDOVER, answered_again).await;
                self.handing_over.send_replace(false);
            });
            Ok(())
        })
    }
}

impl ReplicatedStream {
    /// The member to hand leadership to: the preferred server, or
    /// [`stepdown_successor`](crate::cluster::stepdown_successor)'s.
    fn step_down_target(
        &self,
        preferred: Option<String>,
        status: &GroupStatus,
    ) -> Result<NodeId, ApiError> {
        if let Some(name) = preferred {
            let node = self
                .meta
                .upgrade()
                .and_then(|meta| meta.node_of_name(&name));
            return match node {
                Some(node) if node == self.node => Err(errors::CLUSTER_NO_PEERS
                    .with_err(format!("preferred server \"{name}\" is already leader"))),
                Some(node) if status.voters.contains(&node) => Ok(node),
                _ => Err(errors::CLUSTER_NO_PEERS
                    .with_err(format!("preferred server \"{name}\" not known"))),
            };
        }
        crate::cluster::stepdown_successor(status, self.node)
            .ok_or_else(|| errors::CLUSTER_NO_PEERS.with_err("no replacement peer connected"))
    }
}

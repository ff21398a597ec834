//! A node that led its group when it stopped (a crash, a kill -9, a quick restart by a
//! supervisor) campaigns as soon as it is back in touch, instead of waiting out an election
//! timeout while its peers wait out its lease.
//!
//! Without this, a leader restarted within a few hundred ms left its group leaderless for about
//! 6 s (measured on the meta group, 3 nodes): its peers never saw its routes gone long enough to
//! campaign on the loss ([`RaftGroup::leader_unreachable`](super::RaftGroup::leader_unreachable)),
//! they still named it leader and refused every vote within openraft's lease (4 s after its
//! last heartbeat) and their own election timers run from there too; the restarted node's first
//! campaign, 2-4 s after its start, was refused on that lease, its second won.
//!
//! Now the restarted node asks with a pre-vote (nothing changes unless a quorum would grant) and
//! a voter grants within its lease when the candidate is the very leader it follows
//! (`dispatch.rs`): that leader's lease protects its own reads, and a leader asking for a new
//! term has stopped leading in the old one (a new process, or it gave the leadership up). A
//! voter following another leader keeps refusing within that leader's lease, so a restart after
//! the others elected someone else disturbs nothing. The new term starts from this node's log as
//! it is on disk: a voter holding more (entries the old process sent before its own fdatasync
//! covered them, then lost to a power cut) refuses on the log, as Raft does.

use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::Raft;

use crate::network::Network;
use crate::state_machine::StateMachineAdapter;
use crate::types::{NodeId, TypeConfig};

/// How long the restarted node waits for a route to any other voter before giving up on its
/// early campaign (the election timer goes on as usual).
const REACH_WAIT: Duration = Duration::from_secs(5);
/// How long it waits for the group's core to report its state after the start.
const METRICS_WAIT: Duration = Duration::from_secs(2);
/// How often it looks for a route (or the core's state) meanwhile.
const REACH_POLL: Duration = Duration::from_millis(20);
/// How many pre-votes it tries, this far apart, until a leader is known.
const ROUNDS: u32 = 5;
const ROUND_GAP: Duration = Duration::from_millis(300);

/// Whether this node led its group when it stopped: its stored vote was its own (openraft kept
/// it, demoted to not committed, as leader restore is off), and others must vote. Waits (bounded)
/// for the core's first metrics: until then they are openraft's initial ones (no membership).
async fn led_before(raft: &Raft<TypeConfig, StateMachineAdapter>, node_id: NodeId) -> bool {
    let deadline = tokio::time::Instant::now() + METRICS_WAIT;
    loop {
        let metrics = raft.metrics().borrow_watched().clone();
        let voters: Vec<NodeId> = metrics.membership_config.membership().voter_ids().collect();
        if !voters.is_empty() {
            return metrics.vote.leader_id().node_id == node_id
                && voters.contains(&node_id)
                && voters.len() > 1
                && metrics.last_log_index.is_some();
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(REACH_POLL).await;
    }
}

/// If this node led its group when it stopped, campaigns (pre-vote first) once another voter is
/// reachable, a few times until a leader is known; bounded, and stops with the group.
pub(super) fn campaign(
    raft: Raft<TypeConfig, StateMachineAdapter>,
    network: std::sync::Arc<dyn Network>,
    group: std::sync::Arc<str>,
    node_id: NodeId,
    supervision: std::sync::Arc<super::Supervision>,
) {
    tokio::spawn(async move {
        if !led_before(&raft, node_id).await {
            return;
        }
        let others: Vec<NodeId> = raft
            .metrics()
            .borrow_watched()
            .membership_config
            .membership()
            .voter_ids()
            .filter(|voter| *voter != node_id)
            .collect();
        let deadline = tokio::time::Instant::now() + REACH_WAIT;
        while !others.iter().any(|other| network.reachable(*other)) {
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(REACH_POLL).await;
        }
        for _ in 0..ROUNDS {
            let stopping = supervision
                .stopping
                .load(std::sync::atomic::Ordering::Acquire);
            if stopping
                || !supervision.may_campaign()
                || raft.metrics().borrow_watched().current_leader.is_some()
            {
                return;
            }
            tracing::info!(%group, "led before a restart: campaigning now");
            if raft.trigger().elect(true).await.is_err() {
                return;
            }
            tokio::time::sleep(ROUND_GAP).await;
        }
    });
}

impl super::RaftGroup {
    /// Whether `request` comes from the leader this node follows (not this node): a leader that
    /// campaigns for a new term stopped leading in its old one, so its lease protects nothing.
    pub(super) fn asked_by_own_leader(
        &self,
        request: &openraft::raft::VoteRequest<TypeConfig>,
    ) -> bool {
        let candidate = request.vote.leader_id().node_id;
        candidate != self.node_id
            && self.raft.metrics().borrow_watched().current_leader == Some(candidate)
    }
}

//! A leader this group lost ([`RaftGroup::leader_unreachable`]): the voters left campaign, and
//! grant each other votes within openraft's lease, once the lost leader's own lease has run out
//! ([`OVERRIDE_MARGIN`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::ServerState;

use super::RaftGroup;
use crate::types::NodeId;

/// How far apart the voters left campaign after their leader became unreachable, in node-id order.
const CAMPAIGN_STAGGER: Duration = Duration::from_millis(200);
/// How many times each of them campaigns before leaving it to the election timers.
const CAMPAIGN_ROUNDS: u32 = 8;
/// A voter acts against a leader it lost (campaigns on [`RaftGroup::leader_unreachable`], or
/// grants a vote within openraft's lease) only once `lost_quorum` plus this much has passed since
/// it last heard from that leader ([`Network::last_heard`](crate::network::Network::last_heard)). The leader's lease runs
/// `lost_quorum` past the send time of a round a quorum acknowledged (or past its election), and
/// any new quorum holds a voter of that round, which heard it after it was sent: so the old lease
/// has run out before a new leader can be elected. The margin covers the time between a vote
/// granted and the new leader seeing itself elected (its lease counts from then, see
/// `leadership.rs`), and the clocks of different machines running at slightly different rates.
/// nats-server's `SILENT` (`cluster/network.rs`, 3.5 s) is at least a stream group's
/// `lost_quorum` (1.5 s) plus this, checked at compile time in `stream_group.rs`.
pub const OVERRIDE_MARGIN: Duration = Duration::from_millis(500);

impl RaftGroup {
    /// Whether this node follows a leader the network says it cannot reach and whose lease has
    /// run out ([`RaftGroup::lease_out_in`]): it may then grant another candidate its vote.
    pub(super) fn leader_lost(&self) -> bool {
        let leader = self.raft.metrics().borrow_watched().current_leader;
        leader.is_some_and(|leader| {
            leader != self.node_id
                && !self.network.reachable(leader)
                && self.lease_out_in(leader).is_zero()
        })
    }

    /// How long until `leader`'s lease has run out for certain, as far as this node's word goes:
    /// `lost_quorum` + [`OVERRIDE_MARGIN`] after this node last heard from it (or started the
    /// group, if later). Zero once it has.
    fn lease_out_in(&self, leader: NodeId) -> Duration {
        let heard = self
            .network
            .last_heard(leader)
            .map_or(self.started, |heard| heard.max(self.started));
        (heard + self.lost_quorum + OVERRIDE_MARGIN)
            .saturating_duration_since(tokio::time::Instant::now())
    }

    /// Waits until `lost`'s lease has run out ([`RaftGroup::lease_out_in`]); false if the group
    /// stopped meanwhile or `lost` became reachable again (a new loss calls
    /// [`RaftGroup::leader_unreachable`] again).
    async fn wait_out_lease(group: &Weak<RaftGroup>, lost: NodeId) -> bool {
        loop {
            let Some(this) = group.upgrade() else {
                return false;
            };
            if this.network.reachable(lost) {
                return false;
            }
            let wait = this.lease_out_in(lost);
            if wait.is_zero() {
                return true;
            }
            drop(this);
            tokio::time::sleep(wait).await;
        }
    }

    /// The transport lost every connection to `lost` (its process died or it is cut off). If
    /// `lost` led this group, the voters left campaign as soon as its lease has run out
    /// (`lost_quorum` + [`OVERRIDE_MARGIN`] after they last heard from it: a leader cut off by a
    /// partition still answers reads until then) instead of waiting out openraft's lease and an
    /// election timeout: one after another in node-id order, [`CAMPAIGN_STAGGER`] apart, until a
    /// leader is known, at most [`CAMPAIGN_ROUNDS`] rounds (then the ordinary timers go on). A
    /// voter that lost the leader too grants such a vote within openraft's lease, past the same
    /// bound (see `dispatch`); one that still hears the leader refuses it, so a node cut off alone
    /// cannot take leadership (it only raises its term).
    pub fn leader_unreachable(self: &Arc<Self>, lost: NodeId) {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let protected = self.supervision.protected_until.load(Ordering::Acquire) > 0;
        if metrics.current_leader != Some(lost)
            || lost == self.node_id
            || protected
            || self.supervision.withdrawn.load(Ordering::Acquire)
        {
            return;
        }
        let campaigners: Vec<NodeId> = metrics
            .membership_config
            .membership()
            .voter_ids()
            .filter(|voter| *voter != lost)
            .collect();
        let Some(rank) = campaigners.iter().position(|voter| *voter == self.node_id) else {
            return;
        };
        let group = Arc::downgrade(self);
        let count = campaigners.len() as u32;
        tokio::spawn(async move {
            if !RaftGroup::wait_out_lease(&group, lost).await {
                return;
            }
            tokio::time::sleep(CAMPAIGN_STAGGER * rank as u32).await;
            for _ in 0..CAMPAIGN_ROUNDS {
                // Heard from again meanwhile (a late reply): its lease may have been renewed.
                if !RaftGroup::wait_out_lease(&group, lost).await {
                    return;
                }
                let Some(group) = group.upgrade() else {
                    return;
                };
                let metrics = group.raft.metrics().borrow_watched().clone();
                let settled = match metrics.current_leader {
                    Some(leader) => leader != lost,
                    None => metrics.state == ServerState::Shutdown,
                };
                if settled || group.supervision.offline.borrow().is_some() {
                    return;
                }
                // Voted for another campaigner since: give it this round.
                let voted = metrics.vote.leader_id().node_id;
                if voted == group.node_id || voted == lost {
                    tracing::info!(group = %group.group, lost, "leader unreachable: campaigning now");
                    if group.raft.trigger().elect(false).await.is_err() {
                        return;
                    }
                }
                drop(group);
                tokio::time::sleep(CAMPAIGN_STAGGER * count).await;
            }
        });
    }
}

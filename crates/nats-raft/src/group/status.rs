//! What a [`RaftGroup`] reports about itself: its role and progress ([`GroupStatus`]), the
//! size of its log, its log I/O counters, and waits on its status.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::ServerState;

use super::{RaftGroup, RaftGroupError};
use crate::types::NodeId;

/// What a node is in its group right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
    Candidate,
    Learner,
    /// The core stopped because of an error (see [`GroupStatus::error`]).
    Offline,
    /// Stopped on request.
    Stopped,
}

/// A follower's replication progress as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerProgress {
    pub node: NodeId,
    /// The last index known to be on that follower's disk.
    pub matched: Option<u64>,
    /// Committed entries the follower does not hold: the leader's commit index past what the
    /// follower matched (nats-server's `Peer.Lag`, `commit - li`). Entries appended but not yet
    /// committed do not count: under a steady load a follower is always a proposal or two
    /// behind the leader's last index, and would never read as caught up.
    pub lag: u64,
}

/// A snapshot of a group's state on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    pub role: Role,
    pub term: u64,
    pub leader: Option<NodeId>,
    pub voters: BTreeSet<NodeId>,
    pub learners: BTreeSet<NodeId>,
    pub last_log_index: Option<u64>,
    pub committed: Option<u64>,
    pub applied: Option<u64>,
    /// Only on the leader: each other member's progress.
    pub followers: Vec<FollowerProgress>,
    /// Set while this node may not vote or lead: it must first catch up to this index.
    pub protected_until: Option<u64>,
    /// Why the group went offline.
    pub error: Option<String>,
    /// Only on the leader: how long ago a quorum last acknowledged it (`None`: not yet).
    pub quorum_acked: Option<Duration>,
    /// Only on the leader: how long it has led in its term (since this process saw it take
    /// the role).
    pub led_for: Option<Duration>,
}

impl GroupStatus {
    /// Every member of the group: the voters, then the learners.
    pub fn members(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.voters.iter().chain(self.learners.iter()).copied()
    }

    /// Only on the leader: how long it has gone without a quorum's acknowledgement in this
    /// leadership, counted from when it took the role (a leader just elected has had no
    /// heartbeat round acknowledged yet, which is no sign of a lost quorum).
    pub fn without_quorum_for(&self) -> Option<Duration> {
        let led_for = self.led_for.filter(|_| self.role == Role::Leader)?;
        Some(
            self.quorum_acked
                .map_or(led_for, |acked| acked.min(led_for)),
        )
    }
}

/// How much log a group holds beyond its snapshot ([`RaftGroup::log_size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogSize {
    /// Entries after the last snapshot's index.
    pub entries: u64,
    /// Bytes of the log's segment files.
    pub bytes: u64,
}

/// Log I/O counters (group commit shows as fewer fsyncs than appends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCounters {
    pub append_calls: u64,
    pub entries_appended: u64,
    pub fsyncs: u64,
    /// Vote and commit-index records written, and the time they took in all.
    pub metadata_writes: u64,
    pub metadata_write_micros: u64,
}

impl RaftGroup {
    /// Whether openraft's own tick is off now, the node's tick driver standing in for it
    /// (`tick_driver.rs`): a leader, or a follower that heard its leader recently.
    pub fn tick_driven(&self) -> bool {
        self.driven
            .lock()
            .ok()
            .and_then(|driven| driven.as_ref().map(|driven| driven.tick_off()))
            .unwrap_or(false)
    }

    /// The group's state on this node now.
    pub fn status(&self) -> GroupStatus {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let offline = self.supervision.offline.borrow().clone();
        let role = if offline.is_some() {
            Role::Offline
        } else {
            match metrics.state {
                ServerState::Leader => Role::Leader,
                ServerState::Follower => Role::Follower,
                ServerState::Candidate => Role::Candidate,
                ServerState::Learner => Role::Learner,
                ServerState::Shutdown => Role::Stopped,
            }
        };
        let last = metrics.last_log_index;
        let committed = metrics.local_committed.as_ref().map(|log_id| log_id.index);
        // On the leader: the quorum's commit index, which its own may trail for a moment.
        let quorum_committed = metrics
            .cluster_committed
            .as_ref()
            .map(|log_id| log_id.index)
            .max(committed);
        let followers = metrics
            .replication
            .as_ref()
            .map(|replication| {
                replication
                    .iter()
                    .filter(|(node, _)| **node != self.node_id)
                    .map(|(node, matched)| {
                        let matched = matched.as_ref().map(|log_id| log_id.index);
                        FollowerProgress {
                            node: *node,
                            matched,
                            lag: quorum_committed
                                .unwrap_or(0)
                                .saturating_sub(matched.unwrap_or(0)),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let membership = metrics.membership_config.membership();
        let protected = self.supervision.protected_until.load(Ordering::Acquire);
        GroupStatus {
            role,
            term: metrics.current_term,
            leader: metrics.current_leader,
            voters: membership.voter_ids().collect(),
            learners: membership.learner_ids().collect(),
            last_log_index: last,
            committed,
            applied: metrics.last_applied.as_ref().map(|log_id| log_id.index),
            followers,
            protected_until: (protected > 0).then_some(protected),
            error: offline,
            quorum_acked: metrics
                .last_quorum_acked
                .as_ref()
                .map(|acked| openraft::Instant::elapsed(&**acked)),
            led_for: self.leading_since.observe(&metrics),
        }
    }

    /// nats-server's `Size()` of a group's log: the entries past the last snapshot (its `pindex -
    /// papplied`, what the next snapshot would compact) and the bytes of the log's files.
    pub fn log_size(&self) -> LogSize {
        let (last, snapshot) = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow_watched();
            (
                metrics.last_log_index.unwrap_or(0),
                metrics.snapshot.as_ref().map_or(0, |log_id| log_id.index),
            )
        };
        LogSize {
            entries: last.saturating_sub(snapshot),
            bytes: self.log.bytes(),
        }
    }

    /// nats-server's `current` for this replica (`/healthz`): the leader, or a follower that
    /// heard from its leader within `window` and is caught up with it (see `leader_contact.rs`).
    pub fn is_current(&self, window: Duration) -> bool {
        self.leader_contact.current(&self.status(), window)
    }

    /// Waits until `condition` holds for the group's status, at most `timeout`.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut condition: impl FnMut(&GroupStatus) -> bool,
    ) -> Result<GroupStatus, RaftGroupError> {
        let mut metrics = self.raft.metrics();
        let mut offline = self.supervision.offline.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let status = self.status();
            if condition(&status) {
                return Ok(status);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return Err(RaftGroupError::Timeout),
                changed = metrics.changed() => {
                    if changed.is_err() {
                        // The core is gone: give the supervisor a moment to record why.
                        let _ = tokio::time::timeout(Duration::from_secs(1), offline.changed()).await;
                        let status = self.status();
                        return if condition(&status) { Ok(status) } else {
                            Err(self.offline_error("raft core stopped".to_string()))
                        };
                    }
                }
                _ = offline.changed() => {}
            }
        }
    }

    /// The last index dropped from this node's log behind a snapshot (`None`: nothing yet).
    /// openraft purges lazily, after the snapshot is built and while no replication still reads
    /// the entries: until then a member added catches up from the log, not the snapshot.
    pub fn purged_through(&self) -> Option<u64> {
        self.raft
            .metrics()
            .borrow_watched()
            .purged
            .as_ref()
            .map(|log_id| log_id.index)
    }

    pub fn log_counters(&self) -> LogCounters {
        self.log.counters.read()
    }
}

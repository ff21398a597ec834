//! What a follower last heard from its leader, for nats-server's notion of a `current` replica
//! (its raft `isCurrent`, behind `/healthz`): the leader spoke recently, this node's log reaches
//! the commit index the leader announced, and it has applied what the leader had committed the
//! time before (one append of slack, so a replica under steady load is not reported behind for
//! the entries it is applying right now). A node catching up (after a restart, or wiped) sees
//! the leader's commit ahead of its log until the last batch arrived. The first append a node
//! accepts has no append before it, so it gives no slack: one that brings a restarted node
//! every entry it missed at once must be applied whole first (with the slack, `/healthz` said
//! ok while thousands of the messages it carried were still being applied).
//!
//! Recorded by [`crate::RaftGroup`] for every append the leader sent that this node accepted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::group::{GroupStatus, Role};

pub(crate) struct LeaderContact {
    since: Instant,
    /// The leader's commit index in its last accepted append, plus one (0: none yet).
    commit: AtomicU64,
    /// The same for the append before it.
    commit_before: AtomicU64,
    /// When the last accepted append came: nanoseconds after `since`, plus one (0: never).
    at: AtomicU64,
}

impl LeaderContact {
    pub(crate) fn new() -> LeaderContact {
        LeaderContact {
            since: Instant::now(),
            commit: AtomicU64::new(0),
            commit_before: AtomicU64::new(0),
            at: AtomicU64::new(0),
        }
    }

    /// The leader's append, announcing `leader_commit`, was accepted.
    pub(crate) fn record(&self, leader_commit: Option<u64>) {
        let commit = leader_commit.map_or(0, |index| index.saturating_add(1));
        let before = self.commit.swap(commit, Ordering::AcqRel);
        let heard_before = self.at.load(Ordering::Acquire) > 0;
        let before = if heard_before { before } else { commit };
        self.commit_before.store(before, Ordering::Release);
        let nanos = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.at.store(nanos.saturating_add(1), Ordering::Release);
    }

    /// Whether this replica is current (see the module): a leader with a commit always is.
    pub(crate) fn current(&self, status: &GroupStatus, window: Duration) -> bool {
        match status.role {
            Role::Leader => status.committed.is_some(),
            Role::Follower => {
                let heard = self.at.load(Ordering::Acquire);
                let recent = heard > 0 && {
                    let at = self.since + Duration::from_nanos(heard - 1);
                    at.elapsed() <= window
                };
                // Entries up to index i are `i + 1` here, as the recorded commits.
                let reach = |index: Option<u64>| index.map_or(0, |index| index + 1);
                let commit = self.commit.load(Ordering::Acquire);
                let before = self.commit_before.load(Ordering::Acquire);
                status.leader.is_some()
                    && status.protected_until.is_none()
                    && recent
                    && reach(status.last_log_index) >= commit
                    && reach(status.applied) >= before
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follower(last_log_index: u64, applied: u64) -> GroupStatus {
        GroupStatus {
            role: Role::Follower,
            term: 2,
            leader: Some(1),
            voters: Default::default(),
            learners: Default::default(),
            last_log_index: Some(last_log_index),
            committed: Some(last_log_index),
            applied: Some(applied),
            followers: Vec::new(),
            protected_until: None,
            error: None,
            quorum_acked: None,
            led_for: None,
        }
    }

    const WINDOW: Duration = Duration::from_secs(3);

    #[test]
    fn the_first_append_must_be_applied_whole() {
        let contact = LeaderContact::new();
        // A restarted follower's first append brings every entry it missed, up to the commit.
        contact.record(Some(40));
        assert!(!contact.current(&follower(40, 12), WINDOW));
        assert!(contact.current(&follower(40, 40), WINDOW));
    }

    #[test]
    fn later_appends_leave_one_append_of_slack() {
        let contact = LeaderContact::new();
        contact.record(Some(40));
        contact.record(Some(42));
        assert!(
            !contact.current(&follower(41, 40), WINDOW),
            "log short of the commit"
        );
        assert!(contact.current(&follower(42, 40), WINDOW));
        assert!(
            !contact.current(&follower(42, 39), WINDOW),
            "behind the commit before"
        );
    }
}

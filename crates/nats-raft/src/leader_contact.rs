//! What a follower last heard from its leader, for nats-server's notion of a `current` replica
//! (its raft `isCurrent`, behind `/healthz`): the leader spoke recently, this node's log reaches
//! the commit index the leader announced, and it has applied what the leader had committed the
//! time before (one append of slack, so a replica under steady load is not reported behind for
//! the entries it is applying right now).
//!
//! An announced commit can be old: openraft's replication builds an append (with the commit of
//! that moment) before it backs off from an unreachable follower, and sends it when the backoff
//! ends. Measured on a follower restarted after 3000 messages (`parity cluster rolling`): its
//! first append announced commit 28, the next one 43, the leader having committed 43 before
//! the restart; with the slack taken from the append before, `/healthz` said ok once 28 of the
//! 43 entries were applied (2210 of 3010 messages in the lead's CI run). So:
//! - the announced commits are kept as the highest heard in the term (committed entries are
//!   never lost, so the highest is always reachable);
//! - the slack is earned: it applies only once this node was seen to have applied all of the
//!   highest commit, announced by at least two appends of the term (the first can be the old
//!   one, and equal to what a restarted node replayed itself). Until then (after a start, and
//!   again in each new term) it must apply up to the commit;
//! - a follower is never current on the first append of a term alone: a restarted node whose
//!   first append announced the commit it had replayed itself would be current until the next.
//!
//! Recorded by [`crate::RaftGroup`] for every append the leader sent that this node accepted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::group::{GroupStatus, Role};

pub(crate) struct LeaderContact {
    since: Instant,
    /// The highest commit index the leader announced in the term, plus one (0: none yet).
    commit: AtomicU64,
    /// The same as of the append before the last one.
    commit_before: AtomicU64,
    /// When the last accepted append came: nanoseconds after `since`, plus one (0: never).
    at: AtomicU64,
    /// The term of the last accepted append.
    term: AtomicU64,
    /// The appends accepted in `term`.
    heard_in_term: AtomicU64,
    /// This node was seen to have applied every entry the leader announced committed, in `term`.
    caught_up: AtomicBool,
}

impl LeaderContact {
    pub(crate) fn new() -> LeaderContact {
        LeaderContact {
            since: Instant::now(),
            commit: AtomicU64::new(0),
            commit_before: AtomicU64::new(0),
            at: AtomicU64::new(0),
            term: AtomicU64::new(0),
            heard_in_term: AtomicU64::new(0),
            caught_up: AtomicBool::new(false),
        }
    }

    /// The leader's append of `term`, announcing `leader_commit`, was accepted; this node had
    /// applied up to `applied` when it came.
    pub(crate) fn record(&self, term: u64, leader_commit: Option<u64>, applied: Option<u64>) {
        let announced = reach(leader_commit);
        let commit = if self.term.swap(term, Ordering::AcqRel) != term {
            // Nothing before it in this term: no slack.
            self.caught_up.store(false, Ordering::Release);
            self.heard_in_term.store(1, Ordering::Release);
            self.commit.store(announced, Ordering::Release);
            self.commit_before.store(announced, Ordering::Release);
            announced
        } else {
            self.heard_in_term.fetch_add(1, Ordering::AcqRel);
            let before = self.commit.fetch_max(announced, Ordering::AcqRel);
            self.commit_before.store(before, Ordering::Release);
            before.max(announced)
        };
        self.observe_caught_up(reach(applied), commit);
        let nanos = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.at.store(nanos.saturating_add(1), Ordering::Release);
    }

    /// Whether an append of the leader was accepted within `window`.
    pub(crate) fn heard_within(&self, window: Duration) -> bool {
        let heard = self.at.load(Ordering::Acquire);
        heard > 0 && (self.since + Duration::from_nanos(heard - 1)).elapsed() <= window
    }

    /// Earns the slack when `applied` reaches `commit`, unless only one append of the term
    /// announced it: that one may have been built before a backoff (see the module).
    fn observe_caught_up(&self, applied: u64, commit: u64) {
        if applied >= commit && self.heard_in_term.load(Ordering::Acquire) > 1 {
            self.caught_up.store(true, Ordering::Release);
        }
    }

    /// Whether this replica is current (see the module): a leader with a commit always is.
    pub(crate) fn current(&self, status: &GroupStatus, window: Duration) -> bool {
        match status.role {
            Role::Leader => status.committed.is_some(),
            Role::Follower => {
                let recent = self.heard_within(window);
                let commit = self.commit.load(Ordering::Acquire);
                let applied = reach(status.applied);
                // One append alone may announce an old commit (see the module).
                let reached = status.leader.is_some()
                    && status.protected_until.is_none()
                    && recent
                    && self.heard_in_term.load(Ordering::Acquire) > 1
                    && reach(status.last_log_index) >= commit;
                if reached && applied >= commit {
                    self.observe_caught_up(applied, commit);
                    return true;
                }
                reached
                    && self.caught_up.load(Ordering::Acquire)
                    && applied >= self.commit_before.load(Ordering::Acquire)
            }
            _ => false,
        }
    }
}

/// Entries up to `index` as a count (`index + 1`; 0 for none), as the commits are kept.
fn reach(index: Option<u64>) -> u64 {
    index.map_or(0, |index| index.saturating_add(1))
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
    const TERM: u64 = 2;

    #[test]
    fn the_first_append_must_be_applied_whole() {
        let contact = LeaderContact::new();
        // A restarted follower's first append brings every entry it missed, up to the commit.
        contact.record(TERM, Some(40), Some(3));
        contact.record(TERM, Some(40), Some(3));
        assert!(!contact.current(&follower(40, 12), WINDOW));
        assert!(contact.current(&follower(40, 40), WINDOW));
    }

    #[test]
    fn once_caught_up_later_appends_leave_one_append_of_slack() {
        let contact = LeaderContact::new();
        contact.record(TERM, Some(40), Some(3));
        // A heartbeat: the commit announced twice, and applied.
        contact.record(TERM, Some(40), Some(40));
        contact.record(TERM, Some(42), Some(40));
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

    #[test]
    fn a_steady_load_keeps_a_caught_up_follower_current() {
        let contact = LeaderContact::new();
        contact.record(TERM, Some(10), Some(10));
        contact.record(TERM, Some(10), Some(10));
        // Each append finds the commit of the one before applied and announces a higher one;
        // nobody looked at the follower while it was caught up.
        for commit in (12..200).step_by(2) {
            contact.record(TERM, Some(commit), Some(commit - 2));
            assert!(contact.current(&follower(commit, commit - 2), WINDOW));
        }
    }

    #[test]
    fn a_catch_up_in_several_appends_gets_no_slack() {
        let contact = LeaderContact::new();
        // A restarted follower: a heartbeat, then batches of what it missed while the leader
        // commits more.
        contact.record(TERM, Some(30), Some(3));
        contact.record(TERM, Some(30), Some(3));
        contact.record(TERM, Some(40), Some(10));
        assert!(
            !contact.current(&follower(40, 30), WINDOW),
            "never caught up since it started: it must apply up to the commit"
        );
        assert!(contact.current(&follower(40, 40), WINDOW));
    }

    #[test]
    fn an_older_commit_announced_late_does_not_lower_the_bar() {
        let contact = LeaderContact::new();
        // A heartbeat announcing 40, then an append built before it (announcing 34), then the
        // rest of the entries.
        contact.record(TERM, Some(40), Some(3));
        contact.record(TERM, Some(34), Some(3));
        contact.record(TERM, Some(40), Some(20));
        assert!(!contact.current(&follower(40, 34), WINDOW));
        assert!(contact.current(&follower(40, 40), WINDOW));
    }

    #[test]
    fn a_new_term_takes_the_slack_away_until_caught_up_again() {
        let contact = LeaderContact::new();
        contact.record(TERM, Some(40), Some(40));
        contact.record(TERM, Some(40), Some(40));
        contact.record(TERM, Some(42), Some(40));
        assert!(contact.current(&follower(42, 40), WINDOW));
        contact.record(TERM + 1, Some(50), Some(42));
        contact.record(TERM + 1, Some(52), Some(44));
        assert!(!contact.current(&follower(52, 50), WINDOW));
        assert!(contact.current(&follower(52, 52), WINDOW));
        contact.record(TERM + 1, Some(54), Some(52));
        assert!(contact.current(&follower(54, 52), WINDOW));
    }

    #[test]
    fn an_old_first_append_a_restarted_follower_had_applied_earns_no_slack() {
        let contact = LeaderContact::new();
        // Built with the commit of the moment the follower went down, sent after it restarted
        // and replayed its log to that commit; the fresh append comes next.
        contact.record(TERM, Some(4), Some(4));
        assert!(
            !contact.current(&follower(4, 4), WINDOW),
            "one append alone can announce an old commit"
        );
        contact.record(TERM, Some(43), Some(4));
        assert!(!contact.current(&follower(43, 4), WINDOW));
        assert!(!contact.current(&follower(43, 30), WINDOW));
        assert!(contact.current(&follower(43, 43), WINDOW));
    }
}

//! A leader's lease: until when this node may act as the group's leader on the strength of the
//! quorum's last word, read with one clock reading and one atomic load ([`LeaderLease::holds`]).
//!
//! [`crate::RaftGroup::leading`] says the same thing through a watch, but only once a task has
//! run: a process resumed after a pause (SIGSTOP, a long stall) or a leader cut off keeps its
//! old answer until the watcher is scheduled, and meanwhile another node may have been elected
//! and taken work. The lease is read by the clock, so it has run out the moment the pause ends.
//!
//! It runs `lost_quorum` past the later of the last quorum acknowledgement (openraft stamps it
//! with the time the acknowledged request was *sent*) and the moment this node was first seen
//! leading in its term (an election is a quorum's word too), as `leadership.rs` counts. The
//! voters that acknowledged refuse to vote for another candidate for openraft's leader lease
//! (the election timeout's maximum) after they last heard from this leader, so with
//! `lost_quorum` below that no other leader can have been elected while the lease holds.
//!
//! Updated by the group's `LeadingSince` watcher on every change of the metrics (heartbeat
//! acknowledgements are one); set to nothing when the node stops leading or the core stops.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The lease never runs out: a single-voter group is its own quorum.
const FOREVER: u64 = u64::MAX;

pub struct LeaderLease {
    base: Instant,
    /// When the lease runs out: nanoseconds after `base`, 0 for no lease, [`FOREVER`].
    until: AtomicU64,
    /// Set while this leader hands its leadership over from outside its core (its log cannot
    /// write, `stall_handover.rs`): the voters drop its lease then, so it holds none either.
    suspended: AtomicBool,
}

impl LeaderLease {
    pub(crate) fn new() -> LeaderLease {
        LeaderLease {
            base: Instant::now(),
            until: AtomicU64::new(0),
            suspended: AtomicBool::new(false),
        }
    }

    /// Whether this node's leadership is backed by a quorum's word within the lease now.
    pub fn holds(&self) -> bool {
        if self.suspended.load(Ordering::Acquire) {
            return false;
        }
        match self.until.load(Ordering::Acquire) {
            0 => false,
            FOREVER => true,
            until => self.nanos_since_base(Instant::now()) < until,
        }
    }

    fn nanos_since_base(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(FOREVER - 1)
    }

    /// This node leads: the lease runs out `remaining` from now (`None`: never).
    pub(crate) fn extend(&self, remaining: Option<Duration>) {
        let until = match remaining {
            None => FOREVER,
            Some(remaining) => self
                .nanos_since_base(Instant::now() + remaining)
                .clamp(1, FOREVER - 1),
        };
        self.until.store(until, Ordering::Release);
    }

    /// This node does not lead (any more).
    pub(crate) fn end(&self) {
        self.until.store(0, Ordering::Release);
    }

    /// While `on`, the lease holds nothing, whatever the quorum last said.
    pub(crate) fn suspend(&self, on: bool) {
        self.suspended.store(on, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_lease_runs_out_by_the_clock_without_any_update() {
        let lease = LeaderLease::new();
        assert!(!lease.holds(), "no lease before a leadership");
        lease.extend(Some(Duration::from_secs(2)));
        assert!(lease.holds());
        tokio::time::advance(Duration::from_millis(1_999)).await;
        assert!(lease.holds());
        // A pause past the lease: nothing ran meanwhile, and the lease is out all the same.
        tokio::time::advance(Duration::from_millis(2)).await;
        assert!(!lease.holds());
        lease.extend(Some(Duration::from_secs(2)));
        assert!(lease.holds(), "a quorum's word renews it");
        lease.end();
        assert!(!lease.holds());
        lease.extend(None);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(lease.holds(), "a single voter's lease never runs out");
        lease.suspend(true);
        assert!(!lease.holds(), "suspended while handing over");
        lease.suspend(false);
        assert!(lease.holds());
    }
}

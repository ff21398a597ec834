//! When this node took the leadership it holds now, as this process saw it: openraft's
//! `last_quorum_acked` is `None` until the first heartbeat round of a leadership has been
//! acknowledged, so "no quorum ack yet" alone does not say the quorum is lost. A leader is
//! without its quorum for as long as it has led with no acknowledgement since (see
//! [`crate::GroupStatus::without_quorum_for`]).
//!
//! Watched from the group's start by a task of its own, so the time is that of the change of
//! role, not that of the first status read after it; a status read before the task saw the
//! change records it itself. The same task keeps the group's [`LeaderLease`] up to date.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, RaftMetrics, ServerState};

use crate::lease::LeaderLease;
use crate::state_machine::StateMachineAdapter;
use crate::types::TypeConfig;

#[derive(Default)]
pub(crate) struct LeadingSince {
    /// The term this node leads in and when that leadership was first seen here.
    taken: Mutex<Option<(u64, Instant)>>,
}

impl LeadingSince {
    /// Starts following `raft`'s role, and renewing `lease` (`lost_quorum` past the quorum's
    /// last word, see `lease.rs`); the task ends with the raft core, and the lease with it.
    pub(crate) fn watch(
        self: &std::sync::Arc<Self>,
        raft: &Raft<TypeConfig, StateMachineAdapter>,
        lease: std::sync::Arc<LeaderLease>,
        lost_quorum: Duration,
    ) {
        let mut metrics = raft.metrics();
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                {
                    let metrics = metrics.borrow_watched();
                    let led_for = this.observe(&metrics);
                    match lease_left(&metrics, led_for, lost_quorum) {
                        Some(remaining) => lease.extend(remaining),
                        None => lease.end(),
                    }
                }
                if metrics.changed().await.is_err() {
                    break;
                }
            }
            lease.end();
        });
    }

    /// Records a change of role seen in `metrics`; returns how long this node has led in its
    /// current term (`None`: it does not lead).
    pub(crate) fn observe(&self, metrics: &RaftMetrics<TypeConfig>) -> Option<Duration> {
        let mut taken = self
            .taken
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if metrics.state != ServerState::Leader {
            *taken = None;
            return None;
        }
        let term = metrics.current_term;
        let (_, at) = match *taken {
            Some((known, at)) if known == term => (known, at),
            _ => *taken.insert((term, Instant::now())),
        };
        Some(at.elapsed())
    }
}

/// What is left of the lease of a leader that has led `led_for` in its term: `None` when it
/// does not lead or the lease ran out, `Some(None)` when it never runs out (a single voter).
fn lease_left(
    metrics: &RaftMetrics<TypeConfig>,
    led_for: Option<Duration>,
    lost_quorum: Duration,
) -> Option<Option<Duration>> {
    let led_for = led_for?;
    if metrics.membership_config.membership().voter_ids().count() <= 1 {
        return Some(None);
    }
    let age = metrics.last_quorum_acked.as_ref().map_or(led_for, |acked| {
        openraft::Instant::elapsed(&**acked).min(led_for)
    });
    lost_quorum
        .checked_sub(age)
        .filter(|left| !left.is_zero())
        .map(Some)
}

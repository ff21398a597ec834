//! When this node took the leadership it holds now, as this process saw it: openraft's
//! `last_quorum_acked` is `None` until the first heartbeat round of a leadership has been
//! acknowledged, so "no quorum ack yet" alone does not say the quorum is lost. A leader is
//! without its quorum for as long as it has led with no acknowledgement since (see
//! [`crate::GroupStatus::without_quorum_for`]).
//!
//! Watched from the group's start by a task of its own, so the time is that of the change of
//! role, not that of the first status read after it; a status read before the task saw the
//! change records it itself.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, RaftMetrics, ServerState};

use crate::state_machine::StateMachineAdapter;
use crate::types::TypeConfig;

#[derive(Default)]
pub(crate) struct LeadingSince {
    /// The term this node leads in and when that leadership was first seen here.
    taken: Mutex<Option<(u64, Instant)>>,
}

impl LeadingSince {
    /// Starts following `raft`'s role; the task ends with the raft core.
    pub(crate) fn watch(self: &std::sync::Arc<Self>, raft: &Raft<TypeConfig, StateMachineAdapter>) {
        let mut metrics = raft.metrics();
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                this.observe(&metrics.borrow_watched());
                if metrics.changed().await.is_err() {
                    break;
                }
            }
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

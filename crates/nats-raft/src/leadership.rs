//! Whether this node may act as the group's leader now ([`watch`], behind
//! `RaftGroup::leading`), and which leadership that is.
//!
//! A node leads for the application once it is openraft's leader, has applied everything its
//! log held when that leadership was first seen (normally up to the blank entry its election
//! appended; after a restart that resumed the leadership of a committed vote for itself, which
//! appends no blank entry, the tail its log kept from before), and has heard from a quorum
//! within `lost_quorum`.
//!
//! Each leadership gets its own number, unique in the process: a new term, the same term
//! resumed by a restarted group, the same term again after the quorum answered. An application
//! that keeps state while it leads (the stream's duplicate window, running consumers) rebuilds
//! it whenever the number changes, whether or not it saw the `None` between.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, RaftMetrics, ServerState};
use tokio::sync::watch;

use crate::group::Supervision;
use crate::state_machine::StateMachineAdapter;
use crate::types::TypeConfig;

/// The next leadership number (0 is never handed out).
static NEXT_LEADERSHIP: AtomicU64 = AtomicU64::new(1);

/// This node's leadership in one term as first seen: the term, when, the last log index then
/// (what must be applied before it leads for the application) and the last applied index then.
#[derive(Clone, Copy)]
struct Elected {
    term: u64,
    at: tokio::time::Instant,
    last_log: Option<u64>,
    applied: Option<u64>,
}

/// Whether `metrics` say this node leads with a fresh quorum (its term), and how long until
/// that quorum goes stale. `elected` is when this node was first seen leading in its term:
/// winning the election was a quorum's word too, so a new leader is not stale before its first
/// heartbeat round has been acknowledged (openraft counts heartbeat acknowledgements only).
///
/// A quorum must have had a word in this leadership, though: an entry committed since it was
/// first seen (an election's blank entry) or a heartbeat acknowledged in this process. A leadership
/// resumed by a restarted node (openraft restores its committed vote for itself, appends no
/// blank entry, and its log's tail was applied before the restart) has neither until the
/// others answer; without this it led for the lost-quorum bound on its stale state while
/// another node led a later term (the consumer fault suite saw it redeliver acked messages).
fn ready(
    metrics: &RaftMetrics<TypeConfig>,
    elected: &mut Option<Elected>,
    lost_quorum: Duration,
    resumed_needs_quorum: bool,
) -> (Option<u64>, Option<Duration>) {
    let term = metrics.current_term;
    if metrics.state != ServerState::Leader {
        *elected = None;
        return (None, None);
    }
    let first_seen = match elected {
        Some(known) if known.term == term => *known,
        _ => *elected.insert(Elected {
            term,
            at: tokio::time::Instant::now(),
            last_log: metrics.last_log_index,
            applied: metrics.last_applied.as_ref().map(|log_id| log_id.index),
        }),
    };
    let applied = metrics.last_applied.as_ref();
    if applied.map(|log_id| log_id.leader_id.term) != Some(term)
        || applied.map(|log_id| log_id.index) < first_seen.last_log
    {
        return (None, None);
    }
    if metrics.membership_config.membership().voter_ids().count() <= 1 {
        return (Some(term), None);
    }
    let since_elected = first_seen.at.elapsed();
    // A quorum acknowledgement is openraft's memory of this process (a watch made while the
    // node has long led sees its latest one).
    let acked = metrics.last_quorum_acked.is_some();
    if resumed_needs_quorum && applied.map(|log_id| log_id.index) <= first_seen.applied && !acked {
        return (None, None);
    }
    let age = metrics
        .last_quorum_acked
        .as_ref()
        .map_or(since_elected, |acked| {
            openraft::Instant::elapsed(&**acked).min(since_elected)
        });
    if age < lost_quorum {
        (Some(term), Some(lost_quorum - age))
    } else {
        (None, None)
    }
}

/// Whether this node's log waits for space with other voters to lead instead: it hands its
/// leadership over (`stall_handover.rs`) and takes no work meanwhile. A sole voter goes on
/// leading, refusing proposals with the reason.
fn handing_over(
    metrics: &RaftMetrics<TypeConfig>,
    stalled: &watch::Receiver<Option<String>>,
) -> bool {
    stalled.borrow().is_some() && metrics.membership_config.membership().voter_ids().count() > 1
}

/// The number of the leadership in `term`: the one already handed out when `current` is that
/// same leadership continuing, a new one otherwise.
fn number(current: &mut Option<(u64, u64)>, term: Option<u64>) -> Option<u64> {
    match (term, *current) {
        (None, _) => {
            *current = None;
            None
        }
        (Some(term), Some((known, number))) if known == term => Some(number),
        (Some(term), _) => {
            let number = NEXT_LEADERSHIP.fetch_add(1, Ordering::Relaxed);
            *current = Some((term, number));
            Some(number)
        }
    }
}

/// `Some(leadership number)` while this node leads for the application (module doc), `None`
/// otherwise and once the core stops.
pub(crate) fn watch(
    raft: &Raft<TypeConfig, StateMachineAdapter>,
    supervision: Arc<Supervision>,
    stalled: watch::Receiver<Option<String>>,
    lost_quorum: Duration,
    resumed_needs_quorum: bool,
) -> watch::Receiver<Option<u64>> {
    let mut elected = None;
    let mut leadership = None;
    follow(raft, supervision, stalled, None, move |metrics, stalled| {
        let (term, wait) = match metrics {
            Some(metrics) => {
                let (term, wait) = ready(metrics, &mut elected, lost_quorum, resumed_needs_quorum);
                (term.filter(|_| !handing_over(metrics, stalled)), wait)
            }
            None => (None, None),
        };
        (number(&mut leadership, term), wait)
    })
}

/// Whether `metrics` say this node won its term's election and may still lead: openraft's
/// leader, either leading for the application ([`ready`]) or elected less than `lost_quorum`
/// ago (its election's entry on its way to a quorum); with how long until the latter ends.
fn elected_now(
    metrics: &RaftMetrics<TypeConfig>,
    elected: &mut Option<Elected>,
    lost_quorum: Duration,
    resumed_needs_quorum: bool,
) -> (bool, Option<Duration>) {
    let (leads, stale_in) = ready(metrics, elected, lost_quorum, resumed_needs_quorum);
    if leads.is_some() {
        return (true, stale_in);
    }
    match elected {
        Some(known) if metrics.state == ServerState::Leader => {
            let since = known.at.elapsed();
            if since < lost_quorum {
                (true, Some(lost_quorum - since))
            } else {
                (false, None)
            }
        }
        _ => (false, None),
    }
}

/// True while this node won its term's election and may still lead ([`elected_now`]): from
/// the moment openraft makes it leader, before [`watch`] says it leads (its election's entry
/// committed and applied), so that an application can make itself reachable meanwhile and
/// hold what arrives until it leads. False once it leads no more, also when an election's
/// entry does not commit within `lost_quorum`, while its log waits for space with other voters
/// to lead, and once the core stops.
pub(crate) fn elected_watch(
    raft: &Raft<TypeConfig, StateMachineAdapter>,
    supervision: Arc<Supervision>,
    stalled: watch::Receiver<Option<String>>,
    lost_quorum: Duration,
    resumed_needs_quorum: bool,
) -> watch::Receiver<bool> {
    let mut elected = None;
    follow(
        raft,
        supervision,
        stalled,
        false,
        move |metrics, stalled| match metrics {
            Some(metrics) => {
                let (now, wait) =
                    elected_now(metrics, &mut elected, lost_quorum, resumed_needs_quorum);
                (now && !handing_over(metrics, stalled), wait)
            }
            None => (false, None),
        },
    )
}

/// A watch of what `evaluate` makes of the group's metrics (`None`: the group is offline) and
/// of its log's stall, evaluated again whenever either changes and when the wait it returned
/// runs out (a leader's quorum ages without any change of the metrics; heartbeat
/// acknowledgements change the metrics before); `off` once the core stops.
fn follow<T, F>(
    raft: &Raft<TypeConfig, StateMachineAdapter>,
    supervision: Arc<Supervision>,
    mut stalled: watch::Receiver<Option<String>>,
    off: T,
    mut evaluate: F,
) -> watch::Receiver<T>
where
    T: PartialEq + Send + Sync + 'static,
    F: FnMut(
            Option<&RaftMetrics<TypeConfig>>,
            &watch::Receiver<Option<String>>,
        ) -> (T, Option<Duration>)
        + Send
        + 'static,
{
    let mut metrics = raft.metrics();
    let (now, mut stale_in) = evaluate(Some(&metrics.borrow_watched()), &stalled);
    let (sender, receiver) = watch::channel(now);
    tokio::spawn(async move {
        loop {
            let stale = async {
                match stale_in {
                    Some(wait) => tokio::time::sleep(wait + Duration::from_millis(1)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { break },
                _ = stale => {}
                _ = sender.closed() => return,
                Ok(()) = stalled.changed() => {}
            }
            let (now, wait) = if supervision.offline.borrow().is_some() {
                evaluate(None, &stalled)
            } else {
                evaluate(Some(&metrics.borrow_watched()), &stalled)
            };
            stale_in = wait;
            sender.send_if_modified(|current| {
                let changed = *current != now;
                *current = now;
                changed
            });
        }
        sender.send_replace(off);
    });
    receiver
}

//! [`TickDriver`]: one timer on this node for many groups, in place of openraft's tick task in
//! each of them.
//!
//! openraft's core of every group wakes on its own timer about five times per heartbeat
//! interval (`heartbeat_interval * 13 / 64`), leader or not, to check its election timer and to
//! send heartbeats. With 500 stream groups a node took 2,500 of these wake-ups a second, each a
//! timer, a channel message, a pass of the core's loop and a metrics flush (a leader's metrics
//! change at every flush, waking the tasks that watch them), and the heartbeats left at 500
//! random moments of the second, each its own small write on a route.
//!
//! A group that opts in (`GroupConfig::tick_driver`) keeps openraft's own timer only while it
//! may need it, and the driver does the rest:
//! - **a leader**: its tick is off; the driver makes every leader of the node send its heartbeats
//!   at the same moment, once per interval (`Trigger::heartbeat`, the same broadcast as
//!   openraft's timer sends), so they leave in a few writes and arrive together;
//! - **a follower or learner that heard its leader's append within `fresh`**: its tick is off.
//!   Its election timer cannot expire then: accepting the append renewed openraft's vote, which
//!   expires no sooner than the election timeout's minimum, and `fresh` is kept below it by the
//!   driver's pass and one tick (see [`TickDriver::fresh_window`]);
//! - **anything else** (a candidate, a follower that heard nothing recently, a new group): its
//!   tick is on, and openraft's election timer runs exactly as without the driver.
//!
//! Safety never depends on the timing here (elections are openraft's); liveness does: a
//! follower whose leader went quiet has its tick back within `fresh` plus one pass, before its
//! election timeout can have expired.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, ServerState};

use crate::leader_contact::LeaderContact;
use crate::state_machine::StateMachineAdapter;
use crate::types::TypeConfig;

/// Passes per heartbeat interval: how soon a follower's tick comes back after its leader went
/// quiet, and how soon a new leader's tick goes off.
const PASSES_PER_HEARTBEAT: u32 = 4;
/// How long the driver waits for one group's core to take a heartbeat request (its API queue
/// full means a core busy or stuck; the next interval tries again).
const HEARTBEAT_SEND: Duration = Duration::from_millis(100);

/// Drives the ticks and heartbeats of the groups registered with it (see the module). Create
/// one per heartbeat interval, inside a tokio runtime; its task ends once it is dropped.
pub struct TickDriver {
    inner: Arc<Inner>,
}

struct Inner {
    heartbeat: Duration,
    groups: Mutex<Vec<Weak<Driven>>>,
}

/// One group as the driver sees it; the group holds it, the driver a weak reference.
pub(crate) struct Driven {
    raft: Raft<TypeConfig, StateMachineAdapter>,
    contact: Arc<LeaderContact>,
    /// How recent a leader's append must be for this follower's tick to stay off.
    fresh: Duration,
    /// Whether openraft's tick is on for this group (it starts on).
    ticking: AtomicBool,
}

impl std::fmt::Debug for TickDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickDriver")
            .field("heartbeat", &self.inner.heartbeat)
            .finish_non_exhaustive()
    }
}

impl TickDriver {
    /// A driver sending its groups' heartbeats every `heartbeat`. Must run inside a tokio runtime.
    pub fn new(heartbeat: Duration) -> Arc<TickDriver> {
        let inner = Arc::new(Inner {
            heartbeat,
            groups: Mutex::new(Vec::new()),
        });
        tokio::spawn(run(Arc::downgrade(&inner)));
        Arc::new(TickDriver { inner })
    }

    /// The heartbeat interval its groups must be configured with.
    pub fn heartbeat(&self) -> Duration {
        self.inner.heartbeat
    }

    /// How recently a follower must have heard its leader for its tick to stay off: half a
    /// heartbeat of slack past the interval (a heartbeat late on a busy machine turns the tick
    /// on, which costs only the wake-ups saved), and at most the election timeout's minimum less
    /// one pass and one of openraft's ticks (so its timer runs again before it could expire).
    /// `None`: the election timeout is too short for the driver; leave the group's tick alone.
    pub(crate) fn fresh_window(&self, election_timeout_min: Duration) -> Option<Duration> {
        let heartbeat = self.inner.heartbeat;
        let wanted = heartbeat + heartbeat / 2;
        let tick = heartbeat * 13 / 64;
        let limit = election_timeout_min.checked_sub(heartbeat / PASSES_PER_HEARTBEAT + tick)?;
        (limit > heartbeat).then_some(wanted.min(limit))
    }

    /// Hands `raft`'s tick to the driver; the returned handle keeps it registered while held.
    pub(crate) fn register(
        &self,
        raft: Raft<TypeConfig, StateMachineAdapter>,
        contact: Arc<LeaderContact>,
        fresh: Duration,
    ) -> Arc<Driven> {
        let driven = Arc::new(Driven {
            raft,
            contact,
            fresh,
            ticking: AtomicBool::new(true),
        });
        if let Ok(mut groups) = self.inner.groups.lock() {
            groups.push(Arc::downgrade(&driven));
        }
        driven
    }
}

impl Driven {
    pub(crate) fn tick_off(&self) -> bool {
        !self.ticking.load(Ordering::Acquire)
    }

    /// Turns this group's tick on or off for its role now; true when it leads.
    fn pass(&self) -> bool {
        let (state, leader_known) = {
            let metrics = self.raft.server_metrics();
            let metrics = metrics.borrow_watched();
            (metrics.state, metrics.current_leader.is_some())
        };
        let quiet = match state {
            ServerState::Leader => true,
            ServerState::Follower | ServerState::Learner => {
                leader_known && self.contact.heard_within(self.fresh)
            }
            ServerState::Candidate | ServerState::Shutdown => false,
        };
        if self.ticking.swap(!quiet, Ordering::AcqRel) == quiet {
            self.raft.runtime_config().tick(!quiet);
        }
        state == ServerState::Leader
    }
}

/// The driver's loop: a pass over every group each quarter interval, the leaders' heartbeats on
/// every fourth.
async fn run(inner: Weak<Inner>) {
    let period = match inner.upgrade() {
        Some(inner) => inner.heartbeat / PASSES_PER_HEARTBEAT,
        None => return,
    };
    let mut timer = tokio::time::interval(period.max(Duration::from_millis(1)));
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pass = 0u32;
    loop {
        timer.tick().await;
        let groups: Vec<Arc<Driven>> = {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let Ok(mut groups) = inner.groups.lock() else {
                return;
            };
            groups.retain(|group| group.strong_count() > 0);
            groups.iter().filter_map(Weak::upgrade).collect()
        };
        let beat = pass.is_multiple_of(PASSES_PER_HEARTBEAT);
        pass = pass.wrapping_add(1);
        let leaders: Vec<Arc<Driven>> = groups.into_iter().filter(|group| group.pass()).collect();
        if beat && !leaders.is_empty() {
            // Concurrently, so one busy core delays no other group's heartbeat.
            futures::future::join_all(leaders.iter().map(|group| async move {
                let trigger = group.raft.trigger();
                tokio::time::timeout(HEARTBEAT_SEND, trigger.heartbeat()).await
            }))
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_fresh_window_stays_below_the_election_timeout() {
        // Stream groups: heartbeat 500 ms, election 2-4 s: 750 ms, far below 2 s - 125 ms - 101 ms.
        let fast = TickDriver::new(Duration::from_millis(500));
        assert_eq!(
            fast.fresh_window(Duration::from_secs(2)),
            Some(Duration::from_millis(750))
        );
        let driver = TickDriver::new(Duration::from_secs(1));
        // Heartbeat 1 s, election 2-4 s. 2 s - 250 ms - 203 ms = 1.547 s > 1.5 s.
        assert_eq!(
            driver.fresh_window(Duration::from_secs(2)),
            Some(Duration::from_millis(1_500))
        );
        // Tighter: capped below the election timeout.
        let window = driver.fresh_window(Duration::from_millis(1_400));
        assert_eq!(window, None, "no room past one heartbeat");
        let window = driver.fresh_window(Duration::from_millis(1_700));
        assert!(window.is_some_and(
            |window| window + Duration::from_millis(250 + 203) <= Duration::from_millis(1_700)
        ));
    }
}

//! A request that needs the meta group, reaching a server that sees no meta leader, waits for
//! one before it is answered 10008 "JetStream system temporarily unavailable".
//!
//! During a meta election (a META.LEADER.STEPDOWN, a leader lost) every JetStream server
//! receives every request. nats-server answers 10008 from each server that sees no leader
//! (`isLeaderless`) while the new leader answers the same request: a client may take the 10008
//! first for a create that was applied. Here such a request, reaching a server that sees no
//! working meta leader ([`crate::cluster::Cluster::meta_leader_missing`]), waits aside, up to
//! [`META_LEADER_WAIT`], for it to see one, then goes back to its queue
//! ([`super::queue::ApiQueues::requeue_waited`]) to be handled as any other: answered by
//! whoever answers it now (the new leader, the stream's leader), the others silent, or
//! answered 10008 if there is still no leader (silent while the meta group has run here for
//! less than its lost-quorum interval, as before). A candidate that wins the election answers
//! what reached it while it campaigned. The wait never holds the queues: the next requests are
//! served meanwhile.
//!
//! What waits is bounded ([`WaitingRoom`]): at most [`WAITING_LIMIT`] requests and
//! [`WAITING_BYTES`] of them at once. A request beyond either is handled at once as one that
//! has waited already: 10008 when the meta group is unavailable from here, as nats-server
//! answers every request without a meta leader, so a burst during an outage holds neither
//! thousands of tasks nor their payloads. Called by the dispatcher (`api/mod.rs`).

use super::queue::ApiQueues;
use super::Context;
use crate::cluster::Cluster;
use crate::transport::Message;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a request waits for a meta leader before it is answered 10008: longer than an
/// election after a stepdown or a leader's loss takes (well under a second once a voter
/// campaigns; 3 s from the transfer at load 28, where the 2 s this was gave a 10008 beside the
/// new leader's success for the same create), as long as a leader goes without a quorum's
/// word before it answers 10008 (`META_QUORUM_LOST`), short against a client's timeout.
pub(crate) const META_LEADER_WAIT: Duration = Duration::from_secs(4);

/// How many requests wait for a meta leader at once, on one server: more than a burst of
/// creates from a deployment tool during an election, few enough that their tasks cost little.
pub(crate) const WAITING_LIMIT: usize = 1_024;

/// How many bytes (subjects, replies, headers and payloads) the waiting requests hold at once.
pub(crate) const WAITING_BYTES: usize = 16 * 1024 * 1024;

/// The requests waiting for a meta leader on this server: their number and bytes.
#[derive(Default)]
pub(crate) struct WaitingRoom {
    requests: AtomicUsize,
    bytes: AtomicUsize,
}

impl WaitingRoom {
    /// A place for a request of `bytes`, or `None` when the room is full.
    fn enter(self: &Arc<Self>, bytes: usize) -> Option<Seat> {
        let entered = self
            .requests
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |requests| {
                (requests < WAITING_LIMIT).then_some(requests + 1)
            })
            .is_ok();
        if !entered {
            return None;
        }
        let fits = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes)
                    .filter(|total| *total <= WAITING_BYTES)
            })
            .is_ok();
        if !fits {
            self.requests.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Seat {
            room: self.clone(),
            bytes,
        })
    }

    /// How many requests wait now.
    pub(crate) fn waiting(&self) -> usize {
        self.requests.load(Ordering::Acquire)
    }
}

/// One waiting request's place, given back when it is dropped.
struct Seat {
    room: Arc<WaitingRoom>,
    bytes: usize,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.room.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.room.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The bytes a waiting `message` holds.
fn size_of(message: &Message) -> usize {
    message.subject.len()
        + message.reply.as_ref().map_or(0, |reply| reply.len())
        + message.headers.as_ref().map_or(0, |headers| headers.len())
        + message.payload.len()
}

/// Waits aside for a meta leader, then queues `message` again; false when [`WaitingRoom`] is
/// full (the caller handles it as a request that waited already).
pub(crate) fn wait_for_meta_leader(
    queues: &Arc<ApiQueues>,
    context: &Arc<Context>,
    cluster: Arc<dyn Cluster>,
    message: &Message,
) -> bool {
    let Some(seat) = queues.meta_waiting().enter(size_of(message)) else {
        return false;
    };
    let (queues, context, message) = (queues.clone(), context.clone(), message.clone());
    tokio::spawn(async move {
        let began = std::time::Instant::now();
        let seen = cluster.meta_leader_seen_within(META_LEADER_WAIT).await;
        super::api_debug!(
            String::from_utf8_lossy(&message.subject),
            message.reply.clone().unwrap_or_default(),
            "waited {:?} for a meta leader (seen: {seen}): requeued; meta: {}",
            began.elapsed(),
            cluster.meta_view()
        );
        drop(seat);
        queues.requeue_waited(&context, message);
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_holds_so_many_requests_and_bytes() {
        let room = Arc::new(WaitingRoom::default());
        let seats: Vec<Seat> = (0..WAITING_LIMIT)
            .map(|_| room.enter(10).expect("a place"))
            .collect();
        assert!(room.enter(10).is_none());
        assert_eq!(room.waiting(), WAITING_LIMIT);
        drop(seats);
        assert_eq!(room.waiting(), 0);
        let big = room.enter(WAITING_BYTES - 5).expect("a place");
        assert!(room.enter(10).is_none(), "past the bytes");
        assert_eq!(room.waiting(), 1);
        let small = room.enter(5).expect("what fits");
        drop((big, small));
        assert_eq!(room.bytes.load(Ordering::Acquire), 0);
        assert_eq!(room.waiting(), 0);
    }
}

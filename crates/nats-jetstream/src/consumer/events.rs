//! The consumer task's event queue with two counts: events sent into it and events its task
//! has handled. When every event sent has been handled, the shared state already reflects them
//! all, so `CONSUMER.INFO` is answered from it directly instead of through the task
//! (`info.rs` `info_in_order`): a round trip to a runtime worker saved per request (issue 21,
//! CONSUMER.INFO spent most of its info-thread time switching to and from the task).

use super::Event;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    handled: AtomicU64,
}

/// The sending side of a consumer's event queue; clones share the counts.
#[derive(Clone)]
pub(crate) struct EventSender {
    sender: mpsc::UnboundedSender<Event>,
    counts: Arc<Counts>,
}

impl EventSender {
    pub(crate) fn channel() -> (EventSender, mpsc::UnboundedReceiver<Event>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let counts = Arc::default();
        (EventSender { sender, counts }, receiver)
    }

    /// Queue an event; `false` when the task has ended. Counted before it is queued, so an
    /// event already in the queue is always in the count [`EventSender::all_handled`] reads.
    pub(crate) fn send(&self, event: Event) -> bool {
        self.counts.sent.fetch_add(1, Ordering::SeqCst);
        self.sender.send(event).is_ok()
    }

    /// Called by the task after each event it handled (its effects on the shared state made).
    pub(crate) fn handled(&self) {
        self.counts.handled.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether every event queued before this call has been handled. The task takes events in
    /// queue order, so once as many were handled as had been counted here, every event queued
    /// by then (each counted before it was queued) is among them. An event sent to an ended
    /// task stays unhandled: this is never true again, and callers take the slow path.
    pub(crate) fn all_handled(&self) -> bool {
        let sent = self.counts.sent.load(Ordering::SeqCst);
        self.counts.handled.load(Ordering::SeqCst) >= sent
    }
}

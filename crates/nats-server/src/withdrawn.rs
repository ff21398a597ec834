//! Internal subscriptions withdrawn a moment ago, still reached by what peers sent before they
//! heard of it (`Router::withdraw_internal`).
//!
//! A peer forwards a message over its route to this server while its interest table still
//! holds our subscription; the `RS-` that withdraws it and that message cross on the two
//! directions of the route, so the message arrives after the subscription went and finds no
//! subscriber: dropped unanswered. A replicated stream's leader handing its leadership over
//! withdraws its subjects that way, and a publish in flight then waited out its client's
//! timeout (issue 20: 19-32 ms behind the withdrawal in the logs, 5 s for the publisher). A
//! withdrawal that keeps its handler for such stragglers lets the stream answer them (10009:
//! not the leader, retried by the client on the next one). Only a message from a route that
//! nothing here subscribes any more is handed over: a peer still believed we had that interest.

use crate::router::InternalSubscription;
use nats_subject::subject_matches_filter;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Withdrawn subscriptions and until when each still takes stragglers.
#[derive(Default)]
pub(crate) struct Withdrawn {
    entries: Mutex<Vec<(Arc<InternalSubscription>, Instant)>>,
    /// Entries held, read without the lock: the route path pays nothing when there are none.
    count: AtomicUsize,
}

impl Withdrawn {
    /// Keeps `subscription`'s handler for stragglers during `grace`.
    pub(crate) fn add(&self, subscription: Arc<InternalSubscription>, grace: Duration) {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        entries.retain(|(_, until)| *until > now);
        entries.push((subscription, now + grace));
        self.count.store(entries.len(), Ordering::Release);
    }

    /// The withdrawn subscriptions (no queue group) whose subject matches `subject`, still
    /// within their grace.
    pub(crate) fn matching(&self, subject: &str) -> Vec<Arc<InternalSubscription>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let now = Instant::now();
        let mut entries = self.entries.lock();
        entries.retain(|(_, until)| *until > now);
        self.count.store(entries.len(), Ordering::Release);
        entries
            .iter()
            .filter(|(subscription, _)| subscription.queue.is_none())
            .filter(|(subscription, _)| subject_matches_filter(subject, &subscription.subject))
            .map(|(subscription, _)| subscription.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription(subject: &str, queue: Option<&str>) -> Arc<InternalSubscription> {
        Arc::new(InternalSubscription {
            id: 1,
            subject: subject.to_string(),
            queue: queue.map(str::to_string),
            handler: Arc::new(|_| {}),
        })
    }

    #[test]
    fn a_withdrawn_subscription_matches_within_its_grace_only() {
        let withdrawn = Withdrawn::default();
        assert!(withdrawn.matching("orders.new").is_empty());
        withdrawn.add(subscription("orders.>", None), Duration::from_secs(60));
        withdrawn.add(subscription("orders.*", Some("q")), Duration::from_secs(60));
        withdrawn.add(subscription("other", None), Duration::ZERO);
        let found = withdrawn.matching("orders.new");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].subject, "orders.>");
        assert!(withdrawn.matching("other").is_empty());
        assert!(withdrawn.matching("invoices.new").is_empty());
    }
}

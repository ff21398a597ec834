//! Unit-test double of core routing: a tiny in-process router implementing [`Transport`] so the
//! crate's tests can run without the server binary. Subject matching is the plain NATS grammar.

use crate::transport::InterestCallback;
use crate::{Handler, Message, Transport};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct TestRouter {
    next_id: AtomicU64,
    subscriptions: Mutex<Vec<(u64, String, Handler)>>,
    watches: Mutex<Vec<(u64, String, InterestCallback)>>,
}

impl TestRouter {
    pub(crate) fn new() -> Arc<TestRouter> {
        Arc::new(TestRouter::default())
    }

    /// Subscribe a channel; every matching message is sent into it.
    pub(crate) fn channel(&self, subject: &str) -> tokio::sync::mpsc::UnboundedReceiver<Message> {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        self.subscribe(
            subject,
            None,
            Arc::new(move |message| {
                let _ = sender.send(message);
            }),
        );
        receiver
    }

    /// Run the interest callbacks of every watch `changed` could match (outside the lock).
    fn notify_interest(&self, changed: &str) {
        let callbacks: Vec<InterestCallback> = self
            .watches
            .lock()
            .iter()
            .filter(|(_, watched, _)| crate::subject::matches(changed, watched))
            .map(|(_, _, callback)| callback.clone())
            .collect();
        for callback in callbacks {
            callback();
        }
    }
}

impl Transport for TestRouter {
    fn publish(&self, message: Message) {
        let subject = message.subject.clone();
        self.deliver(&subject, message);
    }

    fn deliver(&self, route_subject: &[u8], message: Message) {
        let subject = String::from_utf8_lossy(route_subject).to_string();
        let handlers: Vec<Handler> = self
            .subscriptions
            .lock()
            .iter()
            .filter(|(_, filter, _)| crate::subject::matches(filter, &subject))
            .map(|(_, _, handler)| handler.clone())
            .collect();
        for handler in handlers {
            handler(message.clone());
        }
    }

    fn subscribe(&self, subject: &str, _queue: Option<&str>, handler: Handler) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.subscriptions
            .lock()
            .push((id, subject.to_string(), handler));
        self.notify_interest(subject);
        id
    }

    fn unsubscribe(&self, id: u64) {
        let mut removed = Vec::new();
        self.subscriptions.lock().retain(|(sid, subject, _)| {
            if *sid == id {
                removed.push(subject.clone());
            }
            *sid != id
        });
        for subject in removed {
            self.notify_interest(&subject);
        }
    }

    fn has_interest(&self, subject: &str) -> bool {
        self.subscriptions
            .lock()
            .iter()
            .any(|(_, filter, _)| crate::subject::matches(filter, subject))
    }

    fn watch_interest(&self, subject: &str, callback: InterestCallback) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.watches
            .lock()
            .push((id, subject.to_string(), callback));
        id
    }

    fn unwatch_interest(&self, id: u64) {
        self.watches.lock().retain(|(watch, _, _)| *watch != id);
    }
}

//! The narrow interface between JetStream and the core server (implemented by `nats-server`).

use bytes::Bytes;
use std::sync::Arc;

/// A message as routing sees it. `headers` is the raw header block exactly as on the wire
/// (`NATS/1.0\r\nKey: Value\r\n\r\n`), `None` for a plain PUB/MSG.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub subject: Bytes,
    pub reply: Option<Bytes>,
    pub headers: Option<Bytes>,
    pub payload: Bytes,
}

/// Called for every message matching an internal subscription, on the publisher's task.
/// It must only enqueue (a channel send) and return.
pub type Handler = Arc<dyn Fn(Message) + Send + Sync>;

/// Called after a subscription that could match a watched subject was added or removed, on
/// the task that changed the subscriptions. It must only enqueue (the receiver then asks
/// [`Transport::has_interest`]); it may be called when nothing relevant changed.
pub type InterestCallback = Arc<dyn Fn() + Send + Sync>;

/// What JetStream needs from core routing.
pub trait Transport: Send + Sync + 'static {
    /// Route a message exactly as if a client had published it (subscribers, queue groups,
    /// internal subscriptions, no-responders handling does not apply).
    fn publish(&self, message: Message);

    /// [`Transport::publish`] each message in order (a batch's PubAcks), letting the
    /// implementation hand each destination the whole batch at once.
    fn publish_all(&self, messages: &mut dyn Iterator<Item = Message>) {
        for message in messages {
            self.publish(message);
        }
    }

    /// Route by `route_subject` but deliver `message` with its own subject, as nats-server does
    /// for JetStream deliveries: a pull or push consumer's message reaches the request's inbox
    /// (or the deliver subject) while the client sees the subject the message was stored under.
    fn deliver(&self, route_subject: &[u8], message: Message);

    /// Add an internal subscription (wildcards allowed, optional queue group). Returns an id
    /// for [`Transport::unsubscribe`].
    fn subscribe(&self, subject: &str, queue: Option<&str>, handler: Handler) -> u64;

    fn unsubscribe(&self, id: u64);

    /// [`Transport::unsubscribe`], except that for `grace` a message a peer server forwards
    /// here for the subject, sent before it heard of the withdrawal, still reaches the handler
    /// (it would otherwise be dropped unanswered). Without peers, the same as unsubscribing.
    fn withdraw(&self, id: u64, grace: std::time::Duration) {
        let _ = grace;
        self.unsubscribe(id);
    }

    /// Whether any subscription (client or internal) would receive a message on `subject`.
    fn has_interest(&self, subject: &str) -> bool;

    /// Watch the literal `subject`: `callback` runs after every subscribe or unsubscribe whose
    /// subject matches it, so a push consumer wakes when a subscriber arrives or leaves
    /// instead of polling. Register before the first [`Transport::has_interest`] check so no
    /// change falls between the two. Returns an id for [`Transport::unwatch_interest`].
    fn watch_interest(&self, subject: &str, callback: InterestCallback) -> u64;

    fn unwatch_interest(&self, id: u64);
}

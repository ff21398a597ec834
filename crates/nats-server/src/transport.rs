//! The core-routing side of `nats_jetstream::Transport`: JetStream publishes, delivers to a
//! stream's own subscribers, subscribes internally and watches interest through the
//! [`Router`](crate::router::Router). Built once by `server::run` when JetStream is enabled;
//! holds the server weakly so a stopped server is simply gone. Knows nothing about streams.

use crate::router::{Delivery, InterestCallback, PendingFlush};
use crate::server::Server;
use nats_jetstream::{Handler, Message, Transport};
use std::sync::Weak;

/// Core routing as JetStream sees it.
pub(crate) struct ServerTransport {
    server: Weak<Server>,
}

impl ServerTransport {
    pub(crate) fn new(server: Weak<Server>) -> Self {
        Self { server }
    }
}

impl Transport for ServerTransport {
    fn publish(&self, message: Message) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let mut pending = PendingFlush::default();
        let delivery = Delivery {
            subject: &message.subject,
            reply: message.reply.as_ref(),
            headers: message.headers.as_ref(),
            payload: &message.payload,
        };
        server.router.route(None, &delivery, &mut pending);
        pending.flush();
    }

    fn deliver(&self, route_subject: &[u8], message: Message) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let Ok(route_subject) = std::str::from_utf8(route_subject) else {
            return;
        };
        let mut pending = PendingFlush::default();
        let delivery = Delivery {
            subject: &message.subject,
            reply: message.reply.as_ref(),
            headers: message.headers.as_ref(),
            payload: &message.payload,
        };
        server
            .router
            .route_matching(route_subject, None, &delivery, &mut pending);
        pending.flush();
    }

    fn subscribe(&self, subject: &str, queue: Option<&str>, handler: Handler) -> u64 {
        match self.server.upgrade() {
            Some(server) => server.router.subscribe_internal(subject, queue, handler),
            None => 0,
        }
    }

    fn unsubscribe(&self, id: u64) {
        if let Some(server) = self.server.upgrade() {
            server.router.unsubscribe_internal(id);
        }
    }

    fn has_interest(&self, subject: &str) -> bool {
        self.server
            .upgrade()
            .is_some_and(|server| server.router.has_interest(subject))
    }

    fn watch_interest(&self, subject: &str, callback: InterestCallback) -> u64 {
        match self.server.upgrade() {
            Some(server) => server.router.watch_interest(subject, callback),
            None => 0,
        }
    }

    fn unwatch_interest(&self, id: u64) {
        if let Some(server) = self.server.upgrade() {
            server.router.unwatch_interest(id);
        }
    }
}

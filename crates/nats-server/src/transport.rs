//! The core-routing side of `nats_jetstream::Transport`: JetStream publishes, delivers to a
//! stream's own subscribers, subscribes internally and watches interest through the
//! [`Router`](crate::router::Router) of the account it serves. Built once by `server::run`
//! when JetStream is enabled; holds the account weakly so a stopped server is simply gone.
//! Knows nothing about streams.

use crate::accounts::Account;
use crate::router::{Delivery, InterestCallback, PendingFlush};
use nats_jetstream::{Handler, Message, Transport};
use std::sync::Weak;

/// Core routing as JetStream sees it: one account's subject table.
pub(crate) struct ServerTransport {
    account: Weak<Account>,
}

impl ServerTransport {
    pub(crate) fn new(account: Weak<Account>) -> Self {
        Self { account }
    }

    /// Route `messages` in order as published by no client, then flush `pending` once.
    fn route_all(&self, messages: &mut dyn Iterator<Item = Message>, mut pending: PendingFlush) {
        let Some(account) = self.account.upgrade() else {
            return;
        };
        for message in messages {
            let delivery = Delivery {
                subject: &message.subject,
                reply: message.reply.as_ref(),
                headers: message.headers.as_ref(),
                payload: &message.payload,
            };
            account.router.route(None, &delivery, &mut pending);
        }
        pending.flush();
    }
}

impl Transport for ServerTransport {
    fn publish(&self, message: Message) {
        self.route_all(&mut std::iter::once(message), PendingFlush::default());
    }

    /// A batch's PubAcks: one flush for all of them, written to the socket by this task (the
    /// stream's) when they all go to one idle client, as a client's reader does.
    fn publish_all(&self, messages: &mut dyn Iterator<Item = Message>) {
        self.route_all(messages, PendingFlush::writing_single_client());
    }

    fn deliver(&self, route_subject: &[u8], message: Message) {
        let Some(account) = self.account.upgrade() else {
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
        // A pull request that came through a service import waits on a response subject.
        if crate::accounts::deliver_routed(&account, route_subject, &delivery, &mut pending)
            .is_none()
        {
            account
                .router
                .route_matching(route_subject, None, &delivery, &mut pending);
        }
        pending.flush();
    }

    fn subscribe(&self, subject: &str, queue: Option<&str>, handler: Handler) -> u64 {
        match self.account.upgrade() {
            Some(account) => account.router.subscribe_internal(subject, queue, handler),
            None => 0,
        }
    }

    fn unsubscribe(&self, id: u64) {
        if let Some(account) = self.account.upgrade() {
            account.router.unsubscribe_internal(id);
        }
    }

    fn withdraw(&self, id: u64, grace: std::time::Duration) {
        if let Some(account) = self.account.upgrade() {
            account.router.withdraw_internal(id, grace);
        }
    }

    fn has_interest(&self, subject: &str) -> bool {
        self.account
            .upgrade()
            .is_some_and(|account| account.router.has_interest(subject))
    }

    fn watch_interest(&self, subject: &str, callback: InterestCallback) -> u64 {
        match self.account.upgrade() {
            Some(account) => account.router.watch_interest(subject, callback),
            None => 0,
        }
    }

    fn unwatch_interest(&self, id: u64) {
        if let Some(account) = self.account.upgrade() {
            account.router.unwatch_interest(id);
        }
    }
}

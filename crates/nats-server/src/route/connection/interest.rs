//! What a registered peer sends after the handshake: interest (`RS+`/`RS-`, kept in the named
//! account's sublist as route subscribers) and routed messages (`RMSG`/`HMSG`, to local
//! subscribers only).

use super::Session;
use crate::accounts::Account;
use crate::route::link::RouteSubscription;
use crate::router::{Delivery, Subscriber};
use nats_proto::RoutedMessage;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

impl Session {
    /// The account a route line names; an account we do not have is ignored, as nats-server
    /// ignores it (its interest and messages have nowhere to go here).
    fn account(&self, name: &[u8]) -> Option<Arc<Account>> {
        let name = std::str::from_utf8(name).ok()?;
        let account = self.server.accounts.lookup(name);
        if account.is_none() {
            tracing::debug!(
                "{} - rid:{} - Unknown account {:?}",
                self.shared.address,
                self.shared.id,
                name
            );
        }
        account
    }

    pub(super) fn remote_subscribe(
        &mut self,
        account: &[u8],
        subject: &[u8],
        queue: Option<&[u8]>,
        weight: u32,
    ) {
        let Some(link) = &self.link else {
            return;
        };
        let Some(account) = self.account(account) else {
            return;
        };
        let (Ok(subject), Ok(queue)) = (
            std::str::from_utf8(subject),
            queue.map(std::str::from_utf8).transpose(),
        ) else {
            return;
        };
        if !nats_subject::is_valid_subject(subject) {
            return;
        }
        if !self.routes.can_export(subject) {
            tracing::debug!(
                "{} - rid:{} - Can not export {subject:?}, ignoring remote subscription request",
                self.shared.address,
                self.shared.id
            );
            return;
        }
        let key = (
            account.name.clone(),
            subject.to_string(),
            queue.map(str::to_string),
        );
        let mut subscriptions = link.subscriptions.lock();
        if let Some(existing) = subscriptions.get(&key) {
            existing.weight.store(weight, Ordering::Relaxed);
            return;
        }
        let subscription = Arc::new(RouteSubscription {
            link: link.clone(),
            account: account.clone(),
            subject: key.1.clone(),
            queue: key.2.clone(),
            weight: AtomicU32::new(weight),
        });
        subscriptions.insert(key, subscription.clone());
        drop(subscriptions);
        account
            .router
            .insert(subject, queue, Subscriber::Route(subscription));
    }

    pub(super) fn remote_unsubscribe(
        &mut self,
        account: &[u8],
        subject: &[u8],
        queue: Option<&[u8]>,
    ) {
        let Some(link) = &self.link else {
            return;
        };
        let Some(account) = self.account(account) else {
            return;
        };
        let key = (
            account.name.clone(),
            String::from_utf8_lossy(subject).into_owned(),
            queue.map(|queue| String::from_utf8_lossy(queue).into_owned()),
        );
        let removed = link.subscriptions.lock().remove(&key);
        if let Some(subscription) = removed {
            account
                .router
                .remove(&key.1, key.2.as_deref(), &Subscriber::Route(subscription));
        }
    }

    pub(super) fn routed_message(&mut self, message: RoutedMessage) {
        let size = message.payload.len() + message.headers.as_ref().map_or(0, |h| h.len());
        let counters = &self.shared.counters;
        counters.in_msgs.fetch_add(1, Ordering::Relaxed);
        counters.in_bytes.fetch_add(size as u64, Ordering::Relaxed);
        if self.link.is_none() {
            return;
        }
        let Some(account) = self.account(&message.account) else {
            return;
        };
        let delivery = Delivery {
            subject: &message.subject,
            reply: message.reply.as_ref(),
            headers: message.headers.as_ref(),
            payload: &message.payload,
        };
        account
            .router
            .route_from_route(&delivery, &message.queues, &mut self.pending);
    }
}

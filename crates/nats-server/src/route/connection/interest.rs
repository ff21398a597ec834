//! What a registered peer sends after the handshake: interest (`RS+`/`RS-`, kept in the named
//! account's sublist as route subscribers; in an account not held yet, kept aside on the link
//! while the account is fetched, and taken in once it is added) and routed messages
//! (`RMSG`/`HMSG`, to local subscribers only; one in an account not held fetches it too).

use super::Session;
use crate::accounts::Account;
use crate::route::link::MAX_PENDING_INTEREST;
use crate::router::{Delivery, Subscriber};
use crate::security::jwt;
use crate::system::claims_fetch::fetch_account_aside;
use nats_proto::RoutedMessage;
use std::sync::atomic::Ordering;
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

    /// Whether accounts can arrive at run time (operator mode with a full or cache resolver):
    /// then interest in an account not held yet is kept for it, where nats-server registers a
    /// placeholder account (its static resolvers drop it, as config mode does).
    fn accounts_can_arrive(&self) -> bool {
        self.server
            .jwt
            .as_ref()
            .is_some_and(|resolver| resolver.directory().is_some())
    }

    pub(super) fn remote_subscribe(
        &mut self,
        account: &[u8],
        subject: &[u8],
        queue: Option<&[u8]>,
        weight: u32,
    ) {
        let Some(link) = self.link.clone() else {
            return;
        };
        let (Ok(name), Ok(subject), Ok(queue)) = (
            std::str::from_utf8(account),
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
        if let Some(account) = self.account(account) {
            link.add_interest(&account, subject, queue, weight);
            return;
        }
        if !self.accounts_can_arrive() || !jwt::is_account_key(name) {
            return;
        }
        let key = (
            Arc::from(name),
            subject.to_string(),
            queue.map(str::to_string),
        );
        {
            let mut pending = link.pending.lock();
            if pending.len() >= MAX_PENDING_INTEREST && !pending.contains_key(&key) {
                return;
            }
            pending.insert(key, weight);
        }
        // Added meanwhile: whoever takes the entry out of `pending` applies it.
        if let Some(account) = self.server.accounts.lookup(name) {
            link.adopt_pending(&account);
        } else {
            fetch_account_aside(&self.server, name);
        }
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
        let key = (
            Arc::from(String::from_utf8_lossy(account).as_ref()),
            String::from_utf8_lossy(subject).into_owned(),
            queue.map(|queue| String::from_utf8_lossy(queue).into_owned()),
        );
        if link.pending.lock().remove(&key).is_some() {
            return;
        }
        let Some(account) = self.account(account) else {
            return;
        };
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
            // Nobody here can be subscribed in it; nats-server looks the account up (and
            // adds it) all the same.
            if self.accounts_can_arrive() {
                if let Ok(name) = std::str::from_utf8(&message.account) {
                    fetch_account_aside(&self.server, name);
                }
            }
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

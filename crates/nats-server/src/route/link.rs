//! One established route ([`RouteLink`]) and the remote interest it announced
//! ([`RouteSubscription`], an entry of the shared sublist): what the router needs to send a
//! message across a route at most once.

use crate::client::{ClientShared, CloseReason};
use crate::router::Delivery;
use bytes::Bytes;
use nats_proto::RouteInfo;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Upper bound of an RMSG/HMSG head beyond account, subject, reply and queue names.
const ROUTED_HEAD_OVERHEAD: usize = 64;
/// At most this much interest a peer announced in accounts this server does not hold yet is
/// kept per route; beyond it, such interest is dropped (as all of it was before).
pub const MAX_PENDING_INTEREST: usize = 100_000;

/// A remote (or local) interest key: account, subject and queue group.
pub type InterestKey = (Arc<str>, String, Option<String>);

/// Interest a peer announced with `RS+`: a plain subscription, or a queue group with the number
/// of its members on that server (the weight of the group's random pick).
pub struct RouteSubscription {
    pub link: Arc<RouteLink>,
    /// The account whose table holds this entry.
    pub account: Arc<crate::accounts::Account>,
    pub subject: String,
    pub queue: Option<String>,
    pub weight: AtomicU32,
}

impl RouteSubscription {
    pub fn weight(&self) -> u32 {
        self.weight.load(Ordering::Relaxed).max(1)
    }
}

/// An established route to one peer server.
pub struct RouteLink {
    /// The connection: outbound queue, writer, counters (shared with client connections).
    pub connection: Arc<ClientShared>,
    /// Whether this connection is one we dialled.
    pub solicited: bool,
    /// The configured URL we dialled (an explicit or gossiped route); `None` when accepted.
    pub url: Option<crate::config::RouteUrl>,
    /// A configured route's URL whose dialer met this server again on another connection and
    /// left it to this one (nats-server's `upgradeRouteToSolicited`): the dialer waits for
    /// this route's end before dialling that URL again (`solicit.rs`).
    pub carried: Mutex<Option<crate::config::RouteUrl>>,
    /// Set once the route is unregistered: what a dialer waiting on it watches.
    pub ended: tokio::sync::watch::Sender<bool>,
    /// Accepted routes: the user and password of the peer's CONNECT.
    pub peer_credentials: Option<(Option<String>, Option<String>)>,
    /// The peer's INFO as last received.
    pub info: Mutex<RouteInfo>,
    /// The peer's interest, by account, subject and queue.
    pub subscriptions: Mutex<HashMap<InterestKey, Arc<RouteSubscription>>>,
    /// The peer's interest in accounts this server does not hold yet (operator mode with a
    /// full or cache resolver), with its weight: taken into their sublists once they are
    /// added ([`RouteLink::adopt_pending`]), as nats-server keeps it in a placeholder account.
    pub pending: Mutex<HashMap<InterestKey, u32>>,
}

impl RouteLink {
    /// Enter the peer's interest in `account`'s sublist (or set the weight of a queue group
    /// already entered).
    pub fn add_interest(
        self: &Arc<Self>,
        account: &Arc<crate::accounts::Account>,
        subject: &str,
        queue: Option<&str>,
        weight: u32,
    ) {
        let key = (
            account.name.clone(),
            subject.to_string(),
            queue.map(str::to_string),
        );
        let mut subscriptions = self.subscriptions.lock();
        if let Some(existing) = subscriptions.get(&key) {
            existing.weight.store(weight, Ordering::Relaxed);
            return;
        }
        let subscription = Arc::new(RouteSubscription {
            link: self.clone(),
            account: account.clone(),
            subject: key.1.clone(),
            queue: key.2.clone(),
            weight: AtomicU32::new(weight),
        });
        subscriptions.insert(key, subscription.clone());
        drop(subscriptions);
        account.router.insert(
            subject,
            queue,
            crate::router::Subscriber::Route(subscription),
        );
    }

    /// Take the interest kept for `account` (just added to the accounts table) into its
    /// sublist. Whoever removes a pending entry applies it: the route reader that kept it
    /// looks the account up again afterwards, so an account added in between loses nothing.
    pub fn adopt_pending(self: &Arc<Self>, account: &Arc<crate::accounts::Account>) {
        let adopted: Vec<(InterestKey, u32)> = {
            let mut pending = self.pending.lock();
            let keys: Vec<InterestKey> = pending
                .keys()
                .filter(|(name, _, _)| *name == account.name)
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|key| pending.remove(&key).map(|weight| (key, weight)))
                .collect()
        };
        for ((_, subject, queue), weight) in adopted {
            self.add_interest(account, &subject, queue.as_deref(), weight);
        }
    }

    /// Whether this route stands for a dialled one: we dialled it, or a configured route's
    /// dialer left its URL to it (`/routez` `did_solicit`, as nats-server's after it upgrades a
    /// route met twice).
    pub fn did_solicit(&self) -> bool {
        self.solicited || self.carried.lock().is_some()
    }

    /// Whether this route dialled `url` or carries it for its dialer.
    pub fn stands_for(&self, url: &crate::config::RouteUrl) -> bool {
        self.url.as_ref() == Some(url) || self.carried.lock().as_ref() == Some(url)
    }

    /// A configured route's dialer met this server on another connection: this route carries
    /// `url` from now on (unless it dialled one itself), and the dialer waits for its end.
    pub fn carry(&self, url: &crate::config::RouteUrl) {
        if self.url.is_none() {
            self.carried.lock().get_or_insert_with(|| url.clone());
        }
    }

    /// Until this route is unregistered.
    pub async fn until_ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }

    pub fn rid(&self) -> u64 {
        self.connection.id
    }

    pub fn remote_id(&self) -> String {
        self.info.lock().server_id.clone()
    }

    /// Queue an RMSG/HMSG of `account` carrying `delivery`, naming the queue groups the peer must pick a
    /// member of. `None` when the route is closing or just overflowed (then it is closed: a
    /// route too slow to take its backlog is cut as nats-server cuts a slow consumer, so
    /// publishers never wait on it for long); `Some(true)` when queued over the stall
    /// threshold: a publishing client then waits briefly, as nats-server stalls a fast producer
    /// on a route's backlog as on a client's.
    pub fn send_message(
        &self,
        account: &[u8],
        delivery: &Delivery<'_>,
        queues: &[&[u8]],
    ) -> Option<bool> {
        let connection = &self.connection;
        let reply = delivery.reply.map(|reply| &reply[..]);
        let headers = delivery.headers.filter(|headers| !headers.is_empty());
        let head_capacity = account.len()
            + delivery.subject.len()
            + reply.map_or(0, <[u8]>::len)
            + queues.iter().map(|queue| queue.len() + 1).sum::<usize>()
            + ROUTED_HEAD_OVERHEAD;
        let size = delivery.payload.len() + headers.map_or(0, Bytes::len);
        let mut outbound = connection.outbound.lock();
        if outbound.closing.is_some() {
            return None;
        }
        outbound.push_frame(
            head_capacity,
            |out| {
                nats_proto::encode_routed_message_head(
                    out,
                    account,
                    delivery.subject,
                    reply,
                    queues,
                    headers.map(Bytes::len),
                    delivery.payload.len(),
                )
            },
            headers.map(|headers| &headers[..]),
            delivery.payload,
        );
        let pending = outbound.queued() + outbound.in_flight;
        if pending > connection.max_pending {
            drop(outbound);
            tracing::error!(
                "{} - rid:{} - Slow Consumer Detected: MaxPending of {} Exceeded",
                connection.address,
                connection.id,
                connection.max_pending
            );
            connection.close(CloseReason::SlowConsumerPendingBytes);
            return None;
        }
        connection.counters.count_out_locked(size);
        drop(outbound);
        Some(connection.over_stall(pending))
    }
}

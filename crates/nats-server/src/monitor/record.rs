//! One connection as `/connz` shows it, read once: from a live connection at the time of the
//! request, or saved when the connection closed (`closed.rs`). Sorting and printing read the
//! same figures.

use crate::client::{ClientMeta, ClientShared, ClientSubscription, CloseReason};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

/// A subscription as `subs=1` / `subs=detail` print it.
#[derive(Clone, Debug)]
pub struct SubscriptionRecord {
    pub account: String,
    pub subject: String,
    pub queue: Option<String>,
    pub sid: String,
    pub delivered: u64,
    /// 0: no UNSUB limit.
    pub max: u64,
    pub cid: u64,
}

impl SubscriptionRecord {
    pub fn of(subscription: &ClientSubscription) -> SubscriptionRecord {
        SubscriptionRecord {
            account: super::accounts::account_name(&subscription.client).to_string(),
            subject: subscription.subject.clone(),
            queue: subscription.queue.clone(),
            sid: String::from_utf8_lossy(&subscription.sid).into_owned(),
            delivered: subscription.delivered.load(Ordering::Relaxed),
            max: subscription.max.load(Ordering::Relaxed),
            cid: subscription.client.id,
        }
    }
}

/// How a connection ended.
#[derive(Clone, Copy, Debug)]
pub struct Closure {
    pub stop: OffsetDateTime,
    pub reason: CloseReason,
}

#[derive(Clone, Debug)]
pub struct ConnectionRecord {
    pub cid: u64,
    /// Came through the websocket listener (`type: websocket`).
    pub websocket: bool,
    pub address: SocketAddr,
    pub start: OffsetDateTime,
    pub last_activity: OffsetDateTime,
    /// Set for a closed connection.
    pub closure: Option<Closure>,
    pub meta: ClientMeta,
    pub account: String,
    pub subscription_count: usize,
    /// Filled when the request shows or filters subscriptions, and always for a closed
    /// connection (its subscriptions are gone from the sublist).
    pub subscriptions: Vec<SubscriptionRecord>,
    pub pending: usize,
    pub round_trip: Duration,
    pub in_msgs: u64,
    pub in_bytes: u64,
    pub out_msgs: u64,
    pub out_bytes: u64,
}

impl ConnectionRecord {
    /// A live connection. One without a measured round trip is sent an RTT ping, as
    /// nats-server does, so the next read shows it.
    pub fn open(client: &Arc<ClientShared>, with_subscriptions: bool) -> ConnectionRecord {
        let live: Vec<Arc<ClientSubscription>> =
            client.subscriptions.lock().values().cloned().collect();
        let round_trip = match *client.rtt.lock() {
            Some(round_trip) => round_trip,
            None => {
                client.send_rtt_ping();
                Duration::ZERO
            }
        };
        let subscriptions = if with_subscriptions {
            live.iter()
                .map(|subscription| SubscriptionRecord::of(subscription))
                .collect()
        } else {
            Vec::new()
        };
        ConnectionRecord::read(client, live.len(), subscriptions, round_trip, None)
    }

    /// A connection being removed (`subscriptions`: the ones it held, already taken out of
    /// the sublist).
    pub fn closed(
        client: &ClientShared,
        subscriptions: &[Arc<ClientSubscription>],
        reason: CloseReason,
    ) -> ConnectionRecord {
        let round_trip = client.rtt.lock().unwrap_or_default();
        let closure = Closure {
            stop: OffsetDateTime::now_utc(),
            reason,
        };
        let subscriptions: Vec<SubscriptionRecord> = subscriptions
            .iter()
            .map(|subscription| SubscriptionRecord::of(subscription))
            .collect();
        ConnectionRecord::read(
            client,
            subscriptions.len(),
            subscriptions,
            round_trip,
            Some(closure),
        )
    }

    fn read(
        client: &ClientShared,
        subscription_count: usize,
        subscriptions: Vec<SubscriptionRecord>,
        round_trip: Duration,
        closure: Option<Closure>,
    ) -> ConnectionRecord {
        let counters = &client.counters;
        ConnectionRecord {
            cid: client.id,
            websocket: client.websocket.get().is_some(),
            address: client.address,
            start: client.start,
            last_activity: *client.last_activity.lock(),
            closure,
            meta: client.meta.lock().clone(),
            account: super::accounts::account_name(client).to_string(),
            subscription_count,
            subscriptions,
            pending: client.pending_bytes(),
            round_trip,
            in_msgs: counters.in_msgs.load(Ordering::Relaxed),
            in_bytes: counters.in_bytes.load(Ordering::Relaxed),
            out_msgs: counters.out_msgs.load(Ordering::Relaxed),
            out_bytes: counters.out_bytes.load(Ordering::Relaxed),
        }
    }

    /// The time uptime and idle are measured to: the close for a closed connection.
    pub fn end(&self, now: OffsetDateTime) -> OffsetDateTime {
        self.closure.map_or(now, |closure| closure.stop)
    }
}

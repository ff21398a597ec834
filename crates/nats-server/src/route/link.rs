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
    pub solicited: bool,
    /// The peer's INFO as last received.
    pub info: Mutex<RouteInfo>,
    /// The peer's interest, by account, subject and queue.
    pub subscriptions: Mutex<HashMap<InterestKey, Arc<RouteSubscription>>>,
}

impl RouteLink {
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

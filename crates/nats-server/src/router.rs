//! Core routing, run on the publisher's own task: match the subject in the shared sublist
//! (cached), hand the message to every plain subscriber and to one member of each queue
//! group. Client subscribers get the frame appended to their outbound buffer (their writer is
//! woken once per read chunk, see [`PendingFlush`]); internal subscribers (JetStream) get
//! their handler called, which only enqueues.
//!
//! Client and internal subscriptions live in one `Sublist<Subscriber>`, so a JetStream-enabled
//! server pays nothing extra on the core path. In a cluster the same table holds the interest
//! peers announced on routes (`Subscriber::Route`): a message then crosses each route at most
//! once, naming the queue groups whose member was picked on that peer; a message that came from
//! a route goes to local subscribers only. Without a cluster, none of that code runs.

mod clustered;

use crate::accounts::imports::ImportTarget;
use crate::client::{ClientShared, ClientSubscription};
use crate::route::{RouteSubscription, Routes};
use crate::withdrawn::Withdrawn;
use bytes::Bytes;
use nats_jetstream::{Handler, Message};
use nats_subject::Sublist;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// An internal (in-process) subscription, made through the JetStream transport.
pub struct InternalSubscription {
    pub id: u64,
    pub subject: String,
    pub queue: Option<String>,
    pub handler: Handler,
}

/// One entry of the subject table.
#[derive(Clone)]
pub enum Subscriber {
    Client(Arc<ClientSubscription>),
    Internal(Arc<InternalSubscription>),
    /// Interest a peer server announced on a route.
    Route(Arc<RouteSubscription>),
    /// An import between accounts (`accounts/imports.rs`): a stream import's shadow of a client
    /// subscription, a service import, or an account's response table.
    Import(Arc<ImportTarget>),
}

impl Subscriber {
    /// A service import: acts for this server's clients only, never announced on routes.
    fn is_service_import(&self) -> bool {
        matches!(self, Subscriber::Import(target) if target.is_service())
    }
}

impl PartialEq for Subscriber {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Subscriber::Client(left), Subscriber::Client(right)) => Arc::ptr_eq(left, right),
            (Subscriber::Internal(left), Subscriber::Internal(right)) => Arc::ptr_eq(left, right),
            (Subscriber::Route(left), Subscriber::Route(right)) => Arc::ptr_eq(left, right),
            (Subscriber::Import(left), Subscriber::Import(right)) => Arc::ptr_eq(left, right),
            _ => false,
        }
    }
}

impl Eq for Subscriber {}

impl std::hash::Hash for Subscriber {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Subscriber::Client(subscription) => (Arc::as_ptr(subscription) as usize).hash(state),
            Subscriber::Internal(subscription) => (Arc::as_ptr(subscription) as usize).hash(state),
            Subscriber::Route(subscription) => (Arc::as_ptr(subscription) as usize).hash(state),
            Subscriber::Import(target) => (Arc::as_ptr(target) as usize).hash(state),
        }
    }
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subscriber::Client(subscription) => write!(
                formatter,
                "Client(cid {} sid {:?})",
                subscription.client.id, subscription.sid
            ),
            Subscriber::Internal(subscription) => {
                write!(formatter, "Internal({})", subscription.id)
            }
            Subscriber::Route(subscription) => write!(
                formatter,
                "Route(rid {} {})",
                subscription.link.rid(),
                subscription.subject
            ),
            Subscriber::Import(target) => {
                write!(formatter, "Import({:p})", Arc::as_ptr(target))
            }
        }
    }
}

/// Replies of JetStream deliveries (acks), which may carry `@<inbox>` between servers.
const JETSTREAM_ACK_PREFIX: &[u8] = b"$JS.ACK.";

/// One message being routed. `headers` is the raw header block of an HPUB.
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    pub subject: &'a Bytes,
    pub reply: Option<&'a Bytes>,
    pub headers: Option<&'a Bytes>,
    pub payload: &'a Bytes,
}

/// Clients whose outbound buffer got data during one read chunk; their writers are woken once
/// at the end of the chunk rather than once per message.
#[derive(Default)]
pub struct PendingFlush {
    clients: Vec<Arc<ClientShared>>,
    /// Clients whose backlog passed the stall mark (half of max_pending, or 2 MiB while every
    /// connection together holds more than 8 MiB; see `client/outbound.rs`): the publisher
    /// waits a little for them (nats-server's fast-producer stall) so a slower-but-healthy
    /// subscriber keeps up.
    stalled: Vec<Arc<ClientShared>>,
    /// Routes that got messages: written to from this task when their writer is idle.
    routes: Vec<Arc<ClientShared>>,
    /// Write to the clients from this task too (when their writer is idle): set on a route's
    /// reader, so a message crossing the cluster is handed from socket to socket with no
    /// wake-up of another task on the way.
    write_clients: bool,
    /// Write to the client from this task when the batch reached only one (and its writer is
    /// idle): a client's reader, a stream's PubAcks. A request answered to one connection
    /// then wakes no writer task; a batch for several clients still wakes their writers, which
    /// the runtime may spread over its workers.
    write_single: bool,
}

const PENDING_DEDUPE_SCAN: usize = 16;

impl PendingFlush {
    pub fn add(&mut self, client: &Arc<ClientShared>) {
        let already = self
            .clients
            .iter()
            .rev()
            .take(PENDING_DEDUPE_SCAN)
            .any(|pending| pending.id == client.id);
        if !already {
            self.clients.push(client.clone());
        }
    }

    /// A route connection got data (see [`crate::client::outbound::Outbound::write_direct`]).
    pub fn add_route(&mut self, route: &Arc<ClientShared>) {
        if !self.routes.iter().any(|pending| pending.id == route.id) {
            self.routes.push(route.clone());
        }
    }

    /// A route reader's: writes to its clients' sockets itself.
    pub fn writing_clients() -> PendingFlush {
        PendingFlush {
            write_clients: true,
            ..PendingFlush::default()
        }
    }

    /// A client's reader's, or a stream's PubAcks': writes a batch that reached one client to
    /// its socket itself (see [`PendingFlush::write_single`]).
    pub fn writing_single_client() -> PendingFlush {
        PendingFlush {
            write_single: true,
            ..PendingFlush::default()
        }
    }

    pub fn flush(&mut self) {
        let direct = self.write_clients || (self.write_single && self.clients.len() == 1);
        for client in self.clients.drain(..) {
            if direct {
                client.write_or_wake();
            } else {
                client.wake_writer();
            }
        }
        for route in self.routes.drain(..) {
            route.write_or_wake();
        }
    }

    fn add_stalled(&mut self, client: &Arc<ClientShared>) {
        if !self.stalled.iter().any(|stalled| stalled.id == client.id) {
            self.stalled.push(client.clone());
        }
    }

    pub fn has_stalled(&self) -> bool {
        !self.stalled.is_empty()
    }

    /// nats-server's fast-producer stall, after a read chunk: waits briefly for the subscribers
    /// whose backlog passed their stall mark, at most [`STALL_TOTAL`] in all, and forgets them.
    ///
    /// A route's reader stalls too, where nats-server's never waits (it stalls client producers
    /// only, and cuts such a subscriber: `cluster route_stall` on three nats-servers, by hand;
    /// docs/parity.md "route flow control"): without it, a subscriber a little slower than a
    /// publisher on another server was cut as a slow consumer once its backlog passed
    /// max_pending (bench README, "Every bench once on a quiet machine"). The wait backs up
    /// the route, whose sender then stalls the publisher. A route waits only for a subscriber that drained within
    /// [`ROUTE_STALL_DRAINING`]: one that stopped reading would slow the route's other traffic
    /// for nothing, and is cut when its backlog passes max_pending, as before. While it stalls a
    /// route reads at most 64 KiB at a time, so it still carries at least 64 KiB per
    /// [`STALL_TOTAL`] (6.4 MB/s): a subscriber draining slower than that is cut in the end.
    pub async fn stall(&mut self) {
        let started = tokio::time::Instant::now();
        for client in std::mem::take(&mut self.stalled) {
            if self.write_clients && !client.drained_within(ROUTE_STALL_DRAINING) {
                continue;
            }
            let remaining = STALL_TOTAL.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                break;
            }
            // A route waits until the subscriber is back under its mark (within the total): its
            // chunks are bounded while it stalls (`route/connection`), so a subscriber
            // draining faster than a chunk per STALL_TOTAL keeps up.
            let limit = if self.write_clients {
                remaining
            } else {
                client.stall_duration().min(remaining)
            };
            client.wait_drained(limit).await;
        }
    }
}

/// At most this long per read chunk is a producer held back for slow subscribers (nats-server's
/// `stallTotalAllowed`).
const STALL_TOTAL: Duration = Duration::from_millis(10);
/// A route's reader stalls only for subscribers whose writes drained something this recently.
const ROUTE_STALL_DRAINING: Duration = Duration::from_millis(250);

/// Told when a subscription that could match a watched subject comes or goes; only enqueues.
pub type InterestCallback = Arc<dyn Fn() + Send + Sync>;

/// Interest watches (JetStream push consumers waiting for a subscriber on their deliver
/// subject), keyed by the watched literal subject so a literal SUB finds its watchers with one
/// lookup; only a wildcard SUB walks them all.
#[derive(Default)]
struct InterestWatches {
    by_subject: HashMap<String, Vec<(u64, InterestCallback)>>,
    subject_of: HashMap<u64, String>,
}

/// Internal subscriptions by id.
type InternalSubscriptions = HashMap<u64, Arc<InternalSubscription>>;

/// A publisher's own cache of match results, checked against the sublist it came from.
pub type MatchCache = nats_subject::LocalMatchCache<Subscriber>;

/// The subject table of one account and the routing counters.
pub struct Router {
    /// The account this table belongs to (named on every `RS+`/`RMSG` it sends).
    account: Arc<str>,
    sublist: Sublist<Subscriber>,
    /// Made at the first internal subscription (most accounts have none).
    internal: Mutex<Option<Box<InternalSubscriptions>>>,
    next_internal_id: AtomicU64,
    random_state: AtomicU64,
    /// Made at the first watch (most accounts have none).
    watches: Mutex<Option<Box<InterestWatches>>>,
    /// Number of watches, read without the lock so SUB/UNSUB pay nothing when there are none.
    watch_count: AtomicUsize,
    /// Set when the server is part of a cluster.
    routes: OnceLock<Arc<Routes>>,
    /// Internal subscriptions withdrawn a moment ago (`withdraw_internal`).
    withdrawn: Withdrawn,
}

impl Router {
    pub fn new(account: Arc<str>) -> Router {
        Router {
            account,
            sublist: Sublist::new(),
            internal: Mutex::new(None),
            next_internal_id: AtomicU64::new(1),
            random_state: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
            watches: Mutex::new(None),
            watch_count: AtomicUsize::new(0),
            routes: OnceLock::new(),
            withdrawn: Withdrawn::default(),
        }
    }

    /// Make this router part of a cluster (once, at start-up).
    pub fn set_routes(&self, routes: Arc<Routes>) {
        let _ = self.routes.set(routes);
    }

    /// Tell the peers about a local subscription that came or went.
    fn local_interest(
        &self,
        subject: &str,
        queue: Option<&str>,
        subscriber: &Subscriber,
        added: bool,
    ) {
        if let Some(routes) = self.routes.get() {
            if !matches!(subscriber, Subscriber::Route(_)) && !subscriber.is_service_import() {
                routes.local_interest_changed(&self.account, subject, queue, added);
            }
        }
    }

    /// Add a subscription; subjects were validated by the caller, so an error here means an
    /// invalid subject slipped through and the subscription is simply not added.
    pub fn insert(&self, subject: &str, queue: Option<&str>, subscriber: Subscriber) -> bool {
        let routed = self.routes.get().is_some().then(|| subscriber.clone());
        let inserted = self.sublist.insert(subject, queue, subscriber).is_ok();
        if inserted {
            if let Some(subscriber) = routed {
                self.local_interest(subject, queue, &subscriber, true);
            }
            self.notify_interest(subject);
        }
        inserted
    }

    pub fn subscription_count(&self) -> usize {
        self.sublist.count()
    }

    /// Every entry of the subject table: subject, queue group and subscriber (`/subsz`).
    pub fn subscriptions(&self) -> Vec<(String, Option<Arc<str>>, Subscriber)> {
        self.sublist.subscriptions()
    }

    /// The sublist counters (/subsz sums them over the accounts).
    pub fn statistics(&self) -> nats_subject::SublistStats {
        self.sublist.stats()
    }

    pub fn remove(&self, subject: &str, queue: Option<&str>, subscriber: &Subscriber) {
        if self.sublist.remove(subject, queue, subscriber) {
            self.local_interest(subject, queue, subscriber, false);
            self.notify_interest(subject);
        }
    }

    /// Call `callback` after every subscribe/unsubscribe that could match the literal `subject`.
    pub fn watch_interest(&self, subject: &str, callback: InterestCallback) -> u64 {
        let id = self.next_internal_id.fetch_add(1, Ordering::Relaxed);
        let mut watches = self.watches.lock();
        let watches = watches.get_or_insert_with(Box::default);
        watches
            .by_subject
            .entry(subject.to_string())
            .or_default()
            .push((id, callback));
        watches.subject_of.insert(id, subject.to_string());
        self.watch_count.fetch_add(1, Ordering::Relaxed);
        id
    }

    pub fn unwatch_interest(&self, id: u64) {
        let mut watches = self.watches.lock();
        let Some(watches) = watches.as_mut() else {
            return;
        };
        let Some(subject) = watches.subject_of.remove(&id) else {
            return;
        };
        if let Some(list) = watches.by_subject.get_mut(&subject) {
            list.retain(|(watch, _)| *watch != id);
            if list.is_empty() {
                watches.by_subject.remove(&subject);
            }
        }
        self.watch_count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Run the callbacks of the watches `changed` (a subscription's subject) could match;
    /// outside the lock, since a callback may take other locks.
    fn notify_interest(&self, changed: &str) {
        if self.watch_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let callbacks: Vec<InterestCallback> = {
            let watches = self.watches.lock();
            let Some(watches) = watches.as_ref() else {
                return;
            };
            if nats_subject::is_literal(changed) {
                watches
                    .by_subject
                    .get(changed)
                    .map(|list| list.iter().map(|(_, callback)| callback.clone()).collect())
                    .unwrap_or_default()
            } else {
                watches
                    .by_subject
                    .iter()
                    .filter(|(watched, _)| nats_subject::subject_matches_filter(watched, changed))
                    .flat_map(|(_, list)| list.iter().map(|(_, callback)| callback.clone()))
                    .collect()
            }
        };
        for callback in callbacks {
            callback();
        }
    }

    pub fn subscribe_internal(&self, subject: &str, queue: Option<&str>, handler: Handler) -> u64 {
        let id = self.next_internal_id.fetch_add(1, Ordering::Relaxed);
        let subscription = Arc::new(InternalSubscription {
            id,
            subject: subject.to_string(),
            queue: queue.map(str::to_string),
            handler,
        });
        self.internal
            .lock()
            .get_or_insert_with(Box::default)
            .insert(id, subscription.clone());
        self.insert(subject, queue, Subscriber::Internal(subscription));
        id
    }

    pub fn unsubscribe_internal(&self, id: u64) {
        self.remove_internal(id);
    }

    /// Takes internal subscription `id` out of the table; the subscription removed.
    fn remove_internal(&self, id: u64) -> Option<Arc<InternalSubscription>> {
        let subscription = self
            .internal
            .lock()
            .as_mut()
            .and_then(|internal| internal.remove(&id))?;
        self.remove(
            &subscription.subject,
            subscription.queue.as_deref(),
            &Subscriber::Internal(subscription.clone()),
        );
        Some(subscription)
    }

    /// [`Router::unsubscribe_internal`], except that for `grace` a message a route forwards here
    /// for the subject while nothing here subscribes it (sent before the peer heard our `RS-`)
    /// still reaches the handler (`withdrawn.rs`).
    pub fn withdraw_internal(&self, id: u64, grace: Duration) {
        let subscription = self
            .internal
            .lock()
            .as_ref()
            .and_then(|internal| internal.get(&id).cloned());
        // Kept before it leaves the table: a straggler finds one or the other.
        if let Some(subscription) = subscription {
            self.withdrawn.add(subscription, grace);
            self.remove_internal(id);
        }
    }

    pub fn has_interest(&self, subject: &str) -> bool {
        !self.sublist.matches(subject).is_empty()
    }

    /// A cheap, thread-safe pseudo-random number for queue member choice.
    fn next_random(&self) -> u64 {
        // SplitMix64 over a shared counter: fair enough spread, no lock, no thread-local setup.
        let mut value = self
            .random_state
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        value ^ (value >> 31)
    }

    /// Route one message; returns how many subscribers got it.
    pub fn route(
        &self,
        publisher: Option<&Arc<ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> usize {
        let Ok(subject) = std::str::from_utf8(delivery.subject) else {
            return 0;
        };
        self.route_matching(subject, publisher, delivery, pending)
    }

    /// Route `delivery` to the subscribers of `match_subject`; the MSG they get carries
    /// `delivery.subject`. JetStream deliveries match the inbox or deliver subject but show the
    /// subject the message was stored under.
    pub fn route_matching(
        &self,
        match_subject: &str,
        publisher: Option<&Arc<ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> usize {
        let result = self.sublist.matches(match_subject);
        self.route_result(match_subject, &result, publisher, delivery, pending)
    }

    /// `route` with the publisher's own cache of match results in front of the sublist's
    /// (nats-server's per-client results cache): a subject published before, with no
    /// subscription changed in this account since, costs no lock and no shared reference count.
    pub fn route_cached(
        &self,
        publisher: Option<&Arc<ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
        cache: &mut MatchCache,
    ) -> usize {
        let Ok(subject) = std::str::from_utf8(delivery.subject) else {
            return 0;
        };
        let result = cache.matches(&self.sublist, subject);
        self.route_result(subject, result, publisher, delivery, pending)
    }

    fn route_result(
        &self,
        match_subject: &str,
        result: &nats_subject::MatchResult<Subscriber>,
        publisher: Option<&Arc<ClientShared>>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> usize {
        if self.routes.get().is_some() {
            return self.route_clustered(match_subject, result, publisher, delivery, pending);
        }
        let mut delivered = 0;
        for subscriber in result.plain.iter() {
            if self.deliver(publisher, subscriber, delivery, pending) {
                delivered += 1;
            }
        }
        for (_, group) in result.queues.iter() {
            if group.is_empty() {
                continue;
            }
            // Start at a random member; move on when one cannot take it (closed, echo off,
            // max reached) so the group still gets the message once.
            let start = (self.next_random() % group.len() as u64) as usize;
            for offset in 0..group.len() {
                let subscriber = &group[(start + offset) % group.len()];
                if self.deliver(publisher, subscriber, delivery, pending) {
                    delivered += 1;
                    break;
                }
            }
        }
        delivered
    }

    fn deliver(
        &self,
        publisher: Option<&Arc<ClientShared>>,
        subscriber: &Subscriber,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> bool {
        match subscriber {
            Subscriber::Client(subscription) => {
                self.deliver_client(publisher, subscription, delivery, pending)
            }
            // Route subscribers are handled by the caller (collected per route).
            Subscriber::Route(_) => false,
            Subscriber::Import(target) => target.deliver(publisher, delivery, pending),
            Subscriber::Internal(subscription) => {
                (subscription.handler)(Message {
                    subject: delivery.subject.clone(),
                    reply: delivery.reply.cloned(),
                    headers: delivery.headers.cloned(),
                    payload: delivery.payload.clone(),
                });
                true
            }
        }
    }

    /// Hand a message to a client subscription of this account (directly, or through a stream
    /// import's shadow); the subscription leaves this table when its max is reached.
    #[inline]
    pub(crate) fn deliver_client(
        &self,
        publisher: Option<&Arc<ClientShared>>,
        subscription: &Arc<ClientSubscription>,
        delivery: &Delivery<'_>,
        pending: &mut PendingFlush,
    ) -> bool {
        let client = &subscription.client;
        if let Some(publisher) = publisher {
            if publisher.id == client.id && !client.echo() {
                return false;
            }
        }
        if let Some(filter) = &subscription.deny_filter {
            let subject = String::from_utf8_lossy(delivery.subject);
            if filter.denies_delivery(&subject) {
                return false;
            }
        }
        let max = subscription.max.load(Ordering::Relaxed);
        let count = subscription.delivered.fetch_add(1, Ordering::Relaxed) + 1;
        if max > 0 && count > max {
            return false;
        }
        let Some(stalled) = client.enqueue_message(subscription, delivery) else {
            return false;
        };
        pending.add(client);
        if stalled {
            pending.add_stalled(client);
        }
        if max > 0 && count == max {
            self.remove_client_subscription(subscription);
        }
        true
    }

    /// Drop a client subscription from the table, from its client's sid map and from the
    /// accounts it imports streams from.
    pub fn remove_client_subscription(&self, subscription: &Arc<ClientSubscription>) {
        crate::accounts::imports::remove_shadows(subscription);
        subscription
            .client
            .forget_subscription(&subscription.sid, subscription);
        self.remove(
            &subscription.subject,
            subscription.queue.as_deref(),
            &Subscriber::Client(subscription.clone()),
        );
    }
}

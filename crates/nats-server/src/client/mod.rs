//! One client connection: the state other tasks may touch ([`ClientShared`]: outbound buffer,
//! flags, counters, subscriptions) and the two tasks that own the socket halves
//! (`reader.rs`: parse and dispatch; `writer.rs`: coalesced writes, PINGs).
//!
//! Publishers append MSG frames to a subscriber's outbound buffer under a short lock and wake
//! its writer; a subscriber whose backlog passes `max_pending` is closed as a slow consumer
//! instead of stalling the publisher.

pub(crate) mod direct;
mod outbound;
mod reader;
pub(crate) mod secure;
pub(crate) mod writer;

pub use outbound::Outbound;

use crate::router::Delivery;
use crate::server::Server;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use time::OffsetDateTime;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Why a connection ended (the texts nats-server shows in logs and /connz).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    ClientClosed,
    ReadError,
    WriteError,
    ProtocolViolation,
    AuthenticationTimeout,
    AuthenticationViolation,
    SlowConsumerPendingBytes,
    SlowConsumerWriteDeadline,
    StaleConnection,
    MaxConnectionsExceeded,
    TlsHandshakeError,
    ServerShutdown,
    /// A user JWT expired while connected.
    AuthenticationExpired,
    /// A user JWT revoked by an account update while connected.
    Revocation,
    /// A PUB/HPUB announced more than `max_payload`.
    MaxPayloadExceeded,
    /// A protocol line longer than `max_control_line`.
    MaxControlLineExceeded,
    /// A config reload removed the route this connection was dialled for.
    RouteRemoved,
}

impl CloseReason {
    pub fn text(self) -> &'static str {
        match self {
            CloseReason::ClientClosed => "Client Closed",
            CloseReason::ReadError => "Read Error",
            CloseReason::WriteError => "Write Error",
            CloseReason::ProtocolViolation => "Protocol Violation",
            CloseReason::AuthenticationTimeout => "Authentication Timeout",
            CloseReason::AuthenticationViolation => "Authentication Failure",
            CloseReason::SlowConsumerPendingBytes => "Slow Consumer (Pending Bytes)",
            CloseReason::SlowConsumerWriteDeadline => "Slow Consumer (Write Deadline)",
            CloseReason::StaleConnection => "Stale Connection",
            CloseReason::MaxConnectionsExceeded => "Maximum Connections Exceeded",
            CloseReason::TlsHandshakeError => "TLS Handshake Failure",
            CloseReason::ServerShutdown => "Server Shutdown",
            CloseReason::AuthenticationExpired => "Authentication Expired",
            CloseReason::Revocation => "Credentials Revoked",
            CloseReason::MaxPayloadExceeded => "Maximum Message Payload Exceeded",
            CloseReason::MaxControlLineExceeded => "Maximum Control Line Exceeded",
            CloseReason::RouteRemoved => "Route Removed",
        }
    }

    /// Whether nats-server still writes to a connection it closes for this reason (its
    /// `skipFlushOnClose` is set for the others): a websocket client gets no CLOSE frame then.
    pub(crate) fn flushes(self) -> bool {
        !matches!(
            self,
            CloseReason::ReadError
                | CloseReason::WriteError
                | CloseReason::SlowConsumerPendingBytes
                | CloseReason::SlowConsumerWriteDeadline
                | CloseReason::TlsHandshakeError
        )
    }

    /// Slow consumers are dropped at once: flushing their backlog is what they cannot take.
    fn discards_backlog(self) -> bool {
        matches!(
            self,
            CloseReason::SlowConsumerPendingBytes | CloseReason::SlowConsumerWriteDeadline
        )
    }
}

/// What the client said in CONNECT, for /connz.
#[derive(Clone, Debug, Default)]
pub struct ClientMeta {
    pub name: Option<String>,
    pub lang: Option<String>,
    pub version: Option<String>,
    pub user: Option<String>,
    /// Set once a TLS handshake completed: (version, cipher suite), as /connz shows them.
    pub tls: Option<(String, String)>,
    /// The handshake came before INFO.
    pub tls_first: bool,
    /// The certificates the client presented in the TLS handshake.
    pub tls_peer_certificates: Vec<crate::security::certificate::PeerCertificate>,
    /// The `protocol` of CONNECT (1 and up: the client takes async INFO).
    pub protocol: i64,
}

/// A subscription of a client (an entry of the shared sublist).
pub struct ClientSubscription {
    pub client: Arc<ClientShared>,
    pub subject: String,
    pub queue: Option<String>,
    pub sid: Bytes,
    /// Set for a wildcard subscription overlapping the user's subscribe deny list: messages on
    /// denied subjects are skipped at delivery.
    pub deny_filter: Option<Arc<crate::security::auth::UserPermissions>>,
    /// 0 = unlimited (UNSUB with max sets it).
    pub max: AtomicU64,
    pub delivered: AtomicU64,
    /// Its stand-ins in the tables of accounts its account imports streams from.
    pub shadows: parking_lot::Mutex<Vec<Arc<crate::accounts::imports::ImportTarget>>>,
}

/// Upper bound of a MSG/HMSG head beyond subject, sid and reply: verb, spaces, two sizes, CRLF.
const FRAME_HEAD_OVERHEAD: usize = 56;

/// A subscriber's backlog above which its producers may be held back (see
/// [`ClientShared::over_stall`]) ...
const STALL_FLOOR: usize = 2 * 1024 * 1024;
/// ... when all connections' backlogs together pass this. One fast publisher and one slower
/// subscriber (compare's core_pubsub) let the backlog grow to it: at 32 MiB it was the peak RSS
/// of the whole compare run, reached or not depending on scheduling (18-43 MiB of VmHWM).
const STALL_BUDGET: usize = 8 * 1024 * 1024;

/// Milliseconds since the first call in this process: a cheap clock for per-write stamps.
fn since_epoch_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

/// Per-connection counters, summed into /varz.
#[derive(Default)]
pub struct ClientCounters {
    pub in_msgs: AtomicU64,
    pub in_bytes: AtomicU64,
    pub out_msgs: AtomicU64,
    pub out_bytes: AtomicU64,
}

impl ClientCounters {
    /// One message of `size` bytes queued out. Every caller holds the connection's outbound
    /// lock (client deliveries and route messages alike), so these are plain stores: no
    /// read-modify-write on the publish path.
    pub(crate) fn count_out_locked(&self, size: usize) {
        self.out_msgs
            .store(self.out_msgs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.out_bytes.store(
            self.out_bytes.load(Ordering::Relaxed) + size as u64,
            Ordering::Relaxed,
        );
    }
}

/// The part of a connection other tasks touch.
pub struct ClientShared {
    pub id: u64,
    pub address: SocketAddr,
    pub start: OffsetDateTime,
    pub outbound: Mutex<Outbound>,
    writer_wake: Notify,
    pub(crate) reader_stop: Notify,
    /// Signalled by the writer after each write, for producers stalled on this client.
    drained: Notify,
    /// When the last write drained some of the backlog ([`since_epoch_ms`]): a route's reader
    /// waits only for a subscriber that is draining.
    drained_at_ms: AtomicU64,
    headers: AtomicBool,
    echo: AtomicBool,
    pub pings_outstanding: AtomicU32,
    pub counters: ClientCounters,
    pub max_pending: usize,
    /// `-V`: log every frame delivered to this client (`->> [MSG ...]`), as nats-server does.
    pub trace: bool,
    pub meta: Mutex<ClientMeta>,
    pub last_activity: Mutex<OffsetDateTime>,
    pub rtt: Mutex<Option<std::time::Duration>>,
    /// When our last PING went out, until its PONG: the round trip `rtt` is measured from it.
    rtt_start: Mutex<Option<std::time::Instant>>,
    /// The client's first PING was answered (nats-server's `firstPongSent`): RTT pings may go.
    pub first_pong_sent: AtomicBool,
    pub subscriptions: Mutex<HashMap<Bytes, Arc<ClientSubscription>>>,
    /// Set at CONNECT for a user with `allow_responses`: reply subjects of requests delivered
    /// to this client, each with its remaining publishes and expiry.
    pub response_permits: std::sync::OnceLock<ResponsePermits>,
    /// The challenge sent in INFO when nkey users exist; CONNECT must carry its signature.
    pub nonce: Option<String>,
    /// With `verify_and_map`: the verified client certificate's identity, set after the TLS
    /// handshake and read at CONNECT.
    pub certificate: std::sync::OnceLock<crate::security::certificate::CertificateIdentity>,
    /// Set for a client that came through the websocket listener.
    pub(crate) websocket: std::sync::OnceLock<crate::websocket::ClientSession>,
    /// The account the connection authenticated into, set once at CONNECT (unset: `$G`).
    account: std::sync::OnceLock<Arc<crate::accounts::Account>>,
    server: std::sync::Weak<Server>,
}

impl ClientShared {
    /// The account set at CONNECT (`None` before it: the global account).
    pub fn account(&self) -> Option<&Arc<crate::accounts::Account>> {
        self.account.get()
    }

    pub(crate) fn set_account(&self, account: Arc<crate::accounts::Account>) {
        let _ = self.account.set(account);
    }
}

/// Reply subjects a responder may publish to despite its publish rules.
pub struct ResponsePermits {
    pub permission: crate::config::ResponsePermission,
    pub permits: Mutex<HashMap<Bytes, (u64, std::time::Instant)>>,
}

/// Above this many outstanding permits, expired ones are swept on insert.
const RESPONSE_PERMIT_SWEEP: usize = 1024;

impl ResponsePermits {
    fn grant(&self, reply: &Bytes) {
        let mut permits = self.permits.lock();
        let now = std::time::Instant::now();
        if permits.len() >= RESPONSE_PERMIT_SWEEP {
            permits.retain(|_, (_, expires)| *expires > now);
        }
        permits.insert(
            reply.clone(),
            (self.permission.max, now + self.permission.expires),
        );
    }

    /// Use one permit for `subject`; false when there is none (or it expired).
    pub fn take(&self, subject: &Bytes) -> bool {
        let mut permits = self.permits.lock();
        let Some((remaining, expires)) = permits.get_mut(subject) else {
            return false;
        };
        if *expires <= std::time::Instant::now() || *remaining == 0 {
            permits.remove(subject);
            return false;
        }
        *remaining -= 1;
        if *remaining == 0 {
            permits.remove(subject);
        }
        true
    }
}

impl ClientShared {
    pub fn echo(&self) -> bool {
        self.echo.load(Ordering::Relaxed)
    }

    pub fn headers(&self) -> bool {
        self.headers.load(Ordering::Relaxed)
    }

    pub fn wake_writer(&self) {
        self.writer_wake.notify_one();
    }

    /// Write what is queued from this task if the writer is idle and the socket takes it all
    /// (see `outbound::Outbound::write_direct`), else wake the writer.
    pub fn write_or_wake(&self) {
        if self.outbound.lock().write_direct() {
            // For producers stalled on this connection, as after the writer's writes.
            self.note_drained();
        } else {
            self.wake_writer();
        }
    }

    /// Bytes queued and being written.
    pub fn pending_bytes(&self) -> usize {
        let outbound = self.outbound.lock();
        outbound.queued() + outbound.in_flight
    }

    /// Queue a PING of ours and start timing its round trip; the caller wakes the writer.
    pub fn send_ping(&self) {
        self.pings_outstanding.fetch_add(1, Ordering::Relaxed);
        *self.rtt_start.lock() = Some(std::time::Instant::now());
        self.queue_bytes(b"PING\r\n");
    }

    /// A PONG came: nothing is outstanding, and the round trip of our last PING is known.
    pub fn pong_received(&self) {
        self.pings_outstanding.store(0, Ordering::Relaxed);
        if let Some(start) = self.rtt_start.lock().take() {
            *self.rtt.lock() = Some(start.elapsed());
        }
    }

    /// CONNECT arrived: until a PING measures it, the round trip is estimated as the time
    /// since the connection was accepted, as nats-server does.
    pub fn estimate_rtt(&self) {
        let mut rtt = self.rtt.lock();
        if rtt.is_none() {
            *rtt = Some((OffsetDateTime::now_utc() - self.start).unsigned_abs());
        }
    }

    /// Measure the round trip now (`/connz` found none): nats-server's `sendRTTPing`, which
    /// waits for the client's first PING or two seconds after the connection was accepted.
    pub fn send_rtt_ping(&self) {
        let settled = self.first_pong_sent.load(Ordering::Relaxed)
            || OffsetDateTime::now_utc() - self.start > time::Duration::seconds(2);
        if settled && self.closing().is_none() && self.rtt_start.lock().is_none() {
            self.send_ping();
            self.wake_writer();
        }
    }

    /// Append protocol bytes of our own (PONG, +OK, -ERR, INFO); the caller wakes the writer.
    pub fn queue_bytes(&self, bytes: &[u8]) {
        let mut outbound = self.outbound.lock();
        if outbound.closing.is_none() {
            outbound.push_slice(bytes);
        }
    }

    /// Append a MSG/HMSG frame for `subscription`. `None` when the connection is closing or just
    /// became a slow consumer; `Some(true)` when delivered but the backlog is over the stall
    /// threshold (the publisher should then briefly wait, as nats-server stalls fast producers).
    pub fn enqueue_message(
        &self,
        subscription: &ClientSubscription,
        delivery: &Delivery<'_>,
    ) -> Option<bool> {
        let headers = delivery.headers.filter(|_| self.headers());
        let sid = &subscription.sid[..];
        let reply = delivery.reply.map(|reply| &reply[..]);
        let size;
        let stalled;
        {
            let mut outbound = self.outbound.lock();
            if outbound.closing.is_some() {
                return None;
            }
            let head_capacity = delivery.subject.len()
                + sid.len()
                + reply.map_or(0, <[u8]>::len)
                + FRAME_HEAD_OVERHEAD;
            match headers {
                Some(headers) => {
                    size = headers.len() + delivery.payload.len();
                    outbound.push_frame(
                        head_capacity,
                        |out| {
                            nats_proto::encode_hmsg_head(
                                out,
                                delivery.subject,
                                sid,
                                reply,
                                headers.len(),
                                delivery.payload.len(),
                            )
                        },
                        Some(headers),
                        delivery.payload,
                    );
                }
                None => {
                    size = delivery.payload.len();
                    outbound.push_frame(
                        head_capacity,
                        |out| {
                            nats_proto::encode_msg_head(
                                out,
                                delivery.subject,
                                sid,
                                reply,
                                delivery.payload.len(),
                            )
                        },
                        None,
                        delivery.payload,
                    );
                }
            }
            let pending = outbound.queued() + outbound.in_flight;
            if pending > self.max_pending {
                outbound.closing = Some(CloseReason::SlowConsumerPendingBytes);
                outbound.clear();
                drop(outbound);
                self.note_slow_consumer();
                return None;
            }
            stalled = self.over_stall(pending);
            self.counters.count_out_locked(size);
        }
        if let (Some(permits), Some(reply)) = (self.response_permits.get(), delivery.reply) {
            permits.grant(reply);
        }
        if self.trace {
            self.trace_delivery(subscription, delivery);
        }
        Some(stalled)
    }

    fn trace_delivery(&self, subscription: &ClientSubscription, delivery: &Delivery<'_>) {
        let reply = delivery
            .reply
            .map(|reply| format!("{} ", String::from_utf8_lossy(reply)))
            .unwrap_or_default();
        let subject = String::from_utf8_lossy(delivery.subject);
        let sid = String::from_utf8_lossy(&subscription.sid);
        let frame = match delivery.headers.filter(|_| self.headers()) {
            Some(headers) => format!(
                "HMSG {subject} {sid} {reply}{} {}",
                headers.len(),
                headers.len() + delivery.payload.len()
            ),
            None => format!("MSG {subject} {sid} {reply}{}", delivery.payload.len()),
        };
        tracing::trace!("{} - cid:{} - ->> [{}]", self.address, self.id, frame);
    }

    /// Whether producers should be held back for this backlog. nats-server: above half of
    /// max_pending. We also stop a producer once the backlog passes a few MB while the whole
    /// process holds more than [`STALL_BUDGET`]: one subscriber may still buffer a burst (which
    /// lets a publisher finish early on a busy machine), many together cannot multiply it.
    pub fn over_stall(&self, pending: usize) -> bool {
        pending > self.max_pending / 2
            || (pending > STALL_FLOOR && outbound::backlog_total() > STALL_BUDGET)
    }

    /// The backlog at which stalling can start.
    fn stall_threshold(&self) -> usize {
        (self.max_pending / 2).min(STALL_FLOOR)
    }

    /// Some of the backlog was written: wakes the producers stalled on this client.
    pub(crate) fn note_drained(&self) {
        self.drained_at_ms
            .store(since_epoch_ms(), Ordering::Relaxed);
        self.drained.notify_waiters();
    }

    /// Whether a write drained some of the backlog within `within` (a new connection counts as
    /// draining).
    pub fn drained_within(&self, within: std::time::Duration) -> bool {
        let last = self.drained_at_ms.load(Ordering::Relaxed);
        since_epoch_ms().saturating_sub(last) <= within.as_millis() as u64
    }

    /// Wait (bounded by `limit`) until this client's backlog no longer calls for a stall.
    pub async fn wait_drained(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let drained = self.drained.notified();
            if !self.over_stall(self.pending_bytes()) || self.closing().is_some() {
                return;
            }
            if tokio::time::timeout_at(deadline, drained).await.is_err() {
                return;
            }
        }
    }

    /// How long a producer is stalled for this backlog (as nats-server): 2ms at the stall
    /// threshold, growing linearly to 5ms at max_pending.
    pub fn stall_duration(&self) -> std::time::Duration {
        let pending = self.pending_bytes() as f64;
        let threshold = self.stall_threshold() as f64;
        let span = (self.max_pending as f64 - threshold).max(1.0);
        let share = ((pending - threshold) / span).clamp(0.0, 1.0);
        std::time::Duration::from_micros(2000 + (3000.0 * share) as u64)
    }

    fn note_slow_consumer(&self) {
        tracing::info!(
            "{} - cid:{} - Slow Consumer Detected: MaxPending of {} Exceeded",
            self.address,
            self.id,
            self.max_pending
        );
        if let Some(server) = self.server.upgrade() {
            server.stats.slow_consumers.fetch_add(1, Ordering::Relaxed);
        }
        self.writer_wake.notify_one();
        self.reader_stop.notify_one();
    }

    /// Start closing: the writer flushes what is queued (unless the reason discards it) and
    /// shuts the socket; the reader stops.
    pub fn close(&self, reason: CloseReason) {
        {
            let mut outbound = self.outbound.lock();
            if outbound.closing.is_some() {
                return;
            }
            outbound.closing = Some(reason);
            if reason.discards_backlog() {
                outbound.clear();
            }
        }
        self.writer_wake.notify_one();
        self.reader_stop.notify_one();
    }

    pub fn closing(&self) -> Option<CloseReason> {
        self.outbound.lock().closing
    }

    /// Whether the client's map still holds this subscription.
    pub fn has_subscription(&self, subscription: &Arc<ClientSubscription>) -> bool {
        self.subscriptions
            .lock()
            .get(&subscription.sid)
            .is_some_and(|existing| Arc::ptr_eq(existing, subscription))
    }

    /// Remove `sid` from the client's map if it still names this subscription.
    pub fn forget_subscription(&self, sid: &Bytes, subscription: &Arc<ClientSubscription>) {
        let mut subscriptions = self.subscriptions.lock();
        if subscriptions
            .get(sid)
            .is_some_and(|existing| Arc::ptr_eq(existing, subscription))
        {
            subscriptions.remove(sid);
        }
    }
}

/// Set up a new connection and spawn its reader and writer tasks (after a TLS handshake when
/// the server has TLS).
pub fn spawn_connection(server: &Arc<Server>, stream: TcpStream, address: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let id = server.next_client_id();
    let shared = new_shared(server, id, address);
    let over_limit = !server.register_client(&shared);
    let mut info = BytesMut::new();
    server.encode_info(&mut info, &shared, false);
    if let Some(tls) = server.client_tls() {
        tokio::spawn(secure::establish(
            server.clone(),
            tls,
            shared,
            stream,
            info,
            over_limit,
        ));
        return;
    }
    let (read_half, write_half) = stream.into_split();
    if over_limit {
        refuse_over_limit(server, shared, &info, write_half);
        return;
    }
    shared.queue_bytes(&info);
    tracing::debug!("{} - cid:{} - Client connection created", address, id);
    let write_half = direct::share(&shared, write_half);
    start_tasks(server, shared, read_half, write_half);
}

/// The shared state of a new connection (a client's, or a route's: routes reuse the outbound
/// queue and the writer).
pub(crate) fn new_shared(server: &Arc<Server>, id: u64, address: SocketAddr) -> Arc<ClientShared> {
    let now = OffsetDateTime::now_utc();
    Arc::new(ClientShared {
        id,
        address,
        start: now,
        outbound: Mutex::new(Outbound::new()),
        writer_wake: Notify::new(),
        reader_stop: Notify::new(),
        drained: Notify::new(),
        drained_at_ms: AtomicU64::new(since_epoch_ms()),
        headers: AtomicBool::new(false),
        echo: AtomicBool::new(true),
        pings_outstanding: AtomicU32::new(0),
        counters: ClientCounters::default(),
        max_pending: usize::try_from(server.options.max_pending.max(0)).unwrap_or(usize::MAX),
        trace: server.current_options().trace,
        meta: Mutex::new(ClientMeta::default()),
        last_activity: Mutex::new(now),
        rtt: Mutex::new(None),
        rtt_start: Mutex::new(None),
        first_pong_sent: AtomicBool::new(false),
        subscriptions: Mutex::new(HashMap::new()),
        response_permits: std::sync::OnceLock::new(),
        nonce: server
            .authenticator()
            .nonce_required()
            .then(crate::security::auth::new_nonce),
        certificate: std::sync::OnceLock::new(),
        websocket: std::sync::OnceLock::new(),
        account: std::sync::OnceLock::new(),
        server: Arc::downgrade(server),
    })
}

/// nats-server sends INFO first, then the error, then closes.
pub(crate) fn refuse_over_limit<W>(
    server: &Arc<Server>,
    shared: Arc<ClientShared>,
    info: &[u8],
    socket: W,
) where
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    shared.queue_bytes(info);
    let mut error = BytesMut::new();
    nats_proto::encode_err(&mut error, "maximum connections exceeded");
    shared.queue_bytes(&error);
    shared.close(CloseReason::MaxConnectionsExceeded);
    server
        .closed_connections
        .record(&shared, &[], CloseReason::MaxConnectionsExceeded);
    tokio::spawn(writer::run(server.clone(), shared, socket));
}

/// Spawn the reader and writer over the two halves of an established connection (plain TCP
/// halves or a TLS stream's: each kind gets its own compiled copy, so plain text pays nothing).
pub(crate) fn start_tasks<R, W>(
    server: &Arc<Server>,
    shared: Arc<ClientShared>,
    read_half: R,
    write_half: W,
) where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(writer::run(server.clone(), shared.clone(), write_half));
    tokio::spawn(reader::run(server.clone(), shared, read_half));
}

//! One route connection from either side: the handshake (INFO/CONNECT, authorization, cluster
//! name, route to self, duplicate route), then the read loop applying the peer's interest
//! (`RS+`/`RS-`), routed messages (`RMSG`/`HMSG`, to local subscribers only), gossip (an INFO
//! about another server: dial it) and keepalives. The writer is the client connection's.

use super::link::{RouteLink, RouteSubscription};
use super::registry::Routes;
use crate::accounts::Account;
use crate::client::writer::{self, WriterSettings};
use crate::client::{ClientShared, CloseReason};
use crate::config::RouteUrl;
use crate::router::{Delivery, PendingFlush, Subscriber};
use crate::server::Server;
use bytes::{BufMut, BytesMut};
use nats_proto::{
    ProtocolError, RouteConnect, RouteInfo, RouteOp, RouteParser, RouteSubjectRules, RoutedMessage,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;

const READ_CHUNK: usize = 64 * 1024;
/// Routed messages may be as large as any server of the cluster allows.
const ROUTE_MAX_PAYLOAD: usize = 64 * 1024 * 1024;
/// Route INFO/CONNECT/RS lines can be long (many connect_urls, long subjects).
const ROUTE_MAX_CONTROL_LINE: usize = 64 * 1024;

/// How a route connection ended, for the soliciting side's retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteEnd {
    /// It was registered with this peer id, then closed.
    Registered(String),
    /// A route to ourselves: never dial this address again.
    ToSelf,
    /// Refused or closed before registering (duplicate, name conflict, error).
    NotRegistered(Option<String>),
}

struct Session {
    server: Arc<Server>,
    routes: Arc<Routes>,
    shared: Arc<ClientShared>,
    solicited: bool,
    /// The URL we dialled (credentials for CONNECT).
    url: Option<RouteUrl>,
    /// Accepting side: CONNECT received and accepted.
    connected: bool,
    link: Option<Arc<RouteLink>>,
    remote_id: Option<String>,
    to_self: bool,
    pending: PendingFlush,
    trace: bool,
    /// When our last timing PING went out; its PONG gives the route's round trip (/routez
    /// `rtt`), as nats-server times its route pings.
    rtt_ping: Option<std::time::Instant>,
    /// When the round trip was last measured.
    rtt_measured: Option<std::time::Instant>,
    /// How often the round trip is measured again (the route ping interval).
    rtt_interval: std::time::Duration,
}

enum Next {
    Continue,
    Close(CloseReason),
}

/// Our route INFO.
pub fn our_info(server: &Server, routes: &Routes) -> RouteInfo {
    let cluster = server.options.cluster.clone().unwrap_or_default();
    let address = server.route_address.get().copied();
    let port = address.map_or(0, |address| address.port());
    let ip = match &cluster.advertise {
        Some(advertise) => format!("nats-route://{}/", advertise.trim_end_matches('/')),
        None => String::new(),
    };
    RouteInfo {
        server_id: server.server_id.clone(),
        server_name: server.server_name.clone(),
        version: crate::server::VERSION.into(),
        // An older route protocol and no pool or compression fields: nats-server 2.10+ then
        // keeps one unpooled route with us, naming the account on every protocol line.
        proto: 1,
        go: crate::server::GO_FIELD.into(),
        host: cluster.host.clone(),
        port,
        headers: true,
        auth_required: cluster.auth_required(),
        tls_required: cluster.tls.is_some(),
        tls_verify: cluster.tls.is_some(),
        max_payload: server.options.max_payload,
        jetstream: server.jetstream.get().is_some(),
        ip,
        cluster: routes.cluster_name(),
        cluster_dynamic: routes.dynamic_name,
        import: permission_rules(cluster.permissions.as_ref(), |permissions| {
            permissions.publish.as_ref()
        }),
        export: permission_rules(cluster.permissions.as_ref(), |permissions| {
            permissions.subscribe.as_ref()
        }),
        connect_urls: if cluster.no_advertise {
            Vec::new()
        } else {
            super::own_client_urls(server)
        },
        ..RouteInfo::default()
    }
}

/// One direction of the cluster permissions as the route INFO carries it.
fn permission_rules(
    permissions: Option<&crate::config::Permissions>,
    direction: impl Fn(&crate::config::Permissions) -> Option<&crate::config::SubjectRules>,
) -> Option<RouteSubjectRules> {
    permissions
        .and_then(direction)
        .map(|rules| RouteSubjectRules {
            allow: rules.allow.clone(),
            deny: rules.deny.clone(),
        })
}

fn encode_info(out: &mut BytesMut, info: &RouteInfo) {
    out.put_slice(b"INFO ");
    out.put_slice(&serde_json::to_vec(info).unwrap_or_else(|_| b"{}".to_vec()));
    out.put_slice(b"\r\n");
}

fn writer_settings(server: &Server) -> WriterSettings {
    let cluster = server.options.cluster.clone().unwrap_or_default();
    let ping_interval = cluster
        .route_ping_interval(&server.options)
        .max(std::time::Duration::from_millis(10));
    WriterSettings {
        ping_interval,
        first_ping: ping_interval.min(std::time::Duration::from_secs(1)),
        ping_max: u32::try_from(cluster.ping_max.unwrap_or(server.options.ping_max).max(0))
            .unwrap_or(u32::MAX),
        write_deadline: cluster
            .write_deadline
            .unwrap_or(server.options.write_deadline),
    }
}

/// Serve a connection accepted on the route port.
pub async fn run_accepted(
    server: Arc<Server>,
    routes: Arc<Routes>,
    stream: TcpStream,
    peer: SocketAddr,
) {
    let shared = crate::client::new_shared(&server, server.next_client_id(), peer);
    tracing::info!("{} - rid:{} - Route connection created", peer, shared.id);
    let _ = stream.set_nodelay(true);
    let Some(tls) = routes.tls.get() else {
        queue_info(&server, &routes, &shared);
        let (read_half, write_half) = stream.into_split();
        run(server, routes, shared, read_half, write_half, false, None).await;
        return;
    };
    match tls.accept(stream).await {
        Ok(stream) => {
            queue_info(&server, &routes, &shared);
            let (read_half, write_half) = tokio::io::split(stream);
            run(server, routes, shared, read_half, write_half, false, None).await;
        }
        Err(error) => tls_failed(&shared, &error),
    }
}

fn queue_info(server: &Server, routes: &Routes, shared: &ClientShared) {
    let mut info = BytesMut::new();
    encode_info(&mut info, &our_info(server, routes));
    shared.queue_bytes(&info);
}

fn tls_failed(shared: &ClientShared, error: &str) {
    tracing::error!(
        "{} - rid:{} - TLS route handshake error: {error}",
        shared.address,
        shared.id
    );
    tracing::info!(
        "{} - rid:{} - Router connection closed: {}",
        shared.address,
        shared.id,
        CloseReason::TlsHandshakeError.text()
    );
}

/// Serve a connection we dialled to `url`, until it closes.
pub async fn run_solicited(
    server: Arc<Server>,
    routes: Arc<Routes>,
    stream: TcpStream,
    url: RouteUrl,
) -> RouteEnd {
    let peer = stream
        .peer_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], url.port)));
    let shared = crate::client::new_shared(&server, server.next_client_id(), peer);
    tracing::info!("{} - rid:{} - Route connection created", peer, shared.id);
    let _ = stream.set_nodelay(true);
    let Some(tls) = routes.tls.get() else {
        let (read_half, write_half) = stream.into_split();
        return run(
            server,
            routes,
            shared,
            read_half,
            write_half,
            true,
            Some(url),
        )
        .await;
    };
    match tls.connect(&url.host, stream).await {
        Ok(stream) => {
            let (read_half, write_half) = tokio::io::split(stream);
            run(
                server,
                routes,
                shared,
                read_half,
                write_half,
                true,
                Some(url),
            )
            .await
        }
        Err(error) => {
            tls_failed(&shared, &error);
            RouteEnd::NotRegistered(None)
        }
    }
}

/// The handshake and read loop over either stream: plain TCP halves, or a TLS stream's.
async fn run<R, W>(
    server: Arc<Server>,
    routes: Arc<Routes>,
    shared: Arc<ClientShared>,
    mut read_half: R,
    write_half: W,
    solicited: bool,
    url: Option<RouteUrl>,
) -> RouteEnd
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let writer = tokio::spawn(writer::run_with(
        server.clone(),
        shared.clone(),
        write_half,
        writer_settings(&server),
    ));
    let cluster = server.options.cluster.clone().unwrap_or_default();
    let auth_timeout = cluster
        .auth_timeout
        .unwrap_or(crate::config::options::DEFAULT_AUTH_TIMEOUT);
    let mut session = Session {
        trace: server.options.trace,
        server: server.clone(),
        routes,
        shared: shared.clone(),
        solicited,
        url,
        connected: solicited,
        link: None,
        remote_id: None,
        to_self: false,
        pending: PendingFlush::default(),
        rtt_ping: None,
        rtt_measured: None,
        rtt_interval: writer_settings(&server).ping_interval,
    };
    let handshake_deadline =
        tokio::time::Instant::now() + auth_timeout.max(std::time::Duration::from_secs(2));
    let mut parser = RouteParser::new(ROUTE_MAX_PAYLOAD, ROUTE_MAX_CONTROL_LINE);
    let mut buffer = BytesMut::with_capacity(READ_CHUNK);
    let reason = 'connection: loop {
        let wanted = parser.pending_frame_len().saturating_sub(buffer.len());
        if buffer.capacity() - buffer.len() < wanted.max(4096) {
            buffer.reserve(wanted.max(READ_CHUNK));
        }
        let registered = session.link.is_some();
        let read = tokio::select! {
            biased;
            _ = shared.reader_stop.notified() => break 'connection None,
            _ = handshake_sleep(handshake_deadline, registered) => {
                if !session.connected {
                    session.send_err("Authentication Timeout");
                    break 'connection Some(CloseReason::AuthenticationTimeout);
                }
                break 'connection Some(CloseReason::ProtocolViolation);
            }
            read = read_half.read_buf(&mut buffer) => read,
        };
        match read {
            Ok(0) => break Some(CloseReason::ClientClosed),
            Ok(_) => {}
            Err(_) => break Some(CloseReason::ReadError),
        }
        loop {
            match parser.parse(&mut buffer) {
                Ok(Some(operation)) => {
                    if let Next::Close(reason) = session.dispatch(operation) {
                        session.pending.flush();
                        break 'connection Some(reason);
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    session.parse_error(&error);
                    session.pending.flush();
                    break 'connection Some(if session.connected {
                        CloseReason::ProtocolViolation
                    } else {
                        CloseReason::AuthenticationViolation
                    });
                }
            }
        }
        session.pending.flush();
        *shared.last_activity.lock() = time::OffsetDateTime::now_utc();
    };
    if let Some(reason) = reason {
        shared.close(reason);
    }
    let reason = shared.closing().unwrap_or(CloseReason::ClientClosed);
    tracing::info!(
        "{} - rid:{} - Router connection closed: {}",
        shared.address,
        shared.id,
        reason.text()
    );
    let end = if session.to_self {
        RouteEnd::ToSelf
    } else if let Some(link) = session.link.take() {
        session.routes.unregister(&link);
        super::clients_connect_urls_changed(&server);
        RouteEnd::Registered(link.remote_id())
    } else {
        RouteEnd::NotRegistered(session.remote_id.clone())
    };
    let _ = writer.await;
    end
}

async fn handshake_sleep(deadline: tokio::time::Instant, registered: bool) {
    if registered {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep_until(deadline).await;
}

impl Session {
    fn send(&self, bytes: &[u8]) {
        self.shared.queue_bytes(bytes);
        self.shared.wake_writer();
    }

    fn send_err(&self, text: &str) {
        let mut frame = BytesMut::new();
        nats_proto::encode_err(&mut frame, text);
        self.send(&frame);
    }

    fn parse_error(&self, error: &ProtocolError) {
        tracing::error!(
            "{} - rid:{} - Route parser ERROR: {error}",
            self.shared.address,
            self.shared.id
        );
        if !self.connected {
            // nats-server: anything but CONNECT first on the route port is refused as an
            // authorization violation.
            self.send_err("Authorization Violation");
        } else if let Some(text) = error.err_text() {
            self.send_err(text);
        }
    }

    fn dispatch(&mut self, operation: RouteOp) -> Next {
        if self.trace {
            trace_in(&self.shared, &operation);
        }
        if !self.connected && !matches!(operation, RouteOp::Connect(_)) {
            tracing::error!(
                "{} - rid:{} - authentication error",
                self.shared.address,
                self.shared.id
            );
            self.send_err("Authorization Violation");
            return Next::Close(CloseReason::AuthenticationViolation);
        }
        match operation {
            RouteOp::Connect(json) => self.connect(&json),
            RouteOp::Info(json) => self.info(&json),
            RouteOp::Ping => {
                self.send(b"PONG\r\n");
                Next::Continue
            }
            RouteOp::Pong => {
                self.shared.pings_outstanding.store(0, Ordering::Relaxed);
                self.pong();
                Next::Continue
            }
            RouteOp::Ok => Next::Continue,
            RouteOp::Err(text) => {
                tracing::error!(
                    "{} - rid:{} - Received error from route: {}",
                    self.shared.address,
                    self.shared.id,
                    String::from_utf8_lossy(&text)
                );
                Next::Close(CloseReason::ClientClosed)
            }
            RouteOp::Subscribe {
                account,
                subject,
                queue,
                weight,
            } => {
                self.remote_subscribe(&account, &subject, queue.as_deref(), weight);
                Next::Continue
            }
            RouteOp::Unsubscribe {
                account,
                subject,
                queue,
            } => {
                self.remote_unsubscribe(&account, &subject, queue.as_deref());
                Next::Continue
            }
            RouteOp::Message(message) => {
                self.routed_message(message);
                Next::Continue
            }
        }
    }

    /// The accepting side: the peer's CONNECT.
    fn connect(&mut self, json: &[u8]) -> Next {
        if self.solicited || self.connected {
            return Next::Continue;
        }
        let Ok(connect) = serde_json::from_slice::<RouteConnect>(json) else {
            return Next::Close(CloseReason::ProtocolViolation);
        };
        if connect.lang.is_some() {
            tracing::error!(
                "{} - rid:{} - attempted to connect to route port",
                self.shared.address,
                self.shared.id
            );
            self.send_err("attempted to connect to route port");
            return Next::Close(CloseReason::ProtocolViolation);
        }
        let cluster = self.server.options.cluster.clone().unwrap_or_default();
        if let Some(user) = &cluster.username {
            let password = cluster.password.clone().unwrap_or_default();
            let matches = connect.user.as_deref() == Some(user.as_str())
                && crate::security::auth::compare_passwords(
                    &password,
                    connect.pass.as_deref().unwrap_or(""),
                );
            if !matches {
                tracing::error!(
                    "{} - rid:{} - authentication error",
                    self.shared.address,
                    self.shared.id
                );
                self.send_err("Authorization Violation");
                return Next::Close(CloseReason::AuthenticationViolation);
            }
        }
        if let Some(text) = self.reconcile_cluster_name(&connect.cluster, connect.cluster_dynamic) {
            tracing::error!("{} - rid:{} - {text}", self.shared.address, self.shared.id);
            self.send_err(&text);
            return Next::Close(CloseReason::ProtocolViolation);
        }
        self.connected = true;
        self.remote_id = Some(connect.name.clone());
        if connect.name == self.server.server_id {
            self.to_self = true;
            tracing::debug!(
                "{} - rid:{} - Detected route to self, ignoring",
                self.shared.address,
                self.shared.id
            );
            return Next::Close(CloseReason::ClientClosed);
        }
        if self.routes.is_connected(&connect.name) {
            tracing::debug!(
                "{} - rid:{} - Detected duplicate remote route {:?}",
                self.shared.address,
                self.shared.id,
                connect.name
            );
            return Next::Close(CloseReason::ClientClosed);
        }
        Next::Continue
    }

    /// Compare the peer's cluster name with ours: a dynamic name gives way to a configured one
    /// (or to the larger of two dynamic names). `Some(error)` on a conflict.
    fn reconcile_cluster_name(&self, theirs: &str, theirs_dynamic: bool) -> Option<String> {
        let ours = self.routes.cluster_name();
        if theirs.is_empty() || theirs == ours {
            return None;
        }
        if self.routes.dynamic_name && (!theirs_dynamic || theirs > ours.as_str()) {
            *self.routes.cluster_name.write() = theirs.to_string();
            tracing::info!("Cluster name updated to {theirs}");
            return None;
        }
        if theirs_dynamic {
            return None;
        }
        Some(format!(
            "Rejecting connection, cluster name {theirs:?} does not match {ours:?}"
        ))
    }

    fn info(&mut self, json: &[u8]) -> Next {
        let Ok(mut info) = serde_json::from_slice::<RouteInfo>(json) else {
            return Next::Close(CloseReason::ProtocolViolation);
        };
        if let Some(link) = &self.link {
            if info.server_id == link.remote_id() {
                // The peer's own INFO again (connect_urls changed, lame duck...).
                let changed = link.info.lock().connect_urls != info.connect_urls;
                *link.info.lock() = info;
                if changed {
                    super::clients_connect_urls_changed(&self.server);
                }
            } else {
                super::solicit::gossiped(&self.server, &self.routes, &info);
            }
            return Next::Continue;
        }
        if info.server_id == self.server.server_id {
            self.to_self = true;
            tracing::debug!(
                "{} - rid:{} - Detected route to self, ignoring",
                self.shared.address,
                self.shared.id
            );
            return Next::Close(CloseReason::ClientClosed);
        }
        self.remote_id = Some(info.server_id.clone());
        if self.solicited {
            if let Some(text) = self.reconcile_cluster_name(&info.cluster, info.cluster_dynamic) {
                tracing::error!("{} - rid:{} - {text}", self.shared.address, self.shared.id);
                return Next::Close(CloseReason::ProtocolViolation);
            }
            if self.routes.is_connected(&info.server_id) {
                return Next::Close(CloseReason::ClientClosed);
            }
            self.send_connect();
        }
        // Where other servers reach this peer: its advertised address, else the address it
        // connected from with its route port.
        if info.ip.is_empty() {
            let host = self.shared.address.ip();
            let address = SocketAddr::new(host, info.port);
            info.ip = format!("nats-route://{address}/");
        }
        let link = Arc::new(RouteLink {
            connection: self.shared.clone(),
            solicited: self.solicited,
            info: parking_lot::Mutex::new(info.clone()),
            subscriptions: parking_lot::Mutex::new(HashMap::new()),
        });
        if self.routes.register(&link).is_err() {
            tracing::debug!(
                "{} - rid:{} - Detected duplicate remote route {:?}",
                self.shared.address,
                self.shared.id,
                info.server_id
            );
            return Next::Close(CloseReason::ClientClosed);
        }
        tracing::debug!(
            "{} - rid:{} - Registering remote route {:?}",
            self.shared.address,
            self.shared.id,
            info.server_id
        );
        self.link = Some(link);
        self.send_rtt_ping();
        // Tell the other servers about this one, so they dial it (gossip).
        let mut gossip = info;
        gossip.gossip_mode = 0;
        let mut frame = BytesMut::new();
        encode_info(&mut frame, &gossip);
        self.routes.broadcast(&frame, Some(&gossip.server_id));
        super::clients_connect_urls_changed(&self.server);
        crate::system::route_registered(&self.server);
        Next::Continue
    }

    fn send_rtt_ping(&mut self) {
        self.rtt_ping = Some(std::time::Instant::now());
        self.send(b"PING\r\n");
    }

    /// A PONG: the answer to our timing PING sets the route's RTT; one to the writer's
    /// keepalive PING starts a new measurement once the last is a ping interval old.
    fn pong(&mut self) {
        let now = std::time::Instant::now();
        if let Some(sent) = self.rtt_ping.take() {
            *self.shared.rtt.lock() = Some(now.saturating_duration_since(sent));
            self.rtt_measured = Some(now);
        } else if self.link.is_some()
            && self
                .rtt_measured
                .is_none_or(|measured| now.saturating_duration_since(measured) >= self.rtt_interval)
        {
            self.send_rtt_ping();
        }
    }

    /// The soliciting side answers the peer's INFO with CONNECT and our INFO.
    fn send_connect(&self) {
        let url = self.url.clone();
        let cluster = self.server.options.cluster.clone().unwrap_or_default();
        let connect = RouteConnect {
            echo: false,
            verbose: false,
            pedantic: false,
            user: url
                .as_ref()
                .and_then(|url| url.user.clone())
                .or(cluster.username.clone()),
            pass: url
                .as_ref()
                .and_then(|url| url.password.clone())
                .or(cluster.password.clone()),
            tls_required: cluster.tls.is_some(),
            headers: true,
            name: self.server.server_id.clone(),
            cluster: self.routes.cluster_name(),
            cluster_dynamic: self.routes.dynamic_name,
            lang: None,
        };
        let mut frame = BytesMut::new();
        frame.put_slice(b"CONNECT ");
        frame.put_slice(&serde_json::to_vec(&connect).unwrap_or_else(|_| b"{}".to_vec()));
        frame.put_slice(b"\r\n");
        encode_info(&mut frame, &our_info(&self.server, &self.routes));
        self.send(&frame);
    }

    /// The account a route line names; an account we do not have is ignored, as nats-server
    /// ignores it (its interest and messages have nowhere to go here).
    fn account(&self, name: &[u8]) -> Option<Arc<Account>> {
        let name = std::str::from_utf8(name).ok()?;
        let account = self.server.accounts.lookup(name).cloned();
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

    fn remote_subscribe(
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

    fn remote_unsubscribe(&mut self, account: &[u8], subject: &[u8], queue: Option<&[u8]>) {
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

    fn routed_message(&mut self, message: RoutedMessage) {
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

fn trace_in(shared: &ClientShared, operation: &RouteOp) {
    let text = match operation {
        RouteOp::Connect(json) => format!("CONNECT {}", String::from_utf8_lossy(json)),
        RouteOp::Info(json) => format!("INFO {}", String::from_utf8_lossy(json)),
        RouteOp::Subscribe {
            subject,
            queue,
            weight,
            ..
        } => match queue {
            Some(queue) => format!(
                "RS+ {} {} {weight}",
                String::from_utf8_lossy(subject),
                String::from_utf8_lossy(queue)
            ),
            None => format!("RS+ {}", String::from_utf8_lossy(subject)),
        },
        RouteOp::Unsubscribe { subject, queue, .. } => match queue {
            Some(queue) => format!(
                "RS- {} {}",
                String::from_utf8_lossy(subject),
                String::from_utf8_lossy(queue)
            ),
            None => format!("RS- {}", String::from_utf8_lossy(subject)),
        },
        RouteOp::Message(message) => format!(
            "RMSG {} {}",
            String::from_utf8_lossy(&message.subject),
            message.payload.len()
        ),
        RouteOp::Ping => "PING".into(),
        RouteOp::Pong => "PONG".into(),
        RouteOp::Ok => "+OK".into(),
        RouteOp::Err(text) => format!("-ERR {}", String::from_utf8_lossy(text)),
    };
    tracing::trace!("{} - rid:{} - <<- [{}]", shared.address, shared.id, text);
}

//! One route connection from either side: set-up (the TLS handshake first when the cluster has
//! TLS, written once for both sides), the read loop and the dispatch of route operations. The
//! handshake (INFO/CONNECT, gossip) is in `handshake.rs`, the peer's interest and routed
//! messages in `interest.rs`; the writer is the client connection's.
//!
//! Called by `route/mod.rs` (accepted connections) and `solicit.rs` (dialled ones); knows
//! nothing of how routes are dialled or retried.

mod handshake;
mod interest;

pub(crate) use handshake::{announce_lame_duck, queue_info, route_authorized};

use super::link::RouteLink;
use super::registry::Routes;
use crate::client::writer::{self, WriterSettings};
use crate::client::{ClientShared, CloseReason};
use crate::config::RouteUrl;
use crate::router::PendingFlush;
use crate::server::Server;
use bytes::{BufMut, BytesMut};
use nats_proto::{ProtocolError, RouteOp, RouteParser};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;

const READ_CHUNK: usize = 64 * 1024;
/// Routed messages may be as large as any server of the cluster allows.
const ROUTE_MAX_PAYLOAD: usize = 64 * 1024 * 1024;
/// Route INFO/CONNECT/RS lines can be long (many connect_urls, long subjects).
const ROUTE_MAX_CONTROL_LINE: usize = 64 * 1024;
/// How long the accepting side holds its INFO for the peer's CONNECT (a route peer sends it
/// at once): a peer refused at CONNECT then never saw our INFO, so it never registered a
/// route to us that dies at once. nats-server registers a route on the first INFO it gets
/// and, for an unpooled peer like us, dials again at once when it closes: holding the INFO
/// turns that storm into its ordinary one-second retry. A peer that waits for INFO before
/// speaking (a client on the route port) gets it after this.
const INFO_HOLD: std::time::Duration = std::time::Duration::from_millis(250);

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
    /// Accepting side: our INFO not sent yet (held for the peer's CONNECT, `INFO_HOLD`).
    info_held: bool,
    link: Option<Arc<RouteLink>>,
    remote_id: Option<String>,
    /// Accepting side: the user and password of the peer's CONNECT (checked again when a
    /// reload changes the cluster's authorization).
    peer_credentials: Option<(Option<String>, Option<String>)>,
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

/// The route pings and write deadline as last loaded (a reload's new pings reach new routes).
fn writer_settings(server: &Server) -> WriterSettings {
    let options = server.current_options();
    let cluster = options.cluster.clone().unwrap_or_default();
    let ping_interval = cluster
        .route_ping_interval(&options)
        .max(std::time::Duration::from_millis(10));
    WriterSettings {
        ping_interval,
        first_ping: ping_interval.min(std::time::Duration::from_secs(1)),
        ping_max: u32::try_from(cluster.ping_max.unwrap_or(options.ping_max).max(0))
            .unwrap_or(u32::MAX),
        write_deadline: cluster.write_deadline.unwrap_or(options.write_deadline),
    }
}

/// A route's stream once set up: plain TCP, or TLS after the handshake (either side's).
enum Established {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

/// The TLS handshake first when the cluster has TLS (accepting, or dialing `dial_host`); the
/// error text for the log otherwise.
async fn establish(
    routes: &Routes,
    stream: TcpStream,
    dial_host: Option<&str>,
) -> Result<Established, String> {
    let Some(tls) = routes.tls() else {
        return Ok(Established::Plain(stream));
    };
    let stream = match dial_host {
        Some(host) => tls.connect(host, stream).await?.into(),
        None => tls.accept(stream).await?.into(),
    };
    Ok(Established::Tls(Box::new(stream)))
}

/// Cut the stream into the reader's and writer's halves (plain TCP into owned halves, with no
/// lock between them) and serve it.
async fn serve(
    server: Arc<Server>,
    routes: Arc<Routes>,
    shared: Arc<ClientShared>,
    established: Established,
    url: Option<RouteUrl>,
) -> RouteEnd {
    match established {
        Established::Plain(stream) => {
            let (read_half, write_half) = stream.into_split();
            let write_half = crate::client::direct::share(&shared, write_half);
            run(server, routes, shared, read_half, write_half, url).await
        }
        Established::Tls(stream) => {
            let (read_half, write_half) = tokio::io::split(*stream);
            run(server, routes, shared, read_half, write_half, url).await
        }
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
    match establish(&routes, stream, None).await {
        Ok(established) => {
            serve(server, routes, shared, established, None).await;
        }
        Err(error) => tls_failed(&shared, &error),
    }
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
    match establish(&routes, stream, Some(&url.host)).await {
        Ok(established) => serve(server, routes, shared, established, Some(url)).await,
        Err(error) => {
            tls_failed(&shared, &error);
            RouteEnd::NotRegistered(None)
        }
    }
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
/// The handshake and read loop over either stream: plain TCP halves, or a TLS stream's.
async fn run<R, W>(
    server: Arc<Server>,
    routes: Arc<Routes>,
    shared: Arc<ClientShared>,
    mut read_half: R,
    write_half: W,
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
    let cluster = server.current_options().cluster.clone().unwrap_or_default();
    let auth_timeout = cluster.effective_auth_timeout();
    // We dialled exactly when we know the URL.
    let solicited = url.is_some();
    let mut session = Session {
        trace: server.options.trace,
        server: server.clone(),
        routes,
        shared: shared.clone(),
        solicited,
        url,
        connected: solicited,
        info_held: !solicited,
        link: None,
        remote_id: None,
        peer_credentials: None,
        to_self: false,
        pending: PendingFlush::writing_clients(),
        rtt_ping: None,
        rtt_measured: None,
        rtt_interval: writer_settings(&server).ping_interval,
    };
    let handshake_deadline =
        tokio::time::Instant::now() + auth_timeout.max(std::time::Duration::from_secs(2));
    let info_deadline = tokio::time::Instant::now() + INFO_HOLD;
    if solicited {
        // As nats-server: CONNECT and our INFO at once, not waiting for the peer's INFO.
        session.send_connect();
    }
    let mut parser = RouteParser::new(ROUTE_MAX_PAYLOAD, ROUTE_MAX_CONTROL_LINE);
    let mut buffer = BytesMut::with_capacity(READ_CHUNK);
    // Bounded to one chunk after a chunk that stalled on a slow subscriber (see
    // `PendingFlush::stall`), so the wait paces what the route delivers.
    let mut read_limit = usize::MAX;
    let reason = 'connection: loop {
        let wanted = wanted_after(&parser, &buffer);
        if buffer.capacity() - buffer.len() < wanted.max(4096) {
            buffer.reserve(wanted.max(READ_CHUNK));
        }
        let registered = session.link.is_some();
        let mut room = (&mut buffer).limit(read_limit);
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
            _ = info_hold(info_deadline, session.info_held) => {
                session.release_info();
                continue;
            }
            read = read_half.read_buf(&mut room) => read,
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
        read_limit = usize::MAX;
        if session.pending.has_stalled() {
            session.pending.stall().await;
            read_limit = READ_CHUNK.max(wanted_after(&parser, &buffer));
        }
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

/// What the frame being parsed still needs, so a bounded read never stops short of it.
fn wanted_after(parser: &RouteParser, buffer: &BytesMut) -> usize {
    parser.pending_frame_len().saturating_sub(buffer.len())
}

/// Until the held INFO is due; never when it is not held.
async fn info_hold(deadline: tokio::time::Instant, held: bool) {
    if !held {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep_until(deadline).await;
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

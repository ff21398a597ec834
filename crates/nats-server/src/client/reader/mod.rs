//! The reader task of one connection: reads into the connection's own buffer, parses client
//! operations and dispatches them (CONNECT and auth, PUB/HPUB routing with permissions and
//! no-responders, SUB/UNSUB, PING/PONG, verbose `+OK`, `-ERR` texts as nats-server sends them).
//! This file holds the loop, the session state and dispatch; CONNECT and authorization are in
//! `connect.rs` (through an authorization callout: `callout.rs`), PUB/HPUB and SUB/UNSUB in
//! `messages.rs`.

use super::{ClientShared, CloseReason};
use crate::accounts::Account;
use crate::router::{MatchCache, PendingFlush};
use crate::security::auth::UserPermissions;
use crate::security::jwt::user::JwtUser;
use crate::server::Server;
use bytes::{Bytes, BytesMut};
use nats_proto::{ClientOp, ClientParser, ConnectOptions};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use time::OffsetDateTime;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest read buffer a connection grows to.
const READ_CHUNK: usize = 64 * 1024;
/// A new connection's first read buffer: most send a CONNECT, a PING and a few small frames,
/// so each of thousands of connections arriving together starts small (as Go's 512 B) and the
/// buffer doubles while reads fill it, up to [`READ_CHUNK`].
const FIRST_READ: usize = 512;
const PERMISSION_CACHE_LIMIT: usize = 1024;

const ERR_NO_RESPONDERS_HEADERS: &str = "no responders requires headers support";

/// State only the reader task touches.
struct Session {
    server: Arc<Server>,
    shared: Arc<ClientShared>,
    connected: bool,
    verbose: bool,
    pedantic: bool,
    headers: bool,
    no_responders: bool,
    permissions: Option<Arc<UserPermissions>>,
    /// The accepted CONNECT, to check again when a reload changes authorization.
    connect_options: Option<ConnectOptions>,
    /// The connection's account (its subject table): `$G` until CONNECT says otherwise.
    account: Arc<Account>,
    /// The outcome of a CONNECT checked off this task (bcrypt), for `connect` to apply.
    authenticated: Option<
        Result<crate::security::auth::Authenticated, crate::security::auth::AuthorizationViolation>,
    >,
    publish_allowed: HashMap<Bytes, bool>,
    /// Operator mode: what the user JWT granted (account, expiry, limits).
    jwt_user: Option<Box<JwtUser>>,
    pending: PendingFlush,
    /// The match results of the subjects this connection published (`Router::route_cached`).
    match_cache: MatchCache,
    /// Set when our own outbound buffer got a reply in this chunk.
    own_output: bool,
    trace: bool,
}

/// What a dispatched operation asks of the read loop.
enum Next {
    Continue,
    Close(CloseReason),
}

pub async fn run<R: AsyncRead + Unpin>(
    server: Arc<Server>,
    shared: Arc<ClientShared>,
    mut socket: R,
) {
    let options = server.current_options();
    let mut authorization = server.authorization_epoch.subscribe();
    let mut limits = server.limits_epoch.subscribe();
    let mut parser = ClientParser::new(
        usize::try_from(options.max_payload.max(0)).unwrap_or(usize::MAX),
        usize::try_from(options.max_control_line.max(0)).unwrap_or(usize::MAX),
    );
    parser.set_headers_supported(true);
    let mut session = Session {
        trace: options.trace,
        server: server.clone(),
        shared: shared.clone(),
        connected: false,
        // Until CONNECT says otherwise, nats-server's default client options: verbose and
        // pedantic (a PUB or SUB before CONNECT gets `+OK`, an invalid publish subject -ERR).
        verbose: true,
        pedantic: true,
        headers: false,
        no_responders: false,
        permissions: None,
        connect_options: None,
        account: server.accounts.global().clone(),
        authenticated: None,
        publish_allowed: HashMap::new(),
        jwt_user: None,
        pending: PendingFlush::writing_single_client(),
        match_cache: MatchCache::default(),
        own_output: false,
    };
    let auth_deadline = server.authenticator_for(&shared).required().then(|| {
        let websocket_timeout = shared
            .websocket
            .get()
            .and(options.websocket.as_ref())
            .and_then(|websocket| websocket.auth_timeout_override());
        tokio::time::Instant::now() + websocket_timeout.unwrap_or_else(|| options.auth_timeout())
    });
    let mut jwt_revision = server
        .jwt
        .as_ref()
        .map(|resolver| resolver.revision.subscribe());
    let mut read_size = FIRST_READ;
    let mut buffer = BytesMut::with_capacity(read_size);
    let reason = 'connection: loop {
        let wanted = parser.pending_frame_len().saturating_sub(buffer.len());
        if buffer.capacity() - buffer.len() < wanted.max(read_size.min(4096)) {
            buffer.reserve(wanted.max(read_size));
        }
        let room = buffer.capacity() - buffer.len();
        let read = tokio::select! {
            biased;
            _ = shared.reader_stop.notified() => break 'connection None,
            Ok(()) = authorization.changed(), if session.connected => {
                let next = session.authorize_again();
                session.finish_chunk();
                if let Next::Close(reason) = next {
                    break 'connection Some(reason);
                }
                continue 'connection;
            }
            Ok(()) = limits.changed() => {
                session.take_limits(&mut parser);
                continue 'connection;
            }
            _ = auth_sleep(auth_deadline, session.connected) => {
                session.send_err("Authentication Timeout");
                break 'connection Some(CloseReason::AuthenticationTimeout);
            }
            _ = expiry_sleep(session.jwt_user.as_ref().and_then(|user| user.expires)) => {
                session.send_err("User Authentication Expired");
                session.finish_chunk();
                break 'connection Some(CloseReason::AuthenticationExpired);
            }
            Some(Ok(())) = revision_changed(&mut jwt_revision), if session.jwt_user.is_some() => {
                if let Some((error, reason)) = session.jwt_revoked() {
                    session.send_err(error);
                    session.finish_chunk();
                    break 'connection Some(reason);
                }
                continue 'connection;
            }
            read = socket.read_buf(&mut buffer) => read,
        };
        match read {
            Ok(0) => break Some(CloseReason::ClientClosed),
            Ok(count) => {
                if count >= room && read_size < READ_CHUNK {
                    read_size *= 2;
                }
            }
            // A TLS peer that closes without close_notify: a client that went away, as Go's
            // TLS reports it at a record boundary.
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
                break Some(CloseReason::ClientClosed)
            }
            Err(_) => break Some(CloseReason::ReadError),
        }
        loop {
            match parser.parse(&mut buffer) {
                Ok(Some(mut operation)) => {
                    if let ClientOp::Connect(connect) = &mut operation {
                        if let Some(websocket) = shared.websocket.get() {
                            websocket.fill_credentials(connect);
                        }
                        session.authenticate_off_thread(connect).await;
                    }
                    if let Next::Close(reason) = session.dispatch(operation, &mut parser) {
                        session.finish_chunk();
                        break 'connection Some(reason);
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(
                        "{} - cid:{} - Client parser ERROR: {error}",
                        shared.address,
                        shared.id
                    );
                    if let Some(text) = error.err_text() {
                        session.send_err(text);
                    }
                    session.finish_chunk();
                    break 'connection Some(parse_close_reason(&error));
                }
            }
        }
        session.finish_chunk();
        if session.pending.has_stalled() {
            session.pending.stall().await;
        }
        *shared.last_activity.lock() = OffsetDateTime::now_utc();
    };
    if let Some(reason) = reason {
        shared.close(reason);
    }
    server.unregister_client(&shared);
}

/// Why nats-server closes a client after this parser error (its /connz `reason`, and for a
/// websocket client the CLOSE status: 1009, 1008, else 1002).
fn parse_close_reason(error: &nats_proto::ProtocolError) -> CloseReason {
    match error {
        nats_proto::ProtocolError::MaxPayloadViolation { .. } => CloseReason::MaxPayloadExceeded,
        nats_proto::ProtocolError::MaxControlLineExceeded { .. } => {
            CloseReason::MaxControlLineExceeded
        }
        _ => CloseReason::ProtocolViolation,
    }
}

/// Until a user JWT's expiry (seconds since the epoch); forever without one.
async fn expiry_sleep(expires: Option<i64>) {
    match expires {
        Some(expires) => {
            let left = (expires - crate::security::jwt::now()).max(0) as u64;
            tokio::time::sleep(std::time::Duration::from_secs(left)).await
        }
        None => std::future::pending().await,
    }
}

/// The next update of operator mode's account JWTs (`None` outside operator mode).
async fn revision_changed(
    revision: &mut Option<tokio::sync::watch::Receiver<u64>>,
) -> Option<Result<(), tokio::sync::watch::error::RecvError>> {
    match revision {
        Some(revision) => Some(revision.changed().await),
        None => std::future::pending().await,
    }
}

async fn auth_sleep(deadline: Option<tokio::time::Instant>, connected: bool) {
    match deadline {
        Some(deadline) if !connected => tokio::time::sleep_until(deadline).await,
        _ => std::future::pending().await,
    }
}

impl Session {
    fn finish_chunk(&mut self) {
        self.pending.flush();
        if self.own_output {
            // Our own answers (PONG, +OK, -ERR) go out from this task while the writer idles.
            self.own_output = false;
            self.shared.write_or_wake();
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.shared.queue_bytes(bytes);
        self.own_output = true;
    }

    fn send_err(&mut self, text: &str) {
        let mut frame = BytesMut::with_capacity(text.len() + 10);
        nats_proto::encode_err(&mut frame, text);
        self.send(&frame);
    }

    fn ok(&mut self) {
        if self.verbose {
            self.send(b"+OK\r\n");
        }
    }

    fn dispatch(&mut self, operation: ClientOp, parser: &mut ClientParser) -> Next {
        if self.trace {
            self.trace_in(&operation);
        }
        if !self.connected && self.server.authenticator_for(&self.shared).required() {
            if let ClientOp::Connect(_) = operation {
            } else {
                self.send_err("Authorization Violation");
                return Next::Close(CloseReason::AuthenticationViolation);
            }
        }
        match operation {
            ClientOp::Connect(connect) => self.connect(connect, parser),
            ClientOp::Pub {
                subject,
                reply,
                payload,
            } => self.publish(subject, reply, None, payload),
            ClientOp::HPub {
                subject,
                reply,
                headers,
                payload,
            } => {
                if !self.headers {
                    return Next::Close(CloseReason::ProtocolViolation);
                }
                self.publish(subject, reply, Some(headers), payload)
            }
            ClientOp::Sub {
                subject,
                queue,
                sid,
            } => self.subscribe(subject, queue, sid),
            ClientOp::Unsub { sid, max } => self.unsubscribe(sid, max),
            ClientOp::Ping => {
                self.send(b"PONG\r\n");
                let first = !self.shared.first_pong_sent.swap(true, Ordering::Relaxed);
                // nats-server's answer to CONNECT: an INFO after the first PONG, for a client
                // that takes async INFO.
                if first
                    && self
                        .connect_options
                        .as_ref()
                        .is_some_and(|connect| connect.protocol >= 1)
                {
                    let mut info = bytes::BytesMut::new();
                    self.server
                        .encode_connect_info(&mut info, &self.shared, parser.max_payload());
                    self.send(&info);
                }
                Next::Continue
            }
            ClientOp::Pong => {
                self.shared.pong_received();
                Next::Continue
            }
            ClientOp::Ok => Next::Continue,
            ClientOp::Err(_) => Next::Close(CloseReason::ClientClosed),
        }
    }

    fn trace_in(&self, operation: &ClientOp) {
        let text = match operation {
            ClientOp::Connect(connect) => format!(
                "CONNECT {}",
                serde_json::to_string(connect).unwrap_or_default()
            ),
            ClientOp::Pub {
                subject,
                reply,
                payload,
            } => match reply {
                Some(reply) => format!(
                    "PUB {} {} {}",
                    String::from_utf8_lossy(subject),
                    String::from_utf8_lossy(reply),
                    payload.len()
                ),
                None => format!("PUB {} {}", String::from_utf8_lossy(subject), payload.len()),
            },
            ClientOp::HPub {
                subject,
                headers,
                payload,
                ..
            } => format!(
                "HPUB {} {} {}",
                String::from_utf8_lossy(subject),
                headers.len(),
                headers.len() + payload.len()
            ),
            ClientOp::Sub {
                subject,
                queue,
                sid,
            } => match queue {
                Some(queue) => format!(
                    "SUB {} {} {}",
                    String::from_utf8_lossy(subject),
                    String::from_utf8_lossy(queue),
                    String::from_utf8_lossy(sid)
                ),
                None => format!(
                    "SUB {} {}",
                    String::from_utf8_lossy(subject),
                    String::from_utf8_lossy(sid)
                ),
            },
            ClientOp::Unsub { sid, max } => match max {
                Some(max) => format!("UNSUB {} {max}", String::from_utf8_lossy(sid)),
                None => format!("UNSUB {}", String::from_utf8_lossy(sid)),
            },
            ClientOp::Ping => "PING".into(),
            ClientOp::Pong => "PONG".into(),
            ClientOp::Ok => "+OK".into(),
            ClientOp::Err(text) => format!("-ERR {}", String::from_utf8_lossy(text)),
        };
        tracing::trace!(
            "{} - cid:{} - <<- [{}]",
            self.shared.address,
            self.shared.id,
            text
        );
    }
}

mod callout;
mod connect;
mod messages;

//! The reader task of one connection: reads into the connection's own buffer, parses client
//! operations and dispatches them (CONNECT and auth, PUB/HPUB routing with permissions and
//! no-responders, SUB/UNSUB, PING/PONG, verbose `+OK`, `-ERR` texts as nats-server sends them).

use super::{ClientShared, ClientSubscription, CloseReason};
use crate::accounts::mappings::Mapped;
use crate::accounts::Account;
use crate::router::{Delivery, PendingFlush, Subscriber};
use crate::security::auth::UserPermissions;
use crate::security::jwt::user::JwtUser;
use crate::server::Server;
use bytes::{BufMut, Bytes, BytesMut};
use nats_proto::{ClientOp, ClientParser, ConnectOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
        verbose: false,
        pedantic: false,
        headers: false,
        no_responders: false,
        permissions: None,
        connect_options: None,
        account: server.accounts.global().clone(),
        authenticated: None,
        publish_allowed: HashMap::new(),
        jwt_user: None,
        pending: PendingFlush::default(),
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
                if session.jwt_revoked() {
                    session.send_err("User Authentication Revoked");
                    session.finish_chunk();
                    break 'connection Some(CloseReason::Revocation);
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
            session.stall().await;
        }
        *shared.last_activity.lock() = OffsetDateTime::now_utc();
    };
    if let Some(reason) = reason {
        shared.close(reason);
    }
    server.unregister_client(&shared);
}

/// The user CONNECT names, as nats-server shows it in `/connz` (`authorized_user`, the `user`
/// filter) where no authenticated user stands for it: the nkey, else the user name, else
/// `[REDACTED]` for a token.
fn raw_user(connect: &ConnectOptions) -> Option<String> {
    let named = |value: &Option<String>| value.clone().filter(|text| !text.is_empty());
    named(&connect.nkey)
        .or_else(|| named(&connect.user))
        .or_else(|| named(&connect.auth_token).map(|_| "[REDACTED]".to_string()))
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

/// At most this long per read chunk is a producer held back for slow subscribers.
const STALL_TOTAL: std::time::Duration = std::time::Duration::from_millis(10);

impl Session {
    /// nats-server's fast-producer stall: wait briefly for subscribers whose backlog is over
    /// their stall threshold, bounded per read chunk.
    async fn stall(&mut self) {
        let started = tokio::time::Instant::now();
        for client in self.pending.take_stalled() {
            let remaining = STALL_TOTAL.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                break;
            }
            client
                .wait_drained(client.stall_duration().min(remaining))
                .await;
        }
    }

    fn finish_chunk(&mut self) {
        self.pending.flush();
        if self.own_output {
            self.own_output = false;
            self.shared.wake_writer();
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

    /// bcrypt costs tens to hundreds of milliseconds of CPU: with hashed secrets configured,
    /// CONNECT is checked on the blocking pool so the worker keeps serving other connections.
    /// [`Session::connect`] uses the outcome.
    async fn authenticate_off_thread(&mut self, connect: &ConnectOptions) {
        let authenticator = self.server.authenticator_for(&self.shared);
        if self.connected || !authenticator.required() || !authenticator.has_hashed_secrets() {
            return;
        }
        let server = self.server.clone();
        let shared = self.shared.clone();
        let connect = connect.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            server.authenticator_for(&shared).authenticate(
                &connect,
                shared.nonce.as_deref(),
                shared.certificate.get(),
                shared.address.ip(),
            )
        })
        .await;
        self.authenticated = outcome.ok();
    }

    fn connect(&mut self, connect: ConnectOptions, parser: &mut ClientParser) -> Next {
        self.shared.estimate_rtt();
        let authenticator = self.server.authenticator_for(&self.shared);
        if authenticator.required() && !self.connected {
            let outcome = match self.authenticated.take() {
                Some(outcome) => outcome,
                None => authenticator.authenticate(
                    &connect,
                    self.shared.nonce.as_deref(),
                    self.shared.certificate.get(),
                    self.shared.address.ip(),
                ),
            };
            let outcome = outcome.and_then(|(permissions, user, jwt)| {
                let account = match &jwt {
                    Some(jwt) => self
                        .server
                        .accounts
                        .lookup(&jwt.account)
                        .ok_or(crate::security::auth::AuthorizationViolation)?,
                    None => self
                        .server
                        .accounts
                        .lookup(authenticator.account_of(user.as_deref()))
                        .unwrap_or(&self.account),
                };
                Ok((permissions, user, jwt, account.clone()))
            });
            match outcome {
                Ok((permissions, user, jwt, account)) => {
                    if let Some(responses) = permissions.as_ref().and_then(|p| p.responses) {
                        let _ = self.shared.response_permits.set(super::ResponsePermits {
                            permission: responses,
                            permits: parking_lot::Mutex::new(HashMap::new()),
                        });
                    }
                    self.permissions = permissions;
                    self.account = account;
                    if let Some(payload) = jwt.as_ref().map(|jwt| jwt.payload).filter(|&p| p >= 0) {
                        let payload = usize::try_from(payload).unwrap_or(usize::MAX);
                        parser.set_max_payload(parser.max_payload().min(payload));
                    }
                    self.jwt_user = jwt;
                    self.shared.meta.lock().user = user.or_else(|| raw_user(&connect));
                }
                Err(_) => {
                    self.shared.meta.lock().user = raw_user(&connect);
                    tracing::error!(
                        "{} - cid:{} - authentication error",
                        self.shared.address,
                        self.shared.id
                    );
                    self.send_err("Authorization Violation");
                    return Next::Close(CloseReason::AuthenticationViolation);
                }
            }
        }
        if !authenticator.required() && !self.connected {
            self.shared.meta.lock().user = raw_user(&connect);
        }
        self.connect_options = Some(connect.clone());
        if connect.no_responders && !connect.headers {
            self.send_err(ERR_NO_RESPONDERS_HEADERS);
            return Next::Close(CloseReason::ProtocolViolation);
        }
        let first = !self.connected;
        if first {
            self.shared.set_account(self.account.clone());
        }
        self.connected = true;
        self.verbose = connect.verbose;
        self.pedantic = connect.pedantic;
        self.headers = connect.headers;
        self.no_responders = connect.no_responders;
        parser.set_headers_supported(true);
        self.shared
            .headers
            .store(connect.headers, Ordering::Relaxed);
        self.shared.echo.store(connect.echo, Ordering::Relaxed);
        {
            let mut meta = self.shared.meta.lock();
            meta.name = connect.name.clone();
            meta.lang = connect.lang.clone();
            meta.version = connect.version.clone();
            meta.protocol = connect.protocol;
        }
        self.ok();
        if first {
            crate::system::client_connected(&self.server, &self.shared);
        }
        Next::Continue
    }

    fn publish(
        &mut self,
        subject: Bytes,
        reply: Option<Bytes>,
        headers: Option<Bytes>,
        payload: Bytes,
    ) -> Next {
        let size = payload.len() + headers.as_ref().map_or(0, Bytes::len);
        let counters = &self.shared.counters;
        // Only this task writes its inbound counters: plain stores, no RMW.
        counters.in_msgs.store(
            counters.in_msgs.load(Ordering::Relaxed) + 1,
            Ordering::Relaxed,
        );
        counters.in_bytes.store(
            counters.in_bytes.load(Ordering::Relaxed) + size as u64,
            Ordering::Relaxed,
        );
        if self.pedantic
            && !std::str::from_utf8(&subject).is_ok_and(nats_subject::is_valid_literal_subject)
        {
            // nats-server reports it and still processes the message.
            self.send_err("Invalid Publish Subject");
        }
        // Subject mappings come first: nats-server checks permissions on the mapped subject.
        let (subject, dropped) = match self.account.map_subject(&subject) {
            None => (subject, false),
            Some(Mapped::To(mapped)) => (mapped, false),
            Some(Mapped::Dropped) => (Bytes::new(), true),
        };
        if let Some(permissions) = self.permissions.clone() {
            if permissions.restricts_publish()
                && !self.publish_permitted(&permissions, &subject)
                && !self
                    .shared
                    .response_permits
                    .get()
                    .is_some_and(|permits| permits.take(&subject))
            {
                let text = nats_proto::err_text::permissions_violation_publish(
                    &String::from_utf8_lossy(&subject),
                );
                let user = self.shared.meta.lock().user.clone().unwrap_or_default();
                tracing::error!(
                    "{} - cid:{} - Publish Violation - User {:?}, Subject \"{}\"",
                    self.shared.address,
                    self.shared.id,
                    user,
                    String::from_utf8_lossy(&subject)
                );
                self.send_err(&text);
                return Next::Continue;
            }
        }
        // nats-server acknowledges before routing (so +OK precedes our own echo).
        self.ok();
        let delivery = Delivery {
            subject: &subject,
            reply: reply.as_ref(),
            headers: headers.as_ref(),
            payload: &payload,
        };
        let delivered = if dropped {
            0
        } else {
            self.account
                .router
                .route(Some(&self.shared), &delivery, &mut self.pending)
        };
        if subject.as_ref() == crate::security::user_info::SUBJECT {
            if let Some(reply) = &reply {
                self.answer_user_info(reply);
                return Next::Continue;
            }
        }
        if delivered == 0 && self.no_responders {
            if let Some(reply) = &reply {
                self.no_responders_reply(&subject, reply);
            }
        }
        Next::Continue
    }

    /// nats-server's system account answers `$SYS.REQ.USER.INFO` in every account.
    fn answer_user_info(&mut self, reply: &Bytes) {
        let user = self.shared.meta.lock().user.clone();
        let payload = Bytes::from(crate::security::user_info::reply(
            &self.server,
            user.as_deref(),
            self.permissions
                .as_ref()
                .map(|permissions| &permissions.source),
        ));
        let delivery = Delivery {
            subject: reply,
            reply: None,
            headers: None,
            payload: &payload,
        };
        self.account
            .router
            .route(None, &delivery, &mut self.pending);
    }

    fn publish_permitted(&mut self, permissions: &UserPermissions, subject: &Bytes) -> bool {
        if let Some(allowed) = self.publish_allowed.get(subject) {
            return *allowed;
        }
        let allowed = permissions.can_publish(&String::from_utf8_lossy(subject));
        if self.publish_allowed.len() >= PERMISSION_CACHE_LIMIT {
            self.publish_allowed.clear();
        }
        self.publish_allowed.insert(subject.clone(), allowed);
        allowed
    }

    /// A request nobody can answer: tell the requester with a 503 status message on the
    /// subscription of its own that matches the reply subject.
    fn no_responders_reply(&mut self, subject: &Bytes, reply: &Bytes) {
        let Ok(reply_text) = std::str::from_utf8(reply) else {
            return;
        };
        let sid = {
            let subscriptions = self.shared.subscriptions.lock();
            subscriptions
                .values()
                .find(|subscription| {
                    crate::security::auth::pattern_matches(&subscription.subject, reply_text)
                })
                .map(|subscription| subscription.sid.clone())
        };
        let Some(sid) = sid else {
            return;
        };
        let mut headers = BytesMut::with_capacity(48 + subject.len());
        headers.put_slice(b"NATS/1.0 503\r\nNats-Subject: ");
        headers.put_slice(subject);
        headers.put_slice(b"\r\n\r\n");
        let mut frame = BytesMut::with_capacity(headers.len() + reply.len() + 48);
        nats_proto::encode_hmsg(&mut frame, reply, &sid, None, &headers, b"");
        self.send(&frame);
    }

    fn subscribe(&mut self, subject: Bytes, queue: Option<Bytes>, sid: Bytes) -> Next {
        let (Ok(subject_text), queue_text) = (
            std::str::from_utf8(&subject),
            queue.as_ref().map(|queue| std::str::from_utf8(queue)),
        ) else {
            self.send_err("Invalid Subject");
            return Next::Continue;
        };
        if !nats_subject::is_valid_subject(subject_text) {
            self.send_err("Invalid Subject");
            return Next::Continue;
        }
        let queue_text = match queue_text {
            None => None,
            Some(Ok(queue)) if nats_subject::is_valid_queue_name(queue) => Some(queue),
            Some(_) => {
                self.send_err("Invalid Queue Name");
                return Next::Continue;
            }
        };
        if let Some(permissions) = &self.permissions {
            if !permissions.can_subscribe(subject_text, queue_text) {
                let text = nats_proto::err_text::permissions_violation_subscription(
                    subject_text,
                    queue_text,
                );
                tracing::error!(
                    "{} - cid:{} - Subscription Violation - User {:?}, Subject \"{}\", SID {}",
                    self.shared.address,
                    self.shared.id,
                    self.shared.meta.lock().user.clone().unwrap_or_default(),
                    subject_text,
                    String::from_utf8_lossy(&sid)
                );
                self.send_err(&text);
                return Next::Continue;
            }
        }
        let max_subscriptions = match self.jwt_user.as_ref().map(|user| user.subscriptions) {
            Some(limit) if limit >= 0 => limit.min(match self.server.options.max_subscriptions {
                0 => i64::MAX,
                configured => configured,
            }),
            _ => self.server.options.max_subscriptions,
        };
        let subscription = {
            let mut subscriptions = self.shared.subscriptions.lock();
            if subscriptions.contains_key(&sid) {
                // nats-server keeps the first subscription for a reused sid.
                drop(subscriptions);
                self.ok();
                return Next::Continue;
            }
            if max_subscriptions > 0 && subscriptions.len() as i64 >= max_subscriptions {
                drop(subscriptions);
                self.send_err("maximum subscriptions exceeded");
                return Next::Continue;
            }
            let deny_filter = self
                .permissions
                .as_ref()
                .filter(|permissions| permissions.needs_delivery_filter(subject_text))
                .cloned();
            let subscription = Arc::new(ClientSubscription {
                deny_filter,
                client: self.shared.clone(),
                subject: subject_text.to_string(),
                queue: queue_text.map(str::to_string),
                sid: sid.clone(),
                max: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                shadows: Default::default(),
            });
            subscriptions.insert(sid, subscription.clone());
            subscription
        };
        self.account.router.insert(
            subject_text,
            queue_text,
            Subscriber::Client(subscription.clone()),
        );
        crate::accounts::imports::add_shadows(&self.account, &subscription);
        self.ok();
        Next::Continue
    }

    fn unsubscribe(&mut self, sid: Bytes, max: Option<u64>) -> Next {
        let subscription = self.shared.subscriptions.lock().get(&sid).cloned();
        if let Some(subscription) = subscription {
            match max {
                Some(max) => {
                    // Set the limit first, then check: a delivery racing with us either sees
                    // the limit or is counted in `delivered` here (a double remove is harmless).
                    subscription.max.store(max, Ordering::SeqCst);
                    if subscription.delivered.load(Ordering::SeqCst) >= max {
                        self.account
                            .router
                            .remove_client_subscription(&subscription);
                    }
                }
                None => self
                    .account
                    .router
                    .remove_client_subscription(&subscription),
            }
        }
        self.ok();
        Next::Continue
    }
}

impl Session {
    /// Operator mode: the account's JWT, as last updated, revokes this connection's user (or
    /// the account is gone).
    fn jwt_revoked(&self) -> bool {
        let (Some(user), Some(resolver)) = (&self.jwt_user, &self.server.jwt) else {
            return false;
        };
        resolver
            .account(&user.account)
            .is_none_or(|account| account.revoked(&user.user, user.issued_at))
    }

    /// A reload changed authorization: check this connection's CONNECT against it as
    /// nats-server's `reloadAuthorization` does. Credentials no longer accepted close it with
    /// `Authorization Violation`; otherwise the new permissions apply from now on and each
    /// subscription they no longer allow is removed with a `-ERR`.
    fn authorize_again(&mut self) -> Next {
        let authenticator = self.server.authenticator_for(&self.shared);
        if !authenticator.required() {
            self.permissions = None;
            self.publish_allowed.clear();
            return Next::Continue;
        }
        let connect = self.connect_options.clone().unwrap_or_default();
        let outcome = authenticator.authenticate(
            &connect,
            self.shared.nonce.as_deref(),
            self.shared.certificate.get(),
            self.shared.address.ip(),
        );
        let Ok((permissions, user, _)) = outcome else {
            let user = self.shared.meta.lock().user.clone().unwrap_or_default();
            tracing::error!(
                "{} - cid:{} - authentication error - User {user:?}",
                self.shared.address,
                self.shared.id
            );
            self.send_err("Authorization Violation");
            return Next::Close(CloseReason::AuthenticationViolation);
        };
        self.shared.meta.lock().user = user;
        self.publish_allowed.clear();
        self.permissions = permissions;
        let Some(permissions) = self.permissions.clone() else {
            return Next::Continue;
        };
        let subscriptions: Vec<_> = self.shared.subscriptions.lock().values().cloned().collect();
        for subscription in subscriptions {
            let queue = subscription.queue.as_deref();
            if permissions.can_subscribe(&subscription.subject, queue) {
                continue;
            }
            self.account
                .router
                .remove_client_subscription(&subscription);
            let sid = String::from_utf8_lossy(&subscription.sid).into_owned();
            tracing::info!(
                "Removed sub {:?} (sid {sid:?}) for User {:?} - not authorized",
                subscription.subject,
                self.shared.meta.lock().user.clone().unwrap_or_default()
            );
            let text = nats_proto::err_text::permissions_violation_subscription(
                &subscription.subject,
                queue,
            );
            self.send_err(&format!("{text} (sid \"{sid}\")"));
        }
        Next::Continue
    }
}

//! WebSocket client connections (`websocket { }`): the listener, the HTTP upgrade
//! (`handshake.rs`), and the framing layer that makes a WebSocket an ordinary client
//! connection. [`FrameReader`](reader::FrameReader) turns frames into the byte stream the
//! client reader task parses, [`FrameWriter`](writer::FrameWriter) turns the client writer's
//! vectored writes into binary frames, and the two share a [`Control`] queue for PONG and
//! CLOSE frames. Compression (permessage-deflate) is `compression.rs`, the frame format
//! `frame.rs`.
//!
//! Started by `server::run` when the options have a websocket port; hands connections to
//! `crate::client` (`new_shared`, `start_tasks`) and knows nothing of the NATS protocol.

mod compression;
mod frame;
mod handshake;
mod reader;
mod writer;

use crate::client::{self, CloseReason};
use crate::config::WebsocketOptions;
use crate::server::Server;
use crate::ServerError;
use bytes::BytesMut;
use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

pub(crate) use handshake::Cookies;

/// Without `handshake_timeout`, a connection that has not finished its upgrade (TLS included)
/// after this long is dropped (nats-server sets no limit; see docs/parity.md).
const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The websocket listener's settings, fixed at start-up but for its TLS certificates, which a
/// reload may replace (nats-server's `wsGetTLSConfig` reads the running options at each
/// handshake).
pub struct Listener {
    pub options: WebsocketOptions,
    /// The address clients connect to (the configured host with the bound port).
    pub address: SocketAddr,
    tls: parking_lot::RwLock<Option<tokio_rustls::TlsAcceptor>>,
    origins: Origins,
    /// Authentication for websocket clients when the block overrides the server's.
    pub(crate) authenticator: Option<Arc<crate::security::auth::Authenticator>>,
}

impl Listener {
    pub fn tls(&self) -> bool {
        self.tls.read().is_some()
    }

    /// A reload's websocket TLS: connections accepted from now on handshake with it (only a
    /// listener started with TLS has one; `no_tls` is not reloadable).
    pub(crate) fn replace_tls(&self, acceptor: tokio_rustls::TlsAcceptor) {
        let mut tls = self.tls.write();
        if tls.is_some() {
            *tls = Some(acceptor);
        }
    }
}

/// The acceptor for a `websocket { tls { } }` block.
pub(crate) fn tls_acceptor(
    tls: &crate::config::TlsOptions,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    Ok(tokio_rustls::TlsAcceptor::from(
        crate::security::tls::server_config(tls)?,
    ))
}

/// What a websocket client brings beyond a TCP client's state.
#[derive(Debug, Default)]
pub struct ClientSession {
    pub(crate) cookies: Cookies,
}

/// Bind the websocket listener and accept on it.
pub(crate) async fn start(
    server: &Arc<Server>,
    options: &WebsocketOptions,
) -> Result<(), ServerError> {
    let tls = match &options.tls {
        Some(tls) => Some(tls_acceptor(tls).map_err(ServerError::Tls)?),
        None => None,
    };
    let (socket, address) = crate::listener::bind(options.listen_host(), options.port)
        .await
        .map_err(|error| match error {
            ServerError::Listen { reason, .. } => ServerError::WebsocketListen(reason),
            other => other,
        })?;
    let scheme = if tls.is_some() { "wss" } else { "ws" };
    tracing::info!(
        "Listening for websocket clients on {scheme}://{}:{}",
        options.listen_host(),
        address.port()
    );
    if tls.is_none() {
        tracing::warn!("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!");
    }
    let authenticator = options.auth_override().then(|| {
        let mut overridden = server.options.clone();
        overridden.username = options.username.clone();
        overridden.password = options.password.clone();
        overridden.token = options.token.clone();
        overridden.no_auth_user = options.no_auth_user.clone();
        Arc::new(crate::security::auth::Authenticator::new(
            &overridden,
            server.jwt.clone(),
        ))
    });
    let listener = Arc::new(Listener {
        origins: Origins::new(options),
        options: options.clone(),
        address,
        tls: parking_lot::RwLock::new(tls),
        authenticator,
    });
    server.set_websocket(listener.clone());
    let accept_server = server.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = socket.accept() => accepted,
                // Lame duck mode: the listener is dropped (closed) here.
                _ = accept_server.lame_duck_entered() => return,
            };
            match accepted {
                Ok((stream, peer)) => {
                    tokio::spawn(connect(
                        accept_server.clone(),
                        listener.clone(),
                        stream,
                        crate::listener::peer_as_go(peer),
                    ));
                }
                Err(error) => {
                    tracing::error!("Error accepting websocket connection: {error}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
    Ok(())
}

/// Where websocket clients reach this server, announced to cluster peers as
/// `ws_connect_urls`: the `advertise` address, else the listener's (an unspecified host
/// replaced as for client URLs). Empty without a websocket listener.
pub(crate) fn own_urls(server: &Server) -> Vec<String> {
    let Some(listener) = server.websocket() else {
        return Vec::new();
    };
    if server.in_lame_duck_mode() {
        return Vec::new();
    }
    match &listener.options.advertise {
        Some(advertise) => vec![advertise.clone()],
        None => vec![crate::route::reachable_address(listener.address).to_string()],
    }
}

/// One accepted socket: TLS (when configured), the upgrade, then a client connection.
async fn connect(
    server: Arc<Server>,
    listener: Arc<Listener>,
    stream: TcpStream,
    peer: SocketAddr,
) {
    let _ = stream.set_nodelay(true);
    let limit = if listener.options.handshake_timeout.is_zero() {
        DEFAULT_HANDSHAKE_TIMEOUT
    } else {
        listener.options.handshake_timeout
    };
    let deadline = tokio::time::Instant::now() + limit;
    let tls = listener.tls.read().clone();
    match tls {
        None => {
            let mut stream = stream;
            let upgrade = tokio::time::timeout_at(
                deadline,
                handshake::upgrade(&mut stream, &listener, peer, false),
            )
            .await;
            if let Ok(Some(upgrade)) = upgrade {
                let (read_half, write_half) = stream.into_split();
                start_client(&server, peer, upgrade, None, read_half, write_half);
            }
        }
        Some(acceptor) => {
            let secured = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                Ok(Ok(secured)) => secured,
                Ok(Err(error)) => {
                    tracing::error!("{peer} - websocket TLS handshake error: {error}");
                    return;
                }
                Err(_) => return,
            };
            let mut secured = secured;
            let upgrade = tokio::time::timeout_at(
                deadline,
                handshake::upgrade(&mut secured, &listener, peer, true),
            )
            .await;
            if let Ok(Some(upgrade)) = upgrade {
                let session = client::secure::SessionDetails::of(secured.get_ref().1);
                let (read_half, write_half) = tokio::io::split(secured);
                start_client(&server, peer, upgrade, Some(session), read_half, write_half);
            }
        }
    }
}

/// The upgraded connection becomes a client: INFO (framed like everything after it), then the
/// usual reader and writer tasks over the framing layer. `session`: the TLS session of a `wss`
/// connection, shown in `/connz` as for a TLS client.
fn start_client<R, W>(
    server: &Arc<Server>,
    peer: SocketAddr,
    upgrade: handshake::Upgrade,
    session: Option<client::secure::SessionDetails>,
    read_half: R,
    write_half: W,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let id = server.next_client_id();
    let shared = client::new_shared(server, id, peer);
    let _ = shared.websocket.set(ClientSession {
        cookies: upgrade.cookies.clone(),
    });
    if let Some(session) = session {
        session.apply(&shared);
    }
    let over_limit = !server.register_client(&shared);
    let mut info = BytesMut::new();
    server.encode_info(&mut info, &shared, false);
    let control = Arc::new(Control::default());
    let max_payload =
        usize::try_from(server.current_options().max_payload.max(0)).unwrap_or(usize::MAX);
    let mut reader = reader::FrameReader::new(
        read_half,
        control.clone(),
        shared.clone(),
        upgrade.compression,
        max_payload,
    );
    if upgrade.no_masking {
        reader.accept_unmasked();
    }
    let writer = writer::FrameWriter::new(
        write_half,
        control,
        shared.clone(),
        upgrade.compression,
        upgrade.browser,
        upgrade.safari,
    );
    if over_limit {
        client::refuse_over_limit(server, shared, &info, writer);
        return;
    }
    shared.queue_bytes(&info);
    tracing::debug!("{} - cid:{} - Client connection created", peer, id);
    client::start_tasks(server, shared, reader, writer);
}

/// Control frames the reader decided on, for the writer to send: PONGs between data frames,
/// the CLOSE last of all.
#[derive(Default)]
pub(crate) struct Control {
    state: Mutex<ControlState>,
}

#[derive(Default)]
struct ControlState {
    frames: Vec<u8>,
    /// The payload of our CLOSE, once decided (a peer's echo or a protocol error).
    close: Option<Vec<u8>>,
}

impl Control {
    fn queue_pong(&self, payload: &[u8]) {
        let frame = frame::control_frame(frame::OPCODE_PONG, payload);
        self.state.lock().frames.extend_from_slice(&frame);
    }

    /// Decide the CLOSE (the first decision stands).
    fn queue_close(&self, status: u16, body: &str) {
        self.queue_close_payload(frame::close_payload(status, body));
    }

    fn queue_close_payload(&self, payload: Vec<u8>) {
        let mut state = self.state.lock();
        if state.close.is_none() {
            state.close = Some(payload);
        }
    }

    /// Move queued control frames into `out`; false when there were none.
    fn take_frames(&self, out: &mut Vec<u8>) -> bool {
        let mut state = self.state.lock();
        if state.frames.is_empty() {
            return false;
        }
        out.append(&mut state.frames);
        true
    }

    /// The CLOSE frame: the one decided, else the status for `reason` with its text; none for
    /// the reasons nats-server closes without flushing (read and write errors, slow consumers,
    /// a failed TLS handshake): the peer sees the connection drop (its 1006).
    fn close_frame(&self, reason: Option<CloseReason>, out: &mut Vec<u8>) {
        let decided = self.state.lock().close.take();
        let payload = match (decided, reason) {
            (Some(payload), _) => payload,
            (None, Some(reason)) if !reason.flushes() => return,
            (None, reason) => {
                let reason = reason.unwrap_or(CloseReason::ServerShutdown);
                frame::close_payload(frame::close_status(reason), reason.text())
            }
        };
        out.extend_from_slice(&frame::control_frame(frame::OPCODE_CLOSE, &payload));
    }
}

/// nats-server's origin checks: `same_origin` (scheme, host and port of the request) and
/// `allowed_origins` (scheme and port per host).
struct Origins {
    same_origin: bool,
    /// (host, scheme, port)
    allowed: Vec<(String, String, String)>,
}

impl Origins {
    fn new(options: &WebsocketOptions) -> Origins {
        let allowed = options
            .allowed_origins
            .iter()
            .filter_map(|origin| {
                let (scheme, host) = parse_origin(origin).ok()?;
                let (host, port) = host_and_port(scheme == "https", host);
                Some((host, scheme.to_string(), port))
            })
            .collect();
        Origins {
            same_origin: options.same_origin,
            allowed,
        }
    }

    /// `Err` with nats-server's reason when `origin` may not connect.
    fn check(&self, origin: &str, request_host: &str, secure: bool) -> Result<(), String> {
        if (!self.same_origin && self.allowed.is_empty()) || origin.is_empty() {
            return Ok(());
        }
        let (scheme, host) = parse_origin(origin)?;
        let (origin_host, origin_port) = host_and_port(scheme == "https", host);
        if self.same_origin {
            let (host, port) = host_and_port(secure, request_host);
            let expected = if secure { "https" } else { "http" };
            if origin_host != host || origin_port != port || !scheme.eq_ignore_ascii_case(expected)
            {
                return Err("not same origin".into());
            }
        }
        if !self.allowed.is_empty()
            && !self.allowed.iter().any(|(host, allowed_scheme, port)| {
                *host == origin_host && allowed_scheme == scheme && *port == origin_port
            })
        {
            return Err("not in the allowed list".into());
        }
        Ok(())
    }
}

/// `scheme://host[:port][/path]` -> (scheme, host[:port]), as Go's `url.ParseRequestURI`
/// reads an origin.
fn parse_origin(origin: &str) -> Result<(&str, &str), String> {
    let invalid = || format!("parse {origin:?}: invalid URI for request");
    let (scheme, rest) = origin.split_once("://").ok_or_else(invalid)?;
    if scheme.is_empty() {
        return Err(format!("parse {origin:?}: missing protocol scheme"));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    Ok((scheme, host))
}

/// Lower-cased host and port, the scheme's default port when none is given.
fn host_and_port(secure: bool, text: &str) -> (String, String) {
    let default_port = if secure { "443" } else { "80" };
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').unwrap_or(default_port)),
            None => (text, default_port),
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, port),
            _ => (text, default_port),
        }
    };
    (host.to_ascii_lowercase(), port.to_string())
}

impl ClientSession {
    /// nats-server's cookie fallback: credentials missing from CONNECT come from the
    /// configured cookies.
    pub(crate) fn fill_credentials(&self, connect: &mut nats_proto::ConnectOptions) {
        let cookies = &self.cookies;
        if connect.jwt.as_deref().unwrap_or_default().is_empty() && cookies.jwt.is_some() {
            connect.jwt = cookies.jwt.clone();
        }
        if connect.user.as_deref().unwrap_or_default().is_empty() && cookies.user.is_some() {
            connect.user = cookies.user.clone();
        }
        if connect.pass.as_deref().unwrap_or_default().is_empty() && cookies.password.is_some() {
            connect.pass = cookies.password.clone();
        }
        if connect.auth_token.as_deref().unwrap_or_default().is_empty() && cookies.token.is_some() {
            connect.auth_token = cookies.token.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(same_origin: bool, allowed: &[&str]) -> Origins {
        Origins::new(&WebsocketOptions {
            same_origin,
            allowed_origins: allowed.iter().map(|text| text.to_string()).collect(),
            ..WebsocketOptions::default()
        })
    }

    #[test]
    fn origins_follow_nats_server() {
        let open = origins(false, &[]);
        assert!(open.check("http://evil.example", "host:80", false).is_ok());
        let same = origins(true, &[]);
        assert!(same.check("http://host:8080", "host:8080", false).is_ok());
        assert!(same.check("http://HOST:8080", "host:8080", false).is_ok());
        assert_eq!(
            same.check("http://other:8080", "host:8080", false),
            Err("not same origin".into())
        );
        assert!(same.check("https://host:8080", "host:8080", false).is_err());
        assert!(same.check("", "host:8080", false).is_ok());
        let listed = origins(false, &["https://good.example", "http://x.example:9000"]);
        assert!(listed.check("https://good.example:443", "h", false).is_ok());
        assert!(listed.check("http://x.example:9000", "h", false).is_ok());
        assert_eq!(
            listed.check("http://good.example", "h", false),
            Err("not in the allowed list".into())
        );
    }
}

//! Connection set-up when the server has TLS, in nats-server's order: INFO in the clear (or,
//! with `handshake_first`, nothing until the handshake is done), then the TLS handshake within
//! the TLS timeout, then the reader and writer over the encrypted stream. A client whose first
//! byte is not a TLS handshake record is closed without a reply (as Go's crypto/tls does);
//! with `allow_non_tls` it stays in plain text instead.

use super::{start_tasks, ClientShared, CloseReason};
use crate::server::Server;
use bytes::BytesMut;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::{timeout, timeout_at, Instant};

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What the first bytes from the client asked for.
enum Upgrade {
    Tls,
    Plain,
    Fail(String),
}

pub(super) async fn establish(
    server: Arc<Server>,
    client_tls: Arc<crate::security::tls::ClientTls>,
    shared: Arc<ClientShared>,
    mut stream: TcpStream,
    info: BytesMut,
    over_limit: bool,
) {
    let acceptor = client_tls.acceptor.clone();
    let tls = &client_tls.options;
    let allow_non_tls = server.current_options().allow_non_tls;
    let write_deadline = server.options.write_deadline;
    let mut info_pending = tls.handshake_first;
    if over_limit {
        // nats-server refuses in the clear, after INFO unless the handshake had to come first.
        let mut refusal = BytesMut::new();
        if !info_pending {
            refusal.extend_from_slice(&info);
        }
        nats_proto::encode_err(&mut refusal, "maximum connections exceeded");
        server
            .closed_connections
            .record(&shared, &[], CloseReason::MaxConnectionsExceeded);
        let _ = timeout(write_deadline, stream.write_all(&refusal)).await;
        let _ = stream.shutdown().await;
        return;
    }
    debug(&shared, "Client connection created");
    if info_pending {
        if let Some(fallback) = tls.handshake_first_fallback {
            // `readable()` may report a fresh socket ready before any byte came: peek.
            let mut first = [0u8; 1];
            if timeout(fallback, stream.peek(&mut first)).await.is_err() {
                if !write_plain(&mut stream, &info, write_deadline).await {
                    return fail(&server, &shared, CloseReason::WriteError);
                }
                info_pending = false;
            }
        }
    } else if !write_plain(&mut stream, &info, write_deadline).await {
        return fail(&server, &shared, CloseReason::WriteError);
    }
    let allow_plain = allow_non_tls && !info_pending;
    let deadline = Instant::now() + tls.timeout;
    if !allow_plain {
        debug(&shared, "Starting TLS client connection handshake");
    }
    match first_byte(&stream, deadline, allow_plain).await {
        Upgrade::Plain => {
            let (read_half, write_half) = stream.into_split();
            start_tasks(&server, shared, read_half, write_half);
            return;
        }
        Upgrade::Fail(text) => {
            debug(&shared, &text);
            // Go's TLS read took what the client had sent: closing with it unread would
            // reset the connection instead of ending it.
            let mut discard = [0u8; 4096];
            let _ = stream.try_read(&mut discard);
            return fail(&server, &shared, CloseReason::TlsHandshakeError);
        }
        Upgrade::Tls => {}
    }
    let secured = match timeout_at(deadline, acceptor.accept(stream)).await {
        Ok(Ok(secured)) => secured,
        Ok(Err(error)) => {
            debug(&shared, &format!("TLS handshake error: {error}"));
            return fail(&server, &shared, CloseReason::TlsHandshakeError);
        }
        Err(_) => {
            debug(&shared, "TLS handshake timeout");
            return fail(&server, &shared, CloseReason::TlsHandshakeError);
        }
    };
    let connection = secured.get_ref().1;
    let session = SessionDetails::of(connection);
    debug(&shared, "TLS handshake complete");
    debug(
        &shared,
        &format!(
            "TLS version {}, cipher suite {}",
            session.version, session.cipher
        ),
    );
    if tls.map {
        let identity = connection
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|certificate| {
                crate::security::certificate::CertificateIdentity::from_der(certificate.as_ref())
            });
        if let Some(identity) = identity {
            let _ = shared.certificate.set(identity);
        }
    }
    session.apply(&shared);
    shared.meta.lock().tls_first = info_pending;
    if info_pending {
        let mut info = BytesMut::new();
        server.encode_info(&mut info, &shared, true);
        shared.queue_bytes(&info);
    }
    let (read_half, write_half) = tokio::io::split(secured);
    start_tasks(&server, shared, read_half, write_half);
}

/// What `/connz` shows of an established TLS session (client or websocket connection).
pub(crate) struct SessionDetails {
    version: String,
    cipher: String,
    /// The certificates the client presented (nats-server's `tls_peer_certs`, with `auth=1`).
    peer_certificates: Vec<crate::security::certificate::PeerCertificate>,
}

impl SessionDetails {
    pub(crate) fn of(connection: &rustls::ServerConnection) -> SessionDetails {
        SessionDetails {
            version: connection
                .protocol_version()
                .map(crate::security::tls::version_text)
                .unwrap_or_default(),
            cipher: connection
                .negotiated_cipher_suite()
                .map(crate::security::tls::cipher_text)
                .unwrap_or_default(),
            peer_certificates: connection
                .peer_certificates()
                .unwrap_or_default()
                .iter()
                .filter_map(|certificate| {
                    crate::security::certificate::PeerCertificate::from_der(certificate.as_ref())
                })
                .collect(),
        }
    }

    pub(crate) fn apply(self, shared: &ClientShared) {
        let mut meta = shared.meta.lock();
        meta.tls = Some((self.version, self.cipher));
        meta.tls_peer_certificates = self.peer_certificates;
    }
}

/// Wait (until `deadline`) for the client's first byte and judge it.
async fn first_byte(stream: &TcpStream, deadline: Instant, allow_plain: bool) -> Upgrade {
    let mut first = [0u8; 1];
    match timeout_at(deadline, stream.peek(&mut first)).await {
        Ok(Ok(0)) => Upgrade::Fail("TLS handshake error: EOF".into()),
        Ok(Ok(_)) if first[0] == TLS_HANDSHAKE_RECORD => Upgrade::Tls,
        Ok(Ok(_)) if allow_plain => Upgrade::Plain,
        Ok(Ok(_)) => Upgrade::Fail(
            "TLS handshake error: tls: first record does not look like a TLS handshake".into(),
        ),
        Ok(Err(error)) => Upgrade::Fail(format!("TLS handshake error: {error}")),
        // A silent client on a listener that also takes plain text is a plain-text client.
        Err(_) if allow_plain => Upgrade::Plain,
        Err(_) => Upgrade::Fail("TLS handshake timeout".into()),
    }
}

async fn write_plain(
    stream: &mut TcpStream,
    bytes: &[u8],
    write_deadline: std::time::Duration,
) -> bool {
    if write_deadline.is_zero() {
        return stream.write_all(bytes).await.is_ok();
    }
    matches!(
        timeout(write_deadline, stream.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

fn debug(shared: &ClientShared, text: &str) {
    tracing::debug!("{} - cid:{} - {}", shared.address, shared.id, text);
}

fn fail(server: &Server, shared: &Arc<ClientShared>, reason: CloseReason) {
    shared.close(reason);
    server.unregister_client(shared);
}

//! Route TLS (`cluster { tls { ... } }`) as nats-server runs it: the TLS handshake is the first
//! thing on a route connection, from either side, before INFO and CONNECT, within the cluster's
//! TLS `timeout`; it is mutual (each side presents the route certificate and verifies the
//! other's against `ca_file`), and the dialing side checks the peer's name against the host of
//! the route URL. The rustls configurations come from `security/tls.rs`, shared with clients.
//!
//! Built once by [`super::start`]; used by `connection.rs`. Knows nothing of the route protocol.

use crate::config::TlsOptions;
use rustls_pki_types::ServerName;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

/// Both sides of route TLS.
pub struct RouteTls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    timeout: Duration,
}

impl RouteTls {
    pub fn new(tls: &TlsOptions) -> Result<RouteTls, String> {
        Ok(RouteTls {
            acceptor: TlsAcceptor::from(crate::security::tls::route_server_config(tls)?),
            connector: TlsConnector::from(crate::security::tls::route_client_config(tls)?),
            timeout: tls.timeout,
        })
    }

    /// The accepting side's handshake.
    pub async fn accept(&self, stream: TcpStream) -> Result<server::TlsStream<TcpStream>, String> {
        match tokio::time::timeout(self.timeout, self.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("i/o timeout".into()),
        }
    }

    /// The dialing side's handshake with the server at `host` (a name or an IP address).
    pub async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> Result<client::TlsStream<TcpStream>, String> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| format!("invalid server name {host:?}"))?;
        match tokio::time::timeout(self.timeout, self.connector.connect(name, stream)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("i/o timeout".into()),
        }
    }
}

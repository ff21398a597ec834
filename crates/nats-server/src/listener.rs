//! Binding the client and monitoring listeners as nats-server does. The wildcard host
//! (`0.0.0.0`, the default, or `::`) listens on every interface for IPv4 and IPv6 alike (Go's
//! `net.Listen` binds `[::]` dual-stack), so `nats://[::1]:4222` reaches a default server; a host
//! may be written with brackets (`[::1]`). A failure is worded as nats-server's fatal line
//! (`Error listening on port: 0.0.0.0:4222, "listen tcp 0.0.0.0:4222: bind: address already
//! in use"`).
//!
//! Called by `server::run`; knows nothing about connections.

use crate::ServerError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use tokio::net::TcpListener;

/// A listener on `host:port` and the address to report (the configured host with the bound
/// port, so a wildcard listener still reports `0.0.0.0` as nats-server does).
pub(crate) async fn bind(host: &str, port: u16) -> Result<(TcpListener, SocketAddr), ServerError> {
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    let configured: Option<IpAddr> = if host.is_empty() {
        Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        host.parse().ok()
    };
    let result = match configured {
        Some(ip) if ip.is_unspecified() => {
            // Dual-stack first (Linux's default for an IPv6 wildcard socket); a host without
            // IPv6 falls back to the IPv4 wildcard.
            match TcpListener::bind((Ipv6Addr::UNSPECIFIED, port)).await {
                Ok(listener) => Ok(listener),
                Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => Err(error),
                Err(_) => TcpListener::bind((ip, port)).await,
            }
        }
        Some(ip) => TcpListener::bind((ip, port)).await,
        None => TcpListener::bind((host, port)).await,
    };
    let shown = match configured {
        Some(ip) => SocketAddr::new(ip, port).to_string(),
        None => format!("{host}:{port}"),
    };
    let listener = result.map_err(|source| ServerError::Listen {
        address: shown.clone(),
        reason: format!(
            "listen tcp {shown}: bind: {}",
            go_compat::errno_text(&source)
        ),
    })?;
    let bound = listener.local_addr().map_err(ServerError::Io)?;
    let reported = match configured {
        Some(ip) => SocketAddr::new(ip, bound.port()),
        None => bound,
    };
    Ok((listener, reported))
}

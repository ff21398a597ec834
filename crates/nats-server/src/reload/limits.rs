//! A config reload's lower `max_connections`, as nats-server's `maxConnOption`: connections
//! are closed until the server is within the new limit, each told `maximum connections
//! exceeded` first (`Closed N connections to fall within max_connections`).
//!
//! Called by `reload::reload` once the reload is known to be reloadable.

use crate::client::CloseReason;
use crate::server::Server;

/// Close connections until at most `limit` remain (none when `limit` is not positive). Which
/// ones is left open by nats-server (map order); here the newest go first.
pub(super) fn close_over_max_connections(server: &Server, limit: i64) {
    let Ok(limit) = usize::try_from(limit) else {
        return;
    };
    if limit == 0 {
        return;
    }
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    let excess = clients.len().saturating_sub(limit);
    if excess == 0 {
        return;
    }
    for client in clients.iter().rev().take(excess) {
        let mut error = bytes::BytesMut::new();
        nats_proto::encode_err(&mut error, "maximum connections exceeded");
        client.queue_bytes(&error);
        client.close(CloseReason::MaxConnectionsExceeded);
    }
    tracing::info!("Closed {excess} connections to fall within max_connections");
}

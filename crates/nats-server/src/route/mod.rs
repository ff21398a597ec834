//! Routes: the server-to-server links that make several servers one cluster, speaking
//! nats-server's route protocol so rnats and nats-server nodes mesh together.
//!
//! - `registry.rs` [`Routes`]: established routes by peer id, and the local interest announced
//!   on them (`RS+`/`RS-`); held by every account's [`crate::router::Router`], which calls it on every
//!   local subscribe/unsubscribe and sends messages through [`RouteLink::send_message`].
//! - `link.rs`: one established route and the remote subscriptions it announced.
//! - `connection.rs`: the handshake and read loop of one route connection (either side).
//! - `solicit.rs`: dialing explicit routes (forever, with backoff) and gossiped ones.
//! - `permissions.rs`: `cluster { permissions }` changed by a reload, or a peer's `export`
//!   changed by its INFO, applied to the established routes.
//! - `secure.rs`: route TLS (handshake first, mutual), when `cluster { tls }` is set.
//!
//! Called by `server.rs` ([`start`]) when `cluster { }` or `--cluster` is set; a server without
//! a cluster never creates [`Routes`] and its publish path pays nothing for them. This module
//! knows nothing of JetStream; toward nats-server peers it presents itself as a server without
//! route pooling or compression, so one route carries every account, each named on every
//! `RS+`/`RS-`/`RMSG` line; lines naming an account we do not have are ignored.

mod connection;
mod link;
mod permissions;
mod registry;
pub(crate) mod secure;
mod solicit;

pub(crate) use connection::announce_lame_duck;
pub use link::{InterestKey, RouteLink, RouteSubscription};
pub(crate) use permissions::reload as reload_permissions;
pub use registry::Routes;
pub(crate) use solicit::{remove_explicit, spawn_explicit};

use crate::server::Server;
use crate::ServerError;
use std::net::SocketAddr;
use std::sync::Arc;

/// A dynamic cluster name: 22 random alphanumerics, as nats-server's NUID-based names.
pub fn dynamic_cluster_name() -> String {
    crate::security::identity::new_nuid()
}

/// Open the route listener (when a port is set) and start dialing the configured routes.
pub async fn start(server: &Arc<Server>, routes: Arc<Routes>) -> Result<(), ServerError> {
    let Some(cluster) = server.options.cluster.clone() else {
        return Ok(());
    };
    {
        let mut urls = client_connect_urls(server);
        urls.sort();
        *routes.announced_client_urls.lock() = urls;
    }
    if let Some(tls) = &cluster.tls {
        let route_tls = secure::RouteTls::new(tls).map_err(ServerError::Tls)?;
        routes.set_tls(Some(route_tls));
    }
    tracing::info!("Cluster name is {}", routes.cluster_name());
    if routes.dynamic_name() {
        tracing::warn!("Cluster name was dynamically generated, consider setting one");
    }
    if cluster.port != 0 {
        let port = cluster.port;
        // nats-server's wording: `Error listening on router port: 6222 - listen tcp
        // 0.0.0.0:6222: bind: address already in use`.
        let (listener, address) =
            crate::listener::bind(&cluster.host, port)
                .await
                .map_err(|error| match error {
                    crate::ServerError::Listen { reason, .. } => {
                        crate::ServerError::RouteListen { port, reason }
                    }
                    other => other,
                })?;
        let _ = server.route_address.set(address);
        tracing::info!("Listening for route connections on {address}");
        let accept_server = server.clone();
        let accept_routes = routes.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, peer)) => {
                        tokio::spawn(connection::run_accepted(
                            accept_server.clone(),
                            accept_routes.clone(),
                            stream,
                            crate::listener::peer_as_go(peer),
                        ));
                    }
                    Err(error) => {
                        tracing::error!("Error accepting route connection: {error}");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                }
            }
        });
    }
    for url in cluster.routes {
        solicit::spawn_explicit(server.clone(), routes.clone(), url);
    }
    Ok(())
}

/// A reload changed `cluster { authorization }`: every route a peer dialled to us is checked
/// against it, and one whose CONNECT no longer passes is closed with `Authorization
/// Violation`, as nats-server's `isRouterAuthorized` on reload (the routes we dialled keep
/// theirs; they use the new credentials when they dial again).
pub(crate) fn check_accepted_routes(routes: &Routes, cluster: &crate::config::ClusterOptions) {
    let Some(user) = &cluster.username else {
        return;
    };
    let password = cluster.password.clone().unwrap_or_default();
    for link in routes.links() {
        if link.solicited
            || connection::route_authorized(user, &password, link.peer_credentials.as_ref())
        {
            continue;
        }
        let shared = &link.connection;
        let given = link
            .peer_credentials
            .as_ref()
            .and_then(|(user, _)| user.clone())
            .unwrap_or_default();
        tracing::error!(
            "{} - rid:{} - authentication error - User {given:?}",
            shared.address,
            shared.id
        );
        let mut frame = bytes::BytesMut::new();
        nats_proto::encode_err(&mut frame, "Authorization Violation");
        shared.queue_bytes(&frame);
        shared.close(crate::client::CloseReason::AuthenticationViolation);
    }
}

/// This server's client URLs as peers and clients should use them: the client listener's
/// address; an unspecified host (0.0.0.0) is replaced by the address of the interface that
/// routes outward (nats-server lists every non-loopback address; we list that one).
pub fn own_client_urls(server: &Server) -> Vec<String> {
    let Some(address) = server.client_address.get() else {
        return Vec::new();
    };
    // In lame duck mode clients are sent elsewhere (nats-server clears its own URLs).
    if server.in_lame_duck_mode() {
        return Vec::new();
    }
    vec![reachable_address(*address).to_string()]
}

/// `address` as other hosts reach it: an unspecified host (0.0.0.0) is replaced by the address
/// of the interface that routes outward.
pub(crate) fn reachable_address(address: SocketAddr) -> SocketAddr {
    if address.ip().is_unspecified() {
        SocketAddr::new(outward_address().unwrap_or(address.ip()), address.port())
    } else {
        address
    }
}

fn outward_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

/// The routes whose peers' URLs our clients are told about: none alone or with `no_advertise`.
fn advertised_routes(server: &Server) -> Option<&Arc<Routes>> {
    let no_advertise = server
        .current_options()
        .cluster
        .as_ref()
        .is_some_and(|cluster| cluster.no_advertise);
    server.routes().filter(|_| !no_advertise)
}

/// `connect_urls` for our clients' INFO: ours and every peer's, unless `no_advertise`.
pub fn client_connect_urls(server: &Server) -> Vec<String> {
    let Some(routes) = advertised_routes(server) else {
        return Vec::new();
    };
    let mut urls = own_client_urls(server);
    for url in routes.peer_connect_urls() {
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

/// `connect_urls` for our websocket clients' INFO (nats-server's `ws_connect_urls`): once a
/// peer announced websocket URLs, ours and every peer's; nothing alone or with `no_advertise`.
pub fn websocket_connect_urls(server: &Server) -> Vec<String> {
    let Some(routes) = advertised_routes(server) else {
        return Vec::new();
    };
    let peers = routes.peer_websocket_urls();
    if peers.is_empty() {
        return Vec::new();
    }
    let mut urls = crate::websocket::own_urls(server);
    for url in peers {
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

/// The cluster changed: when the `connect_urls` clients know changed, send every client an
/// async INFO with the new list (clients that negotiated protocol 1 or more, as nats-server);
/// websocket clients have their own list (`ws_connect_urls`) and get an INFO when it changed.
pub fn clients_connect_urls_changed(server: &Arc<Server>) {
    let Some(routes) = server.routes() else {
        return;
    };
    if server
        .current_options()
        .cluster
        .as_ref()
        .is_some_and(|cluster| cluster.no_advertise)
    {
        return;
    }
    let changed = |urls: Vec<String>, announced: &parking_lot::Mutex<Vec<String>>| {
        let mut urls = urls;
        urls.sort();
        let mut announced = announced.lock();
        let changed = *announced != urls;
        *announced = urls;
        changed
    };
    let clients_changed = changed(client_connect_urls(server), &routes.announced_client_urls);
    let websocket_changed = changed(
        websocket_connect_urls(server),
        &routes.announced_websocket_urls,
    );
    if !clients_changed && !websocket_changed {
        return;
    }
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    for client in clients {
        let websocket = client.websocket.get().is_some();
        if client.meta.lock().protocol < 1
            || (websocket && !websocket_changed)
            || (!websocket && !clients_changed)
        {
            continue;
        }
        let mut frame = bytes::BytesMut::new();
        server.encode_info(&mut frame, &client, false);
        client.queue_bytes(&frame);
        client.wake_writer();
    }
}

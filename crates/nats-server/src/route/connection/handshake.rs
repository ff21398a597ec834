//! The route handshake, from either side: dialling, our CONNECT and INFO at once; accepting, the
//! peer's CONNECT (authorization, cluster name, route to self, duplicate route) before our INFO
//! (held for it, see `INFO_HOLD`); then the peer's INFO (registering the link, gossip to the
//! other peers, `connect_urls` for clients) and the round-trip PINGs.

use super::{Next, Session};
use crate::client::{ClientShared, CloseReason};
use crate::route::link::RouteLink;
use crate::route::registry::Routes;
use crate::server::Server;
use bytes::{BufMut, BytesMut};
use nats_proto::{RouteConnect, RouteInfo, RouteSubjectRules};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// Whether a route's CONNECT credentials (`user`, `pass`) are the cluster's authorization.
pub(crate) fn route_authorized(
    user: &str,
    password: &str,
    credentials: Option<&(Option<String>, Option<String>)>,
) -> bool {
    let Some((given_user, given_password)) = credentials else {
        return false;
    };
    given_user.as_deref() == Some(user)
        && crate::security::auth::compare_passwords(
            password,
            given_password.as_deref().unwrap_or(""),
        )
}

/// The `cluster { }` block as last loaded (a reload may change its authorization).
fn current_cluster(server: &Server) -> crate::config::ClusterOptions {
    server.current_options().cluster.clone().unwrap_or_default()
}

/// Our route INFO.
pub(super) fn our_info(server: &Server, routes: &Routes) -> RouteInfo {
    let cluster = current_cluster(server);
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
        cluster_dynamic: routes.dynamic_name(),
        import: permission_rules(cluster.permissions.as_ref(), |permissions| {
            permissions.publish.as_ref()
        }),
        export: permission_rules(cluster.permissions.as_ref(), |permissions| {
            permissions.subscribe.as_ref()
        }),
        connect_urls: if cluster.no_advertise {
            Vec::new()
        } else {
            crate::route::own_client_urls(server)
        },
        ws_connect_urls: if cluster.no_advertise {
            Vec::new()
        } else {
            crate::websocket::own_urls(server)
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

/// Lame duck mode: our INFO with `ldm` on every route, so the peers stop offering this server
/// to their clients (nats-server's sendLDMToRoutes).
pub(crate) fn announce_lame_duck(server: &Server, routes: &Routes) {
    let mut frame = BytesMut::new();
    let info = RouteInfo {
        ldm: true,
        ..our_info(server, routes)
    };
    encode_info(&mut frame, &info);
    for link in routes.links() {
        link.connection.queue_bytes(&frame);
        link.connection.wake_writer();
    }
}

pub(crate) fn queue_info(server: &Server, routes: &Routes, shared: &ClientShared) {
    let mut info = BytesMut::new();
    encode_info(&mut info, &our_info(server, routes));
    shared.queue_bytes(&info);
}

impl Session {
    /// The accepting side: the peer's CONNECT.
    pub(super) fn connect(&mut self, json: &[u8]) -> Next {
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
        let cluster = current_cluster(&self.server);
        self.peer_credentials = Some((connect.user.clone(), connect.pass.clone()));
        if let Some(user) = &cluster.username {
            let password = cluster.password.clone().unwrap_or_default();
            if !route_authorized(user, &password, self.peer_credentials.as_ref()) {
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
        self.release_info();
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
        if self.routes.dynamic_name() && (!theirs_dynamic || theirs > ours.as_str()) {
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

    pub(super) fn info(&mut self, json: &[u8]) -> Next {
        let Ok(mut info) = serde_json::from_slice::<RouteInfo>(json) else {
            return Next::Close(CloseReason::ProtocolViolation);
        };
        if let Some(link) = &self.link {
            if info.server_id == link.remote_id() {
                // The peer's own INFO again (connect_urls changed, lame duck...). A peer in
                // lame duck mode is no longer offered to our clients (nats-server's
                // removeConnectURLsAndSendINFOToClients).
                if info.ldm {
                    info.connect_urls.clear();
                    info.ws_connect_urls.clear();
                }
                let (changed, old_export) = {
                    let known = link.info.lock();
                    (
                        known.connect_urls != info.connect_urls
                            || known.ws_connect_urls != info.ws_connect_urls,
                        (known.export != info.export && !info.ldm).then(|| known.export.clone()),
                    )
                };
                let new_export = info.export.clone();
                *link.info.lock() = info;
                if let Some(old_export) = old_export {
                    crate::route::permissions::peer_export_changed(
                        &self.routes,
                        link,
                        old_export.as_ref(),
                        new_export.as_ref(),
                    );
                }
                if changed {
                    crate::route::clients_connect_urls_changed(&self.server);
                }
            } else {
                crate::route::solicit::gossiped(&self.server, &self.routes, &info);
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
            url: self.url.clone(),
            carried: parking_lot::Mutex::new(None),
            ended: tokio::sync::watch::Sender::new(false),
            peer_credentials: self.peer_credentials.clone(),
            info: parking_lot::Mutex::new(info.clone()),
            subscriptions: parking_lot::Mutex::new(HashMap::new()),
            pending: parking_lot::Mutex::new(HashMap::new()),
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
        crate::route::clients_connect_urls_changed(&self.server);
        crate::system::route_registered(&self.server);
        Next::Continue
    }

    fn send_rtt_ping(&mut self) {
        self.rtt_ping = Some(std::time::Instant::now());
        self.send(b"PING\r\n");
    }

    /// A PONG: the answer to our timing PING sets the route's RTT; one to the writer's
    /// keepalive PING starts a new measurement once the last is a ping interval old.
    pub(super) fn pong(&mut self) {
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

    /// The accepting side's INFO, once: when the peer's CONNECT passed authorization and the
    /// cluster name, or when it was held long enough (`INFO_HOLD`).
    pub(super) fn release_info(&mut self) {
        if std::mem::take(&mut self.info_held) {
            queue_info(&self.server, &self.routes, &self.shared);
            self.shared.wake_writer();
        }
    }

    /// The soliciting side opens with CONNECT and our INFO, as nats-server does.
    pub(super) fn send_connect(&self) {
        let url = self.url.clone();
        let cluster = current_cluster(&self.server);
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
            cluster_dynamic: self.routes.dynamic_name(),
            lang: None,
        };
        let mut frame = BytesMut::new();
        frame.put_slice(b"CONNECT ");
        frame.put_slice(&serde_json::to_vec(&connect).unwrap_or_else(|_| b"{}".to_vec()));
        frame.put_slice(b"\r\n");
        encode_info(&mut frame, &our_info(&self.server, &self.routes));
        self.send(&frame);
    }
}

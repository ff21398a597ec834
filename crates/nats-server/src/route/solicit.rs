//! Dialing routes: explicit routes (from `routes: [...]`) retry forever with backoff; implicit
//! routes (learned by gossip from a peer's INFO) are dialed `connect_retries + 1` times.

use super::connection::{self, RouteEnd};
use super::registry::Routes;
use crate::client::CloseReason;
use crate::config::RouteUrl;
use crate::server::Server;
use nats_proto::RouteInfo;
use rand::Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// First retry delay of a route dial (nats-server: 1 s) ...
const CONNECT_RETRY: Duration = Duration::from_secs(1);
/// ... growing to this with `connect_backoff`.
const CONNECT_RETRY_MAX: Duration = Duration::from_secs(30);
/// A dial that does not complete in this time is a failed attempt.
const DIAL_TIMEOUT: Duration = Duration::from_secs(1);

async fn dial(url: &RouteUrl) -> std::io::Result<TcpStream> {
    match tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(url.address())).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "i/o timeout",
        )),
    }
}

fn jitter(delay: Duration) -> Duration {
    let extra = rand::thread_rng().gen_range(0..=delay.as_millis() as u64 / 4 + 1);
    delay + Duration::from_millis(extra)
}

/// Keep an explicit route up for as long as the server runs, or until a config reload
/// removes it ([`remove_explicit`]).
pub fn spawn_explicit(server: Arc<Server>, routes: Arc<Routes>, url: RouteUrl) {
    let removed = Arc::new(AtomicBool::new(false));
    if let Some(previous) = routes.explicit.lock().insert(url.clone(), removed.clone()) {
        previous.store(true, Ordering::Relaxed);
    }
    tokio::spawn(async move {
        let backoff = server
            .current_options()
            .cluster
            .as_ref()
            .is_some_and(|cluster| cluster.connect_backoff);
        let mut attempt: u64 = 0;
        let mut delay = CONNECT_RETRY;
        while !removed.load(Ordering::Relaxed) {
            tracing::debug!(
                "Trying to connect to route on {} ({})",
                url.address(),
                url.address()
            );
            attempt += 1;
            match dial(&url).await {
                Ok(stream) if removed.load(Ordering::Relaxed) => drop(stream),
                Ok(stream) => {
                    attempt = 0;
                    delay = CONNECT_RETRY;
                    let end = connection::run_solicited(
                        server.clone(),
                        routes.clone(),
                        stream,
                        url.clone(),
                    )
                    .await;
                    match end {
                        RouteEnd::ToSelf => return,
                        RouteEnd::Registered(_) => {
                            tracing::debug!(
                                "Attempting reconnect for solicited route \"nats-route://{}\"",
                                url.address()
                            );
                        }
                        RouteEnd::NotRegistered(Some(remote)) => {
                            // Already routed to that server by another connection: watch it
                            // and dial again once it is gone.
                            while routes.is_connected(&remote) && !removed.load(Ordering::Relaxed) {
                                tokio::time::sleep(CONNECT_RETRY).await;
                            }
                        }
                        RouteEnd::NotRegistered(None) => {}
                    }
                }
                Err(error) => {
                    tracing::error!(
                        "Error trying to connect to route (attempt {attempt}): dial tcp {}: {error}",
                        url.address()
                    );
                    if backoff {
                        delay = (delay * 2).min(CONNECT_RETRY_MAX);
                    }
                }
            }
            tokio::time::sleep(jitter(delay)).await;
        }
    });
}

/// A config reload dropped `url` from the routes: stop dialing it and close the routes
/// dialled to it, which do not reconnect (nats-server's `routesOption`).
pub fn remove_explicit(routes: &Routes, url: &RouteUrl) {
    if let Some(removed) = routes.explicit.lock().remove(url) {
        removed.store(true, Ordering::Relaxed);
    }
    for link in routes.links() {
        if link.url.as_ref() == Some(url) {
            link.connection.close(CloseReason::RouteRemoved);
            tracing::info!("Removed route nats-route://{}", url.address());
        }
    }
}

/// A peer told us about another server (gossip): dial it unless we know it already.
pub fn gossiped(server: &Arc<Server>, routes: &Arc<Routes>, info: &RouteInfo) {
    if info.server_id == server.server_id || routes.is_connected(&info.server_id) {
        return;
    }
    let Some(url) = RouteUrl::parse(&info.ip)
        .or_else(|| RouteUrl::parse(&format!("nats-route://{}:{}", info.host, info.port)))
    else {
        return;
    };
    let explicit = routes
        .explicit
        .lock()
        .keys()
        .any(|route| route.host == url.host && route.port == url.port);
    if explicit {
        return;
    }
    if !routes.dialing.lock().insert(url.address()) {
        return;
    }
    let retries = server
        .current_options()
        .cluster
        .as_ref()
        .map_or(0, |cluster| cluster.connect_retries.max(0)) as u64;
    let server = server.clone();
    let routes = routes.clone();
    let remote_id = info.server_id.clone();
    tokio::spawn(async move {
        let mut attempt = 0;
        // Dial (and redial after a drop) until the attempts run out.
        while attempt <= retries {
            if routes.is_connected(&remote_id) {
                break;
            }
            attempt += 1;
            tracing::debug!("Trying to connect to route on {}", url.address());
            match dial(&url).await {
                Ok(stream) => {
                    let end = connection::run_solicited(
                        server.clone(),
                        routes.clone(),
                        stream,
                        url.clone(),
                    )
                    .await;
                    if matches!(end, RouteEnd::ToSelf) {
                        break;
                    }
                    if matches!(end, RouteEnd::Registered(_)) {
                        attempt = 0;
                    }
                }
                Err(error) => tracing::error!(
                    "Error trying to connect to route (attempt {attempt}): dial tcp {}: {error}",
                    url.address()
                ),
            }
            if attempt <= retries {
                tokio::time::sleep(jitter(CONNECT_RETRY)).await;
            }
        }
        routes.dialing.lock().remove(&url.address());
    });
}

//! Dialing routes: explicit routes (from `routes: [...]`) retry forever; implicit routes
//! (learned by gossip from a peer's INFO) are dialed `connect_retries + 1` times. The waits are
//! nats-server's (`connectToRoute`, `reConnectToRoute`): 1 s after a refused dial (doubling up
//! to 30 s with `connect_backoff`), and after a connection ends 1 s plus up to 100 ms at random
//! for an explicit route, the random part alone for an implicit one.

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

/// The wait after a refused (or timed-out) dial before the next (nats-server's
/// `routeConnectDelay`), without randomness ...
const CONNECT_RETRY: Duration = Duration::from_secs(1);
/// ... doubled after each such wait with `connect_backoff`, up to this (`routeConnectMaxDelay`).
const CONNECT_RETRY_MAX: Duration = Duration::from_secs(30);
/// After a connection of an explicit route ends, it is dialled again after this
/// (`DEFAULT_ROUTE_RECONNECT`) ...
const RECONNECT_DELAY: Duration = Duration::from_secs(1);
/// ... plus a random part below this, which alone is the wait for an implicit route: two servers
/// that dialled each other at once, and dropped both connections, do not meet again in step.
const RECONNECT_RANDOM: Duration = Duration::from_millis(100);
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

/// The wait between a route connection's end and the next dial (nats-server's
/// `reConnectToRoute`: `rand.Intn(100)` milliseconds, plus 1 s for an explicit route).
fn reconnect_delay(explicit: bool, random: &mut impl Rng) -> Duration {
    let random_part =
        Duration::from_millis(random.gen_range(0..RECONNECT_RANDOM.as_millis() as u64));
    if explicit {
        RECONNECT_DELAY + random_part
    } else {
        random_part
    }
}

/// The waits after the refused dials of one dialling run, in turn (nats-server's
/// `connectToRoute`): [`CONNECT_RETRY`] each, or with `connect_backoff` [`CONNECT_RETRY`] first,
/// doubled after each wait up to [`CONNECT_RETRY_MAX`]. A connection made starts a new run.
struct ConnectRetry {
    next: Duration,
    backoff: bool,
}

impl ConnectRetry {
    fn new(backoff: bool) -> ConnectRetry {
        ConnectRetry {
            next: CONNECT_RETRY,
            backoff,
        }
    }

    /// The wait after this refused dial.
    fn after_refusal(&mut self) -> Duration {
        let wait = self.next;
        if self.backoff {
            self.next = (self.next * 2).min(CONNECT_RETRY_MAX);
        }
        wait
    }
}

/// Whether the cluster block asks for `connect_backoff` now (read at each dialling run, as
/// nats-server reads its options at each `connectToRoute`).
fn backoff(server: &Server) -> bool {
    server
        .current_options()
        .cluster
        .as_ref()
        .is_some_and(|cluster| cluster.connect_backoff)
}

/// nats-server reports a failed dial of a route's first connection at the first attempt and
/// every `DEFAULT_CONNECT_ERROR_REPORTS` attempts after (debug otherwise) ...
const CONNECT_ERROR_REPORTS: u64 = 3600;

/// A dial of `url` failed: logged as nats-server's `connectToRoute` does, as an error at the
/// first attempt of a first connection and every [`CONNECT_ERROR_REPORTS`] after it, and at
/// every attempt of a reconnection (`DEFAULT_RECONNECT_ERROR_REPORTS`, 1); as debug otherwise.
fn dial_failed(first_connect: bool, attempt: u64, url: &RouteUrl, error: &std::io::Error) {
    let address = url.address();
    if reported(first_connect, attempt) {
        tracing::error!(
            "Error trying to connect to route (attempt {attempt}): dial tcp {address}: {error}"
        );
    } else {
        tracing::debug!(
            "Error trying to connect to route (attempt {attempt}): dial tcp {address}: {error}"
        );
    }
}

/// Whether a failed dial is logged as an error (nats-server's `shouldReportConnectErr`).
fn reported(first_connect: bool, attempt: u64) -> bool {
    !first_connect || attempt == 1 || attempt.is_multiple_of(CONNECT_ERROR_REPORTS)
}

/// Keep an explicit route up for as long as the server runs, or until a config reload
/// removes it ([`remove_explicit`]). While a route to the same server is up on another
/// connection (it dialled us, or a gossiped dial got there first), that route carries the URL
/// and nothing is dialled until it ends, as nats-server's `reconnect` leaves a solicited
/// route met twice to the surviving connection.
pub fn spawn_explicit(server: Arc<Server>, routes: Arc<Routes>, url: RouteUrl) {
    let removed = Arc::new(AtomicBool::new(false));
    if let Some(previous) = routes.explicit.lock().insert(url.clone(), removed.clone()) {
        previous.store(true, Ordering::Relaxed);
    }
    tokio::spawn(async move {
        let mut attempt: u64 = 0;
        let mut first_connect = true;
        let mut retry = ConnectRetry::new(backoff(&server));
        while !removed.load(Ordering::Relaxed) {
            tracing::debug!(
                "Trying to connect to route on {} ({})",
                url.address(),
                url.address()
            );
            attempt += 1;
            match dial(&url).await {
                Ok(stream) if removed.load(Ordering::Relaxed) => {
                    drop(stream);
                    return;
                }
                Ok(stream) => {
                    attempt = 0;
                    first_connect = false;
                    retry = ConnectRetry::new(backoff(&server));
                    let end = connection::run_solicited(
                        server.clone(),
                        routes.clone(),
                        stream,
                        url.clone(),
                    )
                    .await;
                    let remote = match end {
                        RouteEnd::ToSelf => return,
                        RouteEnd::Registered(remote) => Some(remote),
                        RouteEnd::NotRegistered(remote) => remote,
                    };
                    let kept =
                        remote.and_then(|remote| routes.link(&remote).map(|link| (remote, link)));
                    if let Some((remote, kept)) = kept {
                        tracing::debug!(
                            "Not attempting reconnect for solicited route, already connected to {remote:?}"
                        );
                        kept.carry(&url);
                        // A reload removing this route closes the route carrying it too.
                        kept.until_ended().await;
                        if removed.load(Ordering::Relaxed) {
                            return;
                        }
                    }
                    tracing::debug!(
                        "Attempting reconnect for solicited route \"nats-route://{}\"",
                        url.address()
                    );
                    let wait = reconnect_delay(true, &mut rand::thread_rng());
                    tokio::time::sleep(wait).await;
                }
                Err(error) => {
                    dial_failed(first_connect, attempt, &url, &error);
                    tokio::time::sleep(retry.after_refusal()).await;
                }
            }
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
        if link.stands_for(url) {
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
        let mut first_connect = true;
        let mut retry = ConnectRetry::new(backoff(&server));
        // Dial (and redial after a drop) until the attempts run out.
        while attempt <= retries {
            if routes.is_connected(&remote_id) {
                break;
            }
            attempt += 1;
            tracing::debug!("Trying to connect to route on {}", url.address());
            match dial(&url).await {
                Ok(stream) => {
                    first_connect = false;
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
                    retry = ConnectRetry::new(backoff(&server));
                    if attempt <= retries {
                        let wait = reconnect_delay(false, &mut rand::thread_rng());
                        tokio::time::sleep(wait).await;
                    }
                }
                Err(error) => {
                    dial_failed(first_connect, attempt, &url, &error);
                    if attempt <= retries {
                        tokio::time::sleep(retry.after_refusal()).await;
                    }
                }
            }
        }
        routes.dialing.lock().remove(&url.address());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_dialled_again_within_nats_servers_reconnect_bounds() {
        let mut random = rand::thread_rng();
        let explicit: Vec<Duration> = (0..10_000)
            .map(|_| reconnect_delay(true, &mut random))
            .collect();
        let implicit: Vec<Duration> = (0..10_000)
            .map(|_| reconnect_delay(false, &mut random))
            .collect();
        // nats-server: 1 s + rand.Intn(100) ms for an explicit route, the random part alone for
        // an implicit one; whole milliseconds, both ends reached over 10,000 draws.
        let second = Duration::from_secs(1);
        let last = Duration::from_millis(99);
        assert!(explicit
            .iter()
            .all(|wait| *wait >= second && *wait <= second + last));
        assert!(implicit.iter().all(|wait| *wait <= last));
        assert!(explicit
            .iter()
            .chain(&implicit)
            .all(|wait| wait.subsec_nanos() % 1_000_000 == 0));
        assert_eq!(explicit.iter().min(), Some(&second));
        assert_eq!(explicit.iter().max(), Some(&(second + last)));
        assert_eq!(implicit.iter().min(), Some(&Duration::ZERO));
        assert_eq!(implicit.iter().max(), Some(&last));
    }

    #[test]
    fn failed_dials_are_reported_as_nats_server_reports_them() {
        // A first connection: the first attempt and every 3600th; a reconnection: every one.
        let first: Vec<u64> = (1..=7200)
            .filter(|&attempt| reported(true, attempt))
            .collect();
        assert_eq!(first, [1, 3600, 7200]);
        assert!((1..=10).all(|attempt| reported(false, attempt)));
    }

    #[test]
    fn a_refused_dial_is_retried_after_one_second_doubling_to_thirty_with_backoff() {
        let waits = |backoff: bool| -> Vec<u64> {
            let mut retry = ConnectRetry::new(backoff);
            (0..8).map(|_| retry.after_refusal().as_secs()).collect()
        };
        // nats-server waits routeConnectDelay (1 s), and doubles it after the wait.
        assert_eq!(waits(false), [1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(waits(true), [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}

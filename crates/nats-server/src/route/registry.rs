//! [`Routes`]: the registry of established routes (one per peer server) and the table of local
//! interest that is announced on them. The router calls [`Routes::local_interest_changed`] on
//! every local subscribe/unsubscribe; the count per subject (and per queue group, whose count is
//! its weight) decides when an `RS+`/`RS-` goes out, once, on every route.

use super::link::{InterestKey, RouteLink};
use crate::config::ClusterOptions;
use crate::router::Subscriber;
use crate::security::permissions::UserPermissions;
use bytes::BytesMut;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// `RS+` for each entry of the local interest table whose subject `announce` accepts (a queue
/// group with its weight).
pub(super) fn encode_interest(
    frame: &mut BytesMut,
    interest: &HashMap<InterestKey, u32>,
    announce: impl Fn(&str) -> bool,
) {
    for ((account, subject, queue), count) in interest {
        if !announce(subject) {
            continue;
        }
        let queue = queue.as_deref().map(|queue| (queue.as_bytes(), *count));
        nats_proto::encode_route_subscribe(frame, account.as_bytes(), subject.as_bytes(), queue);
    }
}

/// A route to a server we already have a route to.
#[derive(Debug)]
pub struct DuplicateRoute;

#[derive(Default)]
pub struct Routes {
    /// Established routes by the peer's server id.
    links: RwLock<BTreeMap<String, Arc<RouteLink>>>,
    /// Number of established routes, read without a lock on the publish path.
    count: AtomicUsize,
    /// Local subscriptions per (account, subject, queue): plain ones are announced on 0 -> 1 and
    /// withdrawn on 1 -> 0; a queue group is re-announced with its new weight on each change.
    local_interest: Mutex<HashMap<InterestKey, u32>>,
    /// Addresses being dialed for implicit routes (so gossip does not dial twice).
    pub(crate) dialing: Mutex<HashSet<String>>,
    /// The configured routes being kept up, each with the flag a reload sets to stop
    /// dialing it (`solicit.rs`).
    pub(crate) explicit: Mutex<HashMap<crate::config::RouteUrl, Arc<AtomicBool>>>,
    /// The cluster name in use: configured, or negotiated when dynamic.
    pub(crate) cluster_name: RwLock<String>,
    /// Whether the name is dynamic (none configured); a reload naming it clears this.
    dynamic_name: AtomicBool,
    /// The `connect_urls` clients were last told about.
    pub(crate) announced_client_urls: Mutex<Vec<String>>,
    /// The `connect_urls` websocket clients were last told about.
    pub(crate) announced_websocket_urls: Mutex<Vec<String>>,
    /// `cluster { permissions }` as nats-server applies them: `import` (kept as publish rules)
    /// decides which local interest we announce, so which messages peers send us; `export`
    /// (kept as subscribe rules) which interest of a peer we accept, so which messages we send.
    /// A reload replaces them (`permissions.rs`).
    pub(super) permissions: RwLock<Option<Arc<UserPermissions>>>,
    /// `cluster { tls }`, set at start and replaced by a reload (routes formed after it use
    /// the new one; those up keep theirs).
    tls: RwLock<Option<Arc<super::secure::RouteTls>>>,
}

impl Routes {
    pub fn new(cluster: &ClusterOptions) -> Routes {
        let dynamic_name = cluster.name.is_none();
        Routes {
            cluster_name: RwLock::new(
                cluster
                    .name
                    .clone()
                    .unwrap_or_else(super::dynamic_cluster_name),
            ),
            dynamic_name: AtomicBool::new(dynamic_name),
            permissions: RwLock::new(
                cluster
                    .permissions
                    .as_ref()
                    .map(|permissions| Arc::new(UserPermissions::compile(permissions))),
            ),
            ..Routes::default()
        }
    }

    /// Whether interest in `subject` is announced to peers (nats-server's `canImport`).
    pub fn can_import(&self, subject: &str) -> bool {
        self.permissions
            .read()
            .as_ref()
            .is_none_or(|permissions| permissions.can_publish(subject))
    }

    /// Whether a peer's interest in `subject` is accepted (nats-server's `canExport`).
    pub fn can_export(&self, subject: &str) -> bool {
        self.permissions
            .read()
            .as_ref()
            .is_none_or(|permissions| permissions.can_subscribe(subject, None))
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The local interest table, locked (a reload of the permissions walks it).
    pub(super) fn local_interest(&self) -> parking_lot::MutexGuard<'_, HashMap<InterestKey, u32>> {
        self.local_interest.lock()
    }

    pub fn links(&self) -> Vec<Arc<RouteLink>> {
        self.links.read().values().cloned().collect()
    }

    /// The route registered to `server_id`, if one is up.
    pub fn link(&self, server_id: &str) -> Option<Arc<RouteLink>> {
        self.links.read().get(server_id).cloned()
    }

    pub fn is_connected(&self, server_id: &str) -> bool {
        self.links.read().contains_key(server_id)
    }

    pub fn cluster_name(&self) -> String {
        self.cluster_name.read().clone()
    }

    pub fn dynamic_name(&self) -> bool {
        self.dynamic_name.load(Ordering::Relaxed)
    }

    /// A configured name (at a reload, as nats-server's `setClusterName`): it is no longer
    /// dynamic; INFOs sent from now on carry it.
    pub fn rename(&self, name: &str) {
        *self.cluster_name.write() = name.to_string();
        self.dynamic_name.store(false, Ordering::Relaxed);
        tracing::info!("Cluster name updated to {name}");
    }

    /// The route TLS new routes use.
    pub fn tls(&self) -> Option<Arc<super::secure::RouteTls>> {
        self.tls.read().clone()
    }

    pub(crate) fn set_tls(&self, tls: Option<super::secure::RouteTls>) {
        *self.tls.write() = tls.map(Arc::new);
    }

    /// Register an established route and queue the dump of our interest on it. Both happen
    /// under the interest lock, so no subscribe slips between the dump and the registration.
    pub fn register(&self, link: &Arc<RouteLink>) -> Result<(), DuplicateRoute> {
        let server_id = link.remote_id();
        let interest = self.local_interest.lock();
        {
            let mut links = self.links.write();
            if links.contains_key(&server_id) {
                return Err(DuplicateRoute);
            }
            links.insert(server_id, link.clone());
            self.count.store(links.len(), Ordering::Relaxed);
        }
        let mut frame = BytesMut::with_capacity(interest.len() * 32);
        encode_interest(&mut frame, &interest, |subject| self.can_import(subject));
        drop(interest);
        if !frame.is_empty() {
            link.connection.queue_bytes(&frame);
        }
        link.connection.wake_writer();
        Ok(())
    }

    /// Forget a route and drop the interest it announced.
    pub fn unregister(&self, link: &Arc<RouteLink>) {
        let server_id = link.remote_id();
        {
            let mut links = self.links.write();
            if links
                .get(&server_id)
                .is_some_and(|registered| Arc::ptr_eq(registered, link))
            {
                links.remove(&server_id);
            }
            self.count.store(links.len(), Ordering::Relaxed);
        }
        link.ended.send_replace(true);
        let subscriptions: Vec<_> = link.subscriptions.lock().drain().collect();
        for ((_, subject, queue), subscription) in subscriptions {
            let account = subscription.account.clone();
            account
                .router
                .remove(&subject, queue.as_deref(), &Subscriber::Route(subscription));
        }
    }

    /// A local subscription of `account` on `subject` (in `queue`) came (`added`) or went.
    pub fn local_interest_changed(
        &self,
        account: &Arc<str>,
        subject: &str,
        queue: Option<&str>,
        added: bool,
    ) {
        let mut interest = self.local_interest.lock();
        let key = (
            account.clone(),
            subject.to_string(),
            queue.map(str::to_string),
        );
        let count = interest.entry(key.clone()).or_insert(0);
        let before = *count;
        if added {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
        }
        let after = *count;
        if after == 0 {
            interest.remove(&key);
        }
        if self.count() == 0 || !self.can_import(subject) {
            return;
        }
        let mut frame = BytesMut::with_capacity(subject.len() + 32);
        match queue {
            None if before == 0 && after == 1 => nats_proto::encode_route_subscribe(
                &mut frame,
                account.as_bytes(),
                subject.as_bytes(),
                None,
            ),
            None if before == 1 && after == 0 => nats_proto::encode_route_unsubscribe(
                &mut frame,
                account.as_bytes(),
                subject.as_bytes(),
                None,
            ),
            Some(queue) if after > 0 && after != before => nats_proto::encode_route_subscribe(
                &mut frame,
                account.as_bytes(),
                subject.as_bytes(),
                Some((queue.as_bytes(), after)),
            ),
            Some(queue) if after == 0 && before > 0 => nats_proto::encode_route_unsubscribe(
                &mut frame,
                account.as_bytes(),
                subject.as_bytes(),
                Some(queue.as_bytes()),
            ),
            _ => return,
        }
        for link in self.links.read().values() {
            link.connection.queue_bytes(&frame);
            link.connection.wake_writer();
        }
    }

    /// Queue `frame` on every route but `except`.
    pub fn broadcast(&self, frame: &[u8], except: Option<&str>) {
        for (server_id, link) in self.links.read().iter() {
            if Some(server_id.as_str()) == except {
                continue;
            }
            link.connection.queue_bytes(frame);
            link.connection.wake_writer();
        }
    }

    /// The client URLs every peer announced (for `connect_urls`).
    pub fn peer_connect_urls(&self) -> Vec<String> {
        self.peer_urls(|info| &info.connect_urls)
    }

    /// The websocket URLs every peer announced (for websocket clients' `connect_urls`).
    pub fn peer_websocket_urls(&self) -> Vec<String> {
        self.peer_urls(|info| &info.ws_connect_urls)
    }

    fn peer_urls(&self, pick: impl Fn(&nats_proto::RouteInfo) -> &Vec<String>) -> Vec<String> {
        let mut urls = Vec::new();
        for link in self.links.read().values() {
            for url in pick(&link.info.lock()) {
                if !urls.contains(url) {
                    urls.push(url.clone());
                }
            }
        }
        urls
    }
}

//! A config reload's `cluster { routes }`, applied as nats-server's `routesOption`: routes no
//! longer listed are closed (`Route Removed`) and not dialled again; new ones are dialled.
//! A new `cluster { authorization }` closes the routes peers dialled whose credentials it no
//! longer accepts, as nats-server's `reloadAuthorization` does for routes. New
//! `cluster { permissions }` are applied to the routes up (`route/permissions.rs`). A new
//! name and TLS are taken as nats-server's `clusterOption` takes them: the name at once (INFOs
//! sent from now on carry it), the TLS by routes formed after the reload; the timeouts, write
//! deadline and retries are read from the running options by each new route.
//!
//! Called by `reload::reload` once the reload is known to be reloadable; works through
//! `route/solicit.rs`, never on sockets itself.

use crate::config::Options;
use crate::route::secure::RouteTls;
use crate::server::Server;
use std::sync::Arc;

/// What must hold before anything is applied: the accounts added to `cluster { accounts }`
/// exist (nats-server's words otherwise), and the route TLS loads (built again whenever it is
/// configured, so certificates rotated under the same paths are picked up).
pub(super) fn prepare(server: &Server, new: &Options) -> Result<Option<RouteTls>, String> {
    let (Some(_), Some(cluster)) = (server.routes(), &new.cluster) else {
        return Ok(None);
    };
    let running = server.current_options();
    let before = running
        .cluster
        .as_ref()
        .map(|cluster| cluster.accounts.as_slice())
        .unwrap_or_default();
    for added in cluster
        .accounts
        .iter()
        .filter(|name| !before.contains(name))
    {
        if server.accounts.lookup(added).is_none() {
            return Err(format!(
                "unable to add account {added:?} to the list of dedicated routes: account missing"
            ));
        }
    }
    cluster.tls.as_ref().map(RouteTls::new).transpose()
}

/// The cluster's name and TLS as the new file has them (`tls`: from `prepare`). A file
/// without a name keeps the running one, as nats-server.
pub(super) fn rename_and_secure(server: &Server, new: &Options, tls: Option<RouteTls>) {
    let (Some(routes), Some(cluster)) = (server.routes(), &new.cluster) else {
        return;
    };
    if let Some(name) = cluster.name.as_deref() {
        if !name.is_empty() && name != routes.cluster_name() {
            routes.rename(name);
        }
    }
    routes.set_tls(tls);
}

/// `cluster { authorization }` changed: the routes peers dialled are checked against it.
/// Called once the new options are in place (new routes are checked against them).
pub(super) fn authorize(server: &Server, new: &Options) {
    if let (Some(routes), Some(cluster)) = (server.routes(), &new.cluster) {
        crate::route::check_accepted_routes(routes, cluster);
    }
}

/// `cluster { permissions }` changed: the routes' interest follows them, without restarting
/// a route (nats-server's `reloadClusterPermissions`). Called once the new options are in
/// place (the INFO sent again carries them).
pub(super) fn permissions(server: &Server, new: &Options) {
    if let (Some(routes), Some(cluster)) = (server.routes(), &new.cluster) {
        crate::route::reload_permissions(server, routes, cluster.permissions.as_ref());
    }
}

/// Make the dialled routes follow `new` (the running options are `old`).
pub(super) fn apply(server: &Arc<Server>, old: &Options, new: &Options) {
    let (Some(routes), Some(old), Some(new)) = (server.routes(), &old.cluster, &new.cluster) else {
        return;
    };
    for removed in old.routes.iter().filter(|url| !new.routes.contains(url)) {
        crate::route::remove_explicit(routes, removed);
    }
    for added in new.routes.iter().filter(|url| !old.routes.contains(url)) {
        crate::route::spawn_explicit(server.clone(), routes.clone(), added.clone());
    }
    tracing::info!("Reloaded: cluster routes");
}

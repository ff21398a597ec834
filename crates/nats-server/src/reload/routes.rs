//! A config reload's `cluster { routes }`, applied as nats-server's `routesOption`: routes no
//! longer listed are closed (`Route Removed`) and not dialled again; new ones are dialled.
//! A new `cluster { authorization }` closes the routes peers dialled whose credentials it no
//! longer accepts, as nats-server's `reloadAuthorization` does for routes. New
//! `cluster { permissions }` are applied to the routes up (`route/permissions.rs`).
//!
//! Called by `reload::reload` once the reload is known to be reloadable; works through
//! `route/solicit.rs`, never on sockets itself.

use crate::config::Options;
use crate::server::Server;
use std::sync::Arc;

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

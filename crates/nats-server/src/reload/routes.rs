//! A config reload's `cluster { routes }`, applied as nats-server's `routesOption`: routes no
//! longer listed are closed (`Route Removed`) and not dialled again; new ones are dialled.
//!
//! Called by `reload::reload` once the reload is known to be reloadable; works through
//! `route/solicit.rs`, never on sockets itself.

use crate::config::Options;
use crate::server::Server;
use std::sync::Arc;

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

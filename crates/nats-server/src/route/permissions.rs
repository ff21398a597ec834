//! `cluster { permissions }` changed while routes are up, as nats-server applies it without
//! restarting them: a reload (its `reloadClusterPermissions`) sends `RS+` for local interest
//! the new `import` allows and the old did not, `RS-` for interest it no longer allows, drops
//! the peers' interest the new `export` refuses, and sends our INFO again so peers learn the
//! new rules; a peer's INFO with a new `export` (its `updateRemoteRoutePerms`) gets the local
//! interest it now accepts.
//!
//! Called by the config reload (`reload/routes.rs`) and the route reader on a peer's INFO
//! (`connection/handshake.rs`).

use super::link::RouteLink;
use super::registry::{encode_interest, Routes};
use crate::config::{Permissions, SubjectRules};
use crate::router::Subscriber;
use crate::security::permissions::UserPermissions;
use crate::server::Server;
use bytes::BytesMut;
use nats_proto::RouteSubjectRules;
use std::sync::Arc;

/// Apply `new` cluster permissions to the registry and every established route.
pub(crate) fn reload(server: &Server, routes: &Routes, new: Option<&Permissions>) {
    let new = new.map(|permissions| Arc::new(UserPermissions::compile(permissions)));
    let allows = |permissions: &Option<Arc<UserPermissions>>, subject: &str| {
        permissions
            .as_ref()
            .is_none_or(|permissions| permissions.can_publish(subject))
    };
    let links = routes.links();
    // The interest lock is held while the rules change, so no subscribe or unsubscribe is
    // announced under the old rules after the difference is taken.
    let interest = routes.local_interest();
    let old = std::mem::replace(&mut *routes.permissions.write(), new.clone());
    let mut subscribe = BytesMut::new();
    encode_interest(&mut subscribe, &interest, |subject| {
        allows(&new, subject) && !allows(&old, subject)
    });
    let mut unsubscribe = BytesMut::new();
    for (account, subject, queue) in interest.keys() {
        if allows(&old, subject) && !allows(&new, subject) {
            nats_proto::encode_route_unsubscribe(
                &mut unsubscribe,
                account.as_bytes(),
                subject.as_bytes(),
                queue.as_deref().map(str::as_bytes),
            );
        }
    }
    for link in &links {
        drop_unexported(routes, link);
        super::connection::queue_info(server, routes, &link.connection);
        link.connection.queue_bytes(&subscribe);
        link.connection.queue_bytes(&unsubscribe);
        link.connection.wake_writer();
    }
    drop(interest);
}

/// The peer's interest our new `export` refuses is dropped, as if it had unsubscribed.
fn drop_unexported(routes: &Routes, link: &RouteLink) {
    link.pending
        .lock()
        .retain(|(_, subject, _), _| routes.can_export(subject));
    let refused: Vec<_> = {
        let mut subscriptions = link.subscriptions.lock();
        let keys: Vec<_> = subscriptions
            .keys()
            .filter(|(_, subject, _)| !routes.can_export(subject))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|key| subscriptions.remove(&key).map(|sub| (key, sub)))
            .collect()
    };
    for ((_, subject, queue), subscription) in refused {
        let account = subscription.account.clone();
        account
            .router
            .remove(&subject, queue.as_deref(), &Subscriber::Route(subscription));
    }
}

/// A peer's INFO changed its `export` from `old` to `new`: the local interest it accepts now
/// and did not before (and that our `import` lets us announce) is sent to it.
pub(super) fn peer_export_changed(
    routes: &Routes,
    link: &RouteLink,
    old: Option<&RouteSubjectRules>,
    new: Option<&RouteSubjectRules>,
) {
    let tester = |rules: Option<&RouteSubjectRules>| {
        UserPermissions::compile(&Permissions {
            subscribe: rules.map(|rules| SubjectRules {
                allow: rules.allow.clone(),
                deny: rules.deny.clone(),
            }),
            ..Permissions::default()
        })
    };
    let (old, new) = (tester(old), tester(new));
    let interest = routes.local_interest();
    let mut frame = BytesMut::new();
    encode_interest(&mut frame, &interest, |subject| {
        routes.can_import(subject)
            && new.can_subscribe(subject, None)
            && !old.can_subscribe(subject, None)
    });
    if !frame.is_empty() {
        link.connection.queue_bytes(&frame);
        link.connection.wake_writer();
    }
    drop(interest);
}

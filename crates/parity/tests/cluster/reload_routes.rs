//! Reloading `cluster { routes }` on SIGHUP, as nats-server's `routesOption`: a route the
//! reloaded file no longer lists is closed (`Route Removed`) and not dialled again, one it
//! lists anew is dialled; a change of the cluster port is refused in nats-server's words and
//! the routes stay. Two nodes: node 0 lists no routes, node 1 dials node 0 and is reloaded.
//! New `cluster { permissions }` apply to the routes up, as nats-server's
//! `reloadClusterPermissions`: without a route restarting, a subject the reloaded node no
//! longer imports or exports stops crossing, one it newly allows starts crossing. New route
//! pings, compression, pool size and advertising are taken (`Reloaded: cluster`) and the
//! cluster keeps carrying messages.

use std::time::{Duration, Instant};

use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::per_composition;
use crate::support::{connect, interest_barrier, next_within, unique, Composition};

per_composition!(
    removed_and_added_routes_follow_the_reloaded_file,
    a_new_route_password_closes_routes_dialled_with_the_old_one,
    new_route_permissions_apply_to_the_routes_up,
    route_pings_compression_pool_and_advertising_reload
);

const WAIT: Duration = Duration::from_secs(10);

pub(super) fn rewrite_and_hangup(cluster: &Cluster, index: usize, config: &str) {
    let node = cluster.node(index);
    std::fs::write(&node.config_path, config).expect("rewrite config");
    node.send_signal(libc::SIGHUP);
}

/// Wait (bounded) until node `index`'s log holds `needle` `count` times.
pub(super) fn await_log(cluster: &Cluster, index: usize, needle: &str, count: usize) {
    let deadline = Instant::now() + WAIT;
    while cluster.node(index).log().matches(needle).count() < count {
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in node {index}'s log:\n{}",
            cluster.node(index).log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (bounded) until neither node lists a route in `/routez`.
fn await_no_routes(cluster: &Cluster) {
    let deadline = Instant::now() + WAIT;
    for index in 0..2 {
        while cluster
            .route_peers(index)
            .is_some_and(|peers| !peers.is_empty())
        {
            assert!(
                Instant::now() < deadline,
                "node {index} still routes to {:?}",
                cluster.route_peers(index)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The route is gone from both sides, nothing crosses, and node 1 does not dial again.
async fn check_removed(
    cluster: &Cluster,
    one: &async_nats::Client,
    subject: &str,
    subscriber: &mut async_nats::Subscriber,
) {
    await_no_routes(cluster);
    one.publish(subject.to_string(), "lost".into())
        .await
        .expect("publish");
    one.flush().await.expect("flush");
    assert!(
        next_within(subscriber, Duration::from_millis(500))
            .await
            .is_none(),
        "a message crossed a removed route"
    );
    assert_eq!(cluster.route_peers(1).unwrap_or_default().len(), 0);
}

/// Two nodes of `composition`: node 0 (no routes) and node 1 (dials node 0), each kind
/// reloaded in one of the compositions.
pub(super) fn two_nodes(composition: Composition) -> Vec<test_harness::cluster::ServerKind> {
    use test_harness::cluster::ServerKind::{Ours, Reference as Go};
    match composition {
        Composition::Go3 => vec![Go, Go],
        Composition::Go2Ours1 => vec![Ours, Go],
        Composition::Go1Ours2 => vec![Go, Ours],
        Composition::Ours3 => vec![Ours, Ours],
    }
}

async fn a_new_route_password_closes_routes_dialled_with_the_old_one(composition: Composition) {
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    options.route_credentials = Some(("u".into(), "p".into()));
    let cluster = Cluster::start(options);
    let config = |index: usize| std::fs::read_to_string(&cluster.node(index).config_path);
    let (zero, one) = (config(0).expect("config"), config(1).expect("config"));

    // Node 0 takes a new password: the route node 1 dialled with the old one is closed, and
    // node 1 dialling again with it is refused.
    rewrite_and_hangup(
        &cluster,
        0,
        &zero.replace("password: \"p\"", "password: \"p2\""),
    );
    await_log(
        &cluster,
        0,
        "Router connection closed: Authentication Failure",
        1,
    );
    await_no_routes(&cluster);

    // Node 1 dials with the new password: the route forms again.
    rewrite_and_hangup(
        &cluster,
        1,
        &one.replace("u:p@", "u:p2@")
            .replace("password: \"p\"", "password: \"p2\""),
    );
    await_log(&cluster, 1, "Reloaded: cluster routes", 1);
    if let Err(error) = cluster.wait_for_mesh() {
        panic!(
            "no route with the new password: {error}\n{}",
            cluster.logs()
        );
    }
}

async fn removed_and_added_routes_follow_the_reloaded_file(composition: Composition) {
    use test_harness::cluster::ServerKind::{Ours, Reference as Go};
    let kinds = two_nodes(composition);
    // A nats-server that accepted a route from an unpooled peer (ours) dials it back when it
    // closes (its `retry` of a route it met twice while setting up the pool): the route comes
    // back from the peer's side, so only the reloaded side's part is checked there.
    let peer_redials = kinds == [Go, Ours];
    let cluster = Cluster::start(ClusterOptions::new(&kinds, Topology::Seed));
    let with_route = std::fs::read_to_string(&cluster.node(1).config_path).expect("config");
    let route = format!(
        "\"nats-route://127.0.0.1:{}\"",
        cluster.node(0).cluster_port
    );
    assert!(with_route.contains(&route), "{with_route}");
    let without_route = with_route.replace(&route, "");

    rewrite_and_hangup(&cluster, 1, &without_route);
    await_log(&cluster, 1, "Reloaded: cluster routes", 1);
    await_log(&cluster, 1, "Route Removed", 1);
    let (zero, one) = (connect(&cluster, 0).await, connect(&cluster, 1).await);
    let subject = unique("reload.routes");
    let mut subscriber = zero.subscribe(subject.clone()).await.expect("subscribe");
    zero.flush().await.expect("flush");
    if !peer_redials {
        check_removed(&cluster, &one, &subject, &mut subscriber).await;
    }

    // A different cluster port is refused; the file's routes are not taken either.
    let port = cluster.node(1).cluster_port;
    let moved = with_route.replace(
        &format!("127.0.0.1:{port}\""),
        &format!("127.0.0.1:{}\"", test_harness::free_port()),
    );
    rewrite_and_hangup(&cluster, 1, &moved);
    await_log(
        &cluster,
        1,
        &format!("config reload not supported for cluster port: old={port}, new="),
        1,
    );

    rewrite_and_hangup(&cluster, 1, &with_route);
    await_log(&cluster, 1, "Reloaded: cluster routes", 2);
    if let Err(error) = cluster.wait_for_mesh() {
        panic!(
            "the route added again did not form: {error}\n{}",
            cluster.logs()
        );
    }
    interest_barrier(&zero, &one).await;
    one.publish(subject.clone(), "found".into())
        .await
        .expect("publish");
    let message = next_within(&mut subscriber, WAIT)
        .await
        .expect("the message crosses the route added again");
    assert_eq!(&message.payload[..], b"found");
}

/// Publish `payload`s on `subject` from `publisher` until `subscriber` gets one (bounded).
async fn until_crosses(
    publisher: &async_nats::Client,
    subject: &str,
    subscriber: &mut async_nats::Subscriber,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        publisher
            .publish(subject.to_string(), "probe".into())
            .await
            .expect("publish");
        publisher.flush().await.expect("flush");
        if next_within(subscriber, Duration::from_millis(200))
            .await
            .is_some()
        {
            return;
        }
        assert!(Instant::now() < deadline, "{subject} never crossed");
    }
}

/// Publish on `denied` then on `marker` from `publisher` (one connection, one route) until
/// a round where the marker crosses and `denied` did not (bounded): `denied` stopped crossing.
async fn until_stops(
    publisher: &async_nats::Client,
    denied: (&str, &mut async_nats::Subscriber),
    marker: (&str, &mut async_nats::Subscriber),
) {
    let deadline = Instant::now() + WAIT;
    loop {
        for subject in [denied.0, marker.0] {
            publisher
                .publish(subject.to_string(), "round".into())
                .await
                .expect("publish");
        }
        publisher.flush().await.expect("flush");
        next_within(marker.1, WAIT)
            .await
            .unwrap_or_else(|| panic!("{} no longer crosses", marker.0));
        if next_within(denied.1, Duration::from_millis(100))
            .await
            .is_none()
        {
            return;
        }
        assert!(Instant::now() < deadline, "{} still crosses", denied.0);
    }
}

/// Node 0 starts importing all but `in.>` and exporting all but `out.>`, and is reloaded to
/// deny `keep.>` and `gone.>` instead: node 1's messages on `in.` start reaching node 0's
/// subscriber and its `keep.` ones stop (node 0's interest announced and withdrawn); node 0's
/// messages on `out.` start reaching node 1's subscriber (node 1 announces its interest again
/// when node 0's INFO allows it) and its `gone.` ones stop (node 1's interest dropped).
async fn new_route_permissions_apply_to_the_routes_up(composition: Composition) {
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    let rules = |import: &str, export: &str| {
        format!(
            "  permissions {{\n    import: {{ deny: [\"{import}.>\"] }}\n    export: {{ deny: [\"{export}.>\"] }}\n  }}\n"
        )
    };
    options.cluster_extra = rules("in", "out");
    let cluster = Cluster::start(options);
    let (zero, one) = (connect(&cluster, 0).await, connect(&cluster, 1).await);
    let suffix = unique("perm");
    let subject = |prefix: &str| format!("{prefix}.{suffix}");
    let mut at_zero = Vec::new();
    for prefix in ["in", "keep"] {
        at_zero.push(zero.subscribe(subject(prefix)).await.expect("subscribe"));
    }
    let mut at_one = Vec::new();
    for prefix in ["out", "gone"] {
        at_one.push(one.subscribe(subject(prefix)).await.expect("subscribe"));
    }
    zero.flush().await.expect("flush");
    one.flush().await.expect("flush");
    let [in_sub, keep_sub] = &mut at_zero[..] else {
        unreachable!()
    };
    let [out_sub, gone_sub] = &mut at_one[..] else {
        unreachable!()
    };
    until_crosses(&one, &subject("keep"), keep_sub).await;
    until_crosses(&zero, &subject("gone"), gone_sub).await;
    until_stops(&one, (&subject("in"), in_sub), (&subject("keep"), keep_sub)).await;
    until_stops(
        &zero,
        (&subject("out"), out_sub),
        (&subject("gone"), gone_sub),
    )
    .await;
    let created = |index: usize| {
        cluster
            .node(index)
            .log()
            .matches("Route connection created")
            .count()
    };
    let before = (created(0), created(1));

    let config = std::fs::read_to_string(&cluster.node(0).config_path).expect("config");
    let old_rules = rules("in", "out");
    assert!(config.contains(&old_rules), "{config}");
    rewrite_and_hangup(
        &cluster,
        0,
        &config.replace(&old_rules, &rules("keep", "gone")),
    );
    await_log(&cluster, 0, "Reloaded server configuration", 1);
    until_crosses(&one, &subject("in"), in_sub).await;
    until_crosses(&zero, &subject("out"), out_sub).await;
    until_stops(&one, (&subject("keep"), keep_sub), (&subject("in"), in_sub)).await;
    until_stops(
        &zero,
        (&subject("gone"), gone_sub),
        (&subject("out"), out_sub),
    )
    .await;
    assert_eq!(
        (created(0), created(1)),
        before,
        "a route was restarted:\n{}",
        cluster.logs()
    );
}

async fn route_pings_compression_pool_and_advertising_reload(composition: Composition) {
    let mut options = ClusterOptions::new(&two_nodes(composition), Topology::Seed);
    let before = "  ping_interval: \"2s\"\n  compression: off\n";
    options.cluster_extra = before.to_string();
    let cluster = Cluster::start(options);
    let config = std::fs::read_to_string(&cluster.node(1).config_path).expect("config");
    assert!(config.contains(before), "{config}");
    let after = "  ping_interval: \"1s\"\n  ping_max: 4\n  compression: s2_fast\n  pool_size: 5\n  no_advertise: true\n";
    rewrite_and_hangup(&cluster, 1, &config.replace(before, after));
    await_log(&cluster, 1, "Reloaded: cluster", 1);
    await_log(&cluster, 1, "Reloaded server configuration", 1);
    assert!(
        !cluster
            .node(1)
            .log()
            .contains("config reload not supported"),
        "{}",
        cluster.node(1).log()
    );
    // nats-server closes its routes when their compression must be negotiated again; the
    // cluster forms again and carries messages either way.
    if let Err(error) = cluster.wait_for_mesh() {
        panic!("no mesh after the reload: {error}\n{}", cluster.logs());
    }
    let (zero, one) = (connect(&cluster, 0).await, connect(&cluster, 1).await);
    let subject = unique("reload.cluster");
    let mut subscriber = zero.subscribe(subject.clone()).await.expect("subscribe");
    interest_barrier(&zero, &one).await;
    until_crosses(&one, &subject, &mut subscriber).await;
}

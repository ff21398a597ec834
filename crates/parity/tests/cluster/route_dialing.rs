//! Dialing a configured route while that server is already routed on another connection, as
//! nats-server's `reconnect`: two servers that name each other both dial, one connection is
//! kept, and the dialer whose connection was the duplicate leaves its URL to the kept route
//! (`/routez` shows it `did_solicit` and `is_configured` on both sides) and dials nothing while
//! it is up: the route connections each server makes stop growing. When the kept route goes,
//! the URL is dialled again, and the route comes back after either server's restart.

use std::time::{Duration, Instant};

use test_harness::cluster::{http_get, Cluster, ClusterOptions, Topology};
use test_harness::waits::await_some;

use crate::per_composition;
use crate::reload_routes::two_nodes;
use crate::support::Composition;

per_composition!(a_route_met_twice_is_carried_by_the_kept_connection);

const WAIT: Duration = Duration::from_secs(10);
/// How long the cluster is watched for route connections it should not make.
const QUIET: Duration = Duration::from_secs(3);
/// How long no route connection must be made before the watch starts.
const SETTLE: Duration = Duration::from_secs(2);

/// Node `index`'s routes in `/routez`: `(did_solicit, is_configured)` of each.
fn routez_routes(cluster: &Cluster, index: usize) -> Vec<(bool, bool)> {
    let body = http_get(cluster.node(index).monitor_port, "/routez").unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    json["routes"]
        .as_array()
        .map(|routes| {
            routes
                .iter()
                .map(|route| {
                    (
                        route["did_solicit"].as_bool().unwrap_or(false),
                        route["is_configured"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Wait (bounded) until both nodes route to each other and every route of both carries the
/// configured URL: the dialer that met the other server twice handed it to the kept route.
fn await_carried(cluster: &Cluster, when: &str) {
    await_some(
        &format!("{when}: every route solicited and configured"),
        WAIT,
        || {
            [0, 1]
                .iter()
                .all(|&index| {
                    let routes = routez_routes(cluster, index);
                    !routes.is_empty()
                        && routes
                            .iter()
                            .all(|&(solicited, configured)| solicited && configured)
                })
                .then_some(())
        },
    );
}

fn connections_created(cluster: &Cluster) -> [usize; 2] {
    [0, 1].map(|index| {
        cluster
            .node(index)
            .log()
            .matches("Route connection created")
            .count()
    })
}

/// The route connections made so far, once neither node made one for [`SETTLE`] (bounded by
/// [`WAIT`]: a server dialling every second never settles and fails here).
async fn settled_connections(cluster: &Cluster) -> [usize; 2] {
    let deadline = Instant::now() + WAIT;
    let mut last = connections_created(cluster);
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = connections_created(cluster);
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= SETTLE {
            return last;
        }
        assert!(
            Instant::now() < deadline,
            "route connections still made {WAIT:?} after the mesh: {last:?}\n{}",
            cluster.logs()
        );
    }
}

fn dial_errors(cluster: &Cluster, index: usize) -> usize {
    cluster
        .node(index)
        .log()
        .matches("Error trying to connect to route")
        .count()
}

async fn a_route_met_twice_is_carried_by_the_kept_connection(composition: Composition) {
    let mut cluster = Cluster::start(ClusterOptions::new(
        &two_nodes(composition),
        Topology::FullMesh,
    ));
    await_carried(&cluster, "after the start");

    // A stable cluster makes no route connections (ours dialled its configured URL every
    // second while the other server's connection was the route). nats-server dials its
    // configured route again about a second after it started (each closed as a duplicate):
    // the watch starts once no connection was made for SETTLE.
    let before = settled_connections(&cluster).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        connections_created(&cluster),
        before,
        "route connections made in a stable cluster:\n{}",
        cluster.logs()
    );

    for (restarted, other) in [(1, 0), (0, 1)] {
        // The route gone, the other server dials the URL the kept route carried.
        let errors = dial_errors(&cluster, other);
        cluster.kill9(restarted);
        await_some(
            &format!("node {other} dialling node {restarted} again"),
            WAIT,
            || (dial_errors(&cluster, other) > errors).then_some(()),
        );
        cluster.restart(restarted);
        if let Err(error) = cluster.wait_for_mesh() {
            panic!(
                "no route after node {restarted}'s restart: {error}\n{}",
                cluster.logs()
            );
        }
        await_carried(&cluster, &format!("after node {restarted}'s restart"));
    }
}

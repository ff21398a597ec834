//! Forming and keeping the mesh: three nodes from one seed route (gossip), an explicit full
//! mesh, a killed node's interest leaving and coming back after its restart, a paused node.

use std::collections::BTreeSet;

use std::time::Duration;

use test_harness::cluster::{Cluster, Topology};

use crate::per_composition;
use crate::support::{connect, request, request_until, responder, unique, Composition, Reply};

per_composition!(
    mesh_from_one_seed_route,
    explicit_full_mesh,
    killed_node_interest_leaves_and_returns,
    paused_node_keeps_its_routes,
    paused_node_is_dropped_and_rejoins
);

/// Where a node serves `/routez`, it lists every other node, each by its server name.
fn assert_routez_lists_all_peers(cluster: &Cluster) {
    for node in cluster.nodes() {
        let Some(peers) = cluster.route_peers(node.index) else {
            continue;
        };
        let expected: BTreeSet<String> = cluster
            .nodes()
            .iter()
            .filter(|other| other.index != node.index)
            .map(|other| other.name.clone())
            .collect();
        assert_eq!(peers, expected, "/routez of {}", node.name);
    }
}

/// Nodes 1 and 2 know only node 0; they find each other by gossip. `Cluster::start` has seen a
/// message cross every ordered pair, which needs the direct route 1-2 (routes carry one hop).
async fn mesh_from_one_seed_route(composition: Composition) {
    let cluster = composition.start(Topology::Seed);
    assert_routez_lists_all_peers(&cluster);
}

async fn explicit_full_mesh(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    assert_routez_lists_all_peers(&cluster);
    assert_routez_rtt_measured(&cluster);
}

/// Every route of every node's `/routez` gets a measured round trip (`rtt` other than `0s`)
/// soon after it is up: nats-server times an early route PING, so do we.
fn assert_routez_rtt_measured(cluster: &Cluster) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for node in cluster.nodes() {
        loop {
            let body =
                test_harness::cluster::http_get(node.monitor_port, "/routez").unwrap_or_default();
            let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let rtts: Vec<String> = json["routes"]
                .as_array()
                .map(|routes| {
                    routes
                        .iter()
                        .map(|route| route["rtt"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            if rtts.len() >= 2 && rtts.iter().all(|rtt| !rtt.is_empty() && rtt != "0s") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "/routez of {} shows rtt {rtts:?}",
                node.name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A responder on node 2 answers requests from nodes 0 and 1; killed, its interest is gone from
/// them (503); restarted, its client reconnects and resubscribes and the answers come back.
async fn killed_node_interest_leaves_and_returns(composition: Composition) {
    let mut cluster = composition.start(Topology::FullMesh);
    let subject = unique("svc");
    let service = connect(&cluster, 2).await;
    let _responder = responder(&service, &subject, "from-2").await;
    let requesters = [connect(&cluster, 0).await, connect(&cluster, 1).await];
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::Payload(b"from-2".to_vec()),
            "answer before the kill",
        )
        .await;
    }

    cluster.kill9(2);
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::NoResponders,
            "interest of the killed node removed",
        )
        .await;
    }

    cluster.restart(2);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|e| panic!("mesh after restart: {e}\n{}", cluster.logs()));
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::Payload(b"from-2".to_vec()),
            "answer after the restart",
        )
        .await;
    }
}

/// SIGSTOP on node 2: its routes stay up (no ping is missed this fast), so requests to its
/// responder are routed and time out, not refused; SIGCONT: answered again.
async fn paused_node_keeps_its_routes(composition: Composition) {
    let mut cluster = composition.start(Topology::FullMesh);
    let subject = unique("svc");
    let service = connect(&cluster, 2).await;
    let _responder = responder(&service, &subject, "from-2").await;
    let requester = connect(&cluster, 0).await;
    request_until(
        &requester,
        &subject,
        |r| *r == Reply::Payload(b"from-2".to_vec()),
        "answer before the pause",
    )
    .await;

    cluster.pause(2);
    assert_eq!(request(&requester, &subject, "ping").await, Reply::TimedOut);
    cluster.resume(2);
    request_until(
        &requester,
        &subject,
        |r| *r == Reply::Payload(b"from-2".to_vec()),
        "answer after the resume",
    )
    .await;
}

/// With a short route ping, the peers of a paused node drop its routes and its interest (503);
/// resumed, it reconnects and answers again.
async fn paused_node_is_dropped_and_rejoins(composition: Composition) {
    let mut options = composition.options(Topology::FullMesh);
    options.route_ping_interval = Some(Duration::from_millis(300));
    let mut cluster = Cluster::start(options);
    let subject = unique("svc");
    let service = connect(&cluster, 2).await;
    let _responder = responder(&service, &subject, "from-2").await;
    let requesters = [connect(&cluster, 0).await, connect(&cluster, 1).await];
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::Payload(b"from-2".to_vec()),
            "answer before the pause",
        )
        .await;
    }

    cluster.pause(2);
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::NoResponders,
            "routes of the paused node dropped",
        )
        .await;
    }
    cluster.resume(2);
    for requester in &requesters {
        request_until(
            requester,
            &subject,
            |r| *r == Reply::Payload(b"from-2".to_vec()),
            "answer after the resume",
        )
        .await;
    }
}

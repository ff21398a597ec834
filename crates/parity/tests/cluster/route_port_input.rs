//! Bad input on a route port, sent to every node of the cluster: a client speaking client
//! protocol, a route with a wrong cluster name, a route with wrong credentials, garbage. Each is
//! refused with nats-server's error and closed, and the cluster keeps serving. A whole server
//! with another cluster name never joins.

use std::time::{Duration, Instant};

use test_harness::cluster::{Cluster, ClusterOptions, Topology};
use test_harness::RawClient;

use crate::per_composition;
use crate::support::{connect, request, responder, unique, Composition, Reply};

per_composition!(
    client_protocol_on_route_port_refused,
    wrong_cluster_name_refused,
    wrong_route_credentials_refused,
    garbage_on_route_port_refused,
    server_of_another_cluster_never_joins
);

/// A route CONNECT as nats-server sends it, for cluster `cluster` with optional credentials.
fn route_connect(cluster: &str, credentials: Option<(&str, &str)>) -> String {
    let user = credentials
        .map(|(user, pass)| format!("\"user\":\"{user}\",\"pass\":\"{pass}\","))
        .unwrap_or_default();
    format!(
        "CONNECT {{\"echo\":false,\"verbose\":false,\"pedantic\":false,{user}\"tls_required\":false,\
         \"headers\":true,\"name\":\"NSTRANGERROUTE\",\"cluster\":\"{cluster}\",\"dynamic\":false,\
         \"lnoc\":true,\"lnocu\":true}}\r\n"
    )
}

/// Send `input` to every node's route port: each answers `expected` and closes; then the
/// cluster still routes between every pair.
fn refused_everywhere(cluster: &Cluster, input: &[u8], expected: &str) {
    for node in cluster.nodes() {
        let mut raw = RawClient::connect_addr(&node.route_addr());
        raw.send_bytes(input);
        let answer = raw.read_to_close().unwrap_or_else(|| {
            panic!(
                "{}: route port kept the connection open after {input:?}",
                node.name
            )
        });
        assert_eq!(
            answer.lines().next(),
            Some(expected),
            "{}: answer to {:?}",
            node.name,
            String::from_utf8_lossy(input)
        );
    }
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|e| panic!("cluster stopped serving after bad route input: {e}"));
}

async fn client_protocol_on_route_port_refused(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    refused_everywhere(
        &cluster,
        b"CONNECT {\"lang\":\"rust\",\"version\":\"0.51.0\",\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\n",
        "-ERR 'attempted to connect to route port'",
    );
}

async fn wrong_cluster_name_refused(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let expected = format!(
        "-ERR 'Rejecting connection, cluster name \"WRONG\" does not match \"{}\"'",
        cluster.options.name
    );
    refused_everywhere(&cluster, route_connect("WRONG", None).as_bytes(), &expected);
}

async fn wrong_route_credentials_refused(composition: Composition) {
    let mut options = composition.options(Topology::FullMesh);
    options.route_credentials = Some(("route".into(), "s3cret".into()));
    let cluster = Cluster::start(options);
    let name = cluster.options.name.clone();
    for credentials in [Some(("route", "wrong")), Some(("other", "s3cret")), None] {
        refused_everywhere(
            &cluster,
            route_connect(&name, credentials).as_bytes(),
            "-ERR 'Authorization Violation'",
        );
    }
}

async fn garbage_on_route_port_refused(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    refused_everywhere(
        &cluster,
        b"\x00\x01garbage here\r\n",
        "-ERR 'Authorization Violation'",
    );
}

/// A server configured with another cluster name and a route to node 0 is refused: it never
/// appears among node 0's routes and its subscriptions are never seen in the cluster, while the
/// cluster keeps serving.
async fn server_of_another_cluster_never_joins(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let stranger_kind = composition.kinds()[2];
    let mut options = ClusterOptions::new(&[stranger_kind], Topology::FullMesh);
    options.name = "stranger".into();
    options.extra_routes = vec![format!("nats-route://{}", cluster.node(0).route_addr())];
    let stranger = Cluster::launch(options);
    let stranger_client = connect(&stranger, 0).await;
    let subject = unique("stranger");
    let _responder = responder(&stranger_client, &subject, "from-stranger").await;
    let requester = connect(&cluster, 0).await;

    // The stranger retries its route every second or so: watch over a few tries.
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        assert_eq!(
            request(&requester, &subject, "ping").await,
            Reply::NoResponders,
            "the stranger's interest reached the cluster\n{}{}",
            cluster.logs(),
            stranger.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if let Some(peers) = cluster.route_peers(0) {
        assert!(
            !peers.contains(&stranger.node(0).name),
            "node 0 lists the stranger among its routes: {peers:?}"
        );
    }
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|e| panic!("cluster stopped serving: {e}"));
}

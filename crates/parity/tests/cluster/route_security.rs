//! Route TLS and route permissions (`cluster { tls { } permissions { import, export } }`), as
//! nats-server applies them: TLS is the first thing on a route (mutual, verified against the
//! CA), and a route's `import` decides which local interest a server announces (so what it
//! receives), its `export` which interest of a peer it accepts (so what it sends).

use std::time::Duration;

use async_nats::Subscriber;
use test_harness::certificates::TestCertificates;
use test_harness::cluster::{Cluster, Topology};

use crate::per_composition;
use crate::support::{connect_all, interest_barrier, next_within, unique, Composition};

per_composition!(
    tls_routes_carry_messages_between_every_pair,
    route_permissions_filter_interest
);

const WAIT: Duration = Duration::from_secs(5);

fn start_with(composition: Composition, cluster_extra: String) -> Cluster {
    let mut options = composition.options(Topology::FullMesh);
    options.cluster_extra = cluster_extra;
    Cluster::start(options)
}

async fn tls_routes_carry_messages_between_every_pair(composition: Composition) {
    let certificates = TestCertificates::generate();
    let cluster = start_with(composition, certificates.block("  timeout: 3"));
    let clients = connect_all(&cluster).await;
    for publisher in 0..3 {
        let subject = unique("tls");
        let mut subscribers = Vec::new();
        for (index, client) in clients.iter().enumerate().filter(|(i, _)| *i != publisher) {
            let subscriber = client.subscribe(subject.clone()).await.expect("subscribe");
            interest_barrier(client, &clients[publisher]).await;
            subscribers.push((index, subscriber));
        }
        clients[publisher]
            .publish(subject.clone(), "over tls".into())
            .await
            .expect("publish");
        for (index, subscriber) in subscribers.iter_mut() {
            let message = next_within(subscriber, WAIT)
                .await
                .unwrap_or_else(|| panic!("node {index} got nothing from node {publisher}"));
            assert_eq!(&message.payload[..], b"over tls");
        }
    }
    // The routes are TLS connections: a plain-text CONNECT on a route port gets no INFO and
    // is not accepted as a route (the listener waits for a TLS ClientHello).
    let port = cluster.node(0).cluster_port;
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect route port");
    raw.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let mut first = [0u8; 4];
    let read = std::io::Read::read(&mut raw, &mut first).unwrap_or(0);
    assert!(
        read == 0 || &first[..read.min(4)] != b"INFO",
        "a TLS route port sent INFO in the clear"
    );
}

/// Every node: `import` denies `unwanted.>` (never announced, so never sent to it) and `export`
/// denies `private.>` (a peer's interest in it is ignored, so never sent to the peer).
async fn route_permissions_filter_interest(composition: Composition) {
    let permissions = "  permissions {\n    import: { deny: [\"unwanted.>\"] }\n    export: { deny: [\"private.>\"] }\n  }\n";
    let cluster = start_with(composition, permissions.to_string());
    let clients = connect_all(&cluster).await;
    let suffix = unique("x");
    let mut open = clients[1]
        .subscribe(format!("open.{suffix}"))
        .await
        .expect("subscribe");
    let mut unwanted = clients[1]
        .subscribe(format!("unwanted.{suffix}"))
        .await
        .expect("subscribe");
    let mut private = clients[1]
        .subscribe(format!("private.{suffix}"))
        .await
        .expect("subscribe");
    let mut local_private = clients[0]
        .subscribe(format!("private.{suffix}"))
        .await
        .expect("subscribe");
    interest_barrier(&clients[1], &clients[0]).await;
    interest_barrier(&clients[0], &clients[0]).await;
    for subject in ["unwanted", "private", "open"] {
        clients[0]
            .publish(format!("{subject}.{suffix}"), subject.into())
            .await
            .expect("publish");
    }
    clients[0].flush().await.expect("flush");
    let message = next_within(&mut open, WAIT)
        .await
        .expect("open subject crossed the route");
    assert_eq!(&message.payload[..], b"open");
    // A local subscriber still gets what the routes may not carry.
    assert!(next_within(&mut local_private, WAIT).await.is_some());
    // The denied ones were published before `open` on the same connection and route: had they
    // crossed, they would be here already. Give them a little longer anyway.
    assert_nothing(&mut unwanted, "unwanted (import denied)").await;
    assert_nothing(&mut private, "private (export denied)").await;
}

async fn assert_nothing(subscriber: &mut Subscriber, what: &str) {
    if let Some(message) = next_within(subscriber, Duration::from_millis(300)).await {
        panic!("{what} crossed the route: {:?}", message.subject);
    }
}

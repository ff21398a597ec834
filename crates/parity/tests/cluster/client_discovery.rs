//! Server discovery as a client library does it (issue 19's client-library sweep): async-nats
//! given only node 2's URL learns the other nodes from the INFO `connect_urls` it is sent as the
//! cluster forms, and when node 2 dies it reconnects to one of them, with its subscriptions,
//! so a message published on node 0 reaches it. Node 2 is ours in every composition with ours.

use std::time::Duration;

use futures::StreamExt;
use test_harness::cluster::Topology;
use tokio::time::{timeout, Instant};

use crate::per_composition;
use crate::support::{connect, unique, Composition};

per_composition!(client_discovers_the_cluster_and_fails_over);

/// Bound on the discovery and on the fail-over (the client retries every 100 ms).
const WAIT: Duration = Duration::from_secs(20);

async fn client_discovers_the_cluster_and_fails_over(composition: Composition) {
    let mut cluster = composition.start(Topology::FullMesh);
    let client = async_nats::ConnectOptions::new()
        .reconnect_delay_callback(|_| Duration::from_millis(100))
        .connect(cluster.url(2))
        .await
        .expect("connect to node 2");
    let ports: Vec<String> = (0..3)
        .map(|index| {
            let url = cluster.url(index);
            url.rsplit(':').next().unwrap_or_default().to_string()
        })
        .collect();
    // Every node's client URL reaches the client (INFO at connect or an async INFO later).
    let deadline = Instant::now() + WAIT;
    loop {
        let offered = client.server_info().connect_urls;
        let known = ports
            .iter()
            .filter(|port| offered.iter().any(|url| url.ends_with(&format!(":{port}"))))
            .count();
        if known == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "connect_urls never listed the 3 nodes: {offered:?} (ports {ports:?})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let subject = unique("discovery");
    let mut subscriber = client.subscribe(subject.clone()).await.expect("subscribe");
    client.flush().await.expect("flush");

    cluster.kill9(2);
    let publisher = connect(&cluster, 0).await;
    let deadline = Instant::now() + WAIT;
    let message = loop {
        publisher
            .publish(subject.clone(), "after".into())
            .await
            .expect("publish");
        publisher.flush().await.expect("flush");
        if let Ok(Some(message)) = timeout(Duration::from_millis(200), subscriber.next()).await {
            break message;
        }
        assert!(
            Instant::now() < deadline,
            "the client never came back through a discovered server"
        );
    };
    assert_eq!(&message.payload[..], b"after");
    let now_on = client.server_info().port.to_string();
    assert_ne!(now_on, ports[2], "reconnected to a node it discovered");
}

//! Groups whose ticks and heartbeats a node-wide `TickDriver` runs (the server's stream groups),
//! in one runtime with paused tokio time.

mod common;

use std::time::Duration;

use common::{fast, propose_many, Cluster};

const WAIT: Duration = Duration::from_secs(60);
thread_local! {
    /// The tick driver of a test's nodes (a test runs on one thread: `#[tokio::test]`).
    static DRIVER: std::cell::RefCell<Option<std::sync::Arc<nats_raft::TickDriver>>> =
        const { std::cell::RefCell::new(None) };
}

fn driven(config: &mut nats_raft::GroupConfig) {
    fast(config);
    config.tick_driver = DRIVER.with(|driver| driver.borrow().clone());
}

/// Groups whose ticks a `TickDriver` runs (stream groups): their leader keeps its followers
/// from campaigning on the driver's heartbeats alone (the same term for a minute, openraft's
/// own tick off on every node), and once it stops the followers' ticks come back and they
/// elect another within the election timeout.
#[tokio::test(start_paused = true)]
async fn driven_groups_keep_their_leader_on_the_drivers_heartbeats_and_elect_another_when_it_stops()
{
    DRIVER.with(|driver| {
        *driver.borrow_mut() = Some(nats_raft::TickDriver::new(Duration::from_millis(500)))
    });
    let cluster = Cluster::start(&[1, 2, 3], driven).await;
    let first = cluster.leader(WAIT).await;
    let term = cluster.node(first).status().term;
    propose_many(&cluster.node(first), "before", 100).await;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        for node in cluster.running() {
            let status = cluster.node(node).status();
            assert_eq!(status.term, term, "node {node} kept the term");
            assert_eq!(status.leader, Some(first), "node {node} kept the leader");
        }
    }
    for node in cluster.running() {
        assert!(
            cluster.node(node).tick_driven(),
            "node {node}: openraft's tick is off"
        );
    }

    cluster.stop_node(first).await;
    let started = tokio::time::Instant::now();
    let second = cluster.leader(WAIT).await;
    assert_ne!(second, first);
    // Without the driver the same steps take 5.9-6.9 s (the followers' leader lease, then an
    // election timeout of 2-4 s); the driver may add a pass and a tick (0.35 s).
    assert!(
        started.elapsed() <= Duration::from_millis(8_500),
        "elected within the lease, the election timeout and a pass: {:?}",
        started.elapsed()
    );
    let indexes = propose_many(&cluster.node(second), "after", 100).await;
    let last = *indexes.iter().max().expect("indexes");
    for node in cluster.running() {
        cluster.wait_applied(node, last, WAIT).await;
    }
    cluster.shutdown().await;
    DRIVER.with(|driver| driver.borrow_mut().take());
}

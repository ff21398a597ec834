//! A figure, not a contract (`--ignored`): how long after a healed partition both sides of a
//! 3-node cluster see all the interest the other side gained while they were apart (issue 14:
//! "Reconnect: time from a healed partition to full interest on both sides").
//!
//! Each round starts a fresh proxied cluster (every route through a link proxy, gossip sunk)
//! of three nats-servers and one of three of ours, alternating which goes first. Node 2 is cut
//! from nodes 0 and 1 (both links reset: open routes closed, new ones refused), and once the
//! routes are gone from every `/routez`, `SUBS` distinct subjects are subscribed on node 2 and
//! as many on node 0. Then both links are healed and the clock starts: every subject is
//! published to from the other side (node 0 to node 2's, node 2 to node 0's), again and again
//! for the subjects not yet delivered, until every one of the 2 x `SUBS` subscriptions has had
//! a message. That time includes the route's retry timer (nats-server retries an explicit route
//! every second), the handshake and the exchange of the subscriptions.
//!
//! ```sh
//! cargo test -p parity --test cluster reconnect_figure -- --ignored --nocapture
//! ```

use std::collections::HashSet;
use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use test_harness::cluster::{Cluster, LinkMode, Topology};

use crate::support::{connect, unique, Composition};

/// Subscriptions made on each side during the partition.
const SUBS: usize = 10_000;
/// Rounds per cluster kind.
const ROUNDS: usize = 3;
/// Bound on a partition forming and on a heal completing.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a figure for bench/README.md, not a contract; runs ~1 min"]
async fn time_from_a_healed_partition_to_full_interest() {
    for composition in [Composition::Ours3, Composition::Go3] {
        if let Err(reason) = composition.enabled() {
            eprintln!("skipped: {composition:?}: {reason}");
            return;
        }
    }
    let mut times: Vec<(Composition, Duration)> = Vec::new();
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 {
            [Composition::Ours3, Composition::Go3]
        } else {
            [Composition::Go3, Composition::Ours3]
        };
        for composition in order {
            let took = one_round(composition).await;
            println!("round {round} {composition:?}: full interest {took:?} after the heal");
            times.push((composition, took));
        }
    }
    let median = |kind: Composition| {
        let mut of: Vec<Duration> = times
            .iter()
            .filter(|(c, _)| *c == kind)
            .map(|(_, t)| *t)
            .collect();
        of.sort();
        of[of.len() / 2]
    };
    let (ours, go) = (median(Composition::Ours3), median(Composition::Go3));
    println!(
        "median of {ROUNDS}: rnats {ours:?}, nats-server {go:?}, ours/Go {:.2}",
        ours.as_secs_f64() / go.as_secs_f64()
    );
}

/// One partition and heal on a fresh cluster of `composition`: the time from the heal until
/// both sides have delivered to every subscription of the other.
async fn one_round(composition: Composition) -> Duration {
    let cluster = Cluster::start(composition.options(Topology::Proxied));
    let (near, far) = (connect(&cluster, 0).await, connect(&cluster, 2).await);

    cluster.set_link(0, 2, LinkMode::Reset);
    cluster.set_link(1, 2, LinkMode::Reset);
    let far_name = cluster.node(2).name.clone();
    tokio::task::block_in_place(|| {
        wait_for(&cluster, "the partition", |c| {
            let peers = |i| c.route_peers(i).unwrap_or_default();
            !peers(0).contains(&far_name) && !peers(1).contains(&far_name) && peers(2).is_empty()
        })
    });

    let prefix = unique("heal");
    let near_subjects: Vec<String> = (0..SUBS).map(|i| format!("{prefix}.near.{i}")).collect();
    let far_subjects: Vec<String> = (0..SUBS).map(|i| format!("{prefix}.far.{i}")).collect();
    let mut near_deliveries = subscribe_all(&near, &near_subjects).await;
    let mut far_deliveries = subscribe_all(&far, &far_subjects).await;

    cluster.set_link(0, 2, LinkMode::Pass);
    cluster.set_link(1, 2, LinkMode::Pass);
    let healed = Instant::now();
    let mut routed: Option<Duration> = None;
    // Indices not yet delivered on each side.
    let mut near_missing: HashSet<usize> = (0..SUBS).collect();
    let mut far_missing: HashSet<usize> = (0..SUBS).collect();
    while !(near_missing.is_empty() && far_missing.is_empty()) {
        assert!(
            healed.elapsed() < BOUND,
            "{composition:?}: {} + {} subscriptions still unreached {BOUND:?} after the heal\n{}",
            near_missing.len(),
            far_missing.len(),
            cluster.logs()
        );
        if routed.is_none() {
            let peers = tokio::task::block_in_place(|| cluster.route_peers(0).unwrap_or_default());
            if peers.contains(&far_name) {
                routed = Some(healed.elapsed());
            }
        }
        publish_to(&far, &near_subjects, &near_missing).await;
        publish_to(&near, &far_subjects, &far_missing).await;
        // Take what arrives until the connections are quiet for a moment.
        let quiet = Duration::from_millis(20);
        loop {
            tokio::select! {
                Some(index) = near_deliveries.next() => { near_missing.remove(&index); }
                Some(index) = far_deliveries.next() => { far_missing.remove(&index); }
                () = tokio::time::sleep(quiet) => break,
            }
        }
    }
    let took = healed.elapsed();
    println!(
        "{composition:?}: node 0 lists node 2 in /routez {routed:?} after the heal, full interest {took:?}"
    );
    took
}

/// Subscribes every subject on `client` (flushed, so the server holds them all) and returns one
/// stream of the indices of the subscriptions that got a message.
async fn subscribe_all(
    client: &Client,
    subjects: &[String],
) -> futures::stream::SelectAll<futures::stream::BoxStream<'static, usize>> {
    let mut all = futures::stream::SelectAll::new();
    for (index, subject) in subjects.iter().enumerate() {
        let subscriber = client
            .subscribe(subject.clone())
            .await
            .unwrap_or_else(|e| panic!("subscribe {subject}: {e}"));
        all.push(subscriber.map(move |_| index).boxed());
    }
    client
        .flush()
        .await
        .unwrap_or_else(|e| panic!("flush: {e}"));
    all
}

/// One message to each subject whose index is in `missing`, flushed.
async fn publish_to(client: &Client, subjects: &[String], missing: &HashSet<usize>) {
    for &index in missing {
        client
            .publish(subjects[index].clone(), "probe".into())
            .await
            .unwrap_or_else(|e| panic!("publish: {e}"));
    }
    client
        .flush()
        .await
        .unwrap_or_else(|e| panic!("flush: {e}"));
}

/// Polls `done` every 50 ms until it holds, at most [`BOUND`].
fn wait_for(cluster: &Cluster, what: &str, done: impl Fn(&Cluster) -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done(cluster) {
        assert!(
            Instant::now() < deadline,
            "{what} not reached in {BOUND:?}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

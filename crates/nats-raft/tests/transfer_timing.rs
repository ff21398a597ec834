//! A timing harness, not a check (`--ignored`): three in-process nodes of one group on real files
//! and real time, leadership handed round `TRANSFERS` times (default 30). Per transfer: transfer
//! requested -> the target elected, -> its leadership usable (`leading`: its blank entry
//! applied), -> a first proposal committed on it; then `PROPOSALS` (default 20) proposals one
//! at a time. Prints the medians and p90s, and the metadata and log writes per transfer.
//!
//! `cargo test -p nats-raft --test transfer_timing -- --ignored --nocapture`

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{fast, Cluster};
use nats_raft::Role;

const WAIT: Duration = Duration::from_secs(60);

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// "p50 x ms, p90 y ms" of `samples`.
fn summary(samples: &mut [Duration]) -> String {
    samples.sort();
    let at = |fraction: f64| {
        let position = ((samples.len() as f64 - 1.0) * fraction).round() as usize;
        milliseconds(samples[position])
    };
    format!(
        "p50 {:.2} ms, p90 {:.2} ms ({} samples)",
        at(0.5),
        at(0.9),
        samples.len()
    )
}

/// The log fdatasyncs, metadata writes and their microseconds of the three nodes together.
fn counters(cluster: &Cluster) -> (u64, u64, u64) {
    [1, 2, 3]
        .iter()
        .map(|node| cluster.node(*node).log_counters())
        .fold((0, 0, 0), |(fsyncs, writes, micros), counters| {
            (
                fsyncs + counters.fsyncs,
                writes + counters.metadata_writes,
                micros + counters.metadata_write_micros,
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a timing harness: prints figures, asserts only that transfers complete"]
async fn leadership_transfers_to_first_commit() {
    let transfers = count("TRANSFERS", 30);
    let proposals = count("PROPOSALS", 20);
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let mut leader = cluster.leader(WAIT).await;
    let warm = cluster
        .node(leader)
        .propose(Bytes::from_static(b"warm"))
        .await
        .expect("first proposal");
    for node in [1, 2, 3] {
        cluster.wait_applied(node, warm, WAIT).await;
    }
    let before = counters(&cluster);
    let (mut elected, mut leading, mut committed, mut proposed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..transfers {
        let target = [1, 2, 3]
            .into_iter()
            .filter(|node| *node != leader)
            .nth(round % 2)
            .expect("a follower");
        let group = cluster.node(target);
        let mut leading_watch = group.leading();
        let started = Instant::now();
        cluster
            .node(leader)
            .transfer_leader(target)
            .await
            .expect("transfer triggered");
        group
            .wait_for(WAIT, |status| status.role == Role::Leader)
            .await
            .expect("target elected");
        elected.push(started.elapsed());
        tokio::time::timeout(WAIT, leading_watch.wait_for(|leading| leading.is_some()))
            .await
            .expect("target leads in time")
            .expect("leading watch open");
        leading.push(started.elapsed());
        let mut last = group
            .propose(Bytes::from(format!("after transfer {round}")))
            .await
            .expect("first proposal committed");
        committed.push(started.elapsed());
        for number in 0..proposals {
            let one = Instant::now();
            last = group
                .propose(Bytes::from(format!("{round}-{number}")))
                .await
                .expect("proposal committed");
            proposed.push(one.elapsed());
        }
        for node in [1, 2, 3] {
            cluster.wait_applied(node, last, WAIT).await;
        }
        leader = target;
    }
    let (fsyncs, writes, micros) = counters(&cluster);
    let (fsyncs, writes, micros) = (fsyncs - before.0, writes - before.1, micros - before.2);
    println!("{transfers} transfers, {proposals} proposals after each, 3 nodes:");
    println!("  transfer -> elected: {}", summary(&mut elected));
    println!("  transfer -> leading: {}", summary(&mut leading));
    println!("  transfer -> first commit: {}", summary(&mut committed));
    println!("  proposal, one at a time: {}", summary(&mut proposed));
    println!("  log fdatasyncs (3 nodes): {fsyncs}");
    println!(
        "  vote and commit-index writes (3 nodes): {writes}, {:.2} ms each on average",
        micros as f64 / 1e3 / writes.max(1) as f64
    );
    cluster.shutdown().await;
}

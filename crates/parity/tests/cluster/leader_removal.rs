//! Publishes in flight while the stream's leader is removed (`STREAM.PEER.REMOVE` of the
//! leader) are answered: the leader stops taking publishes and lets its proposals commit before
//! it hands over, and refuses (10009) what was queued, so no publisher waits out its request
//! timeout (5 s) for a PubAck that never comes; every acknowledged message is stored.
//!
//! Four nodes (one free for the replacement). rnats only: nats-server 2.15.1 leaves such a
//! publish unanswered (5.05 s with this test; row in docs/parity.md).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::jetstream_assignments::connect;
use crate::jetstream_replicated::{create_r3, publish_until_acked, read_all};
use crate::membership::{members, nodes, placed_without, remove_peer};
use crate::meta::{index_of, ELECTION_BOUND};

/// Below the client's request timeout: a PubAck later than this was never sent.
const ANSWERED_WITHIN: Duration = Duration::from_secs(4);

/// Not in CI: about one run in eight, under load, one publish still waits out its 5 s request
/// timeout (7.07 s in the CI run on 3bc7296; once in eight runs of helper wipe). Cause open: run
/// it by hand (`-- --ignored leader_removal`) while looking for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "flaky: about 1 run in 8 a publish still waits out its 5 s timeout; cause open"]
async fn publishes_in_flight_when_the_leader_is_removed_are_answered() {
    if test_harness::is_reference() {
        return;
    }
    let (cluster, clients) = nodes(4).await;
    let (created, _) = create_r3(&clients[0], "GONE", "gone.>").await;
    assert_eq!(created["did_create"], true, "{created}");
    let info = placed_without(&cluster, &clients[0], "GONE", &[], 3, 0).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    // Several writers connected to the leader's server, so that it always has a batch in
    // flight and publishes queued. (Through another server, a publish sent while the leader's
    // unsubscription is on its way over the route is lost on the way, on nats-server too.)
    let on_leader = index_of(&cluster, &leader);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..4 {
        let client = connect(&cluster, on_leader).await;
        let jetstream = async_nats::jetstream::new(client);
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = BTreeMap::new();
            let mut slowest = Duration::ZERO;
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("w{writer}-{n}");
                let sent = Instant::now();
                let deadline = sent + ELECTION_BOUND * 2;
                let ack = publish_until_acked(&jetstream, "gone.x", &payload, deadline).await;
                slowest = slowest.max(sent.elapsed());
                acked.insert(ack.sequence, payload);
                n += 1;
            }
            (acked, slowest)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = remove_peer(&clients[1], "GONE", &leader).await;
    assert_eq!(answer["success"], true, "{answer}");
    placed_without(&cluster, &clients[0], "GONE", &[&leader], 3, None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked = BTreeMap::new();
    let mut slowest = Duration::ZERO;
    for writer in writers {
        let (written, slow) = writer.await.expect("writer");
        slowest = slowest.max(slow);
        for (seq, payload) in written {
            assert!(
                acked.insert(seq, payload).is_none(),
                "sequence {seq} acked twice"
            );
        }
    }
    println!(
        "leader {leader} removed, slowest PubAck {slowest:?}, {} acked",
        acked.len()
    );
    assert!(
        slowest < ANSWERED_WITHIN,
        "a publish waited {slowest:?} when {leader} was removed"
    );
    let last = acked.keys().next_back().copied().unwrap_or(0);
    let info = placed_without(&cluster, &clients[0], "GONE", &[&leader], 3, last).await;
    assert!(!members(&info).contains(&leader), "{info}");
    let stored = read_all(&clients[0], "GONE", last).await;
    for (seq, payload) in &acked {
        assert_eq!(
            stored.get(seq),
            Some(payload),
            "acked {seq} not stored as acked"
        );
    }
}

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

/// Once in eight runs under load this failed (a publish waited 7 s): the successor missed the
/// leader's one request to take over (a late route message found it a log entry behind), the
/// leader led again after 2 s with the handover still pending in its group, and the group
/// refused its next batch, whose publishers got no answer. Now the leader asks again and a
/// refused batch is answered with 10009 (`nats-raft` tells a refused proposal from a discarded
/// one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_in_flight_when_the_leader_is_removed_are_answered() {
    if test_harness::is_reference() {
        return;
    }
    let (cluster, clients) = nodes(4).await;
    let (created, _) = create_r3(&clients[0], "GONE", "gone.>").await;
    created.assert_created();
    let info = placed_without(&cluster, &clients[0], "GONE", &[], 3, 0).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    // Several writers connected to the leader's server, so that it always has a batch in
    // flight and publishes queued. (Through another server, a publish sent while the leader's
    // unsubscription is on its way over the route is lost on the way, on nats-server too.)
    let on_leader = index_of(&cluster, &leader);
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut writers = Vec::new();
    for writer in 0..4 {
        let client = connect(&cluster, on_leader).await;
        let jetstream = async_nats::jetstream::new(client);
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = BTreeMap::new();
            let mut slowest = (Duration::ZERO, String::new(), start);
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("w{writer}-{n}");
                let sent = Instant::now();
                let deadline = sent + ELECTION_BOUND * 2;
                let ack = publish_until_acked(&jetstream, "gone.x", &payload, deadline).await;
                if sent.elapsed() > slowest.0 {
                    slowest = (
                        sent.elapsed(),
                        format!("{payload} at {}", ack.sequence),
                        sent,
                    );
                }
                acked.insert(ack.sequence, payload);
                n += 1;
            }
            (acked, slowest)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let removing = Instant::now();
    let answer = remove_peer(&clients[1], "GONE", &leader).await;
    assert_eq!(answer["success"], true, "{answer}");
    placed_without(&cluster, &clients[0], "GONE", &[&leader], 3, None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked = BTreeMap::new();
    let mut slowest = (Duration::ZERO, String::new(), start);
    for writer in writers {
        let (written, slow) = writer.await.expect("writer");
        if slow.0 > slowest.0 {
            slowest = slow;
        }
        for (seq, payload) in written {
            assert!(
                acked.insert(seq, payload).is_none(),
                "sequence {seq} acked twice"
            );
        }
    }
    let (slowest, which, sent) = slowest;
    let offset = if sent >= removing {
        format!("{:?} after", sent.duration_since(removing))
    } else {
        format!("{:?} before", removing.duration_since(sent))
    };
    println!(
        "leader {leader} removed, slowest PubAck {slowest:?} ({which}, sent {offset} the \
         removal), {} acked",
        acked.len()
    );
    assert!(
        slowest < ANSWERED_WITHIN,
        "a publish waited {slowest:?} when {leader} was removed ({which}, sent {offset} the \
         removal)\n{}",
        cluster.logs()
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

//! A server removed from a stream's peers and placed back while its old replica still runs does
//! not disturb the group: removed, it never learns the membership that leaves it out (the
//! leader stops sending to it) and its election timer fires; it must not campaign with ever
//! higher terms, or, placed back, its first answer to the leader (a higher term) deposes the
//! leader and the stream is leaderless for an election (about 6 s once on 4 nodes before
//! nats-raft's pre-vote). The leader stays, and publishing through its server goes on
//! throughout: no gap between two PubAcks longer than [`GAP_BOUND`].
//!
//! Four nodes: R3 on three, one free. A follower is removed (the free server takes its place),
//! stays out for [`OUT`] (several election timeouts), then the other follower is removed, and
//! the only free server is the first one, placed back.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where the gap is reported rather than asserted if it misses the bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;

use crate::jetstream_assignments::connect;
use crate::jetstream_replicated::{create_r3, lock, read_all};
use crate::membership::{members, nodes, placed_without, remove_peer};
use crate::meta::index_of;

/// The longest time between two PubAcks while the peers change (a removal and a placement
/// never stop the leader; margin for a loaded 2-core machine).
const GAP_BOUND: Duration = Duration::from_secs(2);
/// How long the removed server stays out before it is placed back: past several election
/// timeouts (2-4 s), within the time its old replica waits to be let go (20 s).
const OUT: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_peer_placed_back_leaves_the_leader_in_place() {
    let (cluster, clients) = nodes(4).await;
    let (created, _) = create_r3(&clients[0], "BACK", "back.>").await;
    created.assert_created();
    let info = placed_without(&cluster, &clients[0], "BACK", &[], 3, 0).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let followers: Vec<String> = members(&info)
        .into_iter()
        .filter(|name| *name != leader)
        .collect();
    let [first, second] = followers.as_slice() else {
        panic!("two followers expected: {info}");
    };

    // One publisher on the leader's server, one publish at a time, each retried (same message
    // id) until acknowledged; every ack's time recorded.
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(Instant, u64, String)>>> = Arc::default();
    let publisher = tokio::spawn({
        let client = connect(&cluster, index_of(&cluster, &leader)).await;
        let jetstream = async_nats::jetstream::ContextBuilder::new()
            .timeout(Duration::from_millis(500))
            .build(client);
        let (stop, acked) = (stop.clone(), acked.clone());
        async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("m{n}");
                loop {
                    let message = Publish::build()
                        .payload(payload.clone().into())
                        .message_id(&payload);
                    let attempt = match jetstream.send_publish("back.x", message).await {
                        Ok(pending) => pending.await.ok(),
                        Err(_) => None,
                    };
                    if let Some(ack) = attempt {
                        lock(&acked).push((Instant::now(), ack.sequence, payload.clone()));
                        break;
                    }
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                n += 1;
            }
        }
    });
    let started = Instant::now();

    let answer = remove_peer(&clients[0], "BACK", first).await;
    assert_eq!(answer["success"], true, "{answer}");
    placed_without(&cluster, &clients[0], "BACK", &[first], 3, None).await;
    tokio::time::sleep(OUT).await;
    let answer = remove_peer(&clients[0], "BACK", second).await;
    assert_eq!(answer["success"], true, "{answer}");
    let info = placed_without(&cluster, &clients[0], "BACK", &[second], 3, None).await;
    assert!(
        members(&info).contains(first),
        "{first} not placed back: {info}"
    );
    // A deposed leader would show within an election timeout of the placement.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    publisher.await.expect("publisher");

    let acked = std::mem::take(&mut *lock(&acked));
    let mut gap = (Duration::ZERO, Duration::ZERO);
    let mut previous = started;
    for (at, _, _) in &acked {
        let since = at.duration_since(previous);
        if since > gap.0 {
            gap = (since, previous.duration_since(started));
        }
        previous = *at;
    }
    let info = placed_without(&cluster, &clients[0], "BACK", &[second], 3, None).await;
    let now_leading = info["cluster"]["leader"].as_str().unwrap_or("");
    println!(
        "{} acked over {:.1?}; longest gap between PubAcks {:.2?} (from {:.1?} on); leader \
         {leader} before, {now_leading} after",
        acked.len(),
        started.elapsed(),
        gap.0,
        gap.1
    );
    let last = acked.iter().map(|(_, seq, _)| *seq).max().unwrap_or(0);
    let stored = read_all(&clients[0], "BACK", last).await;
    for (_, seq, payload) in &acked {
        assert_eq!(
            stored.get(seq),
            Some(payload),
            "acked {seq} not stored as acked"
        );
    }
    if (gap.0 > GAP_BOUND || now_leading != leader) && test_harness::is_reference() {
        println!(
            "nats-server: a gap of {:.2?} between PubAcks, leader {leader} then {now_leading} \
             (reported, not asserted)",
            gap.0
        );
        return;
    }
    assert_eq!(
        now_leading,
        leader,
        "the leader changed ({:?} without a PubAck from {:?} on)\n{}",
        gap.0,
        gap.1,
        cluster.logs()
    );
    assert!(
        gap.0 <= GAP_BOUND,
        "publishing stopped for {:?} ({:?} after the first removal); leader {leader} before, \
         {now_leading} after\n{}",
        gap.0,
        gap.1,
        cluster.logs()
    );
}

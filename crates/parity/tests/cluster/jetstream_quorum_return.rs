//! Issue 20's field failure mode: an R3 stream under publishing load loses both followers to
//! `kill -9` while its leader's server survives. While they are down no publish sent after
//! their death is acknowledged (there is no quorum to store it); once both are restarted,
//! publishes are acknowledged again within [`RESUME_BOUND`] of their return; afterwards every
//! acknowledged message is on every replica at its sequence (the fault checker's `check`:
//! nothing lost, conflicting, duplicated or divergent).
//!
//! The publishers are connected to the surviving server (each publish retried with its message
//! id, see `fault_schedule::publish_loop`). The followers stay down for [`DOWN`]: past ours'
//! lost-quorum step-down (2 s), so the survivor campaigns alone for a while before they return.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where the time to resume is reported rather than asserted if it misses the bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fault_schedule::{
    info_until, progress, publish_loop, roaming_client, settled, History, RECOVERY,
};
use crate::jetstream_faults::{check, read_every_replica};
use crate::jetstream_replicated::{create_r3, lock, settled_info, three_nodes};
use crate::meta::index_of;

/// Publishes are acknowledged again within this after both followers are back (issue 20).
const RESUME_BOUND: Duration = Duration::from_secs(10);
/// How long both followers stay down.
const DOWN: Duration = Duration::from_secs(5);
const PUBLISHERS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_followers_killed_under_load_then_writes_resume_on_their_return() {
    let (mut cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "QUORUM", "quorum.>").await;
    created.assert_created();
    let info = settled_info(&clients[0], "QUORUM", &names, 0).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let history: Arc<Mutex<History>> = Arc::default();
    let mut publishers = Vec::new();
    for id in 0..PUBLISHERS {
        let client = roaming_client(&cluster, leader).await;
        publishers.push(tokio::spawn(publish_loop(
            id,
            client,
            "quorum.x",
            stop.clone(),
            history.clone(),
        )));
    }
    progress(&history, "before the kills").await;

    for &follower in &followers {
        cluster.kill9(follower);
    }
    // Both followers are reaped from here: nothing sent after this can reach a quorum.
    let dead = Instant::now();
    tokio::time::sleep(DOWN).await;
    let returning = Instant::now();
    for &follower in &followers {
        tokio::task::block_in_place(|| cluster.restart(follower));
    }
    let returned = Instant::now();
    println!(
        "followers {:?} down {:.1?}, restarted (ready for clients) in {:.1?}",
        followers.iter().map(|&i| &names[i]).collect::<Vec<_>>(),
        returning.duration_since(dead),
        returned.duration_since(returning)
    );

    // Publishes are acknowledged again: the first ack of an attempt sent after the return.
    let deadline = returned + RECOVERY;
    let resumed = loop {
        let first = {
            let history = lock(&history);
            history
                .times
                .iter()
                .filter(|(sent, _)| *sent >= returned)
                .map(|(_, acked)| *acked)
                .min()
        };
        if let Some(acked) = first {
            break acked.duration_since(returned);
        }
        assert!(
            Instant::now() < deadline,
            "no PubAck within {RECOVERY:?} of the followers' return\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "writes resumed {resumed:.1?} after both followers were back ({:.1?} after their \
         restart began)",
        resumed + returned.duration_since(returning)
    );
    progress(&history, "after the followers' return").await;
    stop.store(true, Ordering::Relaxed);
    for publisher in publishers {
        publisher.await.expect("publisher");
    }

    // No quorum, no ack: nothing first sent after the followers died was newly stored before
    // they came back (a duplicate's ack names a message stored before).
    let history = std::mem::take(&mut *lock(&history));
    let while_down: Vec<String> = history
        .acked
        .iter()
        .zip(&history.times)
        .filter(|((_, _, _, duplicate), (sent, acked))| {
            !duplicate && *sent >= dead && *acked < returning
        })
        .map(|((_, payload, seq, _), (sent, acked))| {
            format!(
                "{payload} at {seq}, sent {:.1?} and acked {:.1?} after the kills",
                sent.duration_since(dead),
                acked.duration_since(dead)
            )
        })
        .collect();
    assert!(
        while_down.is_empty(),
        "acked without a quorum: {while_down:?}"
    );
    let attempts_down = history
        .times
        .iter()
        .filter(|(sent, _)| *sent >= dead && *sent < returning)
        .count();
    println!(
        "{} acked in all, {attempts_down} acked attempts sent while down (each acked after \
         the return)",
        history.acked.len()
    );

    // Every acknowledged message on every replica.
    tokio::task::block_in_place(|| cluster.wait_for_mesh())
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let info = info_until(
        &clients[leader],
        "$JS.API.STREAM.INFO.QUORUM",
        "settled after the return",
        |info| settled(info, &names),
    )
    .await;
    let last = info["state"]["last_seq"].as_u64().unwrap_or(0);
    let replicas = read_every_replica(&clients[leader], "QUORUM", &names, last).await;
    let findings = check(&history, &replicas);
    println!("{}", findings.summary(1, returned.duration_since(dead)));
    assert!(findings.clean(), "{findings:#?}");

    if resumed > RESUME_BOUND && test_harness::is_reference() {
        println!(
            "nats-server: writes resumed {resumed:.1?} after the return, past the \
             {RESUME_BOUND:?} bound (reported, not asserted)"
        );
        return;
    }
    assert!(
        resumed <= RESUME_BOUND,
        "writes resumed {resumed:?} after the followers' return"
    );
}

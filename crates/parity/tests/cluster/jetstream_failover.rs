//! How fast an R3 stream serves again when its leader goes: after a `kill -9` of the stream
//! leader, the first PubAck for a publish sent once the leader is dead comes within
//! [`failover_bound`] (the time is printed: the failover figure, beside nats-server's in the
//! parity pass); after a SIGSTOP of the leader (its routes stay up), within [`hang_bound`];
//! after `$JS.API.STREAM.LEADER.STEPDOWN`, answered as nats-server does, another
//! replica leads within [`STEPDOWN_BOUND`] and takes publishes.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use serde_json::Value;

use crate::jetstream_assignments::{connect, leader_of, one_answer};
use crate::jetstream_replicated::{
    create_r3, lock, names_of, publish_until_acked, settled_info, three_nodes,
};
use crate::meta::{index_of, start, ELECTION_BOUND};

/// A publish not acknowledged within this is sent again (same message id): short, so the
/// publisher's retry adds little to the measured failover.
const ACK_WAIT: Duration = Duration::from_millis(500);
/// The first PubAck after the leader's kill -9 comes within this. Ours: the voters campaign the
/// stream lease (1.5 s) plus 500 ms after they last heard from the leader, and the publisher
/// retries every [`ACK_WAIT`]; measured 2.03-2.32 s (10 runs, debug build, load 11-16 on 2
/// cores, 4 Dec 2026) against 3.50-3.65 s with the 3 s lease of before (bench/README.md, issue
/// 15), so 3 s holds on a loaded CI box and fails that timing. nats-server's election timeout is
/// a random 4-9 s (measured here: 4.4-7.2 s), so it gets its own bound.
fn failover_bound() -> Duration {
    if test_harness::is_reference() {
        Duration::from_secs(12)
    } else {
        Duration::from_secs(3)
    }
}
/// Another replica leads within this after a stepdown (target < 1 s; margin for load).
const STEPDOWN_BOUND: Duration = Duration::from_secs(3);

/// One acknowledged publish: when its last attempt was sent and when the ack came.
struct Acked {
    sent: Instant,
    acked: Instant,
}

/// A test of the acknowledged publishes so far.
type Condition = Box<dyn Fn(&[Acked]) -> bool + Send>;

/// The leader named by the first STREAM.INFO answer through `client` within 300 ms, if any
/// (nobody answers while no replica leads).
async fn stream_leader(client: &async_nats::Client, stream: &str) -> Option<String> {
    let subject = format!("$JS.API.STREAM.INFO.{stream}");
    let reply = tokio::time::timeout(
        Duration::from_millis(300),
        client.request(subject, "".into()),
    )
    .await
    .ok()?
    .ok()?;
    let info: Value = serde_json::from_slice(&reply.payload).ok()?;
    info["cluster"]["leader"].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_puback_after_a_stream_leader_kill_comes_within_the_bound() {
    let failover = first_puback_after(Fault::Kill).await;
    assert!(
        failover <= failover_bound(),
        "first PubAck {failover:?} after the kill"
    );
}

/// A leader killed and started again at once (a supervisor's restart): it must not leave the
/// stream leaderless while its peers wait out its lease (nats-raft `restarted_leader.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_puback_after_a_stream_leader_restarted_at_once_comes_within_the_bound() {
    let failover = first_puback_after(Fault::Restart).await;
    assert!(
        failover <= failover_bound(),
        "first PubAck {failover:?} after the kill -9 and restart"
    );
}

/// A leader hung with its routes up (SIGSTOP: no route closes, so only silence tells).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_puback_after_a_stream_leader_hangs_comes_within_the_bound() {
    let failover = first_puback_after(Fault::Pause).await;
    assert!(
        failover <= hang_bound(),
        "first PubAck {failover:?} after the SIGSTOP"
    );
}

/// What happens to the stream leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Kill,
    Pause,
    /// `kill -9`, then started again on its store as soon as the process is gone.
    Restart,
}

/// The first PubAck after a hung leader (routes up): ours notices the silence of a leader that
/// sends heartbeats every 500 ms within 2 s (margin for a loaded 2-core CI box); nats-server's
/// election timeout is a random 4-9 s.
fn hang_bound() -> Duration {
    if test_harness::is_reference() {
        Duration::from_secs(15)
    } else {
        Duration::from_secs(5)
    }
}

/// Publishes one at a time through a node that is not the stream leader, applies `fault` to the
/// leader, and returns how long after it the first PubAck for a publish sent after it came.
async fn first_puback_after(fault: Fault) -> Duration {
    let (mut cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "FAIL", "fail.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..10 {
        publish_until_acked(&jetstream, "fail.warm", &format!("warm-{n}"), deadline).await;
    }
    let info = settled_info(&clients[0], "FAIL", &names, 10).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let doomed = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != doomed).unwrap_or(0);

    // A publisher on a surviving node, one publish at a time, each retried until acknowledged.
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let load = tokio::spawn({
        let stop = stop.clone();
        let acked = acked.clone();
        let jetstream = async_nats::jetstream::ContextBuilder::new()
            .timeout(ACK_WAIT)
            .build(clients[survivor].clone());
        async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("load-{n}");
                loop {
                    let message = Publish::build()
                        .payload(payload.clone().into())
                        .message_id(&payload);
                    let sent = Instant::now();
                    let attempt = match jetstream.send_publish("fail.load", message).await {
                        Ok(pending) => pending.await.is_ok(),
                        Err(_) => false,
                    };
                    if attempt {
                        let acked_at = Instant::now();
                        lock(&acked).push(Acked {
                            sent,
                            acked: acked_at,
                        });
                        break;
                    }
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    // A refusal (no responders) comes back at once: do not spin on it.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                n += 1;
            }
        }
    });
    let wait_until = |condition: Condition, what: &'static str| {
        let acked = acked.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !condition(&lock(&acked)) {
                assert!(Instant::now() < deadline, "{what}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    wait_until(
        Box::new(|acked| acked.len() >= 50),
        "50 acks before the kill",
    )
    .await;

    let killed_at = Instant::now();
    match fault {
        Fault::Kill => cluster.kill9(doomed),
        Fault::Pause => cluster.pause(doomed),
        Fault::Restart => cluster.kill9(doomed),
    }
    // The old leader is gone (reaped, or stopped) from here: an ack for a publish sent after
    // this instant comes from a new leader (or from the restarted one, leading in a new term).
    let dead = Instant::now();
    if fault == Fault::Restart {
        tokio::task::block_in_place(|| cluster.restart(doomed));
    }
    wait_until(
        Box::new(move |acked| acked.iter().any(|ack| ack.sent >= dead)),
        "no PubAck after the leader's kill -9",
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    load.await.expect("publisher");
    let first = lock(&acked)
        .iter()
        .filter(|ack| ack.sent >= dead)
        .map(|ack| ack.acked)
        .min()
        .unwrap_or(dead);
    let failover = first.duration_since(killed_at);
    println!("first PubAck after the stream leader's {fault:?}: {failover:?}");
    let new_leader = stream_leader(&clients[survivor], "FAIL").await;
    assert!(
        new_leader
            .as_deref()
            .is_some_and(|name| name != leader || fault == Fault::Restart),
        "{new_leader:?}"
    );
    if fault == Fault::Pause {
        cluster.resume(doomed);
    }
    failover
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_leader_stepdown_moves_leadership_and_publishing_resumes() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let client = connect(&cluster, 1).await;
    let (created, _) = create_r3(&client, "STEP", "step.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::ContextBuilder::new()
        .timeout(ACK_WAIT)
        .build(client.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..5 {
        publish_until_acked(&jetstream, "step.before", &format!("before-{n}"), deadline).await;
    }
    let info = settled_info(&client, "STEP", &names, 5).await;
    let old = info["cluster"]["leader"].as_str().unwrap_or("").to_string();

    // The answer (exactly one, checked over a quiet period) is awaited beside the new leader.
    let started = Instant::now();
    let stepdown = tokio::spawn({
        let client = client.clone();
        async move { one_answer(&client, "$JS.API.STREAM.LEADER.STEPDOWN.STEP", Value::Null).await }
    });
    // Another replica leads: STREAM.INFO names it (no answer while nobody leads).
    let new = loop {
        if let Some(leader) = stream_leader(&client, "STEP").await {
            if leader != old && names.contains(&leader) {
                break leader;
            }
        }
        assert!(
            started.elapsed() < STEPDOWN_BOUND,
            "still led by {old} {:?} after the stepdown",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "stream stepdown: {new} leads {:?} after the request",
        started.elapsed()
    );
    let ack = publish_until_acked(
        &jetstream,
        "step.after",
        "after",
        Instant::now() + STEPDOWN_BOUND,
    )
    .await;
    println!(
        "stream stepdown: first PubAck {:?} after the request",
        started.elapsed()
    );
    let answer = stepdown.await.expect("stepdown request");
    assert_eq!(
        answer,
        serde_json::json!({
            "type": "io.nats.jetstream.api.v1.stream_leader_stepdown_response",
            "success": true
        })
    );
    assert_eq!((ack.stream.as_str(), ack.sequence), ("STEP", 6));
    settled_info(&client, "STEP", &names, 6).await;
}

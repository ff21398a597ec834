//! A publish forwarded to a stream leader that just stopped leading, before its withdrawal
//! (`RS-`) reached the forwarding server, is answered (ours: 10009, not the leader, so the
//! client retries on the next leader) instead of dropped: its client never waits out its
//! timeout. Issue 20: during peer-removal cycles one publish sent around a leader's handover
//! crossed the `RS-` on the route, arrived 19-32 ms after the subscription went and was never
//! answered; the publisher waited 5 s.
//!
//! The route from the leader to the publishers' server is delayed (a proxied cluster), so the
//! leader's `RS-` reaches that server [`TO_PUBLISHERS`] late and every publish sent
//! meanwhile goes to the old leader. nats-server drops those (its publisher times out): ours
//! only (docs/parity.md, "A publish forwarded to a former stream leader").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use serde_json::json;
use test_harness::cluster::{LinkMode, Topology};

use crate::jetstream_assignments::{connect, one_answer};
use crate::meta::{index_of, ELECTION_BOUND};
use crate::rolling::{cluster_with_stream_on, new_leader_since};

/// How late the other servers' route frames reach the publishers' server.
const TO_PUBLISHERS: Duration = Duration::from_millis(800);
/// Between two publishes (each awaited apart): about 30 go out within the delay.
const SEND_EVERY: Duration = Duration::from_millis(25);
/// Acknowledged publishes sent after the stepdown before the test stops publishing.
const ACKS_AFTER: usize = 10;

/// What became of one publish: sent after the stepdown request, and its answer (`Err` with the
/// client's error text: a refusal, no responders, or its timeout).
type Outcome = (bool, Result<(), String>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_crossing_the_leaders_withdrawal_is_answered() {
    if test_harness::is_reference() {
        // nats-server drops such a publish; its client waits out its timeout.
        return;
    }
    let (cluster, _, _, leader) =
        cluster_with_stream_on(Topology::Proxied, "LATE", "late", 1).await;
    let leading = index_of(&cluster, &leader);
    let publishers_node = (0..3).find(|&i| i != leading).unwrap_or(0);
    // Both peers' frames reach the publishers' server late, so the leader's `RS-` comes there
    // before the next leader's `RS+` (each route keeps its order).
    for peer in (0..3).filter(|&i| i != publishers_node) {
        cluster.set_direction(peer, publishers_node, LinkMode::Delay(TO_PUBLISHERS));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stepped_down = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(Mutex::new(Vec::<Outcome>::new()));
    let publisher = {
        let jetstream = async_nats::jetstream::new(connect(&cluster, publishers_node).await);
        let (stop, stepped_down, outcomes) = (stop.clone(), stepped_down.clone(), outcomes.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let after = stepped_down.load(Ordering::Relaxed);
                let payload = format!("p{n}");
                n += 1;
                let message = Publish::build()
                    .payload(payload.clone().into())
                    .message_id(&payload);
                let outcomes = outcomes.clone();
                let sent = jetstream.send_publish("late.x", message).await;
                answers.push(tokio::spawn(async move {
                    let answer = match sent {
                        Ok(pending) => pending.await.map(|_| ()).map_err(|e| e.to_string()),
                        Err(error) => Err(error.to_string()),
                    };
                    lock(&outcomes).push((after, answer));
                }));
                tokio::time::sleep(SEND_EVERY).await;
            }
            for answer in answers {
                answer.await.expect("answer task");
            }
        })
    };
    let acked_after = || {
        lock(&outcomes)
            .iter()
            .filter(|(after, answer)| *after && answer.is_ok())
            .count()
    };
    // Publishing through the delayed route works before the stepdown.
    let deadline = Instant::now() + ELECTION_BOUND;
    while lock(&outcomes).iter().filter(|(_, a)| a.is_ok()).count() < 10 {
        assert!(Instant::now() < deadline, "no publishes acknowledged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let admin = connect(&cluster, publishers_node).await;
    stepped_down.store(true, Ordering::Relaxed);
    let answer = one_answer(&admin, "$JS.API.STREAM.LEADER.STEPDOWN.LATE", json!({})).await;
    assert_eq!(answer["success"], true, "{answer}");
    new_leader_since(&admin, "LATE", &leader).await;
    let deadline = Instant::now() + ELECTION_BOUND;
    while acked_after() < ACKS_AFTER {
        assert!(
            Instant::now() < deadline,
            "publishing did not resume after the stepdown: {:?}",
            lock(&outcomes)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    publisher.await.expect("publisher");
    let outcomes = lock(&outcomes).clone();
    let failed: Vec<&String> = outcomes
        .iter()
        .filter_map(|(_, a)| a.as_ref().err())
        .collect();
    let unanswered: Vec<&&String> = failed.iter().filter(|e| e.contains("timed out")).collect();
    println!(
        "{} publishes, {} acknowledged, {} refused or without responders, {} unanswered",
        outcomes.len(),
        outcomes.len() - failed.len(),
        failed.len() - unanswered.len(),
        unanswered.len()
    );
    assert!(
        unanswered.is_empty(),
        "{} publishes sent around the stepdown were never answered: {unanswered:?}",
        unanswered.len()
    );
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

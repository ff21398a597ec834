//! Message ids across stream leader stepdowns (issue 20): a `Nats-Msg-Id` stored before a
//! stepdown is still a duplicate after it, whichever replica leads next, and
//! `Nats-Expected-Last-Msg-Id` still names the last message stored. Ours keeps the duplicate
//! window on every replica as it applies its leader's batches (`stream/dedupe.rs`), as
//! nats-server's replicas track message ids; before that, a new leader read the window back
//! from its store.

use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::publish::PublishAck;
use serde_json::Value;

use crate::jetstream_assignments::answers;
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes};
use crate::meta::ELECTION_BOUND;

/// Messages stored with an id before the first stepdown.
const IDS: usize = 5;

/// The stream's leader as STREAM.INFO names it (asked again while nats-server leaves one
/// unanswered during a move).
async fn leader(client: &async_nats::Client) -> String {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let got = answers(client, "$JS.API.STREAM.INFO.SDD", Value::Null).await;
        if let Some(info) = got.first() {
            let name = info["cluster"]["leader"].as_str().unwrap_or("");
            if !name.is_empty() {
                return name.to_string();
            }
        }
        assert!(Instant::now() < deadline, "SDD: no leader: {got:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Publishes `id` (also its payload) with `Nats-Expected-Last-Msg-Id: expected` until answered
/// with a PubAck; a refusal (10070, the last id differs) is asked again until the deadline and
/// then fails the test with the error.
async fn publish_expecting(
    jetstream: &async_nats::jetstream::Context,
    id: &str,
    expected: &str,
) -> PublishAck {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let message = Publish::build()
            .payload(id.to_string().into())
            .message_id(id)
            .expected_last_message_id(expected);
        let attempt = match jetstream.send_publish("sdd.x", message).await {
            Ok(pending) => pending.await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(ack) => return ack,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "{id} expecting last id {expected}: {error}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_ids_stored_before_stepdowns_stay_duplicates_on_every_next_leader() {
    let started = Instant::now();
    let (_cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "SDD", "sdd.>").await;
    created.assert_created();
    let streams: Vec<_> = clients
        .iter()
        .map(|client| async_nats::jetstream::new(client.clone()))
        .collect();
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut stored = Vec::new();
    for n in 0..IDS {
        let id = format!("m{n}");
        let ack = publish_until_acked(&streams[n % 3], "sdd.x", &id, deadline).await;
        stored.push((id, ack.sequence));
    }
    let mut last_id = stored[IDS - 1].0.clone();
    let mut messages = IDS as u64;
    settled_info(&clients[0], "SDD", &names, messages).await;
    println!("stored {IDS} ids {:?} after the start", started.elapsed());

    // Three stepdowns: a replica that never led takes over, and one that led before.
    for round in 0..3 {
        let admin = &clients[round % 3];
        let before = leader(admin).await;
        let moved_by = Instant::now() + ELECTION_BOUND;
        let got = answers(admin, "$JS.API.STREAM.LEADER.STEPDOWN.SDD", Value::Null).await;
        assert!(
            got.first().is_some_and(|answer| answer["success"] == true),
            "stepdown {round}: {got:?}"
        );
        let moved = loop {
            let now = leader(admin).await;
            if now != before {
                break now;
            }
            assert!(
                Instant::now() < moved_by,
                "stepdown {round}: still led by {before}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Every id stored so far is a duplicate of its first sequence on the new leader,
        // asked through each server in turn.
        let asked = Instant::now() + ELECTION_BOUND;
        for (n, (id, seq)) in stored.iter().enumerate() {
            let ack = publish_until_acked(&streams[(n + round) % 3], "sdd.x", id, asked).await;
            assert!(
                ack.duplicate && ack.sequence == *seq,
                "stepdown {round} ({before} -> {moved}): {id} (stored at {seq}) answered {ack:?}"
            );
        }
        // The last id stored is still the one a publish may expect.
        let id = format!("n{round}");
        let ack = publish_expecting(&streams[round % 3], &id, &last_id).await;
        messages += 1;
        assert_eq!(ack.sequence, messages, "stepdown {round}: {id}: {ack:?}");
        stored.push((id.clone(), ack.sequence));
        last_id = id;
        settled_info(&clients[0], "SDD", &names, messages).await;
        println!(
            "stepdown {round}: {before} -> {moved}, checked {:?} after the start",
            started.elapsed()
        );
    }
}

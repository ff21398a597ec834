//! Per-message TTLs (`Nats-TTL`) on replicated streams: `never` keeps a message past `max_age`
//! on every replica, and an R1 stream scaled to R3 keeps its messages' TTLs and its duplicate
//! window on servers that received its messages through the scale-up.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::Client;
use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, one_answer};
use crate::jetstream_replicated::{base64_decode, publish_until_acked};
use crate::membership::{lead_on, members, nodes, stream_info};
use crate::meta::ELECTION_BOUND;

/// Publishes `payload` with the header `Nats-TTL: ttl` (and `payload` as its message id) until
/// acknowledged; its sequence.
async fn publish_with_ttl(
    jetstream: &async_nats::jetstream::Context,
    subject: &str,
    payload: &str,
    ttl: &str,
) -> u64 {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let message = Publish::build()
            .payload(payload.to_string().into())
            .message_id(payload)
            .header("Nats-TTL", ttl);
        let attempt = match jetstream.send_publish(subject.to_string(), message).await {
            Ok(pending) => pending.await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(ack) => return ack.sequence,
            Err(error) => {
                assert!(Instant::now() < deadline, "{payload} never acked: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// STREAM.CREATE of `config`, asked again while nats-server leaves it unanswered as its routes
/// settle (see `scale::apply`); the answer, checked.
async fn create(client: &Client, config: Value) {
    let name = config["name"].as_str().unwrap_or_default().to_string();
    let subject = format!("$JS.API.STREAM.CREATE.{name}");
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let answer = if test_harness::is_reference() {
            answers(client, &subject, config.clone()).await.pop()
        } else {
            Some(one_answer(client, &subject, config.clone()).await)
        };
        match answer {
            Some(answer) if answer.get("error").is_none() => return,
            other => assert!(Instant::now() < deadline, "{name} not created: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the stream's leader reports `messages` messages on `count` servers; that INFO.
async fn holding(
    client: &Client,
    stream: &str,
    count: usize,
    messages: u64,
    bound: Duration,
) -> Value {
    let deadline = Instant::now() + bound;
    loop {
        let info = stream_info(client, stream).await;
        if members(&info).len() == count && info["state"]["messages"] == messages {
            return info;
        }
        assert!(
            Instant::now() < deadline,
            "{stream}: not {messages} messages on {count} servers: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Every server of the stream, made leader in turn, holds exactly `expected` (payload by
/// sequence, through sequence `last`).
async fn every_member_holds(
    client: &Client,
    stream: &str,
    info: &Value,
    last: u64,
    expected: &[(u64, &str)],
) {
    for name in members(info) {
        lead_on(client, stream, &name).await;
        let state = stream_info(client, stream).await;
        assert_eq!(
            state["state"]["messages"],
            expected.len() as u64,
            "{name}: {state}"
        );
        let held: Vec<(u64, String)> = read_present(client, stream, last).await;
        let expected: Vec<(u64, String)> = expected
            .iter()
            .map(|(seq, payload)| (*seq, payload.to_string()))
            .collect();
        assert_eq!(held, expected, "{name} holds other messages");
    }
}

/// The messages of `stream` through `last` that MSG.GET finds, by sequence.
async fn read_present(client: &Client, stream: &str, last: u64) -> Vec<(u64, String)> {
    let mut present = Vec::new();
    for seq in 1..=last {
        let reply = client
            .request(
                format!("$JS.API.STREAM.MSG.GET.{stream}"),
                json!({ "seq": seq }).to_string().into(),
            )
            .await
            .unwrap_or_else(|error| panic!("seq {seq}: {error}"));
        let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
        if answer.get("error").is_some() {
            continue;
        }
        let data = answer["message"]["data"].as_str().unwrap_or("");
        present.push((
            seq,
            String::from_utf8_lossy(&base64_decode(data)).into_owned(),
        ));
    }
    present
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_ttl_outlives_max_age_on_every_replica() {
    let (_cluster, clients) = nodes(3).await;
    create(
        &clients[0],
        json!({
            "name": "FOREVER",
            "subjects": ["forever.>"],
            "num_replicas": 3,
            "storage": "file",
            "allow_msg_ttl": true,
            "max_age": 3_000_000_000u64,
        }),
    )
    .await;
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let kept = publish_with_ttl(&jetstream, "forever.a", "kept", "never").await;
    let deadline = Instant::now() + ELECTION_BOUND;
    let aged = publish_until_acked(&jetstream, "forever.b", "aged", deadline).await;
    assert_eq!((kept, aged.sequence), (1, 2));
    // max_age removes the plain message; the one with `Nats-TTL: never` stays, everywhere.
    let info = holding(&clients[0], "FOREVER", 3, 1, Duration::from_secs(30)).await;
    every_member_holds(&clients[0], "FOREVER", &info, 2, &[(1, "kept")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_up_carries_message_ttls_and_the_duplicate_window() {
    const TTL: Duration = Duration::from_secs(15);
    let (_cluster, clients) = nodes(3).await;
    let config = |replicas: u64| {
        json!({
            "name": "CARRY",
            "subjects": ["carry.>"],
            "num_replicas": replicas,
            "storage": "file",
            "allow_msg_ttl": true,
            "duplicate_window": 120_000_000_000u64,
        })
    };
    create(&clients[0], config(1)).await;
    let original = stream_info(&clients[0], "CARRY").await["cluster"]["leader"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let kept = publish_until_acked(&jetstream, "carry.a", "kept", deadline).await;
    let published = Instant::now();
    let brief = publish_with_ttl(&jetstream, "carry.b", "brief", "15s").await;
    assert_eq!((kept.sequence, brief), (1, 2));

    let deadline = Instant::now() + ELECTION_BOUND;
    let updated = loop {
        let answer = one_answer(&clients[1], "$JS.API.STREAM.UPDATE.CARRY", config(3)).await;
        if answer.get("error").is_none() || Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(updated.get("error").is_none(), "{updated}");
    let info = holding(&clients[0], "CARRY", 3, 2, Duration::from_secs(60)).await;
    // Lead from a server that has the messages only through the scale-up.
    let other = members(&info)
        .into_iter()
        .find(|name| *name != original)
        .unwrap_or_else(|| panic!("no server besides {original}: {info}"));
    lead_on(&clients[0], "CARRY", &other).await;
    println!(
        "R3 led by {other} (was R1 on {original}) {:?} after the publish",
        published.elapsed()
    );

    // The duplicate window came along: the same message id is a duplicate of sequence 1.
    let again = publish_until_acked(
        &jetstream,
        "carry.a",
        "kept",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert!(again.duplicate, "not a duplicate on {other}: {again:?}");
    assert_eq!(again.sequence, 1);

    // The TTL came along: the brief message goes when its 15 s are up, and only then.
    assert!(
        published.elapsed() < TTL,
        "the scale-up took longer than the TTL: nothing left to check"
    );
    let state = stream_info(&clients[0], "CARRY").await;
    assert_eq!(state["state"]["messages"], 2, "{state}");
    let info = holding(&clients[0], "CARRY", 3, 1, TTL + Duration::from_secs(20)).await;
    assert!(published.elapsed() >= TTL, "gone before its TTL: {info}");
    every_member_holds(&clients[0], "CARRY", &info, 2, &[(1, "kept")]).await;
}

//! An R3 stream whose group has no leader answers as nats-server's does: with the stream leader
//! and one follower killed, a publish to the stream's subjects through the surviving replica
//! gets "no responders" at once (only a leader subscribes the stream's subjects), not silence
//! until the publisher's timeout; with two of three servers killed, the survivor answers the
//! requests that need the meta group with 10008.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, error_code, one_answer};
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes};
use crate::meta::{index_of, ELECTION_BOUND};

/// The surviving replica stops taking publishes within this after the others are killed.
const SETTLE: Duration = Duration::from_secs(10);
/// The survivor answers 10008 within this after the others are killed.
const META_SETTLE: Duration = Duration::from_secs(45);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_to_a_leaderless_r3_stream_gets_no_responders() {
    let (mut cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "ALONE", "alone.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_until_acked(
        &jetstream,
        "alone.x",
        "one",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(&clients[0], "ALONE", &names, 1).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let survivor = (0..3).find(|&i| i != leader).unwrap_or(0);
    for doomed in (0..3).filter(|&i| i != survivor) {
        cluster.kill9(doomed);
    }

    let client = &clients[survivor];
    let deadline = Instant::now() + SETTLE;
    loop {
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(2),
            client.request("alone.x", "two".into()),
        )
        .await;
        match answer {
            Ok(Err(error))
                if error.kind() == async_nats::client::RequestErrorKind::NoResponders =>
            {
                assert!(started.elapsed() < Duration::from_secs(1));
                break;
            }
            other => {
                let shown = other.map(|reply| reply.map(|message| message.payload));
                assert!(Instant::now() < deadline, "still {shown:?}");
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// With two of three servers killed, the survivor answers the requests that need the meta group
/// with 10008 "JetStream system temporarily unavailable", once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_meta_quorum_requests_get_cluster_not_available() {
    let (mut cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "HALF", "half.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_until_acked(&jetstream, "half.x", "one", Instant::now() + ELECTION_BOUND).await;
    settled_info(&clients[0], "HALF", &names, 1).await;
    cluster.kill9(1);
    cluster.kill9(2);
    let client = &clients[0];

    // The survivor notices: ours within the meta leader's quorum window (4 s); nats-server once
    // its meta group has run for its lost-quorum interval, silent until then.
    let deadline = Instant::now() + META_SETTLE;
    loop {
        let got = answers(client, "$JS.API.STREAM.NAMES", Value::Null).await;
        if got
            .first()
            .is_some_and(|answer| error_code(answer) == 10008)
        {
            break;
        }
        assert!(Instant::now() < deadline, "STREAM.NAMES still {got:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Asked all at once, each on its own inbox: every one must get exactly one 10008 (the
    // inboxes listen for a second answer in parallel instead of one after another).
    let requests = [
        ("$JS.API.STREAM.NAMES", Value::Null),
        ("$JS.API.INFO", Value::Null),
        (
            "$JS.API.STREAM.CREATE.OTHER",
            json!({"name": "OTHER", "subjects": ["other.>"], "num_replicas": 3}),
        ),
        ("$JS.API.STREAM.DELETE.HALF", Value::Null),
        ("$JS.API.STREAM.MSG.GET.HALF", json!({"seq": 1})),
        (
            "$JS.API.CONSUMER.DURABLE.CREATE.HALF.D1",
            json!({"stream_name": "HALF", "config": {"durable_name": "D1", "ack_policy": "explicit"}}),
        ),
        (
            "$JS.API.STREAM.UPDATE.HALF",
            json!({"name": "HALF", "subjects": ["half.>"], "num_replicas": 3, "max_msgs": 5}),
        ),
        ("$JS.API.STREAM.LIST", Value::Null),
        ("$JS.API.STREAM.MSG.DELETE.HALF", json!({"seq": 1})),
        (
            "$JS.API.CONSUMER.CREATE.HALF.C1",
            json!({"stream_name": "HALF", "config": {"name": "C1", "ack_policy": "explicit"}}),
        ),
        ("$JS.API.CONSUMER.INFO.HALF.D1", Value::Null),
        ("$JS.API.CONSUMER.NAMES.HALF", Value::Null),
        ("$JS.API.CONSUMER.LIST.HALF", Value::Null),
        ("$JS.API.CONSUMER.DELETE.HALF.D1", Value::Null),
        ("$JS.API.STREAM.INFO.NOPE", Value::Null),
    ];
    let asked = requests
        .iter()
        .map(|(subject, body)| one_answer(client, subject, body.clone()));
    let got = futures::future::join_all(asked).await;
    for ((subject, _), answer) in requests.iter().zip(got) {
        assert_eq!(answer["error"]["err_code"], 10008, "{subject}: {answer}");
        assert_eq!(answer["error"]["code"], 503, "{subject}: {answer}");
        assert_eq!(
            answer["error"]["description"], "JetStream system temporarily unavailable",
            "{subject}: {answer}"
        );
    }
}

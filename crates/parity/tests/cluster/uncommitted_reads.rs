//! An R3 stream's leader cut off from both other replicas (the link proxies blackhole its
//! routes) takes publishes it cannot commit; the next leader will store other messages at
//! those sequences. Reads answered through that server meanwhile (STREAM.INFO's state,
//! DIRECT.GET by sequence and last by subject) show the committed messages only, as
//! nats-server, whose leader stores a message only once it is committed (rnats' leader holds
//! the batch it proposes in its store: `stream/store.rs`'s committed view keeps it from readers).
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::LinkMode;

use crate::fault_schedule::proxied_jetstream_cluster;
use crate::jetstream_assignments::connect;
use crate::jetstream_replicated::{names_of, publish_until_acked, settled_info};
use crate::meta::{index_of, ELECTION_BOUND};

const STREAM: &str = "UNCOM";
const COMMITTED: u64 = 5;
/// How long the reads go on after the cut: well within the time either server keeps leading
/// without its quorum (ours 2 s, nats-server about 20 s here).
const WINDOW: Duration = Duration::from_millis(1000);

/// One request through `client` and its first answer, or `None` within half a second.
async fn ask(
    client: &async_nats::Client,
    subject: String,
    body: Value,
) -> Option<async_nats::Message> {
    let payload = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let answer = tokio::time::timeout(
        Duration::from_millis(500),
        client.request(subject, payload.into()),
    )
    .await;
    answer.ok().and_then(Result::ok)
}

/// The stream sequence a direct get answered with, or its status code.
fn direct_answer(message: &async_nats::Message) -> Result<u64, u16> {
    if let Some(status) = message.status {
        return Err(status.as_u16());
    }
    message
        .headers
        .as_ref()
        .and_then(|headers| headers.get("Nats-Sequence"))
        .and_then(|value| value.as_str().parse().ok())
        .ok_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_shows_only_committed_messages() {
    let cluster = proxied_jetstream_cluster("uncom");
    let names = names_of(&cluster);
    let control = connect(&cluster, 0).await;
    // With direct gets, which nats-server serves from every replica (rnats from the leader).
    let config = json!({"name": STREAM, "subjects": ["uncom.>"], "num_replicas": 3,
                        "storage": "file", "allow_direct": true});
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let created = ask(
            &control,
            format!("$JS.API.STREAM.CREATE.{STREAM}"),
            config.clone(),
        )
        .await
        .and_then(|message| serde_json::from_slice::<Value>(&message.payload).ok());
        match created {
            Some(answer) if answer.get("error").is_none() => break,
            // 10005 while nats-server's meta leader has not heard from every server; an
            // existing stream when an earlier unanswered attempt created it.
            Some(answer) if answer["error"]["err_code"] == 10058 => break,
            other => assert!(Instant::now() < deadline, "not created: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let jetstream = async_nats::jetstream::new(control.clone());
    for n in 1..=COMMITTED {
        let ack = publish_until_acked(
            &jetstream,
            "uncom.x",
            &format!("committed-{n}"),
            Instant::now() + ELECTION_BOUND,
        )
        .await;
        assert_eq!(ack.sequence, n);
    }
    let info = settled_info(&control, STREAM, &names, COMMITTED).await;
    let committed = info["state"].clone();
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let island = connect(&cluster, leader).await;

    for other in (0..3).filter(|&i| i != leader) {
        cluster.set_link(leader, other, LinkMode::Blackhole);
    }
    let cut = Instant::now();
    // Publishes the leader takes and cannot commit: no PubAck comes for them.
    let inbox = island.new_inbox();
    let mut pub_acks = island
        .subscribe(format!("{inbox}.*"))
        .await
        .expect("subscribe");
    for n in 1..=3 {
        island
            .publish_with_reply(
                "uncom.x",
                format!("{inbox}.{n}"),
                format!("uncommitted-{n}").into(),
            )
            .await
            .expect("publish");
    }
    island.flush().await.expect("flush");

    let mut infos = 0;
    let mut direct = 0;
    while cut.elapsed() < WINDOW {
        let subject = format!("$JS.API.STREAM.INFO.{STREAM}");
        if let Some(answer) = ask(&island, subject, Value::Null).await {
            let info: Value = serde_json::from_slice(&answer.payload).unwrap_or(Value::Null);
            if info.get("error").is_none() {
                infos += 1;
                for field in ["messages", "bytes", "last_seq", "last_ts"] {
                    assert_eq!(info["state"][field], committed[field], "{field}: {info}");
                }
            }
        }
        let by_seq = format!("$JS.API.DIRECT.GET.{STREAM}");
        if let Some(answer) = ask(&island, by_seq, json!({"seq": COMMITTED + 1})).await {
            assert_eq!(
                direct_answer(&answer),
                Err(404),
                "sequence {}",
                COMMITTED + 1
            );
            direct += 1;
        }
        let last = format!("$JS.API.DIRECT.GET.{STREAM}.uncom.x");
        if let Some(answer) = ask(&island, last, Value::Null).await {
            assert_eq!(direct_answer(&answer), Ok(COMMITTED), "last by subject");
            direct += 1;
        }
    }
    println!("through the cut-off leader: {infos} STREAM.INFO and {direct} DIRECT.GET answers");
    assert!(
        infos > 0 && direct > 0,
        "{infos} STREAM.INFO, {direct} DIRECT.GET answered"
    );
    let acked = tokio::time::timeout(Duration::from_millis(10), pub_acks.next()).await;
    assert!(acked.is_err(), "a PubAck without a quorum: {acked:?}");
}

//! Every kind of consumer state change (first delivery, ack, nak and redelivery, term, a message
//! past max_deliver, a purge under pending messages) reaches disk through the incremental state
//! flush: after each graceful restart the consumer reports exactly what it reported before.
//! Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

/// The parts of CONSUMER.INFO that are persisted state.
fn persisted(info: &Value) -> Value {
    json!({
        "delivered": [info["delivered"]["consumer_seq"], info["delivered"]["stream_seq"]],
        "ack_floor": [info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]],
        "num_ack_pending": info["num_ack_pending"],
        "num_redelivered": info["num_redelivered"],
        "num_pending": info["num_pending"],
    })
}

async fn info(server: &TestServer) -> Value {
    let client = connect(server).await;
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.D", "").await;
    assert!(info.get("error").is_none(), "{info}");
    persisted(&info)
}

/// Fetch up to `count` messages; returns (stream sequence, delivery count, ack subject).
async fn fetch(server: &TestServer, count: usize) -> Vec<(u64, i64, String)> {
    let client = connect(server).await;
    let consumer: jetstream::consumer::PullConsumer = jetstream::new(client)
        .get_stream("S")
        .await
        .unwrap()
        .get_consumer("D")
        .await
        .unwrap();
    let mut batch = consumer
        .fetch()
        .max_messages(count)
        .messages()
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        let message = message.unwrap();
        let info = message.info().unwrap();
        let reply = message.reply.as_ref().unwrap().to_string();
        out.push((info.stream_sequence, info.delivered, reply));
    }
    out
}

/// An ack of any kind, confirmed by the server's empty reply.
async fn ack(server: &TestServer, subject: &str, kind: &'static str) {
    let client = connect(server).await;
    timeout(TIMEOUT, client.request(subject.to_string(), kind.into()))
        .await
        .expect("ack reply in time")
        .expect("ack reply");
}

fn subject_of(delivered: &[(u64, i64, String)], seq: u64) -> String {
    delivered
        .iter()
        .find(|(stream_seq, _, _)| *stream_seq == seq)
        .map(|(_, _, subject)| subject.clone())
        .unwrap_or_else(|| panic!("seq {seq} not delivered: {delivered:?}"))
}

#[tokio::test]
async fn every_kind_of_change_survives_restarts() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 20).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.D",
        &json!({"stream_name": "S", "config": {
            "durable_name": "D", "ack_policy": "explicit", "ack_wait": 30_000_000_000u64,
            "max_deliver": 3,
        }})
        .to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    drop(client);

    // Phase 1: acks in and out of order, a nak redelivered, a term, messages left pending.
    let first = fetch(&server, 10).await;
    assert_eq!(first.len(), 10);
    for seq in [1, 2, 3, 5] {
        ack(&server, &subject_of(&first, seq), "+ACK").await;
    }
    ack(&server, &subject_of(&first, 4), "-NAK").await;
    ack(&server, &subject_of(&first, 6), "+TERM").await;
    let redelivered = fetch(&server, 1).await;
    assert_eq!(redelivered.len(), 1);
    assert_eq!(redelivered[0].0, 4);
    assert_eq!(redelivered[0].1, 2);
    let before = info(&server).await;
    assert_eq!(before["ack_floor"], json!([3, 3]), "{before}");
    assert_eq!(before["num_ack_pending"], 5, "{before}");
    assert_eq!(before["num_redelivered"], 1, "{before}");
    server.restart();
    assert_eq!(info(&server).await, before, "after the first restart");

    // Phase 2: acks with subjects from before the restart, a message driven past
    // max_deliver, then a purge under the pending ones.
    for seq in [7, 8] {
        ack(&server, &subject_of(&first, seq), "+ACK").await;
    }
    ack(&server, &redelivered[0].2, "-NAK").await;
    let third = fetch(&server, 1).await;
    assert_eq!(third.len(), 1);
    assert_eq!((third[0].0, third[0].1), (4, 3));
    ack(&server, &third[0].2, "-NAK").await;
    let client = connect(&server).await;
    let purged = api(&client, "$JS.API.STREAM.PURGE.S", r#"{"seq":10}"#).await;
    assert_eq!(purged["success"], true, "{purged}");
    let more = fetch(&server, 3).await;
    assert_eq!(
        more.iter().map(|(seq, _, _)| *seq).collect::<Vec<_>>(),
        [11, 12, 13]
    );
    ack(&server, &subject_of(&more, 12), "+ACK").await;
    let before = info(&server).await;
    assert_eq!(before["delivered"][1], 13, "{before}");
    server.restart();
    assert_eq!(info(&server).await, before, "after the second restart");

    // The cursor goes on where it was: only new messages (the pending ones wait for ack_wait).
    let rest = fetch(&server, 20).await;
    let seqs: Vec<u64> = rest.iter().map(|(seq, _, _)| *seq).collect();
    assert_eq!(seqs, (14..=20).collect::<Vec<u64>>());
}

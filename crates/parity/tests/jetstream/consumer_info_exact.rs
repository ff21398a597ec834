//! CONSUMER.INFO is exact at every moment: acks published fire-and-forget on a connection are
//! reflected by an INFO request sent after them on the same connection.
//! Runs against ours or the real nats-server (`NATS_SERVER_BIN`). nats-server 2.15.1 queues acks
//! apart from API requests and answers such an INFO with the acks unapplied (seen in every run),
//! so against it the test waits for the acks to land; against ours the first answer must be exact.

use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use serde_json::json;
use serde_json::Value;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

#[tokio::test]
async fn info_after_plain_acks_reflects_them() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    let response = api(
        &client,
        "$JS.API.STREAM.CREATE.EXACT",
        &json!({"name": "EXACT", "subjects": ["exact.>"]}).to_string(),
    )
    .await;
    assert!(response.get("error").is_none(), "{response}");
    let stream = context.get_stream("EXACT").await.unwrap();
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("reader".into()),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    // Several rounds: the race this guards against showed up about once in three.
    for round in 0..20u64 {
        for index in 0..3 {
            context
                .publish(format!("exact.{index}"), "x".into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
        let mut batch = consumer.fetch().max_messages(3).messages().await.unwrap();
        let mut received = 0;
        while let Some(message) = timeout(TIMEOUT, batch.next()).await.expect("fetch in time") {
            // A plain publish, no reply awaited.
            message.unwrap().ack().await.unwrap();
            received += 1;
        }
        assert_eq!(received, 3);
        let floor = (round + 1) * 3;
        let info = info_after_acks(&client, floor).await;
        assert_eq!(info["num_ack_pending"], 0, "round {round}: {info}");
        assert_eq!(info["num_pending"], 0, "round {round}: {info}");
        assert_eq!(
            info["ack_floor"]["stream_seq"], floor,
            "round {round}: {info}"
        );
        assert_eq!(
            info["ack_floor"]["consumer_seq"], floor,
            "round {round}: {info}"
        );
        assert_eq!(
            info["delivered"]["stream_seq"], floor,
            "round {round}: {info}"
        );
    }
}

/// The first INFO answer (ours), or the first one with every ack applied (reference server).
async fn info_after_acks(client: &async_nats::Client, floor: u64) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let info = api(client, "$JS.API.CONSUMER.INFO.EXACT.reader", "").await;
        let settled = info["ack_floor"]["stream_seq"] == floor;
        if settled || !test_harness::is_reference() || tokio::time::Instant::now() >= deadline {
            return info;
        }
    }
}

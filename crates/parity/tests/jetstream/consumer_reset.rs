//! `$JS.API.CONSUMER.RESET.<stream>.<consumer>`: back to the ack floor or to a sequence the
//! deliver policy allows, its errors, silence for a missing consumer, and delivery restarting
//! from the new position. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

async fn setup(client: &async_nats::Client, count: usize) {
    stream_s(client, count).await;
    for (name, extra) in [
        ("A", json!({})),
        ("N", json!({"deliver_policy": "new"})),
        (
            "Q",
            json!({"deliver_policy": "by_start_sequence", "opt_start_seq": 3}),
        ),
    ] {
        let mut config = extra;
        config["durable_name"] = json!(name);
        config["ack_policy"] = json!("explicit");
        let created = api(
            client,
            &format!("$JS.API.CONSUMER.CREATE.S.{name}"),
            &json!({"stream_name": "S", "config": config}).to_string(),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
}

async fn reset(client: &async_nats::Client, consumer: &str, body: &str) -> Value {
    api(
        client,
        &format!("$JS.API.CONSUMER.RESET.S.{consumer}"),
        body,
    )
    .await
}

#[tokio::test]
async fn reset_checks_the_deliver_policy_and_reports_errors() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    setup(&client, 6).await;
    let to_floor = reset(&client, "N", "").await;
    assert_eq!(
        to_floor["type"],
        "io.nats.jetstream.api.v1.consumer_reset_response"
    );
    assert_eq!(to_floor["reset_seq"], 7, "{to_floor}");
    assert_eq!(to_floor["name"], "N");
    assert_eq!(to_floor["delivered"]["stream_seq"], 6);
    let invalid = |reason: &str| json!({"type": "io.nats.jetstream.api.v1.consumer_reset_response", "error": {"code": 400, "err_code": 10204, "description": format!("invalid reset: {reason}")}, "reset_seq": 0});
    assert_eq!(
        reset(&client, "N", r#"{"seq":2}"#).await,
        invalid("not allowed")
    );
    assert_eq!(
        reset(&client, "Q", r#"{"seq":2}"#).await,
        invalid("below start seq")
    );
    let forward = reset(&client, "Q", r#"{"seq":4}"#).await;
    assert_eq!(forward["reset_seq"], 4);
    assert_eq!(forward["ack_floor"]["stream_seq"], 3);
    assert_eq!(forward["num_pending"], 3);
    assert_eq!(
        reset(&client, "A", r#"{"seq":"x"}"#).await["error"]["description"],
        "invalid JSON: json: cannot unmarshal string into Go struct field JSApiConsumerResetRequest.seq of type uint64"
    );
    assert_eq!(
        reset(&client, "A", "[]").await["error"]["description"],
        "invalid JSON: json: cannot unmarshal array into Go value of type server.JSApiConsumerResetRequest"
    );
    let unknown_field = reset(&client, "A", r#"{"bogus":1}"#).await;
    assert_eq!(unknown_field["reset_seq"], 1, "{unknown_field}");
    let past_the_end = reset(&client, "A", r#"{"seq":99}"#).await;
    assert_eq!(past_the_end["reset_seq"], 99);
    assert_eq!(past_the_end["num_pending"], 0);
    // The consumer itself answers: a missing one (or stream) leaves the request unanswered.
    for subject in [
        "$JS.API.CONSUMER.RESET.S.NOPE",
        "$JS.API.CONSUMER.RESET.NOPE.A",
    ] {
        let answer = timeout(
            Duration::from_millis(500),
            client.request(subject.to_string(), "".into()),
        )
        .await;
        assert!(
            !matches!(answer, Ok(Ok(_))),
            "{subject} answered: {answer:?}"
        );
    }
}

#[tokio::test]
async fn delivery_restarts_from_the_reset_position() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    setup(&client, 6).await;
    let context = jetstream::new(client.clone());
    let mut consumer: jetstream::consumer::PullConsumer = context
        .get_stream("S")
        .await
        .unwrap()
        .get_consumer("A")
        .await
        .unwrap();
    let mut batch = consumer.fetch().max_messages(3).messages().await.unwrap();
    let mut first = Vec::new();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        first.push(message.unwrap());
    }
    assert_eq!(first.len(), 3);
    first[0].double_ack().await.unwrap();
    // Back to the ack floor: the unacknowledged two come again, as first deliveries.
    let response = consumer.reset(None).await.unwrap();
    assert_eq!(response.reset_seq, 2);
    assert_eq!(response.info.num_ack_pending, 0);
    assert_eq!(response.info.delivered.consumer_sequence, 0);
    // An ack of a delivery from before the reset changes nothing.
    first[2].ack().await.unwrap();
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.A", "").await;
    assert_eq!(info["ack_floor"]["stream_seq"], 1, "{info}");
    assert_eq!(info["num_pending"], 5);
    let mut again = consumer.fetch().max_messages(2).messages().await.unwrap();
    let mut payloads = Vec::new();
    while let Some(message) = timeout(TIMEOUT, again.next()).await.unwrap() {
        let message = message.unwrap();
        let info = message.info().unwrap();
        payloads.push((
            String::from_utf8(message.payload.to_vec()).unwrap(),
            info.delivered,
            info.consumer_sequence,
        ));
    }
    assert_eq!(
        payloads,
        [("m1".to_string(), 1, 1), ("m2".to_string(), 1, 2)]
    );
    // Forward past unacknowledged messages.
    let response = consumer.reset(Some(6)).await.unwrap();
    assert_eq!(response.reset_seq, 6);
    let mut last = consumer.fetch().max_messages(5).messages().await.unwrap();
    let message = timeout(TIMEOUT, last.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(message.payload, "m5");
}

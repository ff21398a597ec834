//! Consumer state survives a graceful stop and a SIGKILL: acked messages stay acked, unacked
//! ones come back, the cursor continues where it was. Ephemeral consumers go away after their
//! inactive threshold. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

async fn setup(server: &TestServer) -> jetstream::consumer::PullConsumer {
    let client = connect(server).await;
    let context = jetstream::new(client.clone());
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.K",
        &json!({"name": "K", "subjects": ["k.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    for index in 0..10 {
        context
            .publish(format!("k.{index}"), format!("m{index}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    context
        .get_stream("K")
        .await
        .unwrap()
        .create_consumer(pull::Config {
            durable_name: Some("D".into()),
            ack_wait: Duration::from_millis(500),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// Fetch 5, ack the first 3 (acks confirmed by the server).
async fn consume_some(consumer: &jetstream::consumer::PullConsumer) {
    let mut batch = consumer.fetch().max_messages(5).messages().await.unwrap();
    let mut index = 0;
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        let message = message.unwrap();
        if index < 3 {
            message.double_ack().await.unwrap();
        }
        index += 1;
    }
    assert_eq!(index, 5);
}

/// Everything delivered after the restart, acked, in delivery order.
async fn consume_rest(server: &TestServer) -> (Value, Vec<String>) {
    let client = connect(server).await;
    let context = jetstream::new(client.clone());
    let info = api(&client, "$JS.API.CONSUMER.INFO.K.D", "").await;
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("K")
        .await
        .unwrap()
        .get_consumer("D")
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 7 {
        let mut batch = consumer
            .batch()
            .max_messages(10)
            .expires(Duration::from_secs(2))
            .messages()
            .await
            .unwrap();
        while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
            let message = message.unwrap();
            seen.push(String::from_utf8(message.payload.to_vec()).unwrap());
            message.double_ack().await.unwrap();
        }
    }
    (info, seen)
}

#[tokio::test]
async fn graceful_restart_keeps_acks_and_pending() {
    let mut server = TestServer::jetstream();
    let consumer = setup(&server).await;
    consume_some(&consumer).await;
    server.restart();
    let (info, mut seen) = consume_rest(&server).await;
    assert_eq!(info["ack_floor"]["stream_seq"], 3, "{info}");
    assert_eq!(info["delivered"]["stream_seq"], 5, "{info}");
    assert_eq!(info["num_ack_pending"], 2, "{info}");
    assert_eq!(info["num_pending"], 5, "{info}");
    seen.sort();
    assert_eq!(seen, ["m3", "m4", "m5", "m6", "m7", "m8", "m9"]);
}

#[tokio::test]
async fn sigkill_loses_no_unacked_message() {
    let mut server = TestServer::jetstream();
    let consumer = setup(&server).await;
    consume_some(&consumer).await;
    // An answered AckSync is a promise: ours is killed at once. nats-server writes consumer
    // state in the background after answering; it is given a moment, as an idle server would.
    if test_harness::is_reference() {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    server.kill9();
    server.restart();
    let (info, mut seen) = consume_rest(&server).await;
    assert_eq!(info["ack_floor"]["stream_seq"], 3, "{info}");
    seen.sort();
    assert_eq!(seen, ["m3", "m4", "m5", "m6", "m7", "m8", "m9"]);
}

#[tokio::test]
async fn ephemeral_goes_away_after_inactive_threshold() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.E",
        &json!({"name": "E", "subjects": ["e.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let ephemeral = api(
        &client,
        "$JS.API.CONSUMER.CREATE.E.gone",
        r#"{"stream_name":"E","config":{"name":"gone","ack_policy":"explicit","inactive_threshold":500000000}}"#,
    )
    .await;
    assert!(ephemeral.get("error").is_none(), "{ephemeral}");
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let info = api(&client, "$JS.API.CONSUMER.INFO.E.gone", "").await;
        if info["error"]["err_code"] == 10014 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still there: {info}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn deliver_new_start_survives_an_immediate_sigkill() {
    let mut server = TestServer::jetstream();
    let consumer = setup(&server).await;
    drop(consumer);
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.K.NEW",
        r#"{"stream_name":"K","config":{"durable_name":"NEW","ack_policy":"explicit","deliver_policy":"new"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    server.kill9();
    server.restart();
    let client = connect(&server).await;
    let info = api(&client, "$JS.API.CONSUMER.INFO.K.NEW", "").await;
    assert_eq!(info["delivered"]["stream_seq"], 10, "{info}");
    assert_eq!(info["num_pending"], 0, "{info}");
}

/// An ephemeral created without a name gets one from the server, shown as the consumer's `name`
/// but not in its `config` (create, info, list); one created with a name shows it in both. Ours
/// once put the generated name in the config too.
#[tokio::test]
async fn a_generated_ephemeral_name_stays_out_of_the_config() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.G",
        &json!({"name": "G", "subjects": ["g.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let ephemeral = api(
        &client,
        "$JS.API.CONSUMER.CREATE.G",
        r#"{"stream_name":"G","config":{"ack_policy":"explicit","inactive_threshold":60000000000}}"#,
    )
    .await;
    let name = ephemeral["name"].as_str().unwrap_or("").to_string();
    assert!(!name.is_empty(), "{ephemeral}");
    assert!(ephemeral["config"].get("name").is_none(), "{ephemeral}");
    let info = api(&client, &format!("$JS.API.CONSUMER.INFO.G.{name}"), "").await;
    assert_eq!(info["name"], name.as_str(), "{info}");
    assert!(info["config"].get("name").is_none(), "{info}");
    let named = api(
        &client,
        "$JS.API.CONSUMER.CREATE.G.NAMED",
        r#"{"stream_name":"G","config":{"name":"NAMED","ack_policy":"explicit","inactive_threshold":60000000000}}"#,
    )
    .await;
    assert_eq!(named["config"]["name"], "NAMED", "{named}");
    let listed = api(&client, "$JS.API.CONSUMER.LIST.G", "{}").await;
    let consumers = listed["consumers"].as_array().cloned().unwrap_or_default();
    assert_eq!(consumers.len(), 2, "{listed}");
    for consumer in consumers {
        let shown = consumer["config"].get("name").cloned();
        if consumer["name"] == "NAMED" {
            assert_eq!(shown, Some(json!("NAMED")), "{consumer}");
        } else {
            assert_eq!(shown, None, "{consumer}");
        }
    }
}

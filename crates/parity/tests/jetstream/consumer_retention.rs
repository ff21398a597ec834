//! Retention driven by consumers: interest streams drop a message once every interested
//! consumer acked it (and when the last interested consumer goes), work-queue streams drop it on
//! ack, limits streams keep everything. Runs against ours or the real nats-server.

use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

async fn stream_messages(client: &async_nats::Client, stream: &str) -> u64 {
    let info: Value = api(client, &format!("$JS.API.STREAM.INFO.{stream}"), "").await;
    info["state"]["messages"].as_u64().unwrap()
}

async fn wait_messages(client: &async_nats::Client, stream: &str, expected: u64) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let current = stream_messages(client, stream).await;
        if current == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "stream {stream} holds {current}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn consumer(
    stream: &jetstream::stream::Stream,
    name: &str,
    filter: &str,
) -> jetstream::consumer::PullConsumer {
    stream
        .create_consumer(pull::Config {
            durable_name: Some(name.into()),
            filter_subject: filter.into(),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// Fetch everything available and ack it (ack sync, so the server has it on return).
async fn drain(consumer: &jetstream::consumer::PullConsumer) -> usize {
    let mut count = 0;
    let mut batch = consumer.fetch().max_messages(100).messages().await.unwrap();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        message.unwrap().double_ack().await.unwrap();
        count += 1;
    }
    count
}

async fn publish(context: &jetstream::Context, subject: &str) {
    context
        .publish(subject.to_string(), "x".into())
        .await
        .unwrap()
        .await
        .unwrap();
}

#[tokio::test]
async fn interest_stream_drops_after_every_interested_consumer_acked() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.I",
        &json!({"name": "I", "subjects": ["i.>"], "retention": "interest"}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let stream = context.get_stream("I").await.unwrap();
    let all = consumer(&stream, "all", "").await;
    let only_a = consumer(&stream, "only_a", "i.a").await;
    for subject in ["i.a", "i.a", "i.b", "i.b", "i.a"] {
        publish(&context, subject).await;
    }
    assert_eq!(stream_messages(&client, "I").await, 5);
    assert_eq!(drain(&all).await, 5);
    // i.b had only `all` interested; i.a still waits for `only_a`.
    wait_messages(&client, "I", 3).await;
    assert_eq!(drain(&only_a).await, 3);
    wait_messages(&client, "I", 0).await;

    // Deleting the only consumer that still needs messages releases them.
    publish(&context, "i.a").await;
    assert_eq!(drain(&all).await, 1);
    wait_messages(&client, "I", 1).await;
    let deleted = api(&client, "$JS.API.CONSUMER.DELETE.I.only_a", "").await;
    assert_eq!(deleted["success"], true, "{deleted}");
    wait_messages(&client, "I", 0).await;
}

#[tokio::test]
async fn work_queue_drops_on_ack_and_limits_keep() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    for (name, retention) in [("WQ", "workqueue"), ("L", "limits")] {
        let created = api(
            &client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &json!({"name": name, "subjects": [format!("{}.>", name.to_lowercase())], "retention": retention})
                .to_string(),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
    for _ in 0..4 {
        publish(&context, "wq.x").await;
        publish(&context, "l.x").await;
    }
    let work = consumer(&context.get_stream("WQ").await.unwrap(), "w", "").await;
    let limits = consumer(&context.get_stream("L").await.unwrap(), "l", "").await;
    assert_eq!(drain(&work).await, 4);
    assert_eq!(drain(&limits).await, 4);
    wait_messages(&client, "WQ", 0).await;
    assert_eq!(stream_messages(&client, "L").await, 4);
}

#[tokio::test]
async fn interest_stream_with_ack_none_consumer_drops_on_delivery() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.AN",
        &json!({"name": "AN", "subjects": ["an.>"], "retention": "interest"}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("AN")
        .await
        .unwrap()
        .create_consumer(pull::Config {
            durable_name: Some("none".into()),
            ack_policy: jetstream::consumer::AckPolicy::None,
            ..Default::default()
        })
        .await
        .unwrap();
    for _ in 0..3 {
        publish(&context, "an.x").await;
    }
    assert_eq!(stream_messages(&client, "AN").await, 3);
    let mut batch = consumer.fetch().max_messages(10).messages().await.unwrap();
    let mut count = 0;
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        message.unwrap();
        count += 1;
    }
    assert_eq!(count, 3);
    wait_messages(&client, "AN", 0).await;
}

//! Push consumers and the interest on their deliver subject: delivery starts when a subscriber
//! appears (routing wakes the consumer; nothing polls), stops while there is none, and an
//! ephemeral one with no subscriber is inactive and goes away after its inactive_threshold.
//! Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream;
use futures::StreamExt;
use std::time::{Duration, Instant};
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

#[tokio::test]
async fn delivery_starts_when_a_subscriber_appears_and_pauses_without_one() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 3).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.D",
        r#"{"stream_name":"S","config":{"durable_name":"D","deliver_subject":"late.out","ack_policy":"none"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    assert!(created.get("push_bound").is_none(), "{created}");
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.D", "").await;
    assert_eq!(
        info["delivered"]["stream_seq"], 0,
        "nothing without a subscriber"
    );
    let watcher = connect(&server).await;
    let mut deliveries = watcher.subscribe("late.out").await.unwrap();
    for index in 0..3 {
        let message = timeout(TIMEOUT, deliveries.next()).await.unwrap().unwrap();
        assert_eq!(message.payload, format!("m{index}"));
    }
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.D", "").await;
    assert_eq!(info["push_bound"], true, "{info}");
    // The subscriber leaves: new messages wait for the next one.
    deliveries.unsubscribe().await.unwrap();
    watcher.flush().await.unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let info = api(&client, "$JS.API.CONSUMER.INFO.S.D", "").await;
        if info.get("push_bound").is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "still bound: {info}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    jetstream::new(client.clone())
        .publish("s.late", "later".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.D", "").await;
    assert_eq!(info["num_pending"], 1, "{info}");
    let mut again = watcher.subscribe("late.out").await.unwrap();
    let message = timeout(TIMEOUT, again.next()).await.unwrap().unwrap();
    assert_eq!(message.payload, "later");
}

#[tokio::test]
async fn an_ephemeral_push_consumer_without_subscriber_is_removed_after_its_threshold() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 1).await;
    let watcher = connect(&server).await;
    let mut deliveries = watcher.subscribe("eph.out").await.unwrap();
    watcher.flush().await.unwrap();
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.E",
        r#"{"stream_name":"S","config":{"name":"E","deliver_subject":"eph.out","ack_policy":"none","inactive_threshold":300000000}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    timeout(TIMEOUT, deliveries.next()).await.unwrap().unwrap();
    // Bound: well past the threshold it is still there.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.E", "").await;
    assert!(info.get("error").is_none(), "{info}");
    deliveries.unsubscribe().await.unwrap();
    watcher.flush().await.unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let info = api(&client, "$JS.API.CONSUMER.INFO.S.E", "").await;
        if info["error"]["err_code"] == 10014 {
            break;
        }
        assert!(Instant::now() < deadline, "never removed: {info}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

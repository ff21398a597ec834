//! The server-wide batch publish limits of `jetstream { limits { batch { ... } } }`
//! (`max_inflight_per_stream`, `max_inflight_total`, `max_msgs`, `timeout`): lowered limits
//! refuse atomic and fast batches with nats-server 2.15.1's errors, abandon an idle batch
//! after the configured timeout, and show in `/jsz` and `/varz`. Runs against ours or the real
//! nats-server (`NATS_SERVER_BIN`).

use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::client::{connect, create_stream, publish_raw, TIMEOUT};
use test_harness::monitoring::get_json;
use test_harness::{ServerOptions, TestServer};

/// At most 3 messages per atomic batch, one open batch per stream, idle batches dropped after
/// one second.
const LOWERED_LIMITS: &str =
    "jetstream { limits { batch { max_msgs: 3, max_inflight_per_stream: 1, timeout: \"1s\" } } }\n";

fn server_with_lowered_limits() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        monitoring: true,
        config: Some(LOWERED_LIMITS.to_string()),
        ..Default::default()
    })
}

/// One atomic batch message; the raw reply.
async fn atomic(client: &async_nats::Client, id: &str, sequence: u64, commit: bool) -> String {
    let sequence = sequence.to_string();
    let mut headers = vec![("Nats-Batch-Id", id), ("Nats-Batch-Sequence", &sequence)];
    if commit {
        headers.push(("Nats-Batch-Commit", "1"));
    }
    publish_raw(client, "a.1", &headers, "x").await
}

/// Stream `A` on `a.>` with atomic batches allowed.
async fn atomic_stream(client: &async_nats::Client) {
    create_stream(
        client,
        json!({"name": "A", "subjects": ["a.>"], "allow_atomic": true}),
    )
    .await;
}

fn error(code: u16, err_code: u32, description: &str, stream: &str) -> String {
    format!(
        r#"{{"error":{{"code":{code},"err_code":{err_code},"description":"{description}"}},"stream":"{stream}","seq":0}}"#
    )
}

#[tokio::test]
async fn atomic_batches_obey_the_configured_size_and_inflight_limits() {
    let server = server_with_lowered_limits();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    let too_large = error(400, 10199, "atomic publish batch is too large: 3", "A");
    let too_many = error(429, 10210, "atomic publish too many inflight", "A");
    // A batch of exactly the limit commits.
    assert_eq!(atomic(&client, "full", 1, false).await, "");
    assert_eq!(atomic(&client, "full", 2, false).await, "");
    assert_eq!(
        atomic(&client, "full", 3, true).await,
        r#"{"stream":"A","seq":3,"batch":"full","count":3}"#
    );
    // One open batch fills the stream's quota.
    assert_eq!(atomic(&client, "first", 1, false).await, "");
    assert_eq!(atomic(&client, "second", 1, false).await, too_many);
    // A fourth message abandons the batch with the configured size in the error.
    assert_eq!(atomic(&client, "first", 2, false).await, "");
    assert_eq!(atomic(&client, "first", 3, false).await, "");
    assert_eq!(atomic(&client, "first", 4, false).await, too_large);
    // A message beyond the limit for a batch that is not open names the size too.
    assert_eq!(atomic(&client, "gone", 4, false).await, too_large);
    assert_eq!(
        atomic(&client, "gone", 3, false).await,
        error(400, 10176, "atomic publish batch is incomplete", "A")
    );
    // The abandoned batch freed the quota.
    assert_eq!(
        atomic(&client, "second", 1, true).await,
        r#"{"stream":"A","seq":4,"batch":"second","count":1}"#
    );
}

#[tokio::test]
async fn an_idle_atomic_batch_is_abandoned_after_the_configured_timeout() {
    let server = server_with_lowered_limits();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    let mut advisories = client
        .subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.A")
        .await
        .expect("subscribe");
    client.flush().await.expect("flush");
    assert_eq!(atomic(&client, "idle", 1, false).await, "");
    // nats-server's default would keep it for 10 s, beyond this wait.
    let advisory = tokio::time::timeout(std::time::Duration::from_secs(5), advisories.next())
        .await
        .expect("abandoned within the configured timeout")
        .expect("subscription open");
    let advisory: Value = serde_json::from_slice(&advisory.payload).expect("json advisory");
    assert_eq!(advisory["batch"], "idle");
    assert_eq!(advisory["reason"], "timeout");
    assert_eq!(
        atomic(&client, "idle", 2, true).await,
        error(400, 10176, "atomic publish batch is incomplete", "A")
    );
}

#[tokio::test]
async fn fast_batches_share_the_inflight_limit_but_not_the_size() {
    let server = server_with_lowered_limits();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "F", "subjects": ["f.>"], "allow_batched": true}),
    )
    .await;
    let mut replies = client.subscribe("_FB.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    let send = |batch: &'static str, seq: u64, op: u8| {
        let client = client.clone();
        async move {
            client
                .publish_with_reply(
                    "f.1",
                    format!("_FB.{batch}.10.fail.{seq}.{op}.$FI"),
                    Bytes::from_static(b"x"),
                )
                .await
                .expect("publish");
        }
    };
    // Five messages: max_msgs bounds atomic batches only.
    send("long", 1, 0).await;
    send("other", 1, 0).await;
    for seq in 2..=4 {
        send("long", seq, 1).await;
    }
    send("long", 5, 2).await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        let reply = tokio::time::timeout(TIMEOUT, replies.next())
            .await
            .expect("a reply in time")
            .expect("subscription open");
        answers.push((
            reply.subject.to_string(),
            String::from_utf8_lossy(&reply.payload).to_string(),
        ));
    }
    assert_eq!(
        answers,
        vec![
            (
                "_FB.long.10.fail.1.0.$FI".to_string(),
                r#"{"type":"ack","seq":0,"msgs":10}"#.to_string()
            ),
            (
                "_FB.other.10.fail.1.0.$FI".to_string(),
                error(429, 10211, "batch publish too many inflight", "F")
            ),
            (
                "_FB.long.10.fail.5.2.$FI".to_string(),
                r#"{"stream":"F","seq":5,"batch":"long","count":5}"#.to_string()
            ),
        ]
    );
}

#[tokio::test]
async fn jsz_and_varz_report_the_configured_limits() {
    let server = server_with_lowered_limits();
    let expected = json!({
        "max_batch_inflight_per_stream": 1,
        "max_batch_size": 3,
        "max_batch_timeout": 1_000_000_000i64,
        "default_max_consumers": 1000,
    });
    assert_eq!(get_json(&server, "/jsz")["limits"], expected);
    assert_eq!(get_json(&server, "/varz")["jetstream"]["limits"], expected);
}

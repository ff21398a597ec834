//! Many consumers on one stream, and filtered consumers on a stream with many subjects: creation
//! stays cheap and `num_pending` is exact (from the store's per-subject index, not a scan).
//! The quick test runs everywhere; the full-size one (10k durables, 1M subjects) is a
//! measurement, ignored by default. Runs against ours or the real nats-server
//! (`NATS_SERVER_BIN`).

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;

async fn create_stream(client: &async_nats::Client, storage: &str) {
    let created = api(
        client,
        "$JS.API.STREAM.CREATE.S",
        // Past the default limit of 1000 consumers per stream (nats-server's too).
        &json!({"name": "S", "subjects": ["s.>"], "storage": storage, "max_consumers": 20_000})
            .to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
}

/// `count` messages on `subjects` distinct subjects (`s.<n>`), acks awaited in windows so no
/// server drops a publish for being too far behind.
async fn fill(client: &async_nats::Client, count: usize, subjects: usize) {
    let context = async_nats::jetstream::new(client.clone());
    let mut window = Vec::with_capacity(1000);
    for index in 0..count {
        window.push(
            context
                .publish(format!("s.{}", index % subjects), "x".into())
                .await
                .unwrap(),
        );
        if window.len() == 1000 || index + 1 == count {
            for ack in window.drain(..) {
                ack.await.unwrap();
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let info = api(client, "$JS.API.STREAM.INFO.S", "").await;
        if info["state"]["messages"] == count {
            return;
        }
        assert!(Instant::now() < deadline, "stream never filled: {info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn create_durable(client: &async_nats::Client, name: &str, filter: Option<&str>) -> Value {
    let mut config = json!({"durable_name": name, "ack_policy": "explicit"});
    if let Some(filter) = filter {
        config["filter_subject"] = json!(filter);
    }
    let created = api(
        client,
        &format!("$JS.API.CONSUMER.CREATE.S.{name}"),
        &json!({"stream_name": "S", "config": config}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    created
}

#[tokio::test]
async fn hundreds_of_filtered_durables_have_exact_pending_counts() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(&client, "memory").await;
    fill(&client, 3000, 1000).await;
    for index in 0..300 {
        let created =
            create_durable(&client, &format!("C{index}"), Some(&format!("s.{index}"))).await;
        assert_eq!(created["num_pending"], 3, "{created}");
    }
    let wildcard = create_durable(&client, "ALL", Some("s.*")).await;
    assert_eq!(wildcard["num_pending"], 3000);
    let names = api(&client, "$JS.API.CONSUMER.NAMES.S", "").await;
    assert_eq!(names["total"], 301);
    let page = api(&client, "$JS.API.CONSUMER.LIST.S", r#"{"offset":256}"#).await;
    assert_eq!(page["consumers"].as_array().map(Vec::len), Some(45));
    let info = api(&client, "$JS.API.STREAM.INFO.S", "").await;
    assert_eq!(info["state"]["consumer_count"], 301);
}

/// Prints creation and info times; compare runs of ours and nats-server on the same machine.
#[tokio::test]
#[ignore = "measurement: 10k file durables and a 1M-subject stream take minutes in debug; run with --release -- --ignored --nocapture"]
async fn ten_thousand_durables_and_a_million_subjects() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(&client, "file").await;
    fill(&client, 1_000_000, 1_000_000).await;
    let started = Instant::now();
    for index in 0..100 {
        let created =
            create_durable(&client, &format!("F{index}"), Some(&format!("s.{index}"))).await;
        assert_eq!(created["num_pending"], 1);
    }
    let filtered = started.elapsed();
    let started = Instant::now();
    let wide = create_durable(&client, "WIDE", Some("s.*")).await;
    assert_eq!(wide["num_pending"], 1_000_000);
    let wide_create = started.elapsed();
    let started = Instant::now();
    for _ in 0..100 {
        let info = tokio::time::timeout(TIMEOUT, api(&client, "$JS.API.CONSUMER.INFO.S.F7", ""))
            .await
            .unwrap();
        assert_eq!(info["num_pending"], 1);
    }
    let info = started.elapsed();
    let started = Instant::now();
    for index in 0..10_000 {
        create_durable(&client, &format!("D{index}"), None).await;
    }
    let durables = started.elapsed();
    println!(
        "server {}: 100 filtered creates on 1M subjects {:?} ({:?} each), s.* create {:?}, \
         100 INFO {:?} ({:?} each), 10k durable creates {:?} ({:?} each)",
        test_harness::server_binary().display(),
        filtered,
        filtered / 100,
        wide_create,
        info,
        info / 100,
        durables,
        durables / 10_000
    );
}

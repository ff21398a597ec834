//! Mirrors across restarts of the server that holds both sides, with subject transforms and
//! filters: same sequences as the origin, transformed subjects, nothing lost or repeated.
//! Runs against nats-server too (`NATS_SERVER_BIN`).

use serde_json::Value;
use std::time::Duration;
use test_harness::client::{api, connect, publish_raw, TIMEOUT};
use test_harness::TestServer;

async fn wait_last_seq(client: &async_nats::Client, stream: &str, last_seq: u64) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let info = api(client, &format!("$JS.API.STREAM.INFO.{stream}"), "").await;
        if info["state"]["last_seq"] == last_seq {
            return info;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{stream} did not reach {last_seq}: {info}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn publish_range(client: &async_nats::Client, indexes: std::ops::Range<u32>) {
    for index in indexes {
        let subject = if index % 2 == 0 { "o.even" } else { "o.odd" };
        publish_raw(client, subject, &[], &index.to_string()).await;
    }
}

async fn subject_at(client: &async_nats::Client, stream: &str, seq: u64) -> String {
    let context = async_nats::jetstream::new(client.clone());
    let stream = context.get_stream(stream).await.expect("stream");
    let message = tokio::time::timeout(TIMEOUT, stream.get_raw_message(seq))
        .await
        .expect("in time")
        .expect("message");
    message.subject.to_string()
}

#[tokio::test]
async fn mirrors_with_transforms_and_filters_follow_across_restarts() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.ORIGIN",
        r#"{"name":"ORIGIN","subjects":["o.*"]}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.RENAMED",
        r#"{"name":"RENAMED","mirror":{"name":"ORIGIN","subject_transforms":[{"src":"o.*","dest":"m.{{wildcard(1)}}"}]}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.EVEN",
        r#"{"name":"EVEN","mirror":{"name":"ORIGIN","filter_subject":"o.even"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");

    publish_range(&client, 0..40).await;
    wait_last_seq(&client, "RENAMED", 40).await;
    wait_last_seq(&client, "EVEN", 39).await;
    drop(client);

    server.restart();
    let client = connect(&server).await;
    publish_range(&client, 40..80).await;
    let info = wait_last_seq(&client, "RENAMED", 80).await;
    assert_eq!(info["state"]["messages"], 80, "{info}");
    assert_eq!(info["mirror"]["lag"], 0, "{info}");
    let info = wait_last_seq(&client, "EVEN", 79).await;
    assert_eq!(info["state"]["messages"], 40, "{info}");

    assert_eq!(subject_at(&client, "RENAMED", 1).await, "m.even");
    assert_eq!(subject_at(&client, "RENAMED", 80).await, "m.odd");
    assert_eq!(subject_at(&client, "EVEN", 79).await, "o.even");

    // Mirrors take no publishes of their own: they have no subjects, and the API refuses them.
    let refused = api(
        &client,
        "$JS.API.STREAM.UPDATE.RENAMED",
        r#"{"name":"RENAMED","subjects":["m.>"],"mirror":{"name":"ORIGIN","subject_transforms":[{"src":"o.*","dest":"m.{{wildcard(1)}}"}]}}"#,
    )
    .await;
    assert_eq!(refused["error"]["err_code"], 10034, "{refused}");
}

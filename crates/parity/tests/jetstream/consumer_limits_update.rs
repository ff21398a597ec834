//! A stream update that sets `consumer_limits` tighter than an existing consumer's own
//! settings is refused (issue 19 item 5) with nats-server's `500 / 10069 change to limits
//! violates consumers: <names>`; limits the consumers fit under, and unset (0) limits, pass.
//! Passes on nats-server 2.15.1.

use serde_json::{json, Value};
use test_harness::client::{api, connect};
use test_harness::TestServer;

fn stream_config(limits: Value) -> String {
    json!({"name": "S", "subjects": ["s.>"], "consumer_limits": limits}).to_string()
}

async fn update(client: &async_nats::Client, limits: Value) -> Value {
    api(client, "$JS.API.STREAM.UPDATE.S", &stream_config(limits)).await
}

fn error_of(reply: &Value) -> Option<(u64, u64, String)> {
    let error = reply.get("error")?;
    Some((
        error["code"].as_u64().unwrap_or_default(),
        error["err_code"].as_u64().unwrap_or_default(),
        error["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

#[tokio::test]
async fn tighter_consumer_limits_refused() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.S",
        &stream_config(json!({})),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let consumer = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.D",
        r#"{"stream_name":"S","config":{"durable_name":"D","ack_policy":"explicit","max_ack_pending":100,"inactive_threshold":60000000000}}"#,
    )
    .await;
    assert!(consumer.get("error").is_none(), "{consumer}");
    let violates = |names: &str| {
        Some((
            500,
            10069,
            format!("change to limits violates consumers: {names}"),
        ))
    };

    for limits in [
        json!({"max_ack_pending": 10}),
        json!({"inactive_threshold": 1_000_000_000}),
        json!({"max_ack_pending": 50, "inactive_threshold": 0}),
    ] {
        let reply = update(&client, limits.clone()).await;
        assert_eq!(error_of(&reply), violates("D"), "{limits}: {reply}");
    }
    for limits in [
        json!({"max_ack_pending": 100, "inactive_threshold": 60_000_000_000u64}),
        json!({"max_ack_pending": 200}),
        json!({}),
    ] {
        let reply = update(&client, limits.clone()).await;
        assert_eq!(error_of(&reply), None, "{limits}: {reply}");
    }

    // A consumer without an inactive threshold does not exceed one; its max_ack_pending
    // (the default 1000) does exceed a limit of 10.
    let other = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.E",
        r#"{"stream_name":"S","config":{"durable_name":"E","ack_policy":"explicit"}}"#,
    )
    .await;
    assert!(other.get("error").is_none(), "{other}");
    let reply = update(&client, json!({"inactive_threshold": 1_000_000_000})).await;
    assert_eq!(error_of(&reply), violates("D"), "{reply}");
    let reply = update(&client, json!({"max_ack_pending": 10})).await;
    let (code, err_code, description) = error_of(&reply).expect("refused");
    assert_eq!((code, err_code), (500, 10069), "{reply}");
    let mut named: Vec<&str> = description
        .trim_start_matches("change to limits violates consumers: ")
        .split(", ")
        .collect();
    named.sort_unstable();
    assert_eq!(named, ["D", "E"], "{reply}");
    // Nothing refused was applied.
    let info = api(&client, "$JS.API.STREAM.INFO.S", "").await;
    assert_eq!(info["config"]["consumer_limits"], json!({}), "{info}");
}

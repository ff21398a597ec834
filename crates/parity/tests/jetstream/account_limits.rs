//! Per-account JetStream (issue 16): each account with `jetstream` in `accounts { }` has its
//! own streams, its own `$JS.API.INFO` usage and limits, and nats-server's errors when a limit
//! is hit; an account without JetStream is answered 10039 for every `$JS.API` request.
//! Every answer here was read from nats-server 2.15.1 with the same config.

use serde_json::{json, Value};
use test_harness::client::{api, TIMEOUT};
use test_harness::{ServerOptions, TestServer};

const CONFIG: &str = r#"
accounts {
  A { users: [{user: a, password: a}], jetstream: enabled }
  B { users: [{user: b, password: b}] }
  C {
    users: [{user: c, password: c}]
    jetstream { max_mem: 1M, max_file: 2M, max_streams: 2, max_consumers: 1, max_ack_pending: 10, max_bytes_required: true }
  }
  D { users: [{user: d, password: d}], jetstream: enabled }
}
"#;

pub(crate) fn server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(CONFIG.into()),
        ..Default::default()
    })
}

pub(crate) async fn connect_as(server: &TestServer, user: &str) -> async_nats::Client {
    let options = async_nats::ConnectOptions::with_user_and_password(user.into(), user.into());
    tokio::time::timeout(TIMEOUT, options.connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect")
}

async fn request(client: &async_nats::Client, subject: &str, body: Value) -> Value {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    api(client, subject, &text).await
}

/// The `err_code` of an answer, 0 for a success.
fn err_code(answer: &Value) -> i64 {
    answer["error"]["err_code"].as_i64().unwrap_or(0)
}

#[tokio::test]
async fn an_account_without_jetstream_is_answered_10039() {
    let server = server();
    let client = connect_as(&server, "b").await;
    for (subject, body, response_type) in [
        ("$JS.API.INFO", Value::Null, "account_info_response"),
        (
            "$JS.API.STREAM.CREATE.S1",
            json!({"name": "S1", "subjects": ["s1"]}),
            "stream_create_response",
        ),
        ("$JS.API.STREAM.NAMES", Value::Null, "stream_names_response"),
        (
            "$JS.API.STREAM.INFO.S1",
            Value::Null,
            "stream_info_response",
        ),
        (
            "$JS.API.CONSUMER.INFO.S1.C1",
            Value::Null,
            "consumer_info_response",
        ),
    ] {
        let answer = request(&client, subject, body).await;
        assert_eq!(
            answer["type"],
            format!("io.nats.jetstream.api.v1.{response_type}"),
            "{subject}: {answer}"
        );
        assert_eq!(
            answer["error"],
            json!({"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}),
            "{subject}: {answer}"
        );
    }
}

#[tokio::test]
async fn accounts_keep_their_own_streams_and_usage() {
    let server = server();
    let first = connect_as(&server, "a").await;
    let second = connect_as(&server, "d").await;
    for client in [&first, &second] {
        let created = request(
            client,
            "$JS.API.STREAM.CREATE.ORDERS",
            json!({"name": "ORDERS", "subjects": ["orders"]}),
        )
        .await;
        assert_eq!(created["did_create"], true, "{created}");
    }
    for _ in 0..3 {
        first
            .request("orders", "x".into())
            .await
            .expect("stored in A");
    }
    let info = request(&first, "$JS.API.STREAM.INFO.ORDERS", Value::Null).await;
    assert_eq!(info["state"]["messages"], 3, "{info}");
    let info = request(&second, "$JS.API.STREAM.INFO.ORDERS", Value::Null).await;
    assert_eq!(info["state"]["messages"], 0, "{info}");

    let first_account = request(&first, "$JS.API.INFO", Value::Null).await;
    let second_account = request(&second, "$JS.API.INFO", Value::Null).await;
    assert_eq!(first_account["streams"], 1, "{first_account}");
    assert!(
        first_account["storage"].as_u64().unwrap() > 0,
        "{first_account}"
    );
    assert_eq!(second_account["storage"], 0, "{second_account}");
    assert_eq!(
        first_account["limits"],
        json!({"max_memory": -1, "max_storage": -1, "max_streams": -1, "max_consumers": -1,
               "max_ack_pending": -1, "memory_max_stream_bytes": -1,
               "storage_max_stream_bytes": -1, "max_bytes_required": false}),
        "{first_account}"
    );
    // Each account counts its own API requests (2 creates + INFO + 3 publishes are not API).
    assert_eq!(first_account["api"]["total"], 2, "{first_account}");
}

#[tokio::test]
async fn account_limits_are_reported_and_enforced() {
    let server = server();
    let client = connect_as(&server, "c").await;
    let info = request(&client, "$JS.API.INFO", Value::Null).await;
    assert_eq!(
        info["limits"],
        json!({"max_memory": 1_000_000, "max_storage": 2_000_000, "max_streams": 2,
               "max_consumers": 1, "max_ack_pending": 10, "memory_max_stream_bytes": -1,
               "storage_max_stream_bytes": -1, "max_bytes_required": true}),
        "{info}"
    );
    let create = |name: &str, body: Value| {
        let subject = format!("$JS.API.STREAM.CREATE.{name}");
        let client = client.clone();
        async move { request(&client, &subject, body).await }
    };
    let answer = create("S1", json!({"name": "S1", "subjects": ["s1"]})).await;
    assert_eq!(err_code(&answer), 10113, "{answer}");
    let answer = create(
        "S1",
        json!({"name": "S1", "subjects": ["s1"], "max_bytes": 1000, "storage": "file"}),
    )
    .await;
    assert_eq!(answer["did_create"], true, "{answer}");
    let answer = create(
        "S2",
        json!({"name": "S2", "subjects": ["s2"], "max_bytes": 5_000_000, "storage": "file"}),
    )
    .await;
    assert_eq!(answer["error"]["code"], 500, "{answer}");
    assert_eq!(err_code(&answer), 10047, "{answer}");
    let answer = create(
        "S2",
        json!({"name": "S2", "subjects": ["s2"], "max_bytes": 5_000_000, "storage": "memory"}),
    )
    .await;
    assert_eq!(err_code(&answer), 10028, "{answer}");
    let answer = create(
        "S2",
        json!({"name": "S2", "subjects": ["s2"], "max_bytes": 1000, "storage": "memory"}),
    )
    .await;
    assert_eq!(answer["did_create"], true, "{answer}");
    let answer = create(
        "S3",
        json!({"name": "S3", "subjects": ["s3"], "max_bytes": 1000}),
    )
    .await;
    assert_eq!(
        answer["error"],
        json!({"code": 400, "err_code": 10027, "description": "maximum number of streams reached"}),
        "{answer}"
    );

    let consumer = |stream: &str, name: &str, extra: Value| {
        let subject = format!("$JS.API.CONSUMER.CREATE.{stream}.{name}");
        let mut config = json!({"durable_name": name, "ack_policy": "explicit"});
        if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
            config.extend(extra.clone());
        }
        let body = json!({"stream_name": stream, "config": config});
        let client = client.clone();
        async move { request(&client, &subject, body).await }
    };
    let answer = consumer("S1", "D1", json!({})).await;
    assert_eq!(answer["config"]["max_ack_pending"], 10, "{answer}");
    let answer = consumer("S1", "D2", json!({})).await;
    assert_eq!(
        answer["error"],
        json!({"code": 400, "err_code": 10026, "description": "maximum consumers limit reached"}),
        "{answer}"
    );
    // The consumer limit is per stream: S2 still takes one.
    let answer = consumer("S2", "D3", json!({"max_ack_pending": 100})).await;
    assert_eq!(
        answer["error"],
        json!({"code": 400, "err_code": 10121,
               "description": "consumer max ack pending exceeds system limit of 10"}),
        "{answer}"
    );
    let answer = consumer("S2", "D3", json!({})).await;
    assert_eq!(answer["name"], "D3", "{answer}");
    let answer = request(
        &client,
        "$JS.API.STREAM.UPDATE.S1",
        json!({"name": "S1", "subjects": ["s1"], "max_bytes": 3_000_000, "storage": "file"}),
    )
    .await;
    assert_eq!(err_code(&answer), 10047, "{answer}");

    let info = request(&client, "$JS.API.INFO", Value::Null).await;
    assert_eq!(info["streams"], 2, "{info}");
    assert_eq!(info["consumers"], 2, "{info}");
    assert_eq!(info["reserved_memory"], 1000, "{info}");
    assert_eq!(info["reserved_storage"], 1000, "{info}");
    assert!(info.get("tiers").is_none(), "{info}");
    // A stream deleted frees its place.
    let answer = request(&client, "$JS.API.STREAM.DELETE.S2", Value::Null).await;
    assert_eq!(answer["success"], true, "{answer}");
    let answer = create(
        "S3",
        json!({"name": "S3", "subjects": ["s3"], "max_bytes": 1000, "max_consumers": 5}),
    )
    .await;
    assert_eq!(err_code(&answer), 10026, "{answer}");
    let answer = create(
        "S3",
        json!({"name": "S3", "subjects": ["s3"], "max_bytes": 1000}),
    )
    .await;
    assert_eq!(answer["did_create"], true, "{answer}");
}

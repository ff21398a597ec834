//! Operator mode: an account JWT's JetStream limits apply as a config's (issue 16). Flat limits
//! are reported by `$JS.API.INFO` and enforced; `tiered_limits` `R1` applies to R1 streams; an
//! account whose JWT sets no storage limit is answered 10039; a tiered account's `$JS.API.INFO`
//! carries `tiers` (every tier the JWT names, with limits and usage) and zero top-level
//! `limits`. Passes against nats-server too.

use super::jwt_builder::{account_jwt, creds, user_jwt, Trust};
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::{ServerOptions, TestServer};

const WAIT: Duration = Duration::from_secs(10);

struct Tenant {
    account: nkeys::KeyPair,
    account_jwt: String,
    user: nkeys::KeyPair,
    user_jwt: String,
}

impl Tenant {
    fn new(trust: &Trust, limits: Value) -> Tenant {
        let account = nkeys::KeyPair::new_account();
        let mut all = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1,
                             "exports": -1, "wildcards": true, "conn": -1, "leaf": -1});
        if let (Some(all), Some(limits)) = (all.as_object_mut(), limits.as_object()) {
            all.extend(limits.clone());
        }
        let account_jwt = account_jwt(&account, &trust.operator, json!({ "limits": all }));
        let user = nkeys::KeyPair::new_user();
        let user_jwt = user_jwt(&user, &account, None, json!({}));
        Tenant {
            account,
            account_jwt,
            user,
            user_jwt,
        }
    }

    async fn connect(&self, server: &TestServer) -> async_nats::Client {
        let options =
            async_nats::ConnectOptions::with_credentials(&creds(&self.user_jwt, &self.user))
                .expect("creds parse");
        tokio::time::timeout(WAIT, options.connect(server.url()))
            .await
            .expect("connect in time")
            .expect("connect with credentials")
    }
}

async fn request(client: &async_nats::Client, subject: &str, body: Value) -> Value {
    let payload = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let reply = tokio::time::timeout(WAIT, client.request(subject.to_string(), payload.into()))
        .await
        .expect("reply in time")
        .expect("request");
    serde_json::from_slice(&reply.payload).expect("json reply")
}

fn err_code(answer: &Value) -> i64 {
    answer["error"]["err_code"].as_i64().unwrap_or(0)
}

async fn create(client: &async_nats::Client, name: &str, max_bytes: i64) -> Value {
    request(
        client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        json!({"name": name, "subjects": [name.to_lowercase()], "max_bytes": max_bytes}),
    )
    .await
}

#[tokio::test]
async fn account_jwt_jetstream_limits_apply() {
    let trust = Trust::new();
    let flat = Tenant::new(
        &trust,
        json!({"mem_storage": 1_000_000, "disk_storage": 2_000_000, "streams": 1,
               "consumer": 1, "max_ack_pending": 10}),
    );
    let tiered = Tenant::new(
        &trust,
        json!({"tiered_limits": {"R1": {"mem_storage": -1, "disk_storage": -1, "streams": 2,
                                        "consumer": -1}}}),
    );
    let without = Tenant::new(&trust, json!({}));
    let config = trust.config(&[
        (&flat.account, &flat.account_jwt),
        (&tiered.account, &tiered.account_jwt),
        (&without.account, &without.account_jwt),
    ]);
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(config),
        ..Default::default()
    });

    let client = flat.connect(&server).await;
    let info = request(&client, "$JS.API.INFO", Value::Null).await;
    assert_eq!(info["limits"]["max_memory"], 1_000_000, "{info}");
    assert_eq!(info["limits"]["max_storage"], 2_000_000, "{info}");
    assert_eq!(info["limits"]["max_streams"], 1, "{info}");
    assert_eq!(info["limits"]["max_consumers"], 1, "{info}");
    assert_eq!(info["limits"]["max_ack_pending"], 10, "{info}");
    let answer = create(&client, "BIG", 5_000_000).await;
    assert_eq!(err_code(&answer), 10047, "{answer}");
    let answer = create(&client, "ONE", 1000).await;
    assert_eq!(answer["did_create"], true, "{answer}");
    let answer = create(&client, "TWO", 1000).await;
    assert_eq!(err_code(&answer), 10027, "{answer}");
    let consumer = |name: &str| {
        let body = json!({"stream_name": "ONE",
                          "config": {"durable_name": name, "ack_policy": "explicit"}});
        let subject = format!("$JS.API.CONSUMER.CREATE.ONE.{name}");
        let client = client.clone();
        async move { request(&client, &subject, body).await }
    };
    let answer = consumer("C1").await;
    assert_eq!(answer["config"]["max_ack_pending"], 10, "{answer}");
    let answer = consumer("C2").await;
    assert_eq!(err_code(&answer), 10026, "{answer}");

    let client = tiered.connect(&server).await;
    for name in ["ONE", "TWO"] {
        let answer = create(&client, name, 1000).await;
        assert_eq!(answer["did_create"], true, "{answer}");
    }
    let answer = create(&client, "THREE", 1000).await;
    assert_eq!(err_code(&answer), 10027, "{answer}");

    let client = without.connect(&server).await;
    let answer = request(&client, "$JS.API.INFO", Value::Null).await;
    assert_eq!(err_code(&answer), 10039, "{answer}");
}

#[tokio::test]
async fn tiered_account_info_reports_tiers() {
    let trust = Trust::new();
    let tiered = Tenant::new(
        &trust,
        json!({"tiered_limits": {
            "R1": {"mem_storage": -1, "disk_storage": 5_000_000, "streams": 3, "consumer": -1,
                   "max_ack_pending": 100},
            "R3": {"mem_storage": 1_000_000, "disk_storage": 0, "streams": 1, "consumer": 2,
                   "max_bytes_required": true}}}),
    );
    let config = trust.config(&[(&tiered.account, &tiered.account_jwt)]);
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(config),
        ..Default::default()
    });
    let client = tiered.connect(&server).await;
    let answer = create(&client, "ONE", 10_000).await;
    assert_eq!(answer["did_create"], true, "{answer}");
    let ack = request(&client, "one", json!({"hello": "world"})).await;
    assert_eq!(ack["seq"], 1, "{ack}");
    let body = json!({"stream_name": "ONE",
                      "config": {"durable_name": "C1", "ack_policy": "explicit"}});
    let answer = request(&client, "$JS.API.CONSUMER.CREATE.ONE.C1", body).await;
    assert_eq!(answer["name"], "C1", "{answer}");
    let info = request(&client, "$JS.API.INFO", Value::Null).await;
    // No default tier: the top-level limits are nats-server's zero limits.
    let zero = json!({"max_memory": 0, "max_storage": 0, "max_streams": 0, "max_consumers": 0,
                      "max_ack_pending": 0, "memory_max_stream_bytes": 0,
                      "storage_max_stream_bytes": 0, "max_bytes_required": false});
    assert_eq!(info["limits"], zero, "{info}");
    assert_eq!(info["streams"], 1, "{info}");
    assert_eq!(info["consumers"], 1, "{info}");
    assert_eq!(info["reserved_storage"], 10_000, "{info}");
    let storage = info["storage"].as_u64().unwrap_or(0);
    assert!(storage > 0, "{info}");
    // Every tier the JWT names, with its limits (absent per-stream bytes and max_ack_pending
    // are -1) and its own usage.
    let expected = json!({
        "R1": {"memory": 0, "storage": storage, "reserved_memory": 0, "reserved_storage": 10_000,
               "streams": 1, "consumers": 1,
               "limits": {"max_memory": -1, "max_storage": 5_000_000, "max_streams": 3,
                          "max_consumers": -1, "max_ack_pending": 100,
                          "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
                          "max_bytes_required": false}},
        "R3": {"memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
               "streams": 0, "consumers": 0,
               "limits": {"max_memory": 1_000_000, "max_storage": 0, "max_streams": 1,
                          "max_consumers": 2, "max_ack_pending": -1,
                          "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
                          "max_bytes_required": true}}});
    assert_eq!(info["tiers"], expected, "{info}");
}

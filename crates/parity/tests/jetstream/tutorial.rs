//! The seed tutorial's server side and the stream API through async-nats, against ours or the
//! real nats-server (`NATS_SERVER_BIN`).

use test_harness::client;

use async_nats::jetstream::{self, stream};
use serde_json::json;
use test_harness::client::{api, connect, publish_raw};
use test_harness::TestServer;

#[tokio::test]
async fn orders_stream_keeps_a_message_published_with_no_subscriber() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    let mut stream = context
        .create_stream(stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            ..Default::default()
        })
        .await
        .expect("create stream");
    // A plain publish (no reply) is stored silently.
    client
        .publish("orders.created", "pesanan-1".into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    let ack = context
        .publish("orders.created", "pesanan-2".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(ack.stream, "ORDERS");
    assert_eq!(ack.sequence, 2);
    let info = stream.info().await.unwrap();
    assert_eq!(info.state.messages, 2);
    assert_eq!(info.config.duplicate_window.as_secs(), 120);
    let message = stream.get_raw_message(1).await.unwrap();
    assert_eq!(&message.payload[..], b"pesanan-1");
    assert_eq!(message.subject.as_str(), "orders.created");
}

#[tokio::test]
async fn create_response_matches_nats_server_fields() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.ORDERS",
        r#"{"name":"ORDERS","subjects":["orders.>"]}"#,
    )
    .await;
    let config = &created["config"];
    let expected = json!({
        "name": "ORDERS", "subjects": ["orders.>"], "retention": "limits", "max_consumers": -1,
        "max_msgs": -1, "max_bytes": -1, "max_age": 0, "max_msgs_per_subject": -1,
        "max_msg_size": -1, "discard": "old", "storage": "file", "num_replicas": 1,
        "duplicate_window": 120000000000i64, "compression": "none", "allow_direct": false,
        "mirror_direct": false, "sealed": false, "deny_delete": false, "deny_purge": false,
        "allow_rollup_hdrs": false, "consumer_limits": {}, "allow_msg_ttl": false,
    });
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(&config[key], value, "config field {key}");
    }
    assert_eq!(config["metadata"]["_nats.req.level"], "0");
    assert_eq!(config["metadata"]["_nats.level"], "5");
    assert!(config["metadata"]["_nats.ver"].is_string());
    assert_eq!(created["did_create"], true);
    assert_eq!(created["state"]["first_seq"], 0);
    assert_eq!(created["state"]["first_ts"], "0001-01-01T00:00:00Z");
    assert_eq!(
        created["type"],
        "io.nats.jetstream.api.v1.stream_create_response"
    );
    let info = api(&client, "$JS.API.STREAM.INFO.ORDERS", "").await;
    assert!(info["cluster"]["leader"].is_string());
    assert_eq!(info["total"], 0);
    assert_eq!(info["limit"], 0);
}

#[tokio::test]
async fn api_errors_carry_nats_server_codes() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let missing = api(&client, "$JS.API.STREAM.INFO.NOPE", "").await;
    assert_eq!(
        missing["error"],
        json!({"code": 404, "err_code": 10059, "description": "stream not found"})
    );
    let mismatch = api(&client, "$JS.API.STREAM.CREATE.A", r#"{"name":"B"}"#).await;
    assert_eq!(mismatch["error"]["err_code"], 10056);
    let unknown = api(
        &client,
        "$JS.API.STREAM.CREATE.A",
        r#"{"name":"A","bogus":true}"#,
    )
    .await;
    assert_eq!(unknown["error"]["err_code"], 10025);
    assert_eq!(unknown["error"]["code"], 400);
    let replicas = api(
        &client,
        "$JS.API.STREAM.CREATE.A",
        r#"{"name":"A","num_replicas":3}"#,
    )
    .await;
    assert_eq!(replicas["error"]["err_code"], 10074);
    api(
        &client,
        "$JS.API.STREAM.CREATE.A",
        r#"{"name":"A","subjects":["a.>"]}"#,
    )
    .await;
    let overlap = api(
        &client,
        "$JS.API.STREAM.CREATE.B",
        r#"{"name":"B","subjects":["a.b"]}"#,
    )
    .await;
    assert_eq!(
        overlap["error"],
        json!({"code": 400, "err_code": 10065, "description": "subjects overlap with an existing stream"})
    );
    let changed = api(
        &client,
        "$JS.API.STREAM.UPDATE.A",
        r#"{"name":"A","subjects":["a.>"],"storage":"memory"}"#,
    )
    .await;
    assert_eq!(changed["error"]["err_code"], 10052);
    assert_eq!(
        changed["error"]["description"],
        "stream configuration update can not change storage type"
    );
    let bad_get = api(&client, "$JS.API.STREAM.MSG.GET.A", "").await;
    assert_eq!(bad_get["error"]["err_code"], 10003);
    let no_message = api(&client, "$JS.API.STREAM.MSG.GET.A", r#"{"seq":5}"#).await;
    assert_eq!(no_message["error"]["err_code"], 10037);
    let account = api(&client, "$JS.API.INFO", "").await;
    assert_eq!(account["streams"], 1);
    assert!(account["api"]["errors"].as_u64().unwrap() >= 7);
}

#[tokio::test]
async fn names_list_purge_and_delete() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    for (name, subject) in [("B", "b.>"), ("A", "a.>"), ("C", "c.*")] {
        api(
            &client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &json!({"name": name, "subjects": [subject]}).to_string(),
        )
        .await;
    }
    let names = api(&client, "$JS.API.STREAM.NAMES", "").await;
    assert_eq!(names["streams"], json!(["A", "B", "C"]));
    assert_eq!(names["total"], 3);
    assert_eq!(names["limit"], 1024);
    let filtered = api(&client, "$JS.API.STREAM.NAMES", r#"{"subject":"c.x"}"#).await;
    assert_eq!(filtered["streams"], json!(["C"]));
    let paged = api(&client, "$JS.API.STREAM.LIST", r#"{"offset":1}"#).await;
    assert_eq!(paged["total"], 3);
    assert_eq!(paged["offset"], 1);
    assert_eq!(paged["limit"], 256);
    assert_eq!(paged["streams"].as_array().unwrap().len(), 2);
    assert_eq!(paged["streams"][0]["config"]["name"], "B");

    for index in 0..5 {
        let subject = if index % 2 == 0 { "a.even" } else { "a.odd" };
        publish_raw(&client, subject, &[], "x").await;
    }
    let purged = api(
        &client,
        "$JS.API.STREAM.PURGE.A",
        r#"{"filter":"a.even","keep":1}"#,
    )
    .await;
    assert_eq!(
        purged,
        json!({"type": "io.nats.jetstream.api.v1.stream_purge_response", "success": true, "purged": 2})
    );
    let purged = api(&client, "$JS.API.STREAM.PURGE.A", r#"{"seq":5}"#).await;
    assert_eq!(purged["purged"], 2);
    let info = api(&client, "$JS.API.STREAM.INFO.A", "").await;
    assert_eq!(info["state"]["messages"], 1);
    assert_eq!(info["state"]["first_seq"], 5);
    let deleted = api(&client, "$JS.API.STREAM.DELETE.A", "").await;
    assert_eq!(
        deleted,
        json!({"type": "io.nats.jetstream.api.v1.stream_delete_response", "success": true})
    );
    let names = api(&client, "$JS.API.STREAM.NAMES", "").await;
    assert_eq!(names["streams"], json!(["B", "C"]));
}

#[tokio::test]
async fn stream_advisories_for_create_update_delete() {
    use futures::StreamExt;
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let mut advisories = client
        .subscribe("$JS.EVENT.ADVISORY.STREAM.>")
        .await
        .unwrap();
    client.flush().await.unwrap();
    api(&client, "$JS.API.STREAM.CREATE.ADV", r#"{"name":"ADV"}"#).await;
    api(
        &client,
        "$JS.API.STREAM.UPDATE.ADV",
        r#"{"name":"ADV","max_msgs":5}"#,
    )
    .await;
    api(&client, "$JS.API.STREAM.DELETE.ADV", "").await;
    for (subject, action) in [
        ("$JS.EVENT.ADVISORY.STREAM.CREATED.ADV", "create"),
        ("$JS.EVENT.ADVISORY.STREAM.UPDATED.ADV", "modify"),
        ("$JS.EVENT.ADVISORY.STREAM.DELETED.ADV", "delete"),
    ] {
        let message = tokio::time::timeout(client::TIMEOUT, advisories.next())
            .await
            .expect("advisory in time")
            .expect("advisory");
        assert_eq!(message.subject.as_str(), subject);
        let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
        assert_eq!(body["type"], "io.nats.jetstream.advisory.v1.stream_action");
        assert_eq!(body["stream"], "ADV");
        assert_eq!(body["action"], action);
        assert_eq!(body["id"].as_str().unwrap().len(), 22);
        assert!(body["timestamp"].is_string());
    }
}

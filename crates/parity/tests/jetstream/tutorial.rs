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

/// LIST and INFO show a stream's config as updated, after answers that showed it before (ours
/// keeps each stream's config encoded until it changes): LIST as stored, INFO with the
/// response-only metadata, Go's escapes in both.
#[tokio::test]
async fn list_and_info_show_the_config_as_updated() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let raw = |subject: &'static str| {
        let client = client.clone();
        async move {
            let reply = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                client.request(subject, "".into()),
            )
            .await
            .expect("reply in time")
            .expect("request");
            String::from_utf8(reply.payload.to_vec()).expect("utf-8 answer")
        }
    };
    let config = |description: &str, max_msgs: i64, subjects: &[&str]| {
        json!({"name": "U", "description": description, "max_msgs": max_msgs, "subjects": subjects})
            .to_string()
    };
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.U",
        &config("<before>", 10, &["u.>"]),
    )
    .await;
    assert!(created["error"].is_null(), "{created}");
    for round in 0..2 {
        let (description, max_msgs, subjects) = if round == 0 {
            ("<before>", 10, json!(["u.>"]))
        } else {
            ("<after> & more", 5, json!(["u.>", "v.*"]))
        };
        for subject in ["$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.U"] {
            // Twice: the second answer is made from what the first kept.
            for _ in 0..2 {
                let text = raw(subject).await;
                let escaped = if round == 0 {
                    "\\u003cbefore\\u003e"
                } else {
                    "\\u003cafter\\u003e \\u0026 more"
                };
                assert!(text.contains(escaped), "{subject}: {text}");
                let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
                let shown = if subject.contains("LIST") {
                    assert_eq!(answer["total"], 1, "{answer}");
                    answer["streams"][0]["config"].clone()
                } else {
                    answer["config"].clone()
                };
                assert_eq!(shown["description"], description, "{subject}: {answer}");
                assert_eq!(shown["max_msgs"], max_msgs, "{subject}: {answer}");
                assert_eq!(shown["subjects"], subjects, "{subject}: {answer}");
                // nats-server adds its version and API level to INFO's config only.
                let metadata = &shown["metadata"];
                assert_eq!(metadata["_nats.req.level"], "0", "{subject}: {answer}");
                assert_eq!(
                    metadata["_nats.ver"].is_string(),
                    subject.contains("INFO"),
                    "{subject}: {answer}"
                );
            }
        }
        if round == 0 {
            let updated = api(
                &client,
                "$JS.API.STREAM.UPDATE.U",
                &config("<after> & more", 5, &["u.>", "v.*"]),
            )
            .await;
            assert!(updated["error"].is_null(), "{updated}");
            assert_eq!(updated["config"]["max_msgs"], 5, "{updated}");
        }
    }
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
    for (index, (subject, action)) in [
        ("$JS.EVENT.ADVISORY.STREAM.CREATED.ADV", "create"),
        ("$JS.EVENT.ADVISORY.STREAM.UPDATED.ADV", "modify"),
        ("$JS.EVENT.ADVISORY.STREAM.DELETED.ADV", "delete"),
    ]
    .into_iter()
    .enumerate()
    {
        let message = tokio::time::timeout(client::TIMEOUT, advisories.next()).await;
        // nats-server sends a stream's advisories through the stream's own send queue, and its
        // delete puts the delete advisory there just before it closes the queue's loop, whose
        // `select` may take the close first (Go picks at random among ready cases): the
        // advisory is then dropped (once in a CI parity pass, c593489), and so can be an update's
        // still queued. There the advisories that come are the first ones, in order; ours
        // sends all three.
        if test_harness::is_reference() && index > 0 && message.is_err() {
            println!("nats-server sent no {subject}");
            break;
        }
        let message = message.expect("advisory in time").expect("advisory");
        assert_eq!(message.subject.as_str(), subject);
        let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
        assert_eq!(body["type"], "io.nats.jetstream.advisory.v1.stream_action");
        assert_eq!(body["stream"], "ADV");
        assert_eq!(body["action"], action);
        assert_eq!(body["id"].as_str().unwrap().len(), 22);
        assert!(body["timestamp"].is_string());
    }
}

//! The publish path as clients see it: PubAck bytes, duplicate window, expected-* headers,
//! limits and discard policies, rollups, TTL, interest retention. Runs against ours or the real
//! nats-server (`NATS_SERVER_BIN`).

use test_harness::client;

use serde_json::json;
use test_harness::client::{api, connect, create_stream, publish_raw};
use test_harness::TestServer;

#[tokio::test]
async fn acks_dedupe_and_expectations() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(&client, json!({"name": "D", "subjects": ["d.>"]})).await;
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Msg-Id", "1")], "x").await,
        r#"{"stream":"D","seq":1}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Msg-Id", "1")], "x").await,
        r#"{"stream":"D","seq":1,"duplicate": true}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Expected-Stream", "X")], "x").await,
        r#"{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Expected-Last-Sequence", "7")], "x").await,
        r#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "d.b", &[("Nats-Expected-Last-Sequence", "1")], "x").await,
        r#"{"stream":"D","seq":2}"#
    );
    assert_eq!(
        publish_raw(
            &client,
            "d.c",
            &[("Nats-Expected-Last-Subject-Sequence", "0")],
            "x"
        )
        .await,
        r#"{"stream":"D","seq":3}"#
    );
    assert_eq!(
        publish_raw(
            &client,
            "d.c",
            &[("Nats-Expected-Last-Subject-Sequence", "0")],
            "x"
        )
        .await,
        r#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(
            &client,
            "d.z",
            &[
                ("Nats-Expected-Last-Subject-Sequence", "2"),
                ("Nats-Expected-Last-Subject-Sequence-Subject", "d.b")
            ],
            "x"
        )
        .await,
        r#"{"stream":"D","seq":4}"#
    );
    assert_eq!(
        publish_raw(
            &client,
            "d.a",
            &[("Nats-Expected-Last-Subject-Sequence-Subject", "d.b")],
            "x"
        )
        .await,
        r#"{"error":{"code":400,"err_code":10193,"description":"missing sequence for expected last sequence per subject"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Msg-Id", "5")], "x").await,
        r#"{"stream":"D","seq":5}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Expected-Last-Msg-Id", "4")], "x").await,
        r#"{"error":{"code":400,"err_code":10070,"description":"wrong last msg ID: 5"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Expected-Last-Msg-Id", "5")], "x").await,
        r#"{"stream":"D","seq":6}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-Rollup", "all")], "x").await,
        r#"{"error":{"code":500,"err_code":10111,"description":"rollup not permitted"},"stream":"D","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "d.a", &[("Nats-TTL", "5s")], "x").await,
        r#"{"error":{"code":400,"err_code":10166,"description":"per-message TTL is disabled"},"stream":"D","seq":0}"#
    );
}

#[tokio::test]
async fn limits_and_discard_policies() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "NEW", "subjects": ["new.>"], "max_msgs": 2, "discard": "new"}),
    )
    .await;
    publish_raw(&client, "new.a", &[], "1").await;
    publish_raw(&client, "new.a", &[], "2").await;
    assert_eq!(
        publish_raw(&client, "new.a", &[], "3").await,
        r#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"NEW","seq":0}"#
    );
    create_stream(
        &client,
        json!({"name": "OLD", "subjects": ["old.>"], "max_msgs_per_subject": 2}),
    )
    .await;
    for _ in 0..5 {
        publish_raw(&client, "old.a", &[], "x").await;
    }
    publish_raw(&client, "old.b", &[], "x").await;
    let info = api(&client, "$JS.API.STREAM.INFO.OLD", "").await;
    assert_eq!(info["state"]["messages"], 3);
    assert_eq!(info["state"]["last_seq"], 6);
    create_stream(
        &client,
        json!({"name": "SIZE", "subjects": ["size"], "max_msg_size": 4}),
    )
    .await;
    assert_eq!(
        publish_raw(&client, "size", &[], "12345").await,
        r#"{"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"},"stream":"SIZE","seq":0}"#
    );
}

#[tokio::test]
async fn rollup_ttl_and_interest_retention() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "R", "subjects": ["r.>"], "allow_rollup_hdrs": true, "allow_msg_ttl": true}),
    )
    .await;
    for subject in ["r.a", "r.a", "r.b"] {
        publish_raw(&client, subject, &[], "x").await;
    }
    assert_eq!(
        publish_raw(&client, "r.a", &[("Nats-Rollup", "sub")], "x").await,
        r#"{"stream":"R","seq":4}"#
    );
    let info = api(&client, "$JS.API.STREAM.INFO.R", "").await;
    assert_eq!(info["state"]["messages"], 2);
    assert_eq!(
        publish_raw(&client, "r.a", &[("Nats-Rollup", "bogus")], "x").await,
        r#"{"error":{"code":500,"err_code":10111,"description":"rollup value invalid: \"bogus\""},"stream":"R","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "r.c", &[("Nats-TTL", "bad")], "x").await,
        r#"{"error":{"code":400,"err_code":10165,"description":"invalid per-message TTL"},"stream":"R","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "r.c", &[("Nats-TTL", "1s")], "x").await,
        r#"{"stream":"R","seq":5}"#
    );
    assert_eq!(
        publish_raw(&client, "r.a", &[("Nats-Rollup", "all")], "x").await,
        r#"{"stream":"R","seq":6}"#
    );
    let info = api(&client, "$JS.API.STREAM.INFO.R", "").await;
    assert_eq!(info["state"]["messages"], 1);

    create_stream(
        &client,
        json!({"name": "I", "subjects": ["i.>"], "retention": "interest"}),
    )
    .await;
    assert_eq!(
        publish_raw(&client, "i.a", &[], "x").await,
        r#"{"stream":"I","seq":1}"#
    );
    let info = api(&client, "$JS.API.STREAM.INFO.I", "").await;
    assert_eq!(info["state"]["messages"], 0);
    assert_eq!(info["state"]["last_seq"], 1);
}

#[tokio::test]
async fn sealed_streams_refuse_and_direct_get_answers() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "S", "subjects": ["s.>"], "allow_direct": true}),
    )
    .await;
    publish_raw(&client, "s.a", &[("X-Custom", "1")], "payload").await;
    let reply = client
        .request("$JS.API.DIRECT.GET.S.s.a", "".into())
        .await
        .unwrap();
    let headers = reply.headers.expect("headers");
    assert_eq!(headers.get("Nats-Stream").unwrap().as_str(), "S");
    assert_eq!(headers.get("Nats-Sequence").unwrap().as_str(), "1");
    assert_eq!(headers.get("Nats-Subject").unwrap().as_str(), "s.a");
    assert_eq!(headers.get("X-Custom").unwrap().as_str(), "1");
    assert!(headers.get("Nats-Time-Stamp").is_some());
    assert_eq!(&reply.payload[..], b"payload");
    let missing = client
        .request("$JS.API.DIRECT.GET.S", r#"{"seq":9}"#.into())
        .await
        .unwrap();
    assert_eq!(
        missing.status,
        Some(async_nats::StatusCode::NOT_FOUND),
        "{missing:?}"
    );
    let update = api(
        &client,
        "$JS.API.STREAM.UPDATE.S",
        r#"{"name":"S","subjects":["s.>"],"allow_direct":true,"sealed":true}"#,
    )
    .await;
    assert_eq!(update["config"]["sealed"], true, "{update}");
    assert_eq!(update["config"]["deny_delete"], true);
    assert_eq!(
        publish_raw(&client, "s.a", &[], "x").await,
        r#"{"error":{"code":400,"err_code":10109,"description":"invalid operation on sealed stream"},"stream":"S","seq":0}"#
    );
    let purge = api(&client, "$JS.API.STREAM.PURGE.S", "").await;
    assert_eq!(purge["error"]["err_code"], 10109);
}

#[tokio::test]
async fn per_message_ttl_and_max_age_expire_messages() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "T", "subjects": ["t.>"], "allow_msg_ttl": true}),
    )
    .await;
    create_stream(
        &client,
        json!({"name": "AGE", "subjects": ["age"], "max_age": 1_000_000_000i64}),
    )
    .await;
    assert_eq!(
        publish_raw(&client, "t.short", &[("Nats-TTL", "1s")], "x").await,
        r#"{"stream":"T","seq":1}"#
    );
    publish_raw(&client, "t.keep", &[], "x").await;
    publish_raw(&client, "age", &[], "x").await;
    // Expiry is the server's own timer: poll (bounded) until it has run.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(8);
    loop {
        let ttl = api(&client, "$JS.API.STREAM.INFO.T", "").await;
        let age = api(&client, "$JS.API.STREAM.INFO.AGE", "").await;
        if ttl["state"]["messages"] == 1 && age["state"]["messages"] == 0 {
            assert_eq!(ttl["state"]["first_seq"], 2);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "messages did not expire: {ttl} {age}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn subject_transform_and_delete_markers() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "TR", "subjects": ["in.>"], "subject_transform": {"src": "in.>", "dest": "out.>"}}),
    )
    .await;
    publish_raw(&client, "in.a", &[], "x").await;
    let got = api(&client, "$JS.API.STREAM.MSG.GET.TR", r#"{"seq":1}"#).await;
    assert_eq!(got["message"]["subject"], "out.a");

    create_stream(
        &client,
        json!({"name": "SDM", "subjects": ["m.>"], "max_age": 1_000_000_000i64,
               "subject_delete_marker_ttl": 1_000_000_000i64}),
    )
    .await;
    publish_raw(&client, "m.a", &[], "x").await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(8);
    loop {
        let got = api(
            &client,
            "$JS.API.STREAM.MSG.GET.SDM",
            r#"{"last_by_subj":"m.a"}"#,
        )
        .await;
        if got["message"]["seq"] == 2 {
            let headers = got["message"]["hdrs"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(!headers.is_empty(), "{got}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no marker: {got}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn republish_sends_stored_messages_on() {
    use futures::StreamExt;
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "RP", "subjects": ["rp.>"], "republish": {"src": "rp.>", "dest": "out.>"}}),
    )
    .await;
    let mut copies = client.subscribe("out.>").await.unwrap();
    client.flush().await.unwrap();
    publish_raw(&client, "rp.a", &[("X-Mine", "1")], "first").await;
    publish_raw(&client, "rp.a", &[], "second").await;
    let first = tokio::time::timeout(client::TIMEOUT, copies.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.subject.as_str(), "out.a");
    assert_eq!(&first.payload[..], b"first");
    let headers = first.headers.unwrap();
    assert_eq!(headers.get("Nats-Stream").unwrap().as_str(), "RP");
    assert_eq!(headers.get("Nats-Subject").unwrap().as_str(), "rp.a");
    assert_eq!(headers.get("Nats-Sequence").unwrap().as_str(), "1");
    assert_eq!(headers.get("Nats-Last-Sequence").unwrap().as_str(), "0");
    assert_eq!(headers.get("X-Mine").unwrap().as_str(), "1");
    let second = tokio::time::timeout(client::TIMEOUT, copies.next())
        .await
        .unwrap()
        .unwrap();
    let headers = second.headers.unwrap();
    assert_eq!(headers.get("Nats-Sequence").unwrap().as_str(), "2");
    assert_eq!(headers.get("Nats-Last-Sequence").unwrap().as_str(), "1");
}

#[tokio::test]
async fn counter_streams_add_increments() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "C", "subjects": ["c.>"], "allow_msg_counter": true}),
    )
    .await;
    assert_eq!(
        publish_raw(&client, "c.a", &[("Nats-Incr", "5")], "").await,
        r#"{"stream":"C","seq":1,"val":"5"}"#
    );
    assert_eq!(
        publish_raw(&client, "c.a", &[("Nats-Incr", "-2")], "").await,
        r#"{"stream":"C","seq":2,"val":"3"}"#
    );
    assert_eq!(
        publish_raw(&client, "c.b", &[("Nats-Incr", "+1")], "").await,
        r#"{"stream":"C","seq":3,"val":"1"}"#
    );
    assert_eq!(
        publish_raw(&client, "c.a", &[], "x").await,
        r#"{"error":{"code":400,"err_code":10169,"description":"message counter increment is missing"},"stream":"C","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "c.a", &[("Nats-Incr", "1")], "body").await,
        r#"{"error":{"code":400,"err_code":10170,"description":"message counter has payload"},"stream":"C","seq":0}"#
    );
    assert_eq!(
        publish_raw(&client, "c.a", &[("Nats-Incr", "x")], "").await,
        r#"{"error":{"code":400,"err_code":10171,"description":"message counter increment is invalid"},"stream":"C","seq":0}"#
    );
    let got = api(
        &client,
        "$JS.API.STREAM.MSG.GET.C",
        r#"{"last_by_subj":"c.a"}"#,
    )
    .await;
    assert_eq!(got["message"]["data"], "eyJ2YWwiOiIzIn0=");
    create_stream(&client, json!({"name": "PLAIN", "subjects": ["plain"]})).await;
    assert_eq!(
        publish_raw(&client, "plain", &[("Nats-Incr", "1")], "").await,
        r#"{"error":{"code":400,"err_code":10168,"description":"message counters is disabled"},"stream":"PLAIN","seq":0}"#
    );
}

#[tokio::test]
async fn a_ttl_below_the_marker_ttl_is_stored_raised() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "T", "subjects": ["t.>"], "allow_msg_ttl": true,
               "subject_delete_marker_ttl": 5_000_000_000u64}),
    )
    .await;
    assert_eq!(
        publish_raw(&client, "t.a", &[("Nats-TTL", "2s"), ("X", "1")], "x").await,
        r#"{"stream":"T","seq":1}"#
    );
    assert_eq!(
        client::stored_headers(&client, "T", 1).await,
        client::pairs(&[("Nats-TTL", "5"), ("X", "1")])
    );
}

//! Counter streams that source other counter streams (`Nats-Incr` on sourced messages): the
//! aggregate adds what each origin subject moved by, tracks the origins in
//! `Nats-Counter-Sources` and rewrites `Nats-Incr` to the difference; a stream without counters
//! stores sourced counter messages as they are. Runs against ours or the real nats-server
//! (`NATS_SERVER_BIN`).

use serde_json::json;
use test_harness::client::{
    connect, create_stream, publish_raw, stored_headers, wait_for_messages as stored,
};
use test_harness::TestServer;

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

#[tokio::test]
async fn an_aggregate_counter_adds_its_sources() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    for name in ["C1", "C2"] {
        let subjects = format!("{}.>", name.to_lowercase());
        create_stream(
            &client,
            json!({"name": name, "subjects": [subjects], "allow_msg_counter": true}),
        )
        .await;
    }
    let transform = |origin: &str| json!({"name": origin, "subject_transforms": [{"src": format!("{}.>", origin.to_lowercase()), "dest": "agg.>"}]});
    create_stream(
        &client,
        json!({"name": "AGG", "subjects": ["agg.>"], "allow_msg_counter": true,
               "sources": [transform("C1"), transform("C2")]}),
    )
    .await;
    let increment = |value| [("Nats-Incr", value)];
    assert_eq!(
        publish_raw(&client, "c1.x", &increment("5"), "").await,
        r#"{"stream":"C1","seq":1,"val":"5"}"#
    );
    publish_raw(&client, "c2.x", &increment("3"), "").await;
    publish_raw(&client, "c1.x", &increment("2"), "").await;
    let sourced = stored(&client, "AGG", "agg.x", 3).await;
    assert_eq!(
        sourced.last().map(|(_, body)| body.as_str()),
        Some(r#"{"val":"10"}"#)
    );
    // The last origin message stored carries every origin's last value.
    let (last_seq, _) = sourced[2];
    let headers = stored_headers(&client, "AGG", last_seq).await;
    assert_eq!(
        header(&headers, "Nats-Counter-Sources"),
        Some(r#"{"C1":{"c1.x":"7"},"C2":{"c2.x":"3"}}"#),
        "{headers:?}"
    );
    // Nats-Incr holds what this message added to the aggregate.
    let added: i64 = header(&headers, "Nats-Incr")
        .expect("increment")
        .parse()
        .expect("number");
    assert!(added == 2 || added == 3, "{headers:?}");
    // A direct increment on the aggregate adds to the total and keeps the sources.
    assert_eq!(
        publish_raw(&client, "agg.x", &increment("100"), "").await,
        r#"{"stream":"AGG","seq":4,"val":"110"}"#
    );
    let headers = stored_headers(&client, "AGG", 4).await;
    assert_eq!(
        header(&headers, "Nats-Counter-Sources"),
        Some(r#"{"C1":{"c1.x":"7"},"C2":{"c2.x":"3"}}"#)
    );
}

#[tokio::test]
async fn a_plain_stream_keeps_sourced_counter_messages_verbatim() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "C", "subjects": ["c.>"], "allow_msg_counter": true}),
    )
    .await;
    create_stream(
        &client,
        json!({"name": "PLAIN", "sources": [{"name": "C"}]}),
    )
    .await;
    publish_raw(&client, "c.x", &[("Nats-Incr", "5")], "").await;
    publish_raw(&client, "c.x", &[("Nats-Incr", "2")], "").await;
    let copies = stored(&client, "PLAIN", "c.x", 2).await;
    assert_eq!(copies[1].1, r#"{"val":"7"}"#);
    let headers = stored_headers(&client, "PLAIN", copies[1].0).await;
    assert_eq!(header(&headers, "Nats-Incr"), Some("2"));
    assert_eq!(header(&headers, "Nats-Counter-Sources"), None);
}

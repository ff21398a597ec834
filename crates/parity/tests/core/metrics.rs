//! `/metrics`: the Prometheus text format (read with a strict parser here), with
//! prometheus-nats-exporter's names and labels, and figures that move with the traffic. rnats
//! only: nats-server has no `/metrics` (the exporter scrapes its JSON instead).

use futures::StreamExt;
use std::collections::BTreeMap;
use test_harness::client::{api, connect, publish_raw};
use test_harness::monitoring::get_response;
use test_harness::{RawClient, ServerOptions, TestServer};

/// One sample: its metric name, its labels and its value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parse the exposition text strictly: every line is `# HELP`, `# TYPE`, `# EOF` (last) or a
/// sample of a declared metric with well-formed labels and a number.
fn parse(text: &str) -> Vec<Sample> {
    let mut declared = BTreeMap::new();
    let mut samples = Vec::new();
    let mut ended = false;
    for line in text.lines() {
        assert!(!ended, "text after # EOF: {line}");
        if line == "# EOF" {
            ended = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(
                ["gauge", "counter", "untyped", "unknown", "info"].contains(&kind),
                "{line}"
            );
            declared.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment: {line}");
        let (series, value) = line.rsplit_once(' ').expect("sample value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("number: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "metric name {name}"
        );
        assert!(declared.contains_key(name), "undeclared {name}");
        samples.push(Sample {
            name: name.to_string(),
            labels: parse_labels(labels, line),
            value,
        });
    }
    assert!(ended, "no # EOF");
    samples
}

fn parse_labels(mut text: &str, line: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    while !text.is_empty() {
        let (key, rest) = text
            .split_once("=\"")
            .unwrap_or_else(|| panic!("label: {line}"));
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => panic!("escape: {line}"),
                },
                Some((index, '"')) => break index,
                Some((_, other)) => value.push(other),
                None => panic!("unterminated label: {line}"),
            }
        };
        labels.insert(key.to_string(), value);
        text = rest[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&rest[end + 1..]);
    }
    labels
}

fn scrape(server: &TestServer) -> Vec<Sample> {
    let response = get_response(server, "/metrics");
    assert_eq!(response.status, 200, "{response:?}");
    parse(&response.body)
}

fn value(samples: &[Sample], name: &str, label: Option<(&str, &str)>) -> f64 {
    samples
        .iter()
        .find(|sample| {
            sample.name == name
                && label.is_none_or(|(key, wanted)| {
                    sample.labels.get(key).map(String::as_str) == Some(wanted)
                })
        })
        .unwrap_or_else(|| panic!("no {name} {label:?}"))
        .value
}

#[test]
fn core_figures_have_exporter_names_and_move() {
    if test_harness::is_reference() {
        return;
    }
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        ..Default::default()
    });
    let before = scrape(&server);
    let in_before = value(&before, "gnatsd_varz_in_msgs", None);
    let sample = before
        .iter()
        .find(|sample| sample.name == "gnatsd_varz_in_msgs")
        .expect("in_msgs");
    assert_eq!(sample.labels.keys().collect::<Vec<_>>(), ["server_id"]);
    for name in [
        "gnatsd_varz_connections",
        "gnatsd_varz_subscriptions",
        "gnatsd_varz_slow_consumers",
        "gnatsd_varz_mem",
        "gnatsd_connz_num_connections",
        "gnatsd_connz_in_msgs",
        "gnatsd_subsz_num_subscriptions",
        "gnatsd_routez_num_routes",
        "jetstream_server_jetstream_disabled",
    ] {
        value(&before, name, None);
    }
    assert_eq!(
        value(&before, "jetstream_server_jetstream_disabled", None),
        1.0
    );

    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.send("SUB x 1\r\nPUB x 2\r\nhi\r\nPUB x 2\r\nhi\r\nPUB x 2\r\nhi\r\n");
    client.ping_collect();
    let after = scrape(&server);
    assert_eq!(value(&after, "gnatsd_varz_in_msgs", None), in_before + 3.0);
    assert_eq!(value(&after, "gnatsd_varz_connections", None), 1.0);
    assert_eq!(value(&after, "gnatsd_connz_in_msgs", None), 3.0);
    assert_eq!(value(&after, "gnatsd_connz_out_msgs", None), 3.0);
}

#[tokio::test]
async fn jetstream_figures_per_stream_and_consumer() {
    if test_harness::is_reference() {
        return;
    }
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        monitoring: true,
        ..Default::default()
    });
    let client = connect(&server).await;
    api(
        &client,
        "$JS.API.STREAM.CREATE.ORDERS",
        r#"{"name":"ORDERS","subjects":["orders.>"]}"#,
    )
    .await;
    api(
        &client,
        "$JS.API.CONSUMER.CREATE.ORDERS.worker",
        r#"{"stream_name":"ORDERS","config":{"durable_name":"worker","ack_policy":"explicit","description":"the worker"}}"#,
    )
    .await;
    for _ in 0..4 {
        publish_raw(&client, "orders.new", &[], "order").await;
    }
    let samples = scrape(&server);
    let stream = Some(("stream_name", "ORDERS"));
    assert_eq!(
        value(&samples, "jetstream_stream_total_messages", stream),
        4.0
    );
    assert_eq!(value(&samples, "jetstream_stream_last_seq", stream), 4.0);
    assert_eq!(
        value(&samples, "jetstream_stream_consumer_count", stream),
        1.0
    );
    assert!(value(&samples, "jetstream_stream_total_bytes", stream) > 0.0);
    let consumer = Some(("consumer_name", "worker"));
    assert_eq!(
        value(&samples, "jetstream_consumer_num_pending", consumer),
        4.0
    );
    assert_eq!(
        value(&samples, "jetstream_consumer_num_ack_pending", consumer),
        0.0
    );
    assert_eq!(value(&samples, "jetstream_server_total_streams", None), 1.0);
    assert_eq!(
        value(&samples, "jetstream_server_jetstream_disabled", None),
        0.0
    );
    let labels = &samples
        .iter()
        .find(|sample| sample.name == "jetstream_consumer_num_pending")
        .expect("consumer sample")
        .labels;
    let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
    let mut expected = vec![
        "server_id",
        "server_name",
        "cluster",
        "domain",
        "meta_leader",
        "is_meta_leader",
        "account",
        "account_id",
        "stream_name",
        "stream_leader",
        "is_stream_leader",
        "consumer_name",
        "consumer_leader",
        "is_consumer_leader",
        "consumer_desc",
        "consumer_created",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(labels["consumer_desc"], "the worker");
    assert_eq!(labels["account"], "$G");

    // A fetch of two moves them to ack pending.
    let inbox = client.new_inbox();
    let mut delivered = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish_with_reply(
            "$JS.API.CONSUMER.MSG.NEXT.ORDERS.worker",
            inbox,
            r#"{"batch":2,"expires":1000000000}"#.into(),
        )
        .await
        .expect("fetch request");
    for _ in 0..2 {
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), delivered.next())
            .await
            .expect("a message in time")
            .expect("a message");
        assert_eq!(message.payload.as_ref(), b"order");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let samples = scrape(&server);
        let pending = value(&samples, "jetstream_consumer_num_ack_pending", consumer);
        if pending == 2.0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ack pending stayed {pending}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

//! Priority groups of pull consumers (ADR-42): config validation, the pull-request status
//! replies byte for byte, `pinned_client` (the `Nats-Pin-Id` header, 423s, `CONSUMER.UNPIN`,
//! the pin's timeout and the pinned/unpinned advisories), `overflow` thresholds and
//! `prioritized` order, through raw wire requests and async-nats. Runs against ours or the real
//! nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream::{self, consumer::pull, consumer::PriorityPolicy};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::{RawClient, TestServer};
use tokio::time::timeout;

/// One MSG or HMSG as the wire carries it.
#[derive(Debug)]
struct Frame {
    subject: String,
    /// Not asserted on: JetStream deliveries carry their ack subject here.
    #[allow(dead_code)]
    reply: Option<String>,
    headers: String,
    payload: String,
}

/// A raw connection with one wildcard inbox: replies come back in the order the server sends
/// them, so byte-exact status lines can be compared.
struct Raw {
    client: RawClient,
    prefix: String,
    next: u64,
}

/// Each raw connection gets its own inbox prefix, so connections do not see each other's replies.
static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Raw {
    fn connect(server: &TestServer) -> Raw {
        let mut client =
            RawClient::connect_with(server, r#"{"verbose":false,"headers":true,"protocol":1}"#);
        let id = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = format!("_T{id}");
        client.send(&format!("SUB {prefix}.> 1\r\n"));
        Raw {
            client,
            prefix,
            next: 0,
        }
    }

    /// Publish `body` to `subject` with a fresh reply inbox; returns the inbox.
    fn send(&mut self, subject: &str, body: &str) -> String {
        self.next += 1;
        let inbox = format!("{}.{}", self.prefix, self.next);
        self.client.send(&format!(
            "PUB {subject} {inbox} {}\r\n{body}\r\n",
            body.len()
        ));
        inbox
    }

    /// The next message, or `None` when nothing comes within `wait`.
    fn frame(&mut self, wait: Duration) -> Option<Frame> {
        self.client.timeout = wait;
        loop {
            let line = self.client.read_line()?;
            let parts: Vec<&str> = line.split(' ').collect();
            match parts[0] {
                "PING" => self.client.send("PONG\r\n"),
                "MSG" => {
                    let size: usize = parts[parts.len() - 1].parse().ok()?;
                    let payload = self.client.read_payload(size)?;
                    return Some(Frame {
                        subject: parts[1].to_string(),
                        reply: (parts.len() == 5).then(|| parts[3].to_string()),
                        headers: String::new(),
                        payload: String::from_utf8_lossy(&payload).into_owned(),
                    });
                }
                "HMSG" => {
                    let header_size: usize = parts[parts.len() - 2].parse().ok()?;
                    let size: usize = parts[parts.len() - 1].parse().ok()?;
                    let payload = self.client.read_payload(size)?;
                    return Some(Frame {
                        subject: parts[1].to_string(),
                        reply: (parts.len() == 6).then(|| parts[3].to_string()),
                        headers: String::from_utf8_lossy(&payload[..header_size]).into_owned(),
                        payload: String::from_utf8_lossy(&payload[header_size..]).into_owned(),
                    });
                }
                _ => {}
            }
        }
    }

    fn expect(&mut self) -> Frame {
        self.frame(TIMEOUT).expect("a message in time")
    }

    /// A pull request answered by a status alone: its header block.
    fn pull_status(&mut self, consumer: &str, body: &str) -> String {
        self.send(&format!("$JS.API.CONSUMER.MSG.NEXT.S.{consumer}"), body);
        let frame = self.expect();
        assert_eq!(frame.payload, "", "{frame:?}");
        frame.headers
    }

    /// An API request answered with JSON.
    fn api(&mut self, subject: &str, body: &str) -> Value {
        let inbox = self.send(subject, body);
        let frame = self.expect();
        assert_eq!(frame.subject, inbox);
        serde_json::from_str(&frame.payload).expect("json")
    }
}

fn pin_of(frame: &Frame) -> String {
    frame
        .headers
        .strip_prefix("NATS/1.0\r\nNats-Pin-Id: ")
        .and_then(|rest| rest.strip_suffix("\r\n\r\n"))
        .unwrap_or_else(|| panic!("no pin header in {frame:?}"))
        .to_string()
}

async fn create(client: &async_nats::Client, name: &str, config: Value) -> Value {
    let mut config = config;
    config["durable_name"] = json!(name);
    config["ack_policy"] = json!("explicit");
    api(
        client,
        &format!("$JS.API.CONSUMER.CREATE.S.{name}"),
        &json!({"stream_name": "S", "config": config}).to_string(),
    )
    .await
}

#[tokio::test]
async fn config_is_validated_and_echoed_with_defaults() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 0).await;
    let refused = [
        (json!({"priority_policy": "overflow"}), 10159),
        (
            json!({"priority_policy": "overflow", "priority_groups": [""]}),
            10161,
        ),
        (
            json!({"priority_policy": "overflow", "priority_groups": ["A.B"]}),
            10162,
        ),
        (
            json!({"priority_policy": "overflow", "priority_groups": ["ABCDEFGHIJKLMNOPQ"]}),
            10162,
        ),
        (json!({"priority_groups": ["A"]}), 10196),
        (
            json!({"priority_policy": "none", "priority_timeout": 5}),
            10197,
        ),
        (
            json!({"priority_policy": "overflow", "priority_groups": ["A"], "deliver_subject": "x"}),
            10178,
        ),
    ];
    for (config, code) in refused {
        let response = create(&client, "X", config.clone()).await;
        assert_eq!(
            response["error"]["err_code"], code,
            "{config} -> {response}"
        );
    }
    let bogus = create(
        &client,
        "X",
        json!({"priority_policy": "bogus", "priority_groups": ["A"]}),
    )
    .await;
    assert_eq!(
        bogus["error"]["description"],
        "invalid JSON: unknown priority policy: \"bogus\""
    );
    let pinned = create(
        &client,
        "P",
        json!({"priority_policy": "pinned_client", "priority_groups": ["A", "b-1/_="]}),
    )
    .await;
    let config = &pinned["config"];
    assert_eq!(config["priority_policy"], "pinned_client", "{pinned}");
    assert_eq!(config["priority_groups"], json!(["A", "b-1/_="]));
    assert_eq!(config["priority_timeout"], 120_000_000_000i64);
    assert_eq!(config["metadata"]["_nats.req.level"], "1");
    assert_eq!(
        pinned["priority_groups"],
        json!([{"group": "A", "pinned_ts": "0001-01-01T00:00:00Z"}])
    );
    let prioritized = create(
        &client,
        "Q",
        json!({"priority_policy": "prioritized", "priority_groups": ["A"]}),
    )
    .await;
    assert_eq!(prioritized["config"]["priority_policy"], "prioritized");
    assert!(prioritized["config"].get("priority_timeout").is_none());
    let plain = create(&client, "N", json!({})).await;
    assert!(plain.get("priority_groups").is_none(), "{plain}");
    assert!(plain["config"].get("priority_policy").is_none(), "{plain}");
}

#[tokio::test]
async fn pull_requests_are_checked_with_nats_server_statuses() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 1).await;
    create(
        &client,
        "P",
        json!({"priority_policy": "pinned_client", "priority_groups": ["A"]}),
    )
    .await;
    create(
        &client,
        "O",
        json!({"priority_policy": "overflow", "priority_groups": ["A"]}),
    )
    .await;
    let mut raw = Raw::connect(&server);
    let bad = |reason: &str| format!("NATS/1.0 400 Bad Request - {reason}\r\n\r\n");
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1}"#),
        bad("Priority Group missing")
    );
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1,"group":"C"}"#),
        bad("Invalid Priority Group")
    );
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1,"group":"A","min_pending":1}"#),
        bad("Not a Overflow Priority consumer")
    );
    assert_eq!(
        raw.pull_status("O", r#"{"batch":1,"group":"A","id":"x"}"#),
        bad("Not a Pinned Client Priority consumer")
    );
    assert_eq!(
        raw.pull_status("O", r#"{"batch":1,"group":"A","priority":10}"#),
        bad("Priority must be between 0 and 9")
    );
    // No pin handed out yet: an id the server never gave is refused when it is reached.
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1,"group":"A","id":"bogus"}"#),
        "NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
}

#[tokio::test]
async fn pinned_client_gets_everything_until_unpinned() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 6).await;
    let mut pinned_advisories = client
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.P")
        .await
        .unwrap();
    let mut unpinned_advisories = client
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.P")
        .await
        .unwrap();
    client.flush().await.unwrap();
    create(
        &client,
        "P",
        json!({"priority_policy": "pinned_client", "priority_groups": ["A"]}),
    )
    .await;
    let mut raw = Raw::connect(&server);
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.P",
        r#"{"batch":1,"group":"A"}"#,
    );
    let first = raw.expect();
    assert_eq!(first.payload, "m0");
    let pin = pin_of(&first);
    assert_eq!(pin.len(), 22, "a NUID: {pin}");
    let pinned = timeout(TIMEOUT, pinned_advisories.next())
        .await
        .unwrap()
        .unwrap();
    let pinned: Value = serde_json::from_slice(&pinned.payload).unwrap();
    assert_eq!(
        pinned["type"],
        "io.nats.jetstream.advisory.v1.consumer_group_pinned"
    );
    assert_eq!(pinned["account"], "$G");
    assert_eq!(pinned["group"], "A");
    assert_eq!(pinned["pinned_id"], pin.as_str());
    let info = raw.api("$JS.API.CONSUMER.INFO.S.P", "");
    assert_eq!(info["priority_groups"][0]["group"], "A", "{info}");
    assert_eq!(info["priority_groups"][0]["pinned_client_id"], pin.as_str());
    assert_ne!(
        info["priority_groups"][0]["pinned_ts"],
        "0001-01-01T00:00:00Z"
    );
    // Another client without the pin waits on standby: nothing until its request expires.
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1,"group":"A","expires":300000000}"#),
        "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
    assert_eq!(
        raw.pull_status("P", r#"{"batch":1,"group":"A","id":"wrong"}"#),
        "NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
    );
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.P",
        &json!({"batch": 1, "group": "A", "id": pin}).to_string(),
    );
    let second = raw.expect();
    assert_eq!(second.payload, "m1");
    assert_eq!(pin_of(&second), pin);
    // UNPIN and its errors.
    let unpin = |body: &str| raw_unpin(&server, "P", body);
    assert_eq!(
        unpin(r#"{"group":"C"}"#),
        json!({"type": "io.nats.jetstream.api.v1.consumer_unpin_response", "error": {"code": 400, "err_code": 10160, "description": "Provided priority group does not exist for this consumer"}})
    );
    assert_eq!(
        unpin(r#"{"group":""}"#)["error"]["description"],
        "invalid JSON: consumer group not specified"
    );
    assert_eq!(
        unpin("")["error"]["description"],
        "invalid JSON: unexpected end of JSON input"
    );
    assert_eq!(unpin(r#"{"group":"A.B"}"#)["error"]["err_code"], 10162);
    assert_eq!(
        unpin(r#"{"group":5}"#)["error"]["description"],
        "invalid JSON: json: cannot unmarshal number into Go struct field JSApiConsumerUnpinRequest.group of type string"
    );
    assert_eq!(
        raw_unpin(&server, "NOPE", r#"{"group":"A"}"#)["error"]["err_code"],
        10014
    );
    assert_eq!(
        unpin(r#"{"group":"A","extra":1}"#),
        json!({"type": "io.nats.jetstream.api.v1.consumer_unpin_response"})
    );
    let unpinned = timeout(TIMEOUT, unpinned_advisories.next())
        .await
        .unwrap()
        .unwrap();
    let unpinned: Value = serde_json::from_slice(&unpinned.payload).unwrap();
    assert_eq!(
        unpinned["type"],
        "io.nats.jetstream.advisory.v1.consumer_group_unpinned"
    );
    assert_eq!(unpinned["reason"], "admin");
    // The old pin is now refused when reached; a request without one takes a new pin.
    assert_eq!(
        raw.pull_status(
            "P",
            &json!({"batch": 1, "group": "A", "id": pin}).to_string()
        ),
        "NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.P",
        r#"{"batch":1,"group":"A"}"#,
    );
    let third = raw.expect();
    assert_eq!(third.payload, "m2");
    assert_ne!(pin_of(&third), pin);
}

/// One UNPIN request on its own connection (answers are JSON).
fn raw_unpin(server: &TestServer, consumer: &str, body: &str) -> Value {
    Raw::connect(server).api(&format!("$JS.API.CONSUMER.UNPIN.S.{consumer}"), body)
}

#[tokio::test]
async fn a_pin_lapses_after_priority_timeout() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 2).await;
    let mut unpinned = client
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.P")
        .await
        .unwrap();
    client.flush().await.unwrap();
    create(
        &client,
        "P",
        json!({"priority_policy": "pinned_client", "priority_groups": ["A"], "priority_timeout": 500_000_000}),
    )
    .await;
    let mut raw = Raw::connect(&server);
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.P",
        r#"{"batch":1,"group":"A"}"#,
    );
    let pin = pin_of(&raw.expect());
    let lapsed = timeout(TIMEOUT, unpinned.next()).await.unwrap().unwrap();
    let lapsed: Value = serde_json::from_slice(&lapsed.payload).unwrap();
    assert_eq!(lapsed["reason"], "timeout");
    assert_eq!(lapsed["group"], "A");
    let info = raw.api("$JS.API.CONSUMER.INFO.S.P", "");
    assert!(
        info["priority_groups"][0].get("pinned_client_id").is_none(),
        "{info}"
    );
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.P",
        r#"{"batch":1,"group":"A"}"#,
    );
    let next = raw.expect();
    assert_eq!(next.payload, "m1");
    assert_ne!(pin_of(&next), pin);
}

#[tokio::test]
async fn overflow_serves_a_request_once_its_threshold_is_reached() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 10).await;
    create(
        &client,
        "O",
        json!({"priority_policy": "overflow", "priority_groups": ["A"]}),
    )
    .await;
    let mut raw = Raw::connect(&server);
    // 10 pending: a request that waits for 20 is not served.
    assert_eq!(
        raw.pull_status(
            "O",
            r#"{"batch":1,"group":"A","min_pending":20,"expires":300000000}"#
        ),
        "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.O",
        r#"{"batch":1,"group":"A","min_pending":10}"#,
    );
    let first = raw.expect();
    assert_eq!(first.payload, "m0");
    assert_eq!(first.headers, "", "no pin header for overflow");
    // One unacknowledged: a request for min_ack_pending 1 is served, one for 2 is not.
    assert_eq!(
        raw.pull_status(
            "O",
            r#"{"batch":1,"group":"A","min_ack_pending":2,"expires":300000000}"#
        ),
        "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"
    );
    raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.O",
        r#"{"batch":1,"group":"A","min_ack_pending":1}"#,
    );
    assert_eq!(raw.expect().payload, "m1");
    // Through async-nats: a fetch with the group and no thresholds gets messages at once.
    let context = jetstream::new(client.clone());
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("S")
        .await
        .unwrap()
        .get_consumer("O")
        .await
        .unwrap();
    assert_eq!(
        consumer.cached_info().config.priority_policy,
        PriorityPolicy::Overflow
    );
    let mut batch = consumer
        .fetch()
        .group("A")
        .max_messages(2)
        .messages()
        .await
        .unwrap();
    let mut payloads = Vec::new();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        payloads.push(String::from_utf8(message.unwrap().payload.to_vec()).unwrap());
    }
    assert_eq!(payloads, ["m2", "m3"]);
}

#[tokio::test]
async fn prioritized_serves_the_lowest_priority_first() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 0).await;
    create(
        &client,
        "R",
        json!({"priority_policy": "prioritized", "priority_groups": ["A"]}),
    )
    .await;
    let mut raw = Raw::connect(&server);
    let relaxed = raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.R",
        r#"{"batch":1,"group":"A","priority":5,"expires":2000000000}"#,
    );
    let urgent = raw.send(
        "$JS.API.CONSUMER.MSG.NEXT.S.R",
        r#"{"batch":1,"group":"A","priority":1,"expires":2000000000}"#,
    );
    // Both requests are queued before the message exists.
    for _ in 0..100 {
        let info = api(&client, "$JS.API.CONSUMER.INFO.S.R", "").await;
        if info["num_waiting"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    jetstream::new(client.clone())
        .publish("s.x", "first".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let delivered = raw.expect();
    assert_eq!(delivered.payload, "first");
    // The message went to the priority 1 request: its reply inbox is not on a JetStream
    // delivery, so tell by which request is left to time out.
    let _ = urgent;
    let timed_out = raw.expect();
    assert!(
        timed_out
            .headers
            .starts_with("NATS/1.0 408 Request Timeout"),
        "{timed_out:?}"
    );
    assert_eq!(
        timed_out.subject, relaxed,
        "the priority 5 request was left"
    );
}

#[tokio::test]
async fn async_nats_pinned_stream_and_unpin() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 3).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("S").await.unwrap();
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("P".into()),
            priority_policy: PriorityPolicy::PinnedClient,
            priority_groups: vec!["A".into()],
            priority_timeout: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = consumer
        .stream()
        .group("A")
        .expires(Duration::from_secs(1))
        .messages()
        .await
        .unwrap();
    let mut pins = Vec::new();
    for expected in ["m0", "m1", "m2"] {
        let message = timeout(TIMEOUT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(message.payload, expected);
        let headers = message.headers.clone().expect("pin header");
        pins.push(headers.get("Nats-Pin-Id").expect("pin").to_string());
        message.ack().await.unwrap();
    }
    assert!(pins.windows(2).all(|pair| pair[0] == pair[1]), "{pins:?}");
    let mut consumer = consumer;
    let info = consumer.info().await.unwrap().clone();
    assert_eq!(
        info.priority_groups[0].pinned_client_id,
        Some(pins[0].clone())
    );
    stream.unpin_consumer("P", "A").await.unwrap();
    assert!(stream.unpin_consumer("P", "Z").await.is_err());
}

//! Consumer API golden fixtures captured from nats-server v2.15.1: decode, re-encode, same bytes.
//! Also the request side: what clients send decodes (strictly) into our request types.

use jetstream_api::json::{decode_request, encode_response};
use jetstream_api::{
    AckPolicy, ConsumerAction, ConsumerInfoResponse, ConsumerListResponse, ConsumerNamesResponse,
    ConsumerPauseResponse, CreateConsumerRequest, DeliverPolicy, Nanos, NextRequest,
    PriorityPolicy, SuccessResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn assert_bytes_round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = fixture(name);
    let value: T = serde_json::from_slice(&original)
        .unwrap_or_else(|error| panic!("{name}: decode failed: {error}"));
    let encoded = encode_response(&value);
    assert_eq!(
        String::from_utf8_lossy(&encoded),
        String::from_utf8_lossy(&original),
        "{name}: re-encoded bytes differ"
    );
    value
}

#[test]
fn create_and_info_responses() {
    for name in [
        "consumer_create_pull",
        "consumer_create_ephemeral",
        "consumer_create_push",
        "consumer_create_full",
        "consumer_create_start_time",
        "consumer_durable_create",
        "consumer_info",
        "consumer_info_after_ack",
        "error_consumer_exists",
        "error_consumer_does_not_exist",
        "error_consumer_unknown_field",
        "error_consumer_bad_action",
        "error_consumer_not_found",
    ] {
        let response: ConsumerInfoResponse = assert_bytes_round_trip(name);
        assert_eq!(
            response.error.is_some(),
            name.starts_with("error"),
            "{name}"
        );
        assert_eq!(
            response.info.is_some(),
            !name.starts_with("error"),
            "{name}"
        );
    }
}

#[test]
fn pull_defaults_as_nats_server_fills_them() {
    let response: ConsumerInfoResponse = assert_bytes_round_trip("consumer_create_pull");
    let info = response.info.unwrap();
    let config = info.config.unwrap();
    assert_eq!(config.ack_wait, Nanos::from_secs(30));
    assert_eq!(config.max_deliver, -1);
    assert_eq!(config.max_waiting, 512);
    assert_eq!(config.max_ack_pending, 1000);
    assert_eq!(config.replicas, 0);
    assert!(config.is_pull() && config.is_durable());
    assert_eq!(info.num_pending, 3);
    assert!(info.delivered.last_active.is_none());
}

#[test]
fn full_and_push_configs() {
    let response: ConsumerInfoResponse = assert_bytes_round_trip("consumer_create_full");
    let info = response.info.unwrap();
    let config = info.config.unwrap();
    assert_eq!(config.deliver_policy, DeliverPolicy::ByStartSequence);
    assert_eq!(config.ack_policy, AckPolicy::All);
    assert_eq!(config.filters(), vec!["c.1", "c.2"]);
    assert_eq!(config.priority_policy, PriorityPolicy::Overflow);
    assert!(info.paused);
    assert!(info.priority_groups[0].pinned_time.is_zero());

    let response: ConsumerInfoResponse = assert_bytes_round_trip("consumer_create_push");
    let config = response.info.unwrap().config.unwrap();
    assert_eq!(config.deliver_subject, "push.out");
    assert_eq!(
        config.backoff,
        vec![Nanos::from_secs(1), Nanos::from_secs(2)]
    );
    assert!(config.flow_control && config.headers_only);

    let response: ConsumerInfoResponse = assert_bytes_round_trip("consumer_create_start_time");
    let start = response
        .info
        .unwrap()
        .config
        .unwrap()
        .opt_start_time
        .unwrap();
    assert_eq!(start.to_rfc3339(), "2026-01-01T00:00:00+02:00");

    let response: ConsumerInfoResponse = assert_bytes_round_trip("consumer_info_after_ack");
    let info = response.info.unwrap();
    assert_eq!(info.ack_floor.stream_sequence, 2);
    assert!(info.ack_floor.last_active.is_some());
}

#[test]
fn names_list_pause_delete() {
    let names: ConsumerNamesResponse = assert_bytes_round_trip("consumer_names");
    assert_eq!(names.consumers.len(), 6);
    let names: ConsumerNamesResponse = assert_bytes_round_trip("consumer_names_past_end");
    assert!(names.consumers.is_empty());
    let list: ConsumerListResponse = assert_bytes_round_trip("consumer_list");
    assert_eq!(list.consumers.len(), 6);
    let pause: ConsumerPauseResponse = assert_bytes_round_trip("consumer_pause");
    assert!(pause.paused);
    let resume: ConsumerPauseResponse = assert_bytes_round_trip("consumer_resume");
    assert!(!resume.paused && resume.pause_until.is_zero());
    let _: ConsumerPauseResponse = assert_bytes_round_trip("error_consumer_pause_not_found");
    for name in ["consumer_delete", "error_consumer_delete_not_found"] {
        let _: SuccessResponse = assert_bytes_round_trip(name);
    }
}

#[test]
fn create_requests_decode_strictly() {
    let request: CreateConsumerRequest = decode_request(
        br#"{"stream_name":"C","config":{"durable_name":"PULL","ack_policy":"explicit"},"action":"create"}"#,
    )
    .unwrap();
    assert_eq!(request.stream_name, "C");
    assert_eq!(request.action, ConsumerAction::Create);
    assert_eq!(request.config.ack_policy, AckPolicy::Explicit);

    let error = decode_request::<CreateConsumerRequest>(
        br#"{"stream_name":"C","config":{"durable_name":"BAD","bogus":1}}"#,
    )
    .unwrap_err();
    assert_eq!(
        error.description,
        r#"invalid JSON: json: unknown field "bogus""#
    );
    let error = decode_request::<CreateConsumerRequest>(
        br#"{"stream_name":"C","config":{"durable_name":"BAD"},"action":"bogus"}"#,
    )
    .unwrap_err();
    // Same text as the captured error_consumer_bad_action fixture.
    assert_eq!(
        error.description,
        r#"invalid JSON: unknown consumer action: "bogus""#
    );
    let request: CreateConsumerRequest = decode_request(b"").unwrap();
    assert_eq!(request, CreateConsumerRequest::default());
}

#[test]
fn client_request_encodes_like_clients_send_it() {
    let request = CreateConsumerRequest {
        stream_name: "C".into(),
        config: jetstream_api::ConsumerConfig {
            durable_name: "D".into(),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        },
        action: ConsumerAction::CreateOrUpdate,
        pedantic: false,
    };
    assert_eq!(
        String::from_utf8(encode_response(&request)).unwrap(),
        r#"{"stream_name":"C","config":{"durable_name":"D","deliver_policy":"all","ack_policy":"explicit","replay_policy":"instant","num_replicas":0},"action":""}"#
    );
}

#[test]
fn pull_request_bodies() {
    let request = NextRequest::parse(br#"{"batch": 2, "expires": 300000000}"#).unwrap();
    assert_eq!((request.batch, request.expires), (2, Nanos(300_000_000)));
    let request = NextRequest::parse(br#"{"expires": 1000000000}"#).unwrap();
    assert_eq!(request.batch, 0, "missing batch is Go's zero inside JSON");
    assert_eq!(NextRequest::parse(b"").unwrap().batch, 1);
    assert_eq!(NextRequest::parse(b" 12 ").unwrap().batch, 12);
    assert_eq!(NextRequest::parse(b"abc").unwrap().batch, 1);
    // Unknown fields are ignored (nats-server uses plain json.Unmarshal here).
    let request =
        NextRequest::parse(br#"{"batch":1,"bogus":1,"no_wait":true,"group":"A"}"#).unwrap();
    assert!(request.no_wait);
    assert_eq!(request.group, "A");
    // Same text nats-server put in its `400 Bad Request - ...` status for this body.
    assert_eq!(
        NextRequest::parse(b"{bad").unwrap_err(),
        "invalid character 'b' looking for beginning of object key string"
    );
    assert_eq!(
        NextRequest::parse(br#"{"batch":"x"}"#).unwrap_err(),
        "json: cannot unmarshal string into Go struct field JSApiConsumerGetNextRequest.batch of type int"
    );
    assert_eq!(
        NextRequest::parse(br#"{"batch":1,"expires":1000000000,"idle_heartbeat":600000000}"#)
            .unwrap_err(),
        "heartbeat value too large"
    );
    let request = NextRequest {
        batch: 10,
        expires: Nanos::from_secs(5),
        no_wait: true,
        ..NextRequest::default()
    };
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"expires":5000000000,"batch":10,"no_wait":true}"#
    );
}

#[test]
fn delivered_reply_subject_parses() {
    let captured: serde_json::Value = serde_json::from_slice(&fixture("delivered_reply")).unwrap();
    let reply = captured["reply"].as_str().unwrap();
    let ack = jetstream_api::AckSubject::parse(reply).unwrap();
    assert_eq!((ack.stream, ack.consumer), ("C", "PULL"));
    assert_eq!(ack.stream_sequence, 1);
    assert_eq!(ack.to_string(), reply);
}

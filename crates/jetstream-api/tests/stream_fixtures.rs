//! Golden fixtures captured from a real nats-server v2.15.1 (`nats-server -js`, raw requests):
//! each one must decode into our type and encode back to the very same bytes.

use jetstream_api::json::encode_response;
use jetstream_api::{
    MsgGetResponse, PubAck, StreamCreateResponse, StreamInfoResponse, StreamListPage,
    StreamListResponse, StreamNamesResponse, StreamPurgeResponse, StreamUpdateResponse,
    SuccessResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Decodes, re-encodes, and demands byte equality with what nats-server sent.
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
fn stream_create_responses() {
    for name in [
        "stream_create_minimal",
        "stream_create_full",
        "stream_create_counter",
        "stream_create_mirror",
        "stream_create_small_max_age",
        "stream_create_zeroes",
        "stream_create_existing",
        "error_bad_json",
        "error_name_mismatch",
        "error_replicas",
        "error_stream_name_in_use",
        "error_subject_overlap",
        "error_unknown_field",
        "error_schedules_discard_new",
        "error_async_with_atomic",
    ] {
        let response: StreamCreateResponse = assert_bytes_round_trip(name);
        assert_eq!(
            response.response_type,
            "io.nats.jetstream.api.v1.stream_create_response"
        );
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
fn minimal_create_has_server_defaults() {
    let response: StreamCreateResponse = assert_bytes_round_trip("stream_create_minimal");
    assert!(response.did_create);
    let info = response.info.unwrap();
    let config = &info.config;
    assert_eq!(config.name, "ORDERS");
    assert_eq!(config.subjects, vec!["orders.>"]);
    assert_eq!(
        (config.max_msgs, config.max_bytes, config.max_consumers),
        (-1, -1, -1)
    );
    assert_eq!(config.max_msg_size, -1);
    assert_eq!(config.duplicate_window.0, 120_000_000_000);
    assert_eq!(config.replicas, 1);
    assert_eq!(config.metadata.get("_nats.ver").unwrap(), "2.15.1");
    assert!(info.state.first_time.is_zero());
    assert_eq!(info.state.first_time.to_rfc3339(), "0001-01-01T00:00:00Z");
}

#[test]
fn full_create_keeps_every_option() {
    let response: StreamCreateResponse = assert_bytes_round_trip("stream_create_full");
    let config = response.info.unwrap().config;
    assert_eq!(config.retention, jetstream_api::RetentionPolicy::Interest);
    assert_eq!(config.storage, jetstream_api::StorageType::Memory);
    assert_eq!(config.discard, jetstream_api::DiscardPolicy::New);
    assert_eq!(config.compression, jetstream_api::Compression::S2);
    assert!(config.discard_new_per_subject && config.allow_rollup && config.allow_msg_ttl);
    assert_eq!(config.subject_delete_marker_ttl.0, 1_000_000_000);
    assert_eq!(config.consumer_limits.max_ack_pending, 100);
    assert_eq!(config.placement.unwrap().tags, vec!["t"]);
    assert_eq!(config.republish.unwrap().destination, "rp.>");
    assert_eq!(config.first_seq, 5);
}

#[test]
fn stream_info_and_update_responses() {
    for name in [
        "stream_info",
        "stream_info_mirror",
        "stream_info_subjects",
        "error_stream_not_found",
    ] {
        let response: StreamInfoResponse = assert_bytes_round_trip(name);
        assert_eq!(
            response.error.is_some(),
            name.starts_with("error"),
            "{name}"
        );
    }
    let response: StreamInfoResponse = assert_bytes_round_trip("stream_info_subjects");
    assert_eq!(response.paged.limit, 100_000);
    assert_eq!(
        response.info.unwrap().state.subjects.get("orders.1"),
        Some(&1)
    );
    let response: StreamInfoResponse = assert_bytes_round_trip("stream_info_mirror");
    assert_eq!(response.info.unwrap().mirror.unwrap().active.0, -1);
    let response: StreamUpdateResponse = assert_bytes_round_trip("stream_update");
    assert_eq!(response.info.unwrap().config.max_msgs, 100);
}

#[test]
fn names_list_purge_delete_get() {
    let names: StreamNamesResponse = assert_bytes_round_trip("stream_names");
    assert_eq!(names.streams, Some(vec!["ORDERS".to_string()]));
    let empty: StreamNamesResponse = assert_bytes_round_trip("stream_names_empty");
    assert!(empty.streams.is_none());
    let list: StreamListResponse = assert_bytes_round_trip("stream_list");
    assert_eq!(list.streams.len(), 1);
    let _: StreamListResponse = assert_bytes_round_trip("stream_list_empty");
    let purge: StreamPurgeResponse = assert_bytes_round_trip("stream_purge");
    assert_eq!(purge.purged, 1);
    let purge: StreamPurgeResponse = assert_bytes_round_trip("error_purge_bad_request");
    assert_eq!(purge.error.unwrap().err_code, 10003);
    for name in [
        "stream_delete",
        "stream_msg_delete",
        "error_stream_delete_not_found",
    ] {
        let _: SuccessResponse = assert_bytes_round_trip(name);
    }
    let get: MsgGetResponse = assert_bytes_round_trip("stream_msg_get");
    let message = get.message.unwrap();
    assert_eq!(
        jetstream_api::base64::decode(&message.data_base64).unwrap(),
        b"hello"
    );
    let get: MsgGetResponse = assert_bytes_round_trip("stream_msg_get_headers");
    let headers = jetstream_api::base64::decode(&get.message.unwrap().headers_base64).unwrap();
    assert_eq!(headers, b"NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n");
    let _: MsgGetResponse = assert_bytes_round_trip("error_no_message_found");
}

#[test]
fn pub_acks() {
    let ack: PubAck = assert_bytes_round_trip("pub_ack");
    assert_eq!(ack, PubAck::ok("ORDERS", 1));
    let ack: PubAck = assert_bytes_round_trip("pub_ack_error");
    assert_eq!(ack.error.as_ref().unwrap().err_code, 10071);
    assert_eq!(
        ack,
        PubAck::error(
            "ORDERS",
            jetstream_api::errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &2)])
        )
    );
    let _: PubAck = assert_bytes_round_trip("pub_ack_error_ttl_disabled");
    // nats-server hand-writes the duplicate ack with a space after the colon: same JSON value.
    let original = fixture("pub_ack_duplicate");
    let ack: PubAck = serde_json::from_slice(&original).unwrap();
    assert!(ack.duplicate);
    let expected: serde_json::Value = serde_json::from_slice(&original).unwrap();
    assert_eq!(serde_json::to_value(&ack).unwrap(), expected);
}

#[test]
fn stream_config_request_decodes_strictly_with_pedantic() {
    use jetstream_api::json::decode_request;
    use jetstream_api::StreamConfigRequest;
    let request: StreamConfigRequest =
        decode_request(br#"{"name":"ORDERS","subjects":["orders.>"],"pedantic":true}"#).unwrap();
    assert!(request.pedantic);
    assert_eq!(request.config.subjects, vec!["orders.>"]);
    assert_eq!(request.config.max_msgs, 0, "defaults are the server's job");
    let error = decode_request::<StreamConfigRequest>(
        br#"{"name":"BAD","subjects":["bad"],"bogus_field":1}"#,
    )
    .unwrap_err();
    // The exact description nats-server sent (fixture error_unknown_field).
    let expected: StreamCreateResponse =
        serde_json::from_slice(&fixture("error_unknown_field")).unwrap();
    assert_eq!(Some(error), expected.error);
    let error = decode_request::<StreamConfigRequest>(br#"{"name": "BAD", "subjects": ["bad"]"#)
        .unwrap_err();
    let expected: StreamCreateResponse =
        serde_json::from_slice(&fixture("error_bad_json")).unwrap();
    assert_eq!(Some(error), expected.error);
    let request: StreamConfigRequest = decode_request(b"").unwrap();
    assert_eq!(request, StreamConfigRequest::default());
    assert_eq!(
        serde_json::to_value(&request).unwrap()["name"],
        serde_json::json!("")
    );
}

#[test]
fn info_and_purge_requests() {
    use jetstream_api::json::decode_request;
    use jetstream_api::{MsgGetRequest, StreamInfoRequest, StreamPurgeRequest};
    let request: StreamInfoRequest =
        decode_request(br#"{"subjects_filter":">","deleted_details":true,"offset":5}"#).unwrap();
    assert_eq!(request.subjects_filter, ">");
    assert!(request.deleted_details);
    assert!(decode_request::<StreamInfoRequest>(br#"{"bogus":1}"#).is_err());
    let request: StreamPurgeRequest = decode_request(br#"{"filter":"orders.2","keep":1}"#).unwrap();
    assert_eq!((request.filter.as_str(), request.keep), ("orders.2", 1));
    let request: MsgGetRequest = decode_request(br#"{"last_by_subj":"ttl.a"}"#).unwrap();
    assert_eq!(request.last_by_subject, "ttl.a");
}

#[test]
fn negative_paging_offsets_are_accepted_and_clamped_like_go() {
    use jetstream_api::json::decode_request;
    use jetstream_api::{ConsumersRequest, StreamInfoRequest, StreamNamesRequest};
    let request: StreamNamesRequest = decode_request(br#"{"offset":-1}"#).unwrap();
    assert_eq!(request.offset, 0);
    let request: StreamInfoRequest = decode_request(br#"{"offset":-5}"#).unwrap();
    assert_eq!(request.offset, 0);
    let request: ConsumersRequest = decode_request(br#"{"offset":-2}"#).unwrap();
    assert_eq!(request.offset, 0);
    let request: ConsumersRequest = decode_request(br#"{"offset":7}"#).unwrap();
    assert_eq!(request.offset, 7);
    assert!(decode_request::<ConsumersRequest>(br#"{"offset":"x"}"#).is_err());
}

/// A page written stream by stream with each config encoded on its own is what nats-server sent
/// (one stream, none) and what encoding the whole response writes (several, with a mirror,
/// sources, cluster and domain).
#[test]
fn list_pages_written_stream_by_stream() {
    let write = |response: &StreamListResponse| {
        let mut page = StreamListPage::new(&response.paged, response.streams.len());
        for info in &response.streams {
            page.push(&encode_response(&info.config), info);
        }
        page.finish()
    };
    for name in ["stream_list", "stream_list_empty"] {
        let response: StreamListResponse = serde_json::from_slice(&fixture(name)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&write(&response)),
            String::from_utf8_lossy(&fixture(name)),
            "{name}"
        );
    }
    let mut streams = Vec::new();
    for name in ["stream_info", "stream_info_mirror", "stream_info_subjects"] {
        let response: StreamInfoResponse = serde_json::from_slice(&fixture(name)).unwrap();
        streams.push(response.info.unwrap());
    }
    let mut sourced = streams[0].clone();
    sourced.sources = streams[1].mirror.clone().into_iter().collect();
    sourced.domain = "hub<1>".to_string();
    sourced.config.subjects = vec!["a.>".to_string(), "b.<&>".to_string()];
    streams.push(sourced);
    let paged = jetstream_api::Paged {
        total: 9,
        offset: 5,
        limit: 256,
    };
    let response = StreamListResponse::ok(streams, paged);
    let written = write(&response);
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&encode_response(&response))
    );
    let decoded: StreamListResponse = serde_json::from_slice(&written).unwrap();
    assert_eq!(decoded, response);
}

/// STREAM.INFO answers written with the config encoded on its own are nats-server's bytes.
#[test]
fn info_answers_written_with_an_encoded_config() {
    for name in ["stream_info", "stream_info_mirror", "stream_info_subjects"] {
        let response: StreamInfoResponse = serde_json::from_slice(&fixture(name)).unwrap();
        let info = response.info.as_ref().unwrap();
        let written =
            StreamInfoResponse::encode_ok(info, &encode_response(&info.config), &response.paged);
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&fixture(name)),
            "{name}"
        );
    }
}

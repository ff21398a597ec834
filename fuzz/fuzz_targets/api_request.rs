//! `$JS.API` request bodies through the decoders and the checks the handlers run after them:
//! STREAM.CREATE/UPDATE, CONSUMER.CREATE, CONSUMER.MSG.NEXT (pull requests), STREAM.MSG.GET,
//! STREAM.MSG.DELETE, STREAM.PURGE, STREAM.INFO, the list requests.
//!
//! The first byte picks the request and the mode. Raw mode: the rest is the body. Structured
//! mode: a valid body of that request, then edits read from the rest (field, value) pairs, each
//! setting one known field (of `config` for the create requests) to one of a list of
//! awkward values, so the mutations reach the checks behind the decoder.
//!
//! Asserted: no panic; a refusal is a 4xx/5xx ApiError with an err_code (what the client gets);
//! a config the checks accept is accepted again unchanged when checked a second time and when
//! re-decoded from its own JSON (what a restart does with the stored config).

#![no_main]

use jetstream_api::consumer_api::{ConsumersRequest, CreateConsumerRequest};
use jetstream_api::json::{decode_request, decode_request_with, encode_response, Strictness};
use jetstream_api::stream_api::{
    MsgDeleteRequest, MsgGetRequest, StreamConfigRequest, StreamInfoRequest, StreamNamesRequest,
    StreamPurgeRequest,
};
use jetstream_api::{ApiError, ConsumerConfig, StreamConfig};
use libfuzzer_sys::fuzz_target;
use nats_jetstream::fuzzing;
use serde_json::{json, Value};

const STREAM_FIELDS: &[&str] = &[
    "name",
    "description",
    "subjects",
    "retention",
    "max_consumers",
    "max_msgs",
    "max_bytes",
    "max_age",
    "max_msgs_per_subject",
    "max_msg_size",
    "discard",
    "storage",
    "num_replicas",
    "no_ack",
    "duplicate_window",
    "placement",
    "mirror",
    "sources",
    "compression",
    "first_seq",
    "subject_transform",
    "republish",
    "allow_direct",
    "mirror_direct",
    "discard_new_per_subject",
    "sealed",
    "deny_delete",
    "deny_purge",
    "allow_rollup_hdrs",
    "consumer_limits",
    "allow_msg_ttl",
    "subject_delete_marker_ttl",
    "allow_msg_counter",
    "allow_atomic",
    "allow_msg_schedules",
    "persist_mode",
    "allow_batched",
    "metadata",
    "pedantic",
];

const CONSUMER_FIELDS: &[&str] = &[
    "durable_name",
    "name",
    "description",
    "deliver_policy",
    "opt_start_seq",
    "opt_start_time",
    "ack_policy",
    "ack_wait",
    "max_deliver",
    "backoff",
    "filter_subject",
    "filter_subjects",
    "replay_policy",
    "rate_limit_bps",
    "sample_freq",
    "max_waiting",
    "max_ack_pending",
    "flow_control",
    "headers_only",
    "max_batch",
    "max_expires",
    "max_bytes",
    "deliver_subject",
    "deliver_group",
    "idle_heartbeat",
    "inactive_threshold",
    "num_replicas",
    "mem_storage",
    "direct",
    "metadata",
    "pause_until",
    "priority_groups",
    "priority_policy",
    "priority_timeout",
];

const REQUEST_FIELDS: &[&str] = &[
    "batch",
    "expires",
    "no_wait",
    "max_bytes",
    "idle_heartbeat",
    "group",
    "min_pending",
    "min_ack_pending",
    "id",
    "priority",
    "seq",
    "last_by_subj",
    "next_by_subj",
    "start_time",
    "multi_last",
    "up_to_seq",
    "up_to_time",
    "filter",
    "keep",
    "no_erase",
    "offset",
    "subject",
    "subjects_filter",
    "deleted_details",
    "stream_name",
    "action",
    "pedantic",
];

fn value(index: u8) -> Value {
    let long = "x".repeat(300);
    let values = [
        json!(0),
        json!(-1),
        json!(1),
        json!(2),
        json!(5),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e300),
        json!(-0.5),
        json!(""),
        json!("a"),
        json!("a.b"),
        json!("*"),
        json!(">"),
        json!("a.*.>"),
        json!("a b"),
        json!("a/b"),
        json!("limits"),
        json!("interest"),
        json!("workqueue"),
        json!("file"),
        json!("memory"),
        json!("all"),
        json!("last"),
        json!("new"),
        json!("by_start_sequence"),
        json!("by_start_time"),
        json!("last_per_subject"),
        json!("explicit"),
        json!("none"),
        json!("instant"),
        json!("original"),
        json!("s2"),
        json!("old"),
        json!("pinned_client"),
        json!("overflow"),
        json!("prioritized"),
        json!("create"),
        json!("update"),
        json!(true),
        json!(false),
        Value::Null,
        json!([]),
        json!(["a"]),
        json!(["a", "a"]),
        json!(["*", ">"]),
        json!(["a.>", "a.b"]),
        json!([1, 2, 3]),
        json!([-1]),
        json!([1_000_000_000, 0]),
        json!({}),
        json!({"name": "x"}),
        json!({"name": "x", "opt_start_seq": 3, "filter_subject": "a"}),
        json!([{"name": "x"}, {"name": "x"}]),
        json!({"src": "a", "dest": "b"}),
        json!({"src": ">", "dest": "{{wildcard(1)}}"}),
        json!({"k": "v"}),
        json!({"max_ack_pending": -1, "inactive_threshold": 1}),
        json!("2026-01-01T00:00:00Z"),
        json!("0001-01-01T00:00:00Z"),
        json!("garbage-time"),
        json!(long),
        json!(["group"]),
        json!(["a", ""]),
        json!(4_611_686_018_427_387_904i64),
        json!(1_000_000),
        json!({"cluster": "c", "tags": ["t"]}),
    ];
    values[usize::from(index) % values.len()].clone()
}

/// The base body and the fields edits may set, for request `kind`.
fn base(kind: u8) -> (Value, &'static [&'static str], bool) {
    match kind {
        0 | 1 => (
            json!({"name": "S", "subjects": ["s.>"]}),
            STREAM_FIELDS,
            false,
        ),
        2 | 3 => (
            json!({"stream_name": "S", "config": {"durable_name": "D", "ack_policy": "explicit"}}),
            CONSUMER_FIELDS,
            true,
        ),
        _ => (json!({"batch": 1}), REQUEST_FIELDS, false),
    }
}

fn structured(kind: u8, edits: &[u8]) -> Vec<u8> {
    let (mut body, fields, nested) = base(kind);
    for pair in edits.chunks_exact(2) {
        let field = fields[usize::from(pair[0]) % fields.len()];
        let target = if nested && pair[0] < 0x80 {
            &mut body["config"]
        } else {
            &mut body
        };
        if let Value::Object(map) = target {
            if pair[1] == 0xff {
                map.remove(field);
            } else {
                map.insert(field.to_string(), value(pair[1]));
            }
        }
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// A decoding refusal is what the client gets: an ApiError with a status and an err_code.
fn refusal(error: &ApiError) {
    assert!((400..600).contains(&error.code), "{error:?}");
    assert_ne!(error.err_code, 0, "{error:?}");
}

fn stream_checks(body: &[u8]) {
    let request: StreamConfigRequest = match decode_request(body) {
        Ok(request) => request,
        Err(error) => return refusal(&error),
    };
    let checked = match fuzzing::check_stream_config(&request.config, request.pedantic) {
        Ok(checked) => checked,
        Err(error) => return refusal(&error),
    };
    // What a restart does: the stored JSON decoded and checked again, same config.
    let stored = encode_response(&checked);
    let reread: StreamConfig = decode_request(&stored).unwrap_or_else(|error| {
        panic!(
            "stored config does not decode: {error:?}\n{}",
            String::from_utf8_lossy(&stored)
        )
    });
    assert_eq!(reread, checked, "stored config decodes differently");
    let again = fuzzing::check_stream_config(&reread, false)
        .unwrap_or_else(|error| panic!("accepted config refused when checked again: {error:?}"));
    assert_eq!(again, checked, "checking twice changes the config");
    if let Err(error) = fuzzing::check_stream_update(&checked, &request.config, false) {
        refusal(&error);
    }
}

fn consumer_checks(body: &[u8]) {
    let request: CreateConsumerRequest = match decode_request(body) {
        Ok(request) => request,
        Err(error) => return refusal(&error),
    };
    let stream = fuzzing::check_stream_config(
        &StreamConfig {
            name: "S".into(),
            subjects: vec!["s.>".into()],
            ..StreamConfig::default()
        },
        false,
    )
    .unwrap_or_else(|error| panic!("plain stream refused: {error:?}"));
    let checked =
        match fuzzing::check_consumer_config(&request.config, &stream, -1, request.pedantic) {
            Ok(checked) => checked,
            Err(error) => return refusal(&error),
        };
    let stored = encode_response(&checked);
    let reread: ConsumerConfig = decode_request(&stored).unwrap_or_else(|error| {
        panic!(
            "stored consumer config does not decode: {error:?}\n{}",
            String::from_utf8_lossy(&stored)
        )
    });
    assert_eq!(
        reread, checked,
        "stored consumer config decodes differently"
    );
    let again = fuzzing::check_consumer_config(&reread, &stream, -1, false)
        .unwrap_or_else(|error| panic!("accepted consumer refused when checked again: {error:?}"));
    assert_eq!(again, checked, "checking a consumer twice changes it");
    if let Err(error) = fuzzing::check_consumer_update(&checked, &request.config) {
        refusal(&error);
    }
    // Pull requests against this consumer, with the body as the request too.
    if checked.deliver_subject.is_empty() {
        let _ = fuzzing::admit_pull_request(&checked, body);
    }
}

fn request_checks(kind: u8, body: &[u8]) {
    fn decoded<T: serde::de::DeserializeOwned + Default>(body: &[u8]) {
        if let Err(error) = decode_request::<T>(body) {
            refusal(&error);
        }
        if let Err(error) = decode_request_with::<T>(body, Strictness::Lenient) {
            refusal(&error);
        }
    }
    match kind {
        4 | 5 => {
            let config = ConsumerConfig {
                durable_name: "D".into(),
                max_request_batch: 10,
                max_request_expires: jetstream_api::Nanos(1_000_000_000),
                max_request_max_bytes: 1024,
                ..ConsumerConfig::default()
            };
            if let Err(status) = fuzzing::admit_pull_request(&config, body) {
                assert!(status.starts_with(b"NATS/1.0 "), "{status:?}");
            }
            let _ = fuzzing::admit_pull_request(&ConsumerConfig::default(), body);
        }
        6 => decoded::<MsgGetRequest>(body),
        7 => decoded::<MsgDeleteRequest>(body),
        8 => decoded::<StreamPurgeRequest>(body),
        9 => decoded::<StreamInfoRequest>(body),
        10 => decoded::<StreamNamesRequest>(body),
        11 => decoded::<ConsumersRequest>(body),
        _ => {
            let _ = jetstream_api::ack::AckKind::parse(body);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let kind = selector & 0x0f;
    let built;
    let body = if selector & 0x10 != 0 {
        built = structured(kind, rest);
        &built[..]
    } else {
        rest
    };
    match kind {
        0 | 1 => stream_checks(body),
        2 | 3 => consumer_checks(body),
        _ => request_checks(kind, body),
    }
});

//! The JSON the CLI prints (`--json`, `stream add --output`) and compares (`stream edit`'s
//! differences). natscli marshals `$JS.API` values through jsm.go's Go structs, not through the
//! server's, so its output has jsm.go's fields only, in jsm.go's field order, with jsm.go's
//! `omitempty` rules: `stream info --json` lists `max_msgs_per_subject` before `max_msgs` and
//! leaves out `allow_msg_ttl: false` and `compression: "none"`, where nats-server's own JSON does
//! not. The values themselves are jetstream-api's types; this module only holds the shape
//! natscli gives them: one table per jsm.go struct, applied when printing.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::error::CliError;

/// When jsm.go leaves a field out of its JSON.
#[derive(Clone, Copy)]
pub enum Omit {
    /// No `omitempty`: printed whenever the value has it (pointers that are nil are absent).
    Never,
    /// Go's `omitempty`: left out when false, 0, "", empty or null.
    Empty,
    /// `omitempty` on an integer enum whose zero value has this name (`compression: "none"`).
    EmptyOr(&'static str),
}

/// One field of a jsm.go struct; `shape` describes its value when it is a struct (or a list
/// of structs).
pub struct Field {
    name: &'static str,
    omit: Omit,
    shape: Option<Shape>,
}

pub type Shape = &'static [Field];

const fn always(name: &'static str) -> Field {
    Field {
        name,
        omit: Omit::Never,
        shape: None,
    }
}

const fn omit_empty(name: &'static str) -> Field {
    Field {
        name,
        omit: Omit::Empty,
        shape: None,
    }
}

const fn nested(name: &'static str, omit: Omit, shape: Shape) -> Field {
    Field {
        name,
        omit,
        shape: Some(shape),
    }
}

const SUBJECT_TRANSFORM: Shape = &[always("src"), always("dest")];
const EXTERNAL_STREAM: Shape = &[always("api"), omit_empty("deliver")];
const API_ERROR: Shape = &[always("code"), always("err_code"), always("description")];

const PLACEMENT: Shape = &[
    omit_empty("cluster"),
    omit_empty("tags"),
    omit_empty("preferred"),
];

const STREAM_CONSUMER_SOURCE: Shape = &[omit_empty("name"), omit_empty("deliver_subject")];

const STREAM_SOURCE: Shape = &[
    always("name"),
    omit_empty("opt_start_seq"),
    always("opt_start_time"),
    omit_empty("filter_subject"),
    nested("external", Omit::Never, EXTERNAL_STREAM),
    nested("subject_transforms", Omit::Empty, SUBJECT_TRANSFORM),
    // Durable sourcing (nats-server 2.14+), which natscli asks about.
    nested("consumer", Omit::Never, STREAM_CONSUMER_SOURCE),
];

const REPUBLISH: Shape = &[
    omit_empty("src"),
    always("dest"),
    omit_empty("headers_only"),
];

const STREAM_CONSUMER_LIMITS: Shape = &[
    omit_empty("inactive_threshold"),
    omit_empty("max_ack_pending"),
];

pub const STREAM_CONFIG: Shape = &[
    always("name"),
    omit_empty("description"),
    omit_empty("subjects"),
    always("retention"),
    always("max_consumers"),
    always("max_msgs_per_subject"),
    always("max_msgs"),
    always("max_bytes"),
    always("max_age"),
    omit_empty("max_msg_size"),
    always("storage"),
    always("discard"),
    always("num_replicas"),
    omit_empty("no_ack"),
    omit_empty("duplicate_window"),
    nested("placement", Omit::Never, PLACEMENT),
    nested("mirror", Omit::Never, STREAM_SOURCE),
    nested("sources", Omit::Empty, STREAM_SOURCE),
    Field {
        name: "compression",
        omit: Omit::EmptyOr("none"),
        shape: None,
    },
    nested("subject_transform", Omit::Never, SUBJECT_TRANSFORM),
    nested("republish", Omit::Never, REPUBLISH),
    always("sealed"),
    always("deny_delete"),
    always("deny_purge"),
    always("allow_rollup_hdrs"),
    always("allow_direct"),
    always("mirror_direct"),
    omit_empty("discard_new_per_subject"),
    omit_empty("first_seq"),
    omit_empty("metadata"),
    omit_empty("allow_msg_ttl"),
    omit_empty("subject_delete_marker_ttl"),
    nested("consumer_limits", Omit::Never, STREAM_CONSUMER_LIMITS),
    omit_empty("allow_atomic"),
    omit_empty("allow_msg_counter"),
    omit_empty("allow_msg_schedules"),
    Field {
        name: "persist_mode",
        omit: Omit::EmptyOr("default"),
        shape: None,
    },
    omit_empty("allow_batched"),
];

const LOST_STREAM_DATA: Shape = &[always("msgs"), always("bytes")];

const STREAM_STATE: Shape = &[
    always("messages"),
    always("bytes"),
    always("first_seq"),
    always("first_ts"),
    always("last_seq"),
    always("last_ts"),
    omit_empty("num_deleted"),
    omit_empty("deleted"),
    omit_empty("num_subjects"),
    omit_empty("subjects"),
    nested("lost", Omit::Never, LOST_STREAM_DATA),
    always("consumer_count"),
];

const PEER_INFO: Shape = &[
    always("name"),
    always("current"),
    omit_empty("offline"),
    always("active"),
    omit_empty("lag"),
    always("peer"),
];

const CLUSTER_INFO: Shape = &[
    omit_empty("name"),
    omit_empty("raft_group"),
    omit_empty("leader"),
    always("leader_since"),
    nested("replicas", Omit::Empty, PEER_INFO),
];

const STREAM_SOURCE_INFO: Shape = &[
    always("name"),
    omit_empty("filter_subject"),
    nested("subject_transforms", Omit::Empty, SUBJECT_TRANSFORM),
    nested("external", Omit::Never, EXTERNAL_STREAM),
    always("lag"),
    always("active"),
    nested("error", Omit::Never, API_ERROR),
];

const STREAM_ALTERNATE: Shape = &[always("name"), omit_empty("domain"), always("cluster")];

pub const STREAM_INFO: Shape = &[
    nested("config", Omit::Never, STREAM_CONFIG),
    always("created"),
    nested("state", Omit::Never, STREAM_STATE),
    omit_empty("domain"),
    nested("cluster", Omit::Never, CLUSTER_INFO),
    nested("mirror", Omit::Never, STREAM_SOURCE_INFO),
    nested("sources", Omit::Empty, STREAM_SOURCE_INFO),
    nested("alternates", Omit::Empty, STREAM_ALTERNATE),
    always("ts"),
];

pub const CONSUMER_CONFIG: Shape = &[
    omit_empty("description"),
    always("ack_policy"),
    omit_empty("ack_wait"),
    always("deliver_policy"),
    omit_empty("deliver_subject"),
    omit_empty("deliver_group"),
    omit_empty("durable_name"),
    omit_empty("name"),
    omit_empty("filter_subject"),
    omit_empty("filter_subjects"),
    omit_empty("flow_control"),
    omit_empty("idle_heartbeat"),
    omit_empty("max_ack_pending"),
    omit_empty("max_deliver"),
    omit_empty("backoff"),
    omit_empty("max_waiting"),
    omit_empty("opt_start_seq"),
    always("opt_start_time"),
    omit_empty("rate_limit_bps"),
    always("replay_policy"),
    omit_empty("sample_freq"),
    omit_empty("headers_only"),
    omit_empty("max_batch"),
    omit_empty("max_expires"),
    omit_empty("max_bytes"),
    omit_empty("inactive_threshold"),
    always("num_replicas"),
    omit_empty("mem_storage"),
    omit_empty("metadata"),
    always("pause_until"),
    omit_empty("priority_groups"),
    Field {
        name: "priority_policy",
        omit: Omit::EmptyOr("none"),
        shape: None,
    },
    omit_empty("priority_timeout"),
];

const SEQUENCE_INFO: Shape = &[
    always("consumer_seq"),
    always("stream_seq"),
    always("last_active"),
];

pub const CONSUMER_INFO: Shape = &[
    always("stream_name"),
    always("name"),
    nested("config", Omit::Never, CONSUMER_CONFIG),
    always("created"),
    nested("delivered", Omit::Never, SEQUENCE_INFO),
    nested("ack_floor", Omit::Never, SEQUENCE_INFO),
    always("num_ack_pending"),
    always("num_redelivered"),
    always("num_waiting"),
    always("num_pending"),
    nested("cluster", Omit::Never, CLUSTER_INFO),
    omit_empty("push_bound"),
    omit_empty("paused"),
    omit_empty("pause_remaining"),
    always("ts"),
];

pub const STORED_MESSAGE: Shape = &[
    always("subject"),
    always("seq"),
    always("hdrs"),
    always("data"),
    always("time"),
];

fn is_go_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(flag) => !flag,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

fn omitted(value: &Value, omit: Omit) -> bool {
    match omit {
        Omit::Never => false,
        Omit::Empty => is_go_empty(value),
        Omit::EmptyOr(zero_name) => is_go_empty(value) || value.as_str() == Some(zero_name),
    }
}

/// A JSON value printed through a jsm.go shape (a list takes the shape for every element).
struct Shaped<'a> {
    value: &'a Value,
    shape: Option<Shape>,
}

impl Serialize for Shaped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.value, self.shape) {
            (Value::Object(map), Some(fields)) => {
                let mut out = serializer.serialize_map(None)?;
                for field in fields {
                    let Some(child) = map.get(field.name) else {
                        continue;
                    };
                    if omitted(child, field.omit) {
                        continue;
                    }
                    out.serialize_entry(
                        field.name,
                        &Shaped {
                            value: child,
                            shape: field.shape,
                        },
                    )?;
                }
                out.end()
            }
            (Value::Array(items), Some(_)) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Shaped {
                        value: item,
                        shape: self.shape,
                    })?;
                }
                out.end()
            }
            (value, _) => value.serialize(serializer),
        }
    }
}

/// `item` as natscli prints it: indented two spaces, jsm.go's fields in jsm.go's order.
pub fn to_pretty<T: Serialize>(item: &T, shape: Shape) -> Result<String, CliError> {
    let value = serde_json::to_value(item)?;
    Ok(serde_json::to_string_pretty(&Shaped {
        value: &value,
        shape: Some(shape),
    })?)
}

/// `item` with jsm.go's fields only, as a value to compare (key order does not matter there).
pub fn to_value<T: Serialize>(item: &T, shape: Shape) -> Result<Value, CliError> {
    let value = serde_json::to_value(item)?;
    Ok(serde_json::to_value(Shaped {
        value: &value,
        shape: Some(shape),
    })?)
}

#[cfg(test)]
mod tests {
    //! The fixtures are `$JS.API` responses captured from nats-server 2.15.1 (plus one with
    //! fields a newer server might add); the expected files are what the CLI printed for them
    //! while it still kept its own copies of jsm.go's structs, so these tests pin the output.

    use super::*;
    use crate::api::{decode_list, decode_response};
    use jetstream_api::{ConsumerInfo, StoredMessage, StreamInfo};

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/jsm_json")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"))
    }

    fn response(name: &str) -> Value {
        serde_json::from_str(&fixture(&format!("{name}.json"))).expect("fixture json")
    }

    fn check<T: Serialize>(name: &str, item: &T, shape: Shape) {
        assert_eq!(
            to_pretty(item, shape).expect("pretty") + "\n",
            fixture(&format!("{name}.pretty")),
            "{name}"
        );
    }

    #[test]
    fn stream_info_prints_as_natscli() {
        for name in [
            "stream_info_orders",
            "stream_info_mirror",
            "stream_info_sources",
            "stream_info_kv",
            "stream_info_future_server",
        ] {
            let info: StreamInfo = decode_response(response(name)).expect(name);
            check(name, &info, STREAM_INFO);
            let config = to_value(&info.config, STREAM_CONFIG).expect("value");
            assert_eq!(
                config.to_string() + "\n",
                fixture(&format!("{name}.config_value")),
                "{name}"
            );
        }
    }

    #[test]
    fn consumer_info_prints_as_natscli() {
        for name in [
            "consumer_info_push",
            "consumer_info_pull",
            "consumer_info_backoff",
            "consumer_create_ephemeral",
        ] {
            let info: ConsumerInfo = decode_response(response(name)).expect(name);
            check(name, &info, CONSUMER_INFO);
            let config = to_value(&info.config, CONSUMER_CONFIG).expect("value");
            assert_eq!(
                config.to_string() + "\n",
                fixture(&format!("{name}.config_value")),
                "{name}"
            );
        }
    }

    #[test]
    fn lists_and_messages_print_as_natscli() {
        let streams: Vec<StreamInfo> =
            decode_list(response("stream_list").get("streams")).expect("streams");
        check("stream_list", &streams, STREAM_INFO);
        let consumers: Vec<ConsumerInfo> =
            decode_list(response("consumer_list").get("consumers")).expect("consumers");
        check("consumer_list", &consumers, CONSUMER_INFO);
        let message: StoredMessage =
            decode_response(response("message_get")["message"].clone()).expect("message");
        check("message_get", &message, STORED_MESSAGE);
    }
}

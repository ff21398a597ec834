//! Go's wording for a JSON value of the wrong type in a request:
//! `json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64`.
//!
//! serde does not report where in the document a type error happened, so the failing field is
//! found by probing: every request type decodes from a partial object (all fields default), so
//! decoding one top-level field at a time, then one nested member at a time, isolates it. Go's
//! type names come from serde's "expected" text plus a table for the fields where Rust and Go
//! types differ in name (`int` vs `int64`, `time.Duration`). Only runs on the error path.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

#[derive(Clone, Debug)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Go's text for a type error in a request of type `T`, or `None` when the message is not a
/// type error or the failing field cannot be isolated.
pub(crate) fn describe<T: DeserializeOwned>(value: &Value, message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let (_found, expected) = rest.split_once(", expected ")?;
    let root = go_root_name(std::any::type_name::<T>());
    let Value::Object(map) = value else {
        return Some(not_an_object::<T>(value));
    };
    let path = isolate::<T>(map)?;
    let leaf_value = lookup(value, &path)?;
    let go_type = go_type_for(root, &path, expected);
    let numeric_target = matches!(
        go_type.as_str(),
        "int" | "int64" | "int32" | "uint64" | "uint16" | "time.Duration"
    );
    let found_text = match leaf_value {
        Value::Number(number) if numeric_target => format!("number {number}"),
        other => go_compat::json_syntax::value_kind(other).to_string(),
    };
    let dotted = std::iter::once(root.to_string())
        .chain(path.iter().map(|segment| match segment {
            Segment::Key(key) => key.clone(),
            Segment::Index(index) => index.to_string(),
        }))
        .collect::<Vec<_>>()
        .join(".");
    // Go says "Go struct field" for struct and map members, and nothing for array elements.
    let field_word = match path.last() {
        Some(Segment::Index(_)) => "",
        _ => "Go struct field ",
    };
    Some(format!(
        "json: cannot unmarshal {found_text} into {field_word}{dotted} of type {go_type}"
    ))
}

/// Go's text for a request body that is valid JSON but not an object.
pub(crate) fn not_an_object<T>(value: &Value) -> String {
    format!(
        "json: cannot unmarshal {} into Go value of type server.{}",
        go_compat::json_syntax::value_kind(value),
        go_root_name(std::any::type_name::<T>())
    )
}

/// Narrows the failing member: first the top-level key, then nested members one at a time.
fn isolate<T: DeserializeOwned>(map: &Map<String, Value>) -> Option<Vec<Segment>> {
    let fails = |candidate: Value| serde_json::from_value::<T>(candidate).is_err();
    let (key, value) = map
        .iter()
        .find(|(key, value)| fails(wrap(&[Segment::Key((*key).clone())], (*value).clone())))?;
    let mut path = vec![Segment::Key(key.clone())];
    let mut current = value.clone();
    loop {
        let next = match &current {
            Value::Object(children) => children.iter().find_map(|(child_key, child)| {
                let mut probe = Map::new();
                probe.insert(child_key.clone(), child.clone());
                fails(wrap(&path, Value::Object(probe)))
                    .then(|| (Segment::Key(child_key.clone()), child.clone()))
            }),
            Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
                fails(wrap(&path, Value::Array(vec![item.clone()])))
                    .then(|| (Segment::Index(index), item.clone()))
            }),
            _ => None,
        };
        match next {
            Some((segment, child)) => {
                path.push(segment);
                current = child;
            }
            None => return Some(path),
        }
    }
}

/// Rebuilds a document holding only `leaf` at `path` (array indices become one-element arrays).
fn wrap(path: &[Segment], leaf: Value) -> Value {
    path.iter()
        .rev()
        .fold(leaf, |inner, segment| match segment {
            Segment::Key(key) => {
                let mut map = Map::new();
                map.insert(key.clone(), inner);
                Value::Object(map)
            }
            Segment::Index(_) => Value::Array(vec![inner]),
        })
}

fn lookup<'a>(value: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |current, segment| match segment {
            Segment::Key(key) => current.get(key),
            Segment::Index(index) => current.get(index),
        })
}

/// nats-server's Go type for each of our request types.
fn go_root_name(rust_type: &str) -> &'static str {
    match rust_type.rsplit("::").next().unwrap_or(rust_type) {
        "StreamConfigRequest" => "StreamConfigRequest",
        "StreamConfig" => "StreamConfig",
        "CreateConsumerRequest" => "CreateConsumerRequest",
        "StreamInfoRequest" => "JSApiStreamInfoRequest",
        "StreamNamesRequest" => "JSApiStreamNamesRequest",
        "StreamPurgeRequest" => "JSApiStreamPurgeRequest",
        "MsgGetRequest" => "JSApiMsgGetRequest",
        "MsgDeleteRequest" => "JSApiMsgDeleteRequest",
        "ConsumersRequest" => "JSApiConsumersRequest",
        "ConsumerPauseRequest" => "JSApiConsumerPauseRequest",
        "ConsumerUnpinRequest" => "JSApiConsumerUnpinRequest",
        "ConsumerResetRequest" => "JSApiConsumerResetRequest",
        "StreamSnapshotRequest" => "JSApiStreamSnapshotRequest",
        "NextRequest" => "JSApiConsumerGetNextRequest",
        _ => "request",
    }
}

/// Fields whose Go type is `time.Time` (our `Timestamp`).
const TIME_FIELDS: &[&str] = &["opt_start_time", "start_time", "up_to_time", "pause_until"];

/// Fields whose Go type is `time.Duration` (our `Nanos`).
const DURATION_FIELDS: &[&str] = &[
    "max_age",
    "duplicate_window",
    "subject_delete_marker_ttl",
    "inactive_threshold",
    "ack_wait",
    "backoff",
    "max_expires",
    "idle_heartbeat",
    "priority_timeout",
    "expires",
];

/// Fields whose Go type is plain `int` (serde says `i64`, Go says `int`).
fn is_go_int(root: &str, parent: Option<&str>, field: &str) -> bool {
    matches!(
        (root, parent, field),
        (
            "StreamConfigRequest" | "StreamConfig",
            _,
            "max_consumers" | "num_replicas"
        ) | (_, Some("consumer_limits"), "max_ack_pending")
            | (
                "CreateConsumerRequest",
                Some("config"),
                "max_deliver"
                    | "max_waiting"
                    | "max_ack_pending"
                    | "max_batch"
                    | "max_bytes"
                    | "num_replicas"
            )
            | ("JSApiMsgGetRequest", _, "batch" | "max_bytes")
            | (
                "JSApiConsumerGetNextRequest",
                _,
                "batch" | "max_bytes" | "priority"
            )
            | (
                "JSApiStreamSnapshotRequest",
                _,
                "chunk_size" | "window_size"
            )
            | (_, None, "offset")
    )
}

fn go_type_for(root: &str, path: &[Segment], expected: &str) -> String {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|segment| match segment {
            Segment::Key(key) => Some(key.as_str()),
            Segment::Index(_) => None,
        })
        .collect();
    let field = keys.last().copied().unwrap_or("");
    let parent = keys.len().checked_sub(2).map(|index| keys[index]);
    let is_element = matches!(path.last(), Some(Segment::Index(_)));
    let in_map = parent == Some("metadata");
    if TIME_FIELDS.contains(&field) {
        return "time.Time".to_string();
    }
    if DURATION_FIELDS.contains(&field) {
        return if field == "backoff" && !is_element {
            "[]time.Duration".to_string()
        } else {
            "time.Duration".to_string()
        };
    }
    if in_map {
        return "string".to_string();
    }
    match expected {
        "i64" if is_go_int(root, parent, field) => "int".to_string(),
        "i64" => "int64".to_string(),
        "i32" => "int32".to_string(),
        "u64" => "uint64".to_string(),
        "u16" => "uint16".to_string(),
        "usize" => "int".to_string(),
        "a string" => "string".to_string(),
        "a boolean" => "bool".to_string(),
        "a map" => "map[string]string".to_string(),
        "a sequence" => match field {
            "sources" => "[]*server.StreamSource",
            "subject_transforms" => "[]server.SubjectTransformConfig",
            _ => "[]string",
        }
        .to_string(),
        other => match other.strip_prefix("struct ") {
            Some(name) => format!("server.{}", go_struct_name(name)),
            None => other.to_string(),
        },
    }
}

fn go_struct_name(rust: &str) -> &str {
    match rust {
        "SubjectTransform" => "SubjectTransformConfig",
        other => other,
    }
}

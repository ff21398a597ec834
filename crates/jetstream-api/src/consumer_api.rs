//! Request and response envelopes of `$JS.API.CONSUMER.*`, including the pull request body of
//! `CONSUMER.MSG.NEXT` (also the argument of a `+NXT` ack).

use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;
use crate::consumer::{ConsumerConfig, ConsumerInfo};
use crate::policy::ConsumerAction;
use crate::stream_api::{null_as_empty, Paged};
use crate::time_format::{Nanos, Timestamp};

pub const CONSUMER_CREATE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_create_response";
pub const CONSUMER_INFO_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_info_response";
pub const CONSUMER_DELETE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_delete_response";
pub const CONSUMER_NAMES_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_names_response";
pub const CONSUMER_LIST_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_list_response";
pub const CONSUMER_PAUSE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_pause_response";
pub const CONSUMER_UNPIN_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_unpin_response";
pub const CONSUMER_RESET_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.consumer_reset_response";
pub const CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE: &str =
    "io.nats.jetstream.api.v1.consumer_leader_stepdown_response";

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}

/// Body of `CONSUMER.CREATE.<stream>[.<consumer>[.<filter>]]` and `CONSUMER.DURABLE.CREATE`.
/// `action` is `""` (create or update), `"create"` or `"update"`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateConsumerRequest {
    #[serde(rename = "stream_name")]
    pub stream_name: String,
    pub config: ConsumerConfig,
    pub action: ConsumerAction,
    #[serde(skip_serializing_if = "is_false")]
    pub pedantic: bool,
}

/// `CONSUMER.CREATE` / `CONSUMER.INFO` reply (same shape, different `type`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerInfoResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub info: Option<ConsumerInfo>,
}

/// `CONSUMER.CREATE` reply.
pub type ConsumerCreateResponse = ConsumerInfoResponse;

impl ConsumerInfoResponse {
    pub fn created(info: ConsumerInfo) -> Self {
        Self::ok(CONSUMER_CREATE_RESPONSE_TYPE, info)
    }

    pub fn info(info: ConsumerInfo) -> Self {
        Self::ok(CONSUMER_INFO_RESPONSE_TYPE, info)
    }

    pub fn ok(response_type: &str, info: ConsumerInfo) -> Self {
        ConsumerInfoResponse {
            response_type: response_type.to_string(),
            error: None,
            info: Some(info),
        }
    }

    pub fn error(response_type: &str, error: ApiError) -> Self {
        ConsumerInfoResponse {
            response_type: response_type.to_string(),
            error: Some(error),
            info: None,
        }
    }
}

/// `CONSUMER.NAMES` / `CONSUMER.LIST` request body (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsumersRequest {
    /// Go `int` on the wire: a negative offset is accepted and means 0, as nats-server's
    /// handlers clamp it.
    #[serde(deserialize_with = "crate::stream_api::clamped_offset")]
    pub offset: usize,
}

/// `CONSUMER.NAMES` reply (`"consumers":[]` when none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerNamesResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub consumers: Vec<String>,
}

impl ConsumerNamesResponse {
    pub fn ok(consumers: Vec<String>, paged: Paged) -> Self {
        ConsumerNamesResponse {
            response_type: CONSUMER_NAMES_RESPONSE_TYPE.to_string(),
            error: None,
            paged,
            consumers,
        }
    }

    pub fn error(error: ApiError) -> Self {
        ConsumerNamesResponse {
            response_type: CONSUMER_NAMES_RESPONSE_TYPE.to_string(),
            error: Some(error),
            ..Default::default()
        }
    }
}

/// `CONSUMER.LIST` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerListResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub consumers: Vec<ConsumerInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub offline: std::collections::BTreeMap<String, String>,
}

impl ConsumerListResponse {
    pub fn ok(consumers: Vec<ConsumerInfo>, paged: Paged) -> Self {
        ConsumerListResponse {
            response_type: CONSUMER_LIST_RESPONSE_TYPE.to_string(),
            paged,
            consumers,
            ..Default::default()
        }
    }

    pub fn error(error: ApiError) -> Self {
        ConsumerListResponse {
            response_type: CONSUMER_LIST_RESPONSE_TYPE.to_string(),
            error: Some(error),
            ..Default::default()
        }
    }
}

/// `CONSUMER.PAUSE` request body; a zero or past `pause_until` resumes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsumerPauseRequest {
    pub pause_until: Timestamp,
}

/// `CONSUMER.PAUSE` reply. `paused` and `pause_until` are present even on errors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerPauseResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default)]
    pub paused: bool,
    #[serde(default)]
    pub pause_until: Timestamp,
    #[serde(default, skip_serializing_if = "Nanos::is_zero")]
    pub pause_remaining: Nanos,
}

impl ConsumerPauseResponse {
    pub fn ok(paused: bool, pause_until: Timestamp, pause_remaining: Nanos) -> Self {
        ConsumerPauseResponse {
            response_type: CONSUMER_PAUSE_RESPONSE_TYPE.to_string(),
            error: None,
            paused,
            pause_until,
            pause_remaining,
        }
    }

    pub fn error(error: ApiError) -> Self {
        ConsumerPauseResponse {
            response_type: CONSUMER_PAUSE_RESPONSE_TYPE.to_string(),
            error: Some(error),
            ..Default::default()
        }
    }
}

/// `CONSUMER.UNPIN` request body. nats-server decodes it with plain `json.Unmarshal`: unknown
/// fields are ignored and an empty body is an error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumerUnpinRequest {
    pub group: String,
}

/// `CONSUMER.UNPIN` reply: the type and, on failure, the error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerUnpinResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

impl ConsumerUnpinResponse {
    pub fn ok() -> Self {
        ConsumerUnpinResponse {
            response_type: CONSUMER_UNPIN_RESPONSE_TYPE.to_string(),
            error: None,
        }
    }

    pub fn error(error: ApiError) -> Self {
        ConsumerUnpinResponse {
            response_type: CONSUMER_UNPIN_RESPONSE_TYPE.to_string(),
            error: Some(error),
        }
    }
}

/// A pull request (`CONSUMER.MSG.NEXT` body, or after `+NXT`). Decoded leniently, as
/// nats-server does (plain `json.Unmarshal`: unknown fields ignored).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NextRequest {
    /// How long the request waits; zero: until `batch` is filled (no timeout).
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub expires: Nanos,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub batch: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_bytes: i64,
    /// Answer `404 No Messages` (or `408`) at once instead of waiting when nothing is pending.
    #[serde(skip_serializing_if = "is_false")]
    pub no_wait: bool,
    /// Idle heartbeat interval while waiting (`100 Idle Heartbeat` statuses).
    #[serde(rename = "idle_heartbeat", skip_serializing_if = "Nanos::is_zero")]
    pub heartbeat: Nanos,
    /// Priority group fields (nats-server embeds them flat).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub min_pending: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub min_ack_pending: i64,
    /// Pin id for pinned-client groups.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub priority: i64,
}

impl Default for NextRequest {
    /// An empty pull body means one message.
    fn default() -> Self {
        NextRequest {
            expires: Nanos::ZERO,
            batch: 1,
            max_bytes: 0,
            no_wait: false,
            heartbeat: Nanos::ZERO,
            group: String::new(),
            min_pending: 0,
            min_ack_pending: 0,
            id: String::new(),
            priority: 0,
        }
    }
}

impl NextRequest {
    /// Parses a pull body as nats-server does: blank is one message; `{...}` is JSON (missing
    /// `batch` is 0 there, as in Go); a bare integer is a batch size; anything else is one message.
    /// `Err` carries the text nats-server puts after `400 Bad Request - `.
    pub fn parse(body: &[u8]) -> Result<NextRequest, String> {
        let trimmed = body.trim_ascii();
        if trimmed.is_empty() {
            return Ok(NextRequest::default());
        }
        if trimmed[0] == b'{' {
            let request = match serde_json::from_slice::<serde_json::Value>(trimmed) {
                Ok(serde_json::Value::Object(mut map)) => {
                    map.retain(|_, value| !value.is_null());
                    // Inside JSON a missing batch is Go's zero, not the bare-body default of 1.
                    let has_batch = map.contains_key("batch");
                    let value = serde_json::Value::Object(map);
                    let mut request = serde_json::from_value::<NextRequest>(value.clone())
                        .map_err(|error| {
                            crate::go_type_error::describe::<NextRequest>(
                                &value,
                                &error.to_string(),
                            )
                            .unwrap_or_else(|| {
                                crate::json::go_message_without_offset(&error, trimmed)
                            })
                        })?;
                    if !has_batch {
                        request.batch = 0;
                    }
                    request
                }
                Ok(_) => {
                    return Err(
                        "json: cannot unmarshal value into Go value of type struct".to_string()
                    )
                }
                Err(error) => return Err(crate::json::go_message_without_offset(&error, trimmed)),
            };
            if request.heartbeat.0 > 0 && request.heartbeat.0.saturating_mul(2) > request.expires.0
            {
                return Err("heartbeat value too large".to_string());
            }
            return Ok(request);
        }
        let batch = std::str::from_utf8(trimmed)
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
            .unwrap_or(1);
        Ok(NextRequest {
            batch,
            ..NextRequest::default()
        })
    }
}

/// `CONSUMER.RESET` request body (plain `json.Unmarshal` in nats-server: unknown fields are
/// ignored). No sequence: back to the ack floor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumerResetRequest {
    #[serde(rename = "seq", skip_serializing_if = "crate::policy::is_default")]
    pub sequence: u64,
}

/// `CONSUMER.RESET` reply: the consumer's info after the reset and the sequence it restarts
/// from. `reset_seq` is present (0) on errors too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerResetResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub info: Option<ConsumerInfo>,
    #[serde(default)]
    pub reset_seq: u64,
}

impl ConsumerResetResponse {
    pub fn ok(info: ConsumerInfo, reset_seq: u64) -> Self {
        ConsumerResetResponse {
            response_type: CONSUMER_RESET_RESPONSE_TYPE.to_string(),
            error: None,
            info: Some(info),
            reset_seq,
        }
    }

    pub fn error(error: ApiError) -> Self {
        ConsumerResetResponse {
            response_type: CONSUMER_RESET_RESPONSE_TYPE.to_string(),
            error: Some(error),
            info: None,
            reset_seq: 0,
        }
    }
}

/// `-NAK {"delay": <ns>}` body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NakOptions {
    pub delay: Nanos,
}

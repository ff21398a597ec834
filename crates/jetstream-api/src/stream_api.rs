//! Request and response envelopes of `$JS.API.STREAM.*`, and [`PubAck`].
//!
//! Every response starts with `"type"` (a constant below) and an optional `"error"`; on error the
//! payload fields are absent (paged fields `total/offset/limit` stay, as nats-server sends them).
//! Build responses with the `ok`/`error` constructors so `type` is always right.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::api_error::ApiError;
use crate::stream::{StoredMessage, StreamConfig, StreamInfo};
use crate::time_format::Timestamp;

pub const STREAM_CREATE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_create_response";
pub const STREAM_UPDATE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_update_response";
pub const STREAM_INFO_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_info_response";
pub const STREAM_DELETE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_delete_response";
pub const STREAM_NAMES_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_names_response";
pub const STREAM_LIST_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_list_response";
pub const STREAM_PURGE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_purge_response";
pub const STREAM_MSG_DELETE_RESPONSE_TYPE: &str =
    "io.nats.jetstream.api.v1.stream_msg_delete_response";
pub const STREAM_MSG_GET_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_msg_get_response";
pub const STREAM_SNAPSHOT_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_snapshot_response";
pub const STREAM_RESTORE_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.stream_restore_response";
pub const STREAM_REMOVE_PEER_RESPONSE_TYPE: &str =
    "io.nats.jetstream.api.v1.stream_remove_peer_response";
pub const STREAM_LEADER_STEPDOWN_RESPONSE_TYPE: &str =
    "io.nats.jetstream.api.v1.stream_leader_stepdown_response";
/// Generic responses (e.g. a request on an unknown `$JS.API` subject is not answered at all by
/// nats-server, but system-level failures use this type).
pub const SYSTEM_RESPONSE_TYPE: &str = "io.nats.jetstream.api.v1.system_response";

/// Page size nats-server uses for `STREAM.NAMES` / `CONSUMER.NAMES`.
pub const NAMES_LIMIT: usize = 1024;
/// Page size for `STREAM.LIST` / `CONSUMER.LIST`.
pub const LIST_LIMIT: usize = 256;
/// Most subjects `STREAM.INFO` returns in `state.subjects` (`limit` of that page).
pub const MAX_SUBJECT_DETAILS: usize = 100_000;
/// Longest stream or consumer name.
pub const MAX_NAME_LENGTH: usize = 255;
/// Longest description.
pub const MAX_DESCRIPTION_LENGTH: usize = 4 * 1024;
/// Largest total of metadata keys plus values, bytes.
pub const MAX_METADATA_LENGTH: usize = 128 * 1024;

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}

/// Paging offsets are Go `int`s that handlers clamp at 0.
pub(crate) fn clamped_offset<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<usize, D::Error> {
    let offset = i64::deserialize(deserializer)?;
    Ok(usize::try_from(offset.max(0)).unwrap_or(usize::MAX))
}

pub(crate) fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// The bare `{"type","error"}` response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

impl ApiResponse {
    pub fn error(response_type: &str, error: ApiError) -> Self {
        ApiResponse {
            response_type: response_type.to_string(),
            error: Some(error),
        }
    }
}

/// `total`, `offset` and `limit` of paged responses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paged {
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// Body of `STREAM.CREATE` and `STREAM.UPDATE`: a [`StreamConfig`] plus the request-only
/// `pedantic` flag (refuse instead of silently adjusting values).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamConfigRequest {
    pub config: StreamConfig,
    pub pedantic: bool,
}

impl<'de> Deserialize<'de> for StreamConfigRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        // Go matches `pedantic` case-insensitively, like every key.
        let pedantic_key = map
            .keys()
            .find(|key| key.as_str() == "pedantic")
            .or_else(|| map.keys().find(|key| key.eq_ignore_ascii_case("pedantic")))
            .cloned();
        let pedantic = match pedantic_key.and_then(|key| map.remove(&key)) {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(flag)) => flag,
            Some(_) => return Err(D::Error::custom("invalid type: value, expected a boolean")),
        };
        let config = serde_json::from_value(serde_json::Value::Object(map))
            .map_err(|error| D::Error::custom(error.to_string()))?;
        Ok(StreamConfigRequest { config, pedantic })
    }
}

impl Serialize for StreamConfigRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let mut value = serde_json::to_value(&self.config).map_err(S::Error::custom)?;
        if self.pedantic {
            if let serde_json::Value::Object(map) = &mut value {
                map.insert("pedantic".to_string(), serde_json::Value::Bool(true));
            }
        }
        value.serialize(serializer)
    }
}

/// `STREAM.CREATE` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamCreateResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub info: Option<StreamInfo>,
    /// True when this request created the stream (false: it already existed, same config).
    #[serde(default, skip_serializing_if = "is_false")]
    pub did_create: bool,
}

impl StreamCreateResponse {
    pub fn ok(info: StreamInfo, did_create: bool) -> Self {
        StreamCreateResponse {
            response_type: STREAM_CREATE_RESPONSE_TYPE.to_string(),
            error: None,
            info: Some(info),
            did_create,
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamCreateResponse {
            response_type: STREAM_CREATE_RESPONSE_TYPE.to_string(),
            error: Some(error),
            info: None,
            did_create: false,
        }
    }
}

/// `STREAM.UPDATE` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamUpdateResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub info: Option<StreamInfo>,
}

impl StreamUpdateResponse {
    pub fn ok(info: StreamInfo) -> Self {
        StreamUpdateResponse {
            response_type: STREAM_UPDATE_RESPONSE_TYPE.to_string(),
            error: None,
            info: Some(info),
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamUpdateResponse {
            response_type: STREAM_UPDATE_RESPONSE_TYPE.to_string(),
            error: Some(error),
            info: None,
        }
    }
}

/// `STREAM.INFO` request body (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamInfoRequest {
    /// Offset into the `state.subjects` page.
    /// Go `int` on the wire: a negative offset is accepted and means 0, as nats-server's
    /// handlers clamp it.
    #[serde(deserialize_with = "crate::stream_api::clamped_offset")]
    pub offset: usize,
    #[serde(skip_serializing_if = "is_false")]
    pub deleted_details: bool,
    /// Subject filter (wildcards allowed) selecting which subjects go into `state.subjects`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subjects_filter: String,
}

/// `STREAM.INFO` reply. The paging fields describe `state.subjects`; all zero when no
/// `subjects_filter` was given, and present even on errors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamInfoResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(flatten)]
    pub info: Option<StreamInfo>,
}

impl StreamInfoResponse {
    /// What [`StreamInfoResponse::ok`] encodes to, with `config` (the info's config as
    /// `encode_response` writes it) in place of `info.config`, which is not read.
    pub fn encode_ok(info: &StreamInfo, config: &[u8], paged: &Paged) -> Vec<u8> {
        let mut out = Vec::with_capacity(160 + config.len() + 512);
        write_head(&mut out, STREAM_INFO_RESPONSE_TYPE, paged);
        out.push(b',');
        write_info_fields(&mut out, config, info);
        out
    }

    pub fn ok(info: StreamInfo, paged: Paged) -> Self {
        StreamInfoResponse {
            response_type: STREAM_INFO_RESPONSE_TYPE.to_string(),
            error: None,
            paged,
            info: Some(info),
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamInfoResponse {
            response_type: STREAM_INFO_RESPONSE_TYPE.to_string(),
            error: Some(error),
            paged: Paged::default(),
            info: None,
        }
    }
}

/// `{"type","error","success"}` replies: STREAM.DELETE, STREAM.MSG.DELETE, leader stepdowns, peer
/// removal, CONSUMER.DELETE.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuccessResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub success: bool,
}

impl SuccessResponse {
    pub fn ok(response_type: &str) -> Self {
        SuccessResponse {
            response_type: response_type.to_string(),
            error: None,
            success: true,
        }
    }

    pub fn error(response_type: &str, error: ApiError) -> Self {
        SuccessResponse {
            response_type: response_type.to_string(),
            error: Some(error),
            success: false,
        }
    }
}

/// `STREAM.NAMES` / `STREAM.LIST` request body (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamNamesRequest {
    /// Go `int` on the wire: a negative offset is accepted and means 0, as nats-server's
    /// handlers clamp it.
    #[serde(deserialize_with = "crate::stream_api::clamped_offset")]
    pub offset: usize,
    /// Only streams whose subjects overlap this subject (wildcards allowed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subject: String,
}

/// Same body as [`StreamNamesRequest`].
pub type StreamListRequest = StreamNamesRequest;

/// `STREAM.NAMES` reply. `streams: None` is sent as `null`, which is what nats-server sends when a
/// `subject` filter matched no stream (Go's nil slice); `Some(vec![])` is `[]` (an offset past the
/// end, or no streams at all without a filter).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamNamesResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(default)]
    pub streams: Option<Vec<String>>,
}

impl StreamNamesResponse {
    pub fn ok(streams: Option<Vec<String>>, paged: Paged) -> Self {
        StreamNamesResponse {
            response_type: STREAM_NAMES_RESPONSE_TYPE.to_string(),
            error: None,
            paged,
            streams,
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamNamesResponse {
            response_type: STREAM_NAMES_RESPONSE_TYPE.to_string(),
            error: Some(error),
            paged: Paged::default(),
            streams: None,
        }
    }
}

/// `STREAM.LIST` reply; `"streams":[]` when nothing matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamListResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub streams: Vec<StreamInfo>,
    /// Streams that could not be reached (clustered only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub offline: std::collections::BTreeMap<String, String>,
}

impl StreamListResponse {
    pub fn ok(streams: Vec<StreamInfo>, paged: Paged) -> Self {
        StreamListResponse {
            response_type: STREAM_LIST_RESPONSE_TYPE.to_string(),
            paged,
            streams,
            ..Default::default()
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamListResponse {
            response_type: STREAM_LIST_RESPONSE_TYPE.to_string(),
            error: Some(error),
            ..Default::default()
        }
    }
}

/// A successful `STREAM.LIST` page written as its streams are visited: the bytes
/// [`encode_response`](crate::json::encode_response) writes for [`StreamListResponse::ok`],
/// without collecting the infos first, and with each stream's config as the server kept it
/// encoded instead of encoded again.
pub struct StreamListPage {
    out: Vec<u8>,
    empty: bool,
}

impl StreamListPage {
    /// `{"type":...,"total":...,"offset":...,"limit":...,"streams":[`, room for `streams`
    /// infos of about 1 KiB.
    pub fn new(paged: &Paged, streams: usize) -> Self {
        let mut out = Vec::with_capacity(128 + streams * 1024);
        write_head(&mut out, STREAM_LIST_RESPONSE_TYPE, paged);
        out.extend_from_slice(b",\"streams\":[");
        StreamListPage { out, empty: true }
    }

    /// One stream: `config` is its [`StreamConfig`] as `encode_response` writes it, `info` the
    /// rest (its own `config` is not read).
    pub fn push(&mut self, config: &[u8], info: &StreamInfo) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'{');
        write_info_fields(&mut self.out, config, info);
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(b"]}");
        self.out
    }
}

/// `{"type":"<response_type>","total":...,"offset":...,"limit":...`: a response's type and
/// its paging fields, flattened as the derives write them.
fn write_head(out: &mut Vec<u8>, response_type: &str, paged: &Paged) {
    out.extend_from_slice(b"{\"type\":");
    crate::json::encode_into(out, response_type);
    out.push(b',');
    // `{"total":...}` without its braces.
    let start = out.len();
    if crate::json::encode_into(out, paged) {
        out.pop();
        out.remove(start);
    }
}

/// A [`StreamInfo`]'s fields after its object's `{`, through its `}`, with `config` (its
/// config as `encode_response` writes it) in place of its own.
fn write_info_fields(out: &mut Vec<u8>, config: &[u8], info: &StreamInfo) {
    out.extend_from_slice(b"\"config\":");
    out.extend_from_slice(config);
    // `without_config` opens its object with `{`, which becomes the `,` after the config.
    let opening = out.len();
    if crate::json::encode_into(out, &info.without_config()) {
        if let Some(opening) = out.get_mut(opening) {
            *opening = b',';
        }
    } else {
        out.push(b'}');
    }
}

/// `STREAM.PURGE` request body (optional). `seq` and `keep` are mutually exclusive.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamPurgeRequest {
    /// Purge up to but not including this sequence.
    #[serde(rename = "seq", skip_serializing_if = "is_zero_u64")]
    pub sequence: u64,
    /// Only messages matching this subject (wildcards allowed).
    #[serde(rename = "filter", skip_serializing_if = "String::is_empty")]
    pub filter: String,
    /// Keep this many of the newest messages.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub keep: u64,
}

/// `STREAM.PURGE` reply; `purged` is always present (0 on error).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamPurgeResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub success: bool,
    #[serde(default)]
    pub purged: u64,
}

impl StreamPurgeResponse {
    pub fn ok(purged: u64) -> Self {
        StreamPurgeResponse {
            response_type: STREAM_PURGE_RESPONSE_TYPE.to_string(),
            error: None,
            success: true,
            purged,
        }
    }

    pub fn error(error: ApiError) -> Self {
        StreamPurgeResponse {
            response_type: STREAM_PURGE_RESPONSE_TYPE.to_string(),
            error: Some(error),
            success: false,
            purged: 0,
        }
    }
}

/// `STREAM.MSG.DELETE` request body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MsgDeleteRequest {
    #[serde(rename = "seq")]
    pub sequence: u64,
    /// Remove without overwriting the bytes on disk.
    #[serde(skip_serializing_if = "is_false")]
    pub no_erase: bool,
}

/// `STREAM.MSG.GET` and `DIRECT.GET` request body. `STREAM.MSG.GET` decodes it strictly;
/// nats-server decodes `DIRECT.GET` bodies leniently (unknown fields ignored): use
/// [`crate::json::decode_request_with`] with [`crate::json::Strictness::Lenient`] there. An empty
/// `DIRECT.GET` body is `408 Empty Request`, not a zero request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MsgGetRequest {
    #[serde(rename = "seq", skip_serializing_if = "is_zero_u64")]
    pub sequence: u64,
    /// The last message on this subject.
    #[serde(rename = "last_by_subj", skip_serializing_if = "String::is_empty")]
    pub last_by_subject: String,
    /// The first message at or after `seq` on this subject (wildcards allowed).
    #[serde(rename = "next_by_subj", skip_serializing_if = "String::is_empty")]
    pub next_by_subject: String,
    /// Direct get only: up to this many messages.
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub batch: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_bytes: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    /// Direct get only: last message of each of these subjects.
    #[serde(rename = "multi_last", skip_serializing_if = "Vec::is_empty")]
    pub multi_last: Vec<String>,
    #[serde(rename = "up_to_seq", skip_serializing_if = "is_zero_u64")]
    pub up_to_sequence: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_to_time: Option<Timestamp>,
    /// Return the payload only.
    #[serde(rename = "no_hdr", skip_serializing_if = "is_false")]
    pub no_headers: bool,
}

fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}

/// `STREAM.MSG.GET` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgGetResponse {
    #[serde(rename = "type")]
    pub response_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<StoredMessage>,
}

impl MsgGetResponse {
    pub fn ok(message: StoredMessage) -> Self {
        MsgGetResponse {
            response_type: STREAM_MSG_GET_RESPONSE_TYPE.to_string(),
            error: None,
            message: Some(message),
        }
    }

    pub fn error(error: ApiError) -> Self {
        MsgGetResponse {
            response_type: STREAM_MSG_GET_RESPONSE_TYPE.to_string(),
            error: Some(error),
            message: None,
        }
    }
}

/// `STREAM.SNAPSHOT` request body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamSnapshotRequest {
    pub deliver_subject: String,
    #[serde(skip_serializing_if = "is_false")]
    pub no_consumers: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub chunk_size: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub window_size: i64,
    /// Verify every message checksum first.
    #[serde(rename = "jsck", skip_serializing_if = "is_false")]
    pub check_messages: bool,
}

/// The reply to a publish into a stream: `{"stream":"ORDERS","seq":1}`, plus `"duplicate":true`
/// for a deduplicated `Nats-Msg-Id`, `"domain"` when JetStream has one. On failure nats-server
/// sends `{"error":{...},"stream":"ORDERS","seq":0}` (stream known) or just `{"error":{...}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PubAck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default)]
    pub stream: String,
    #[serde(rename = "seq", default)]
    pub sequence: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
    /// Counter streams: the counter's value after this increment.
    #[serde(rename = "val", default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Batch publish: the batch id and its message count, on the commit's ack.
    #[serde(rename = "batch", default, skip_serializing_if = "String::is_empty")]
    pub batch_id: String,
    #[serde(rename = "count", default, skip_serializing_if = "is_zero_u64")]
    pub batch_size: u64,
}

impl PubAck {
    pub fn ok(stream: impl Into<String>, sequence: u64) -> Self {
        PubAck {
            stream: stream.into(),
            sequence,
            ..Default::default()
        }
    }

    /// The error ack for a message that reached a stream (`"stream":..,"seq":0` kept, as Go).
    pub fn error(stream: impl Into<String>, error: ApiError) -> Self {
        PubAck {
            error: Some(error),
            stream: stream.into(),
            ..Default::default()
        }
    }
}

/// Appends `value` in decimal without allocating (one PubAck per stored message).
fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// The success PubAck as nats-server writes it on its hot path: a per-stream prefix
/// `{"stream":"ORDERS",` (plus `"domain":"hub",`) `"seq":` built once, then the sequence and the
/// tail appended per message. Note the field order (`domain` before `seq`) and the space in
/// `"duplicate": true`: both are nats-server's bytes, which differ from [`PubAck`]'s struct order
/// (used for error acks, as nats-server does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PubAckTemplate {
    prefix: Vec<u8>,
}

impl PubAckTemplate {
    pub fn new(stream: &str, domain: Option<&str>) -> Self {
        let quote = |text: &str| serde_json::Value::String(text.to_string()).to_string();
        let prefix = match domain.filter(|domain| !domain.is_empty()) {
            Some(domain) => format!(
                "{{\"stream\":{},\"domain\":{},\"seq\":",
                quote(stream),
                quote(domain)
            ),
            None => format!("{{\"stream\":{},\"seq\":", quote(stream)),
        };
        PubAckTemplate {
            prefix: prefix.into_bytes(),
        }
    }

    fn start(&self, out: &mut Vec<u8>, sequence: u64) {
        out.extend_from_slice(&self.prefix);
        push_decimal(out, sequence);
    }

    /// Appends `{"stream":..,"seq":N}` to `out`.
    pub fn write_ok(&self, out: &mut Vec<u8>, sequence: u64) {
        self.start(out, sequence);
        out.push(b'}');
    }

    pub fn ok(&self, sequence: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + 21);
        self.write_ok(&mut out, sequence);
        out
    }

    /// The ack for a deduplicated `Nats-Msg-Id`: the original message's sequence.
    pub fn duplicate(&self, sequence: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + 40);
        self.start(&mut out, sequence);
        out.extend_from_slice(b",\"duplicate\": true}");
        out
    }

    /// Counter streams: `,"val":"<new value>"}`.
    pub fn counter(&self, sequence: u64, value: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + 40 + value.len());
        self.start(&mut out, sequence);
        out.extend_from_slice(b",\"val\":");
        out.extend_from_slice(
            serde_json::Value::String(value.to_string())
                .to_string()
                .as_bytes(),
        );
        out.push(b'}');
        out
    }

    /// Batch commit: `,"batch":"<id>","count":N}`.
    pub fn batch(&self, sequence: u64, batch_id: &str, count: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + 60 + batch_id.len());
        self.start(&mut out, sequence);
        out.extend_from_slice(b",\"batch\":");
        out.extend_from_slice(
            serde_json::Value::String(batch_id.to_string())
                .to_string()
                .as_bytes(),
        );
        out.extend_from_slice(format!(",\"count\":{count}}}").as_bytes());
        out
    }
}

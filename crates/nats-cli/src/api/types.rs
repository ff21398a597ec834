//! `$JS.API` request and response bodies the CLI reads and writes. Field order and
//! omitted-when-empty rules follow jsm.go's `api` package, so `--json` output matches
//! natscli's. Durations are Go nanoseconds, times stay RFC 3339 strings as the server sent
//! them, enums stay strings (unknown future values pass through untouched).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}
fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}
fn is_zero_i32(value: &i32) -> bool {
    *value == 0
}
fn is_false(value: &bool) -> bool {
    !*value
}
fn is_no_compression(value: &String) -> bool {
    value.is_empty() || value == "none"
}
fn is_default_persist(value: &String) -> bool {
    value.is_empty() || value == "default"
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ApiError {
    pub code: u16,
    pub err_code: u16,
    pub description: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct StreamConsumerLimits {
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub inactive_threshold: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_ack_pending: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Placement {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preferred: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SubjectTransform {
    pub src: String,
    pub dest: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Republish {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub src: String,
    pub dest: String,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ExternalStream {
    pub api: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct StreamSource {
    pub name: String,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct StreamConfig {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    pub retention: String,
    pub max_consumers: i64,
    pub max_msgs_per_subject: i64,
    pub max_msgs: i64,
    pub max_bytes: i64,
    pub max_age: i64,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub max_msg_size: i32,
    pub storage: String,
    pub discard: String,
    pub num_replicas: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub no_ack: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub duplicate_window: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSource>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSource>,
    #[serde(skip_serializing_if = "is_no_compression")]
    pub compression: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_transform: Option<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub republish: Option<Republish>,
    pub sealed: bool,
    pub deny_delete: bool,
    pub deny_purge: bool,
    pub allow_rollup_hdrs: bool,
    pub allow_direct: bool,
    pub mirror_direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub discard_new_per_subject: bool,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub first_seq: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_ttl: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub subject_delete_marker_ttl: i64,
    pub consumer_limits: StreamConsumerLimits,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_atomic: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_counter: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_schedules: bool,
    #[serde(skip_serializing_if = "is_default_persist")]
    pub persist_mode: String,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_batched: bool,
}

impl Default for StreamConfig {
    fn default() -> StreamConfig {
        StreamConfig {
            name: String::new(),
            description: String::new(),
            subjects: Vec::new(),
            retention: "limits".to_string(),
            max_consumers: -1,
            max_msgs_per_subject: -1,
            max_msgs: -1,
            max_bytes: -1,
            max_age: 0,
            max_msg_size: -1,
            storage: "file".to_string(),
            discard: "old".to_string(),
            num_replicas: 1,
            no_ack: false,
            duplicate_window: 0,
            placement: None,
            mirror: None,
            sources: Vec::new(),
            compression: String::new(),
            subject_transform: None,
            republish: None,
            sealed: false,
            deny_delete: false,
            deny_purge: false,
            allow_rollup_hdrs: false,
            allow_direct: false,
            mirror_direct: false,
            discard_new_per_subject: false,
            first_seq: 0,
            metadata: BTreeMap::new(),
            allow_msg_ttl: false,
            subject_delete_marker_ttl: 0,
            consumer_limits: StreamConsumerLimits::default(),
            allow_atomic: false,
            allow_msg_counter: false,
            allow_msg_schedules: false,
            persist_mode: String::new(),
            allow_batched: false,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct LostStreamData {
    pub msgs: Vec<u64>,
    pub bytes: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct StreamState {
    pub messages: u64,
    pub bytes: u64,
    pub first_seq: u64,
    pub first_ts: String,
    pub last_seq: u64,
    pub last_ts: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub num_deleted: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<u64>,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub num_subjects: i64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub subjects: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostStreamData>,
    pub consumer_count: i64,
}

pub const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

impl Default for StreamState {
    fn default() -> StreamState {
        StreamState {
            messages: 0,
            bytes: 0,
            first_seq: 0,
            first_ts: GO_ZERO_TIME.to_string(),
            last_seq: 0,
            last_ts: GO_ZERO_TIME.to_string(),
            num_deleted: 0,
            deleted: Vec::new(),
            num_subjects: 0,
            subjects: BTreeMap::new(),
            lost: None,
            consumer_count: 0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct PeerInfo {
    pub name: String,
    pub current: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub offline: bool,
    pub active: i64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub lag: u64,
    pub peer: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ClusterInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub raft_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub leader: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader_since: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<PeerInfo>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct StreamSourceInfo {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    pub lag: u64,
    pub active: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct StreamAlternate {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub cluster: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct StreamInfo {
    pub config: StreamConfig,
    pub created: String,
    pub state: StreamState,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSourceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSourceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternates: Vec<StreamAlternate>,
    pub ts: String,
}

impl Default for StreamInfo {
    fn default() -> StreamInfo {
        StreamInfo {
            config: StreamConfig::default(),
            created: GO_ZERO_TIME.to_string(),
            state: StreamState::default(),
            domain: String::new(),
            cluster: None,
            mirror: None,
            sources: Vec::new(),
            alternates: Vec::new(),
            ts: GO_ZERO_TIME.to_string(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct ConsumerConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub ack_policy: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub ack_wait: i64,
    pub deliver_policy: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub durable_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filter_subjects: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub flow_control: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub idle_heartbeat: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_ack_pending: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_deliver: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backoff: Vec<i64>,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_waiting: i64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<String>,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub rate_limit_bps: u64,
    pub replay_policy: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sample_freq: String,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_batch: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_expires: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub max_bytes: i64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub inactive_threshold: i64,
    pub num_replicas: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub mem_storage: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_until: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub priority_groups: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub priority_policy: String,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub priority_timeout: i64,
}

impl Default for ConsumerConfig {
    fn default() -> ConsumerConfig {
        ConsumerConfig {
            description: String::new(),
            ack_policy: "explicit".to_string(),
            ack_wait: 0,
            deliver_policy: "all".to_string(),
            deliver_subject: String::new(),
            deliver_group: String::new(),
            durable_name: String::new(),
            name: String::new(),
            filter_subject: String::new(),
            filter_subjects: Vec::new(),
            flow_control: false,
            idle_heartbeat: 0,
            max_ack_pending: 0,
            max_deliver: 0,
            backoff: Vec::new(),
            max_waiting: 0,
            opt_start_seq: 0,
            opt_start_time: None,
            rate_limit_bps: 0,
            replay_policy: "instant".to_string(),
            sample_freq: String::new(),
            headers_only: false,
            max_batch: 0,
            max_expires: 0,
            max_bytes: 0,
            inactive_threshold: 0,
            num_replicas: 0,
            mem_storage: false,
            metadata: BTreeMap::new(),
            pause_until: None,
            priority_groups: Vec::new(),
            priority_policy: String::new(),
            priority_timeout: 0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct SequenceInfo {
    pub consumer_seq: u64,
    pub stream_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_active: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ConsumerInfo {
    pub stream_name: String,
    pub name: String,
    pub config: ConsumerConfig,
    pub created: String,
    pub delivered: SequenceInfo,
    pub ack_floor: SequenceInfo,
    pub num_ack_pending: i64,
    pub num_redelivered: i64,
    pub num_waiting: i64,
    pub num_pending: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    #[serde(skip_serializing_if = "is_false")]
    pub push_bound: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub paused: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    pub pause_remaining: i64,
    pub ts: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct PubAck {
    pub stream: String,
    pub seq: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(skip_serializing_if = "is_false")]
    pub duplicate: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub val: String,
}

/// A message as `$JS.API.STREAM.MSG.GET` returns it (headers and data base64).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct StoredMessage {
    pub subject: String,
    pub seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hdrs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    pub time: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AccountLimits {
    pub max_memory: i64,
    pub max_storage: i64,
    pub max_streams: i64,
    pub max_consumers: i64,
    pub max_ack_pending: i64,
    pub memory_max_stream_bytes: i64,
    pub storage_max_stream_bytes: i64,
    pub max_bytes_required: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct ApiStats {
    pub level: i64,
    pub total: u64,
    pub errors: u64,
    pub inflight: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct JetStreamAccountInfo {
    pub memory: u64,
    pub storage: u64,
    pub reserved_memory: u64,
    pub reserved_storage: u64,
    pub streams: i64,
    pub consumers: i64,
    pub limits: AccountLimits,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub api: ApiStats,
}

/// jsm.go's display names for the API's lower-case enum values.
pub fn retention_name(value: &str) -> &str {
    match value {
        "limits" => "Limits",
        "interest" => "Interest",
        "workqueue" => "WorkQueue",
        other => other,
    }
}

pub fn storage_name(value: &str) -> &str {
    match value {
        "file" => "File",
        "memory" => "Memory",
        other => other,
    }
}

pub fn discard_name(value: &str) -> &str {
    match value {
        "old" => "Old",
        "new" => "New",
        other => other,
    }
}

pub fn ack_policy_name(value: &str) -> &str {
    match value {
        "none" => "None",
        "all" => "All",
        "explicit" => "Explicit",
        other => other,
    }
}

pub fn replay_policy_name(value: &str) -> &str {
    match value {
        "instant" => "Instant",
        "original" => "Original",
        other => other,
    }
}

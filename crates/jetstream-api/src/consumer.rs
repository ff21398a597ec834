//! Consumer configuration and state as they appear in `$JS.API.CONSUMER.*` JSON:
//! [`ConsumerConfig`] (sent by clients, echoed with defaults filled in), [`ConsumerInfo`] and
//! [`SequenceInfo`]. Field order and `omitempty` rules mirror nats-server's Go structs.
//!
//! Defaults nats-server fills in (the consumer code applies them; listed here so they live next to
//! the fields): `ack_wait` 30s, `max_deliver` -1, `max_waiting` 512 (pull), `max_ack_pending`
//! 1000 (unless ack none), `inactive_threshold` 5s for ephemerals, `num_replicas` echoed as given
//! (0 means "as the stream").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::policy::{is_default, AckPolicy, DeliverPolicy, PriorityPolicy, ReplayPolicy};
use crate::stream::ClusterInfo;
use crate::time_format::{Nanos, Timestamp};

/// nats-server's default `ack_wait`.
pub const DEFAULT_ACK_WAIT: Nanos = Nanos::from_secs(30);
/// Default `max_ack_pending` for consumers that need acks.
pub const DEFAULT_MAX_ACK_PENDING: i64 = 1000;
/// Default `max_waiting` for pull consumers.
pub const DEFAULT_MAX_WAITING: i64 = 512;
/// Default `inactive_threshold` of ephemeral consumers.
pub const DEFAULT_EPHEMERAL_INACTIVE_THRESHOLD: Nanos = Nanos::from_secs(5);

fn is_false(value: &bool) -> bool {
    !*value
}

/// A consumer's configuration (`config` in create requests and info replies).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsumerConfig {
    #[serde(rename = "durable_name", skip_serializing_if = "String::is_empty")]
    pub durable_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub deliver_policy: DeliverPolicy,
    #[serde(skip_serializing_if = "is_default")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<Timestamp>,
    pub ack_policy: AckPolicy,
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub ack_wait: Nanos,
    #[serde(skip_serializing_if = "is_default")]
    pub max_deliver: i64,
    #[serde(rename = "backoff", skip_serializing_if = "Vec::is_empty")]
    pub backoff: Vec<Nanos>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filter_subjects: Vec<String>,
    pub replay_policy: ReplayPolicy,
    /// Bits per second.
    #[serde(rename = "rate_limit_bps", skip_serializing_if = "is_default")]
    pub rate_limit: u64,
    /// Ack sampling for latency advisories, e.g. `"50%"`.
    #[serde(rename = "sample_freq", skip_serializing_if = "String::is_empty")]
    pub sample_frequency: String,
    #[serde(skip_serializing_if = "is_default")]
    pub max_waiting: i64,
    #[serde(skip_serializing_if = "is_default")]
    pub max_ack_pending: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub flow_control: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
    /// Pull only: largest `batch` a request may ask for.
    #[serde(rename = "max_batch", skip_serializing_if = "is_default")]
    pub max_request_batch: i64,
    /// Pull only: longest `expires` a request may ask for.
    #[serde(rename = "max_expires", skip_serializing_if = "Nanos::is_zero")]
    pub max_request_expires: Nanos,
    /// Pull only: largest `max_bytes` a request may ask for.
    #[serde(rename = "max_bytes", skip_serializing_if = "is_default")]
    pub max_request_max_bytes: i64,
    /// Push only: where messages are delivered.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
    /// Push only: queue group of the delivery subscription.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_group: String,
    #[serde(rename = "idle_heartbeat", skip_serializing_if = "Nanos::is_zero")]
    pub idle_heartbeat: Nanos,
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub inactive_threshold: Nanos,
    /// Always present (0: same as the stream).
    #[serde(rename = "num_replicas")]
    pub replicas: i64,
    #[serde(rename = "mem_storage", skip_serializing_if = "is_false")]
    pub memory_storage: bool,
    /// Internal (mirror/source) consumers; never from ordinary clients.
    #[serde(skip_serializing_if = "is_false")]
    pub direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub sourcing: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_until: Option<Timestamp>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub priority_groups: Vec<String>,
    #[serde(skip_serializing_if = "is_default")]
    pub priority_policy: PriorityPolicy,
    /// Pinned-client TTL.
    #[serde(rename = "priority_timeout", skip_serializing_if = "Nanos::is_zero")]
    pub pinned_ttl: Nanos,
}

impl ConsumerConfig {
    /// Pull consumers have no deliver subject.
    pub fn is_pull(&self) -> bool {
        self.deliver_subject.is_empty()
    }

    /// Durable when it has a durable name (the `name` of an ephemeral is server-generated).
    pub fn is_durable(&self) -> bool {
        !self.durable_name.is_empty()
    }

    /// The filters as one list, whichever of `filter_subject` / `filter_subjects` was used.
    pub fn filters(&self) -> Vec<&str> {
        if !self.filter_subject.is_empty() {
            vec![self.filter_subject.as_str()]
        } else {
            self.filter_subjects.iter().map(String::as_str).collect()
        }
    }
}

/// A consumer and a stream sequence with the time of the last activity; used for `delivered`
/// (last delivered) and `ack_floor` (everything at or below is acknowledged).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequenceInfo {
    #[serde(rename = "consumer_seq")]
    pub consumer_sequence: u64,
    #[serde(rename = "stream_seq")]
    pub stream_sequence: u64,
    /// Absent until something was delivered/acked.
    #[serde(rename = "last_active", skip_serializing_if = "Option::is_none")]
    pub last_active: Option<Timestamp>,
}

/// State of one priority group of a pull consumer. `pinned_ts` is always sent (Go's
/// `omitempty` does not omit a zero time).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PriorityGroupState {
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pinned_client_id: String,
    #[serde(rename = "pinned_ts")]
    pub pinned_time: Timestamp,
}

/// `CONSUMER.INFO` / `CONSUMER.CREATE` payload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerInfo {
    /// Required when decoding, so an error response decodes with no info at all.
    #[serde(rename = "stream_name")]
    pub stream_name: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub created: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConsumerConfig>,
    #[serde(default)]
    pub delivered: SequenceInfo,
    #[serde(default)]
    pub ack_floor: SequenceInfo,
    #[serde(default)]
    pub num_ack_pending: u64,
    #[serde(default)]
    pub num_redelivered: u64,
    #[serde(default)]
    pub num_waiting: u64,
    #[serde(default)]
    pub num_pending: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// Push consumers: a subscriber is bound to the deliver subject.
    #[serde(default, skip_serializing_if = "is_false")]
    pub push_bound: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Nanos::is_zero")]
    pub pause_remaining: Nanos,
    /// When the info was gathered.
    #[serde(default, rename = "ts")]
    pub timestamp: Timestamp,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub priority_groups: Vec<PriorityGroupState>,
}

/// `consumer_group_pinned` advisory on `$JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>`:
/// a pull client was pinned for a `pinned_client` consumer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupPinned {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    pub stream: String,
    pub consumer: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub group: String,
    #[serde(rename = "pinned_id")]
    pub pinned_client_id: String,
}

impl crate::advisory::AdvisoryBody for ConsumerGroupPinned {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.consumer_group_pinned";
}

/// `consumer_group_unpinned` advisory on `$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<stream>.<consumer>`;
/// `reason` is `"admin"` (CONSUMER.UNPIN) or `"timeout"` (priority_timeout passed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupUnpinned {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    pub stream: String,
    pub consumer: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub group: String,
    pub reason: String,
}

impl crate::advisory::AdvisoryBody for ConsumerGroupUnpinned {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.consumer_group_unpinned";
}

/// Subject of [`ConsumerGroupPinned`].
pub fn consumer_pinned_subject(stream: &str, consumer: &str) -> String {
    format!(
        "{}.CONSUMER.PINNED.{stream}.{consumer}",
        crate::advisory::ADVISORY_PREFIX
    )
}

/// Subject of [`ConsumerGroupUnpinned`].
pub fn consumer_unpinned_subject(stream: &str, consumer: &str) -> String {
    format!(
        "{}.CONSUMER.UNPINNED.{stream}.{consumer}",
        crate::advisory::ADVISORY_PREFIX
    )
}

/// nats-server's `validGroupName`: 1 to 16 of `A-Z a-z 0-9 / _ = -`.
pub fn is_valid_priority_group_name(group: &str) -> bool {
    (1..=16).contains(&group.len())
        && group
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'/' | b'_' | b'=' | b'-'))
}

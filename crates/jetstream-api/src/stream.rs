//! Stream configuration and state as they appear in `$JS.API.STREAM.*` JSON: [`StreamConfig`]
//! (what clients send and what the server echoes back, defaults filled in), [`StreamInfo`],
//! [`StreamState`] and their parts (sources, mirrors, placement, cluster info).
//!
//! Field order and `omitempty` rules mirror nats-server's `StreamConfig` and friends. Config
//! types reject unknown fields (the strict API decoding of nats-server 2.12+); info types, which
//! only the server writes, accept them.

use std::collections::BTreeMap;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::api_error::ApiError;
use crate::policy::{
    is_default, Compression, DiscardPolicy, PersistMode, RetentionPolicy, StorageType,
};
use crate::time_format::{Nanos, Timestamp};

fn is_false(value: &bool) -> bool {
    !*value
}

/// A stream's configuration. Missing fields decode to Go's zero values; the server then fills
/// its defaults (`max_msgs: -1`, `duplicate_window: 2m`, `num_replicas: 1`, ...) before echoing it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConfig {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    pub retention: RetentionPolicy,
    pub max_consumers: i64,
    pub max_msgs: i64,
    pub max_bytes: i64,
    pub max_age: Nanos,
    #[serde(rename = "max_msgs_per_subject")]
    pub max_msgs_per_subject: i64,
    #[serde(skip_serializing_if = "is_default")]
    pub max_msg_size: i32,
    pub discard: DiscardPolicy,
    pub storage: StorageType,
    #[serde(rename = "num_replicas")]
    pub replicas: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub no_ack: bool,
    #[serde(rename = "duplicate_window", skip_serializing_if = "Nanos::is_zero")]
    pub duplicate_window: Nanos,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSource>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSource>,
    pub compression: Compression,
    #[serde(skip_serializing_if = "is_default")]
    pub first_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_transform: Option<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub republish: Option<RePublish>,
    pub allow_direct: bool,
    pub mirror_direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub discard_new_per_subject: bool,
    pub sealed: bool,
    pub deny_delete: bool,
    pub deny_purge: bool,
    #[serde(rename = "allow_rollup_hdrs")]
    pub allow_rollup: bool,
    pub consumer_limits: StreamConsumerLimits,
    pub allow_msg_ttl: bool,
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub subject_delete_marker_ttl: Nanos,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_counter: bool,
    #[serde(rename = "allow_atomic", skip_serializing_if = "is_false")]
    pub allow_atomic_publish: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_schedules: bool,
    #[serde(skip_serializing_if = "is_default")]
    pub persist_mode: PersistMode,
    #[serde(rename = "allow_batched", skip_serializing_if = "is_false")]
    pub allow_batch_publish: bool,
    /// Sorted by key on the wire, as Go marshals maps. nats-server adds `_nats.ver`,
    /// `_nats.level` and `_nats.req.level` (see [`crate::metadata`] keys).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// Defaults a stream hands to consumers created on it (`consumer_limits`; `{}` when unset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConsumerLimits {
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub inactive_threshold: Nanos,
    #[serde(skip_serializing_if = "is_default")]
    pub max_ack_pending: i64,
}

/// `subject_transform` of a stream and the entries of a source's `subject_transforms`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubjectTransform {
    #[serde(rename = "src")]
    pub source: String,
    #[serde(rename = "dest")]
    pub destination: String,
}

/// `republish`: messages are re-published to `dest` once stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RePublish {
    #[serde(rename = "src", skip_serializing_if = "String::is_empty")]
    pub source: String,
    #[serde(rename = "dest")]
    pub destination: String,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Placement {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preferred: String,
}

/// A mirror or one of the sources of a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamSource {
    pub name: String,
    #[serde(skip_serializing_if = "is_default")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<StreamConsumerSource>,
}

/// A durable consumer a source or mirror reads through (nats-server 2.14+).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConsumerSource {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
}

/// Where a source in another account or domain is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExternalStream {
    #[serde(rename = "api")]
    pub api_prefix: String,
    #[serde(rename = "deliver")]
    pub deliver_prefix: String,
}

/// `STREAM.INFO` / `STREAM.CREATE` payload: config, state and times. Serialized by hand (the
/// same bytes a derive would write, nats-server's field order, empty parts left out) so that
/// [`StreamInfo::without_config`] can write it all but the config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct StreamInfo {
    /// Required when decoding, so an error response decodes with no info at all.
    pub config: StreamConfig,
    #[serde(default)]
    pub created: Timestamp,
    #[serde(default)]
    pub state: StreamState,
    #[serde(default)]
    pub domain: String,
    #[serde(default)]
    pub cluster: Option<ClusterInfo>,
    #[serde(default)]
    pub mirror: Option<StreamSourceInfo>,
    #[serde(default)]
    pub sources: Vec<StreamSourceInfo>,
    #[serde(default)]
    pub alternates: Vec<StreamAlternate>,
    /// When the info was gathered.
    #[serde(default, rename = "ts")]
    pub timestamp: Timestamp,
}

impl StreamInfo {
    /// The info without its `config`: `{"created":...,"ts":...}`. A server that keeps a
    /// stream's config encoded writes `{"config":<that>,` and this from its second byte on.
    pub fn without_config(&self) -> impl Serialize + '_ {
        WithoutConfig(self)
    }

    fn serialize_parts<S: Serializer>(
        &self,
        with_config: bool,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("StreamInfo", 9)?;
        if with_config {
            out.serialize_field("config", &self.config)?;
        } else {
            out.skip_field("config")?;
        }
        out.serialize_field("created", &self.created)?;
        out.serialize_field("state", &self.state)?;
        if self.domain.is_empty() {
            out.skip_field("domain")?;
        } else {
            out.serialize_field("domain", &self.domain)?;
        }
        match &self.cluster {
            Some(cluster) => out.serialize_field("cluster", cluster)?,
            None => out.skip_field("cluster")?,
        }
        match &self.mirror {
            Some(mirror) => out.serialize_field("mirror", mirror)?,
            None => out.skip_field("mirror")?,
        }
        if self.sources.is_empty() {
            out.skip_field("sources")?;
        } else {
            out.serialize_field("sources", &self.sources)?;
        }
        if self.alternates.is_empty() {
            out.skip_field("alternates")?;
        } else {
            out.serialize_field("alternates", &self.alternates)?;
        }
        out.serialize_field("ts", &self.timestamp)?;
        out.end()
    }
}

impl Serialize for StreamInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize_parts(true, serializer)
    }
}

struct WithoutConfig<'a>(&'a StreamInfo);

impl Serialize for WithoutConfig<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_parts(false, serializer)
    }
}

/// A stream's message counts and bounds. `first_ts`/`last_ts` are [`Timestamp::ZERO`] when there
/// is no such message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamState {
    #[serde(rename = "messages")]
    pub messages: u64,
    pub bytes: u64,
    pub first_seq: u64,
    #[serde(rename = "first_ts")]
    pub first_time: Timestamp,
    pub last_seq: u64,
    #[serde(rename = "last_ts")]
    pub last_time: Timestamp,
    #[serde(skip_serializing_if = "is_default")]
    pub num_subjects: u64,
    /// Per-subject counts, only when asked for with `subjects_filter`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub subjects: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "is_default")]
    pub num_deleted: u64,
    /// Deleted sequences, only when asked for with `deleted_details`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostStreamData>,
    #[serde(rename = "consumer_count")]
    pub consumer_count: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LostStreamData {
    #[serde(rename = "msgs")]
    pub messages: Vec<u64>,
    pub bytes: u64,
}

/// `cluster` in stream and consumer info. A single server reports only `leader` (its server name)
/// in `STREAM.INFO`, and nothing in `STREAM.CREATE`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub raft_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub leader: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader_since: Option<Timestamp>,
    #[serde(rename = "system_account", skip_serializing_if = "is_false")]
    pub system_account: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub traffic_account: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<PeerInfo>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PeerInfo {
    pub name: String,
    pub current: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub offline: bool,
    pub active: Nanos,
    #[serde(skip_serializing_if = "is_default")]
    pub lag: u64,
    pub peer: String,
    #[serde(skip_serializing_if = "is_false")]
    pub pending: bool,
}

/// Progress of a mirror or source. `active` is `-1` until it has received anything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamSourceInfo {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    pub lag: u64,
    /// The origin sequence a source last delivered (2.15 reports it for sources, 0 = left out).
    #[serde(skip_serializing_if = "is_default")]
    pub seq: u64,
    pub active: Nanos,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamAlternate {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub cluster: String,
}

/// A stored message as `STREAM.MSG.GET` returns it: headers and payload base64-encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoredMessage {
    pub subject: String,
    #[serde(rename = "seq")]
    pub sequence: u64,
    /// Base64 (standard alphabet, padded) of the raw header block, omitted when there is none.
    #[serde(rename = "hdrs", skip_serializing_if = "String::is_empty")]
    pub headers_base64: String,
    /// Base64 of the payload, omitted when empty.
    #[serde(rename = "data", skip_serializing_if = "String::is_empty")]
    pub data_base64: String,
    pub time: Timestamp,
}

impl StoredMessage {
    /// Builds the message with headers and payload encoded as nats-server does.
    pub fn new(
        subject: impl Into<String>,
        sequence: u64,
        headers: &[u8],
        data: &[u8],
        time: Timestamp,
    ) -> Self {
        StoredMessage {
            subject: subject.into(),
            sequence,
            headers_base64: crate::base64::encode(headers),
            data_base64: crate::base64::encode(data),
            time,
        }
    }
}

//! JetStream advisories and metrics published on `$JS.EVENT.ADVISORY.>` / `$JS.EVENT.METRIC.>`,
//! as nats-server's `jetstream_events.go` shapes them: `{"type","id","timestamp",...body}`.
//!
//! Build one with [`Advisory::new`] (the body type picks the `type` string) and publish it on the
//! subject from the matching `*_subject` function. The `id` is a NUID; [`Nuid`] makes them
//! without an RNG dependency (seed it from something random).

use serde::{Deserialize, Serialize};

use crate::stream::StreamState;
use crate::time_format::{Nanos, Timestamp};

pub const ADVISORY_PREFIX: &str = "$JS.EVENT.ADVISORY";
pub const METRIC_PREFIX: &str = "$JS.EVENT.METRIC";
pub const API_AUDIT_SUBJECT: &str = "$JS.EVENT.ADVISORY.API";
pub const API_LIMIT_REACHED_SUBJECT: &str = "$JS.EVENT.ADVISORY.API.LIMIT_REACHED";
pub const SERVER_OUT_OF_STORAGE_SUBJECT: &str = "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE";

pub fn stream_created_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.CREATED.{stream}")
}
pub fn stream_updated_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.UPDATED.{stream}")
}
pub fn stream_deleted_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.DELETED.{stream}")
}
pub fn consumer_created_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.CREATED.{stream}.{consumer}")
}
pub fn consumer_deleted_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.DELETED.{stream}.{consumer}")
}
pub fn consumer_pause_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.PAUSE.{stream}.{consumer}")
}
pub fn max_deliveries_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.MAX_DELIVERIES.{stream}.{consumer}")
}
pub fn message_naked_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.MSG_NAKED.{stream}.{consumer}")
}
pub fn message_terminated_subject(stream: &str, consumer: &str) -> String {
    format!("{ADVISORY_PREFIX}.CONSUMER.MSG_TERMINATED.{stream}.{consumer}")
}
pub fn consumer_ack_metric_subject(stream: &str, consumer: &str) -> String {
    format!("{METRIC_PREFIX}.CONSUMER.ACK.{stream}.{consumer}")
}
pub fn snapshot_create_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.SNAPSHOT_CREATE.{stream}")
}
pub fn snapshot_complete_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.SNAPSHOT_COMPLETE.{stream}")
}
pub fn restore_create_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.RESTORE_CREATE.{stream}")
}
pub fn restore_complete_subject(stream: &str) -> String {
    format!("{ADVISORY_PREFIX}.STREAM.RESTORE_COMPLETE.{stream}")
}

/// An advisory body: knows its `type` string.
pub trait AdvisoryBody {
    const TYPE: &'static str;
}

/// `{"type","id","timestamp"}` followed by the body's fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advisory<T> {
    #[serde(rename = "type")]
    pub event_type: String,
    pub id: String,
    pub timestamp: Timestamp,
    #[serde(flatten)]
    pub body: T,
}

impl<T: AdvisoryBody> Advisory<T> {
    pub fn new(id: impl Into<String>, timestamp: Timestamp, body: T) -> Self {
        Advisory {
            event_type: T::TYPE.to_string(),
            id: id.into(),
            timestamp,
            body,
        }
    }
}

/// What happened to a stream or consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    Create,
    Delete,
    Modify,
}

/// `stream_action`: created, updated (`modify`) or deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamAction {
    pub stream: String,
    pub action: ActionKind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for StreamAction {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.stream_action";
}

/// `consumer_action`: created or deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerActionAdvisory {
    pub stream: String,
    pub consumer: String,
    pub action: ActionKind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for ConsumerActionAdvisory {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.consumer_action";
}

/// `consumer_pause`; `pause_until` is the zero time when resumed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerPause {
    pub stream: String,
    pub consumer: String,
    pub paused: bool,
    pub pause_until: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for ConsumerPause {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.consumer_pause";
}

/// `consumer_ack` metric, sampled per the consumer's `sample_freq`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerAckMetric {
    pub stream: String,
    pub consumer: String,
    #[serde(rename = "consumer_seq")]
    pub consumer_sequence: u64,
    #[serde(rename = "stream_seq")]
    pub stream_sequence: u64,
    /// Nanoseconds from delivery to ack.
    #[serde(rename = "ack_time")]
    pub ack_time: Nanos,
    pub deliveries: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for ConsumerAckMetric {
    const TYPE: &'static str = "io.nats.jetstream.metric.v1.consumer_ack";
}

/// `max_deliver`: a message reached the consumer's `max_deliver`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryExceeded {
    pub stream: String,
    pub consumer: String,
    #[serde(rename = "stream_seq")]
    pub stream_sequence: u64,
    pub deliveries: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for DeliveryExceeded {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.max_deliver";
}

/// `nak`: a client NAKed a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNak {
    pub stream: String,
    pub consumer: String,
    #[serde(rename = "consumer_seq")]
    pub consumer_sequence: u64,
    #[serde(rename = "stream_seq")]
    pub stream_sequence: u64,
    pub deliveries: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for DeliveryNak {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.nak";
}

/// `terminated`: a client sent `+TERM` (or limits removed an unacked message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryTerminated {
    pub stream: String,
    pub consumer: String,
    #[serde(rename = "consumer_seq")]
    pub consumer_sequence: u64,
    #[serde(rename = "stream_seq")]
    pub stream_sequence: u64,
    pub deliveries: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for DeliveryTerminated {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.terminated";
}

/// The requesting client as advisories describe it (nats-server's `ClientInfo`, every field
/// `omitempty`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    #[serde(skip_serializing_if = "crate::policy::is_default")]
    pub id: u64,
    #[serde(rename = "acc", skip_serializing_if = "String::is_empty")]
    pub account: String,
    #[serde(rename = "svc", skip_serializing_if = "String::is_empty")]
    pub service: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang: String,
    #[serde(rename = "ver", skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(skip_serializing_if = "Nanos::is_zero")]
    pub rtt: Nanos,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(rename = "alts", skip_serializing_if = "Vec::is_empty")]
    pub alternates: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub jwt: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub issuer_key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name_tag: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `Client`, `Leafnode`, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `nats`, `mqtt`, `websocket`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_type: String,
    #[serde(rename = "client_id", skip_serializing_if = "String::is_empty")]
    pub mqtt_client: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reply: String,
}

/// `api_audit`: one JetStream API request and the response sent (both as JSON text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiAudit {
    pub server: String,
    /// `null` when the request did not come from a client.
    pub client: Option<ClientInfo>,
    pub subject: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request: String,
    pub response: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for ApiAudit {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.api_audit";
}

/// `snapshot_create`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotCreate {
    pub stream: String,
    pub state: StreamState,
    pub client: Option<ClientInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for SnapshotCreate {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.snapshot_create";
}

/// `snapshot_complete`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotComplete {
    pub stream: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub client: Option<ClientInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

impl AdvisoryBody for SnapshotComplete {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.snapshot_complete";
}

/// `restore_create`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreCreate {
    pub stream: String,
    pub client: Option<ClientInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for RestoreCreate {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.restore_create";
}

/// `restore_complete`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreComplete {
    pub stream: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub bytes: i64,
    pub client: Option<ClientInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for RestoreComplete {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.restore_complete";
}

/// `server_out_of_space`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerOutOfSpace {
    pub server: String,
    pub server_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stream: String,
    pub cluster: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
}

impl AdvisoryBody for ServerOutOfSpace {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.server_out_of_space";
}

/// `api_limit_reached`: API requests were dropped because the queue was full.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiLimitReached {
    pub server: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub dropped: i64,
}

impl AdvisoryBody for ApiLimitReached {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.api_limit_reached";
}

/// NATS unique identifiers (22 base-62 characters: a 12-character random prefix and a
/// 10-character sequence), the form nats-server uses for advisory ids.
#[derive(Clone, Debug)]
pub struct Nuid {
    prefix: [u8; PREFIX_LENGTH],
    sequence: u64,
    increment: u64,
    state: u64,
}

const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PREFIX_LENGTH: usize = 12;
const SEQUENCE_LENGTH: usize = 10;
/// 62^10.
const MAX_SEQUENCE: u64 = 839_299_365_868_340_224;
const MIN_INCREMENT: u64 = 33;
const MAX_INCREMENT: u64 = 333;

impl Nuid {
    /// A generator seeded by the caller (e.g. from the clock and process id, or an RNG).
    pub fn new(seed: u64) -> Self {
        let mut nuid = Nuid {
            prefix: [b'0'; PREFIX_LENGTH],
            sequence: 0,
            increment: 0,
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
        };
        nuid.reset_prefix();
        nuid.sequence = nuid.next_random() % MAX_SEQUENCE;
        nuid.increment = MIN_INCREMENT + nuid.next_random() % (MAX_INCREMENT - MIN_INCREMENT);
        nuid
    }

    /// splitmix64: good enough for unique ids, not for secrets.
    fn next_random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn reset_prefix(&mut self) {
        for index in 0..PREFIX_LENGTH {
            let random = self.next_random();
            self.prefix[index] = DIGITS[(random % 62) as usize];
        }
    }

    /// The next id.
    pub fn next_id(&mut self) -> String {
        self.sequence += self.increment;
        if self.sequence >= MAX_SEQUENCE {
            self.reset_prefix();
            self.sequence = self.next_random() % MAX_SEQUENCE;
            self.increment = MIN_INCREMENT + self.next_random() % (MAX_INCREMENT - MIN_INCREMENT);
        }
        let mut out = [b'0'; PREFIX_LENGTH + SEQUENCE_LENGTH];
        out[..PREFIX_LENGTH].copy_from_slice(&self.prefix);
        let mut value = self.sequence;
        for index in (PREFIX_LENGTH..PREFIX_LENGTH + SEQUENCE_LENGTH).rev() {
            out[index] = DIGITS[(value % 62) as usize];
            value /= 62;
        }
        out.iter().map(|&b| char::from(b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nuids_are_unique_and_well_formed() {
        let mut nuid = Nuid::new(42);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let id = nuid.next_id();
            assert_eq!(id.len(), 22);
            assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
            assert!(seen.insert(id));
        }
        assert_ne!(Nuid::new(1).next_id(), Nuid::new(2).next_id());
    }
}

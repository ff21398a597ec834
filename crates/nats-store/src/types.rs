//! Plain data returned by stores.

use bytes::Bytes;
use std::time::Duration;

/// A TTL meaning "never expire, not even by the stream's max_age" (nats `Nats-TTL: never`).
pub const TTL_NEVER: Duration = Duration::MAX;

/// One stored message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Subject it was published to.
    pub subject: String,
    /// Raw NATS header block (`NATS/1.0\r\n...\r\n\r\n`), empty when none.
    pub headers: Bytes,
    /// Message payload.
    pub payload: Bytes,
    /// Stream sequence.
    pub seq: u64,
    /// Store time, nanoseconds since the Unix epoch.
    pub timestamp: i64,
}

/// A stream's counters, as `StreamInfo.state` reports them (consumer count excepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamState {
    /// Live messages.
    pub msgs: u64,
    /// Bytes accounted for the live messages.
    pub bytes: u64,
    /// First live sequence (last_seq + 1 when empty; 0 when no sequence was ever used).
    pub first_seq: u64,
    /// Timestamp of the first live message, 0 when empty.
    pub first_timestamp: i64,
    /// Last sequence ever assigned (kept after removals).
    pub last_seq: u64,
    /// Timestamp of the last stored message, 0 when none.
    pub last_timestamp: i64,
    /// Sequences between first and last that are gone.
    pub num_deleted: u64,
    /// Distinct subjects with live messages.
    pub num_subjects: u64,
}

/// Per-subject counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubjectState {
    /// Live messages on the subject.
    pub msgs: u64,
    /// Lowest live sequence on the subject.
    pub first_seq: u64,
    /// Highest live sequence on the subject.
    pub last_seq: u64,
}

/// A message removed by `expire`, so the owner can e.g. place subject delete markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedMessage {
    /// Its sequence.
    pub seq: u64,
    /// Its subject.
    pub subject: String,
    /// True when its own TTL expired, false when the stream's max_age did.
    pub by_ttl: bool,
}

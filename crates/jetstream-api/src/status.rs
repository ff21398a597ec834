//! Status messages JetStream sends as header-only messages (`HMSG` with an empty payload), byte
//! for byte as nats-server writes them, plus the JetStream header names.
//!
//! Pull consumers answer a waiting request with `404 No Messages`, `408 Request Timeout`, the
//! `409` family, and `100 Idle Heartbeat`; push consumers send `100 Idle Heartbeat` and
//! `100 FlowControl Request`. Clients match on the status code and often on the description, so
//! the texts must not drift: build them only through this module.

use std::fmt::Write as _;

use crate::time_format::Nanos;

/// Header names on published and delivered messages.
pub mod headers {
    pub const MSG_ID: &str = "Nats-Msg-Id";
    pub const EXPECTED_STREAM: &str = "Nats-Expected-Stream";
    pub const EXPECTED_LAST_SEQUENCE: &str = "Nats-Expected-Last-Sequence";
    pub const EXPECTED_LAST_SUBJECT_SEQUENCE: &str = "Nats-Expected-Last-Subject-Sequence";
    pub const EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: &str =
        "Nats-Expected-Last-Subject-Sequence-Subject";
    pub const EXPECTED_LAST_MSG_ID: &str = "Nats-Expected-Last-Msg-Id";
    pub const STREAM_SOURCE: &str = "Nats-Stream-Source";
    pub const LAST_CONSUMER: &str = "Nats-Last-Consumer";
    pub const LAST_STREAM: &str = "Nats-Last-Stream";
    pub const CONSUMER_STALLED: &str = "Nats-Consumer-Stalled";
    pub const ROLLUP: &str = "Nats-Rollup";
    /// Values of [`ROLLUP`].
    pub const ROLLUP_SUBJECT: &str = "sub";
    pub const ROLLUP_ALL: &str = "all";
    pub const MSG_SIZE: &str = "Nats-Msg-Size";
    pub const RESPONSE_TYPE: &str = "Nats-Response-Type";
    pub const TTL: &str = "Nats-TTL";
    pub const MARKER_REASON: &str = "Nats-Marker-Reason";
    pub const INCREMENT: &str = "Nats-Incr";
    pub const COUNTER_SOURCES: &str = "Nats-Counter-Sources";
    pub const BATCH_ID: &str = "Nats-Batch-Id";
    pub const BATCH_SEQUENCE: &str = "Nats-Batch-Sequence";
    pub const BATCH_COMMIT: &str = "Nats-Batch-Commit";
    pub const SCHEDULE: &str = "Nats-Schedule";
    pub const PENDING_MESSAGES: &str = "Nats-Pending-Messages";
    pub const PENDING_BYTES: &str = "Nats-Pending-Bytes";
    pub const PIN_ID: &str = "Nats-Pin-Id";
    pub const REQUIRED_API_LEVEL: &str = "Nats-Required-Api-Level";
    pub const STREAM_IDENTITY: &str = "Nats-Stream-Identity";
    /// Direct get replies.
    pub const STREAM: &str = "Nats-Stream";
    pub const SEQUENCE: &str = "Nats-Sequence";
    pub const TIME_STAMP: &str = "Nats-Time-Stamp";
    pub const SUBJECT: &str = "Nats-Subject";
    pub const LAST_SEQUENCE: &str = "Nats-Last-Sequence";
    pub const NUM_PENDING: &str = "Nats-Num-Pending";
    pub const UP_TO_SEQUENCE: &str = "Nats-UpTo-Sequence";
    /// KV operations.
    pub const KV_OPERATION: &str = "KV-Operation";
}

/// `NATS/1.0 404 No Messages` (no_wait pull with nothing pending).
pub const NO_MESSAGES: &[u8] = b"NATS/1.0 404 No Messages\r\n\r\n";
/// `NATS/1.0 100 FlowControl Request` (push consumers; sent with a `$JS.FC.` reply).
pub const FLOW_CONTROL_REQUEST: &[u8] = b"NATS/1.0 100 FlowControl Request\r\n\r\n";
pub const CONSUMER_DELETED: &[u8] = b"NATS/1.0 409 Consumer Deleted\r\n\r\n";
pub const CONSUMER_IS_PUSH_BASED: &[u8] = b"NATS/1.0 409 Consumer is push based\r\n\r\n";
pub const LEADERSHIP_CHANGE: &[u8] = b"NATS/1.0 409 Leadership Change\r\n\r\n";
pub const EXCEEDED_MAX_WAITING: &[u8] = b"NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n";
pub const REQUESTS_PENDING: &[u8] = b"NATS/1.0 408 Requests Pending\r\n\r\n";
pub const REQUIRED_API_LEVEL: &[u8] = b"NATS/1.0 412 Required Api Level\r\n\r\n";
pub const PIN_ID_MISMATCH: &[u8] = b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n";
/// Direct get answers.
pub const MESSAGE_NOT_FOUND: &[u8] = b"NATS/1.0 404 Message Not Found\r\n\r\n";
pub const NO_RESULTS: &[u8] = b"NATS/1.0 404 No Results\r\n\r\n";
pub const EMPTY_REQUEST: &[u8] = b"NATS/1.0 408 Empty Request\r\n\r\n";
pub const MALFORMED_REQUEST: &[u8] = b"NATS/1.0 408 Malformed Request\r\n\r\n";
pub const DIRECT_BAD_REQUEST: &[u8] = b"NATS/1.0 408 Bad Request\r\n\r\n";
pub const TOO_MANY_RESULTS: &[u8] = b"NATS/1.0 413 Too Many Results\r\n\r\n";
pub const TOO_MANY_REQUESTS: &[u8] = b"NATS/1.0 429 Too Many Requests\r\n\r\n";

/// A status line with no further headers: `NATS/1.0 <code> <description>\r\n\r\n`.
pub fn status(code: u16, description: &str) -> Vec<u8> {
    format!("NATS/1.0 {code} {description}\r\n\r\n").into_bytes()
}

/// A status line followed by the two pull-request counters nats-server reports (what was left
/// of the request's batch and max_bytes).
fn status_with_pending(code: u16, description: &str, messages: i64, bytes: i64) -> Vec<u8> {
    let mut out = String::with_capacity(96);
    let _ = write!(
        out,
        "NATS/1.0 {code} {description}\r\n{}: {messages}\r\n{}: {bytes}\r\n\r\n",
        headers::PENDING_MESSAGES,
        headers::PENDING_BYTES
    );
    out.into_bytes()
}

/// `408 Request Timeout` with the unfilled remainder of the request.
pub fn request_timeout(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(408, "Request Timeout", pending_messages, pending_bytes)
}

/// `408 Interest Expired`: the requester went away.
pub fn interest_expired(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(408, "Interest Expired", pending_messages, pending_bytes)
}

/// `409 Batch Completed`: sent when a max_bytes-limited request is done.
pub fn batch_completed(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(409, "Batch Completed", pending_messages, pending_bytes)
}

/// `409 Message Size Exceeds MaxBytes`.
pub fn message_size_exceeds_max_bytes(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(
        409,
        "Message Size Exceeds MaxBytes",
        pending_messages,
        pending_bytes,
    )
}

/// `409 Server Shutdown`.
pub fn server_shutdown(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(409, "Server Shutdown", pending_messages, pending_bytes)
}

/// `423 Nats-Wrong-Pin-Id`.
pub fn wrong_pin_id(pending_messages: i64, pending_bytes: i64) -> Vec<u8> {
    status_with_pending(423, "Nats-Wrong-Pin-Id", pending_messages, pending_bytes)
}

/// `409 Exceeded MaxRequestBatch of <n>`.
pub fn exceeded_max_request_batch(limit: i64) -> Vec<u8> {
    status(409, &format!("Exceeded MaxRequestBatch of {limit}"))
}

/// `409 Exceeded MaxRequestExpires of <go duration>` (e.g. `10s`, `1m0s`).
pub fn exceeded_max_request_expires(limit: Nanos) -> Vec<u8> {
    status(
        409,
        &format!("Exceeded MaxRequestExpires of {}", limit.to_go_string()),
    )
}

/// `409 Exceeded MaxRequestMaxBytes of <n>`.
pub fn exceeded_max_request_max_bytes(limit: i64) -> Vec<u8> {
    status(409, &format!("Exceeded MaxRequestMaxBytes of {limit}"))
}

/// `400 Bad Request - <reason>` (e.g. the JSON error of a malformed pull request).
pub fn bad_request(reason: &str) -> Vec<u8> {
    status(400, &format!("Bad Request - {reason}"))
}

/// `100 Idle Heartbeat` with the last delivered consumer and stream sequences, and the pending
/// flow-control reply subject when the consumer is stalled on flow control.
pub fn idle_heartbeat(
    last_consumer_sequence: u64,
    last_stream_sequence: u64,
    stalled_flow_control_reply: Option<&str>,
) -> Vec<u8> {
    let mut out = String::with_capacity(128);
    let _ = write!(
        out,
        "NATS/1.0 100 Idle Heartbeat\r\n{}: {last_consumer_sequence}\r\n{}: {last_stream_sequence}\r\n",
        headers::LAST_CONSUMER,
        headers::LAST_STREAM
    );
    if let Some(reply) = stalled_flow_control_reply.filter(|reply| !reply.is_empty()) {
        let _ = write!(out, "{}: {reply}\r\n", headers::CONSUMER_STALLED);
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// `204 EOB` ending a batched direct get.
pub fn end_of_batch(num_pending: u64, last_sequence: u64, up_to_sequence: Option<u64>) -> Vec<u8> {
    let mut out = format!(
        "NATS/1.0 204 EOB\r\n{}: {num_pending}\r\n{}: {last_sequence}\r\n",
        headers::NUM_PENDING,
        headers::LAST_SEQUENCE
    );
    if let Some(up_to) = up_to_sequence {
        let _ = write!(out, "{}: {up_to}\r\n", headers::UP_TO_SEQUENCE);
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The header block of a `DIRECT.GET` reply: the stored message's own headers (if any) followed
/// by `Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, `Nats-Time-Stamp` (UTC, RFC 3339 with
/// nanoseconds) and, for batched gets, `Nats-Num-Pending` and `Nats-Last-Sequence`: nats-server's
/// order and bytes.
pub fn direct_get_headers(
    stored_headers: &[u8],
    stream: &str,
    subject: &str,
    sequence: u64,
    time: crate::time_format::Timestamp,
    batch: Option<DirectGetBatch>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(stored_headers.len() + 160);
    if stored_headers.len() > 2 && stored_headers.ends_with(b"\r\n\r\n") {
        out.extend_from_slice(&stored_headers[..stored_headers.len() - 2]);
    } else {
        out.extend_from_slice(b"NATS/1.0\r\n");
    }
    let mut lines = format!(
        "{}: {stream}\r\n{}: {subject}\r\n{}: {sequence}\r\n{}: {}\r\n",
        headers::STREAM,
        headers::SUBJECT,
        headers::SEQUENCE,
        headers::TIME_STAMP,
        time.to_utc().to_rfc3339()
    );
    if let Some(batch) = batch {
        let _ = write!(
            lines,
            "{}: {}\r\n{}: {}\r\n",
            headers::NUM_PENDING,
            batch.num_pending,
            headers::LAST_SEQUENCE,
            batch.last_sequence
        );
    }
    out.extend_from_slice(lines.as_bytes());
    out.extend_from_slice(b"\r\n");
    out
}

/// The batch counters of a batched `DIRECT.GET` reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectGetBatch {
    /// Messages still to come after this one.
    pub num_pending: u64,
    /// Sequence of the previous message of this batch (0 for the first).
    pub last_sequence: u64,
}

/// A flow-control reply subject: `$JS.FC.<stream>.<consumer>.<4 random base-62 chars>`.
/// The caller supplies the randomness (this crate has no RNG).
pub fn flow_control_reply(stream: &str, consumer: &str, random: u64) -> String {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = format!("{}{stream}.{consumer}.", crate::ack::FLOW_CONTROL_PREFIX);
    let mut value = random;
    for _ in 0..4 {
        out.push(char::from(DIGITS[(value % 62) as usize]));
        value /= 62;
    }
    out
}

/// A parsed status line (`code` and `description`) of a header block, for tests and clients.
pub fn parse_status_line(header_block: &[u8]) -> Option<(u16, &str)> {
    let text = std::str::from_utf8(header_block).ok()?;
    let line = text.split("\r\n").next()?;
    let rest = line.strip_prefix("NATS/1.0 ")?;
    let (code, description) = rest.split_once(' ').unwrap_or((rest, ""));
    Some((code.parse().ok()?, description))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Byte strings captured from nats-server v2.15.1.
    #[test]
    fn matches_captured_statuses() {
        assert_eq!(NO_MESSAGES, b"NATS/1.0 404 No Messages\r\n\r\n");
        assert_eq!(
            request_timeout(2, 0),
            b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n"
        );
        assert_eq!(
            idle_heartbeat(3, 3, None),
            b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n"
        );
        assert_eq!(
            exceeded_max_request_batch(5),
            b"NATS/1.0 409 Exceeded MaxRequestBatch of 5\r\n\r\n"
        );
        assert_eq!(
            bad_request("Priority Group missing"),
            b"NATS/1.0 400 Bad Request - Priority Group missing\r\n\r\n"
        );
        assert_eq!(
            CONSUMER_IS_PUSH_BASED,
            b"NATS/1.0 409 Consumer is push based\r\n\r\n"
        );
        assert_eq!(
            bad_request("invalid character 'b' looking for beginning of object key string"),
            b"NATS/1.0 400 Bad Request - invalid character 'b' looking for beginning of object key string\r\n\r\n".to_vec()
        );
    }

    #[test]
    fn direct_get_headers_match_capture() {
        let time = crate::time_format::Timestamp::parse("2026-11-29T19:29:46.19257173Z").unwrap();
        assert_eq!(
            String::from_utf8(direct_get_headers(
                b"NATS/1.0\r\nFoo: bar\r\n\r\n",
                "DG",
                "dg.a",
                1,
                time,
                None
            ))
            .unwrap(),
            "NATS/1.0\r\nFoo: bar\r\nNats-Stream: DG\r\nNats-Subject: dg.a\r\nNats-Sequence: 1\r\nNats-Time-Stamp: 2026-11-29T19:29:46.19257173Z\r\n\r\n"
        );
        assert_eq!(
            String::from_utf8(direct_get_headers(
                b"",
                "DG",
                "dg.a",
                1,
                time,
                Some(DirectGetBatch {
                    num_pending: 1,
                    last_sequence: 0
                })
            ))
            .unwrap(),
            "NATS/1.0\r\nNats-Stream: DG\r\nNats-Subject: dg.a\r\nNats-Sequence: 1\r\nNats-Time-Stamp: 2026-11-29T19:29:46.19257173Z\r\nNats-Num-Pending: 1\r\nNats-Last-Sequence: 0\r\n\r\n"
        );
    }

    #[test]
    fn heartbeat_with_stall_and_other_builders() {
        assert_eq!(
            String::from_utf8(idle_heartbeat(1, 2, Some("$JS.FC.S.C.abcd"))).unwrap(),
            "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 1\r\nNats-Last-Stream: 2\r\nNats-Consumer-Stalled: $JS.FC.S.C.abcd\r\n\r\n"
        );
        assert_eq!(
            exceeded_max_request_expires(Nanos::from_secs(10)),
            b"NATS/1.0 409 Exceeded MaxRequestExpires of 10s\r\n\r\n"
        );
        assert_eq!(
            parse_status_line(b"NATS/1.0 409 Consumer Deleted\r\n\r\n"),
            Some((409, "Consumer Deleted"))
        );
        assert_eq!(
            parse_status_line(FLOW_CONTROL_REQUEST),
            Some((100, "FlowControl Request"))
        );
        let reply = flow_control_reply("S", "C", 12345);
        assert!(reply.starts_with("$JS.FC.S.C.") && reply.len() == "$JS.FC.S.C.".len() + 4);
    }
}

//! Server-to-client (and client-to-server, for tests and tools) frame encoding into a `BytesMut`.
//!
//! These append to `out` and never fail; callers own buffering and flushing.

use bytes::{BufMut, BytesMut};

use crate::info::ServerInfo;

pub const PING: &[u8] = b"PING\r\n";
pub const PONG: &[u8] = b"PONG\r\n";
pub const OK: &[u8] = b"+OK\r\n";
pub const CRLF: &[u8] = b"\r\n";

/// Appends `n` in decimal without allocating.
#[inline]
pub fn write_decimal(out: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&digits[start..]);
}

/// The exact number of bytes [`encode_msg`] appends, for reserving ahead.
pub fn msg_encoded_len(subject: &[u8], sid: &[u8], reply: Option<&[u8]>, payload: &[u8]) -> usize {
    4 + subject.len()
        + 1
        + sid.len()
        + reply.map_or(0, |reply| reply.len() + 1)
        + 1
        + decimal_len(payload.len() as u64)
        + 2
        + payload.len()
        + 2
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Appends the head of a MSG frame: `MSG <subject> <sid> [reply] <size>\r\n` (payload and its CRLF not included).
#[inline]
pub fn encode_msg_head(
    out: &mut BytesMut,
    subject: &[u8],
    sid: &[u8],
    reply: Option<&[u8]>,
    payload_len: usize,
) {
    out.put_slice(b"MSG ");
    out.put_slice(subject);
    out.put_u8(b' ');
    out.put_slice(sid);
    out.put_u8(b' ');
    if let Some(reply) = reply {
        out.put_slice(reply);
        out.put_u8(b' ');
    }
    write_decimal(out, payload_len as u64);
    out.put_slice(CRLF);
}

/// Appends a whole MSG frame.
pub fn encode_msg(
    out: &mut BytesMut,
    subject: &[u8],
    sid: &[u8],
    reply: Option<&[u8]>,
    payload: &[u8],
) {
    out.reserve(msg_encoded_len(subject, sid, reply, payload));
    encode_msg_head(out, subject, sid, reply, payload.len());
    out.put_slice(payload);
    out.put_slice(CRLF);
}

/// Appends the head of an HMSG frame: `HMSG <subject> <sid> [reply] <header_len> <total_len>\r\n`.
pub fn encode_hmsg_head(
    out: &mut BytesMut,
    subject: &[u8],
    sid: &[u8],
    reply: Option<&[u8]>,
    headers_len: usize,
    payload_len: usize,
) {
    out.put_slice(b"HMSG ");
    out.put_slice(subject);
    out.put_u8(b' ');
    out.put_slice(sid);
    out.put_u8(b' ');
    if let Some(reply) = reply {
        out.put_slice(reply);
        out.put_u8(b' ');
    }
    write_decimal(out, headers_len as u64);
    out.put_u8(b' ');
    write_decimal(out, (headers_len + payload_len) as u64);
    out.put_slice(CRLF);
}

/// Appends a whole HMSG frame; `headers` is the raw block ending in `\r\n\r\n`.
pub fn encode_hmsg(
    out: &mut BytesMut,
    subject: &[u8],
    sid: &[u8],
    reply: Option<&[u8]>,
    headers: &[u8],
    payload: &[u8],
) {
    out.reserve(
        subject.len()
            + sid.len()
            + reply.map_or(0, <[u8]>::len)
            + headers.len()
            + payload.len()
            + 48,
    );
    encode_hmsg_head(out, subject, sid, reply, headers.len(), payload.len());
    out.put_slice(headers);
    out.put_slice(payload);
    out.put_slice(CRLF);
}

/// Appends `-ERR '<text>'\r\n`.
pub fn encode_err(out: &mut BytesMut, text: &str) {
    out.reserve(text.len() + 9);
    out.put_slice(b"-ERR '");
    out.put_slice(text.as_bytes());
    out.put_slice(b"'\r\n");
}

/// Appends `INFO <json> \r\n` (nats-server puts a space before the CRLF).
pub fn encode_info(out: &mut BytesMut, info: &ServerInfo) {
    out.put_slice(b"INFO ");
    let json = serde_json::to_vec(info).unwrap_or_else(|_| b"{}".to_vec());
    out.put_slice(&json);
    out.put_slice(b" \r\n");
}

/// Appends a client `PUB` frame (tests, tools, benchmarks).
pub fn encode_pub(out: &mut BytesMut, subject: &[u8], reply: Option<&[u8]>, payload: &[u8]) {
    out.put_slice(b"PUB ");
    out.put_slice(subject);
    out.put_u8(b' ');
    if let Some(reply) = reply {
        out.put_slice(reply);
        out.put_u8(b' ');
    }
    write_decimal(out, payload.len() as u64);
    out.put_slice(CRLF);
    out.put_slice(payload);
    out.put_slice(CRLF);
}

/// Appends a client `HPUB` frame (tests, tools, benchmarks).
pub fn encode_hpub(
    out: &mut BytesMut,
    subject: &[u8],
    reply: Option<&[u8]>,
    headers: &[u8],
    payload: &[u8],
) {
    out.put_slice(b"HPUB ");
    out.put_slice(subject);
    out.put_u8(b' ');
    if let Some(reply) = reply {
        out.put_slice(reply);
        out.put_u8(b' ');
    }
    write_decimal(out, headers.len() as u64);
    out.put_u8(b' ');
    write_decimal(out, (headers.len() + payload.len()) as u64);
    out.put_slice(CRLF);
    out.put_slice(headers);
    out.put_slice(payload);
    out.put_slice(CRLF);
}

/// Appends a client `SUB` frame.
pub fn encode_sub(out: &mut BytesMut, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
    out.put_slice(b"SUB ");
    out.put_slice(subject);
    out.put_u8(b' ');
    if let Some(queue) = queue {
        out.put_slice(queue);
        out.put_u8(b' ');
    }
    out.put_slice(sid);
    out.put_slice(CRLF);
}

/// Appends a client `UNSUB` frame.
pub fn encode_unsub(out: &mut BytesMut, sid: &[u8], max: Option<u64>) {
    out.put_slice(b"UNSUB ");
    out.put_slice(sid);
    if let Some(max) = max {
        out.put_u8(b' ');
        write_decimal(out, max);
    }
    out.put_slice(CRLF);
}

/// Appends a client `CONNECT <json>\r\n` frame.
pub fn encode_connect(out: &mut BytesMut, options: &crate::connect::ConnectOptions) {
    out.put_slice(b"CONNECT ");
    let json = serde_json::to_vec(options).unwrap_or_else(|_| b"{}".to_vec());
    out.put_slice(&json);
    out.put_slice(CRLF);
}

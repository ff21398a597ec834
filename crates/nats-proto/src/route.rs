//! Server-to-server (route) operations: their incremental, zero-copy parser and encoders, and
//! the INFO/CONNECT bodies routes exchange.
//!
//! The route protocol of nats-server: `CONNECT`/`INFO` JSON, interest as `RS+`/`RS-` (and the
//! leafnode-origin `LS+`/`LS-`), messages as `RMSG`/`HMSG` (and `LMSG`) with an optional queue
//! list (`+ <reply> <q>...` or `| <q>...`), `PING`/`PONG`, `+OK`, `-ERR`. Every field is a slice of
//! the read buffer. This module frames bytes only; what an operation means is the server's.

use std::ops::Range;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::encode::{write_decimal, CRLF};
use crate::error::ProtocolError;
use crate::framing::{
    check_frame_end, find_control_line, frame_len, match_keyword, next_argument, parse_size,
    partial_line_len, AfterKeyword, Keyword, KeywordMatch,
};

/// One operation received on a route. Byte fields are slices of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteOp {
    /// The raw JSON of a route CONNECT.
    Connect(Bytes),
    /// The raw JSON of an INFO (the peer's own, or one it forwards about a new server).
    Info(Bytes),
    /// `RS+ <account> <subject> [<queue> [<weight>]]` (also `LS+ <origin> ...`).
    Subscribe {
        account: Bytes,
        subject: Bytes,
        queue: Option<Bytes>,
        /// Members of the queue group on the sending server (1 when not given).
        weight: u32,
    },
    /// `RS- <account> <subject> [<queue>]` (also `LS- <origin> ...`).
    Unsubscribe {
        account: Bytes,
        subject: Bytes,
        queue: Option<Bytes>,
    },
    /// `RMSG`/`HMSG` (and `LMSG`): a message for local subscribers only.
    Message(RoutedMessage),
    Ping,
    Pong,
    Ok,
    Err(Bytes),
}

/// A routed message. `queues`: the queue groups of the receiver that still need one member
/// picked; a message without queues goes to plain subscribers only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedMessage {
    pub account: Bytes,
    pub subject: Bytes,
    pub reply: Option<Bytes>,
    pub queues: Vec<Bytes>,
    pub headers: Option<Bytes>,
    pub payload: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RouteKeyword {
    Connect,
    Info,
    RsPlus,
    RsMinus,
    LsPlus,
    LsMinus,
    RMsg,
    HMsg,
    LMsg,
    Ping,
    Pong,
    Ok,
    Err,
}

const ROUTE_KEYWORDS: &[Keyword<RouteKeyword>] = &[
    Keyword {
        name: b"RMSG",
        kind: RouteKeyword::RMsg,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"HMSG",
        kind: RouteKeyword::HMsg,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"LMSG",
        kind: RouteKeyword::LMsg,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"RS+",
        kind: RouteKeyword::RsPlus,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"RS-",
        kind: RouteKeyword::RsMinus,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"LS+",
        kind: RouteKeyword::LsPlus,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"LS-",
        kind: RouteKeyword::LsMinus,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"PING",
        kind: RouteKeyword::Ping,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"PONG",
        kind: RouteKeyword::Pong,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"CONNECT",
        kind: RouteKeyword::Connect,
        after: AfterKeyword::OptionalSeparator,
    },
    Keyword {
        name: b"INFO",
        kind: RouteKeyword::Info,
        after: AfterKeyword::OptionalSeparator,
    },
    Keyword {
        name: b"+OK",
        kind: RouteKeyword::Ok,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"-ERR",
        kind: RouteKeyword::Err,
        after: AfterKeyword::Separator,
    },
];

/// A message head whose payload is awaited.
#[derive(Debug, Clone)]
struct PendingMessage {
    line_len: usize,
    account: Range<usize>,
    subject: Range<usize>,
    reply: Option<Range<usize>>,
    queues: Vec<Range<usize>>,
    headers_len: Option<usize>,
    total_len: usize,
}

impl PendingMessage {
    fn frame_len(&self) -> usize {
        frame_len(self.line_len, self.total_len)
    }
}

/// Incremental parser of route operations, used like [`crate::ClientParser`]: `parse` splits
/// one complete operation off the front of the buffer, or returns `Ok(None)` having consumed
/// nothing. After an error the connection must be closed.
#[derive(Debug, Clone)]
pub struct RouteParser {
    max_payload: usize,
    max_control_line: usize,
    scan_from: usize,
    pending: Option<PendingMessage>,
    arguments: Vec<Range<usize>>,
}

/// Most arguments a route control line may have (a message naming many queue groups).
const MAX_ROUTE_ARGUMENTS: usize = 1024;

impl RouteParser {
    pub fn new(max_payload: usize, max_control_line: usize) -> RouteParser {
        RouteParser {
            max_payload,
            max_control_line,
            scan_from: 0,
            pending: None,
            arguments: Vec::new(),
        }
    }

    /// Bytes the buffer must hold for the pending message to complete (0 when none).
    pub fn pending_frame_len(&self) -> usize {
        self.pending.as_ref().map_or(0, PendingMessage::frame_len)
    }

    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<RouteOp>, ProtocolError> {
        if self.pending.is_some() {
            return self.finish_message(buf);
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let (kind, keyword_len, after) = match match_keyword(buf, ROUTE_KEYWORDS)? {
            KeywordMatch::NeedMore => return Ok(None),
            KeywordMatch::Found {
                kind,
                keyword_len,
                after,
            } => (kind, keyword_len, after),
        };
        let Some(line) = find_control_line(buf, keyword_len, &mut self.scan_from) else {
            let length = partial_line_len(buf, keyword_len, after);
            // INFO and CONNECT carry JSON that may pass the client limit (long connect_urls).
            let limit = self.line_limit(kind);
            if length > limit {
                return Err(ProtocolError::MaxControlLineExceeded { length, limit });
            }
            return Ok(None);
        };
        let length = line.measured_len(keyword_len, after);
        let limit = self.line_limit(kind);
        if length > limit {
            return Err(ProtocolError::MaxControlLineExceeded { length, limit });
        }
        let simple = |buf: &mut BytesMut, op: RouteOp| {
            buf.advance(line.line_len);
            Ok(Some(op))
        };
        match kind {
            RouteKeyword::Ping => simple(buf, RouteOp::Ping),
            RouteKeyword::Pong => simple(buf, RouteOp::Pong),
            RouteKeyword::Ok => simple(buf, RouteOp::Ok),
            RouteKeyword::Err => {
                let frame = buf.split_to(line.line_len).freeze();
                Ok(Some(RouteOp::Err(frame.slice(line.arg))))
            }
            RouteKeyword::Connect => {
                let frame = buf.split_to(line.line_len).freeze();
                Ok(Some(RouteOp::Connect(frame.slice(line.arg))))
            }
            RouteKeyword::Info => {
                let frame = buf.split_to(line.line_len).freeze();
                Ok(Some(RouteOp::Info(frame.slice(line.arg))))
            }
            RouteKeyword::RsPlus | RouteKeyword::LsPlus => {
                self.parse_interest(buf, line.line_len, line.arg, kind, true)
            }
            RouteKeyword::RsMinus | RouteKeyword::LsMinus => {
                self.parse_interest(buf, line.line_len, line.arg, kind, false)
            }
            RouteKeyword::RMsg | RouteKeyword::HMsg | RouteKeyword::LMsg => {
                self.parse_message_head(buf, line.line_len, line.arg, kind)?;
                self.finish_message(buf)
            }
        }
    }

    fn line_limit(&self, kind: RouteKeyword) -> usize {
        match kind {
            RouteKeyword::Info | RouteKeyword::Connect => self.max_control_line.max(1 << 20),
            _ => self.max_control_line,
        }
    }

    fn split(&mut self, buf: &[u8], arg: Range<usize>) -> Result<(), ProtocolError> {
        self.arguments.clear();
        let mut position = arg.start;
        while let Some(argument) = next_argument(buf, &mut position, arg.end) {
            if self.arguments.len() == MAX_ROUTE_ARGUMENTS {
                return Err(ProtocolError::InvalidArguments {
                    operation: "RMSG",
                    reason: "too many arguments",
                });
            }
            self.arguments.push(argument);
        }
        Ok(())
    }

    fn parse_interest(
        &mut self,
        buf: &mut BytesMut,
        line_len: usize,
        arg: Range<usize>,
        kind: RouteKeyword,
        subscribe: bool,
    ) -> Result<Option<RouteOp>, ProtocolError> {
        self.split(buf, arg)?;
        let operation = match kind {
            RouteKeyword::RsPlus => "RS+",
            RouteKeyword::RsMinus => "RS-",
            RouteKeyword::LsPlus => "LS+",
            _ => "LS-",
        };
        let bad = |reason| ProtocolError::InvalidArguments { operation, reason };
        // LS+/LS- name the origin cluster first.
        let skip = usize::from(matches!(kind, RouteKeyword::LsPlus | RouteKeyword::LsMinus));
        let arguments = self.arguments.get(skip..).unwrap_or(&[]);
        let (account, subject, queue, weight) = match (subscribe, arguments) {
            (_, [account, subject]) => (account.clone(), subject.clone(), None, 1),
            (_, [account, subject, queue]) => {
                (account.clone(), subject.clone(), Some(queue.clone()), 1)
            }
            (true, [account, subject, queue, weight]) => {
                let weight = parse_size(&buf[weight.clone()])
                    .and_then(|weight| u32::try_from(weight).ok())
                    .ok_or(bad("bad queue weight"))?;
                (
                    account.clone(),
                    subject.clone(),
                    Some(queue.clone()),
                    weight,
                )
            }
            _ => return Err(bad("wrong number of arguments")),
        };
        let frame = buf.split_to(line_len).freeze();
        let account = frame.slice(account);
        let subject = frame.slice(subject);
        let queue = queue.map(|queue| frame.slice(queue));
        Ok(Some(if subscribe {
            RouteOp::Subscribe {
                account,
                subject,
                queue,
                weight,
            }
        } else {
            RouteOp::Unsubscribe {
                account,
                subject,
                queue,
            }
        }))
    }

    fn parse_message_head(
        &mut self,
        buf: &BytesMut,
        line_len: usize,
        arg: Range<usize>,
        kind: RouteKeyword,
    ) -> Result<(), ProtocolError> {
        self.split(buf, arg)?;
        let operation = match kind {
            RouteKeyword::RMsg => "RMSG",
            RouteKeyword::HMsg => "HMSG",
            _ => "LMSG",
        };
        let bad = |reason| ProtocolError::InvalidArguments { operation, reason };
        // LMSG names the origin cluster first and always carries a header size.
        let skip = usize::from(kind == RouteKeyword::LMsg);
        let with_headers = kind != RouteKeyword::RMsg;
        let arguments = self.arguments.get(skip..).unwrap_or(&[]);
        let sizes = if with_headers { 2 } else { 1 };
        if arguments.len() < 2 + sizes {
            return Err(bad("wrong number of arguments"));
        }
        let (middle, size_arguments) = arguments.split_at(arguments.len() - sizes);
        let account = middle[0].clone();
        let subject = middle[1].clone();
        let rest = &middle[2..];
        let (reply, queues) = match rest {
            [] => (None, Vec::new()),
            [reply] => (Some(reply.clone()), Vec::new()),
            [marker, tail @ ..] => match &buf[marker.clone()] {
                b"+" => match tail {
                    [reply, queues @ ..] if !queues.is_empty() => {
                        (Some(reply.clone()), queues.to_vec())
                    }
                    _ => return Err(bad("missing queue names")),
                },
                b"|" => (None, tail.to_vec()),
                _ => return Err(bad("wrong number of arguments")),
            },
        };
        let total_len = parse_size(&buf[size_arguments[sizes - 1].clone()])
            .ok_or(bad("bad or missing size"))?;
        let headers_len = if with_headers {
            let headers_len =
                parse_size(&buf[size_arguments[0].clone()]).ok_or(bad("bad or missing size"))?;
            if headers_len > total_len {
                return Err(bad("header size larger than total size"));
            }
            Some(headers_len)
        } else {
            None
        };
        if total_len > self.max_payload {
            return Err(ProtocolError::MaxPayloadViolation {
                size: total_len,
                limit: self.max_payload,
            });
        }
        self.pending = Some(PendingMessage {
            line_len,
            account,
            subject,
            reply,
            queues,
            headers_len,
            total_len,
        });
        Ok(())
    }

    fn finish_message(&mut self, buf: &mut BytesMut) -> Result<Option<RouteOp>, ProtocolError> {
        let Some(pending) = self.pending.as_ref() else {
            return Ok(None);
        };
        if !check_frame_end(buf, pending.line_len, pending.total_len)? {
            return Ok(None);
        }
        let Some(pending) = self.pending.take() else {
            return Ok(None);
        };
        let frame = buf.split_to(pending.frame_len()).freeze();
        let body_start = pending.line_len;
        let body_end = body_start + pending.total_len;
        let headers_len = pending.headers_len.unwrap_or(0);
        Ok(Some(RouteOp::Message(RoutedMessage {
            account: frame.slice(pending.account),
            subject: frame.slice(pending.subject),
            reply: pending.reply.map(|reply| frame.slice(reply)),
            queues: pending
                .queues
                .into_iter()
                .map(|queue| frame.slice(queue))
                .collect(),
            headers: (headers_len > 0).then(|| frame.slice(body_start..body_start + headers_len)),
            payload: frame.slice(body_start + headers_len..body_end),
        })))
    }
}

/// Appends `RS+ <account> <subject>[ <queue> <weight>]\r\n`.
pub fn encode_route_subscribe(
    out: &mut BytesMut,
    account: &[u8],
    subject: &[u8],
    queue: Option<(&[u8], u32)>,
) {
    out.put_slice(b"RS+ ");
    out.put_slice(account);
    out.put_u8(b' ');
    out.put_slice(subject);
    if let Some((queue, weight)) = queue {
        out.put_u8(b' ');
        out.put_slice(queue);
        out.put_u8(b' ');
        write_decimal(out, u64::from(weight));
    }
    out.put_slice(CRLF);
}

/// Appends `RS- <account> <subject>[ <queue>]\r\n`.
pub fn encode_route_unsubscribe(
    out: &mut BytesMut,
    account: &[u8],
    subject: &[u8],
    queue: Option<&[u8]>,
) {
    out.put_slice(b"RS- ");
    out.put_slice(account);
    out.put_u8(b' ');
    out.put_slice(subject);
    if let Some(queue) = queue {
        out.put_u8(b' ');
        out.put_slice(queue);
    }
    out.put_slice(CRLF);
}

/// Appends the head of an `RMSG` (or, with `headers_len`, `HMSG`) frame:
/// `RMSG <account> <subject> [<reply>] <size>`, or with queue names
/// `RMSG <account> <subject> + <reply> <q>... <size>` / `RMSG <account> <subject> | <q>... <size>`.
pub fn encode_routed_message_head(
    out: &mut BytesMut,
    account: &[u8],
    subject: &[u8],
    reply: Option<&[u8]>,
    queues: &[&[u8]],
    headers_len: Option<usize>,
    payload_len: usize,
) {
    out.put_slice(if headers_len.is_some() {
        b"HMSG "
    } else {
        b"RMSG "
    });
    out.put_slice(account);
    out.put_u8(b' ');
    out.put_slice(subject);
    out.put_u8(b' ');
    if queues.is_empty() {
        if let Some(reply) = reply {
            out.put_slice(reply);
            out.put_u8(b' ');
        }
    } else {
        match reply {
            Some(reply) => {
                out.put_slice(b"+ ");
                out.put_slice(reply);
                out.put_u8(b' ');
            }
            None => out.put_slice(b"| "),
        }
        for queue in queues {
            out.put_slice(queue);
            out.put_u8(b' ');
        }
    }
    match headers_len {
        Some(headers_len) => {
            write_decimal(out, headers_len as u64);
            out.put_u8(b' ');
            write_decimal(out, (headers_len + payload_len) as u64);
        }
        None => write_decimal(out, payload_len as u64),
    }
    out.put_slice(CRLF);
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Subject permissions a route announces (`import`/`export` of its INFO).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteSubjectRules {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// The INFO servers exchange on a route. Unknown fields are ignored; the pooling fields are
/// read (a peer announcing a pool) but never sent by us, so nats-server 2.10+ treats us as a
/// server without pooling and keeps one route for every account.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteInfo {
    pub server_id: String,
    #[serde(default)]
    pub server_name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub proto: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git_commit: String,
    #[serde(default)]
    pub go: String,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub port: u16,
    #[serde(default)]
    pub headers: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub auth_required: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls_required: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls_verify: bool,
    #[serde(default)]
    pub max_payload: i64,
    #[serde(default, skip_serializing_if = "is_false")]
    pub jetstream: bool,
    /// `nats-route://host:port/`: where other servers dial this one (gossip).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub cluster_dynamic: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ws_connect_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<RouteSubjectRules>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<RouteSubjectRules>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub ldm: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub route_pool_size: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub route_pool_idx: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub route_account: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gossip_mode: i64,
}

/// The CONNECT a soliciting server sends on a route. A `lang` field marks a client that
/// dialled the route port by mistake.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteConnect {
    #[serde(default)]
    pub echo: bool,
    #[serde(default)]
    pub verbose: bool,
    #[serde(default)]
    pub pedantic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    #[serde(default)]
    pub tls_required: bool,
    #[serde(default)]
    pub headers: bool,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub cluster: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub cluster_dynamic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<RouteOp>, ProtocolError> {
        let mut parser = RouteParser::new(1 << 20, 4096);
        let mut buf = BytesMut::from(input);
        let mut ops = Vec::new();
        while let Some(op) = parser.parse(&mut buf)? {
            ops.push(op);
        }
        Ok(ops)
    }

    fn message(op: &RouteOp) -> &RoutedMessage {
        match op {
            RouteOp::Message(message) => message,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn interest_forms() {
        let ops = parse_all(b"RS+ $G foo\r\nRS+ $G bar q1 3\r\nRS- $G bar q1\r\nLS+ C1 $G x\r\n")
            .unwrap();
        assert_eq!(
            ops[1],
            RouteOp::Subscribe {
                account: Bytes::from_static(b"$G"),
                subject: Bytes::from_static(b"bar"),
                queue: Some(Bytes::from_static(b"q1")),
                weight: 3
            }
        );
        assert!(matches!(&ops[2], RouteOp::Unsubscribe { queue: Some(q), .. } if q == "q1"));
        assert!(matches!(&ops[3], RouteOp::Subscribe { subject, .. } if subject == "x"));
        assert!(parse_all(b"RS+ $G\r\n").is_err());
        assert!(parse_all(b"RS+ $G foo q x\r\n").is_err());
    }

    #[test]
    fn message_forms_as_nats_server_sends_them() {
        let ops = parse_all(
            b"RMSG $G foo 2\r\nhi\r\nRMSG $G foo r 2\r\nhi\r\nRMSG $G bar | q1 q2 2\r\nhi\r\n\
              RMSG $G bar + rr q1 2\r\nhi\r\nHMSG $G foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n\
              HMSG $G bar + rr q1 q2 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
        )
        .unwrap();
        assert_eq!(ops.len(), 6);
        assert_eq!(message(&ops[1]).reply.as_deref(), Some(&b"r"[..]));
        assert_eq!(message(&ops[2]).queues, vec!["q1", "q2"]);
        assert_eq!(message(&ops[2]).reply, None);
        assert_eq!(message(&ops[3]).reply.as_deref(), Some(&b"rr"[..]));
        assert_eq!(message(&ops[3]).queues, vec!["q1"]);
        let headers = message(&ops[4]);
        assert_eq!(headers.headers.as_deref(), Some(&b"NATS/1.0\r\n\r\n"[..]));
        assert_eq!(&headers.payload[..], b"hi");
        assert_eq!(message(&ops[5]).queues, vec!["q1", "q2"]);
        assert!(parse_all(b"RMSG foo\r\n").is_err());
        assert!(parse_all(b"RMSG $G foo 2\r\nhiX\r\n").is_err());
    }

    #[test]
    fn split_input_parses_the_same() {
        let input = b"RMSG $G bar + rr q1 2\r\nhi\r\nPING\r\n";
        for cut in 1..input.len() {
            let mut parser = RouteParser::new(1 << 20, 4096);
            let mut buf = BytesMut::from(&input[..cut]);
            let mut ops = Vec::new();
            while let Some(op) = parser.parse(&mut buf).unwrap() {
                ops.push(op);
            }
            buf.extend_from_slice(&input[cut..]);
            while let Some(op) = parser.parse(&mut buf).unwrap() {
                ops.push(op);
            }
            assert_eq!(ops.len(), 2, "cut at {cut}");
        }
    }

    #[test]
    fn encoders_round_trip() {
        let mut out = BytesMut::new();
        encode_route_subscribe(&mut out, b"$G", b"bar", Some((b"q1", 3)));
        encode_route_unsubscribe(&mut out, b"$G", b"bar", Some(b"q1"));
        encode_routed_message_head(
            &mut out,
            b"$G",
            b"bar",
            Some(b"rr"),
            &[b"q1", b"q2"],
            None,
            2,
        );
        out.put_slice(b"hi\r\n");
        encode_routed_message_head(&mut out, b"$G", b"bar", None, &[b"q1"], Some(12), 2);
        out.put_slice(b"NATS/1.0\r\n\r\nhi\r\n");
        assert_eq!(
            &out[..],
            &b"RS+ $G bar q1 3\r\nRS- $G bar q1\r\nRMSG $G bar + rr q1 q2 2\r\nhi\r\n\
               HMSG $G bar | q1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"[..]
        );
        assert_eq!(parse_all(&out).unwrap().len(), 4);
    }
}

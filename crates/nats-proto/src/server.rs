//! Server-to-client operations and a simple incremental parser for them (the client's read side),
//! used by the test harness, raw-wire tests and tools.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::ProtocolError;
use crate::framing::{
    find_control_line, match_keyword, parse_size, split_arguments, AfterKeyword, Keyword,
    KeywordMatch, PendingPayload, MAX_ARGUMENTS,
};
use crate::info::ServerInfo;

/// One operation sent by a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerOp {
    /// The raw INFO JSON; see [`ServerOp::parse_info`].
    Info(Bytes),
    Msg {
        subject: Bytes,
        sid: Bytes,
        reply: Option<Bytes>,
        payload: Bytes,
    },
    HMsg {
        subject: Bytes,
        sid: Bytes,
        reply: Option<Bytes>,
        headers: Bytes,
        payload: Bytes,
    },
    Ping,
    Pong,
    Ok,
    /// The `-ERR` text with its surrounding single quotes removed.
    Err(Bytes),
}

impl ServerOp {
    /// Decodes the JSON of an [`ServerOp::Info`].
    pub fn parse_info(json: &[u8]) -> Result<ServerInfo, serde_json::Error> {
        serde_json::from_slice(json)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerKeyword {
    Info,
    Msg,
    HMsg,
    Ping,
    Pong,
    Ok,
    Err,
}

const SERVER_KEYWORDS: &[Keyword<ServerKeyword>] = &[
    Keyword {
        name: b"MSG",
        kind: ServerKeyword::Msg,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"HMSG",
        kind: ServerKeyword::HMsg,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"PING",
        kind: ServerKeyword::Ping,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"PONG",
        kind: ServerKeyword::Pong,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"INFO",
        kind: ServerKeyword::Info,
        after: AfterKeyword::OptionalSeparator,
    },
    Keyword {
        name: b"+OK",
        kind: ServerKeyword::Ok,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"-ERR",
        kind: ServerKeyword::Err,
        after: AfterKeyword::Separator,
    },
];

/// Incremental parser of server operations, with the same contract as
/// [`crate::ClientParser::parse`]. It enforces no size limits.
#[derive(Debug, Clone, Default)]
pub struct ServerParser {
    scan_from: usize,
    pending: Option<PendingPayload>,
}

impl ServerParser {
    pub fn new() -> Self {
        ServerParser::default()
    }

    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<ServerOp>, ProtocolError> {
        if self.pending.is_none() {
            if buf.is_empty() {
                return Ok(None);
            }
            let keyword_len = match match_keyword(buf, SERVER_KEYWORDS)? {
                KeywordMatch::NeedMore => return Ok(None),
                KeywordMatch::Found {
                    kind, keyword_len, ..
                } => (kind, keyword_len),
            };
            let (kind, keyword_len) = keyword_len;
            let Some(line) = find_control_line(buf, keyword_len, &mut self.scan_from) else {
                return Ok(None);
            };
            match kind {
                ServerKeyword::Ping => {
                    buf.advance(line.line_len);
                    return Ok(Some(ServerOp::Ping));
                }
                ServerKeyword::Pong => {
                    buf.advance(line.line_len);
                    return Ok(Some(ServerOp::Pong));
                }
                ServerKeyword::Ok => {
                    buf.advance(line.line_len);
                    return Ok(Some(ServerOp::Ok));
                }
                ServerKeyword::Info => {
                    let frame = buf.split_to(line.line_len).freeze();
                    let json = trim_trailing_blanks(&frame[line.arg.clone()]);
                    return Ok(Some(ServerOp::Info(
                        frame.slice(line.arg.start..line.arg.start + json.len()),
                    )));
                }
                ServerKeyword::Err => {
                    let frame = buf.split_to(line.line_len).freeze();
                    let mut text = line.arg.clone();
                    if text.len() >= 2 && frame[text.start] == b'\'' && frame[text.end - 1] == b'\''
                    {
                        text = text.start + 1..text.end - 1;
                    }
                    return Ok(Some(ServerOp::Err(frame.slice(text))));
                }
                ServerKeyword::Msg | ServerKeyword::HMsg => {
                    let mut args: [std::ops::Range<usize>; MAX_ARGUMENTS] = Default::default();
                    let count = split_arguments(buf, line.arg.clone(), &mut args).ok_or(
                        ProtocolError::MalformedServerOperation("too many arguments"),
                    )?;
                    let with_headers = kind == ServerKeyword::HMsg;
                    let sizes = if with_headers { 2 } else { 1 };
                    let reply = match count.checked_sub(sizes) {
                        Some(2) => None,
                        Some(3) => Some(args[2].clone()),
                        _ => {
                            return Err(ProtocolError::MalformedServerOperation(
                                "wrong number of arguments",
                            ))
                        }
                    };
                    let bad_size = ProtocolError::MalformedServerOperation("bad size");
                    let total_len =
                        parse_size(&buf[args[count - 1].clone()]).ok_or(bad_size.clone())?;
                    let headers_len = if with_headers {
                        let headers_len =
                            parse_size(&buf[args[count - 2].clone()]).ok_or(bad_size.clone())?;
                        if headers_len > total_len {
                            return Err(bad_size);
                        }
                        Some(headers_len)
                    } else {
                        None
                    };
                    self.pending = Some(PendingPayload {
                        line_len: line.line_len,
                        subject: args[0].clone(),
                        sid: Some(args[1].clone()),
                        reply,
                        headers_len,
                        total_len,
                    });
                }
            }
        }
        let Some(pending) = self.pending.as_ref() else {
            return Ok(None);
        };
        if !pending.check_end(buf)? {
            return Ok(None);
        }
        let frame = buf.split_to(pending.frame_len()).freeze();
        let body_start = pending.line_len;
        let body_end = body_start + pending.total_len;
        let subject = frame.slice(pending.subject.clone());
        let sid = pending
            .sid
            .clone()
            .map(|sid| frame.slice(sid))
            .unwrap_or_default();
        let reply = pending.reply.clone().map(|reply| frame.slice(reply));
        let op = match pending.headers_len {
            None => ServerOp::Msg {
                subject,
                sid,
                reply,
                payload: frame.slice(body_start..body_end),
            },
            Some(headers_len) => ServerOp::HMsg {
                subject,
                sid,
                reply,
                headers: frame.slice(body_start..body_start + headers_len),
                payload: frame.slice(body_start + headers_len..body_end),
            },
        };
        self.pending = None;
        Ok(Some(op))
    }
}

fn trim_trailing_blanks(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    &bytes[..end]
}

//! Client-to-server operations and their incremental, zero-copy parser (the server's read side).

use std::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

use crate::connect::ConnectOptions;
use crate::error::ProtocolError;
use crate::framing::{
    find_control_line, match_keyword, parse_size, partial_line_len, split_arguments, AfterKeyword,
    Keyword, KeywordMatch, PendingPayload, MAX_ARGUMENTS,
};

/// nats-server's default max_payload (1 MB).
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;
/// nats-server's default max_control_line (4 KB).
pub const DEFAULT_MAX_CONTROL_LINE: usize = 4096;

/// One operation sent by a client. Byte fields are slices of the read buffer (no copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOp {
    Connect(ConnectOptions),
    Pub {
        subject: Bytes,
        reply: Option<Bytes>,
        payload: Bytes,
    },
    HPub {
        subject: Bytes,
        reply: Option<Bytes>,
        /// The raw header block, normally `NATS/1.0...\r\n\r\n`; never empty (an HPUB with a
        /// zero header size is returned as [`ClientOp::Pub`]). Not validated, as nats-server
        /// forwards whatever the client sent.
        headers: Bytes,
        /// The payload after the headers.
        payload: Bytes,
    },
    Sub {
        subject: Bytes,
        queue: Option<Bytes>,
        sid: Bytes,
    },
    Unsub {
        sid: Bytes,
        /// `Some(n)` with n > 0 only: nats-server treats a missing, zero or unparsable max as
        /// "unsubscribe now".
        max: Option<u64>,
    },
    Ping,
    Pong,
    /// `+OK` from a client: nats-server ignores it.
    Ok,
    /// `-ERR` from a client: nats-server closes the connection (without replying).
    Err(Bytes),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientKeyword {
    Connect,
    Pub,
    HPub,
    Sub,
    Unsub,
    Ping,
    Pong,
    Info,
    Ok,
    Err,
}

const CLIENT_KEYWORDS: &[Keyword<ClientKeyword>] = &[
    Keyword {
        name: b"PUB",
        kind: ClientKeyword::Pub,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"HPUB",
        kind: ClientKeyword::HPub,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"SUB",
        kind: ClientKeyword::Sub,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"UNSUB",
        kind: ClientKeyword::Unsub,
        after: AfterKeyword::Separator,
    },
    Keyword {
        name: b"PING",
        kind: ClientKeyword::Ping,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"PONG",
        kind: ClientKeyword::Pong,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"CONNECT",
        kind: ClientKeyword::Connect,
        after: AfterKeyword::OptionalSeparator,
    },
    Keyword {
        name: b"INFO",
        kind: ClientKeyword::Info,
        after: AfterKeyword::OptionalSeparator,
    },
    Keyword {
        name: b"+OK",
        kind: ClientKeyword::Ok,
        after: AfterKeyword::IgnoredRest,
    },
    Keyword {
        name: b"-ERR",
        kind: ClientKeyword::Err,
        after: AfterKeyword::Separator,
    },
];

/// Incremental parser of client operations.
///
/// Feed it the connection's read buffer: [`ClientParser::parse`] splits one complete operation
/// off the front and returns it, or returns `Ok(None)` having consumed nothing when the next
/// operation is incomplete. Between calls the caller may only append to the buffer. The parser
/// remembers how far it scanned a partial control line and the parsed head of a PUB whose payload
/// is still arriving, so a large payload is never rescanned.
///
/// After an error the connection must be closed: the stream can no longer be framed.
#[derive(Debug, Clone)]
pub struct ClientParser {
    max_payload: usize,
    max_control_line: usize,
    headers_supported: bool,
    scan_from: usize,
    pending: Option<PendingPayload>,
}

impl Default for ClientParser {
    fn default() -> Self {
        ClientParser::new(DEFAULT_MAX_PAYLOAD, DEFAULT_MAX_CONTROL_LINE)
    }
}

impl ClientParser {
    pub fn new(max_payload: usize, max_control_line: usize) -> Self {
        ClientParser {
            max_payload,
            max_control_line,
            headers_supported: true,
            scan_from: 0,
            pending: None,
        }
    }

    pub fn set_max_payload(&mut self, max_payload: usize) {
        self.max_payload = max_payload;
    }

    pub fn set_max_control_line(&mut self, max_control_line: usize) {
        self.max_control_line = max_control_line;
    }

    /// When false, HPUB fails with [`ProtocolError::HeadersNotSupported`] (nats-server closes a
    /// connection that sends HPUB without `"headers":true` in CONNECT). Default true: the server
    /// may instead check this itself on [`ClientOp::HPub`].
    pub fn set_headers_supported(&mut self, headers_supported: bool) {
        self.headers_supported = headers_supported;
    }

    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    pub fn max_control_line(&self) -> usize {
        self.max_control_line
    }

    /// True while a PUB/HPUB head has been parsed and its payload is awaited.
    pub fn is_awaiting_payload(&self) -> bool {
        self.pending.is_some()
    }

    /// Bytes the buffer must hold for the pending frame to complete (0 when not awaiting a
    /// payload); a reader can use it to reserve capacity once.
    pub fn pending_frame_len(&self) -> usize {
        self.pending.as_ref().map_or(0, PendingPayload::frame_len)
    }

    /// Parses the next operation from the front of `buf`. See the type documentation.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<ClientOp>, ProtocolError> {
        loop {
            if self.pending.is_some() {
                return self.finish_payload(buf);
            }
            if buf.is_empty() {
                return Ok(None);
            }
            let (kind, keyword_len, after) = match match_keyword(buf, CLIENT_KEYWORDS)? {
                KeywordMatch::NeedMore => return Ok(None),
                KeywordMatch::Found {
                    kind,
                    keyword_len,
                    after,
                } => (kind, keyword_len, after),
            };
            let Some(line) = find_control_line(buf, keyword_len, &mut self.scan_from) else {
                self.check_partial_line(buf, keyword_len, after)?;
                return Ok(None);
            };
            let length = line.measured_len(keyword_len, after);
            if length > self.max_control_line {
                return Err(ProtocolError::MaxControlLineExceeded {
                    length,
                    limit: self.max_control_line,
                });
            }
            match kind {
                ClientKeyword::Ping => {
                    buf.advance(line.line_len);
                    return Ok(Some(ClientOp::Ping));
                }
                ClientKeyword::Pong => {
                    buf.advance(line.line_len);
                    return Ok(Some(ClientOp::Pong));
                }
                ClientKeyword::Ok => {
                    buf.advance(line.line_len);
                    return Ok(Some(ClientOp::Ok));
                }
                ClientKeyword::Info => {
                    // nats-server accepts and ignores INFO from a client.
                    buf.advance(line.line_len);
                    continue;
                }
                ClientKeyword::Err => {
                    let frame = buf.split_to(line.line_len).freeze();
                    return Ok(Some(ClientOp::Err(frame.slice(line.arg))));
                }
                ClientKeyword::Connect => {
                    let options = ConnectOptions::from_json(&buf[line.arg.clone()])
                        .map_err(|error| ProtocolError::InvalidConnect(error.to_string()))?;
                    buf.advance(line.line_len);
                    return Ok(Some(ClientOp::Connect(options)));
                }
                ClientKeyword::Sub => {
                    return self.parse_sub(buf, line.line_len, line.arg).map(Some)
                }
                ClientKeyword::Unsub => {
                    return self.parse_unsub(buf, line.line_len, line.arg).map(Some)
                }
                ClientKeyword::Pub => self.parse_pub_head(buf, line.line_len, line.arg)?,
                ClientKeyword::HPub => self.parse_hpub_head(buf, line.line_len, line.arg)?,
            }
        }
    }

    /// Bounds memory on a control line whose end has not arrived, as nats-server does.
    fn check_partial_line(
        &self,
        buf: &[u8],
        keyword_len: usize,
        after: AfterKeyword,
    ) -> Result<(), ProtocolError> {
        let length = partial_line_len(buf, keyword_len, after);
        if length > self.max_control_line {
            return Err(ProtocolError::MaxControlLineExceeded {
                length,
                limit: self.max_control_line,
            });
        }
        Ok(())
    }

    fn parse_sub(
        &mut self,
        buf: &mut BytesMut,
        line_len: usize,
        arg: Range<usize>,
    ) -> Result<ClientOp, ProtocolError> {
        let mut args: [Range<usize>; MAX_ARGUMENTS] = Default::default();
        let count = split_arguments(buf, arg, &mut args).unwrap_or(usize::MAX);
        let (subject, queue, sid) = match count {
            2 => (args[0].clone(), None, args[1].clone()),
            3 => (args[0].clone(), Some(args[1].clone()), args[2].clone()),
            _ => {
                return Err(ProtocolError::InvalidArguments {
                    operation: "SUB",
                    reason: "wrong number of arguments",
                })
            }
        };
        let frame = buf.split_to(line_len).freeze();
        Ok(ClientOp::Sub {
            subject: frame.slice(subject),
            queue: queue.map(|queue| frame.slice(queue)),
            sid: frame.slice(sid),
        })
    }

    fn parse_unsub(
        &mut self,
        buf: &mut BytesMut,
        line_len: usize,
        arg: Range<usize>,
    ) -> Result<ClientOp, ProtocolError> {
        let mut args: [Range<usize>; MAX_ARGUMENTS] = Default::default();
        let count = split_arguments(buf, arg, &mut args).unwrap_or(usize::MAX);
        let max = match count {
            1 => None,
            2 => parse_size(&buf[args[1].clone()])
                .filter(|&max| max > 0)
                .map(|max| max as u64),
            _ => {
                return Err(ProtocolError::InvalidArguments {
                    operation: "UNSUB",
                    reason: "wrong number of arguments",
                })
            }
        };
        let frame = buf.split_to(line_len).freeze();
        Ok(ClientOp::Unsub {
            sid: frame.slice(args[0].clone()),
            max,
        })
    }

    fn parse_pub_head(
        &mut self,
        buf: &BytesMut,
        line_len: usize,
        arg: Range<usize>,
    ) -> Result<(), ProtocolError> {
        let mut args: [Range<usize>; MAX_ARGUMENTS] = Default::default();
        let count = split_arguments(buf, arg, &mut args).unwrap_or(usize::MAX);
        let (subject, reply, size) = match count {
            2 => (args[0].clone(), None, args[1].clone()),
            3 => (args[0].clone(), Some(args[1].clone()), args[2].clone()),
            _ => {
                return Err(ProtocolError::InvalidArguments {
                    operation: "PUB",
                    reason: "wrong number of arguments",
                })
            }
        };
        let total_len = parse_size(&buf[size]).ok_or(ProtocolError::InvalidArguments {
            operation: "PUB",
            reason: "bad or missing size",
        })?;
        if total_len > self.max_payload {
            return Err(ProtocolError::MaxPayloadViolation {
                size: total_len,
                limit: self.max_payload,
            });
        }
        self.pending = Some(PendingPayload {
            line_len,
            subject,
            sid: None,
            reply,
            headers_len: None,
            total_len,
        });
        Ok(())
    }

    fn parse_hpub_head(
        &mut self,
        buf: &BytesMut,
        line_len: usize,
        arg: Range<usize>,
    ) -> Result<(), ProtocolError> {
        if !self.headers_supported {
            return Err(ProtocolError::HeadersNotSupported);
        }
        let mut args: [Range<usize>; MAX_ARGUMENTS] = Default::default();
        let count = split_arguments(buf, arg, &mut args).unwrap_or(usize::MAX);
        let (subject, reply, headers_size, total_size) = match count {
            3 => (args[0].clone(), None, args[1].clone(), args[2].clone()),
            4 => (
                args[0].clone(),
                Some(args[1].clone()),
                args[2].clone(),
                args[3].clone(),
            ),
            _ => {
                return Err(ProtocolError::InvalidArguments {
                    operation: "HPUB",
                    reason: "wrong number of arguments",
                })
            }
        };
        let bad_size = ProtocolError::InvalidArguments {
            operation: "HPUB",
            reason: "bad or missing size",
        };
        let headers_len = parse_size(&buf[headers_size]).ok_or(bad_size.clone())?;
        let total_len = parse_size(&buf[total_size]).ok_or(bad_size)?;
        if headers_len > total_len {
            return Err(ProtocolError::InvalidArguments {
                operation: "HPUB",
                reason: "header size larger than total size",
            });
        }
        if total_len > self.max_payload {
            return Err(ProtocolError::MaxPayloadViolation {
                size: total_len,
                limit: self.max_payload,
            });
        }
        self.pending = Some(PendingPayload {
            line_len,
            subject,
            sid: None,
            reply,
            headers_len: Some(headers_len),
            total_len,
        });
        Ok(())
    }

    fn finish_payload(&mut self, buf: &mut BytesMut) -> Result<Option<ClientOp>, ProtocolError> {
        let Some(pending) = self.pending.as_ref() else {
            return Ok(None);
        };
        if !pending.check_end(buf)? {
            return Ok(None);
        }
        // The frame itself becomes the payload (cut to it in place): one reference count
        // taken and dropped fewer per message than slicing the payload out of it.
        let mut frame = buf.split_to(pending.frame_len()).freeze();
        let body_start = pending.line_len;
        let body_end = body_start + pending.total_len;
        let subject = frame.slice(pending.subject.clone());
        let reply = pending.reply.clone().map(|reply| frame.slice(reply));
        frame.truncate(body_end);
        let op = match pending.headers_len {
            // nats-server delivers `HPUB subject 0 n` as a plain MSG: an empty header block is no
            // header block.
            None | Some(0) => {
                frame.advance(body_start);
                ClientOp::Pub {
                    subject,
                    reply,
                    payload: frame,
                }
            }
            Some(headers_len) => {
                let headers = frame.slice(body_start..body_start + headers_len);
                frame.advance(body_start + headers_len);
                ClientOp::HPub {
                    subject,
                    reply,
                    headers,
                    payload: frame,
                }
            }
        };
        self.pending = None;
        Ok(Some(op))
    }
}

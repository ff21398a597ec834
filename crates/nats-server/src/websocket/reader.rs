//! The read side of a WebSocket connection as a byte stream: [`FrameReader`] reads frames from
//! the socket, checks them as nats-server does (mask bit, RSV bits, opcodes, continuation
//! order, control-frame limits), unmasks data payloads into the caller's buffer (inflating
//! compressed messages first) and answers control frames through the [`Control`] queue the
//! writer sends from: a PING gets a PONG, a CLOSE gets its echo and ends the stream. A frame
//! that breaks the rules queues a CLOSE with status 1002 and the reason, and fails the read.
//! The client reader task reads it like a TCP socket.

use super::compression::Inflater;
use super::frame::{self, MAX_CONTROL_PAYLOAD};
use super::Control;
use crate::client::ClientShared;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// The first raw buffer of a connection; it doubles while reads fill it, up to [`MAX_RAW`].
const FIRST_RAW: usize = 4096;
const MAX_RAW: usize = 64 * 1024;

/// The data frame being read.
struct Payload {
    remaining: u64,
    key: [u8; 4],
    key_position: usize,
    masked: bool,
    final_frame: bool,
}

enum End {
    /// The peer's CLOSE (or EOF): the stream ends.
    Closed,
    /// A broken frame: the read fails with this text.
    Failed(String),
}

pub(crate) struct FrameReader<R> {
    inner: R,
    raw: Vec<u8>,
    start: usize,
    end: usize,
    payload: Option<Payload>,
    /// A text/binary message began and its final frame has not come yet.
    message_open: bool,
    /// The open message is compressed: its frames are gathered, then inflated.
    message_compressed: bool,
    compressed: Vec<u8>,
    inflated: Vec<u8>,
    inflated_position: usize,
    inflater: Option<Inflater>,
    /// A compressed message may not pass this (nats-server's `wsMaxMessageSize`).
    max_compressed: usize,
    /// Nor inflate to more than this (max_payload).
    max_inflated: usize,
    /// Clients must mask their frames, unless they asked not to (`Nats-No-Masking`).
    mask_required: bool,
    control: Arc<Control>,
    client: Arc<ClientShared>,
    ended: Option<End>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(
        inner: R,
        control: Arc<Control>,
        client: Arc<ClientShared>,
        compression: bool,
        max_payload: usize,
    ) -> Self {
        FrameReader {
            inner,
            raw: vec![0; FIRST_RAW],
            start: 0,
            end: 0,
            payload: None,
            message_open: false,
            message_compressed: false,
            compressed: Vec::new(),
            inflated: Vec::new(),
            inflated_position: 0,
            inflater: compression.then(Inflater::new),
            max_compressed: max_payload.saturating_mul(8).min(64 * 1024 * 1024),
            max_inflated: max_payload,
            mask_required: true,
            control,
            client,
            ended: None,
        }
    }

    /// The client asked to send unmasked frames (`Nats-No-Masking: true`).
    pub(crate) fn accept_unmasked(&mut self) {
        self.mask_required = false;
    }

    /// Queue a CLOSE with a protocol-error status and fail the stream.
    fn protocol_error(&mut self, text: impl Into<String>) -> io::Error {
        let text = text.into();
        self.control
            .queue_close(frame::STATUS_PROTOCOL_ERROR, &text);
        self.client.wake_writer();
        self.ended = Some(End::Failed(text.clone()));
        io::Error::new(io::ErrorKind::InvalidData, text)
    }

    /// Decode what the raw buffer holds into `output`, until it is full or the raw bytes run
    /// out mid-frame.
    fn decode(&mut self, output: &mut ReadBuf<'_>) -> io::Result<()> {
        loop {
            if self.inflated_position < self.inflated.len() || self.ended.is_some() {
                return Ok(());
            }
            let Some(payload) = self.payload.as_mut() else {
                if !self.decode_header()? {
                    return Ok(());
                }
                continue;
            };
            let available = self.end - self.start;
            if available == 0 && payload.remaining > 0 {
                return Ok(());
            }
            let room = if self.message_compressed {
                usize::MAX
            } else {
                output.remaining()
            };
            if room == 0 {
                return Ok(());
            }
            let take = usize::try_from(payload.remaining)
                .unwrap_or(usize::MAX)
                .min(available)
                .min(room);
            let bytes = &mut self.raw[self.start..self.start + take];
            if payload.masked {
                payload.key_position = frame::unmask(bytes, payload.key, payload.key_position);
            }
            self.start += take;
            payload.remaining -= take as u64;
            let finished = payload.remaining == 0;
            let final_frame = payload.final_frame;
            if self.message_compressed {
                if self.compressed.len() + take > self.max_compressed {
                    return Err(self.too_big());
                }
                self.compressed
                    .extend_from_slice(&self.raw[self.start - take..self.start]);
            } else {
                output.put_slice(&self.raw[self.start - take..self.start]);
            }
            if finished {
                self.payload = None;
                if final_frame {
                    self.message_open = false;
                    if self.message_compressed {
                        self.message_compressed = false;
                        self.inflate()?;
                    }
                }
            }
        }
    }

    fn too_big(&mut self) -> io::Error {
        self.control.queue_close(
            frame::STATUS_MESSAGE_TOO_BIG,
            "Maximum Message Payload Exceeded",
        );
        self.client.wake_writer();
        self.ended = Some(End::Failed("maximum payload exceeded".into()));
        io::Error::new(io::ErrorKind::InvalidData, "maximum payload exceeded")
    }

    fn inflate(&mut self) -> io::Result<()> {
        let Some(inflater) = self.inflater.as_mut() else {
            return Ok(());
        };
        self.inflated.clear();
        self.inflated_position = 0;
        let result = inflater.inflate(&self.compressed, &mut self.inflated, self.max_inflated);
        self.compressed.clear();
        match result {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.too_big()),
            Err(error) => Err(self.protocol_error(error.to_string())),
        }
    }

    /// Read one frame header (and a whole control frame) from the raw buffer; false when it
    /// does not hold all of it yet.
    fn decode_header(&mut self) -> io::Result<bool> {
        let bytes = &self.raw[self.start..self.end];
        if bytes.len() < 2 {
            return Ok(false);
        }
        let first = bytes[0];
        let second = bytes[1];
        let opcode = first & 0x0F;
        let final_frame = first & frame::FINAL_BIT != 0;
        let compressed = first & frame::RSV1_BIT != 0;
        if first & frame::RSV2_AND_3_BITS != 0 {
            return Err(self.protocol_error("RSV2 and RSV3 must be clear"));
        }
        if compressed && self.inflater.is_none() {
            return Err(self.protocol_error(
                "compressed frame received without negotiated permessage-deflate",
            ));
        }
        let masked = second & frame::MASK_BIT != 0;
        if self.mask_required && !masked {
            return Err(self.protocol_error("mask bit missing"));
        }
        let short_length = u64::from(second & 0x7F);
        let control = opcode >= frame::OPCODE_CLOSE;
        match opcode {
            frame::OPCODE_CLOSE | frame::OPCODE_PING | frame::OPCODE_PONG => {
                if short_length > MAX_CONTROL_PAYLOAD as u64 {
                    return Err(self.protocol_error(format!(
                        "control frame length bigger than maximum allowed of {MAX_CONTROL_PAYLOAD} bytes"
                    )));
                }
                if !final_frame {
                    return Err(self.protocol_error("control frame does not have final bit set"));
                }
                if compressed {
                    return Err(self.protocol_error("control frame must not be compressed"));
                }
            }
            frame::OPCODE_TEXT | frame::OPCODE_BINARY => {
                if self.message_open {
                    return Err(self.protocol_error(
                        "new message started before final frame for previous message was received",
                    ));
                }
            }
            frame::OPCODE_CONTINUATION => {
                if !self.message_open || compressed {
                    return Err(self.protocol_error("invalid continuation frame"));
                }
            }
            other => return Err(self.protocol_error(format!("unknown opcode {other}"))),
        }
        let length_size = match short_length {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let key_size = if masked { 4 } else { 0 };
        let header_size = 2 + length_size + key_size;
        if bytes.len() < header_size {
            return Ok(false);
        }
        let length = match length_size {
            2 => u64::from(u16::from_be_bytes([bytes[2], bytes[3]])),
            8 => {
                let mut wide = [0u8; 8];
                wide.copy_from_slice(&bytes[2..10]);
                let length = u64::from_be_bytes(wide);
                if length & (1 << 63) != 0 {
                    return Err(self.protocol_error("invalid 64-bit payload length"));
                }
                length
            }
            _ => short_length,
        };
        let mut key = [0u8; 4];
        key[..key_size].copy_from_slice(&bytes[2 + length_size..header_size]);
        if control {
            let total = header_size + length as usize;
            if bytes.len() < total {
                return Ok(false);
            }
            let mut payload = bytes[header_size..total].to_vec();
            frame::unmask(&mut payload, key, 0);
            self.start += total;
            self.control_frame(opcode, &payload)?;
            return Ok(true);
        }
        self.start += header_size;
        if opcode != frame::OPCODE_CONTINUATION {
            self.message_open = true;
            self.message_compressed = compressed;
        }
        self.payload = Some(Payload {
            remaining: length,
            key,
            key_position: 0,
            masked,
            final_frame,
        });
        if length == 0 {
            // An empty frame: finish it now (an empty final frame may end a message).
            self.payload = None;
            if final_frame {
                self.message_open = false;
                if self.message_compressed {
                    self.message_compressed = false;
                    self.inflate()?;
                }
            }
        }
        Ok(true)
    }

    /// PING: answer with a PONG; CLOSE: echo it and end the stream; PONG: nothing.
    fn control_frame(&mut self, opcode: u8, payload: &[u8]) -> io::Result<()> {
        match opcode {
            frame::OPCODE_PING => {
                self.control.queue_pong(payload);
                self.client.wake_writer();
            }
            frame::OPCODE_CLOSE => {
                if payload.len() == 1 {
                    return Err(self.protocol_error("close frame payload cannot be 1 byte"));
                }
                let mut echo = Vec::new();
                if payload.len() >= 2 {
                    let mut status = u16::from_be_bytes([payload[0], payload[1]]);
                    if !frame::valid_close_status(status) {
                        return Err(
                            self.protocol_error(format!("invalid close status code {status}"))
                        );
                    }
                    let mut body = &payload[2..];
                    if std::str::from_utf8(body).is_err() {
                        status = frame::STATUS_INVALID_PAYLOAD;
                        body = b"invalid utf8 body in close frame";
                    }
                    if status != frame::STATUS_NO_STATUS {
                        echo = frame::close_payload(status, &String::from_utf8_lossy(body));
                    }
                }
                self.control.queue_close_payload(echo);
                self.client.wake_writer();
                self.ended = Some(End::Closed);
            }
            _ => {}
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FrameReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        output: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.inflated_position < this.inflated.len() {
                let available = &this.inflated[this.inflated_position..];
                let take = available.len().min(output.remaining());
                output.put_slice(&available[..take]);
                this.inflated_position += take;
                if this.inflated_position == this.inflated.len() {
                    this.inflated.clear();
                    this.inflated_position = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let before = output.filled().len();
            if let Err(error) = this.decode(output) {
                if output.filled().len() > before {
                    // Hand over what came before the bad frame; the error follows.
                    return Poll::Ready(Ok(()));
                }
                return Poll::Ready(Err(error));
            }
            if output.filled().len() > before {
                return Poll::Ready(Ok(()));
            }
            if this.inflated_position < this.inflated.len() {
                continue;
            }
            match &this.ended {
                Some(End::Closed) => return Poll::Ready(Ok(())),
                Some(End::Failed(text)) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        text.clone(),
                    )))
                }
                None => {}
            }
            // Need more bytes: make room at the end of the raw buffer.
            if this.start == this.end {
                this.start = 0;
                this.end = 0;
            } else if this.end == this.raw.len() {
                if this.start > 0 {
                    this.raw.copy_within(this.start..this.end, 0);
                    this.end -= this.start;
                    this.start = 0;
                } else {
                    let grown = (this.raw.len() * 2).max(FIRST_RAW);
                    this.raw.resize(grown, 0);
                }
            }
            let mut read = ReadBuf::new(&mut this.raw[this.end..]);
            ready!(Pin::new(&mut this.inner).poll_read(context, &mut read))?;
            let count = read.filled().len();
            if count == 0 {
                this.ended = Some(End::Closed);
                return Poll::Ready(Ok(()));
            }
            let filled_all = this.end + count == this.raw.len();
            this.end += count;
            if filled_all && this.start == 0 && this.raw.len() < MAX_RAW {
                let grown = this.raw.len() * 2;
                this.raw.resize(grown, 0);
            }
        }
    }
}

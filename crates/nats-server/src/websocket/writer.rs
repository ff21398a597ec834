//! The write side of a WebSocket connection as a byte stream: [`FrameWriter`] turns each
//! vectored write of the client writer task into one binary frame (a frame header, then the
//! caller's own buffers: no copy), or, with compression negotiated and more than 64 bytes,
//! one compressed message. Control frames queued by the reader (PONGs) go out between frames;
//! the CLOSE goes last, at shutdown: the peer's echo, a protocol error's status, or the status
//! of the reason the connection closed (nats-server's mapping; none after read or write errors,
//! for slow consumers and failed TLS handshakes, which nats-server does not flush). Browsers get frames of at most
//! 4 KiB, as nats-server sends them.

use super::compression::Deflater;
use super::frame::{self, MAX_HEADER};
use super::Control;
use crate::client::ClientShared;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::AsyncWrite;

/// Slices handed to one vectored write (the frame header plus the caller's).
const WRITE_SLICES: usize = 64;
/// nats-server does not compress batches this small.
const COMPRESS_THRESHOLD: usize = 64;
/// nats-server's frame size for browsers.
const BROWSER_FRAME: usize = 4096;

pub(crate) struct FrameWriter<W> {
    inner: W,
    control: Arc<Control>,
    client: Arc<ClientShared>,
    header: [u8; MAX_HEADER],
    header_length: usize,
    header_written: usize,
    /// Payload bytes of the current frame not yet written.
    frame_remaining: usize,
    /// Whole frames of our own (control frames, compressed messages) being written.
    owned: Vec<u8>,
    owned_written: usize,
    deflater: Option<Deflater>,
    /// The largest frame payload (browsers); `usize::MAX` otherwise.
    frame_limit: usize,
    /// Compressed messages are sent as one frame (Safari cannot take them in pieces).
    whole_compressed: bool,
    close_sent: bool,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub(crate) fn new(
        inner: W,
        control: Arc<Control>,
        client: Arc<ClientShared>,
        compression: bool,
        browser: bool,
        safari: bool,
    ) -> Self {
        FrameWriter {
            inner,
            control,
            client,
            header: [0; MAX_HEADER],
            header_length: 0,
            header_written: 0,
            frame_remaining: 0,
            owned: Vec::new(),
            owned_written: 0,
            deflater: compression.then(Deflater::new),
            frame_limit: if browser { BROWSER_FRAME } else { usize::MAX },
            whole_compressed: safari,
            close_sent: false,
        }
    }

    fn between_frames(&self) -> bool {
        self.frame_remaining == 0 && self.header_written == self.header_length
    }

    /// Write out the frames we own (and take queued control frames when between frames).
    fn poll_owned(&mut self, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.owned_written < self.owned.len() {
                let written = ready!(Pin::new(&mut self.inner)
                    .poll_write(context, &self.owned[self.owned_written..]))?;
                if written == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                self.owned_written += written;
                continue;
            }
            self.owned.clear();
            self.owned_written = 0;
            if !self.between_frames() || !self.control.take_frames(&mut self.owned) {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Compress `slices` into one message of our own; returns the bytes taken.
    fn compress(&mut self, slices: &[IoSlice<'_>], total: usize) -> io::Result<usize> {
        let Some(deflater) = self.deflater.as_mut() else {
            return Ok(0);
        };
        let mut compressed = Vec::with_capacity(total / 2 + 64);
        deflater.deflate(slices.iter().map(|slice| &slice[..]), &mut compressed)?;
        let limit = if self.whole_compressed {
            usize::MAX
        } else {
            self.frame_limit
        };
        let mut header = [0u8; MAX_HEADER];
        let mut rest = &compressed[..];
        let mut first = true;
        loop {
            let piece = rest.len().min(limit);
            let last = piece == rest.len();
            let mut first_byte = if first {
                frame::RSV1_BIT | frame::OPCODE_BINARY
            } else {
                frame::OPCODE_CONTINUATION
            };
            if last {
                first_byte |= frame::FINAL_BIT;
            }
            let size = frame::encode_header(&mut header, first_byte, piece);
            self.owned.extend_from_slice(&header[..size]);
            self.owned.extend_from_slice(&rest[..piece]);
            rest = &rest[piece..];
            first = false;
            if last {
                break;
            }
        }
        Ok(total)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for FrameWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(context, &[IoSlice::new(bytes)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        slices: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.between_frames() {
            ready!(this.poll_owned(context))?;
        }
        if this.between_frames() {
            let total: usize = slices.iter().map(|slice| slice.len()).sum();
            if total == 0 {
                return Poll::Ready(Ok(0));
            }
            if this.deflater.is_some() && total > COMPRESS_THRESHOLD {
                // Taken whole into a compressed message; flush (or the next write) sends it.
                let taken = this.compress(slices, total)?;
                let _ = this.poll_owned(context)?;
                return Poll::Ready(Ok(taken));
            }
            let length = total.min(this.frame_limit);
            this.header_length = frame::encode_header(
                &mut this.header,
                frame::FINAL_BIT | frame::OPCODE_BINARY,
                length,
            );
            this.header_written = 0;
            this.frame_remaining = length;
        }
        loop {
            let mut iov = [IoSlice::new(&[]); WRITE_SLICES];
            let mut used = 0;
            let header_left = this.header_length - this.header_written;
            if header_left > 0 {
                iov[0] = IoSlice::new(&this.header[this.header_written..this.header_length]);
                used = 1;
            }
            let mut budget = this.frame_remaining;
            for slice in slices {
                if used == WRITE_SLICES || budget == 0 {
                    break;
                }
                let take = slice.len().min(budget);
                if take == 0 {
                    continue;
                }
                iov[used] = IoSlice::new(&slice[..take]);
                used += 1;
                budget -= take;
            }
            let written =
                ready!(Pin::new(&mut this.inner).poll_write_vectored(context, &iov[..used]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            let header_part = written.min(header_left);
            this.header_written += header_part;
            let payload = written - header_part;
            this.frame_remaining -= payload;
            if this.frame_remaining == 0 && this.header_written == this.header_length {
                this.header_length = 0;
                this.header_written = 0;
            }
            if payload > 0 {
                return Poll::Ready(Ok(payload));
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_owned(context))?;
        Pin::new(&mut this.inner).poll_flush(context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // A frame cut short cannot be followed by anything the peer could read.
        if this.between_frames() {
            ready!(this.poll_owned(context))?;
            if !this.close_sent {
                this.close_sent = true;
                let reason = this.client.closing();
                this.control.close_frame(reason, &mut this.owned);
                ready!(this.poll_owned(context))?;
            }
        }
        ready!(Pin::new(&mut this.inner).poll_flush(context))?;
        Pin::new(&mut this.inner).poll_shutdown(context)
    }
}

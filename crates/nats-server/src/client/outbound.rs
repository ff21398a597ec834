//! The outbound queue of one connection: frames waiting for the writer, as a chain of blocks
//! rather than one growing buffer.
//!
//! Why a chain: a single `BytesMut` that grows to a 30 MB backlog is reallocated (copied, with
//! old and new both resident) at every doubling, and the writer can only give it back after
//! writing all of it. Here publishers append to a block of at most [`BLOCK`] bytes; a full block
//! is sealed and queued, the writer takes everything sealed at once, writes it with vectored
//! writes and drops each block as soon as the socket took it. Peak memory is the backlog itself.
//! Large payloads are queued by reference (no copy), their frame head and CRLF around them.

use super::CloseReason;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes queued or being written over every connection of the process (for the producer stall).
static BACKLOG_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// Bytes queued or being written over every connection.
pub fn backlog_total() -> usize {
    BACKLOG_TOTAL.load(Ordering::Relaxed)
}

/// The writer is done with `bytes` it took (written or dropped).
pub fn release(bytes: usize) {
    BACKLOG_TOTAL.fetch_sub(bytes, Ordering::Relaxed);
}

fn account(bytes: usize) {
    BACKLOG_TOTAL.fetch_add(bytes, Ordering::Relaxed);
}

/// Bytes a connection queues before it adds them to the process-wide total: one shared atomic
/// per frame had publishers and writers on different cores contend for its cache line (7 % of a
/// cluster node's CPU at 300k msgs/s). The total lags by at most this per connection.
const ACCOUNT_BATCH: usize = 64 * 1024;

/// Largest block publishers fill before it is sealed.
const BLOCK: usize = 64 * 1024;
/// Smallest block: an idle connection keeps no more than this.
const SMALL_BLOCK: usize = 4 * 1024;
/// Payloads from this size on are queued by reference instead of copied.
const REFERENCE_PAYLOAD: usize = 16 * 1024;

/// Bytes waiting for the writer.
pub struct Outbound {
    /// Sealed segments, oldest first; `filling` comes after them.
    sealed: VecDeque<Bytes>,
    /// The block publishers append to.
    filling: BytesMut,
    /// Bytes in `sealed` plus `filling`.
    queued: usize,
    /// Bytes the writer took last time: a streaming connection gets big blocks from the start.
    recent: usize,
    /// Bytes the writer took and is still writing (counted against max_pending).
    pub in_flight: usize,
    /// Bytes of `queued` not yet added to the process-wide total (see [`ACCOUNT_BATCH`]).
    unaccounted: usize,
    pub closing: Option<CloseReason>,
}

impl Default for Outbound {
    fn default() -> Outbound {
        Outbound::new()
    }
}

impl Outbound {
    pub fn new() -> Outbound {
        Outbound {
            sealed: VecDeque::new(),
            filling: BytesMut::new(),
            queued: 0,
            recent: 0,
            in_flight: 0,
            unaccounted: 0,
            closing: None,
        }
    }

    /// Bytes queued, not yet taken by the writer.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Make room for `needed` contiguous bytes in `filling`, sealing it when full. Blocks grow
    /// with the backlog and with what the writer took last (small for a quiet connection,
    /// [`BLOCK`] for a streaming one).
    fn room(&mut self, needed: usize) {
        if self.filling.capacity() - self.filling.len() >= needed {
            return;
        }
        self.seal();
        let wanted = (self.queued + needed)
            .max(self.recent)
            .next_power_of_two()
            .clamp(SMALL_BLOCK, BLOCK);
        self.filling = BytesMut::with_capacity(wanted.max(needed));
    }

    /// Count `bytes` more queued, adding to the process-wide total in batches.
    fn account_queued(&mut self, bytes: usize) {
        self.queued += bytes;
        self.unaccounted += bytes;
        if self.unaccounted >= ACCOUNT_BATCH {
            account(std::mem::take(&mut self.unaccounted));
        }
    }

    fn seal(&mut self) {
        if !self.filling.is_empty() {
            self.sealed.push_back(self.filling.split().freeze());
        }
    }

    pub fn push_slice(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.filling.put_slice(bytes);
        self.account_queued(bytes.len());
    }

    /// Append one frame: `head` (written by the closure into the block), `body` (the header
    /// block and payload of the message, copied or referenced), then CRLF.
    pub fn push_frame(
        &mut self,
        head_capacity: usize,
        head: impl FnOnce(&mut BytesMut),
        headers: Option<&[u8]>,
        payload: &Bytes,
    ) {
        let headers_len = headers.map_or(0, <[u8]>::len);
        if payload.len() >= REFERENCE_PAYLOAD {
            self.room(head_capacity + headers_len);
            let before = self.filling.len();
            head(&mut self.filling);
            if let Some(headers) = headers {
                self.filling.put_slice(headers);
            }
            let head_len = self.filling.len() - before;
            self.account_queued(head_len + payload.len());
            self.seal();
            self.sealed.push_back(payload.clone());
            self.push_slice(b"\r\n");
            return;
        }
        self.room(head_capacity + headers_len + payload.len() + 2);
        let before = self.filling.len();
        head(&mut self.filling);
        if let Some(headers) = headers {
            self.filling.put_slice(headers);
        }
        self.filling.put_slice(payload);
        self.filling.put_slice(b"\r\n");
        let frame_len = self.filling.len() - before;
        self.account_queued(frame_len);
    }

    /// Move everything queued to the end of `into` (the writer's list); returns the bytes moved.
    /// The rest of the current block stays for the next frames, unless nothing was queued: then
    /// the connection went quiet and keeps at most a small block.
    pub fn take(&mut self, into: &mut VecDeque<Bytes>) -> usize {
        self.recent = self.queued;
        if self.queued == 0 {
            if self.filling.capacity() > SMALL_BLOCK {
                self.filling = BytesMut::new();
            }
            return 0;
        }
        self.seal();
        into.extend(self.sealed.drain(..));
        // The writer releases all it took once written: the total must hold all of it.
        account(std::mem::take(&mut self.unaccounted));
        std::mem::take(&mut self.queued)
    }

    /// Drop everything queued (a slow consumer's backlog).
    pub fn clear(&mut self) {
        release(self.queued - std::mem::take(&mut self.unaccounted));
        self.sealed.clear();
        self.filling = BytesMut::new();
        self.queued = 0;
    }
}

/// Drop the first `count` bytes of `segments` (what one write took).
pub fn advance_segments(segments: &mut VecDeque<Bytes>, mut count: usize) {
    while count > 0 {
        let Some(front) = segments.front_mut() else {
            return;
        };
        if front.len() <= count {
            count -= front.len();
            segments.pop_front();
        } else {
            front.advance(count);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(outbound: &mut Outbound) -> Vec<u8> {
        let mut segments = VecDeque::new();
        outbound.take(&mut segments);
        segments
            .iter()
            .flat_map(|segment| segment.to_vec())
            .collect()
    }

    #[test]
    fn frames_come_out_in_order_across_blocks_and_references() {
        let mut outbound = Outbound::new();
        let mut expected = Vec::new();
        for index in 0..2000usize {
            let payload = Bytes::from(vec![b'a' + (index % 26) as u8; (index * 37) % 40_000]);
            let head = format!("MSG s {index} {}\r\n", payload.len());
            outbound.push_frame(
                head.len(),
                |out| out.put_slice(head.as_bytes()),
                None,
                &payload,
            );
            expected.extend_from_slice(head.as_bytes());
            expected.extend_from_slice(&payload);
            expected.extend_from_slice(b"\r\n");
            if index % 7 == 0 {
                outbound.push_slice(b"PONG\r\n");
                expected.extend_from_slice(b"PONG\r\n");
            }
        }
        assert_eq!(outbound.queued(), expected.len());
        assert_eq!(drain(&mut outbound), expected);
        assert_eq!(outbound.queued(), 0);
    }

    #[test]
    fn headers_sit_between_head_and_payload() {
        let mut outbound = Outbound::new();
        let big = Bytes::from(vec![b'x'; REFERENCE_PAYLOAD]);
        outbound.push_frame(
            4,
            |out| out.put_slice(b"HMSG"),
            Some(b"NATS/1.0\r\n\r\n"),
            &big,
        );
        let mut expected = b"HMSGNATS/1.0\r\n\r\n".to_vec();
        expected.extend_from_slice(&big);
        expected.extend_from_slice(b"\r\n");
        assert_eq!(drain(&mut outbound), expected);
    }

    #[test]
    fn advancing_drops_written_segments() {
        let mut segments: VecDeque<Bytes> =
            [Bytes::from_static(b"abc"), Bytes::from_static(b"defg")].into();
        advance_segments(&mut segments, 4);
        assert_eq!(segments.len(), 1);
        assert_eq!(&segments[0][..], b"efg");
        advance_segments(&mut segments, 3);
        assert!(segments.is_empty());
    }

    #[test]
    fn a_streaming_connection_keeps_big_blocks_and_a_quiet_one_lets_go() {
        let mut outbound = Outbound::new();
        let mut segments = VecDeque::new();
        outbound.push_slice(&[1; 40_000]);
        assert_eq!(outbound.take(&mut segments), 40_000);
        // The rest of the block stays for the next frames.
        assert_eq!(outbound.filling.capacity(), BLOCK - 40_000);
        // A new block is sized by what the writer took last, not by the (empty) backlog.
        outbound.push_slice(&[2; 26_000]);
        assert_eq!(outbound.filling.capacity(), BLOCK);
        outbound.take(&mut segments);
        outbound.take(&mut segments);
        assert!(outbound.filling.capacity() <= SMALL_BLOCK);
    }

    #[test]
    fn clear_forgets_the_backlog() {
        let mut outbound = Outbound::new();
        outbound.push_slice(&[0; 100_000]);
        outbound.clear();
        assert_eq!(outbound.queued(), 0);
        assert!(drain(&mut outbound).is_empty());
    }
}

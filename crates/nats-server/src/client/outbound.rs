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
use std::io::IoSlice;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::tcp::OwnedWriteHalf;

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
/// Whole blocks written out, for any connection to fill again (see [`BlockPool`]).
static FREE_BLOCKS: BlockPool = BlockPool::new();
/// At most this many blocks (2 MiB) wait in [`FREE_BLOCKS`].
const FREE_BLOCKS_KEPT: usize = 32;
/// A connection whose writer took something this recently is streaming: its next batch starts
/// with a block the size of its last one. Past it, a batch starts small again (a burst long ago
/// must not give each of 20,000 connections a whole block for one small message).
const STREAMING_GAP: std::time::Duration = std::time::Duration::from_millis(100);
/// Smallest block: an idle connection keeps no more than this.
const SMALL_BLOCK: usize = 4 * 1024;
/// Payloads from this size on are queued by reference instead of copied.
const REFERENCE_PAYLOAD: usize = 16 * 1024;
/// Segments handed to one vectored write.
pub const WRITE_SLICES: usize = 64;

/// Bytes waiting for the writer.
pub struct Outbound {
    /// Sealed segments, oldest first; `filling` comes after them.
    sealed: VecDeque<Bytes>,
    /// The block publishers append to.
    filling: BytesMut,
    /// Bytes in `sealed` plus `filling`.
    queued: usize,
    /// Bytes the writer took the last time it took any, and when: a streaming connection (one
    /// that took within [`STREAMING_GAP`]) gets big blocks from the start of each batch.
    recent: usize,
    last_take: Option<std::time::Instant>,
    /// Bytes the writer took and is still writing (counted against max_pending).
    pub in_flight: usize,
    /// Bytes of `queued` not yet added to the process-wide total (see [`ACCOUNT_BATCH`]).
    unaccounted: usize,
    pub closing: Option<CloseReason>,
    /// A plain TCP route's socket, which the task that queued a batch writes to itself while
    /// the writer task is idle ([`Outbound::write_direct`]); unset for clients and TLS routes.
    pub direct: Option<Arc<OwnedWriteHalf>>,
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
            last_take: None,
            in_flight: 0,
            unaccounted: 0,
            closing: None,
            direct: None,
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
        let streaming = self
            .last_take
            .is_some_and(|at| at.elapsed() < STREAMING_GAP);
        let recent = if streaming { self.recent } else { 0 };
        let wanted = (self.queued + needed)
            .max(recent)
            .next_power_of_two()
            .clamp(SMALL_BLOCK, BLOCK);
        self.filling = FREE_BLOCKS.block(wanted.max(needed));
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
    /// the connection went quiet and keeps at most a small block (a bigger one goes back to
    /// [`FREE_BLOCKS`]).
    pub fn take(&mut self, into: &mut VecDeque<Bytes>) -> usize {
        if self.queued == 0 {
            // Quiet: the block goes back to the pool (whole once the writer dropped the last
            // segment it wrote from it). `recent` stays what the last non-empty take was, so a
            // streaming connection starts its next batch with a whole block again (a pooled
            // one), where growing from a small one again would allocate four on the way.
            if self.filling.capacity() > SMALL_BLOCK {
                FREE_BLOCKS.put(std::mem::take(&mut self.filling));
            }
            return 0;
        }
        self.recent = self.queued;
        self.last_take = Some(std::time::Instant::now());
        self.seal();
        into.extend(self.sealed.drain(..));
        // The writer releases all it took once written: the total must hold all of it.
        account(std::mem::take(&mut self.unaccounted));
        std::mem::take(&mut self.queued)
    }

    /// Write what is queued straight to the socket, from the task that queued it, as far as
    /// the socket takes it without waiting. Only while the writer task is idle (nothing in
    /// flight), under this lock, so frames keep their order; a full socket, an error or a
    /// writer at work leaves the rest to the writer task. True when nothing is left for it.
    /// Saves the writer's wake-up (a thread hand-off) per read batch on a route.
    pub fn write_direct(&mut self) -> bool {
        if self.queued == 0 {
            return true;
        }
        if self.in_flight > 0 || self.closing.is_some() {
            return false;
        }
        let Some(socket) = self.direct.clone() else {
            return false;
        };
        loop {
            let written = {
                let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
                let segments = self
                    .sealed
                    .iter()
                    .map(|segment| &segment[..])
                    .chain(std::iter::once(&self.filling[..]))
                    .filter(|segment| !segment.is_empty());
                let mut used = 0;
                for (slot, segment) in slices.iter_mut().zip(segments) {
                    *slot = IoSlice::new(segment);
                    used += 1;
                }
                socket.try_write_vectored(&slices[..used])
            };
            match written {
                Ok(count) if count > 0 => {
                    self.consume(count);
                    if self.queued == 0 {
                        // As `take`: a connection sent small batches keeps a small block.
                        self.recent = count;
                        self.last_take = Some(std::time::Instant::now());
                        if count <= SMALL_BLOCK && self.filling.capacity() > SMALL_BLOCK {
                            self.filling = BytesMut::new();
                        }
                        return true;
                    }
                }
                // Full (WouldBlock), closed or failed: the writer task waits for room or
                // meets the error and closes the connection.
                _ => return false,
            }
        }
    }

    /// Drop the first `count` queued bytes, which the socket took.
    fn consume(&mut self, count: usize) {
        let mut left = count;
        while left > 0 {
            match self.sealed.front_mut() {
                Some(front) if front.len() <= left => {
                    left -= front.len();
                    if let Some(written) = self.sealed.pop_front() {
                        FREE_BLOCKS.recycle(written);
                    }
                }
                Some(front) => {
                    front.advance(left);
                    left = 0;
                }
                None => {
                    if self.filling.len() <= left {
                        // Keep the block for the next frames.
                        self.filling.clear();
                    } else {
                        self.filling.advance(left);
                    }
                    left = 0;
                }
            }
        }
        let accounted = self.queued - self.unaccounted;
        self.queued -= count;
        self.unaccounted = self.unaccounted.min(self.queued);
        release(accounted - (self.queued - self.unaccounted));
    }

    /// Drop everything queued (a slow consumer's backlog).
    pub fn clear(&mut self) {
        release(self.queued - std::mem::take(&mut self.unaccounted));
        self.sealed.clear();
        self.filling = BytesMut::new();
        self.queued = 0;
    }
}

/// Whole blocks nothing refers to any more, for any connection to fill again instead of a
/// fresh allocation. A fresh 64 KiB block costs 16 page faults as publishers fill it (glibc
/// returns a freed block at the top of its heap to the kernel): 9 % of the server's CPU in a
/// four-subscriber fan-out (`perf record`, bench/README.md "Outbound blocks pooled").
/// nats-server pools its outbound buffers likewise. A block enters only when its last handle is
/// given up (`try_into_mut` on a unique handle), so no segment still queued or being written
/// can see it refilled.
pub struct BlockPool {
    free: parking_lot::Mutex<Vec<BytesMut>>,
}

impl BlockPool {
    pub const fn new() -> BlockPool {
        BlockPool {
            free: parking_lot::const_mutex(Vec::new()),
        }
    }

    /// An empty block of `capacity` bytes: a pooled one when it is a whole block.
    fn block(&self, capacity: usize) -> BytesMut {
        if capacity == BLOCK {
            if let Some(block) = self.free.lock().pop() {
                return block;
            }
        }
        BytesMut::with_capacity(capacity)
    }

    /// A segment written out: its block comes back when this was the block's last handle.
    fn recycle(&self, written: Bytes) {
        if let Ok(block) = written.try_into_mut() {
            self.put(block);
        }
    }

    /// `block` (or what is left of it) comes back, emptied, when it is the only handle on a
    /// whole block and the pool has room; otherwise it is dropped.
    fn put(&self, mut block: BytesMut) {
        block.clear();
        // Unique: the whole allocation is ours again, from its start.
        if block.try_reclaim(BLOCK) && block.capacity() == BLOCK {
            let mut free = self.free.lock();
            if free.len() < FREE_BLOCKS_KEPT {
                free.push(block);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.free.lock().len()
    }
}

/// Drop the first `count` bytes of `segments` (what one write took), recycling whole blocks.
pub fn advance_segments(segments: &mut VecDeque<Bytes>, mut count: usize) {
    while count > 0 {
        let Some(front) = segments.front_mut() else {
            return;
        };
        if front.len() <= count {
            count -= front.len();
            if let Some(written) = segments.pop_front() {
                FREE_BLOCKS.recycle(written);
            }
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

    /// Queue MSG frame `index` with a payload of `size` bytes, and add it to `expected`.
    fn push_test_frame(outbound: &mut Outbound, expected: &mut Vec<u8>, index: usize, size: usize) {
        let payload = Bytes::from(vec![b'a' + (index % 26) as u8; size]);
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
    }

    #[test]
    fn frames_come_out_in_order_across_blocks_and_references() {
        let mut outbound = Outbound::new();
        let mut expected = Vec::new();
        for index in 0..2000usize {
            push_test_frame(&mut outbound, &mut expected, index, (index * 37) % 40_000);
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
        // Streaming: after the quiet take the next batch starts with a block the size of the
        // last one taken again.
        outbound.push_slice(b"MSG a 1 0\r\n\r\n");
        assert_eq!(outbound.filling.capacity(), 26_000usize.next_power_of_two());
        outbound.take(&mut segments);
        outbound.take(&mut segments);
        // A connection that took nothing for longer starts small.
        let long_ago = std::time::Instant::now().checked_sub(2 * STREAMING_GAP);
        outbound.last_take = long_ago;
        outbound.recent = BLOCK;
        outbound.push_slice(b"MSG a 1 0\r\n\r\n");
        assert_eq!(outbound.filling.capacity(), SMALL_BLOCK);
    }

    /// A block comes back whole once its last handle is written out, and only then.
    #[test]
    fn a_block_is_pooled_once_nothing_refers_to_it() {
        let pool = BlockPool::new();
        let mut filling = pool.block(BLOCK);
        filling.put_slice(&[7; 1000]);
        let start = filling.as_ptr();
        let written = filling.split().freeze();
        // The filling still holds the rest of the block, and a copy of the segment is alive.
        pool.recycle(written.clone());
        assert_eq!(pool.len(), 0);
        drop(filling);
        assert_eq!(pool.len(), 0);
        // The last handle: the block comes back empty, whole, from its start.
        pool.recycle(written);
        assert_eq!(pool.len(), 1);
        let again = pool.block(BLOCK);
        assert_eq!(
            (again.len(), again.capacity(), again.as_ptr()),
            (0, BLOCK, start)
        );
        // Only whole blocks are pooled, and at most FREE_BLOCKS_KEPT of them.
        pool.put(BytesMut::with_capacity(SMALL_BLOCK));
        assert_eq!(pool.len(), 0);
        assert!(pool.block(SMALL_BLOCK).capacity() >= SMALL_BLOCK);
        assert_eq!(pool.len(), 0);
        for _ in 0..FREE_BLOCKS_KEPT + 5 {
            pool.put(BytesMut::with_capacity(BLOCK));
        }
        assert_eq!(pool.len(), FREE_BLOCKS_KEPT);
    }

    /// Segments the writer holds (queued or being written) keep their bytes while publishers
    /// go on filling blocks, some of them pooled ones written out before.
    #[test]
    fn pooled_blocks_never_overwrite_a_segment_still_held() {
        let mut outbound = Outbound::new();
        let mut expected = Vec::new();
        let mut received = Vec::new();
        let mut in_flight: VecDeque<Bytes> = VecDeque::new();
        let mut index = 0usize;
        for round in 0..200usize {
            for _ in 0..(round % 13) * 40 {
                push_test_frame(&mut outbound, &mut expected, index, (index * 53) % 900);
                index += 1;
            }
            // The writer writes last round's segments only now (they stayed in flight while
            // this round's frames were queued), then takes this round's.
            received.extend(in_flight.iter().flat_map(|segment| segment.to_vec()));
            let total = in_flight.iter().map(Bytes::len).sum();
            advance_segments(&mut in_flight, total);
            outbound.take(&mut in_flight);
            if round % 5 == 0 {
                // A quiet turn: the filling goes back to the pool when it can.
                received.extend(in_flight.iter().flat_map(|segment| segment.to_vec()));
                let total = in_flight.iter().map(Bytes::len).sum();
                advance_segments(&mut in_flight, total);
                outbound.take(&mut in_flight);
            }
        }
        received.extend(in_flight.iter().flat_map(|segment| segment.to_vec()));
        assert_eq!(received.len(), expected.len());
        assert!(
            received == expected,
            "a segment's bytes changed while it was held"
        );
    }

    /// A connected loopback pair: the write half for `direct`, and the peer's stream.
    async fn socket_pair() -> (Arc<OwnedWriteHalf>, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (ours, accepted) =
            tokio::join!(tokio::net::TcpStream::connect(address), listener.accept());
        let (_read_half, write_half) = ours.unwrap().into_split();
        (Arc::new(write_half), accepted.unwrap().0)
    }

    async fn read_exactly(peer: &mut tokio::net::TcpStream, length: usize) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let mut received = vec![0; length];
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            peer.read_exact(&mut received),
        )
        .await
        .unwrap()
        .unwrap();
        received
    }

    #[tokio::test]
    async fn direct_writes_send_everything_queued_in_order_while_the_writer_is_idle() {
        let (socket, mut peer) = socket_pair().await;
        let mut outbound = Outbound::new();
        let mut expected = Vec::new();
        // Without a socket, or with the writer at work, nothing is written here.
        outbound.push_slice(b"first\r\n");
        expected.extend_from_slice(b"first\r\n");
        assert!(!outbound.write_direct());
        outbound.direct = Some(socket);
        outbound.in_flight = 1;
        assert!(!outbound.write_direct());
        outbound.in_flight = 0;
        for index in 0..300usize {
            push_test_frame(&mut outbound, &mut expected, index, (index * 131) % 20_000);
        }
        let total = outbound.queued();
        assert!(total > ACCOUNT_BATCH);
        // The peer reads while we write: the socket may fill, then the rest stays queued (as
        // the writer task would find it) and a later call goes on from there.
        let reader = tokio::spawn(async move { read_exactly(&mut peer, total).await });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !outbound.write_direct() {
            assert!(std::time::Instant::now() < deadline, "never drained");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert_eq!(outbound.queued(), 0);
        assert_eq!(outbound.unaccounted, 0);
        assert_eq!(reader.await.unwrap(), expected);
        // Frames queued after a direct write follow it.
        outbound.push_slice(b"PING\r\n");
        let mut segments = VecDeque::new();
        assert_eq!(outbound.take(&mut segments), 6);
        assert_eq!(&segments[0][..], b"PING\r\n");
    }

    #[tokio::test]
    async fn a_closing_connection_gets_no_direct_write() {
        let (socket, _peer) = socket_pair().await;
        let mut outbound = Outbound::new();
        outbound.direct = Some(socket);
        outbound.push_slice(b"PONG\r\n");
        outbound.closing = Some(CloseReason::ClientClosed);
        assert!(!outbound.write_direct());
        assert_eq!(outbound.queued(), 6);
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

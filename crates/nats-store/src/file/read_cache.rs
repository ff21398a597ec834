//! Read-ahead for sequential readers of a FileStore: a consumer delivering a stream in order would
//! otherwise cost one `pread` per message. When a read starts where the previous one ended (or a
//! little after: deleted records, other subjects), `FileBackend::read` reads a chunk of the block
//! from there and serves the next reads from it; scattered reads (a KV get) keep one `pread` each.
//!
//! Memory stays bounded: one chunk of at most [`CHUNK_BYTES`] per store, at most [`TOTAL_BYTES`]
//! over all stores of the process (past that, reads go to the file), dropped at a flush once no
//! read used it for [`IDLE`]. Messages are copied out of the chunk, so no message
//! keeps a chunk alive. Bytes in a chunk are immutable on disk except through erase, compaction and
//! block removal, which clear the cache (`file/mod.rs`, `compaction.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Bytes read ahead at once (less at the end of a block's written data).
pub(crate) const CHUNK_BYTES: usize = 128 * 1024;
/// Read-ahead bytes held by all stores of the process together.
const TOTAL_BYTES: usize = 64 * 1024 * 1024;
/// A read starting at most this far after the previous one's end continues a sequential scan. A
/// chunk costs about what 20-40 single reads cost (copying 128 KiB against a syscall each), so
/// reads further apart than this would not use enough of one.
const SEQUENTIAL_GAP: u64 = 2 * 1024;

/// A chunk no read used for this long is dropped (checked per flush: a stream flushing every
/// millisecond must not drop the chunk of a consumer that reads every few milliseconds).
const IDLE: Duration = Duration::from_secs(1);

static CACHED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Block bytes `start..start + data.len()` of block `block_id`.
struct Chunk {
    block_id: u64,
    start: u64,
    data: Vec<u8>,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        CACHED_BYTES.fetch_sub(self.data.len(), Ordering::Relaxed);
    }
}

/// One store's read-ahead state.
#[derive(Default)]
pub(crate) struct ReadCache {
    chunk: Option<Chunk>,
    /// Block and offset where the previous read from a file ended.
    previous_end: Option<(u64, u64)>,
    /// A read used the chunk since `checked_at`.
    used_since_check: bool,
    checked_at: Option<Instant>,
}

impl std::fmt::Debug for ReadCache {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ReadCache")
            .field(
                "chunk_bytes",
                &self.chunk.as_ref().map(|chunk| chunk.data.len()),
            )
            .finish()
    }
}

impl ReadCache {
    /// The bytes `location..location + len` of block `block_id` when the chunk holds them all.
    pub fn get(&mut self, block_id: u64, location: u64, len: usize) -> Option<&[u8]> {
        let chunk = self.chunk.as_ref()?;
        if chunk.block_id != block_id || location < chunk.start {
            return None;
        }
        let from = usize::try_from(location - chunk.start).ok()?;
        let bytes = chunk.data.get(from..from.checked_add(len)?)?;
        self.used_since_check = true;
        self.previous_end = Some((block_id, location + len as u64));
        Some(bytes)
    }

    /// How many bytes to read from `location` for a read of `len` bytes that missed the chunk:
    /// a chunk when the read continues a sequential scan and the budget allows, else `len`.
    /// `available` is how many bytes the block has from `location` on.
    pub fn read_len(&mut self, block_id: u64, location: u64, len: usize, available: u64) -> usize {
        let sequential = self.previous_end.is_some_and(|(previous_block, end)| {
            previous_block == block_id && location >= end && location - end <= SEQUENTIAL_GAP
        });
        self.previous_end = Some((block_id, location + len as u64));
        if !sequential {
            return len;
        }
        // The old chunk is past: give its bytes back before asking for a new one's.
        self.chunk = None;
        let wanted = usize::try_from(available)
            .unwrap_or(usize::MAX)
            .min(CHUNK_BYTES)
            .max(len);
        // Checked, not reserved: stores filling at the same moment may overshoot by a chunk each.
        if CACHED_BYTES.load(Ordering::Relaxed) + wanted > TOTAL_BYTES {
            return len;
        }
        wanted
    }

    /// Keep `data`, read from `start` of block `block_id` (a length `read_len` granted).
    pub fn fill(&mut self, block_id: u64, start: u64, data: Vec<u8>) {
        CACHED_BYTES.fetch_add(data.len(), Ordering::Relaxed);
        self.used_since_check = true;
        self.chunk = Some(Chunk {
            block_id,
            start,
            data,
        });
    }

    /// Block bytes may have changed (erase, compaction, removal): forget them.
    pub fn clear(&mut self) {
        self.chunk = None;
        self.previous_end = None;
    }

    /// Called per flush: a chunk no read used for [`IDLE`] is dropped.
    pub fn release_if_idle(&mut self) {
        if self.chunk.is_none() {
            return;
        }
        self.release_if_idle_at(Instant::now());
    }

    fn release_if_idle_at(&mut self, now: Instant) {
        let checked_at = *self.checked_at.get_or_insert(now);
        if now.saturating_duration_since(checked_at) < IDLE {
            return;
        }
        if !self.used_since_check {
            self.chunk = None;
        }
        self.used_since_check = false;
        self.checked_at = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_reads_get_a_chunk_and_scattered_ones_do_not() {
        let mut cache = ReadCache::default();
        // First read of a block: nothing to continue.
        assert_eq!(cache.read_len(1, 32, 100, 10_000), 100);
        // The next record: sequential, a chunk of what the block has.
        let granted = cache.read_len(1, 132, 100, 10_000);
        assert_eq!(granted, 10_000);
        cache.fill(1, 132, vec![7u8; granted]);
        assert_eq!(cache.get(1, 232, 100), Some(&[7u8; 100][..]));
        assert_eq!(cache.get(1, 132 + 9_950, 100), None);
        assert_eq!(cache.get(2, 232, 100), None);
        // A jump far ahead is not sequential.
        assert_eq!(cache.read_len(1, 1_000_000, 100, 10_000_000), 100);
        assert_eq!(cache.read_len(1, 1_000_100 + 2_100, 100, 10_000_000), 100);
        cache.clear();
        assert_eq!(cache.get(1, 232, 100), None);
    }

    #[test]
    fn a_chunk_unused_for_the_idle_time_is_released() {
        let mut cache = ReadCache::default();
        cache.read_len(1, 32, 10, 100);
        let granted = cache.read_len(1, 42, 10, 100);
        cache.fill(1, 42, vec![0u8; granted]);
        let start = Instant::now();
        cache.release_if_idle_at(start);
        // Flushes within the idle time keep it, used or not.
        cache.release_if_idle_at(start + IDLE / 2);
        assert!(cache.get(1, 42, 10).is_some());
        // Used in the last period: kept.
        cache.release_if_idle_at(start + IDLE);
        assert!(cache.chunk.is_some());
        // Unused for a whole period: dropped.
        cache.release_if_idle_at(start + IDLE * 2);
        assert!(cache.chunk.is_none());
    }
}

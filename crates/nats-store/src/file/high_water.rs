//! The stream's sequence high-water mark (`seq.hwm`): the first and last sequence the store has
//! handed out, kept apart from the block files so that losing data from a block (a truncated or
//! damaged file, a block lost whole) never makes the stream hand out an acknowledged sequence
//! again, and never brings purged messages back. nats-server keeps the same fact in its stream
//! state file (`index.db`) and writes a tombstone at the remembered last sequence when the blocks
//! fall short of it; here recovery appends a skip record up to the mark (`FileStore::open`).
//!
//! Format: two 40-byte slots, each `HWM1`, first_seq, last_seq, last_timestamp, CRC-32 of the 36
//! bytes before it. Writes alternate between the slots (one `pwrite`, no rename), so a torn write
//! leaves the other slot intact. Both marks only grow, so reading takes the largest of the valid
//! slots: no generation number is needed.
//!
//! When it is written: at every flush that moved a mark (into the page cache: a killed process
//! loses nothing), made durable at every sync of the store's policy (at most once a second with
//! `SyncPolicy::Always`: there the blocks themselves are synced before each acknowledgement, so
//! the mark only guards against damage from outside), at a full purge and at close.
//!
//! Who calls it: `file/mod.rs` (flush, purge, close) and `file/recovery.rs`-time open.
//! It knows nothing of records or blocks.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::StoreError;

pub(crate) const FILE_NAME: &str = "seq.hwm";
const SLOT_MAGIC: &[u8; 4] = b"HWM1";
const SLOT_LEN: usize = 40;
/// With `SyncPolicy::Always`, how often the mark itself is fsynced (the blocks are every batch).
pub(crate) const ALWAYS_SYNC_EVERY: Duration = Duration::from_secs(1);

/// What the mark records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_timestamp: i64,
}

impl Marks {
    /// The marks of a store that never held a message and starts at sequence 1.
    const EMPTY_STORE: Marks = Marks {
        first_seq: 1,
        last_seq: 0,
        last_timestamp: 0,
    };

    fn encode(&self) -> [u8; SLOT_LEN] {
        let mut slot = [0u8; SLOT_LEN];
        slot[0..4].copy_from_slice(SLOT_MAGIC);
        slot[4..12].copy_from_slice(&self.first_seq.to_le_bytes());
        slot[12..20].copy_from_slice(&self.last_seq.to_le_bytes());
        slot[20..28].copy_from_slice(&self.last_timestamp.to_le_bytes());
        let crc = crc32fast::hash(&slot[..36]);
        slot[36..40].copy_from_slice(&crc.to_le_bytes());
        slot
    }

    fn decode(slot: &[u8]) -> Option<Marks> {
        if slot.len() < SLOT_LEN || &slot[0..4] != SLOT_MAGIC {
            return None;
        }
        let word = |range: std::ops::Range<usize>| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&slot[range]);
            bytes
        };
        let mut crc = [0u8; 4];
        crc.copy_from_slice(&slot[36..40]);
        if crc32fast::hash(&slot[..36]) != u32::from_le_bytes(crc) {
            return None;
        }
        Some(Marks {
            first_seq: u64::from_le_bytes(word(4..12)),
            last_seq: u64::from_le_bytes(word(12..20)),
            last_timestamp: i64::from_le_bytes(word(20..28)),
        })
    }

    fn max(self, other: Marks) -> Marks {
        Marks {
            first_seq: self.first_seq.max(other.first_seq),
            last_seq: self.last_seq.max(other.last_seq),
            last_timestamp: self.last_timestamp.max(other.last_timestamp),
        }
    }
}

/// The open mark file of one stream.
#[derive(Debug)]
pub(crate) struct HighWater {
    file: Arc<File>,
    path: PathBuf,
    written: Marks,
    next_slot: u64,
    needs_sync: bool,
    last_sync: Instant,
}

/// What opening the mark file found.
pub(crate) struct Opened {
    pub high_water: HighWater,
    /// The recorded marks; None for a new file (or one whose slots are both damaged).
    pub recorded: Option<Marks>,
    /// A file existed but no slot could be read.
    pub damaged: bool,
}

impl HighWater {
    /// Open (creating when missing) the mark file of the stream directory `dir`; a new file's
    /// name is synced with `dir` when `sync_new` (the owner of a deferred creation syncs it).
    pub fn open(dir: &Path, sync_new: bool) -> Result<Opened, StoreError> {
        let path = dir.join(FILE_NAME);
        let existed = path.exists();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        if !existed && sync_new {
            // The new name must survive a power loss before anything relies on it.
            super::sync_dir(dir)?;
        }
        let mut bytes = [0u8; 2 * SLOT_LEN];
        let len = read_up_to(&file, &mut bytes).map_err(StoreError::io(&path))?;
        let slots = [
            Marks::decode(&bytes[..len.min(SLOT_LEN)]),
            Marks::decode(&bytes[SLOT_LEN.min(len)..len]),
        ];
        let recorded = match slots {
            [Some(first), Some(second)] => Some(first.max(second)),
            [Some(only), None] | [None, Some(only)] => Some(only),
            [None, None] => None,
        };
        // The next write goes to the slot not holding the newest marks: tearing it keeps them.
        let next_slot = match slots {
            [Some(first), Some(second)] if first.last_seq >= second.last_seq => 1,
            [Some(_), None] => 1,
            _ => 0,
        };
        Ok(Opened {
            high_water: HighWater {
                file: Arc::new(file),
                path,
                // An empty file records what a new store starts from (nothing handed out,
                // first sequence 1), so a new store's first flush leaves it empty and its
                // creation sync has no data to fsync (`creation.rs`).
                written: recorded.unwrap_or(if len == 0 {
                    Marks::EMPTY_STORE
                } else {
                    Marks::default()
                }),
                next_slot,
                needs_sync: false,
                last_sync: Instant::now(),
            },
            recorded,
            damaged: recorded.is_none() && len > 0,
        })
    }

    /// The open mark file (its descriptor carries the directory's lock, `lock.rs`).
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The mark file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `marks` when they moved (page cache only: [`HighWater::sync`] makes them durable).
    pub fn record(&mut self, marks: Marks) -> Result<(), StoreError> {
        let marks = marks.max(self.written);
        if marks == self.written {
            return Ok(());
        }
        let offset = (self.next_slot % 2) * SLOT_LEN as u64;
        self.file
            .write_all_at(&marks.encode(), offset)
            .map_err(StoreError::io(&self.path))?;
        self.next_slot += 1;
        self.written = marks;
        self.needs_sync = true;
        Ok(())
    }

    /// fdatasync the mark file when a write is not yet durable.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if !self.needs_sync {
            return Ok(());
        }
        self.file.sync_data().map_err(StoreError::io(&self.path))?;
        self.needs_sync = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// For the `SyncPolicy::Always` pipeline: the file to sync along with the active block, when
    /// a write is pending and the last sync is older than [`ALWAYS_SYNC_EVERY`].
    pub fn take_for_pipeline(&mut self) -> Option<(Arc<File>, PathBuf)> {
        if !self.needs_sync || self.last_sync.elapsed() < ALWAYS_SYNC_EVERY {
            return None;
        }
        self.needs_sync = false;
        self.last_sync = Instant::now();
        Some((self.file.clone(), self.path.clone()))
    }
}

fn read_up_to(file: &File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read_at(&mut buffer[filled..], filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(first_seq: u64, last_seq: u64) -> Marks {
        Marks {
            first_seq,
            last_seq,
            last_timestamp: last_seq as i64,
        }
    }

    #[test]
    fn the_largest_valid_slot_wins_and_a_torn_slot_is_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opened = HighWater::open(dir.path(), true).expect("open");
        assert_eq!(opened.recorded, None);
        assert!(!opened.damaged);
        opened.high_water.record(marks(1, 10)).expect("record");
        opened.high_water.record(marks(4, 20)).expect("record");
        opened.high_water.sync().expect("sync");
        drop(opened);
        assert_eq!(
            HighWater::open(dir.path(), true).expect("open").recorded,
            Some(marks(4, 20))
        );
        // Tear the newer slot (the second): the older one still bounds the sequence.
        let path = dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[SLOT_LEN + 13] ^= 0xff;
        std::fs::write(&path, &bytes).expect("write");
        assert_eq!(
            HighWater::open(dir.path(), true).expect("open").recorded,
            Some(marks(1, 10))
        );
        // Both torn: reported as damaged, nothing recorded.
        bytes[13] ^= 0xff;
        std::fs::write(&path, &bytes).expect("write");
        let opened = HighWater::open(dir.path(), true).expect("open");
        assert_eq!(opened.recorded, None);
        assert!(opened.damaged);
    }

    #[test]
    fn marks_never_move_backwards() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opened = HighWater::open(dir.path(), true).expect("open");
        opened.high_water.record(marks(5, 50)).expect("record");
        opened.high_water.record(marks(1, 3)).expect("record");
        drop(opened);
        assert_eq!(
            HighWater::open(dir.path(), true).expect("open").recorded,
            Some(marks(5, 50))
        );
    }
}

//! A group's metadata (vote, committed log id, purge point) as one small record rewritten in place
//! under one `fdatasync`: no temporary file, rename or directory fsync after the first write.
//!
//! The file `meta-record` holds two slots of [`SLOT_BYTES`], each in its own 4 KiB block (so in
//! its own sectors: a torn sector write can damage only the slot being written). A slot is
//! `[4-byte magic][u64 generation][u32 length][u32 crc32 of generation, length and body][body]`.
//! A write goes to the slot not holding the newest valid record, one generation higher, followed
//! by `sync_data`; the file's size never changes after its creation, so that is the whole fsync.
//! Reading takes the valid slot of the highest generation: a torn or half-written slot fails its
//! checksum and the other one, the state durable before that write began, stands. Both slots bad
//! is an error, as a damaged `meta` file was.
//!
//! The file is created whole (both slots) by the first write: written under a temporary name,
//! fsynced, renamed and the directory fsynced, as `checked_file` does. Opening writes nothing, so a
//! group opened on a full disk waits for space at its first write as before.
//!
//! A third slot, the **commit hint**, holds the same kind of record written in place without an
//! fsync ([`MetaRecord::write_hint`]): a newer committed log id, saved at every commit, which
//! openraft awaits before applying. Syncing it there put an fdatasync (under the log's lock) into
//! every commit's path, the PubAck's included. The two synced slots never take an unsynced write,
//! so a power cut can lose only the hint; opening takes the hint's committed log id when it is
//! higher than the synced record's (a committed index only grows). The hint reaches the disk with
//! the next synced write (one `fdatasync` covers the file), the log's flusher's sync of it aside
//! (at most once a second, after a log fsync: `log_store.rs`), or the kernel's writeback. Raft's safety does not rest on it: a committed entry is
//! on a quorum's disks before it counts, and an election needs a log as new as a majority's. The
//! recorded commit is the commit-index protection's mark (a log cut by damage before it), which
//! after a power cut may be older than the last commit.
//!
//! Upgrade: a group directory written by an earlier build has `meta` (`checked_file`, magic
//! `NRM1`) instead. It is read at open while there is no `meta-record`; the first write creates
//! the record and then removes `meta`. A `meta` found beside a record (a power cut before its
//! removal was durable) is older than the record and ignored, and removed at the next write.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::checked_file;

/// The record's file name in a group directory.
pub(crate) const FILE: &str = "meta-record";
/// The earlier builds' metadata file (`checked_file`).
pub(crate) const OLD_FILE: &str = "meta";
pub(crate) const OLD_MAGIC: &[u8; 4] = b"NRM1";
const MAGIC: &[u8; 4] = b"NRR1";
/// Each slot starts on a 4 KiB boundary.
pub(crate) const SLOT_BYTES: u64 = 4096;
/// The synced slots.
const SLOTS: u64 = 2;
/// The slot of the commit hint, after the synced ones; files of earlier builds end before it.
const HINT_SLOT: u64 = SLOTS;
const HEADER: usize = 4 + 8 + 4 + 4;

/// The open record of one group directory.
pub(crate) struct MetaRecord {
    directory: PathBuf,
    /// The record's file with the slot and generation of its newest valid record; `None` until
    /// the first write creates it.
    file: Option<(File, u64, u64)>,
    /// An earlier build's `meta` is there, to remove once the record exists.
    old_file: bool,
    /// The commit hint's body read at open, until taken.
    hint: Option<Bytes>,
    /// A hint was written since the file was last synced.
    hint_dirty: bool,
}

fn checksum(generation: &[u8], length: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(generation);
    hasher.update(length);
    hasher.update(body);
    hasher.finalize()
}

/// A slot's bytes holding `body` as record `generation`.
fn encode(generation: u64, body: &[u8]) -> io::Result<Vec<u8>> {
    if (HEADER + body.len()) as u64 > SLOT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a metadata record of {} bytes is over a slot", body.len()),
        ));
    }
    let generation = generation.to_le_bytes();
    let length = (body.len() as u32).to_le_bytes();
    let mut slot = Vec::with_capacity(HEADER + body.len());
    slot.extend_from_slice(MAGIC);
    slot.extend_from_slice(&generation);
    slot.extend_from_slice(&length);
    slot.extend_from_slice(&checksum(&generation, &length, body).to_le_bytes());
    slot.extend_from_slice(body);
    Ok(slot)
}

/// The generation and body of a valid slot; `None` for a blank, torn or damaged one.
fn decode(slot: &[u8]) -> Option<(u64, &[u8])> {
    let header = slot.get(..HEADER)?;
    if &header[0..4] != MAGIC {
        return None;
    }
    let generation = u64::from_le_bytes(header[4..12].try_into().ok()?);
    let length = u32::from_le_bytes(header[12..16].try_into().ok()?);
    let stored = u32::from_le_bytes(header[16..20].try_into().ok()?);
    let body = slot.get(HEADER..HEADER.checked_add(length as usize)?)?;
    (checksum(&header[4..12], &header[12..16], body) == stored).then_some((generation, body))
}

impl MetaRecord {
    /// Opens the record of `directory` and returns the newest metadata body in it (or in an
    /// earlier build's `meta`), `None` when there is neither; an error when the record has no
    /// valid slot.
    pub(crate) fn open(directory: &Path) -> io::Result<(MetaRecord, Option<Bytes>)> {
        let path = directory.join(FILE);
        let old_file = directory.join(OLD_FILE).exists();
        let mut record = MetaRecord {
            directory: directory.to_path_buf(),
            file: None,
            old_file,
            hint: None,
            hint_dirty: false,
        };
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let body = checked_file::read(&directory.join(OLD_FILE), OLD_MAGIC)?;
                return Ok((record, body));
            }
            Err(error) => return Err(error),
        };
        let mut contents = Vec::new();
        io::Read::read_to_end(&mut &file, &mut contents)?;
        let newest = (0..SLOTS)
            .filter_map(|slot| {
                let start = usize::try_from(slot * SLOT_BYTES).ok()?;
                let end = contents.len().min(start + SLOT_BYTES as usize);
                let (generation, body) = decode(contents.get(start..end)?)?;
                Some((generation, slot, start + HEADER, body.len()))
            })
            .max();
        let Some((generation, slot, start, length)) = newest else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: checksum mismatch: no valid record in either slot",
                    path.display()
                ),
            ));
        };
        record.file = Some((file, slot, generation));
        record.hint = usize::try_from(HINT_SLOT * SLOT_BYTES)
            .ok()
            .and_then(|start| {
                let end = contents.len().min(start + SLOT_BYTES as usize);
                let (_, body) = decode(contents.get(start..end)?)?;
                Some((start + HEADER, body.len()))
            })
            .map(|(start, length)| Bytes::copy_from_slice(&contents[start..start + length]));
        Ok((
            record,
            Some(Bytes::from(contents).slice(start..start + length)),
        ))
    }

    /// Makes `body` the record durably: in place in the slot not holding the newest record, or,
    /// at the first write, by creating the file.
    pub(crate) fn write(&mut self, body: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some((file, newest_slot, newest_generation)) => {
                let slot = 1 - *newest_slot;
                let generation = *newest_generation + 1;
                file.write_all_at(&encode(generation, body)?, slot * SLOT_BYTES)?;
                file.sync_data()?;
                // The sync covered the hint too.
                self.hint_dirty = false;
                // Only now: until the sync succeeded the slot written may hold anything, and the
                // next write goes to the same one, the newest record untouched.
                (*newest_slot, *newest_generation) = (slot, generation);
            }
            None => {
                self.file = Some((self.create(body)?, 0, 1));
            }
        }
        if self.old_file {
            // The record stands for it from here on; a removal lost to a power cut leaves a
            // `meta` that opening ignores beside the record.
            // Not removed is no harm either (it is ignored beside the record): not an error of
            // this write, which is durable.
            let old = self.directory.join(OLD_FILE);
            match fs::remove_file(&old) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    tracing::warn!(%error, path = %old.display(), "an earlier build's raft metadata file not removed");
                }
                _ => {}
            }
            self.old_file = false;
        }
        Ok(())
    }

    /// Writes `body` (the metadata with a newer committed log id) into the hint slot, in place
    /// and without an fsync; before the file exists, it is created durably with `body` as its
    /// record instead.
    pub(crate) fn write_hint(&mut self, body: &[u8]) -> io::Result<()> {
        let Some((file, _, generation)) = &self.file else {
            return self.write(body);
        };
        file.write_all_at(&encode(*generation, body)?, HINT_SLOT * SLOT_BYTES)?;
        self.hint_dirty = true;
        Ok(())
    }

    /// Whether [`MetaRecord::write_hint`] writes in place (the file exists): a write of a few
    /// bytes into the page cache, no fsync, no allocation.
    pub(crate) fn hint_in_place(&self) -> bool {
        self.file.is_some()
    }

    /// The commit hint's body read at open (`None` when there was none, or once taken).
    pub(crate) fn take_hint(&mut self) -> Option<Bytes> {
        self.hint.take()
    }

    /// When a hint was written since the last sync: a handle of the file for the caller to
    /// `sync_data` (outside any lock), counted as synced from now on. A failed sync is the
    /// caller's to report with [`MetaRecord::hint_not_synced`].
    pub(crate) fn hint_to_sync(&mut self) -> Option<io::Result<File>> {
        if !self.hint_dirty {
            return None;
        }
        let (file, _, _) = self.file.as_ref()?;
        self.hint_dirty = false;
        Some(file.try_clone())
    }

    /// A sync of [`MetaRecord::hint_to_sync`] failed: the hint waits for the next one.
    pub(crate) fn hint_not_synced(&mut self) {
        self.hint_dirty = true;
    }

    /// Creates the file durably with `body` as generation 1 in slot 0, a blank slot 1 and a
    /// blank hint slot.
    fn create(&self, body: &[u8]) -> io::Result<File> {
        let mut image = encode(1, body)?;
        image.resize(((SLOTS + 1) * SLOT_BYTES) as usize, 0);
        let path = self.directory.join(FILE);
        let temporary = path.with_extension("tmp");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&temporary)?;
        file.write_all(&image)?;
        file.sync_all()?;
        fs::rename(&temporary, &path)?;
        File::open(&self.directory)?.sync_all()?;
        Ok(file)
    }

    /// The byte offset of the slot holding the newest record, once the file exists.
    #[cfg(test)]
    pub(crate) fn newest_offset(&self) -> Option<u64> {
        self.file.as_ref().map(|(_, slot, _)| slot * SLOT_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn reopened(directory: &Path) -> Option<Bytes> {
        MetaRecord::open(directory).expect("open").1
    }

    fn overwrite(directory: &Path, offset: u64, bytes: &[u8]) {
        let file = OpenOptions::new()
            .write(true)
            .open(directory.join(FILE))
            .expect("open record");
        file.write_all_at(bytes, offset).expect("overwrite");
    }

    #[test]
    fn writes_alternate_between_two_slots_of_one_file_and_the_newest_is_read() {
        let directory = tempfile::tempdir().expect("tempdir");
        let (mut record, body) = MetaRecord::open(directory.path()).expect("open");
        assert_eq!(body, None);
        assert!(
            !directory.path().join(FILE).exists(),
            "opening writes nothing"
        );
        record.write(b"one").expect("write");
        let path = directory.path().join(FILE);
        let created = fs::metadata(&path).expect("metadata");
        assert_eq!(created.len(), (SLOTS + 1) * SLOT_BYTES);
        assert_eq!(record.newest_offset(), Some(0));
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"one"[..]));
        record.write(b"two").expect("write");
        assert_eq!(record.newest_offset(), Some(SLOT_BYTES));
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"two"[..]));
        for number in 3..=7u8 {
            record.write(&[number; 40]).expect("write");
        }
        assert_eq!(record.newest_offset(), Some(0));
        assert_eq!(reopened(directory.path()).as_deref(), Some(&[7u8; 40][..]));
        let rewritten = fs::metadata(&path).expect("metadata");
        assert_eq!(
            (rewritten.ino(), rewritten.len()),
            (created.ino(), created.len()),
            "rewritten in place"
        );
        let names: Vec<_> = fs::read_dir(directory.path())
            .expect("read dir")
            .map(|item| item.expect("entry").file_name())
            .collect();
        assert_eq!(names, [FILE], "no temporary left");
    }

    /// A directory whose record holds `first` (slot 0), then `second` (slot 1, the newest).
    fn two_records() -> tempfile::TempDir {
        let directory = tempfile::tempdir().expect("tempdir");
        let (mut record, _) = MetaRecord::open(directory.path()).expect("open");
        record.write(b"first").expect("write");
        record.write(b"second").expect("write");
        assert_eq!(record.newest_offset(), Some(SLOT_BYTES));
        directory
    }

    #[test]
    fn a_damaged_or_torn_newest_slot_leaves_the_previous_record() {
        let directory = two_records();

        // Garbage over the newest slot's body.
        overwrite(directory.path(), SLOT_BYTES + HEADER as u64, b"garbage!");
        let (mut record, body) = MetaRecord::open(directory.path()).expect("open");
        assert_eq!(body.as_deref(), Some(&b"first"[..]));
        // The next write goes to the damaged slot, one generation past the survivor.
        record.write(b"third").expect("write");
        assert_eq!(record.newest_offset(), Some(SLOT_BYTES));
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"third"[..]));
        drop(record);

        // A torn write: only the start of a newer record reached slot 0 (its header, not all of
        // its body), over the older record there.
        let newer = encode(3, b"fourth, torn").expect("encode");
        overwrite(directory.path(), 0, &newer[..HEADER + 3]);
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"third"[..]));
        // A zeroed slot (a write lost whole) is no record either.
        overwrite(directory.path(), 0, &[0u8; SLOT_BYTES as usize]);
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"third"[..]));
    }

    #[test]
    fn both_slots_bad_is_a_checksum_error() {
        let directory = two_records();
        overwrite(directory.path(), HEADER as u64, b"X");
        overwrite(directory.path(), SLOT_BYTES + HEADER as u64, b"Y");
        let error = MetaRecord::open(directory.path()).err().expect("refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("checksum mismatch"), "{error}");
    }

    #[test]
    fn a_body_larger_than_a_slot_is_refused_and_nothing_changes() {
        let directory = tempfile::tempdir().expect("tempdir");
        let (mut record, _) = MetaRecord::open(directory.path()).expect("open");
        record.write(b"kept").expect("write");
        let error = record
            .write(&vec![1u8; SLOT_BYTES as usize])
            .expect_err("refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(reopened(directory.path()).as_deref(), Some(&b"kept"[..]));
    }
}

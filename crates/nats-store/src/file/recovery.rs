//! Opening a stream directory: rebuild the index from block indexes where they are exact, scan
//! blocks (verifying every CRC) where they are not, truncate torn tails, apply delete logs.
//! Damage is repaired or skipped and written into a [`RecoveryReport`]; it never panics.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use crate::config::FileStoreOptions;
use crate::engine::TtlIndex;
use crate::error::StoreError;
use crate::index::{MessageIndex, Slot};

use super::block::{
    block_path, decode_block_index, delete_path, index_path, inflate_block_index, Block,
    IndexedMessage,
};
use super::record::{
    decode_block_header, decode_deletes, decode_record, DeleteEntry, RecordKind, BLOCK_HEADER_LEN,
};
use super::{create_block_file, file_message_size, write_atomic, META_FILE};

const META_MAGIC: &[u8; 8] = b"NSMETA01";

/// What recovery found when a FileStore was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Blocks opened.
    pub blocks: usize,
    /// Blocks whose index file was used instead of reading their records.
    pub blocks_from_index: usize,
    /// Blocks whose records were read and checksummed.
    pub blocks_scanned: usize,
    /// Bytes cut from the end of the active block (a torn or damaged tail).
    pub truncated_bytes: u64,
    /// Zero bytes after the last record (a preallocated tail, or a file size the file system
    /// extended before the data landed): not damage, never in `problems`; cut from the active
    /// block so the next append follows the last record.
    pub zero_tail_bytes: u64,
    /// Bytes of sealed blocks ignored after damage (left on disk, not indexed).
    pub ignored_bytes: u64,
    /// Records dropped because their sequence went backwards.
    pub out_of_order_records: u64,
    /// Human-readable description of each problem met.
    pub problems: Vec<String>,
}

impl RecoveryReport {
    /// True when nothing was damaged.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

pub(crate) struct Recovered {
    pub blocks: Vec<Block>,
    pub index: MessageIndex,
    pub ttls: TtlIndex,
    pub next_block_id: u64,
    pub metadata: Vec<u8>,
    pub report: RecoveryReport,
}

/// Write the metadata file (fsynced with its directory when `sync`); returns its path.
pub(crate) fn write_metadata(dir: &Path, blob: &[u8], sync: bool) -> Result<PathBuf, StoreError> {
    let mut bytes = Vec::with_capacity(blob.len() + 16);
    bytes.extend_from_slice(META_MAGIC);
    bytes.extend_from_slice(blob);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    let path = dir.join(META_FILE);
    // A store made from a spare (`spares.rs`) has its temporary file already: no new inode.
    let _ = fs::rename(
        dir.join(super::spares::META_SPARE),
        path.with_extension("tmp"),
    );
    write_atomic(&path, &bytes, sync)?;
    Ok(path)
}

pub(crate) fn read_metadata(dir: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    let path = dir.join(META_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(StoreError::io(path)(error)),
    };
    if bytes.len() < 12 || &bytes[..8] != META_MAGIC {
        return Err(StoreError::Corrupt("stream metadata header damaged".into()));
    }
    let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
    let mut crc = [0u8; 4];
    crc.copy_from_slice(crc_bytes);
    if u32::from_le_bytes(crc) != crc32fast::hash(body) {
        return Err(StoreError::Corrupt(
            "stream metadata checksum mismatch".into(),
        ));
    }
    Ok(Some(body[8..].to_vec()))
}

fn block_ids(dir: &Path) -> Result<Vec<u64>, StoreError> {
    let mut ids = Vec::new();
    for entry in fs::read_dir(dir).map_err(StoreError::io(dir))? {
        let entry = entry.map_err(StoreError::io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
            continue;
        }
        if let Some(stem) = name.strip_suffix(".blk") {
            if let Ok(id) = stem.parse::<u64>() {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

fn add_message(
    index: &mut MessageIndex,
    ttls: &mut TtlIndex,
    report: &mut RecoveryReport,
    message: &IndexedMessage<'_>,
) {
    if message.seq <= index.last_seq() {
        report.out_of_order_records += 1;
        return;
    }
    index.push(
        message.seq,
        Slot {
            timestamp: message.timestamp,
            location: message.location,
            size: message.size,
            subject_id: 0,
            record_len: message.record_len,
        },
        message.subject,
    );
    ttls.add(message.seq, message.timestamp, message.ttl_nanos);
}

/// Use `<id>.idx` when it describes exactly `file_len` bytes. Returns the block's last sequence.
/// An index describing a longer file means the block lost bytes since: reported. An index of a
/// shorter file is normal only for the last block (appended to after a clean open).
fn load_from_index(
    dir: &Path,
    id: u64,
    file_len: u64,
    is_last: bool,
    index: &mut MessageIndex,
    ttls: &mut TtlIndex,
    report: &mut RecoveryReport,
) -> Option<u64> {
    let bytes = inflate_block_index(fs::read(index_path(dir, id)).ok()?).ok()?;
    let mut messages = Vec::new();
    let header = decode_block_index(&bytes, |message| messages.push(message)).ok()?;
    if header.covered_len != file_len {
        if header.covered_len > file_len || !is_last {
            report.problems.push(format!(
                "block {id}: {file_len} bytes where its index described {}",
                header.covered_len
            ));
        }
        return None;
    }
    if header.first_seq > index.last_seq() + 1 {
        index.extend_deleted_to(header.first_seq - 1);
    }
    index.reserve(messages.len());
    for message in &messages {
        add_message(index, ttls, report, message);
    }
    Some(header.last_seq)
}

/// Read and verify every record of a block. Returns `(first_seq, last_seq, intact_len)`, or None
/// when the header itself is unreadable.
fn scan_block(
    bytes: &[u8],
    index: &mut MessageIndex,
    ttls: &mut TtlIndex,
    report: &mut RecoveryReport,
) -> Option<(u64, u64, usize)> {
    let first_seq = decode_block_header(bytes)?;
    if first_seq > index.last_seq() + 1 {
        index.extend_deleted_to(first_seq - 1);
    }
    let mut last_seq = first_seq - 1;
    let mut position = BLOCK_HEADER_LEN;
    while position < bytes.len() {
        let Ok(record) = decode_record(&bytes[position..], first_seq) else {
            break;
        };
        match record.kind {
            RecordKind::Message => {
                let Ok(subject) = std::str::from_utf8(record.subject) else {
                    break;
                };
                let Ok(payload_len) = record.payload_len() else {
                    break;
                };
                add_message(
                    index,
                    ttls,
                    report,
                    &IndexedMessage {
                        seq: record.seq,
                        timestamp: record.timestamp,
                        ttl_nanos: record.aux,
                        location: position as u32,
                        record_len: record.len as u32,
                        size: file_message_size(
                            record.subject.len(),
                            record.headers_len,
                            payload_len,
                        ) as u32,
                        subject,
                    },
                );
                last_seq = last_seq.max(record.seq);
            }
            RecordKind::Skip => {
                let end = record.seq.saturating_add(record.aux.max(1) as u64 - 1);
                index.extend_deleted_to(end);
                last_seq = last_seq.max(end);
            }
            RecordKind::Erased => {
                index.extend_deleted_to(record.seq);
                last_seq = last_seq.max(record.seq);
            }
        }
        position += record.len;
    }
    Some((first_seq, last_seq, position))
}

fn apply_deletes(
    dir: &Path,
    block: &mut Block,
    index: &mut MessageIndex,
    ttls: &mut TtlIndex,
    report: &mut RecoveryReport,
) -> Result<(), StoreError> {
    let path = delete_path(dir, block.id);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(StoreError::io(path)(error)),
    };
    let (entries, intact) = decode_deletes(&bytes);
    if intact < bytes.len() {
        report.problems.push(format!(
            "delete log of block {}: {} damaged trailing bytes dropped",
            block.id,
            bytes.len() - intact
        ));
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        file.set_len(intact as u64).map_err(StoreError::io(&path))?;
    }
    for entry in entries {
        match entry {
            DeleteEntry::Sequence(seq) => {
                if block.contains(seq) && index.remove(seq).is_some() {
                    ttls.forget(seq);
                }
            }
            DeleteEntry::Floor(floor) => {
                block.floor = block.floor.max(floor);
                let doomed: Vec<u64> = index
                    .live_range(block.first_seq, floor.saturating_sub(1).min(block.last_seq))
                    .map(|(seq, _)| seq)
                    .collect();
                for seq in doomed {
                    index.remove(seq);
                    ttls.forget(seq);
                }
            }
        }
    }
    Ok(())
}

/// `sync_new_block`: a first block created here is fsynced with its directory (off for a store
/// created with `defer_creation_sync`, whose owner syncs it).
pub(crate) fn recover(
    dir: &Path,
    _options: &FileStoreOptions,
    sync_new_block: bool,
) -> Result<Recovered, StoreError> {
    fs::create_dir_all(dir).map_err(StoreError::io(dir))?;
    let metadata = match read_metadata(dir) {
        Ok(blob) => blob.unwrap_or_default(),
        Err(StoreError::Corrupt(problem)) => {
            return Err(StoreError::Corrupt(format!("{}: {problem}", dir.display())))
        }
        Err(error) => return Err(error),
    };
    let ids = block_ids(dir)?;
    let mut index = MessageIndex::new(1);
    let mut ttls = TtlIndex::default();
    let mut report = RecoveryReport::default();
    let mut blocks: Vec<Block> = Vec::with_capacity(ids.len());
    for (position, id) in ids.iter().copied().enumerate() {
        let is_last = position + 1 == ids.len();
        let path = block_path(dir, id);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        let file_len = file.metadata().map_err(StoreError::io(&path))?.len();
        let mut block;
        if let Some(last_seq) = load_from_index(
            dir,
            id,
            file_len,
            is_last,
            &mut index,
            &mut ttls,
            &mut report,
        ) {
            let header = {
                let mut buffer = [0u8; BLOCK_HEADER_LEN];
                use std::os::unix::fs::FileExt;
                file.read_exact_at(&mut buffer, 0)
                    .ok()
                    .and_then(|()| decode_block_header(&buffer))
            };
            let Some(first_seq) = header else {
                report
                    .problems
                    .push(format!("block {id}: header damaged, block ignored"));
                report.ignored_bytes += file_len;
                continue;
            };
            block = Block::new(dir, id, first_seq, file, file_len);
            block.last_seq = last_seq.max(first_seq - 1);
            index.extend_deleted_to(block.last_seq);
            report.blocks_from_index += 1;
        } else {
            let bytes = fs::read(&path).map_err(StoreError::io(&path))?;
            let Some((first_seq, last_seq, intact)) =
                scan_block(&bytes, &mut index, &mut ttls, &mut report)
            else {
                report.problems.push(format!(
                    "block {id}: header damaged ({} bytes), block ignored",
                    bytes.len()
                ));
                report.ignored_bytes += bytes.len() as u64;
                if is_last && bytes.len() < BLOCK_HEADER_LEN {
                    // A block whose creation was torn: nothing was ever acknowledged from it.
                    let _ = fs::remove_file(&path);
                }
                continue;
            };
            report.blocks_scanned += 1;
            let mut written_len = bytes.len() as u64;
            let zero_tail = bytes[intact..].iter().all(|byte| *byte == 0);
            if intact < bytes.len() && zero_tail {
                let zeros = (bytes.len() - intact) as u64;
                report.zero_tail_bytes += zeros;
                file.set_len(intact as u64).map_err(StoreError::io(&path))?;
                file.sync_all().map_err(StoreError::io(&path))?;
                written_len = intact as u64;
            } else if intact < bytes.len() {
                let lost = (bytes.len() - intact) as u64;
                if is_last {
                    file.set_len(intact as u64).map_err(StoreError::io(&path))?;
                    file.sync_all().map_err(StoreError::io(&path))?;
                    written_len = intact as u64;
                    report.truncated_bytes += lost;
                    report
                        .problems
                        .push(format!("block {id}: torn tail of {lost} bytes truncated"));
                } else {
                    report.ignored_bytes += lost;
                    report.problems.push(format!(
                        "block {id}: {lost} bytes after offset {intact} damaged and ignored"
                    ));
                }
            }
            block = Block::new(dir, id, first_seq, file, written_len);
            block.last_seq = last_seq;
            if !is_last {
                // Sealed but without a usable index: write one at the next flush.
                block.needs_index = true;
            }
        }
        apply_deletes(dir, &mut block, &mut index, &mut ttls, &mut report)?;
        let (live_msgs, live_bytes) = index
            .live_range(block.first_seq, block.last_seq)
            .fold((0u64, 0u64), |(msgs, bytes), (_, slot)| {
                (msgs + 1, bytes + u64::from(slot.record_len))
            });
        block.live_msgs = live_msgs;
        block.live_record_bytes = live_bytes;
        blocks.push(block);
    }
    // The active block will grow: its index (from a clean close) is about to go stale, and a
    // stale index left on a block that later gets sealed would look like damage.
    if let Some(active) = blocks.last() {
        let _ = fs::remove_file(index_path(dir, active.id));
    }
    report.blocks = blocks.len();
    let mut next_block_id = ids.last().map_or(1, |id| id + 1);
    if blocks.is_empty() {
        let first_seq = index.last_seq() + 1;
        let file = create_block_file(dir, next_block_id, first_seq)?;
        if sync_new_block {
            file.sync_all().map_err(StoreError::io(dir))?;
            super::sync_dir(dir)?;
        }
        blocks.push(Block::new(
            dir,
            next_block_id,
            first_seq,
            file,
            BLOCK_HEADER_LEN as u64,
        ));
        next_block_id += 1;
    }
    Ok(Recovered {
        blocks,
        index,
        ttls,
        next_block_id,
        metadata,
        report,
    })
}

//! One block: an append-only file of records (`<id>.blk`), its delete log (`<id>.del`) and, once
//! sealed or at clean close, its index file (`<id>.idx`) that lets recovery skip reading the block.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::consumer::Reader;
use crate::error::StoreError;

use super::record::{encode_delete, DeleteEntry};

const INDEX_MAGIC: &[u8; 8] = b"NSIDX001";

/// In-memory state of one block file.
#[derive(Debug)]
pub(crate) struct Block {
    pub id: u64,
    pub first_seq: u64,
    /// Highest sequence recorded in the block (`first_seq - 1` when none).
    pub last_seq: u64,
    /// Shared with the sync threads of `durability.rs` while this is the active block.
    pub file: Arc<File>,
    /// Bytes written to the file (buffered bytes of the active block come after).
    pub written_len: u64,
    pub live_msgs: u64,
    pub live_record_bytes: u64,
    /// Every sequence below this is deleted.
    pub floor: u64,
    pub delete_buffer: Vec<u8>,
    pub delete_file: Option<Arc<File>>,
    pub data_needs_sync: bool,
    pub deletes_need_sync: bool,
    /// Delete-log bytes handed to the sync pipeline, maybe not durable yet: an inline sync
    /// (close, sealing) syncs the log again rather than trust the pipeline.
    pub deletes_in_pipeline: bool,
    /// Sealed block whose index file is still to be written.
    pub needs_index: bool,
}

pub(crate) fn block_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:012}.blk"))
}
pub(crate) fn delete_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:012}.del"))
}
pub(crate) fn index_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:012}.idx"))
}

impl Block {
    pub fn new(id: u64, first_seq: u64, file: File, written_len: u64) -> Block {
        Block {
            id,
            first_seq,
            last_seq: first_seq - 1,
            file: Arc::new(file),
            written_len,
            live_msgs: 0,
            live_record_bytes: 0,
            floor: 0,
            delete_buffer: Vec::new(),
            delete_file: None,
            data_needs_sync: false,
            deletes_need_sync: false,
            deletes_in_pipeline: false,
            needs_index: false,
        }
    }

    pub fn contains(&self, seq: u64) -> bool {
        seq >= self.first_seq && seq <= self.last_seq
    }

    pub fn record_delete(&mut self, entry: DeleteEntry) {
        encode_delete(&mut self.delete_buffer, entry);
    }

    /// Append buffered delete entries to the delete log.
    pub fn write_deletes(&mut self, dir: &Path) -> Result<bool, StoreError> {
        if self.delete_buffer.is_empty() {
            return Ok(false);
        }
        let path = delete_path(dir, self.id);
        let mut created = false;
        if self.delete_file.is_none() {
            created = !path.exists();
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(StoreError::io(&path))?;
            self.delete_file = Some(Arc::new(file));
        }
        if let Some(file) = self.delete_file.as_mut() {
            (&**file)
                .write_all(&self.delete_buffer)
                .map_err(StoreError::io(&path))?;
        }
        self.delete_buffer.clear();
        self.deletes_need_sync = true;
        Ok(created)
    }

    pub fn sync(&mut self, dir: &Path) -> Result<(), StoreError> {
        if self.data_needs_sync {
            self.file
                .sync_data()
                .map_err(StoreError::io(block_path(dir, self.id)))?;
            self.data_needs_sync = false;
        }
        self.sync_deletes(dir)
    }

    /// fsync the delete log only (the data is being synced by the pipeline).
    pub fn sync_deletes(&mut self, dir: &Path) -> Result<(), StoreError> {
        if self.deletes_need_sync || self.deletes_in_pipeline {
            if let Some(file) = &self.delete_file {
                file.sync_data()
                    .map_err(StoreError::io(delete_path(dir, self.id)))?;
            }
            self.deletes_need_sync = false;
            self.deletes_in_pipeline = false;
        }
        Ok(())
    }

    pub fn read_at(&self, dir: &Path, offset: u64, buffer: &mut [u8]) -> Result<(), StoreError> {
        self.file
            .read_exact_at(buffer, offset)
            .map_err(StoreError::io(block_path(dir, self.id)))
    }

    pub fn write_at(&mut self, dir: &Path, offset: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.data_needs_sync = true;
        self.file
            .write_all_at(bytes, offset)
            .map_err(StoreError::io(block_path(dir, self.id)))
    }
}

/// One message as an index file (or a block scan) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexedMessage<'a> {
    pub seq: u64,
    pub timestamp: i64,
    pub ttl_nanos: i64,
    pub location: u32,
    pub record_len: u32,
    pub size: u32,
    pub subject: &'a str,
}

/// Encode a block index: the block length it describes, its sequence range, its live messages.
pub(crate) fn encode_block_index<'a>(
    covered_len: u64,
    first_seq: u64,
    last_seq: u64,
    messages: impl Iterator<Item = IndexedMessage<'a>>,
) -> Vec<u8> {
    let (lower, upper) = messages.size_hint();
    // 38 fixed bytes per message plus a typical subject: one allocation for most blocks (the
    // upper bound is the block's sequence range; deleted ones only make it generous).
    let expected = upper.unwrap_or(lower).min(1 << 20);
    let mut out = Vec::with_capacity(44 + expected * 64);
    out.extend_from_slice(INDEX_MAGIC);
    out.extend_from_slice(&covered_len.to_le_bytes());
    out.extend_from_slice(&first_seq.to_le_bytes());
    out.extend_from_slice(&last_seq.to_le_bytes());
    let count_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut count = 0u64;
    for message in messages {
        // Fixed fields assembled on the stack: one copy instead of seven capacity checks.
        let mut fixed = [0u8; 38];
        fixed[0..8].copy_from_slice(&message.seq.to_le_bytes());
        fixed[8..16].copy_from_slice(&message.timestamp.to_le_bytes());
        fixed[16..24].copy_from_slice(&message.ttl_nanos.to_le_bytes());
        fixed[24..28].copy_from_slice(&message.location.to_le_bytes());
        fixed[28..32].copy_from_slice(&message.record_len.to_le_bytes());
        fixed[32..36].copy_from_slice(&message.size.to_le_bytes());
        fixed[36..38].copy_from_slice(&(message.subject.len() as u16).to_le_bytes());
        out.extend_from_slice(&fixed);
        out.extend_from_slice(message.subject.as_bytes());
        count += 1;
    }
    out[count_at..count_at + 8].copy_from_slice(&count.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Header of a decoded block index.
pub(crate) struct BlockIndexHeader {
    pub covered_len: u64,
    pub first_seq: u64,
    pub last_seq: u64,
}

/// Decode a block index, calling `visit` per message. Nothing is visited when the CRC fails.
pub(crate) fn decode_block_index<'a>(
    bytes: &'a [u8],
    mut visit: impl FnMut(IndexedMessage<'a>),
) -> Result<BlockIndexHeader, StoreError> {
    if bytes.len() < 44 || &bytes[..8] != INDEX_MAGIC {
        return Err(StoreError::Corrupt("bad block index header".into()));
    }
    let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
    let mut crc = [0u8; 4];
    crc.copy_from_slice(crc_bytes);
    if u32::from_le_bytes(crc) != crc32fast::hash(body) {
        return Err(StoreError::Corrupt("block index checksum mismatch".into()));
    }
    let mut reader = Reader {
        bytes: body,
        position: 8,
    };
    let header = BlockIndexHeader {
        covered_len: reader.u64()?,
        first_seq: reader.u64()?,
        last_seq: reader.u64()?,
    };
    let count = reader.u64()?;
    for _ in 0..count {
        let seq = reader.u64()?;
        let timestamp = reader.u64()? as i64;
        let ttl_nanos = reader.u64()? as i64;
        let location = reader.u32()?;
        let record_len = reader.u32()?;
        let size = reader.u32()?;
        let subject_len = {
            let raw = reader.take(2)?;
            u16::from_le_bytes([raw[0], raw[1]]) as usize
        };
        let subject = std::str::from_utf8(reader.take(subject_len)?)
            .map_err(|_| StoreError::Corrupt("block index subject not utf-8".into()))?;
        visit(IndexedMessage {
            seq,
            timestamp,
            ttl_nanos,
            location,
            record_len,
            size,
            subject,
        });
    }
    Ok(header)
}

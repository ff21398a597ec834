//! Appending to `FileBackend`: records encoded into the write buffer (compressed with the
//! stream's `compression`), block rotation when the active block is full, and the sync policy's
//! decision of when a flush fsyncs. Called only from `file/mod.rs` (`Backend::append`).

use crate::config::SyncPolicy;
use crate::engine::MessageRecord;
use crate::error::StoreError;

use super::block::Block;
use super::record::{self, encode_record_body, RecordKind, BLOCK_HEADER_LEN, FLAG_COMPRESSED};
use super::{create_block_file, last_block, FileBackend};

impl FileBackend {
    /// Write the buffered records of the active block to its file (no fsync).
    pub(super) fn write_buffer_out(&mut self) -> Result<(), StoreError> {
        if self.write_buffer.is_empty() {
            return Ok(());
        }
        // Borrows only the blocks: the write buffer and directory are used alongside.
        let block = last_block(&mut self.blocks)?;
        let offset = block.written_len;
        if let Err(error) = block.write_at(&self.dir, offset, &self.write_buffer) {
            // A full disk (or any failed write): the records stay buffered, to be written again
            // from the same offset once there is room, and no partial record stays behind the
            // written ones (cutting the file back needs no space).
            if let Ok(file) = block.file.get() {
                let _ = file.set_len(offset);
            }
            return Err(error);
        }
        block.written_len += self.write_buffer.len() as u64;
        self.write_buffer.clear();
        Ok(())
    }

    /// The flags new records of the active block may carry: its header says which.
    pub(super) fn active_block_record_flags(&self) -> Result<u8, StoreError> {
        let Some(active) = self.blocks.last() else {
            return Ok(0);
        };
        let mut magic = [0u8; 8];
        active.read_at(&self.dir, 0, &mut magic)?;
        Ok(record::record_flags_for(&magic))
    }

    /// A message record of `record_len` bytes at `seq` was buffered: block accounting.
    pub(super) fn appended(&mut self, seq: u64, record_len: u32) -> Result<(), StoreError> {
        let active = self.active()?;
        active.live_msgs += 1;
        active.live_record_bytes += u64::from(record_len);
        self.after_append(seq)
    }

    /// `append` for a stream with `compression: s2`: the body compressed when that pays.
    pub(super) fn append_compressed(
        &mut self,
        record: &MessageRecord<'_>,
    ) -> Result<(u32, u32), StoreError> {
        let compressor = self.compressor.get_or_insert_with(Box::default);
        let compressed = compressor.compress(record.headers, record.payload);
        let body = if compressed {
            std::mem::take(&mut compressor.body)
        } else {
            Vec::new()
        };
        let (first, second, flags) = if compressed {
            (&body[..], &[][..], FLAG_COMPRESSED)
        } else {
            (record.headers, record.payload, 0)
        };
        let subject_len = record.subject.len();
        let (location, flags, len, base) = self.reserve(
            record.seq,
            (flags, record.ttl_nanos, record.headers.len()),
            |flags| record::record_len(flags, subject_len, first.len(), second.len()),
        )?;
        let record_len = u32::try_from(len).map_err(|_| StoreError::MaxMessageSize)?;
        encode_record_body(
            &mut self.write_buffer,
            RecordKind::Message,
            flags,
            base,
            [record.seq as i64, record.timestamp, record.ttl_nanos],
            record.subject.as_bytes(),
            record.headers.len(),
            first,
            second,
        );
        if let Some(compressor) = self.compressor.as_mut().filter(|_| compressed) {
            // Hand the buffer back: the next record reuses its capacity.
            compressor.body = body;
        }
        self.appended(record.seq, record_len)?;
        Ok((location, record_len))
    }

    /// Seal the active block and start a new one whose first sequence is `first_seq`.
    /// Fails without a change when the new block cannot be written (a full disk).
    pub(super) fn rotate(&mut self, first_seq: u64) -> Result<(), StoreError> {
        self.write_buffer_out()?;
        let id = self.next_block_id;
        let file = create_block_file(&self.dir, id, first_seq)?;
        self.next_block_id += 1;
        if let Some(active) = self.blocks.last_mut() {
            active.needs_index = true;
            // Messages removed while it was active are only now eligible for cleanup.
            let sealed = active.id;
            self.maintenance.insert(sealed);
        }
        let mut block = Block::new(&self.dir, id, first_seq, file, BLOCK_HEADER_LEN as u64);
        block.data_needs_sync = true;
        self.blocks.push(block);
        self.record_flags = record::record_flags_for(record::BLOCK_MAGIC);
        self.dir_needs_sync = true;
        Ok(())
    }

    /// Make room for a record at `seq` whose flags, aux and header length are `fields` and whose
    /// length with given record flags is `len_of(flags)`: the flags are those of the block it
    /// lands in (a new block may allow the short and compact forms; the compact one also needs
    /// `seq` close enough to the block's first sequence). Returns its location in the active
    /// block, its final flags, its length and the block's first sequence.
    pub(super) fn reserve(
        &mut self,
        seq: u64,
        fields: (u8, i64, usize),
        len_of: impl Fn(u8) -> usize,
    ) -> Result<(u32, u8, usize, u64), StoreError> {
        let (extra_flags, aux, headers_len) = fields;
        let allowed = extra_flags | self.record_flags;
        let buffered = self.write_buffer.len() as u64;
        let active = self.active()?;
        let mut base = active.first_seq;
        let end = active.written_len + buffered;
        let mut flags = record::record_flags(allowed, aux, headers_len, seq, base);
        let mut len = len_of(flags);
        let block_size = self.options.block_size;
        if end > BLOCK_HEADER_LEN as u64 && end + len as u64 > block_size {
            self.rotate(seq)?;
            base = self.active()?.first_seq;
            flags =
                record::record_flags(extra_flags | self.record_flags, aux, headers_len, seq, base);
            len = len_of(flags);
        }
        let buffered = self.write_buffer.len() as u64;
        let active = self.active()?;
        let location = active.written_len + buffered;
        let location = u32::try_from(location)
            .map_err(|_| StoreError::Corrupt("block offset overflow".into()))?;
        Ok((location, flags, len, base))
    }

    pub(super) fn after_append(&mut self, seq: u64) -> Result<(), StoreError> {
        let active = self.active()?;
        active.last_seq = active.last_seq.max(seq);
        if self.write_buffer.len() >= self.options.write_buffer_limit {
            // The record is appended either way: a failed write (a full disk) keeps it buffered
            // and the next `flush` writes it again or reports the failure.
            let _ = self.write_buffer_out();
        }
        Ok(())
    }

    pub(super) fn should_sync(&self, force: bool) -> bool {
        match self.options.sync {
            SyncPolicy::Always => true,
            SyncPolicy::Interval(interval) => force || self.last_sync.elapsed() >= interval,
        }
    }
}

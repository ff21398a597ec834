//! Reading one message back for `FileBackend::read`: its record comes from the write buffer (not
//! flushed yet), the read-ahead chunk (`read_cache.rs`) or the block file, and is checked
//! (CRC, sequence) and decompressed here. Called only from `file/mod.rs`.

use bytes::Bytes;

use crate::error::StoreError;
use crate::index::Slot;
use crate::types::StoredMessage;

use super::record::{decode_record, RecordKind};
use super::FileBackend;

impl FileBackend {
    /// The message `seq` whose index slot is `slot`.
    pub(super) fn read_message(
        &mut self,
        seq: u64,
        slot: &Slot,
        subject: &str,
    ) -> Result<StoredMessage, StoreError> {
        let position = self.block_position(seq).ok_or(StoreError::NotFound)?;
        let is_active = position + 1 == self.blocks.len();
        let block = &self.blocks[position];
        let location = u64::from(slot.location);
        let len = slot.record_len as usize;
        let bytes = if is_active && location >= block.written_len {
            let start = (location - block.written_len) as usize;
            let buffered = self
                .write_buffer
                .get(start..start + len)
                .ok_or_else(|| StoreError::Corrupt(format!("record {seq} outside buffer")))?;
            Bytes::copy_from_slice(buffered)
        } else if let Some(cached) = self.read_cache.get(block.id, location, len) {
            Bytes::copy_from_slice(cached)
        } else {
            let available = block.written_len.saturating_sub(location);
            let read_len = self.read_cache.read_len(block.id, location, len, available);
            let mut buffer = vec![0u8; read_len];
            block.read_at(&self.dir, location, &mut buffer)?;
            if read_len > len {
                let record = Bytes::copy_from_slice(&buffer[..len]);
                self.read_cache.fill(block.id, location, buffer);
                record
            } else {
                Bytes::from(buffer)
            }
        };
        let record = decode_record(&bytes, block.first_seq).map_err(|damage| {
            StoreError::Corrupt(format!("record {seq} in block {}: {damage:?}", block.id))
        })?;
        if record.seq != seq || record.kind != RecordKind::Message {
            return Err(StoreError::Corrupt(format!(
                "block {} holds sequence {} where {seq} was indexed",
                block.id, record.seq
            )));
        }
        // Headers and payload share the one buffer the record was read into (or decompressed to).
        let damaged = |damage| StoreError::Corrupt(format!("record {seq}: {damage:?}"));
        let (headers, payload) = match record.decompress().map_err(damaged)? {
            Some(body) => {
                let body = Bytes::from(body);
                (
                    body.slice(..record.headers_len),
                    body.slice(record.headers_len..),
                )
            }
            None => (
                bytes.slice_ref(record.headers),
                bytes.slice_ref(record.payload),
            ),
        };
        Ok(StoredMessage {
            subject: subject.to_string(),
            headers,
            payload,
            seq,
            timestamp: record.timestamp,
        })
    }
}

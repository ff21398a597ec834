//! Block upkeep during `flush`: sealed blocks whose messages are all gone are deleted, sealed
//! blocks mostly made of deleted records are rewritten with only their live records (a new file
//! renamed over the old one, so a crash leaves either the old or the new block, never a mix).
//! Called only from `FileBackend::flush_all`.

use super::idle_files::{IdleFile, Mode};
use std::fs::{self, File, OpenOptions};

use crate::engine::TtlIndex;
use crate::error::StoreError;
use crate::index::{MessageIndex, Slot};

use super::block::{block_path, delete_path, index_path};
use super::record::{decode_record, encode_block_header, BLOCK_HEADER_LEN};
use super::{sync_dir, FileBackend};

impl FileBackend {
    /// Delete sealed blocks without messages; rewrite sealed blocks mostly made of deleted records.
    pub(super) fn maintain(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
    ) -> Result<(), StoreError> {
        let candidates = std::mem::take(&mut self.maintenance);
        let active_id = self.blocks.last().map(|block| block.id);
        for id in candidates {
            if Some(id) == active_id {
                continue;
            }
            let Some(position) = self.blocks.iter().position(|block| block.id == id) else {
                continue;
            };
            let block = &self.blocks[position];
            if block.live_msgs == 0 {
                self.remove_block(position)?;
            } else if block.live_record_bytes * 2 < block.written_len - BLOCK_HEADER_LEN as u64 {
                self.compact_block(position, index, ttls)?;
            }
        }
        Ok(())
    }

    pub(super) fn remove_block(&mut self, position: usize) -> Result<(), StoreError> {
        let mut block = self.blocks.remove(position);
        // Its index must not be written after the files are gone; its outcome no longer matters.
        let _ = block.finish_index_job();
        self.read_cache.clear();
        for path in [
            index_path(&self.dir, block.id),
            delete_path(&self.dir, block.id),
            block_path(&self.dir, block.id),
        ] {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(StoreError::io(path)(error)),
            }
        }
        self.dir_needs_sync = true;
        Ok(())
    }

    /// Rewrite a sealed block with only its live records (crash-safe: new file renamed over old).
    fn compact_block(
        &mut self,
        position: usize,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
    ) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        // A background index write of the old content must not land after the rewrite.
        self.blocks[position].finish_index_job()?;
        self.read_cache.clear();
        let (id, first_seq, last_seq) = {
            let block = &self.blocks[position];
            (block.id, block.first_seq, block.last_seq)
        };
        let live: Vec<(u64, Slot)> = index
            .live_range(first_seq, last_seq)
            .map(|(seq, slot)| (seq, *slot))
            .collect();
        let mut content = encode_block_header(first_seq).to_vec();
        let mut relocated = Vec::with_capacity(live.len());
        for (seq, slot) in &live {
            let mut record = vec![0u8; slot.record_len as usize];
            self.blocks[position].read_at(&dir, u64::from(slot.location), &mut record)?;
            // The new block has the same first sequence: compact records stay valid as they are.
            decode_record(&record, first_seq)
                .map_err(|_| StoreError::Corrupt(format!("record {seq} damaged in block {id}")))?;
            relocated.push((*seq, content.len() as u32));
            content.extend_from_slice(&record);
        }
        let path = block_path(&dir, id);
        let temporary = path.with_extension("blk.tmp");
        let written = fs::write(&temporary, &content)
            .and_then(|()| File::open(&temporary).and_then(|file| file.sync_all()));
        if let Err(error) = written {
            // A full disk: the old block stays as it is, and so does the space it holds.
            let _ = fs::remove_file(&temporary);
            return Err(StoreError::io(&temporary)(error));
        }
        // The old index describes the old file: drop it before the rename makes it wrong.
        let _ = fs::remove_file(index_path(&dir, id));
        fs::rename(&temporary, &path).map_err(StoreError::io(&path))?;
        let _ = fs::remove_file(delete_path(&dir, id));
        sync_dir(&dir)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        for (seq, location) in &relocated {
            if let Some(slot) = index.get_mut(*seq) {
                slot.location = *location;
            }
        }
        let block = &mut self.blocks[position];
        block.file = IdleFile::new(path.clone(), Mode::ReadWrite, file);
        block.written_len = content.len() as u64;
        block.delete_file = None;
        block.delete_buffer.clear();
        block.deletes_need_sync = false;
        block.data_needs_sync = false;
        block.floor = 0;
        self.write_block_index(position, index, ttls, true)?;
        Ok(())
    }
}

//! Flushing a `FileBackend`: the buffered records written, each dirty file fsynced per the
//! sync policy (group commit; under `SyncPolicy::Always` the active block's fsync handed to the
//! pipeline, `durability.rs`), sealed blocks' indexes written (`index_writer.rs`) and maintenance
//! run (`compaction.rs`). Called from `file/mod.rs` (`Backend::flush`, `flush_then`, `close`).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::config::SyncPolicy;
use crate::engine::TtlIndex;
use crate::error::StoreError;
use crate::index::MessageIndex;
use crate::traits::DurableCallback;

use super::block::{block_path, delete_path, index_path};
use super::creation;
use super::index_writer::{IndexJob, SealedIndex};
use super::{last_block, marks_of, sync_dir, write_atomic, FileBackend};

impl FileBackend {
    /// Write `<id>.idx` describing the block as it is on disk now, on this thread.
    pub(super) fn write_block_index(
        &mut self,
        position: usize,
        index: &MessageIndex,
        ttls: &TtlIndex,
        sync: bool,
    ) -> Result<(), StoreError> {
        let block = &mut self.blocks[position];
        block.finish_index_job()?;
        let sealed = SealedIndex::capture(block, index, ttls);
        write_atomic(&index_path(&self.dir, block.id), &sealed.encode(), sync)?;
        block.needs_index = false;
        Ok(())
    }

    /// A sealed block's index: what it needs is copied here (it reads the message index), the
    /// block's fsync, the encoding and the file write go to a sync pool thread (`index_writer.rs`).
    pub(super) fn start_block_index(
        &mut self,
        position: usize,
        index: &MessageIndex,
        ttls: &TtlIndex,
    ) {
        let dir = &self.dir;
        let block = &mut self.blocks[position];
        let data = if block.data_needs_sync {
            match block.file.get() {
                Ok(file) => Some((file, block_path(dir, block.id))),
                // No descriptor to be had now (too many open files): the block keeps its
                // unsynced data and waits for the next flush's try.
                Err(_) => return,
            }
        } else {
            None
        };
        let sealed = SealedIndex::capture(block, index, ttls);
        block.data_needs_sync = false;
        block.index_job = Some(IndexJob::start(data, index_path(dir, block.id), sealed));
        block.needs_index = false;
    }

    /// Write everything buffered, sync per policy, write due block indexes, run maintenance.
    /// With `on_durable` under `SyncPolicy::Always` the active block's fsync is left to the
    /// pipeline (every other file is synced here first) and `on_durable` runs once it is done.
    pub(super) fn flush_all(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
        force_sync: bool,
        on_durable: Option<DurableCallback>,
    ) -> Result<(), StoreError> {
        let pipelined =
            on_durable.is_some() && !force_sync && self.options.sync == SyncPolicy::Always;
        let mut to_sync = Vec::new();
        // A failed write (a full disk) leaves what failed buffered, to be written again: it
        // fails this flush only. A failed sync poisons the pipeline (`durability.rs`).
        self.write_files(index, ttls)?;
        // After a failed sync only a forced flush makes the store durable again: the active
        // block's bytes are written again and everything is synced inline.
        let recovering = force_sync && self.pipeline.failed();
        if recovering {
            let dir = self.dir.clone();
            let active = last_block(&mut self.blocks)?;
            active.rewrite_written(&dir)?;
        }
        if self.should_sync(force_sync) {
            // An acknowledgement (or a forced sync) relies on the store's files and names being
            // durable: a creation still unsynced (its owner's sync not yet run) is synced first,
            // here, once. The owner's own flush right after creating does not wait for it.
            let relied_on = on_durable.is_some() || force_sync;
            let creation = creation::pending(&self.creation).filter(|_| relied_on);
            let synced = creation.map_or(Ok(()), |creation| creation.run());
            if let Err(error) =
                synced.and_then(|()| self.sync_files(pipelined.then_some(&mut to_sync)))
            {
                // Whatever was written may not reach the disk: nothing pending may be acknowledged.
                self.pipeline.fail(&error, self.dir.clone());
                return Err(error);
            }
        }
        if recovering {
            self.pipeline.recover();
        }
        if !self.maintenance.is_empty() {
            // Upkeep only, never the reason a flush fails: a block that could not be rewritten
            // now (no room for its copy on a full disk) stays as it is, readable, and comes up
            // again when it loses more messages.
            let _ = self.maintain(index, ttls);
        }
        self.read_cache.release_if_idle();
        if let Some(on_durable) = on_durable {
            if to_sync.is_empty() {
                self.pipeline.after_pending(on_durable);
            } else {
                self.pipeline.submit(to_sync, on_durable);
            }
        }
        Ok(())
    }

    /// The write stage of a flush: buffered records, the high-water mark, delete logs, due block
    /// indexes. A failure leaves what failed buffered (nothing durable is claimed).
    pub(super) fn write_files(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
    ) -> Result<(), StoreError> {
        self.write_buffer_out()?;
        self.high_water.record(marks_of(index))?;
        let dir = self.dir.clone();
        for block in &mut self.blocks {
            if block.write_deletes(&dir)? {
                self.dir_needs_sync = true;
            }
            block.collect_index_job()?;
        }
        // A sealed block gets its index once, after its data is durable: an index must never
        // describe bytes a power loss could take back. Both happen on a sync pool thread; a sync
        // below waits for them.
        let active_position = self.blocks.len().saturating_sub(1);
        for position in 0..active_position {
            if self.blocks[position].needs_index {
                self.start_block_index(position, index, ttls);
            }
        }
        Ok(())
    }

    /// The sync stage of a flush, per policy: inline, or (with `pipelined`) the active block's
    /// fsync collected for the pipeline.
    pub(super) fn sync_files(
        &mut self,
        mut pipelined: Option<&mut Vec<(Arc<File>, PathBuf)>>,
    ) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        let active_position = self.blocks.len().saturating_sub(1);
        for (position, block) in self.blocks.iter_mut().enumerate() {
            let Some(to_sync) = pipelined.as_deref_mut() else {
                block.sync(&dir)?;
                continue;
            };
            // The active block's data flag stays set: sealing and close sync it again
            // inline, so they never depend on a pipeline sync still in flight.
            if position == active_position {
                if block.data_needs_sync {
                    let path = block_path(&dir, block.id);
                    let file = block.file.get().map_err(StoreError::io(&path))?;
                    to_sync.push((file, path));
                }
            } else if block.durability_pending() {
                block.sync(&dir)?;
            }
            if block.deletes_need_sync {
                if let Some(handle) = &block.delete_file {
                    let path = delete_path(&dir, block.id);
                    let file = handle.get().map_err(StoreError::io(&path))?;
                    to_sync.push((file, path));
                }
                block.deletes_need_sync = false;
                block.deletes_in_pipeline = true;
            }
        }
        match pipelined.as_deref_mut() {
            Some(to_sync) => to_sync.extend(self.high_water.take_for_pipeline()),
            None => self.high_water.sync()?,
        }
        if self.dir_needs_sync {
            sync_dir(&dir)?;
            self.dir_needs_sync = false;
        }
        self.last_sync = Instant::now();
        if pipelined.is_none() {
            self.pipeline.all_synced();
        }
        Ok(())
    }
}

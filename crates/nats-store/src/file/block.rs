//! One block: an append-only file of records (`<id>.blk`), its delete log (`<id>.del`) and, once
//! sealed or at clean close, its index file (`<id>.idx`) that lets recovery skip reading the block.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::StoreError;

use super::idle_files::{IdleFile, Mode};
use super::index_writer::IndexJob;
use super::record::{encode_delete, DeleteEntry};

// Recovery reads index files through `block`.
pub(crate) use super::block_index::{decode_block_index, inflate_block_index, IndexedMessage};

/// In-memory state of one block file.
#[derive(Debug)]
pub(crate) struct Block {
    pub id: u64,
    pub first_seq: u64,
    /// Highest sequence recorded in the block (`first_seq - 1` when none).
    pub last_seq: u64,
    /// Open while used (`idle_files.rs`); the sync threads of `durability.rs` and an index job
    /// hold their own reference to the descriptor they sync.
    pub file: IdleFile,
    /// Bytes written to the file (buffered bytes of the active block come after).
    pub written_len: u64,
    pub live_msgs: u64,
    pub live_record_bytes: u64,
    /// Every sequence below this is deleted.
    pub floor: u64,
    pub delete_buffer: Vec<u8>,
    pub delete_file: Option<IdleFile>,
    pub data_needs_sync: bool,
    pub deletes_need_sync: bool,
    /// Delete-log bytes handed to the sync pipeline, maybe not durable yet: an inline sync
    /// (close, sealing) syncs the log again rather than trust the pipeline.
    pub deletes_in_pipeline: bool,
    /// Sealed block whose index file is still to be written.
    pub needs_index: bool,
    /// The background write of this sealed block's index (and fsync of its data), until its
    /// result is collected.
    pub index_job: Option<Arc<IndexJob>>,
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
    /// The block `id` of the stream directory `dir`, with its file just opened.
    pub fn new(dir: &Path, id: u64, first_seq: u64, file: File, written_len: u64) -> Block {
        Block {
            id,
            first_seq,
            last_seq: first_seq - 1,
            file: IdleFile::new(block_path(dir, id), Mode::ReadWrite, file),
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
            index_job: None,
        }
    }

    /// Data written but not known durable (dirty, or its fsync still running in an index job).
    pub fn durability_pending(&self) -> bool {
        self.data_needs_sync || self.index_job.as_ref().is_some_and(|job| job.syncs_data)
    }

    /// Wait for this block's background index write, if any, and take its result.
    pub fn finish_index_job(&mut self) -> Result<(), StoreError> {
        match self.index_job.take() {
            Some(job) => job.finish(),
            None => Ok(()),
        }
    }

    /// Take the result of a finished background index write; a running one is left running.
    pub fn collect_index_job(&mut self) -> Result<(), StoreError> {
        let finished = self.index_job.as_ref().and_then(|job| job.try_finish());
        match finished {
            Some(result) => {
                self.index_job = None;
                result
            }
            None => Ok(()),
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
            self.delete_file = Some(IdleFile::new(path.clone(), Mode::Append, file));
        }
        if let Some(handle) = &self.delete_file {
            let file = handle.get().map_err(StoreError::io(&path))?;
            let before = file.metadata().map(|metadata| metadata.len());
            if let Err(error) = (&*file).write_all(&self.delete_buffer) {
                // A full disk: the entries stay buffered and are appended whole later; a partial
                // entry must not stay in front of them (cutting back needs no space).
                if let Ok(len) = before {
                    let _ = file.set_len(len);
                }
                return Err(StoreError::io(&path)(error));
            }
        }
        self.delete_buffer.clear();
        self.deletes_need_sync = true;
        Ok(created)
    }

    pub fn sync(&mut self, dir: &Path) -> Result<(), StoreError> {
        self.finish_index_job()?;
        if self.data_needs_sync {
            let path = || block_path(dir, self.id);
            let file = self
                .file
                .get()
                .map_err(|error| StoreError::io(path())(error))?;
            file.sync_data()
                .map_err(|error| StoreError::io(path())(error))?;
            self.data_needs_sync = false;
        }
        self.sync_deletes(dir)
    }

    /// fsync the delete log only (the data is being synced by the pipeline).
    pub fn sync_deletes(&mut self, dir: &Path) -> Result<(), StoreError> {
        if self.deletes_need_sync || self.deletes_in_pipeline {
            if let Some(handle) = &self.delete_file {
                handle
                    .get()
                    .and_then(|file| file.sync_data())
                    .map_err(StoreError::io(delete_path(dir, self.id)))?;
            }
            self.deletes_need_sync = false;
            self.deletes_in_pipeline = false;
        }
        Ok(())
    }

    /// Write the block's bytes again over themselves, after a failed fsync: the kernel may have
    /// marked pages clean that never reached the disk, and only rewritten pages are synced again.
    pub fn rewrite_written(&mut self, dir: &Path) -> Result<(), StoreError> {
        let mut bytes = vec![0u8; self.written_len as usize];
        self.read_at(dir, 0, &mut bytes)?;
        self.write_at(dir, 0, &bytes)
    }

    // The path is formatted only on failure: these run per read and per flush.
    pub fn read_at(&self, dir: &Path, offset: u64, buffer: &mut [u8]) -> Result<(), StoreError> {
        self.file
            .get()
            .and_then(|file| file.read_exact_at(buffer, offset))
            .map_err(|error| StoreError::io(block_path(dir, self.id))(error))
    }

    pub fn write_at(&mut self, dir: &Path, offset: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.data_needs_sync = true;
        self.file
            .get()
            .and_then(|file| file.write_all_at(bytes, offset))
            .map_err(|error| StoreError::io(block_path(dir, self.id))(error))
    }
}

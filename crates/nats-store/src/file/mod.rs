//! FileStore: the engine over a directory of append-only block files.
//!
//! Layout of a stream directory: `meta.bin` (the owner's blob), `<id>.blk` blocks of records,
//! `seq.hwm` (sequence marks, `high_water.rs`; its descriptor carries the directory's flock,
//! `lock.rs`), `<id>.del` per-block delete logs, `<id>.idx`
//! per-block indexes (`block_index.rs`; written when a block is sealed, by a sync pool thread
//! after the block's fsync (`index_writer.rs`), and for the active block at clean close: the index
//! snapshot), `consumers/<name>/` consumer state.
//!
//! Write path: `append` encodes into one write buffer; `flush` (`flush.rs`) writes it with one `write` and, per
//! the sync policy, one fsync per dirty file (group commit). Blocks whose messages are gone are
//! deleted, mostly-empty ones rewritten, during `flush` (`compaction.rs`). With
//! `SyncPolicy::Always`, `flush_then` leaves the active block's fsync to the sync pipeline
//! (`durability.rs`) and reports durability through a callback; `flush` syncs inline.
//! Stream `compression: s2` compresses record bodies (`record.rs`). Appends: `write_path.rs`. Reads: `read_path.rs`, with
//! read-ahead for sequential readers (`read_cache.rs`).
//!
//! Crash safety: every record and delete entry has a CRC; recovery (`recovery.rs`) keeps the intact
//! prefix of a damaged block, truncates a torn tail, and trusts a block index only when it describes
//! exactly the block's current length.

mod block;
mod block_index;
mod compaction;
mod consumer;
mod creation;
mod durability;
mod flush;
mod high_water;
mod idle_files;
mod index_writer;
mod lock;
mod placement;
mod read_cache;
mod read_path;
mod record;
mod recovery;
mod removal;
mod spares;
mod write_path;

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::config::{Compression, FileStoreOptions, StreamStoreConfig, SyncPolicy};
use crate::engine::{Backend, MessageRecord, Store, TtlIndex};
use crate::error::StoreError;
use crate::index::{MessageIndex, Slot};
use crate::traits::{ConsumerStore, DurableCallback, StreamStore};
use crate::types::StoredMessage;

use block::{block_path, index_path, Block};
use creation::create_dir_unsynced;
use durability::Pipeline;
use high_water::{HighWater, Marks};
use lock::DirectoryLock;
use read_cache::ReadCache;
use record::{
    encode_block_header, encode_record, erase_record_in_place, Compressor, DeleteEntry, RecordKind,
    BLOCK_HEADER_LEN,
};

pub use consumer::{ConsumerRecoveryReport, ConsumerRemoval, FileConsumerStore};
use creation::sync_paths;
pub use creation::CreationSync;
pub use recovery::RecoveryReport;
pub use removal::{is_trash, remove_dir_soon, remove_leftover};

const META_FILE: &str = "meta.bin";
const CONSUMERS_DIR: &str = "consumers";
const MAX_BLOCK_SIZE: u64 = 1 << 30;

/// A stream store kept in a directory.
pub type FileStore = Store<FileBackend>;

/// Block files of a [`FileStore`].
#[doc(hidden)]
#[derive(Debug)]
pub struct FileBackend {
    dir: PathBuf,
    options: FileStoreOptions,
    /// Sorted by `first_seq`; the last one is the active (appended) block.
    blocks: Vec<Block>,
    write_buffer: Vec<u8>,
    next_block_id: u64,
    last_sync: Instant,
    dir_needs_sync: bool,
    /// Ids of sealed blocks that lost messages since the last maintenance pass.
    maintenance: BTreeSet<u64>,
    metadata: Vec<u8>,
    report: RecoveryReport,
    /// Held from open until close, delete or drop.
    lock: Option<DirectoryLock>,
    /// `SyncPolicy::Always` with [`StreamStore::flush_then`]: the active block's fsyncs.
    pipeline: Arc<Pipeline>,
    /// Stream `compression: s2` (made on first use: most stores never compress).
    compressor: Option<Box<Compressor>>,
    /// Read-ahead for sequential readers (`read_cache.rs`); boxed: a store value stays small.
    read_cache: Box<ReadCache>,
    /// Flags records appended to the active block may carry (`record.rs`: CRC-32C in
    /// `NSBLK002` blocks and later, the short form in `NSBLK003` blocks and later, the compact
    /// form in `NSBLK004` blocks).
    record_flags: u8,
    /// The first and last sequence handed out, kept apart from the blocks (`high_water.rs`);
    /// boxed: a store value stays small.
    high_water: Box<HighWater>,
    /// A store created with `defer_creation_sync`: what must be fsynced before its creation is
    /// confirmed or the first acknowledgement relying on it (`creation.rs`).
    creation: Option<Arc<CreationSync>>,
}

impl Store<FileBackend> {
    /// Open the store in `dir`, creating the directory when missing, recovering it otherwise.
    /// Damage found on the way is repaired where possible and described by [`FileStore::recovery_report`].
    pub fn open(
        dir: impl AsRef<Path>,
        config: StreamStoreConfig,
        mut options: FileStoreOptions,
    ) -> Result<FileStore, StoreError> {
        options.block_size = options
            .block_size
            .clamp(BLOCK_HEADER_LEN as u64 + 1, MAX_BLOCK_SIZE);
        // A spare (a deleted store's directory made ready, `spares.rs`) holds durable files
        // already: only the directories are left to sync.
        let mut from_spare = false;
        let created_dirs = if !options.defer_creation_sync {
            create_dir_durably(dir.as_ref())?;
            Default::default()
        } else if let Some(created) = (!dir.as_ref().exists())
            .then(|| spares::take(dir.as_ref()))
            .flatten()
        {
            from_spare = true;
            created
        } else {
            let created = create_dir_unsynced(dir.as_ref())?;
            // The next stream directories beside this one go where the disk has room
            // (`placement.rs`); this one is made already.
            if let (false, Some(parent)) = (created.is_empty(), dir.as_ref().parent()) {
                placement::spread_children(parent);
            }
            created
        };
        let creating = !created_dirs.is_empty();
        // The lock is taken on the mark file's descriptor (`lock.rs`), before recovery:
        // recovery truncates and rewrites files another opener may be using. What the open read
        // is kept only once the lock is held (the holder writes the marks under it).
        let opened = HighWater::open(dir.as_ref(), !creating)?;
        let lock = DirectoryLock::acquire(dir.as_ref(), opened.high_water.file())?;
        let recovered = recovery::recover(dir.as_ref(), &options, !creating)?;
        // The files first, then each directory from the new one up to the root.
        let creation = creating.then(|| {
            let mut paths: Vec<PathBuf> = Vec::new();
            if !from_spare {
                paths.extend(
                    recovered
                        .blocks
                        .iter()
                        .map(|block| block_path(dir.as_ref(), block.id)),
                );
                paths.push(opened.high_water.path().to_path_buf());
            }
            paths.extend(created_dirs.new);
            CreationSync::with_ancestors(paths, created_dirs.ancestors, None)
        });
        let backend = FileBackend {
            dir: dir.as_ref().to_path_buf(),
            options,
            blocks: recovered.blocks,
            write_buffer: Vec::new(),
            next_block_id: recovered.next_block_id,
            last_sync: Instant::now(),
            dir_needs_sync: false,
            maintenance: BTreeSet::new(),
            metadata: recovered.metadata,
            report: recovered.report,
            lock: Some(lock),
            pipeline: Pipeline::new(),
            compressor: None,
            read_cache: Box::default(),
            record_flags: 0,
            high_water: Box::new(opened.high_water),
            creation,
        };
        let mut store = Store::from_parts(config.clone(), recovered.index, recovered.ttls, backend);
        store.backend.record_flags = store.backend.active_block_record_flags()?;
        store.backend.maintenance = store.backend.blocks.iter().map(|b| b.id).collect();
        if opened.damaged {
            store
                .backend
                .report
                .problems
                .push("sequence high-water mark damaged, blocks trusted alone".into());
        }
        if let Some(marks) = opened.recorded {
            store.restore_high_water(marks)?;
        }
        // Limits may have been tightened while the store was closed.
        store.update_config(config)?;
        Ok(store)
    }

    /// Read the owner's blob of the store in `dir` without opening it (stream recovery scans).
    pub fn read_metadata(dir: impl AsRef<Path>) -> Result<Option<Vec<u8>>, StoreError> {
        recovery::read_metadata(dir.as_ref())
    }

    /// What recovery found and repaired when this store was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.backend.report
    }

    /// Give up the store the way a killed process would: nothing more is written (buffered
    /// records not yet flushed are lost, delete logs stay as they are), only the directory lock
    /// is released so the directory can be opened again. For crash tests and figures.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        // As if the kill came after the background index writes (a real SIGKILL may come
        // before: the crash tests cover that); keeps "only the active block is scanned" exact.
        for block in &mut self.backend.blocks {
            let _ = block.finish_index_job();
        }
        self.backend.lock = None;
        std::mem::forget(self);
    }

    /// Number of block files (for tests and figures).
    pub fn block_count(&self) -> usize {
        self.backend.blocks.len()
    }

    /// After recovery: the blocks may end before the last sequence handed out, or hold messages
    /// below the first (data lost or damaged from outside). The stream continues after the
    /// recorded last sequence (a skip record makes that durable in the blocks too) and drops
    /// what sits below the recorded first, so no acknowledged sequence is handed out twice and
    /// no purged message comes back.
    fn restore_high_water(&mut self, marks: Marks) -> Result<(), StoreError> {
        let mut repaired = false;
        let last = self.index.last_seq();
        if marks.last_seq > last {
            self.backend.report.problems.push(format!(
                "blocks end at sequence {last} but sequence {} was handed out: {} lost, \
                 the stream continues after {}",
                marks.last_seq,
                marks.last_seq - last,
                marks.last_seq
            ));
            self.skip_msgs(last + 1, marks.last_seq - last)?;
            let timestamp = self.index.last_timestamp().max(marks.last_timestamp);
            self.index.set_last_timestamp(timestamp);
            repaired = true;
        }
        let first = self.index.first_seq();
        if marks.first_seq > first && self.index.msgs() > 0 {
            self.backend.report.problems.push(format!(
                "messages from sequence {first} found below the first sequence {}: dropped",
                marks.first_seq
            ));
            self.compact(marks.first_seq)?;
            repaired = true;
        }
        if repaired {
            self.backend.flush(&mut self.index, &self.ttls, true)?;
        }
        Ok(())
    }
}

impl Drop for FileBackend {
    fn drop(&mut self) {
        // A store dropped without close still hands its buffered records to the OS.
        let _ = self.write_buffer_out();
        let dir = self.dir.clone();
        for block in &mut self.blocks {
            let _ = block.write_deletes(&dir);
            // Done before the directory lock goes: a reopen must not race a background write.
            let _ = block.finish_index_job();
        }
    }
}

/// Write `bytes` to `path` atomically: temporary file, optional fsync, rename, optional dir fsync.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], sync: bool) -> Result<(), StoreError> {
    let temporary = path.with_extension("tmp");
    let written = File::create(&temporary).and_then(|mut file| {
        std::io::Write::write_all(&mut file, bytes)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    });
    if let Err(error) = written {
        // A full disk must not keep the partial copy: it holds space and nothing else.
        let _ = fs::remove_file(&temporary);
        return Err(StoreError::io(&temporary)(error));
    }
    fs::rename(&temporary, path).map_err(StoreError::io(path))?;
    if sync {
        if let Some(parent) = path.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Create `dir` (and missing parents) so that it survives a power loss: a new directory's name
/// is durable only once its parent is synced, so every ancestor is synced, up to the root (the
/// parents may themselves be new and unsynced: the server creates `jetstream/$G/streams` with
/// plain `mkdir`). Once per stream.
pub(crate) fn create_dir_durably(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(StoreError::io(dir))?;
    let mut current = Some(dir);
    while let Some(directory) = current {
        sync_dir(directory)?;
        current = directory
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty());
    }
    Ok(())
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(StoreError::io(dir))
}

/// nats-server's fileStoreMsgSize: what a file-stored message counts towards `bytes`.
pub(crate) fn file_message_size(subject_len: usize, headers_len: usize, payload_len: usize) -> u64 {
    if headers_len == 0 {
        (22 + subject_len + payload_len + 8) as u64
    } else {
        (22 + subject_len + 4 + headers_len + payload_len + 8) as u64
    }
}

pub(crate) fn create_block_file(dir: &Path, id: u64, first_seq: u64) -> Result<File, StoreError> {
    let path = block_path(dir, id);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(StoreError::io(&path))?;
    if let Err(error) = std::io::Write::write_all(&mut file, &encode_block_header(first_seq)) {
        // No empty or torn block file stays behind (a full disk): the store goes on without it.
        drop(file);
        let _ = fs::remove_file(&path);
        return Err(StoreError::io(&path)(error));
    }
    Ok(file)
}

/// The high-water marks of the index as it is now.
fn marks_of(index: &MessageIndex) -> Marks {
    Marks {
        first_seq: index.first_seq(),
        last_seq: index.last_seq(),
        last_timestamp: index.last_timestamp(),
    }
}

/// The active (last) block.
fn last_block(blocks: &mut [Block]) -> Result<&mut Block, StoreError> {
    blocks
        .last_mut()
        .ok_or_else(|| StoreError::Corrupt("file store has no active block".into()))
}

impl FileBackend {
    fn active(&mut self) -> Result<&mut Block, StoreError> {
        last_block(&mut self.blocks)
    }

    fn block_position(&self, seq: u64) -> Option<usize> {
        let position = self.blocks.partition_point(|block| block.first_seq <= seq);
        position.checked_sub(1)
    }
}

impl Backend for FileBackend {
    fn message_size(&self, subject_len: usize, headers_len: usize, payload_len: usize) -> u64 {
        file_message_size(subject_len, headers_len, payload_len)
    }

    fn append(&mut self, record: &MessageRecord<'_>) -> Result<(u32, u32), StoreError> {
        if record.compression == Compression::S2 {
            return self.append_compressed(record);
        }
        let (location, flags, len, base) = self.reserve(
            record.seq,
            (0, record.ttl_nanos, record.headers.len()),
            |flags| {
                record::record_len(
                    flags,
                    record.subject.len(),
                    record.headers.len(),
                    record.payload.len(),
                )
            },
        )?;
        let record_len = u32::try_from(len).map_err(|_| StoreError::MaxMessageSize)?;
        encode_record(
            &mut self.write_buffer,
            RecordKind::Message,
            flags,
            base,
            record.seq,
            record.timestamp,
            record.ttl_nanos,
            record.subject.as_bytes(),
            record.headers,
            record.payload,
        );
        self.appended(record.seq, record_len)?;
        Ok((location, record_len))
    }

    fn append_skip(&mut self, seq: u64, count: u64) -> Result<(), StoreError> {
        let aux = i64::try_from(count).unwrap_or(i64::MAX);
        let (_, flags, _, base) =
            self.reserve(seq, (0, aux, 0), |flags| record::record_len(flags, 0, 0, 0))?;
        encode_record(
            &mut self.write_buffer,
            RecordKind::Skip,
            flags,
            base,
            seq,
            0,
            aux,
            b"",
            b"",
            b"",
        );
        self.after_append(seq + count - 1)
    }

    fn read(&mut self, seq: u64, slot: &Slot, subject: &str) -> Result<StoredMessage, StoreError> {
        self.read_message(seq, slot, subject)
    }

    fn removed(&mut self, seq: u64, slot: &Slot, erase: bool) -> Result<(), StoreError> {
        let Some(position) = self.block_position(seq) else {
            return Ok(());
        };
        let is_active = position + 1 == self.blocks.len();
        let dir = self.dir.clone();
        let block = &mut self.blocks[position];
        block.live_msgs = block.live_msgs.saturating_sub(1);
        block.live_record_bytes = block
            .live_record_bytes
            .saturating_sub(u64::from(slot.record_len));
        if seq >= block.floor {
            block.record_delete(DeleteEntry::Sequence(seq));
        }
        if erase {
            let location = u64::from(slot.location);
            let len = slot.record_len as usize;
            if is_active && location >= block.written_len {
                let start = (location - block.written_len) as usize;
                if let Some(record) = self.write_buffer.get_mut(start..start + len) {
                    erase_record_in_place(record, block.first_seq)?;
                }
            } else {
                let mut record = vec![0u8; len];
                block.read_at(&dir, location, &mut record)?;
                erase_record_in_place(&mut record, block.first_seq)?;
                block.write_at(&dir, location, &record)?;
                self.read_cache.clear();
            }
        }
        if !is_active {
            let id = block.id;
            self.maintenance.insert(id);
        }
        Ok(())
    }

    fn floor(&mut self, first_seq: u64, index: &MessageIndex) -> Result<(), StoreError> {
        let buffered = !self.write_buffer.is_empty();
        let active_below = self.blocks.last().is_some_and(|active| {
            let already_fresh = active.first_seq == first_seq
                && active.written_len == BLOCK_HEADER_LEN as u64
                && !buffered;
            active.last_seq < first_seq && !already_fresh
        });
        if active_below {
            // Everything goes: a fresh active block records where the sequence continues.
            self.write_buffer.clear();
            self.rotate(first_seq)?;
            if let Some(active) = self.blocks.last_mut() {
                active
                    .file
                    .get()
                    .and_then(|file| file.sync_all())
                    .map_err(StoreError::io(&self.dir))?;
                active.data_needs_sync = false;
            }
            sync_dir(&self.dir)?;
            // Purged to empty: only the fresh block and this mark say where the stream goes on.
            self.high_water.record(marks_of(index))?;
            self.high_water.sync()?;
        }
        let position = 0;
        while position + 1 < self.blocks.len() {
            if self.blocks[position].last_seq < first_seq {
                self.remove_block(position)?;
                continue;
            }
            break;
        }
        if let Some(block) = self.blocks.first_mut() {
            if block.first_seq < first_seq && block.last_seq >= first_seq {
                block.floor = first_seq;
                block.record_delete(DeleteEntry::Floor(first_seq));
                let (live_msgs, live_bytes) = index
                    .live_range(block.first_seq, block.last_seq)
                    .fold((0u64, 0u64), |(msgs, bytes), (_, slot)| {
                        (msgs + 1, bytes + u64::from(slot.record_len))
                    });
                block.live_msgs = live_msgs;
                block.live_record_bytes = live_bytes;
                let id = block.id;
                self.maintenance.insert(id);
            }
        }
        Ok(())
    }

    fn flush(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
        force_sync: bool,
    ) -> Result<(), StoreError> {
        self.flush_all(index, ttls, force_sync, None)
    }

    fn flush_then(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
        on_durable: DurableCallback,
    ) -> Result<(), StoreError> {
        self.flush_all(index, ttls, false, Some(on_durable))
    }

    fn close(&mut self, index: &MessageIndex, ttls: &TtlIndex) -> Result<(), StoreError> {
        // The index snapshot: every block, the active one included, gets an index file matching
        // its final length, so the next open reads no block data.
        // Sealed blocks keep a valid index until they are rewritten; only the rest need one.
        for block in &mut self.blocks {
            block.finish_index_job()?;
        }
        let last = self.blocks.len().saturating_sub(1);
        let mut written = Vec::new();
        for position in 0..self.blocks.len() {
            if position == last || self.blocks[position].needs_index {
                self.write_block_index(position, index, ttls, false)?;
                written.push(index_path(&self.dir, self.blocks[position].id));
            }
        }
        for path in written {
            File::open(&path)
                .and_then(|file| file.sync_all())
                .map_err(StoreError::io(&path))?;
        }
        self.high_water.record(marks_of(index))?;
        self.high_water.sync()?;
        sync_dir(&self.dir)?;
        // Closed: the directory is consistent on disk and may be opened again.
        self.lock = None;
        Ok(())
    }

    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        // A creation not yet durable: the metadata joins what its sync covers.
        match creation::pending(&self.creation) {
            Some(creation) => {
                let path = recovery::write_metadata(&self.dir, blob, false)?;
                if !creation.defer(path.clone()) {
                    // Made durable meanwhile: this file on its own.
                    sync_paths(&[path, self.dir.clone()])?;
                }
            }
            None => {
                recovery::write_metadata(&self.dir, blob, true)?;
            }
        }
        self.metadata = blob.to_vec();
        Ok(())
    }

    fn metadata(&self) -> &[u8] {
        &self.metadata
    }

    fn pending_creation(&self) -> Option<Arc<CreationSync>> {
        creation::pending(&self.creation)
    }

    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        let mut store = FileConsumerStore::open(
            &self.dir.join(CONSUMERS_DIR),
            name,
            self.options.sync == SyncPolicy::Always,
        )?;
        store.defer_creation_sync = self.options.defer_creation_sync;
        // A consumer's creation is durable only with its stream's.
        store.stream_creation = creation::pending(&self.creation);
        Ok(Box::new(store))
    }

    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        consumer::list_consumers(&self.dir.join(CONSUMERS_DIR))
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.pipeline.fail(&StoreError::Closed, self.dir.clone());
        self.read_cache.clear();
        for block in &mut self.blocks {
            // Whatever it reports concerns files about to be deleted.
            let _ = block.finish_index_job();
        }
        self.blocks.clear();
        self.write_buffer.clear();
        self.lock = None;
        // Renamed away now, its files unlinked (or kept for the next creation beside it,
        // `spares.rs`) in the background (`removal.rs`).
        removal::recycle_dir_soon(&self.dir)
    }
}

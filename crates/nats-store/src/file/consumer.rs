//! FileConsumerStore: one consumer's persisted state under `consumers/<name>/`.
//!
//! - `config.bin`: the config blob (the server's JSON), written when set; fsynced only with
//!   `SyncPolicy::Always` (nats-server writes consumer meta the same way).
//! - `state.bin`: a snapshot of the whole state with a generation number and a CRC ([`snapshot`]).
//! - `state.log`: what changed since that snapshot, one CRC'd frame per flush ([`log`]), so a flush
//!   costs what changed, not the number of pending messages. When the log grows past the size of
//!   the state it is compacted: a new snapshot (next generation) replaces the old one, then the
//!   log restarts empty under the new generation. A crash between the two leaves a log naming an
//!   older generation, which open ignores (the snapshot already holds it).
//!
//! Open replays the log over the snapshot, cuts a torn or damaged tail (keeping every intact frame
//! before it) and reports what it cut; it never panics on file contents. A damaged snapshot is not
//! trusted for pending messages: the state falls back to "everything above the ack floor is
//! delivered again" (at-least-once), never to "acked".
//!
//! With `SyncPolicy::Always`, `flush_then` writes the frame and leaves its fdatasync to the
//! store's sync threads (`durability.rs`, this consumer's own pipeline over its log file): the
//! consumer's task goes on while the disk works, and the callback (the confirmed acks' replies)
//! runs once the frame is durable. Snapshots and a new log's first frame (rare: compactions) are
//! still synced inline, with their directory.
//!
//! Called by the stream's `FileStore::consumer_store`; the JetStream consumer task drives it.

mod log;
mod removal;
mod snapshot;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::consumer::{ConsumerState, SequencePair};
use crate::error::StoreError;
use crate::traits::{ConsumerStore, DurableCallback};

use super::creation::{self, CreationSync};
use super::durability::Pipeline;
use super::{sync_dir, write_atomic};
pub use removal::ConsumerRemoval;

const STATE_FILE: &str = "state.bin";
const LOG_FILE: &str = "state.log";
const CONFIG_FILE: &str = "config.bin";
/// The log is compacted once it is larger than this and than the snapshot it continues.
const MIN_COMPACTION_BYTES: u64 = 64 * 1024;

/// What opening a consumer's files found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerRecoveryReport {
    /// Log frames replayed over the snapshot.
    pub frames: u64,
    /// Bytes cut from the end of the log (a torn write or damage and everything after it).
    pub truncated_bytes: u64,
    /// The snapshot could not be read: pending messages above the ack floor will be delivered again.
    pub snapshot_damaged: bool,
    /// Human-readable description of each problem met.
    pub problems: Vec<String>,
}

/// A consumer's persisted state inside its stream's directory.
#[derive(Debug)]
pub struct FileConsumerStore {
    dir: PathBuf,
    consumers_dir: PathBuf,
    sync: bool,
    config: Vec<u8>,
    state: ConsumerState,
    /// Generation of `state.bin`; the log continues it when its header names the same.
    generation: u64,
    /// Bytes of the log that are valid for this generation; 0 when it must be started afresh.
    log_len: u64,
    /// Stream sequences whose entries changed since the last flush (may repeat).
    changed: Vec<u64>,
    floors_changed: bool,
    /// The next flush writes a snapshot instead of a log frame.
    rewrite: bool,
    /// Reused frame buffer.
    frame: Vec<u8>,
    /// The consumer's directory was created by this open and its entry not yet synced.
    dir_entry_unsynced: bool,
    /// The same for `consumers/` itself (the stream's first consumer).
    consumers_dir_entry_unsynced: bool,
    deleted: bool,
    /// Shared with the owner ([`ConsumerStore::removal`]): once it has removed the files, this
    /// store writes nothing more by path (`consumer/removal.rs`).
    removal: Arc<ConsumerRemoval>,
    report: ConsumerRecoveryReport,
    /// The log, open for appending (dropped when a compaction removes it).
    log_file: Option<Arc<File>>,
    /// `SyncPolicy::Always` with `flush_then`: the log's fsyncs, run on the sync threads.
    pipeline: Arc<Pipeline>,
    /// A frame was handed to the pipeline and no inline sync has covered it yet.
    log_unsynced: bool,
    /// The stream store's `defer_creation_sync`: a new consumer's first config is written
    /// without fsync and what must be synced waits in `creation` (`creation.rs`).
    pub(super) defer_creation_sync: bool,
    /// The stream's own creation, when it was not yet durable as this store opened: a
    /// prerequisite of this consumer's.
    pub(super) stream_creation: Option<Arc<CreationSync>>,
    creation: Option<Arc<CreationSync>>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && name.len() <= 255
}

/// Consumer directories present under `consumers_dir`.
pub(crate) fn list_consumers(consumers_dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(consumers_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(StoreError::io(consumers_dir)(error)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(StoreError::io(consumers_dir))?;
        if entry.path().is_dir() {
            if let Some(name) = entry.file_name().to_str() {
                if super::removal::is_trash(name) {
                    // A deleted consumer a crash left behind: removed now, never listed.
                    super::removal::remove_leftover(entry.path());
                } else {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The whole file, or `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StoreError::io(path)(error)),
    }
}

impl FileConsumerStore {
    /// Open (or create) the store of consumer `name` under `consumers_dir`. `sync` is the stream's
    /// `SyncPolicy::Always`: every flush and config write is fsynced before it returns.
    pub fn open(consumers_dir: &Path, name: &str, sync: bool) -> Result<Self, StoreError> {
        if !valid_name(name) {
            return Err(StoreError::InvalidName(name.to_string()));
        }
        let dir = consumers_dir.join(name);
        let mut consumers_dir_created = false;
        let created = match fs::create_dir(&dir) {
            Ok(()) => true,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(&dir).map_err(StoreError::io(&dir))?;
                consumers_dir_created = true;
                true
            }
            Err(error) => return Err(StoreError::io(&dir)(error)),
        };
        let mut store = FileConsumerStore {
            config: read_optional(&dir.join(CONFIG_FILE))?.unwrap_or_default(),
            removal: Arc::new(ConsumerRemoval::new(dir.clone())),
            dir,
            consumers_dir: consumers_dir.to_path_buf(),
            sync,
            state: ConsumerState::default(),
            generation: 0,
            log_len: 0,
            changed: Vec::new(),
            floors_changed: false,
            rewrite: false,
            frame: Vec::new(),
            dir_entry_unsynced: created,
            consumers_dir_entry_unsynced: consumers_dir_created,
            deleted: false,
            report: ConsumerRecoveryReport::default(),
            log_file: None,
            pipeline: Pipeline::new(),
            log_unsynced: false,
            defer_creation_sync: false,
            stream_creation: None,
            creation: None,
        };
        if !created {
            store.recover()?;
        }
        Ok(store)
    }

    /// Write the whole state as a snapshot now and restart the log (what a flush does once the
    /// log outgrows the state): the next open reads no log.
    pub fn write_snapshot(&mut self) -> Result<(), StoreError> {
        self.rewrite = true;
        self.flush()
    }

    /// What open found (damage cut, frames replayed).
    pub fn recovery_report(&self) -> &ConsumerRecoveryReport {
        &self.report
    }

    fn recover(&mut self) -> Result<(), StoreError> {
        let snapshot_path = self.dir.join(STATE_FILE);
        let mut snapshot_generation = None;
        if let Some(bytes) = read_optional(&snapshot_path)? {
            match snapshot::decode(&bytes) {
                Ok((state, generation)) => {
                    self.state = state;
                    self.generation = generation;
                    snapshot_generation = Some(generation);
                }
                Err(problem) => {
                    self.report.snapshot_damaged = true;
                    self.report.problems.push(problem);
                }
            }
        } else {
            snapshot_generation = Some(0);
        }
        let log_path = self.dir.join(LOG_FILE);
        if let Some(bytes) = read_optional(&log_path)? {
            self.recover_log(&log_path, &bytes, snapshot_generation)?;
        }
        if self.report.snapshot_damaged {
            // Entries the snapshot held are unknown: only the ack floor is certain (it never
            // covers an unacked message), so everything above it is delivered again.
            self.state.delivered = self.state.ack_floor;
            self.state.pending.clear();
            self.state.redelivered.clear();
            self.rewrite = true;
        }
        Ok(())
    }

    fn recover_log(
        &mut self,
        log_path: &Path,
        bytes: &[u8],
        snapshot_generation: Option<u64>,
    ) -> Result<(), StoreError> {
        let Some(log_generation) = log::decode_header(bytes) else {
            // A log whose creation was interrupted holds nothing confirmed; anything longer than
            // a header is damage.
            if bytes.len() as u64 > log::HEADER_LEN {
                self.report.problems.push(format!(
                    "consumer state log: damaged header; {} bytes ignored",
                    bytes.len()
                ));
                self.report.truncated_bytes += bytes.len() as u64;
            }
            return Ok(());
        };
        match snapshot_generation {
            // Compaction wrote the snapshot and stopped before restarting the log: stale.
            Some(generation) if log_generation < generation => return Ok(()),
            Some(generation) if log_generation > generation => {
                self.report.snapshot_damaged = true;
                self.report.problems.push(format!(
                    "consumer state log continues snapshot generation {log_generation} but the snapshot is generation {generation}"
                ));
            }
            _ => {}
        }
        self.generation = log_generation;
        let replay = log::replay(bytes, &mut self.state);
        self.report.frames = replay.frames;
        self.log_len = replay.valid_len;
        if let Some(problem) = replay.problem {
            self.report.truncated_bytes += bytes.len() as u64 - replay.valid_len;
            self.report.problems.push(if replay.torn_tail {
                format!("{problem} (torn tail)")
            } else {
                problem
            });
            OpenOptions::new()
                .write(true)
                .open(log_path)
                .and_then(|file| file.set_len(replay.valid_len))
                .map_err(StoreError::io(log_path))?;
        }
        Ok(())
    }

    /// Make the directory entry of a newly created consumer durable, whatever the sync policy:
    /// like the stream's own metadata, a consumer the server confirmed must survive a power
    /// loss (with interval sync a cut before the first interval took the consumer whole).
    /// `SyncPolicy::Always`: state written durably relies on the consumer's (and its stream's)
    /// files and names; a creation still pending is synced first, here, once.
    fn sync_pending_creation(&self) -> Result<(), StoreError> {
        match self.pending_creation().filter(|_| self.sync) {
            Some(creation) => creation.run(),
            None => Ok(()),
        }
    }

    fn sync_new_dir(&mut self) -> Result<(), StoreError> {
        if self.dir_entry_unsynced {
            sync_dir(&self.consumers_dir)?;
        }
        if self.consumers_dir_entry_unsynced {
            if let Some(stream_dir) = self.consumers_dir.parent() {
                sync_dir(stream_dir)?;
            }
        }
        self.dir_entry_unsynced = false;
        self.consumers_dir_entry_unsynced = false;
        Ok(())
    }

    fn snapshot_estimate(&self) -> u64 {
        64 + 24 * self.state.pending.len() as u64 + 16 * self.state.redelivered.len() as u64
    }

    fn has_changes(&self) -> bool {
        self.rewrite || self.floors_changed || !self.changed.is_empty()
    }

    /// Note a change set; one too large for a log frame to pay off becomes a snapshot.
    fn note_changed(&mut self) {
        if self.changed.len() > 2 * self.state.entry_count() + 1024 {
            self.changed.clear();
            self.rewrite = true;
        }
    }

    /// Write what changed: a log frame, or a snapshot once the log outgrew the state. With
    /// `SyncPolicy::Always` the write is fsynced before it returns, except a frame appended to
    /// an existing log when `defer_sync`: that log file is returned, for the caller to sync.
    fn write_changes(&mut self, defer_sync: bool) -> Result<Option<Arc<File>>, StoreError> {
        self.sync_new_dir()?;
        let threshold = self.snapshot_estimate().max(MIN_COMPACTION_BYTES);
        let unsynced = if self.rewrite || self.log_len > threshold {
            self.compact()?;
            None
        } else {
            self.append_frame(defer_sync)?
        };
        self.changed.clear();
        self.floors_changed = false;
        self.rewrite = false;
        Ok(unsynced)
    }

    fn append_frame(&mut self, defer_sync: bool) -> Result<Option<Arc<File>>, StoreError> {
        self.changed.sort_unstable();
        self.changed.dedup();
        self.frame.clear();
        let starts_log = self.log_len == 0;
        if starts_log {
            self.frame
                .extend_from_slice(&log::encode_header(self.generation));
        }
        log::encode_frame(&self.state, &self.changed, &mut self.frame);
        let path = self.dir.join(LOG_FILE);
        let file = match &self.log_file {
            Some(file) if !starts_log => file.clone(),
            _ => Arc::new(
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(starts_log)
                    .open(&path)
                    .map_err(StoreError::io(&path))?,
            ),
        };
        self.log_file = Some(file.clone());
        if let Err(error) = file.write_all_at(&self.frame, self.log_len) {
            // A partial frame would hide every later one from replay: cut it.
            let _ = file.set_len(self.log_len);
            return Err(StoreError::io(&path)(error));
        }
        self.log_len += self.frame.len() as u64;
        if !self.sync {
            return Ok(None);
        }
        if defer_sync && !starts_log {
            return Ok(Some(file));
        }
        // A new log's name is durable only with its directory: both synced here (rare).
        file.sync_data().map_err(StoreError::io(&path))?;
        if starts_log {
            sync_dir(&self.dir)?;
        }
        Ok(None)
    }

    /// Write the whole state as the next generation's snapshot and restart the log.
    fn compact(&mut self) -> Result<(), StoreError> {
        let next = self.generation + 1;
        write_atomic(
            &self.dir.join(STATE_FILE),
            &snapshot::encode(&self.state, next),
            self.sync,
        )?;
        self.generation = next;
        // The old log now names an older generation and is ignored; the next frame restarts it.
        self.log_len = 0;
        self.log_file = None;
        let path = self.dir.join(LOG_FILE);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io(&path)(error)),
        }
        Ok(())
    }
}

impl ConsumerStore for FileConsumerStore {
    fn set_config(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        let removal = self.removal.clone();
        let Some(_gate) = removal.open_gate() else {
            self.deleted = true;
            return Ok(());
        };
        let path = self.dir.join(CONFIG_FILE);
        if self.config.is_empty() && self.dir_entry_unsynced {
            // A new consumer: nothing to replace, so no temporary and rename. An interrupted write
            // leaves a config the server cannot parse, for a creation it never confirmed.
            let mut file = File::create(&path).map_err(StoreError::io(&path))?;
            file.write_all(blob).map_err(StoreError::io(&path))?;
            if self.defer_creation_sync {
                // The same files and directories, synced later (`creation.rs`), after the
                // stream's own creation when that is still pending.
                let mut paths = vec![path, self.dir.clone(), self.consumers_dir.clone()];
                if self.consumers_dir_entry_unsynced {
                    if let Some(stream_dir) = self.consumers_dir.parent() {
                        paths.push(stream_dir.to_path_buf());
                    }
                }
                self.creation = Some(CreationSync::new(paths, self.stream_creation.take()));
                self.dir_entry_unsynced = false;
                self.consumers_dir_entry_unsynced = false;
                self.config = blob.to_vec();
                return Ok(());
            }
            // Config changes are rare (create, update): always durable, as stream metadata is.
            file.sync_data().map_err(StoreError::io(&path))?;
            sync_dir(&self.dir)?;
        } else {
            write_atomic(&path, blob, true)?;
        }
        self.sync_new_dir()?;
        self.config = blob.to_vec();
        Ok(())
    }

    fn pending_creation(&self) -> Option<Arc<CreationSync>> {
        creation::pending(&self.creation).or_else(|| creation::pending(&self.stream_creation))
    }

    fn config(&self) -> Vec<u8> {
        self.config.clone()
    }

    fn update_delivered(
        &mut self,
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
    ) -> Result<(), StoreError> {
        self.state
            .apply_delivered(consumer_seq, stream_seq, delivery_count, timestamp);
        self.changed.push(stream_seq);
        self.floors_changed = true;
        self.note_changed();
        Ok(())
    }

    fn update_acks(&mut self, consumer_seq: u64, stream_seq: u64) -> Result<(), StoreError> {
        self.state.apply_ack(consumer_seq, stream_seq);
        self.changed.push(stream_seq);
        self.floors_changed = true;
        self.note_changed();
        Ok(())
    }

    fn set_state(&mut self, state: ConsumerState) -> Result<(), StoreError> {
        self.state.changed_sequences(&state, &mut self.changed);
        self.floors_changed |=
            self.state.delivered != state.delivered || self.state.ack_floor != state.ack_floor;
        self.state = state;
        self.note_changed();
        Ok(())
    }

    fn update_state(&mut self, state: &ConsumerState, changed: &[u64]) -> Result<(), StoreError> {
        self.floors_changed |=
            self.state.delivered != state.delivered || self.state.ack_floor != state.ack_floor;
        self.state.copy_changes(state, changed);
        self.changed.extend_from_slice(changed);
        self.note_changed();
        Ok(())
    }

    fn recovery_problems(&self) -> Vec<String> {
        self.report.problems.clone()
    }

    fn state(&self) -> ConsumerState {
        self.state.clone()
    }

    fn delivered(&self) -> SequencePair {
        self.state.delivered
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        let removal = self.removal.clone();
        let gate = removal.open_gate();
        if gate.is_none() {
            self.deleted = true;
        }
        if self.deleted {
            return Ok(());
        }
        self.sync_pending_creation()?;
        if self.has_changes() {
            self.write_changes(false)?;
        } else if self.log_unsynced {
            // Frames `flush_then` left to the sync threads: made durable here, now.
            if let Some(file) = &self.log_file {
                let path = self.dir.join(LOG_FILE);
                file.sync_data().map_err(StoreError::io(&path))?;
            }
        } else {
            return Ok(());
        }
        if self.sync {
            // Synced inline, and the log's sync covers every frame before it.
            self.log_unsynced = false;
            self.pipeline.all_synced();
        }
        Ok(())
    }

    fn flush_then(&mut self, on_durable: DurableCallback) -> Result<(), StoreError> {
        if !self.sync || self.deleted {
            self.flush()?;
            on_durable(Ok(()));
            return Ok(());
        }
        let removal = self.removal.clone();
        let Some(_gate) = removal.open_gate() else {
            self.deleted = true;
            on_durable(Ok(()));
            return Ok(());
        };
        self.sync_pending_creation()?;
        if !self.has_changes() {
            // Nothing new, but what an earlier flush wrote may still be syncing.
            self.pipeline.after_pending(on_durable);
            return Ok(());
        }
        match self.write_changes(true)? {
            Some(file) => {
                self.log_unsynced = true;
                self.pipeline
                    .submit(vec![(file, self.dir.join(LOG_FILE))], on_durable)
            }
            None => {
                // A snapshot or a new log, synced inline: it holds everything before it.
                self.log_unsynced = false;
                self.pipeline.all_synced();
                self.pipeline.after_pending(on_durable);
            }
        }
        Ok(())
    }

    fn removal(&self) -> Option<Arc<ConsumerRemoval>> {
        Some(self.removal.clone())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.deleted = true;
        self.changed.clear();
        self.log_file = None;
        self.pipeline.fail(&StoreError::Closed, self.dir.clone());
        // Renamed away now (unless the owner did it already: the name may hold a new consumer
        // by now), its files unlinked in the background (`removal.rs`).
        self.removal.remove()
    }
}

//! openraft's `RaftLogStorage` on [`LogFile`], with group commit.
//!
//! `append` writes the records at once and queues openraft's `IOFlushed` callback; one flusher task
//! per group takes every queued callback, runs one `fdatasync` of the active segment on the
//! blocking pool, then completes the callbacks in append order. Appends that arrive while an fsync
//! runs wait for the next one, so concurrent appends share an fsync and no callback ever fires
//! before the data it stands for is on disk.
//!
//! A write refused for want of space (a full disk or quota) does not fail: openraft stops a
//! group for good on any storage error, and a node whose disk fills must instead stall that
//! group only until space returns. The write is tried again every [`FULL_RETRY`] meanwhile, the
//! log reads as stalled ([`Shared::stalled`]: the group refuses proposals with the reason), and
//! the group goes on by itself once a retry succeeds. A file-size limit (EFBIG) is waited out
//! the same way. A stalled leader hands its leadership over from outside its core, which the
//! retried write holds (`stall_handover.rs`); a stalled follower drops out of its leader's
//! quorum.

use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use openraft::storage::{IOFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogReader};
use tokio::sync::{mpsc, watch};

use crate::log_file::{LogFile, TornTail};
use crate::types::{Entry, LogId, TypeConfig, Vote};

/// Counters of one group's log, for tests and metrics.
#[derive(Debug, Default)]
pub(crate) struct LogCounters {
    pub(crate) append_calls: AtomicU64,
    pub(crate) entries_appended: AtomicU64,
    pub(crate) fsyncs: AtomicU64,
    pub(crate) metadata_writes: AtomicU64,
    pub(crate) metadata_write_micros: AtomicU64,
}

impl LogCounters {
    pub(crate) fn read(&self) -> crate::group::LogCounters {
        crate::group::LogCounters {
            append_calls: self.append_calls.load(Ordering::Relaxed),
            entries_appended: self.entries_appended.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            metadata_writes: self.metadata_writes.load(Ordering::Relaxed),
            metadata_write_micros: self.metadata_write_micros.load(Ordering::Relaxed),
        }
    }
}

/// How often a write refused for want of space is tried again.
const FULL_RETRY: Duration = Duration::from_millis(250);

/// Whether `error` says the disk (or the quota) is full, or a file is at a size limit (EFBIG,
/// which `LogFile::append` first meets with a new segment): such a write waits for space.
pub(crate) fn is_full(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge
    )
}

pub(crate) struct Shared {
    log: Mutex<LogFile>,
    /// The group's directory name, for the timeline (`timeline.rs`).
    label: String,
    pub(crate) counters: LogCounters,
    /// Set (with the operating system's reason) while a write waits for space.
    pub(crate) stalled: watch::Sender<Option<String>>,
}

impl Shared {
    /// The bytes of the log's segment files.
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().bytes()
    }

    /// A write was refused for want of space: the log is stalled until one succeeds.
    fn stall(&self, what: &str, error: &io::Error) {
        let reason = error.to_string();
        let first = self.stalled.send_if_modified(|stalled| {
            let first = stalled.is_none();
            *stalled = Some(reason.clone());
            first
        });
        if first {
            let directory = self.lock().directory().display().to_string();
            tracing::error!(%error, %directory, what, "raft log write refused for want of space; retrying until space returns");
        }
    }

    fn unstall(&self) {
        if self.stalled.send_replace(None).is_some() {
            let directory = self.lock().directory().display().to_string();
            tracing::info!(%directory, "raft log writes again");
        }
    }

    /// Saves `log`'s metadata (vote and commit index) durably, counted and timed.
    fn save_meta(&self, log: &mut LogFile) -> io::Result<()> {
        let started = std::time::Instant::now();
        let result = log.save_meta();
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.counters
            .metadata_writes
            .fetch_add(1, Ordering::Relaxed);
        self.counters
            .metadata_write_micros
            .fetch_add(micros, Ordering::Relaxed);
        result
    }

    fn lock(&self) -> MutexGuard<'_, LogFile> {
        // A panic while holding the lock leaves the in-memory log as it was at that point; the
        // files stay consistent with it (every write is followed by its bookkeeping).
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What opening the log found, for the group's commit-index protection.
#[derive(Debug, Clone)]
pub(crate) struct OpenReport {
    pub(crate) torn_tail: Option<TornTail>,
    pub(crate) last_index: Option<u64>,
    pub(crate) recorded_commit: Option<u64>,
}

/// The log store handed to openraft (moved into its core).
pub(crate) struct LogStore {
    shared: Arc<Shared>,
    flush_queue: mpsc::UnboundedSender<IOFlushed<TypeConfig>>,
}

/// A reader handed to openraft's replication tasks.
#[derive(Clone)]
pub(crate) struct LogStoreReader {
    shared: Arc<Shared>,
}

fn copy_error(error: &io::Error) -> io::Error {
    io::Error::new(error.kind(), error.to_string())
}

/// Runs `work` on the blocking pool; while it is refused for want of space ([`is_full`]), marks
/// the log stalled and runs it again every [`FULL_RETRY`]. Other errors are returned.
async fn until_stored<T, F>(shared: &Arc<Shared>, what: &'static str, work: F) -> io::Result<T>
where
    T: Send + 'static,
    F: Fn(&Shared) -> io::Result<T> + Send + Sync + 'static,
{
    let work = Arc::new(work);
    let mut stalled = false;
    loop {
        let (on, attempt) = (shared.clone(), work.clone());
        match run_blocking(move || attempt(&on)).await {
            Err(error) if is_full(&error) => {
                shared.stall(what, &error);
                stalled = true;
                tokio::time::sleep(FULL_RETRY).await;
            }
            result => {
                // Only the write that stalled the log unstalls it (an fsync of what was
                // written before succeeds on a full disk while an append still waits).
                if stalled && result.is_ok() {
                    shared.unstall();
                }
                return result;
            }
        }
    }
}

async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join_error| Err(io::Error::other(join_error.to_string())))
}

impl LogStore {
    /// Opens the log in `directory` and starts its flusher task.
    pub(crate) fn open(directory: &Path) -> io::Result<(LogStore, Arc<Shared>, OpenReport)> {
        let (log, torn_tail) = LogFile::open(directory)?;
        let report = OpenReport {
            torn_tail,
            last_index: log.last_log_id().map(|log_id| log_id.index),
            recorded_commit: log.meta.committed.as_ref().map(|log_id| log_id.index),
        };
        let label = directory
            .parent()
            .and_then(|parent| parent.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            log: Mutex::new(log),
            label,
            counters: LogCounters::default(),
            stalled: watch::channel(None).0,
        });
        let (flush_queue, receiver) = mpsc::unbounded_channel();
        tokio::spawn(flusher(shared.clone(), receiver));
        Ok((
            LogStore {
                shared: shared.clone(),
                flush_queue,
            },
            shared,
            report,
        ))
    }
}

impl LogStore {
    fn reader(&self) -> LogStoreReader {
        LogStoreReader {
            shared: self.shared.clone(),
        }
    }
}

async fn flusher(
    shared: Arc<Shared>,
    mut receiver: mpsc::UnboundedReceiver<IOFlushed<TypeConfig>>,
) {
    let mut batch = Vec::new();
    let mut hint_synced = std::time::Instant::now();
    while receiver.recv_many(&mut batch, 65_536).await > 0 {
        crate::timeline::step!(shared.label, "fsync callbacks={}", batch.len());
        let file = shared.lock().active_file();
        let started = std::time::Instant::now();
        let result = match file {
            Some(file) => until_stored(&shared, "fsync", move |_| file.sync_data()).await,
            None => Ok(()),
        };
        shared.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        crate::timeline::step!(shared.label, "fsynced us={}", started.elapsed().as_micros());
        if let Err(error) = &result {
            tracing::error!(%error, "raft log fsync failed");
        }
        for callback in batch.drain(..) {
            callback.io_completed(result.as_ref().map(|_| ()).map_err(copy_error));
        }
        sync_hint_aside(&shared, &mut hint_synced);
    }
}

/// A commit hint written since the last sync is synced after a log fsync at most this often.
const HINT_SYNC: Duration = Duration::from_secs(1);

/// After a log fsync: when a commit hint was written since the last sync and the last hint sync
/// is [`HINT_SYNC`] old, syncs it on a task aside (nobody waits for it). An idle group's last hint
/// is left to the kernel's writeback (or the next synced metadata write): no timer per group.
fn sync_hint_aside(shared: &Arc<Shared>, last: &mut std::time::Instant) {
    if last.elapsed() < HINT_SYNC {
        return;
    }
    let Some(file) = shared.lock().meta_record.hint_to_sync() else {
        return;
    };
    *last = std::time::Instant::now();
    let shared = shared.clone();
    tokio::spawn(async move {
        let synced = match file {
            Ok(file) => run_blocking(move || file.sync_data()).await,
            Err(error) => Err(error),
        };
        if let Err(error) = synced {
            tracing::warn!(%error, "raft commit hint not synced; tried again after a later fsync");
            shared.lock().meta_record.hint_not_synced();
        }
    });
}

impl RaftLogReader<TypeConfig> for LogStoreReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        self.shared.lock().range(range)
    }

    /// At most one append's worth ([`crate::network::APPEND_BYTES`]) for a follower: the rest
    /// would be read (from disk, past the cache) only to be cut off by the network.
    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry>, io::Error> {
        self.shared
            .lock()
            .range_limited(start, end, crate::network::APPEND_BYTES as u64)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.shared.lock().meta.vote)
    }
}

/// The store reads through a reader of its own log.
impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        self.reader().try_get_log_entries(range).await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        self.reader().read_vote().await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStoreReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let log = self.shared.lock();
        Ok(LogState {
            last_purged_log_id: log.meta.purged,
            last_log_id: log.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let vote = *vote;
        until_stored(&self.shared, "vote", move |shared| {
            let mut log = shared.lock();
            log.meta.vote = Some(vote);
            shared.save_meta(&mut log)
        })
        .await
    }

    /// Never lowers the recorded commit index: a node that lost part of its log keeps the higher
    /// mark until it has caught up past it (see the group's commit-index protection).
    ///
    /// openraft applies the commit only after this returns, so the hint (a write in place, no
    /// fsync: `meta_record.rs` says why that is safe and when it is synced) is written here, in
    /// the core's task, as an append's records are: a trip to the blocking pool for it put two
    /// thread wake-ups between every quorum's answer and the PubAcks. The record's first write,
    /// and a write refused for want of space, go through the blocking pool as before.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let new = committed.as_ref().map(|log_id| log_id.index);
        {
            let mut log = self.shared.lock();
            let recorded = log.meta.committed.as_ref().map(|log_id| log_id.index);
            if new <= recorded {
                return Ok(());
            }
            if log.meta_record.hint_in_place() {
                log.meta.committed = committed;
                match log.save_commit_hint() {
                    Err(error) if is_full(&error) => {}
                    written => return written,
                }
            }
        }
        until_stored(&self.shared, "commit", move |shared| {
            let mut log = shared.lock();
            let recorded = log.meta.committed.as_ref().map(|log_id| log_id.index);
            // Equal: the write in place above was refused; written again.
            if new < recorded {
                return Ok(());
            }
            log.meta.committed = committed;
            log.save_commit_hint()
        })
        .await
    }

    /// The recorded commit, clipped to the last entry on disk: entries up to a recorded commit are
    /// committed ones, so the clip is still true, and openraft can re-apply what the log has.
    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        let log = self.shared.lock();
        let recorded = log.meta.committed;
        let last = log.last_log_id();
        Ok(match (recorded, last) {
            (Some(recorded), Some(last)) if recorded.index > last.index => Some(last),
            (Some(_), None) => None,
            (recorded, _) => recorded,
        })
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut entries: Vec<Entry> = entries.into_iter().collect();
        let count = entries.len() as u64;
        let last_index = entries.last().map(|entry| entry.log_id.index);
        let mut stalled = false;
        loop {
            let result = {
                let mut log = self.shared.lock();
                let result = log.append(entries.iter().cloned());
                if result.is_err() {
                    // Written before the failure (a new segment was due): not again.
                    let last = log.last_log_id().map(|log_id| log_id.index);
                    entries.retain(|entry| Some(entry.log_id.index) > last);
                }
                result
            };
            match result {
                Ok(()) => {
                    if stalled {
                        self.shared.unstall();
                    }
                    break;
                }
                Err(error) if is_full(&error) => {
                    self.shared.stall("append", &error);
                    stalled = true;
                    tokio::time::sleep(FULL_RETRY).await;
                }
                Err(error) => return Err(error),
            }
        }
        crate::timeline::step!(
            self.shared.label,
            "append entries={count} last={last_index:?}"
        );
        let counters = &self.shared.counters;
        counters.append_calls.fetch_add(1, Ordering::Relaxed);
        counters
            .entries_appended
            .fetch_add(count, Ordering::Relaxed);
        if let Err(mpsc::error::SendError(callback)) = self.flush_queue.send(callback) {
            callback.io_completed(Err(io::Error::other("raft log flusher stopped")));
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        until_stored(&self.shared, "truncate", move |shared| {
            shared.lock().truncate_after(last_log_id.as_ref())
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        until_stored(&self.shared, "purge", move |shared| {
            shared.lock().purge(&log_id)
        })
        .await
    }
}

#[cfg(test)]
#[path = "log_store_tests.rs"]
mod tests;

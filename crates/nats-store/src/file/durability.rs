//! The pipelined group commit of `SyncPolicy::Always`: the FileStore hands "everything written
//! up to generation G is in the active block file" to a small pool of sync threads and returns at
//! once; a callback registered for G runs when an fdatasync that started after G was written has
//! finished. Callbacks run in registration order, each exactly once.
//!
//! Why threads and several syncs in flight: on the measured virtio disk one lone fdatasync costs
//! ~4 ms (the device idles between flushes), while with 2-4 flushes overlapping each completes in
//! ~0.3-0.7 ms (examples/sync_figures.rs and the report of issue 4). The stream's ingest task keeps
//! appending the next batch while earlier ones are being synced, so every flush covers whatever
//! was written while the previous ones ran (group commit), and no acknowledgement is released
//! before the sync that covers it.
//!
//! The same threads run other file work taken off a stream's thread ([`run_in_background`]: the
//! index file of a sealed block, `index_writer.rs`).
//!
//! Who calls it: only `file/`. It knows files and generations, nothing of records.
//! A failed fdatasync poisons the pipeline: after one, the kernel may have dropped the dirty
//! pages, so a later "successful" sync proves nothing. Every pending and later callback fails
//! until the store has rewritten what was not known durable and synced it inline
//! ([`Pipeline::recover`], from a forced flush).

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::{Condvar, Mutex};

use crate::error::StoreError;
use crate::traits::DurableCallback;

/// Sync threads shared by every store of the process (a store per stream must not cost threads):
/// at most this many fsyncs in flight. 4 measured best on the 2-vCPU test machine (2, 3, 8 and 16
/// were tried); `NATS_STORE_SYNC_THREADS` overrides it for measurements on other disks.
fn sync_threads() -> usize {
    std::env::var("NATS_STORE_SYNC_THREADS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(4)
}

/// One store's pipeline. Shared with the sync threads through an `Arc`.
pub(crate) struct Pipeline {
    state: Mutex<PipelineState>,
    /// Held while callbacks run, taken before popping them, so two sync threads finishing at
    /// once cannot interleave (acknowledgements leave in sequence order).
    delivery: Mutex<()>,
}

struct Claim {
    generation: u64,
    files: Vec<PathBuf>,
    finished: bool,
}

struct PipelineState {
    /// Files written since the last claimed sync, with their paths (for error messages).
    unclaimed: Vec<(Arc<File>, PathBuf)>,
    /// Highest generation whose bytes are written to `file` (or synced elsewhere).
    written: u64,
    /// Highest generation a started sync covers.
    claimed: u64,
    /// Highest generation known durable.
    durable: u64,
    /// Started syncs in claim order. A finished sync makes its generation durable once every
    /// earlier unfinished one covers only files it synced too (the usual case: every claim
    /// is the one active block, so a fast sync need not wait for a slow earlier one).
    claims: VecDeque<Claim>,
    waiters: VecDeque<(u64, DurableCallback)>,
    /// Set by the first failed sync, forever.
    failure: Option<Failure>,
}

/// The first failure: enough to rebuild the error for every callback (the OS error code kept,
/// so callers can word it).
#[derive(Clone)]
struct Failure {
    kind: std::io::ErrorKind,
    code: Option<i32>,
    text: String,
    path: PathBuf,
}

impl Failure {
    fn of(error: &std::io::Error, path: PathBuf) -> Failure {
        Failure {
            kind: error.kind(),
            code: error.raw_os_error(),
            text: error.to_string(),
            path,
        }
    }

    fn error(&self) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source: match self.code {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(self.kind, self.text.clone()),
            },
        }
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        formatter
            .debug_struct("Pipeline")
            .field("written", &state.written)
            .field("durable", &state.durable)
            .field("waiters", &state.waiters.len())
            .finish()
    }
}

impl PipelineState {
    fn finish(&mut self, generation: u64) {
        if let Some(claim) = self
            .claims
            .iter_mut()
            .find(|claim| claim.generation == generation)
        {
            claim.finished = true;
        }
        for (position, claim) in self.claims.iter().enumerate() {
            if !claim.finished || claim.generation <= self.durable {
                continue;
            }
            let covers_earlier = self.claims.iter().take(position).all(|earlier| {
                earlier.finished
                    || earlier.generation <= self.durable
                    || earlier.files.iter().all(|path| claim.files.contains(path))
            });
            if covers_earlier {
                self.durable = claim.generation;
            }
        }
        let durable = self.durable;
        self.claims.retain(|claim| claim.generation > durable);
    }
}

impl Pipeline {
    pub fn new() -> Arc<Pipeline> {
        Arc::new(Pipeline {
            state: Mutex::new(PipelineState {
                unclaimed: Vec::new(),
                written: 0,
                claimed: 0,
                durable: 0,
                claims: VecDeque::new(),
                waiters: VecDeque::new(),
                failure: None,
            }),
            delivery: Mutex::new(()),
        })
    }

    /// Everything written so far is durable once `files` are synced (every other file already
    /// is); a sync thread does that and then `on_durable` runs.
    pub fn submit(self: &Arc<Self>, files: Vec<(Arc<File>, PathBuf)>, on_durable: DurableCallback) {
        let needs_sync = {
            let mut state = self.state.lock();
            state.written += 1;
            let generation = state.written;
            for (file, path) in files {
                if !state.unclaimed.iter().any(|(_, known)| *known == path) {
                    state.unclaimed.push((file, path));
                }
            }
            state.waiters.push_back((generation, on_durable));
            state.failure.is_none()
        };
        if needs_sync {
            pool().enqueue(Work::Sync(self.clone()));
        }
        self.deliver_ready();
    }

    /// `on_durable` runs after everything submitted before it (nothing new to sync: it runs at
    /// once when they are already durable).
    pub fn after_pending(&self, on_durable: DurableCallback) {
        {
            let mut state = self.state.lock();
            let generation = state.written;
            state.waiters.push_back((generation, on_durable));
        }
        self.deliver_ready();
    }

    /// An inline fsync of every file just finished: all written generations are durable.
    pub fn all_synced(&self) {
        {
            let mut state = self.state.lock();
            state.durable = state.durable.max(state.written);
            state.claimed = state.claimed.max(state.written);
            state.unclaimed.clear();
            let durable = state.durable;
            state.claims.retain(|claim| claim.generation > durable);
        }
        self.deliver_ready();
    }

    /// An inline fsync failed: nothing pending may be acknowledged any more.
    pub fn fail(&self, error: &StoreError, path: PathBuf) {
        {
            let mut state = self.state.lock();
            if state.failure.is_none() {
                state.failure = Some(match error {
                    StoreError::Io { source, .. } => Failure::of(source, path),
                    other => Failure {
                        kind: std::io::ErrorKind::Other,
                        code: None,
                        text: other.to_string(),
                        path,
                    },
                });
            }
        }
        self.deliver_ready();
    }

    /// A sync failed since the pipeline was made or last recovered.
    pub fn failed(&self) -> bool {
        self.state.lock().failure.is_some()
    }

    /// Every file was rewritten and synced inline after a failure: generations from now on can
    /// be made durable again. Callbacks registered before it have all run, failing.
    pub fn recover(&self) {
        self.deliver_ready();
        let mut state = self.state.lock();
        state.failure = None;
        state.durable = state.durable.max(state.written);
        state.claimed = state.claimed.max(state.written);
        state.unclaimed.clear();
        state.claims.clear();
    }

    /// Run the callbacks whose generation is durable (all of them, failing, once poisoned).
    fn deliver_ready(&self) {
        let _order = self.delivery.lock();
        loop {
            let (ready, failure) = {
                let mut state = self.state.lock();
                let mut ready = Vec::new();
                while let Some((generation, _)) = state.waiters.front() {
                    if state.failure.is_none() && *generation > state.durable {
                        break;
                    }
                    if let Some((_, callback)) = state.waiters.pop_front() {
                        ready.push(callback);
                    }
                }
                (ready, state.failure.clone())
            };
            if ready.is_empty() {
                return;
            }
            for callback in ready {
                callback(match &failure {
                    None => Ok(()),
                    Some(failure) => Err(failure.error()),
                });
            }
        }
    }

    /// One sync for the newest unclaimed generation, run on a pool thread.
    fn sync_once(&self) {
        let claim = {
            let mut state = self.state.lock();
            if state.failure.is_some() || state.written <= state.claimed {
                None
            } else {
                state.claimed = state.written;
                let generation = state.written;
                let files = std::mem::take(&mut state.unclaimed);
                state.claims.push_back(Claim {
                    generation,
                    files: files.iter().map(|(_, path)| path.clone()).collect(),
                    finished: false,
                });
                Some((generation, files))
            }
        };
        let Some((generation, files)) = claim else {
            return;
        };
        // Files are synced one after the other: the common case is the one active block.
        let result = files
            .iter()
            .try_for_each(|(file, path)| file.sync_data().map_err(|error| (error, path)));
        {
            let mut state = self.state.lock();
            match result {
                Ok(()) => state.finish(generation),
                Err((error, path)) => {
                    let path = path.clone();
                    if state.failure.is_none() {
                        state.failure = Some(Failure::of(&error, path));
                    }
                }
            }
        }
        self.deliver_ready();
    }
}

/// What a pool thread does next.
enum Work {
    /// Sync a pipeline's newest unclaimed generation.
    Sync(Arc<Pipeline>),
    /// Other file work taken off a stream's thread (the index file of a sealed block).
    Task(Box<dyn FnOnce() + Send>),
}

/// The process-wide sync threads and their queue of pipelines with unsynced generations and
/// background file tasks.
struct SyncPool {
    queue: Mutex<VecDeque<Work>>,
    ready: Condvar,
}

fn pool() -> &'static SyncPool {
    static POOL: OnceLock<&'static SyncPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static SyncPool = Box::leak(Box::new(SyncPool {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        }));
        for number in 0..sync_threads() {
            // A thread that cannot start leaves fewer syncs in flight, never none: enqueue
            // checks below fall back to syncing on the caller when no thread exists.
            let spawned = std::thread::Builder::new()
                .name(format!("store-sync-{number}"))
                .spawn(move || pool.work());
            if spawned.is_ok() {
                pool.threads_started();
            }
        }
        pool
    })
}

/// Run `task` on a sync pool thread (on the caller when the pool has no thread).
pub(crate) fn run_in_background(task: Box<dyn FnOnce() + Send>) {
    pool().enqueue(Work::Task(task));
}

static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl SyncPool {
    fn threads_started(&self) {
        THREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn enqueue(&self, work: Work) {
        if THREADS.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            work.run();
            return;
        }
        self.queue.lock().push_back(work);
        self.ready.notify_one();
    }

    fn work(&self) {
        loop {
            let work = {
                let mut queue = self.queue.lock();
                loop {
                    if let Some(work) = queue.pop_front() {
                        break work;
                    }
                    self.ready.wait(&mut queue);
                }
            };
            work.run();
        }
    }
}

impl Work {
    fn run(self) {
        match self {
            Work::Sync(pipeline) => pipeline.sync_once(),
            Work::Task(task) => task(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn callbacks_run_in_order_after_their_sync() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("block");
        let file = Arc::new(File::create(&path).unwrap());
        let pipeline = Pipeline::new();
        let (sender, receiver) = mpsc::channel();
        for number in 0..200u32 {
            let sender = sender.clone();
            let callback: DurableCallback = Box::new(move |result| {
                sender.send((number, result.is_ok())).unwrap();
            });
            if number % 3 == 0 {
                pipeline.after_pending(callback);
            } else {
                pipeline.submit(vec![(file.clone(), path.clone())], callback);
            }
        }
        let received: Vec<(u32, bool)> = (0..200)
            .map(|_| {
                receiver
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .unwrap()
            })
            .collect();
        let expected: Vec<(u32, bool)> = (0..200).map(|number| (number, true)).collect();
        assert_eq!(received, expected);
    }

    #[test]
    fn a_failure_fails_every_pending_and_later_callback() {
        let pipeline = Pipeline::new();
        let (sender, receiver) = mpsc::channel();
        let error = StoreError::Corrupt("disk gone".into());
        pipeline.fail(&error, PathBuf::from("x"));
        let callback: DurableCallback =
            Box::new(move |result| sender.send(result.is_err()).unwrap());
        pipeline.after_pending(callback);
        assert!(receiver.recv().unwrap());
    }

    #[test]
    fn recover_lets_later_callbacks_succeed_again() {
        let pipeline = Pipeline::new();
        let (sender, receiver) = mpsc::channel();
        pipeline.fail(
            &StoreError::Corrupt("sync failed".into()),
            PathBuf::from("x"),
        );
        assert!(pipeline.failed());
        let failing = sender.clone();
        pipeline.after_pending(Box::new(move |result| {
            failing.send(result.is_ok()).unwrap()
        }));
        assert!(
            !receiver.recv().unwrap(),
            "registered before the recovery: fails"
        );
        pipeline.recover();
        assert!(!pipeline.failed());
        pipeline.after_pending(Box::new(move |result| sender.send(result.is_ok()).unwrap()));
        assert!(
            receiver.recv().unwrap(),
            "registered after the recovery: succeeds"
        );
    }
}

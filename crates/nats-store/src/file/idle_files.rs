//! Descriptors of block files and delete logs, opened on demand and closed when idle, so a
//! file stream holds no block descriptor while nothing reads or writes it (issue 21: a stream
//! kept every block of it open for its whole life, and the mark file and the directory besides;
//! nats-server closes idle blocks' descriptors too).
//!
//! An [`IdleFile`] names its file and holds its descriptor while it is used. Every use takes the
//! descriptor (opening the file again when it was closed) and stamps the time. One process-wide
//! thread, started with the first handle, closes the descriptors not used for [`IDLE`], checked
//! every [`CHECK_EVERY`], and, when more than [`open_cap`] are open (the process's open-file
//! limit less room for connections and mark files: 10,000 streams written round-robin would
//! otherwise hold one each), the least recently used down to three quarters of it at once.
//!
//! What closing may not lose: a descriptor is only dropped from its handle; the sync pipeline and
//! a sealed block's index job hold their own reference to the same descriptor until their fsync
//! is done, so an fsync always goes through the descriptor that wrote. A block whose writes were
//! not yet fsynced (`SyncPolicy::Interval`: nothing synced before its interval) may lose its
//! descriptor before the store's next sync, which then fsyncs through a new one: the page cache
//! belongs to the file, not the descriptor, and a write-back error no descriptor has seen yet is
//! reported to the next fsync whoever opened it (Linux's errseq since 4.13). With
//! `SyncPolicy::Always` every write is fsynced before its acknowledgement, long before `IDLE`.
//!
//! Who uses it: `block.rs` (a block's data file and its delete log).

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A descriptor unused for this long is closed.
const IDLE: Duration = Duration::from_secs(2);
/// How often the closing thread looks for idle descriptors.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Descriptors held by all handles of the process.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// How a handle opens its file again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Read and write at offsets (block files).
    ReadWrite,
    /// Appends (delete logs).
    Append,
}

/// A file whose descriptor is open only while used.
#[derive(Debug)]
pub(crate) struct IdleFile {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    mode: Mode,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: Option<Arc<File>>,
    last_use: Instant,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.state.get_mut().file.take().is_some() {
            OPEN.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl IdleFile {
    /// A handle for `path`, holding `file` (just opened or created) until it is idle.
    pub fn new(path: PathBuf, mode: Mode, file: File) -> IdleFile {
        OPEN.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            path,
            mode,
            state: Mutex::new(State {
                file: Some(Arc::new(file)),
                last_use: Instant::now(),
            }),
        });
        Closer::get().register(&shared);
        IdleFile { shared }
    }

    /// The descriptor, the file opened again when it was closed.
    pub fn get(&self) -> std::io::Result<Arc<File>> {
        let mut state = self.shared.state.lock();
        state.last_use = Instant::now();
        if let Some(file) = &state.file {
            return Ok(file.clone());
        }
        let mut options = OpenOptions::new();
        match self.shared.mode {
            Mode::ReadWrite => options.read(true).write(true),
            Mode::Append => options.append(true),
        };
        let file = Arc::new(options.open(&self.shared.path)?);
        state.file = Some(file.clone());
        drop(state);
        if OPEN.fetch_add(1, Ordering::Relaxed) + 1 > open_cap() {
            Closer::get().wake();
        }
        Ok(file)
    }

    /// Whether the descriptor is open now (for tests).
    #[cfg(test)]
    pub fn is_open(&self) -> bool {
        self.shared.state.lock().file.is_some()
    }
}

/// The most descriptors handles may hold before the least recently used are closed early: an
/// eighth of the open-file limit (2,500 of 20,000), at least 64.
fn open_cap() -> usize {
    static CAP: OnceLock<usize> = OnceLock::new();
    *CAP.get_or_init(|| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given and nothing else.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
        } else {
            1024
        };
        (soft / 8).max(64)
    })
}

/// The process-wide closing thread and the handles it watches.
struct Closer {
    handles: Mutex<Vec<Weak<Shared>>>,
    pressure: Mutex<bool>,
    wake: Condvar,
}

impl Closer {
    fn get() -> &'static Closer {
        static CLOSER: OnceLock<&'static Closer> = OnceLock::new();
        CLOSER.get_or_init(|| {
            let closer: &'static Closer = Box::leak(Box::new(Closer {
                handles: Mutex::new(Vec::new()),
                pressure: Mutex::new(false),
                wake: Condvar::new(),
            }));
            let spawned = std::thread::Builder::new()
                .name("store-idle-files".into())
                .spawn(move || closer.run());
            // Without the thread descriptors stay open as before: nothing is lost but the saving.
            drop(spawned);
            closer
        })
    }

    fn register(&self, shared: &Arc<Shared>) {
        self.handles.lock().push(Arc::downgrade(shared));
    }

    fn wake(&self) {
        *self.pressure.lock() = true;
        self.wake.notify_one();
    }

    fn run(&self) {
        loop {
            {
                let mut pressure = self.pressure.lock();
                if !*pressure {
                    self.wake.wait_for(&mut pressure, CHECK_EVERY);
                }
                *pressure = false;
            }
            self.close_idle();
        }
    }

    /// One pass: idle descriptors closed, then the least recently used while over the cap.
    fn close_idle(&self) {
        let now = Instant::now();
        let mut open = Vec::new();
        let mut handles = self.handles.lock();
        handles.retain(|weak| {
            let Some(shared) = weak.upgrade() else {
                return false;
            };
            let mut state = shared.state.lock();
            if state.file.is_some() {
                if now.saturating_duration_since(state.last_use) >= IDLE {
                    state.file = None;
                    OPEN.fetch_sub(1, Ordering::Relaxed);
                } else {
                    open.push((state.last_use, weak.clone()));
                }
            }
            true
        });
        drop(handles);
        let cap = open_cap();
        if open.len() <= cap {
            return;
        }
        open.sort_by_key(|(last_use, _)| *last_use);
        let excess = open.len() - cap * 3 / 4;
        for (seen, weak) in open.into_iter().take(excess) {
            let Some(shared) = weak.upgrade() else {
                continue;
            };
            let mut state = shared.state.lock();
            // Used since it was looked at: in use, kept.
            if state.last_use == seen && state.file.take().is_some() {
                OPEN.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    #[test]
    fn an_idle_descriptor_is_closed_and_the_file_opened_again_on_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("block");
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("create");
        let handle = IdleFile::new(path.clone(), Mode::ReadWrite, file);
        handle
            .get()
            .expect("get")
            .write_all_at(b"one", 0)
            .expect("write");
        let deadline = Instant::now() + IDLE + CHECK_EVERY * 10;
        while handle.is_open() {
            assert!(
                Instant::now() < deadline,
                "an idle descriptor must be closed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut bytes = [0u8; 3];
        handle
            .get()
            .expect("reopen")
            .read_exact_at(&mut bytes, 0)
            .expect("read");
        assert_eq!(&bytes, b"one");
        assert!(handle.is_open());

        let log_path = dir.path().join("log");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("create log");
        let log = IdleFile::new(log_path.clone(), Mode::Append, log);
        (&*log.get().expect("get"))
            .write_all(b"ab")
            .expect("append");
        // Closed as the thread would (unless it just did).
        if log.shared.state.lock().file.take().is_some() {
            OPEN.fetch_sub(1, Ordering::Relaxed);
        }
        (&*log.get().expect("reopen"))
            .write_all(b"cd")
            .expect("append");
        assert_eq!(std::fs::read(&log_path).expect("read"), b"abcd");
    }
}

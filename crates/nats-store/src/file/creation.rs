//! Deferred creation syncs (`FileStoreOptions::defer_creation_sync`): a new stream store, or a
//! new consumer store under one, writes its files without fsyncing them and keeps the list of
//! what must be synced (files, then directories deepest first, up to the root) in one shared
//! [`CreationSync`]. Whoever needs the creation durable first runs it: the owner before it
//! confirms the creation (off its serialising lock), or the store itself before the first
//! acknowledgement whose durability depends on it (`SyncPolicy::Always`). It runs once; the
//! others find it done.
//!
//! Who calls it: `file/` (stream and consumer stores), and the owner through
//! [`crate::StreamStore::pending_creation`] / [`crate::ConsumerStore::pending_creation`]. It knows
//! paths, nothing of records.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::StoreError;

/// What a deferred creation left to fsync, shared by the store and its owner.
#[derive(Debug)]
pub struct CreationSync {
    /// The paths, in order; held while they are synced so a path added meanwhile
    /// ([`CreationSync::defer`]) is either in this run or finds it done.
    paths: Mutex<Vec<PathBuf>>,
    /// A creation this one depends on (a new consumer's stream, itself not yet durable): synced
    /// first.
    prerequisite: Option<Arc<CreationSync>>,
    done: AtomicBool,
}

impl CreationSync {
    pub(crate) fn new(paths: Vec<PathBuf>, prerequisite: Option<Arc<CreationSync>>) -> Arc<Self> {
        Arc::new(CreationSync {
            paths: Mutex::new(paths),
            prerequisite: prerequisite.filter(|earlier| !earlier.is_done()),
            done: AtomicBool::new(false),
        })
    }

    /// Every path synced (by whoever ran it first).
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Sync what is left, once: the prerequisite first, then each path in order (files' data and
    /// size, directories' entries). Paths that are gone (deleted since) are skipped. A failure
    /// leaves it pending, for the next caller to try again.
    pub fn run(&self) -> Result<(), StoreError> {
        if self.is_done() {
            return Ok(());
        }
        if let Some(prerequisite) = &self.prerequisite {
            prerequisite.run()?;
        }
        let paths = self.paths.lock();
        if self.is_done() {
            return Ok(());
        }
        sync_paths(&paths)?;
        self.done.store(true, Ordering::Release);
        Ok(())
    }

    /// Add `path` at the front (a file written after the creation and before its confirmation,
    /// such as the stream's metadata): true when it will be synced with the rest, false when the
    /// creation is durable already and the caller must sync it itself.
    pub(crate) fn defer(&self, path: PathBuf) -> bool {
        let mut paths = self.paths.lock();
        if self.is_done() {
            return false;
        }
        paths.insert(0, path);
        true
    }

    /// The paths still to sync (tests and diagnostics).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.paths.lock().clone()
    }
}

/// The pending creation of `slot`, if any and not yet durable.
pub(crate) fn pending(slot: &Option<Arc<CreationSync>>) -> Option<Arc<CreationSync>> {
    slot.as_ref()
        .filter(|creation| !creation.is_done())
        .cloned()
}

/// Create `dir` (and missing parents) without syncing anything: returns the directories whose
/// sync makes it durable (each one from `dir` up to the root, deepest first: an existing parent
/// may itself be new and unsynced, as the server's `jetstream/` is after a plain `mkdir`), empty
/// when `dir` existed.
pub(crate) fn create_dir_unsynced(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    if dir.is_dir() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir).map_err(StoreError::io(dir))?;
    let mut to_sync = Vec::new();
    let mut current = Some(dir);
    while let Some(directory) = current {
        to_sync.push(directory.to_path_buf());
        current = directory
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty());
    }
    Ok(to_sync)
}

/// fsync each path in order; paths that are gone are skipped.
pub(crate) fn sync_paths(paths: &[PathBuf]) -> Result<(), StoreError> {
    for path in paths {
        match File::open(path) {
            Ok(handle) => handle.sync_all().map_err(StoreError::io(path))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io(path)(error)),
        }
    }
    Ok(())
}

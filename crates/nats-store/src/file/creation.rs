//! Deferred creation syncs (`FileStoreOptions::defer_creation_sync`): a new stream store, or a
//! new consumer store under one, writes its files without fsyncing them and keeps the list of
//! what must be synced (files, then directories deepest first, up to the root) in one shared
//! [`CreationSync`]. Whoever needs the creation durable first runs it: the owner before it
//! confirms the creation (off its serialising lock), or the store itself before the first
//! acknowledgement whose durability depends on it (`SyncPolicy::Always`). It runs once; the
//! others find it done.
//!
//! What a run skips, and why that keeps the promise (a confirmed creation survives a power cut):
//! - an empty file's data (nothing to write; its name and inode are made durable by its
//!   directory's fsync, which follows);
//! - the ancestors above a directory already known durable: [`DurableDirectories`] remembers,
//!   per process, every directory that existed before a creation and whose entry, and every
//!   ancestor's, this process has fsynced since (checked against its inode, forgotten when a
//!   store directory is removed under it). The parent of the topmost new directory is always
//!   synced (it holds the new entry). Before this, each stream creation fsynced every ancestor
//!   up to `/` (5 to 7 directory fsyncs of unchanged directories, each a device cache flush on
//!   ext4).
//!
//! Who calls it: `file/` (stream and consumer stores, `removal.rs`), and the owner through
//! [`crate::StreamStore::pending_creation`] / [`crate::ConsumerStore::pending_creation`]. It knows
//! paths, nothing of records.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::error::StoreError;

/// What a deferred creation left to fsync, shared by the store and its owner.
#[derive(Debug)]
pub struct CreationSync {
    /// The paths, in order; held while they are synced so a path added meanwhile
    /// ([`CreationSync::defer`]) is either in this run or finds it done.
    paths: Mutex<Vec<PathBuf>>,
    /// The directories that existed before the creation, deepest first (the parent of the
    /// topmost new directory, then its ancestors up to the root): synced after `paths`, up to
    /// the first one known durable ([`DurableDirectories`]).
    ancestors: Vec<PathBuf>,
    /// A creation this one depends on (a new consumer's stream, itself not yet durable): synced
    /// first.
    prerequisite: Option<Arc<CreationSync>>,
    done: AtomicBool,
}

impl CreationSync {
    pub(crate) fn new(paths: Vec<PathBuf>, prerequisite: Option<Arc<CreationSync>>) -> Arc<Self> {
        Self::with_ancestors(paths, Vec::new(), prerequisite)
    }

    /// [`CreationSync::new`] for a creation that made directories ([`create_dir_unsynced`]):
    /// `paths` holds its files and new directories, `ancestors` the directories that existed.
    pub(crate) fn with_ancestors(
        paths: Vec<PathBuf>,
        ancestors: Vec<PathBuf>,
        prerequisite: Option<Arc<CreationSync>>,
    ) -> Arc<Self> {
        Arc::new(CreationSync {
            paths: Mutex::new(paths),
            ancestors,
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
        sync_ancestors(&self.ancestors)?;
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

    /// The paths still to sync (tests and diagnostics): files and new directories, then the
    /// existing ancestors (of which a run skips those above one known durable).
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths = self.paths.lock().clone();
        paths.extend(self.ancestors.iter().cloned());
        paths
    }
}

/// The pending creation of `slot`, if any and not yet durable.
pub(crate) fn pending(slot: &Option<Arc<CreationSync>>) -> Option<Arc<CreationSync>> {
    slot.as_ref()
        .filter(|creation| !creation.is_done())
        .cloned()
}

/// What [`create_dir_unsynced`] made: the new directories (deepest first) and the ones that
/// existed (the parent of the topmost new one, then its ancestors up to the root).
#[derive(Debug, Default)]
pub(crate) struct CreatedDirs {
    pub new: Vec<PathBuf>,
    pub ancestors: Vec<PathBuf>,
}

impl CreatedDirs {
    pub fn is_empty(&self) -> bool {
        self.new.is_empty()
    }
}

/// Create `dir` (and missing parents) without syncing anything: returns the directories whose
/// sync makes it durable (from `dir` up to the root, deepest first: an existing parent may
/// itself be new and unsynced, as the server's `jetstream/` is after a plain `mkdir`), nothing
/// when `dir` existed.
pub(crate) fn create_dir_unsynced(dir: &Path) -> Result<CreatedDirs, StoreError> {
    if dir.is_dir() {
        return Ok(CreatedDirs::default());
    }
    // Which ones are new, seen before the mkdir (a concurrent creator may make a parent
    // meanwhile: then it counts as new here, which only syncs it once more).
    let chain: Vec<PathBuf> = dir
        .ancestors()
        .filter(|directory| !directory.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .collect();
    let existing = chain
        .iter()
        .position(|directory| directory.is_dir())
        .unwrap_or(chain.len())
        .max(1);
    std::fs::create_dir_all(dir).map_err(StoreError::io(dir))?;
    let mut new = chain;
    let ancestors = new.split_off(existing);
    Ok(CreatedDirs { new, ancestors })
}

/// fsync each path in order; paths that are gone are skipped, and so is an empty file's data
/// (a file listed here is new: its name and inode are made durable by its directory's fsync,
/// listed after it).
pub(crate) fn sync_paths(paths: &[PathBuf]) -> Result<(), StoreError> {
    for path in paths {
        match File::open(path) {
            Ok(handle) => {
                let metadata = handle.metadata().map_err(StoreError::io(path))?;
                if metadata.is_file() && metadata.len() == 0 {
                    continue;
                }
                handle.sync_all().map_err(StoreError::io(path))?
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io(path)(error)),
        }
    }
    Ok(())
}

/// fsync the existing ancestors of a new directory, deepest first: the first always (it holds
/// the new entry), each next one unless the one below it is known durable; then remember them
/// all as durable.
fn sync_ancestors(ancestors: &[PathBuf]) -> Result<(), StoreError> {
    let durable = DurableDirectories::get();
    let mut reached = ancestors.len();
    for (position, directory) in ancestors.iter().enumerate() {
        if position > 0 && durable.contains(&ancestors[position - 1]) {
            reached = position;
            break;
        }
        match File::open(directory) {
            Ok(handle) => handle.sync_all().map_err(StoreError::io(directory))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io(directory)(error)),
        }
    }
    for directory in &ancestors[..reached] {
        durable.insert(directory);
    }
    Ok(())
}

/// The directories this process knows to be durable all the way up: each one's entry in its
/// parent, and every ancestor's in its own, fsynced since the directory was made (by this
/// process: at start nothing is known). Keyed by path, with the device and inode seen when it
/// was recorded, so a directory removed and made again under the same name is not taken for the
/// old one; a store directory removed (`removal.rs`) is forgotten with everything under it.
pub(crate) struct DurableDirectories {
    known: Mutex<HashMap<PathBuf, (u64, u64)>>,
}

impl DurableDirectories {
    fn get() -> &'static DurableDirectories {
        static DURABLE: OnceLock<DurableDirectories> = OnceLock::new();
        DURABLE.get_or_init(|| DurableDirectories {
            known: Mutex::new(HashMap::new()),
        })
    }

    fn identity(directory: &Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(directory)
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .map(|metadata| (metadata.dev(), metadata.ino()))
    }

    fn contains(&self, directory: &Path) -> bool {
        let Some(recorded) = self.known.lock().get(directory).copied() else {
            return false;
        };
        Self::identity(directory) == Some(recorded)
    }

    fn insert(&self, directory: &Path) {
        if let Some(identity) = Self::identity(directory) {
            self.known.lock().insert(directory.to_path_buf(), identity);
        }
    }

    /// `directory` is being removed: forget it and everything under it.
    pub(crate) fn forget(directory: &Path) {
        Self::get()
            .known
            .lock()
            .retain(|known, _| !known.starts_with(directory));
    }
}

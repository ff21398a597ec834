//! Removing a consumer's files from outside the task that owns its store: a consumer delete
//! renames the directory away on the admin thread and answers, instead of waiting for the
//! consumer's task to do it (two thread wake-ups per delete, half of the admin thread's time in
//! a run of deletes). The store and the handle share one gate: once it is shut, the store writes
//! nothing more by path (its directory's name may already hold a consumer created again under
//! the same name), and each path-based write of the store holds the gate while it runs, so the
//! rename never lands between its check and its write. Writes through a file the store holds
//! open (the state log's frames, their fsyncs) go to the renamed directory's files, which the
//! background remover unlinks with it.

use std::path::PathBuf;

use parking_lot::{Mutex, MutexGuard};

use crate::error::StoreError;

/// The handle an owner keeps to remove a [`super::FileConsumerStore`]'s files at once
/// ([`crate::ConsumerStore::removal`]).
#[derive(Debug)]
pub struct ConsumerRemoval {
    dir: PathBuf,
    /// Shut (true) once the directory was renamed away (or the store deleted).
    removed: Mutex<bool>,
}

impl ConsumerRemoval {
    pub(super) fn new(dir: PathBuf) -> Self {
        ConsumerRemoval {
            dir,
            removed: Mutex::new(false),
        }
    }

    /// Rename the consumer's directory away (its files are unlinked in the background,
    /// `removal.rs`) and shut the gate; the store's later writes are dropped. Once only: a
    /// second call, or the store's own delete after it, does nothing.
    pub fn remove(&self) -> Result<(), StoreError> {
        let mut removed = self.removed.lock();
        if *removed {
            return Ok(());
        }
        *removed = true;
        super::super::removal::remove_dir_soon(&self.dir)
    }

    /// The gate, held by a path-based write for its duration: `None` once it is shut.
    pub(super) fn open_gate(&self) -> Option<MutexGuard<'_, bool>> {
        let gate = self.removed.lock();
        (!*gate).then_some(gate)
    }
}

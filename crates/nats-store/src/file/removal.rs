//! Deleting a store's directory without waiting for the file system: the directory is renamed
//! to a trash name beside it (one metadata operation: the name is free at once, so the same
//! stream or consumer can be created again right away) and removed by one background thread.
//! Unlinking the files, freeing (and on a `discard` mount, trimming) their blocks is the slow
//! part: 0.3 ms median, tens of ms in the tail per stream directory here, against 0.02 ms for the
//! rename. A trash directory a crash left behind is removed when its parent is next listed
//! ([`is_trash`], [`remove_leftover`]).
//!
//! Who calls it: the file stream and consumer stores' `delete`, and the listings of stream and
//! consumer directories (which skip trash). It knows directories only.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};

use crate::error::StoreError;

/// The mark of a trash name. Stream and consumer names never contain a `.` (nats-server refuses
/// them), so no live store is ever taken for trash.
const TRASH_MARK: &str = ".deleted.";

/// Whether a directory entry is a deleted store awaiting removal.
pub fn is_trash(name: &str) -> bool {
    name.contains(TRASH_MARK)
}

/// Rename `dir` to a trash name and have it removed in the background; `Ok` when it is gone
/// under its own name (or never existed). When the rename cannot be done the directory is
/// removed here, inline.
pub(crate) fn remove_dir_soon(dir: &Path) -> Result<(), StoreError> {
    // No directory under it may be taken for durable once the name is made again.
    super::creation::DurableDirectories::forget(dir);
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return remove_now(dir);
    };
    let unique = format!(
        "{}{TRASH_MARK}{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let trash = parent.join(unique);
    match std::fs::rename(dir, &trash) {
        Ok(()) => {
            remove_leftover(trash);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => remove_now(dir),
    }
}

/// Remove a trash directory in the background (inline if the remover thread cannot start).
pub fn remove_leftover(trash: PathBuf) {
    static REMOVER: OnceLock<Option<Mutex<Sender<PathBuf>>>> = OnceLock::new();
    let remover = REMOVER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<PathBuf>();
        std::thread::Builder::new()
            .name("store-remover".into())
            .spawn(move || {
                for trash in receiver {
                    // A failure leaves the trash for the next listing of its parent to retry.
                    let _ = std::fs::remove_dir_all(&trash);
                }
            })
            .ok()
            .map(|_| Mutex::new(sender))
    });
    let queued = remover.as_ref().and_then(|sender| {
        sender
            .lock()
            .ok()
            .and_then(|sender| sender.send(trash.clone()).ok())
    });
    if queued.is_none() {
        let _ = std::fs::remove_dir_all(&trash);
    }
}

fn remove_now(dir: &Path) -> Result<(), StoreError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(StoreError::io(dir)(error)),
    }
}

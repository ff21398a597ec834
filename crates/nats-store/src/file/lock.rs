//! An exclusive advisory lock on a stream directory, so a second opener (another process, or the
//! same process opening the directory twice) gets `StoreError::Locked` instead of both appending
//! to the same blocks and corrupting them.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on the descriptor of the directory's `seq.hwm`
//! (`high_water.rs`), which the store holds open from open to close anyway: the lock costs no
//! descriptor of its own (issue 21: a file stream held three descriptors, nats-server's one; with
//! a hard limit of 20,000 open files ours held about 6,600 streams). flock locks the open file
//! description, so a second open of the same file conflicts, in this process or another, and the
//! kernel drops the lock when the process dies, so a crashed server never leaves a stale lock
//! behind. On NFS flock is emulated with a byte-range lock, which needs a descriptor open for
//! writing: the mark file's is.
//!
//! Earlier versions locked the directory itself (and before that a `<dir>/lock` file, ignored
//! now): a store is not to be opened by an older and a newer version at once.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use crate::error::StoreError;

/// Holds the lock until dropped (the descriptor stays with its owner, unlocked).
#[derive(Debug)]
pub(crate) struct DirectoryLock {
    file: Arc<File>,
}

impl DirectoryLock {
    /// Lock the stream directory `dir` through `file` (its mark file, open for writing), or fail
    /// at once when someone else holds it.
    pub(crate) fn acquire(dir: &Path, file: &Arc<File>) -> Result<DirectoryLock, StoreError> {
        match flock(file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(DirectoryLock { file: file.clone() }),
            Err(error) if error.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                Err(StoreError::Locked(dir.to_path_buf()))
            }
            Err(error) => Err(StoreError::io(dir)(error)),
        }
    }
}

impl Drop for DirectoryLock {
    fn drop(&mut self) {
        // The descriptor may outlive the lock (a closed store value kept behind a shared
        // handle): the directory is free from here on.
        let _ = flock(&self.file, libc::LOCK_UN);
    }
}

/// `flock(operation)`, retried on EINTR.
fn flock(file: &File, operation: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: flock only reads the descriptor number, which `file` keeps open.
        let result = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if result == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

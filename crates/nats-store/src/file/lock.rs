//! An exclusive advisory lock on a stream directory, so a second opener (another process, or the
//! same process opening the directory twice) gets `StoreError::Locked` instead of both appending
//! to the same blocks and corrupting them.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on `<dir>/lock`. The kernel drops it when the file is
//! closed or the process dies, so a crashed server never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::StoreError;

pub(crate) const LOCK_FILE: &str = "lock";

/// Holds the lock until dropped.
#[derive(Debug)]
pub(crate) struct DirectoryLock {
    _file: File,
}

impl DirectoryLock {
    /// Lock `dir` (which must exist) or fail at once when someone else holds it.
    pub(crate) fn acquire(dir: &Path) -> Result<DirectoryLock, StoreError> {
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        loop {
            // SAFETY: flock only reads the descriptor number, which `file` keeps open.
            let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if result == 0 {
                return Ok(DirectoryLock { _file: file });
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => return Err(StoreError::Locked(dir.to_path_buf())),
                _ => return Err(StoreError::io(&path)(error)),
            }
        }
    }
}

//! An exclusive advisory lock on a stream directory, so a second opener (another process, or the
//! same process opening the directory twice) gets `StoreError::Locked` instead of both appending
//! to the same blocks and corrupting them.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on the directory itself (opened read-only; flock locks
//! the open file description, so a second open of the same directory conflicts, in this process
//! or another). The kernel drops it when the descriptor is closed or the process dies, so a
//! crashed server never leaves a stale lock behind. Before, the lock was taken on a `<dir>/lock`
//! file: one more inode allocated per stream creation, on the admin queue (issue 21: on this
//! machine's ext4 an inode allocation scans past every recently deleted inode of its group). A
//! `lock` file left by an older version is ignored; a file system that refuses flock on a
//! directory gets the `lock` file as before.

use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::StoreError;

/// Where the lock goes when the file system refuses `flock` on a directory (NFS emulates flock
/// with byte-range locks, which need a descriptor open for writing).
const FALLBACK_LOCK_FILE: &str = "lock";

/// Holds the lock until dropped.
#[derive(Debug)]
pub(crate) struct DirectoryLock {
    _file: File,
}

impl DirectoryLock {
    /// Lock `dir` (which must exist) or fail at once when someone else holds it.
    pub(crate) fn acquire(dir: &Path) -> Result<DirectoryLock, StoreError> {
        let directory = File::open(dir).map_err(StoreError::io(dir))?;
        match lock(&directory) {
            Ok(()) => return Ok(DirectoryLock { _file: directory }),
            Err(error) if error.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                return Err(StoreError::Locked(dir.to_path_buf()))
            }
            Err(_) => {}
        }
        let path = dir.join(FALLBACK_LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        match lock(&file) {
            Ok(()) => Ok(DirectoryLock { _file: file }),
            Err(error) if error.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                Err(StoreError::Locked(dir.to_path_buf()))
            }
            Err(error) => Err(StoreError::io(&path)(error)),
        }
    }
}

/// `flock(LOCK_EX | LOCK_NB)`, retried on EINTR.
fn lock(file: &File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock only reads the descriptor number, which `file` keeps open.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if result == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

//! powerloss-fs (dev-only): a FUSE file system for power-loss tests. Files and directories live
//! in memory twice: as programs see them, and as a disk would hold them after a power loss
//! (what `fsync` made durable). [`Disk::cut_power`] throws away everything not synced: written
//! bytes, truncations, new names, renames and unlinks whose directory was not synced. A process
//! under test (a server) works in the mount as on any disk; the test kills it, unmounts, cuts
//! the power, mounts again and starts it on what remains.
//!
//! Faults for full-disk tests: a capacity ([`Disk::set_capacity`]: writes past it fail with
//! ENOSPC, `statfs` reports it), a full directory ([`Disk::set_full_under`]: ENOSPC below it
//! only), failing writes ([`Disk::set_failing_writes`]: EIO) and failing
//! fsyncs ([`Disk::set_failing_syncs`]: EIO, nothing made durable).
//!
//! Who calls it: the black-box power-loss tests. Mounting needs root (the `mount` syscall on
//! /dev/fuse; no libfuse or fusermount needed). It knows nothing of NATS.

mod disk;
mod filesystem;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

pub use disk::{DiskStats, SyncModel};

use disk::DiskState;
use filesystem::PowerLossFilesystem;

/// The simulated disk; outlives its mounts.
#[derive(Clone)]
pub struct Disk {
    state: Arc<Mutex<DiskState>>,
}

impl Disk {
    /// An empty disk of `capacity` bytes.
    pub fn new(capacity: u64, model: SyncModel) -> Disk {
        Disk {
            state: Arc::new(Mutex::new(DiskState::new(capacity, model))),
        }
    }

    /// Mount the disk at `mountpoint` (an existing empty directory) until the [`Mount`] drops.
    pub fn mount(&self, mountpoint: &Path) -> io::Result<Mount> {
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("powerloss".into()),
            fuser::MountOption::RW,
        ];
        config.n_threads = Some(2);
        let filesystem = PowerLossFilesystem {
            disk: self.state.clone(),
        };
        let session = fuser::spawn_mount(filesystem, mountpoint, &config)?;
        Ok(Mount {
            session: Some(session),
            mountpoint: mountpoint.to_path_buf(),
        })
    }

    /// Drop everything not made durable. Unmount first: a kernel still holding the mount could
    /// otherwise serve pages of the lost data from its cache.
    pub fn cut_power(&self) {
        self.state.lock().cut_power();
    }

    /// Writes that would grow the files past `bytes` in all fail with ENOSPC.
    pub fn set_capacity(&self, bytes: u64) {
        self.state.lock().capacity = bytes;
    }

    /// While `Some(name)`, writes that would grow a file anywhere below a directory called
    /// `name` fail with ENOSPC (that part of the disk is full, as under a quota); others go on.
    pub fn set_full_under(&self, name: Option<&str>) {
        self.state.lock().full_under = name.map(Into::into);
    }

    /// While set, every write fails with EIO and changes nothing.
    pub fn set_failing_writes(&self, failing: bool) {
        self.state.lock().failing_writes = failing;
    }

    /// While set, every fsync fails with EIO and makes nothing durable.
    pub fn set_failing_syncs(&self, failing: bool) {
        self.state.lock().failing_syncs = failing;
    }

    pub fn stats(&self) -> DiskStats {
        self.state.lock().stats()
    }
}

/// A mounted [`Disk`]; unmounted when dropped.
pub struct Mount {
    session: Option<fuser::BackgroundSession>,
    mountpoint: PathBuf,
}

impl Mount {
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// Unmount and wait for the session to end.
    ///
    /// The session's thread may end with ECONNABORTED instead of a clean ENODEV: the kernel
    /// aborts the connection on unmount while requests of a process killed a moment before are
    /// still in flight (seen in CI after a `kill -9` amid 24 stream creations). The unmount has
    /// happened by then (`umount` itself returned first), so that end counts as a clean one once
    /// the mount point is checked to be gone from the mount table.
    pub fn unmount(mut self) -> io::Result<()> {
        match self.session.take() {
            Some(session) => match session.umount_and_join() {
                Err(error)
                    if error.raw_os_error() == Some(libc::ECONNABORTED)
                        && !mounted_at(&self.mountpoint)? =>
                {
                    Ok(())
                }
                result => result,
            },
            None => Ok(()),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if session.umount_and_join().is_err() {
                // Busy (a process still has files open): detach it so the test can go on.
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(&self.mountpoint)
                    .status();
            }
        }
    }
}

/// Whether a file system is mounted at `path` (its fifth field in /proc/self/mountinfo).
fn mounted_at(path: &Path) -> io::Result<bool> {
    let path = path.to_string_lossy();
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(table
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path.as_ref())))
}

/// True when this process may mount FUSE file systems here (root and /dev/fuse present).
pub fn available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && Path::new("/dev/fuse").exists()
}

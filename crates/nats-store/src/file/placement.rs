//! Where new stream directories land on disk: spread over the file system's allocation groups
//! (issue 21).
//!
//! Why: ext4's Orlov allocator puts a new directory in or near its parent's block group unless
//! the parent is marked as the top of directory hierarchies (`FS_TOPDIR_FL`, `chattr +T`); then
//! each new directory goes to a group whose free inodes and blocks are above the average. Without
//! the mark every stream directory, and every file in it (a file's inode goes to its directory's
//! group), is allocated in the few groups around `streams/`, which is also where the inodes of
//! deleted streams (and of anything deleted near the store) lie. On ext4 without a journal (this
//! project's bench machine) each inode allocation first scans past every inode of its group freed
//! in the last minutes (`find_inode_bit` -> `recently_deleted`, one buffer lookup each), so a
//! stream creation after deletions cost hundreds of microseconds of kernel CPU, growing with each
//! burst (`bench/README.md`, "Stream directories spread over the disk"). Each stream directory
//! is a hierarchy of its own (its blocks, marks, metadata and consumers), which is what the mark
//! says; the files of one stream still share its group.
//!
//! Best effort: a file system without the flag (tmpfs, btrfs, xfs, ...) refuses the ioctl and
//! nothing changes; the mark is a hint to the allocator, never needed for correctness, so it is
//! not fsynced.
//!
//! Who calls it: `FileStore::open`, for the parent of each stream directory it creates afresh
//! (a creation from a spare allocates nothing). The spares made ahead (`spares.rs`) are made
//! under the same parent and are spread alike.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `FS_TOPDIR_FL` of `linux/fs.h` (not exported by the libc crate).
const TOP_DIRECTORY_FLAG: libc::c_int = 0x0002_0000;

/// Mark `parent` as the top of directory hierarchies, when it is not already and the file
/// system knows the mark: the directories made in it from then on are spread over the disk.
pub(crate) fn spread_children(parent: &Path) {
    let Ok(directory) = File::open(parent) else {
        return;
    };
    let fd = directory.as_raw_fd();
    let mut flags: libc::c_int = 0;
    // SAFETY: `fd` stays open for both calls; FS_IOC_GETFLAGS writes one int into `flags` and
    // FS_IOC_SETFLAGS reads one (the kernel's size for these two, whatever their encoding says).
    let read = unsafe { libc::ioctl(fd, libc::FS_IOC_GETFLAGS, &mut flags) };
    if read != 0 || flags & TOP_DIRECTORY_FLAG != 0 {
        return;
    }
    flags |= TOP_DIRECTORY_FLAG;
    // SAFETY: as above. A refusal (a file system without the mark, a directory not ours) leaves
    // the allocator as it was.
    unsafe { libc::ioctl(fd, libc::FS_IOC_SETFLAGS, &flags) };
}

/// Whether `directory` carries the mark (tests).
#[cfg(test)]
pub(crate) fn spreads_children(directory: &Path) -> Option<bool> {
    let directory = File::open(directory).ok()?;
    let mut flags: libc::c_int = 0;
    // SAFETY: as in `spread_children`.
    let read = unsafe { libc::ioctl(directory.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) };
    (read == 0).then_some(flags & TOP_DIRECTORY_FLAG != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FileStoreOptions, StreamStoreConfig};

    /// ext4's `EXT4_SUPER_MAGIC`: where the mark must be taken.
    fn on_ext4(path: &Path) -> bool {
        let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: a NUL-terminated path and a zeroed statfs the call fills.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        let result = unsafe { libc::statfs(c_path.as_ptr(), &mut stat) };
        result == 0 && stat.f_type == 0xEF53
    }

    #[test]
    fn a_stream_directory_made_afresh_marks_its_parent_to_spread_the_next_ones() {
        let root = tempfile::tempdir().unwrap();
        let streams = root.path().join("streams");
        std::fs::create_dir(&streams).unwrap();
        if !on_ext4(&streams) {
            eprintln!("not ext4: the mark is best effort, nothing to check");
            return;
        }
        assert_eq!(spreads_children(&streams), Some(false));
        let options = FileStoreOptions {
            defer_creation_sync: true,
            ..Default::default()
        };
        let store = super::super::FileStore::open(
            streams.join("ORDERS"),
            StreamStoreConfig::default(),
            options,
        )
        .unwrap();
        assert_eq!(spreads_children(&streams), Some(true));
        assert_eq!(
            spreads_children(&streams.join("ORDERS")),
            Some(false),
            "the stream's own directory keeps its files together"
        );
        drop(store);
        spread_children(&streams);
        assert_eq!(spreads_children(&streams), Some(true), "marked once");
    }
}

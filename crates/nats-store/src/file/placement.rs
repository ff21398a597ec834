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
//! Only where that scan happens: ext4 without a journal (the kernel scans only when the file
//! system has none), which its sysfs entry tells (`/sys/fs/ext4/<device>/journal_task` reads
//! `<none>`). Spread directories cost locality: each stream's inode in its own group, a write's
//! inode update touches one inode-table block per stream instead of one per 16 (1.11-1.15 us of
//! CPU per `write` over 1,000 spread files against 0.94-0.95 clustered; publishing into 1,000 to
//! 10,000 streams 2-7 % slower), which a journaled ext4 would pay for nothing.
//!
//! Best effort: a file system without the flag (tmpfs, btrfs, xfs, ...) refuses the ioctl and
//! nothing changes; the mark is a hint to the allocator, never needed for correctness, so it is
//! not fsynced.
//!
//! Who calls it: `FileStore::open`, for the parent of each stream directory it creates afresh
//! (a creation from a spare, `spares.rs`, allocates nothing).

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::OnceLock;

use parking_lot::Mutex;

/// `FS_TOPDIR_FL` of `linux/fs.h` (not exported by the libc crate).
const TOP_DIRECTORY_FLAG: libc::c_int = 0x0002_0000;

/// Mark `parent` as the top of directory hierarchies, when it is not already and its file
/// system scans recently freed inodes at each allocation: the directories made in it from then
/// on are spread over the disk.
pub(crate) fn spread_children(parent: &Path) {
    if !allocation_scans_freed_inodes(parent) {
        return;
    }
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

/// Whether an inode allocation on the file system holding `directory` scans past the inodes
/// freed in the last minutes: ext4 without a journal. Known per device once asked.
fn allocation_scans_freed_inodes(directory: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    static KNOWN: OnceLock<Mutex<HashMap<u64, bool>>> = OnceLock::new();
    let Ok(device) = std::fs::metadata(directory).map(|metadata| metadata.dev()) else {
        return false;
    };
    let known = KNOWN.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(scans) = known.lock().get(&device) {
        return *scans;
    }
    let scans = ext4_without_journal(device);
    known.lock().insert(device, scans);
    scans
}

/// ext4's sysfs entry for the block device `device` (`/sys/dev/block/<major>:<minor>` names it)
/// says it has no journal task. Anything unknown (no sysfs, another file system, an older
/// kernel without the entry) counts as a journal: nothing is spread.
fn ext4_without_journal(device: u64) -> bool {
    let (major, minor) = (libc::major(device), libc::minor(device));
    let Ok(block) = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")) else {
        return false;
    };
    let Some(name) = block.file_name() else {
        return false;
    };
    std::fs::read_to_string(Path::new("/sys/fs/ext4").join(name).join("journal_task"))
        .is_ok_and(|task| task.trim() == "<none>")
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

    /// A new stream store in `directory`, as the server makes one (its creation's fsyncs deferred).
    fn create_stream_store(directory: &Path) -> super::super::FileStore {
        let options = FileStoreOptions {
            defer_creation_sync: true,
            ..Default::default()
        };
        super::super::FileStore::open(directory, StreamStoreConfig::default(), options).unwrap()
    }

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
    fn a_journal_is_told_as_the_kernel_lists_it() {
        // Checked against the other place the kernel lists journals: `/proc/fs/jbd2/<device>-<inode>`.
        let root = tempfile::tempdir().unwrap();
        let device = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(root.path()).unwrap().dev()
        };
        let name = std::fs::read_link(format!(
            "/sys/dev/block/{}:{}",
            libc::major(device),
            libc::minor(device)
        ))
        .ok()
        .and_then(|block| Some(block.file_name()?.to_string_lossy().into_owned()));
        let journaled = std::fs::read_dir("/proc/fs/jbd2").is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                name.as_ref().is_some_and(|name| {
                    entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{name}-"))
                })
            })
        });
        let expected = on_ext4(root.path()) && name.is_some() && !journaled;
        eprintln!(
            "device {name:?}, journaled {journaled}, ext4 {}",
            on_ext4(root.path())
        );
        assert_eq!(allocation_scans_freed_inodes(root.path()), expected);
        assert!(
            !allocation_scans_freed_inodes(Path::new("/proc")),
            "not ext4"
        );
    }

    #[test]
    fn on_an_ext4_with_a_journal_nothing_is_marked() {
        use std::process::Command;
        // A small ext4 with a journal (mkfs's default) on a loop device: root only.
        let root = tempfile::tempdir().unwrap();
        let image = root.path().join("journaled.img");
        let mount = root.path().join("mnt");
        std::fs::create_dir(&mount).unwrap();
        File::create(&image).unwrap().set_len(64 << 20).unwrap();
        let made = Command::new("mkfs.ext4").arg("-q").arg(&image).status();
        if !made.is_ok_and(|status| status.success()) {
            eprintln!("no mkfs.ext4: nothing to check");
            return;
        }
        let mounted = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&mount)
            .status();
        if !mounted.is_ok_and(|status| status.success()) {
            eprintln!("no loop mount here (not root?): nothing to check");
            return;
        }
        struct Unmount(std::path::PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = Command::new("umount").arg(&self.0).status();
            }
        }
        let _unmount = Unmount(mount.clone());
        let streams = mount.join("streams");
        std::fs::create_dir(&streams).unwrap();
        assert!(!allocation_scans_freed_inodes(&streams));
        let store = create_stream_store(&streams.join("ORDERS"));
        assert_eq!(spreads_children(&streams), Some(false));
        drop(store);
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
        // This project's machines: ext4 without a journal (the directories are spread); with
        // one, nothing may be marked.
        let spread = allocation_scans_freed_inodes(&streams);
        assert_eq!(spreads_children(&streams), Some(false));
        let store = create_stream_store(&streams.join("ORDERS"));
        assert_eq!(spreads_children(&streams), Some(spread));
        assert_eq!(
            spreads_children(&streams.join("ORDERS")),
            Some(false),
            "the stream's own directory keeps its files together"
        );
        drop(store);
        spread_children(&streams);
        assert_eq!(spreads_children(&streams), Some(spread), "marked once");
    }
}

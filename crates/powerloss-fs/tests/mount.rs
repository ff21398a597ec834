//! The file system through the kernel: real `write`, `fsync`, `rename` and directory syncs from
//! std, a power cut between two mounts, and what is left. Needs root and /dev/fuse; elsewhere
//! the tests say so and pass without running.

use std::fs::{self, File, OpenOptions};
use std::io::Write;

use powerloss_fs::{available, Disk, SyncModel};

fn sync_dir(path: &std::path::Path) {
    File::open(path)
        .and_then(|directory| directory.sync_all())
        .expect("sync dir");
}

#[test]
fn a_cut_keeps_exactly_what_was_synced() {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let root = mountpoint.path();
    let disk = Disk::new(64 << 20, SyncModel::Strict);
    let mount = disk.mount(root).expect("mount");

    fs::create_dir(root.join("streams")).expect("mkdir");
    sync_dir(root);
    let mut synced = File::create(root.join("streams/synced")).expect("create");
    synced.write_all(b"durable").expect("write");
    synced.sync_all().expect("fsync");
    sync_dir(&root.join("streams"));
    synced.write_all(b" and lost").expect("write more");

    let mut unnamed = File::create(root.join("streams/unnamed")).expect("create");
    unnamed.write_all(b"data").expect("write");
    unnamed.sync_all().expect("fsync");

    fs::write(root.join("streams/never"), b"never synced").expect("write");
    assert_eq!(
        fs::read(root.join("streams/synced")).expect("read"),
        b"durable and lost"
    );
    assert!(disk.stats().unsynced_bytes > 0);
    drop((synced, unnamed));
    mount.unmount().expect("unmount");

    disk.cut_power();
    let mount = disk.mount(root).expect("mount again");
    assert_eq!(
        fs::read(root.join("streams/synced")).expect("read"),
        b"durable"
    );
    assert!(
        !root.join("streams/unnamed").exists(),
        "its directory was not synced"
    );
    assert!(!root.join("streams/never").exists());
    let names: Vec<_> = fs::read_dir(root.join("streams"))
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("synced")]);
    mount.unmount().expect("unmount");
}

#[test]
fn full_disk_and_failing_syncs_reach_the_program() {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let root = mountpoint.path();
    let disk = Disk::new(1 << 20, SyncModel::Strict);
    let _mount = disk.mount(root).expect("mount");
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(root.join("big"))
        .expect("create");
    let chunk = vec![7u8; 64 << 10];
    let mut written = 0;
    let error = loop {
        match file.write_all(&chunk) {
            Ok(()) => written += chunk.len(),
            Err(error) => break error,
        }
        assert!(written <= 2 << 20, "the capacity was not enforced");
    };
    assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
    let statfs = nix_free_bytes(root);
    assert!(statfs < 64 << 10, "statfs reports {statfs} bytes free");

    disk.set_failing_syncs(true);
    let error = file.sync_all().expect_err("fsync fails");
    assert_eq!(error.raw_os_error(), Some(libc::EIO), "{error}");
    disk.set_failing_syncs(false);
    file.sync_all().expect("fsync works again");
}

fn nix_free_bytes(path: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let text = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path");
    // SAFETY: statvfs writes into the zeroed struct we pass; the path is a valid C string.
    unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(text.as_ptr(), &mut stats), 0);
        stats.f_bavail * stats.f_frsize
    }
}

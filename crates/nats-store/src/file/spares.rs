//! Deleted stream directories kept as spares for the next stream created beside them (issue 21).
//!
//! Why: on ext4 without a journal (this project's bench machine) an inode allocation scans past
//! every inode of its group freed in the last minute (`find_inode_bit` -> `recently_deleted`),
//! so after a burst of stream deletions each new file or directory costs a scan of thousands of
//! entries. Reusing the deleted store's own directory and files avoids both the frees and the
//! allocations: a creation that takes a spare allocates no inode at all, and finds its block
//! durable already. Since stream directories are spread over the disk (`placement.rs`) the scan
//! is mostly gone; the spares still make creations right after deletions faster (Key-Value
//! bucket creations after 1,000 deletions: 1.14x against removing the trash instead,
//! `bench/README.md`, "Stream directories spread over the disk").
//!
//! How: the background remover (`removal.rs`) gets a deleted stream's trash directory and,
//! while fewer than [`MAX_SPARES`] wait beside it, makes it a spare instead of unlinking it:
//! every entry but one block, `seq.hwm` and `meta.bin` is removed; the block becomes
//! `000000000001.blk` holding only a block header (first sequence 1), `seq.hwm` is emptied (an
//! empty mark file is a new store's, `high_water.rs`), `meta.bin` becomes an empty
//! [`META_SPARE`]; missing ones are created. The files and the directory are fsynced, then the
//! directory is renamed to a spare name (never a stream name: it holds a `.`) and offered. A
//! creation ([`take`]) renames a spare to the stream's name (`RENAME_NOREPLACE`), which then
//! holds exactly what a new store holds after its first flush, all durable already; the
//! creation's own sync covers the rename (the parent's fsync), the metadata written next (its
//! temporary file is the renamed [`META_SPARE`], `recovery.rs` `write_metadata`) and the
//! directory. A spare a stop or a crash left behind is taken over when its parent is next
//! listed (at start, [`adopt`]); listings never take a spare for a store ([`is_spare`]).
//!
//! No spares are made ahead of need: a burst of creations allocates its own directories and
//! files, which the parent's spreading mark (`placement.rs`) made cheap. Session 28 had the
//! remover make fresh spares in bursts, when each allocation scanned past the recently deleted
//! inodes near `streams/`; with the directories spread that cost fell away and the spares' own
//! four fsyncs each made a burst 1.2x slower (`bench/README.md`, "Stream directories spread over
//! the disk").
//!
//! Who calls it: `removal.rs` (making spares, on its thread), `FileStore::open` (taking one)
//! and `recovery.rs` (the metadata's temporary file). Stream directories only: consumer
//! directories are removed as before.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use super::block::block_path;
use super::creation::CreatedDirs;
use super::high_water::FILE_NAME as MARKS_FILE;
use super::{create_block_file, sync_dir, META_FILE};

/// The mark of a spare's name.
const SPARE_MARK: &str = ".spare.";

/// A spare's empty metadata file: becomes `meta.tmp` when the new stream's metadata is written.
pub(crate) const META_SPARE: &str = "meta.spare";

/// Spares kept per parent directory; further deleted stores are removed. One costs four inodes
/// and one 4 KiB block of disk.
pub(crate) const MAX_SPARES: usize = 1024;

/// Spares ready per parent directory, in the order they were made.
fn pool() -> &'static Mutex<HashMap<PathBuf, Vec<PathBuf>>> {
    static POOL: OnceLock<Mutex<HashMap<PathBuf, Vec<PathBuf>>>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Whether a directory entry is a spare (made by this process or left by an earlier one).
pub(crate) fn is_spare(name: &str) -> bool {
    name.contains(SPARE_MARK)
}

/// The start of this process's spare names: the process id and its start time, so a spare a
/// server before it left (a restart in a container has the same process id) is never taken
/// for one of this process's.
fn own_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        format!("store{SPARE_MARK}{}.{started}.", std::process::id())
    })
}

/// Whether `path` is a spare this process made: a listing of its parent must leave it alone
/// (it may be taken at any moment); spares of earlier processes are removed as trash.
pub(crate) fn is_own_spare(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with(own_prefix()))
}

/// How many spares wait beside `parent`'s stores (tests and figures).
pub(crate) fn spares_beside(parent: &Path) -> usize {
    pool().lock().get(parent).map_or(0, Vec::len)
}

/// Spares offered in `dir` or below it are no longer offered (`dir` is being removed).
pub(crate) fn forget_under(dir: &Path) {
    pool().lock().retain(|parent, _| !parent.starts_with(dir));
}

/// Make a stream store's trash directory a spare when its parent has room for one; `false`:
/// not made (no room, or a file system error), the caller removes it.
pub(crate) fn recycle(trash: &Path) -> bool {
    let Some(parent) = trash.parent() else {
        return false;
    };
    if spares_beside(parent) >= MAX_SPARES {
        return false;
    }
    prepare(trash).is_ok() && offer(trash, parent)
}

/// Take over a spare an earlier process left (found by a listing of its parent at start): it
/// was complete and durable before it got its spare name. `false`: not a spare, no room, or
/// it could not be renamed (the caller removes it).
pub(crate) fn adopt(path: &Path) -> bool {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    if !is_spare(&name.to_string_lossy()) || spares_beside(parent) >= MAX_SPARES {
        return false;
    }
    offer(path, parent)
}

/// Rename a ready spare to one of this process's spare names and offer it.
fn offer(ready: &Path, parent: &Path) -> bool {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let spare = parent.join(format!(
        "{}{}",
        own_prefix(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if fs::rename(ready, &spare).is_err() {
        return false;
    }
    pool()
        .lock()
        .entry(parent.to_path_buf())
        .or_default()
        .push(spare);
    true
}

/// Leave in `dir` what a new store holds after its first flush (see the module's docs), durable.
fn prepare(dir: &Path) -> std::io::Result<()> {
    let mut block: Option<(u64, PathBuf)> = None;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_str().unwrap_or_default();
        let id = name
            .strip_suffix(".blk")
            .and_then(|stem| stem.parse::<u64>().ok());
        let keep = match id {
            Some(id) if block.as_ref().is_none_or(|(kept, _)| id < *kept) => {
                if let Some((_, earlier)) = block.replace((id, entry.path())) {
                    fs::remove_file(earlier)?;
                }
                true
            }
            Some(_) => false,
            None => name == MARKS_FILE || name == META_FILE || name == META_SPARE,
        };
        if !keep {
            if entry.file_type()?.is_dir() {
                fs::remove_dir_all(entry.path())?;
            } else {
                fs::remove_file(entry.path())?;
            }
        }
    }
    let first_block = block_path(dir, 1);
    if let Some((_, path)) = &block {
        if *path != first_block {
            fs::rename(path, &first_block)?;
        }
    }
    // Opened with truncation: an existing file keeps its inode and loses its content.
    let block_file = create_block_file(dir, 1, 1).map_err(std::io::Error::other)?;
    block_file.sync_all()?;
    let meta = dir.join(META_FILE);
    let meta_spare = dir.join(META_SPARE);
    if meta.exists() {
        fs::rename(&meta, &meta_spare)?;
    }
    for name in [MARKS_FILE, META_SPARE] {
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join(name))?;
        // The emptied size must be durable: old marks coming back would move the new stream.
        file.sync_all()?;
    }
    sync_dir(dir).map_err(std::io::Error::other)
}

/// Make `dir` (which does not exist) from a spare beside it: what the creation must sync (the
/// directory, then its parent and the ancestors above), or `None` when no spare could be used.
pub(crate) fn take(dir: &Path) -> Option<CreatedDirs> {
    let parent = dir.parent()?;
    loop {
        let spare = pool().lock().get_mut(parent)?.pop()?;
        match rename_no_replace(&spare, dir) {
            Ok(()) => {
                let ancestors = parent
                    .ancestors()
                    .filter(|directory| !directory.as_os_str().is_empty())
                    .map(Path::to_path_buf)
                    .collect();
                return Some(CreatedDirs {
                    new: vec![dir.to_path_buf()],
                    ancestors,
                });
            }
            // The name exists after all: left to the ordinary path, the spare kept.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                pool()
                    .lock()
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push(spare);
                return None;
            }
            // Gone (its parent removed meanwhile) or unusable: the next one.
            Err(_) => super::removal::remove_spare(spare),
        }
    }
}

/// rename(2) that fails with `AlreadyExists` instead of replacing an (empty) directory.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from_c = CString::new(from.as_os_str().as_bytes())?;
    let to_c = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if result == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        // A file system without the flag: a plain rename when the name is free.
        Some(libc::EINVAL | libc::ENOSYS) if !to.exists() => fs::rename(from, to),
        _ => Err(error),
    }
}

/// A spare directory's files, for tests: the names a spare must hold.
#[cfg(test)]
pub(crate) fn expected_entries() -> Vec<String> {
    let mut names = vec![
        block_path(Path::new(""), 1).to_string_lossy().into_owned(),
        MARKS_FILE.to_string(),
        META_SPARE.to_string(),
    ];
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trash_directory_becomes_a_spare_holding_a_new_stores_files() {
        let root = tempfile::tempdir().unwrap();
        let trash = root.path().join("S.deleted.1.1");
        fs::create_dir(&trash).unwrap();
        for (name, bytes) in [
            ("000000000003.blk", &b"old block three"[..]),
            ("000000000007.blk", b"old block seven"),
            ("000000000003.idx", b"index"),
            ("seq.hwm", b"old marks"),
            ("meta.bin", b"old metadata"),
        ] {
            fs::write(trash.join(name), bytes).unwrap();
        }
        fs::create_dir_all(trash.join("consumers/C")).unwrap();
        fs::write(trash.join("consumers/C/state"), b"x").unwrap();
        assert!(recycle(&trash));
        assert!(!trash.exists());
        let spare_name = pool().lock()[root.path()][0].clone();
        assert!(is_own_spare(&spare_name), "{spare_name:?}");
        assert!(super::super::removal::is_trash(
            &spare_name.file_name().unwrap().to_string_lossy()
        ));
        assert!(!is_own_spare(&root.path().join("store.spare.1.2.3")));
        let left = root.path().join("store.spare.1.2.3");
        fs::rename(&spare_name, &left).unwrap();
        pool().lock().remove(root.path());
        assert!(
            adopt(&left),
            "a spare left by an earlier process is taken over"
        );
        assert!(!left.exists());
        assert!(
            !adopt(&root.path().join("S.deleted.1.2")),
            "trash is not a spare"
        );
        assert_eq!(spares_beside(root.path()), 1);
        let spare = pool().lock()[root.path()][0].clone();
        let mut names: Vec<String> = fs::read_dir(&spare)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, expected_entries());
        assert_eq!(
            fs::read(block_path(&spare, 1)).unwrap(),
            super::super::record::encode_block_header(1)
        );
        assert_eq!(fs::metadata(spare.join(MARKS_FILE)).unwrap().len(), 0);
        assert_eq!(fs::metadata(spare.join(META_SPARE)).unwrap().len(), 0);

        let stream = root.path().join("NEW");
        fs::create_dir(&stream).unwrap();
        assert!(
            take(&stream).is_none(),
            "an existing name is never replaced"
        );
        fs::remove_dir(&stream).unwrap();
        let created = take(&stream).expect("the spare is taken");
        assert_eq!(created.new, vec![stream.clone()]);
        assert_eq!(created.ancestors[0], root.path());
        assert!(block_path(&stream, 1).exists());
        assert_eq!(spares_beside(root.path()), 0);
        assert!(take(&root.path().join("OTHER")).is_none());
    }
}

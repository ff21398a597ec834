//! The simulated disk: every file and directory twice, as the programs see it now (`current`)
//! and as it would be found after a power loss (`durable`). `fsync` of a file makes its current
//! bytes durable, `fsync` of a directory its current entries; [`DiskState::cut_power`] puts every
//! node back to its durable image and forgets whatever is no longer reachable from the root.
//!
//! The model is strict POSIX: a new file's name survives only when its directory was synced,
//! a rename only when both directories were. [`SyncModel::Journaled`] relaxes that the way a
//! journaling file system (ext4 `data=ordered`) behaves in practice: any fsync commits the
//! journal, and with it every directory change made so far.
//!
//! Faults: a capacity (writes that would pass it fail with ENOSPC), a full directory (writes that
//! would grow a file anywhere below a directory of a given name fail with ENOSPC, as under a
//! quota), failing writes (EIO, nothing changes) and failing fsyncs (EIO, and nothing becomes
//! durable, as after a real failed fsync).
//!
//! Who calls it: `filesystem.rs` (the FUSE operations) and the [`crate::Disk`] handle. Nothing
//! here knows FUSE.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

/// Inode number of the root directory (FUSE's).
pub const ROOT: u64 = 1;

/// What a file's fsync makes durable besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncModel {
    /// Only the bytes: names need their directory's fsync (POSIX's promise, no more).
    #[default]
    Strict,
    /// Also every directory change made so far (a journal commit, as on ext4).
    Journaled,
}

/// An error as an errno value.
pub type Errno = i32;

#[derive(Debug)]
pub(crate) struct FileData {
    pub current: Vec<u8>,
    pub durable: Vec<u8>,
    /// Lowest offset changed since the last sync: bytes below it are the same in both images.
    dirty_from: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct Directory {
    pub current: BTreeMap<OsString, u64>,
    pub durable: BTreeMap<OsString, u64>,
}

#[derive(Debug)]
pub(crate) enum Kind {
    File(FileData),
    Directory(Directory),
}

#[derive(Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    pub mode: u32,
    pub modified: SystemTime,
    /// Where the node was last named (`..` in directory listings).
    pub parent: u64,
    pub name: OsString,
}

impl Node {
    pub fn size(&self) -> u64 {
        match &self.kind {
            Kind::File(file) => file.current.len() as u64,
            Kind::Directory(directory) => directory.current.len() as u64,
        }
    }
}

/// Figures of the disk, for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Bytes in current file images.
    pub used_bytes: u64,
    /// Bytes of files that differ from their durable image (lost at a cut).
    pub unsynced_bytes: u64,
    /// fsync and fsyncdir calls answered.
    pub syncs: u64,
    /// Power cuts so far.
    pub cuts: u64,
}

/// The whole simulated disk.
#[derive(Debug)]
pub struct DiskState {
    pub(crate) nodes: BTreeMap<u64, Node>,
    next_inode: u64,
    pub(crate) capacity: u64,
    pub(crate) failing_syncs: bool,
    pub(crate) failing_writes: bool,
    /// Files below a directory of this name take no more bytes.
    pub(crate) full_under: Option<OsString>,
    pub(crate) model: SyncModel,
    syncs: u64,
    cuts: u64,
}

impl DiskState {
    pub fn new(capacity: u64, model: SyncModel) -> DiskState {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            ROOT,
            Node {
                kind: Kind::Directory(Directory::default()),
                mode: 0o755,
                modified: SystemTime::now(),
                parent: ROOT,
                name: OsString::new(),
            },
        );
        DiskState {
            nodes,
            next_inode: ROOT + 1,
            capacity,
            failing_syncs: false,
            failing_writes: false,
            full_under: None,
            model,
            syncs: 0,
            cuts: 0,
        }
    }

    pub fn stats(&self) -> DiskStats {
        let mut stats = DiskStats {
            syncs: self.syncs,
            cuts: self.cuts,
            ..DiskStats::default()
        };
        for node in self.nodes.values() {
            if let Kind::File(file) = &node.kind {
                stats.used_bytes += file.current.len() as u64;
                if let Some(from) = file.dirty_from {
                    stats.unsynced_bytes += (file.current.len() as u64).saturating_sub(from);
                }
            }
        }
        stats
    }

    fn used(&self) -> u64 {
        self.nodes
            .values()
            .map(|node| match &node.kind {
                Kind::File(file) => file.current.len() as u64,
                Kind::Directory(_) => 0,
            })
            .sum()
    }

    /// Whether a file may not grow by `more` bytes: past the capacity, or below the full
    /// directory.
    fn refuses_growth(&self, inode: u64, more: u64) -> bool {
        if self.used() + more > self.capacity {
            return true;
        }
        let Some(full) = &self.full_under else {
            return false;
        };
        let mut at = inode;
        while let Some(node) = self.nodes.get(&at).filter(|_| at != ROOT) {
            if at != inode && &node.name == full {
                return true;
            }
            at = node.parent;
        }
        false
    }

    pub(crate) fn node(&self, inode: u64) -> Result<&Node, Errno> {
        self.nodes.get(&inode).ok_or(libc::ENOENT)
    }

    fn directory(&self, inode: u64) -> Result<&Directory, Errno> {
        match &self.node(inode)?.kind {
            Kind::Directory(directory) => Ok(directory),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn directory_mut(&mut self, inode: u64) -> Result<&mut Directory, Errno> {
        match &mut self.nodes.get_mut(&inode).ok_or(libc::ENOENT)?.kind {
            Kind::Directory(directory) => Ok(directory),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn file_mut(&mut self, inode: u64) -> Result<&mut FileData, Errno> {
        match &mut self.nodes.get_mut(&inode).ok_or(libc::ENOENT)?.kind {
            Kind::File(file) => Ok(file),
            Kind::Directory(_) => Err(libc::EISDIR),
        }
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<u64, Errno> {
        self.directory(parent)?
            .current
            .get(name)
            .copied()
            .ok_or(libc::ENOENT)
    }

    /// Entries of a directory, in name order.
    pub fn entries(&self, directory: u64) -> Result<Vec<(OsString, u64)>, Errno> {
        Ok(self
            .directory(directory)?
            .current
            .iter()
            .map(|(name, inode)| (name.clone(), *inode))
            .collect())
    }

    /// A new file or directory named `name` in `parent`.
    pub fn create(
        &mut self,
        parent: u64,
        name: &OsStr,
        directory: bool,
        mode: u32,
    ) -> Result<u64, Errno> {
        if self.directory(parent)?.current.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let inode = self.next_inode;
        self.next_inode += 1;
        let kind = if directory {
            Kind::Directory(Directory::default())
        } else {
            Kind::File(FileData {
                current: Vec::new(),
                durable: Vec::new(),
                dirty_from: None,
            })
        };
        self.nodes.insert(
            inode,
            Node {
                kind,
                mode,
                modified: SystemTime::now(),
                parent,
                name: name.to_os_string(),
            },
        );
        self.directory_mut(parent)?
            .current
            .insert(name.to_os_string(), inode);
        Ok(inode)
    }

    pub fn remove(&mut self, parent: u64, name: &OsStr, directory: bool) -> Result<(), Errno> {
        let inode = self.lookup(parent, name)?;
        match &self.node(inode)?.kind {
            Kind::Directory(found) if directory => {
                if !found.current.is_empty() {
                    return Err(libc::ENOTEMPTY);
                }
            }
            Kind::Directory(_) => return Err(libc::EISDIR),
            Kind::File(_) if directory => return Err(libc::ENOTDIR),
            Kind::File(_) => {}
        }
        self.directory_mut(parent)?.current.remove(name);
        Ok(())
    }

    pub fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        no_replace: bool,
    ) -> Result<(), Errno> {
        let inode = self.lookup(parent, name)?;
        if let Ok(existing) = self.lookup(new_parent, new_name) {
            if no_replace {
                return Err(libc::EEXIST);
            }
            if existing == inode {
                return Ok(());
            }
            let replaced_is_directory = matches!(self.node(existing)?.kind, Kind::Directory(_));
            let moved_is_directory = matches!(self.node(inode)?.kind, Kind::Directory(_));
            if replaced_is_directory != moved_is_directory {
                return Err(if moved_is_directory {
                    libc::ENOTDIR
                } else {
                    libc::EISDIR
                });
            }
            if let Kind::Directory(replaced) = &self.node(existing)?.kind {
                if !replaced.current.is_empty() {
                    return Err(libc::ENOTEMPTY);
                }
            }
        }
        self.directory(new_parent)?;
        self.directory_mut(parent)?.current.remove(name);
        self.directory_mut(new_parent)?
            .current
            .insert(new_name.to_os_string(), inode);
        if let Some(node) = self.nodes.get_mut(&inode) {
            node.parent = new_parent;
            node.name = new_name.to_os_string();
        }
        Ok(())
    }

    pub fn read(&self, inode: u64, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        match &self.node(inode)?.kind {
            Kind::File(file) => {
                let start = (offset as usize).min(file.current.len());
                let end = start.saturating_add(size as usize).min(file.current.len());
                Ok(file.current[start..end].to_vec())
            }
            Kind::Directory(_) => Err(libc::EISDIR),
        }
    }

    pub fn write(&mut self, inode: u64, offset: u64, data: &[u8]) -> Result<u32, Errno> {
        if self.failing_writes {
            return Err(libc::EIO);
        }
        let old_len = self.node(inode)?.size();
        let end = offset.checked_add(data.len() as u64).ok_or(libc::EFBIG)?;
        if end > old_len && self.refuses_growth(inode, end - old_len) {
            return Err(libc::ENOSPC);
        }
        let file = self.file_mut(inode)?;
        if end as usize > file.current.len() {
            file.current.resize(end as usize, 0);
        }
        file.current[offset as usize..end as usize].copy_from_slice(data);
        // A write past the end also creates the zeros before it.
        let from = offset.min(old_len);
        file.dirty_from = Some(file.dirty_from.map_or(from, |dirty| dirty.min(from)));
        self.touch(inode);
        Ok(data.len() as u32)
    }

    pub fn set_len(&mut self, inode: u64, len: u64) -> Result<(), Errno> {
        let old_len = self.node(inode)?.size();
        if len > old_len && self.refuses_growth(inode, len - old_len) {
            return Err(libc::ENOSPC);
        }
        let file = self.file_mut(inode)?;
        file.current.resize(len as usize, 0);
        let from = old_len.min(len);
        file.dirty_from = Some(file.dirty_from.map_or(from, |dirty| dirty.min(from)));
        self.touch(inode);
        Ok(())
    }

    pub fn set_mode(&mut self, inode: u64, mode: u32) -> Result<(), Errno> {
        self.nodes.get_mut(&inode).ok_or(libc::ENOENT)?.mode = mode & 0o7777;
        Ok(())
    }

    fn touch(&mut self, inode: u64) {
        if let Some(node) = self.nodes.get_mut(&inode) {
            node.modified = SystemTime::now();
        }
    }

    /// fsync / fdatasync of a file or fsync of a directory.
    pub fn sync(&mut self, inode: u64) -> Result<(), Errno> {
        if self.failing_syncs {
            return Err(libc::EIO);
        }
        self.syncs += 1;
        let model = self.model;
        let node = self.nodes.get_mut(&inode).ok_or(libc::ENOENT)?;
        match &mut node.kind {
            Kind::Directory(directory) => {
                directory.durable = directory.current.clone();
            }
            Kind::File(file) => {
                if let Some(from) = file.dirty_from.take() {
                    let from = (from as usize).min(file.current.len());
                    file.durable.truncate(from);
                    file.durable.resize(from, 0);
                    file.durable.extend_from_slice(&file.current[from..]);
                }
            }
        }
        if model == SyncModel::Journaled {
            for node in self.nodes.values_mut() {
                if let Kind::Directory(directory) = &mut node.kind {
                    directory.durable = directory.current.clone();
                }
            }
        }
        Ok(())
    }

    /// The power goes: every node back to its durable image; nodes no durable entry reaches go.
    pub fn cut_power(&mut self) {
        self.cuts += 1;
        for node in self.nodes.values_mut() {
            match &mut node.kind {
                Kind::Directory(directory) => directory.current = directory.durable.clone(),
                Kind::File(file) => {
                    if let Some(from) = file.dirty_from.take() {
                        let from = (from as usize).min(file.durable.len());
                        file.current.truncate(from);
                        file.current.extend_from_slice(&file.durable[from..]);
                    }
                }
            }
        }
        let mut reachable = std::collections::BTreeSet::new();
        let mut pending = vec![ROOT];
        while let Some(inode) = pending.pop() {
            if !reachable.insert(inode) {
                continue;
            }
            if let Some(Node {
                kind: Kind::Directory(directory),
                ..
            }) = self.nodes.get(&inode)
            {
                pending.extend(directory.current.values().copied());
            }
        }
        self.nodes.retain(|inode, _| reachable.contains(inode));
        for (inode, node) in &self.nodes {
            if let Kind::Directory(directory) = &node.kind {
                for child in directory.current.values() {
                    debug_assert!(self.nodes.contains_key(child), "{inode} -> {child}");
                }
            }
        }
    }

    /// Current bytes of the file at `path` (components from the root), for tests.
    #[cfg(test)]
    pub fn file_at(&self, path: &[&str]) -> Option<Vec<u8>> {
        let mut inode = ROOT;
        for component in path {
            inode = self.lookup(inode, OsStr::new(component)).ok()?;
        }
        match &self.nodes.get(&inode)?.kind {
            Kind::File(file) => Some(file.current.clone()),
            Kind::Directory(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk() -> DiskState {
        DiskState::new(1 << 20, SyncModel::Strict)
    }

    #[test]
    fn unsynced_bytes_are_lost_synced_bytes_stay() {
        let mut disk = disk();
        let file = disk.create(ROOT, OsStr::new("a"), false, 0o644).unwrap();
        disk.sync(ROOT).unwrap();
        disk.write(file, 0, b"hello").unwrap();
        disk.sync(file).unwrap();
        disk.write(file, 5, b" world").unwrap();
        disk.write(file, 0, b"J").unwrap();
        assert_eq!(disk.stats().unsynced_bytes, 11);
        disk.cut_power();
        assert_eq!(disk.file_at(&["a"]).unwrap(), b"hello");
        assert_eq!(disk.stats().unsynced_bytes, 0);
    }

    #[test]
    fn a_name_needs_its_directory_synced() {
        let mut disk = disk();
        let file = disk.create(ROOT, OsStr::new("a"), false, 0o644).unwrap();
        disk.write(file, 0, b"data").unwrap();
        disk.sync(file).unwrap();
        disk.cut_power();
        assert_eq!(disk.file_at(&["a"]), None, "the name was never synced");

        let file = disk.create(ROOT, OsStr::new("b"), false, 0o644).unwrap();
        disk.write(file, 0, b"data").unwrap();
        disk.sync(file).unwrap();
        disk.sync(ROOT).unwrap();
        disk.cut_power();
        assert_eq!(disk.file_at(&["b"]).unwrap(), b"data");
    }

    #[test]
    fn the_journaling_model_commits_every_name_at_any_sync() {
        let mut disk = DiskState::new(1 << 20, SyncModel::Journaled);
        let directory = disk.create(ROOT, OsStr::new("d"), true, 0o755).unwrap();
        let file = disk
            .create(directory, OsStr::new("a"), false, 0o644)
            .unwrap();
        disk.write(file, 0, b"data").unwrap();
        disk.sync(file).unwrap();
        disk.cut_power();
        assert_eq!(disk.file_at(&["d", "a"]).unwrap(), b"data");
    }

    #[test]
    fn unsynced_rename_and_unlink_come_undone() {
        let mut disk = disk();
        let old = disk.create(ROOT, OsStr::new("f"), false, 0o644).unwrap();
        disk.write(old, 0, b"old").unwrap();
        disk.sync(old).unwrap();
        disk.sync(ROOT).unwrap();
        let new = disk
            .create(ROOT, OsStr::new("f.tmp"), false, 0o644)
            .unwrap();
        disk.write(new, 0, b"new").unwrap();
        disk.sync(new).unwrap();
        disk.rename(ROOT, OsStr::new("f.tmp"), ROOT, OsStr::new("f"), false)
            .unwrap();
        assert_eq!(disk.file_at(&["f"]).unwrap(), b"new");
        disk.cut_power();
        assert_eq!(disk.file_at(&["f"]).unwrap(), b"old");
        assert_eq!(disk.file_at(&["f.tmp"]), None);

        disk.remove(ROOT, OsStr::new("f"), false).unwrap();
        disk.cut_power();
        assert_eq!(disk.file_at(&["f"]).unwrap(), b"old", "unlink not synced");
    }

    #[test]
    fn truncation_is_undone_when_not_synced() {
        let mut disk = disk();
        let file = disk.create(ROOT, OsStr::new("a"), false, 0o644).unwrap();
        disk.sync(ROOT).unwrap();
        disk.write(file, 0, b"0123456789").unwrap();
        disk.sync(file).unwrap();
        disk.set_len(file, 4).unwrap();
        disk.write(file, 4, b"xy").unwrap();
        disk.cut_power();
        assert_eq!(disk.file_at(&["a"]).unwrap(), b"0123456789");
    }

    #[test]
    fn capacity_and_failing_syncs() {
        let mut disk = DiskState::new(8, SyncModel::Strict);
        let file = disk.create(ROOT, OsStr::new("a"), false, 0o644).unwrap();
        disk.sync(ROOT).unwrap();
        assert_eq!(disk.write(file, 0, b"12345678").unwrap(), 8);
        assert_eq!(disk.write(file, 8, b"9"), Err(libc::ENOSPC));
        assert_eq!(
            disk.write(file, 0, b"x").unwrap(),
            1,
            "overwrites need no space"
        );
        disk.failing_writes = true;
        assert_eq!(disk.write(file, 0, b"y"), Err(libc::EIO));
        disk.failing_writes = false;
        disk.failing_syncs = true;
        assert_eq!(disk.sync(file), Err(libc::EIO));
        disk.cut_power();
        assert_eq!(
            disk.file_at(&["a"]).unwrap(),
            b"",
            "a failed sync made nothing durable"
        );
    }

    #[test]
    fn a_full_directory_refuses_growth_below_it_only() {
        let mut disk = DiskState::new(1 << 20, SyncModel::Strict);
        let full = disk.create(ROOT, OsStr::new("log"), true, 0o755).unwrap();
        let inner = disk.create(full, OsStr::new("group"), true, 0o755).unwrap();
        let below = disk.create(inner, OsStr::new("a"), false, 0o644).unwrap();
        let beside = disk.create(ROOT, OsStr::new("b"), false, 0o644).unwrap();
        assert_eq!(disk.write(below, 0, b"1234").unwrap(), 4);
        disk.full_under = Some("log".into());
        assert_eq!(disk.write(below, 4, b"5"), Err(libc::ENOSPC));
        assert_eq!(disk.set_len(below, 8), Err(libc::ENOSPC));
        assert_eq!(
            disk.write(below, 0, b"x").unwrap(),
            1,
            "overwrites need no space"
        );
        assert_eq!(
            disk.write(beside, 0, b"1234").unwrap(),
            4,
            "elsewhere it grows"
        );
        disk.full_under = None;
        assert_eq!(disk.write(below, 4, b"5").unwrap(), 1);
    }
}

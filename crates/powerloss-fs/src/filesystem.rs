//! The FUSE side: each kernel request becomes one call on the shared [`DiskState`]. Attributes
//! and entries are cached by the kernel for a second; a mount lives from one power cut to the
//! next (the harness unmounts before it cuts, so no kernel cache outlives the data).
//!
//! Locks (`flock`, `fcntl`) are left to the kernel's local emulation: only one mount at a time.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use parking_lot::Mutex;

use crate::disk::{DiskState, Kind};

const TTL: Duration = Duration::from_secs(1);
const BLOCK: u64 = 4096;

pub(crate) struct PowerLossFilesystem {
    pub disk: Arc<Mutex<DiskState>>,
}

fn errno(value: i32) -> Errno {
    Errno::from_i32(value)
}

fn attributes(disk: &DiskState, inode: u64) -> Result<FileAttr, i32> {
    let node = disk.node(inode)?;
    let size = node.size();
    let kind = match node.kind {
        Kind::File(_) => FileType::RegularFile,
        Kind::Directory(_) => FileType::Directory,
    };
    Ok(FileAttr {
        ino: INodeNo(inode),
        size,
        blocks: size.div_ceil(512),
        atime: node.modified,
        mtime: node.modified,
        ctime: node.modified,
        crtime: node.modified,
        kind,
        perm: node.mode as u16,
        nlink: if kind == FileType::Directory { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: BLOCK as u32,
        flags: 0,
    })
}

impl PowerLossFilesystem {
    fn entry(&self, result: Result<u64, i32>, reply: ReplyEntry) {
        let disk = self.disk.lock();
        match result.and_then(|inode| attributes(&disk, inode)) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(code) => reply.error(errno(code)),
        }
    }
}

fn empty(result: Result<(), i32>, reply: ReplyEmpty) {
    match result {
        Ok(()) => reply.ok(),
        Err(code) => reply.error(errno(code)),
    }
}

impl Filesystem for PowerLossFilesystem {
    fn lookup(&self, _request: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = self.disk.lock().lookup(parent.0, name);
        self.entry(found, reply);
    }

    fn getattr(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: Option<FileHandle>,
        reply: ReplyAttr,
    ) {
        match attributes(&self.disk.lock(), inode.0) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn setattr(
        &self,
        _request: &Request,
        inode: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _handle: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut disk = self.disk.lock();
        let mut result = Ok(());
        if let Some(size) = size {
            result = disk.set_len(inode.0, size);
        }
        if let (Ok(()), Some(mode)) = (&result, mode) {
            result = disk.set_mode(inode.0, mode);
        }
        match result.and_then(|()| attributes(&disk, inode.0)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn mknod(
        &self,
        _request: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            reply.error(Errno::EOPNOTSUPP);
            return;
        }
        let created = self
            .disk
            .lock()
            .create(parent.0, name, false, mode & !umask & 0o7777);
        self.entry(created, reply);
    }

    fn mkdir(
        &self,
        _request: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let created = self
            .disk
            .lock()
            .create(parent.0, name, true, mode & !umask & 0o7777);
        self.entry(created, reply);
    }

    fn unlink(&self, _request: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(self.disk.lock().remove(parent.0, name, false), reply);
    }

    fn rmdir(&self, _request: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(self.disk.lock().remove(parent.0, name, true), reply);
    }

    fn rename(
        &self,
        _request: &Request,
        parent: INodeNo,
        name: &OsStr,
        new_parent: INodeNo,
        new_name: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            reply.error(Errno::EINVAL);
            return;
        }
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        empty(
            self.disk
                .lock()
                .rename(parent.0, name, new_parent.0, new_name, no_replace),
            reply,
        );
    }

    fn open(&self, _request: &Request, inode: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.disk.lock().node(inode.0) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn read(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.disk.lock().read(inode.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn write(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.disk.lock().write(inode.0, offset, data) {
            Ok(written) => reply.written(written),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn flush(
        &self,
        _request: &Request,
        _inode: INodeNo,
        _handle: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(self.disk.lock().sync(inode.0), reply);
    }

    fn readdir(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let disk = self.disk.lock();
        let entries = match disk.entries(inode.0) {
            Ok(entries) => entries,
            Err(code) => {
                reply.error(errno(code));
                return;
            }
        };
        let parent = disk.node(inode.0).map_or(inode.0, |node| node.parent);
        let mut all = vec![
            (inode.0, FileType::Directory, OsStr::new(".").to_os_string()),
            (parent, FileType::Directory, OsStr::new("..").to_os_string()),
        ];
        for (name, child) in entries {
            let kind = match disk.node(child).map(|node| &node.kind) {
                Ok(Kind::Directory(_)) => FileType::Directory,
                _ => FileType::RegularFile,
            };
            all.push((child, kind, name));
        }
        for (position, (child, kind, name)) in all.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*child), position as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(self.disk.lock().sync(inode.0), reply);
    }

    fn statfs(&self, _request: &Request, _inode: INodeNo, reply: ReplyStatfs) {
        let disk = self.disk.lock();
        let used = disk.stats().used_bytes;
        let blocks = disk.capacity / BLOCK;
        let free = disk.capacity.saturating_sub(used) / BLOCK;
        reply.statfs(
            blocks,
            free,
            free,
            1 << 20,
            1 << 20,
            BLOCK as u32,
            255,
            BLOCK as u32,
        );
    }

    fn access(
        &self,
        _request: &Request,
        _inode: INodeNo,
        _mask: fuser::AccessFlags,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn create(
        &self,
        _request: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut disk = self.disk.lock();
        let created = disk
            .create(parent.0, name, false, mode & !umask & 0o7777)
            .and_then(|inode| attributes(&disk, inode));
        match created {
            Ok(attr) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(0),
                FopenFlags::empty(),
            ),
            Err(code) => reply.error(errno(code)),
        }
    }

    fn fallocate(
        &self,
        _request: &Request,
        inode: INodeNo,
        _handle: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if mode != 0 {
            reply.error(Errno::EOPNOTSUPP);
            return;
        }
        let mut disk = self.disk.lock();
        let result = disk.node(inode.0).map(|node| node.size()).and_then(|size| {
            let end = offset.saturating_add(length);
            if end > size {
                disk.set_len(inode.0, end)
            } else {
                Ok(())
            }
        });
        empty(result, reply);
    }
}

//! A group's snapshots on disk, never whole in memory: the current one in `<group dir>/snapshot`,
//! one being built or received in a temporary file beside it, each read and written in bounded
//! pieces (a replicated stream's snapshot is the whole stream).
//!
//! The file (`NRS2`): `[magic "NRS2"][u32 meta length][meta][u64 data length][data][u32 CRC-32
//! of everything between the magic and the CRC]`. The data length is a u64: a snapshot is not
//! limited to 4 GiB. A file in the earlier form (`NRS1`, `checked_file.rs`: the CRC first, the
//! data's length a u32), written by an earlier build, is read whole once at open and rewritten in
//! this form (a rolling upgrade meets it once per group).
//!
//! A [`SnapshotFile`] is an open file and where its data lies: readers use positional reads,
//! so a sender reads its chunks while the group replaces the current snapshot (the open file
//! keeps the replaced contents). A temporary one is removed when its last handle goes, unless
//! it was made the current snapshot ([`SnapshotFile::persist`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::checked_file;
use crate::codec::{Reader, Writer};
use crate::types::SnapshotMeta;

const MAGIC: &[u8; 4] = b"NRS2";
const OLD_MAGIC: &[u8; 4] = b"NRS1";
/// How much of a snapshot is read or written at a time.
pub(crate) const PIECE: usize = 1 << 20;

/// Where an application writes its snapshot ([`crate::StateMachine::snapshot`]): a file it may
/// seek back in (to fill in a length), positions counted from the start of its data.
pub trait SnapshotOut: Write + Seek {}

impl<T: Write + Seek> SnapshotOut for T {}

/// The current snapshot's path in a group's directory.
pub(crate) fn current_path(directory: &Path) -> PathBuf {
    directory.join("snapshot")
}

/// A new temporary file's path in `directory` (unique in this process).
fn temporary_path(directory: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let number = NEXT.fetch_add(1, Ordering::Relaxed);
    directory.join(format!("snapshot.part-{number}"))
}

/// Removes temporary snapshot files an earlier run left in `directory`.
pub(crate) fn remove_leftovers(directory: &Path) -> io::Result<()> {
    for entry in fs::read_dir(directory)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snapshot.part-") || name == "snapshot.tmp" {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// A new file, read and written (a finished snapshot is read back through the same handle).
fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

fn header(meta: &SnapshotMeta, data_length: u64) -> Vec<u8> {
    let mut writer = Writer::new();
    writer.snapshot_meta(meta);
    let meta = writer.finish();
    let mut header = Vec::with_capacity(16 + meta.len());
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    header.extend_from_slice(&meta);
    header.extend_from_slice(&data_length.to_le_bytes());
    header
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

struct Inner {
    file: File,
    path: Mutex<PathBuf>,
    /// Removed with the last handle (not yet the group's current snapshot).
    temporary: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.temporary.load(Ordering::Acquire) {
            let path = self.path.lock().unwrap_or_else(|e| e.into_inner());
            let _ = fs::remove_file(&*path);
        }
    }
}

/// A snapshot's data in a file (the `SnapshotData` of every group). Cloning shares the file.
#[derive(Clone)]
pub(crate) struct SnapshotFile {
    inner: Arc<Inner>,
    data_start: u64,
    data_length: u64,
}

impl SnapshotFile {
    pub(crate) fn len(&self) -> u64 {
        self.data_length
    }

    /// Fills `buffer` from the data at `offset` (`offset + buffer.len()` within the data).
    pub(crate) fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()> {
        if offset.saturating_add(buffer.len() as u64) > self.data_length {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "read past the snapshot's end",
            ));
        }
        self.inner
            .file
            .read_exact_at(buffer, self.data_start + offset)
    }

    /// The data from its start, read [`PIECE`] at a time.
    pub(crate) fn reader(&self) -> io::BufReader<DataReader> {
        io::BufReader::with_capacity(
            PIECE,
            DataReader {
                file: self.clone(),
                position: 0,
            },
        )
    }

    /// Makes this the current snapshot at `path` (renamed there unless already there, the
    /// directory synced); it is no longer removed with its last handle.
    pub(crate) fn persist(&self, path: &Path) -> io::Result<()> {
        let mut own = self.inner.path.lock().unwrap_or_else(|e| e.into_inner());
        if *own != path {
            fs::rename(&*own, path)?;
            if let Some(parent) = path.parent() {
                File::open(parent)?.sync_all()?;
            }
            *own = path.to_path_buf();
        }
        self.inner.temporary.store(false, Ordering::Release);
        Ok(())
    }
}

/// Reads a [`SnapshotFile`]'s data in order (positional reads: handles share no cursor).
pub(crate) struct DataReader {
    file: SnapshotFile,
    position: u64,
}

impl Read for DataReader {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self.file.data_length - self.position;
        let length = (buffer.len() as u64).min(left) as usize;
        if length == 0 {
            return Ok(0);
        }
        self.file.read_at(self.position, &mut buffer[..length])?;
        self.position += length as u64;
        Ok(length)
    }
}

/// A snapshot being written to a temporary file in order: its header first (the data's length
/// known up front, as a receiver knows it), then the data, then [`SequentialWriter::finish`].
/// Dropped unfinished, its file is removed.
pub(crate) struct SequentialWriter {
    file: Option<BufWriter<File>>,
    path: PathBuf,
    hasher: crc32fast::Hasher,
    data_start: u64,
    data_length: u64,
    written: u64,
}

impl SequentialWriter {
    pub(crate) fn create(
        directory: &Path,
        meta: &SnapshotMeta,
        data_length: u64,
    ) -> io::Result<Self> {
        let path = temporary_path(directory);
        let file = BufWriter::with_capacity(PIECE, create(&path)?);
        let header = header(meta, data_length);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&header[4..]);
        let mut writer = SequentialWriter {
            file: Some(file),
            path,
            hasher,
            data_start: header.len() as u64,
            data_length,
            written: 0,
        };
        if let Some(file) = writer.file.as_mut() {
            file.write_all(&header)?;
        }
        Ok(writer)
    }

    /// How much data was written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if self.written + data.len() as u64 > self.data_length {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "more snapshot data than announced",
            ));
        }
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("snapshot file already finished"));
        };
        file.write_all(data)?;
        self.hasher.update(data);
        self.written += data.len() as u64;
        Ok(())
    }

    /// Writes the CRC and syncs the file: the snapshot, still temporary.
    pub(crate) fn finish(mut self) -> io::Result<SnapshotFile> {
        if self.written != self.data_length {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "less snapshot data than announced",
            ));
        }
        let Some(mut file) = self.file.take() else {
            return Err(io::Error::other("snapshot file already finished"));
        };
        file.write_all(&self.hasher.clone().finalize().to_le_bytes())?;
        let file = file.into_inner().map_err(|error| error.into_error())?;
        file.sync_all()?;
        Ok(SnapshotFile {
            inner: Arc::new(Inner {
                file,
                path: Mutex::new(std::mem::take(&mut self.path)),
                temporary: AtomicBool::new(true),
            }),
            data_start: self.data_start,
            data_length: self.data_length,
        })
    }
}

impl Drop for SequentialWriter {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A snapshot an application writes in any order ([`SnapshotOut`]): its data's length is
/// known at the end, then the header is completed and the CRC computed over the file read back.
pub(crate) struct BuildWriter {
    file: BufWriter<File>,
    path: PathBuf,
    data_start: u64,
    length_at: u64,
    /// The file's position (tracked: asking a `BufWriter` flushes it).
    position: u64,
    end: u64,
}

impl BuildWriter {
    pub(crate) fn create(directory: &Path, meta: &SnapshotMeta) -> io::Result<Self> {
        let path = temporary_path(directory);
        let file = create(&path)?;
        let header = header(meta, 0);
        let data_start = header.len() as u64;
        let mut writer = BuildWriter {
            file: BufWriter::with_capacity(PIECE, file),
            path,
            data_start,
            length_at: data_start - 8,
            position: data_start,
            end: data_start,
        };
        writer.file.write_all(&header)?;
        Ok(writer)
    }

    /// Completes the file (the data's length, the CRC) and syncs it: the snapshot, still
    /// temporary. Blocking: reads the whole file back.
    pub(crate) fn finish(mut self) -> io::Result<SnapshotFile> {
        let data_length = self.end - self.data_start;
        self.file.seek(SeekFrom::Start(self.length_at))?;
        self.file.write_all(&data_length.to_le_bytes())?;
        self.file.flush()?;
        let path = std::mem::take(&mut self.path);
        let result = (|| {
            let file = self.file.get_ref();
            let mut hasher = crc32fast::Hasher::new();
            let mut buffer = vec![0u8; PIECE];
            let mut offset = 4;
            while offset < self.end {
                let length = ((self.end - offset) as usize).min(PIECE);
                file.read_exact_at(&mut buffer[..length], offset)?;
                hasher.update(&buffer[..length]);
                offset += length as u64;
            }
            file.write_all_at(&hasher.finalize().to_le_bytes(), self.end)?;
            file.sync_all()?;
            file.try_clone()
        })();
        let file = match result {
            Ok(file) => file,
            Err(error) => {
                let _ = fs::remove_file(&path);
                return Err(error);
            }
        };
        Ok(SnapshotFile {
            inner: Arc::new(Inner {
                file,
                path: Mutex::new(path),
                temporary: AtomicBool::new(true),
            }),
            data_start: self.data_start,
            data_length,
        })
    }
}

impl Drop for BuildWriter {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl Write for BuildWriter {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buffer)?;
        self.position += written as u64;
        self.end = self.end.max(self.position);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for BuildWriter {
    /// Positions count from the data's start; `SeekFrom::End` from the data written so far.
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        let target = match position {
            SeekFrom::Start(offset) => self.data_start.checked_add(offset),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
            SeekFrom::End(delta) => self.end.checked_add_signed(delta),
        }
        .filter(|target| *target >= self.data_start)
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the snapshot data")
        })?;
        self.file.seek(SeekFrom::Start(target))?;
        self.position = target;
        Ok(target - self.data_start)
    }
}

/// The snapshot at `path`, `None` when there is none; an error when it is damaged. A file in
/// the earlier form is rewritten in this one first.
pub(crate) fn open(path: &Path) -> io::Result<Option<(SnapshotMeta, SnapshotFile)>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| invalid(path, "bad header"))?;
    if &magic == OLD_MAGIC {
        drop(file);
        upgrade(path)?;
        file = File::open(path)?;
        file.read_exact(&mut magic)?;
    }
    if &magic != MAGIC {
        return Err(invalid(path, "bad header"));
    }
    let file_length = file.metadata()?.len();
    let mut length = [0u8; 4];
    file.read_exact_at(&mut length, 4)
        .map_err(|_| invalid(path, "bad header"))?;
    let meta_length = u64::from(u32::from_le_bytes(length));
    if 8 + meta_length + 8 + 4 > file_length {
        return Err(invalid(path, "bad header"));
    }
    let mut meta = vec![0u8; meta_length as usize];
    file.read_exact_at(&mut meta, 8)?;
    let meta = Reader::new(&meta)
        .snapshot_meta()
        .map_err(|_| checked_file::malformed(path, "snapshot"))?;
    let mut data_length = [0u8; 8];
    file.read_exact_at(&mut data_length, 8 + meta_length)?;
    let data_length = u64::from_le_bytes(data_length);
    let data_start = 8 + meta_length + 8;
    if data_start
        .checked_add(data_length)
        .and_then(|end| end.checked_add(4))
        != Some(file_length)
    {
        return Err(invalid(path, "length mismatch"));
    }
    let crc_at = file_length - 4;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; PIECE];
    let mut offset = 4;
    while offset < crc_at {
        let length = ((crc_at - offset) as usize).min(PIECE);
        file.read_exact_at(&mut buffer[..length], offset)?;
        hasher.update(&buffer[..length]);
        offset += length as u64;
    }
    let mut stored = [0u8; 4];
    file.read_exact_at(&mut stored, crc_at)?;
    if hasher.finalize() != u32::from_le_bytes(stored) {
        return Err(invalid(path, "checksum mismatch"));
    }
    let snapshot = SnapshotFile {
        inner: Arc::new(Inner {
            file,
            path: Mutex::new(path.to_path_buf()),
            temporary: AtomicBool::new(false),
        }),
        data_start,
        data_length,
    };
    Ok(Some((meta, snapshot)))
}

/// Rewrites a snapshot in the earlier form (read whole: it is below 4 GiB) in this one.
fn upgrade(path: &Path) -> io::Result<()> {
    let Some(body) = checked_file::read(path, OLD_MAGIC)? else {
        return Ok(());
    };
    let malformed = |_| checked_file::malformed(path, "snapshot");
    let mut reader = Reader::new(&body);
    let meta = reader.snapshot_meta().map_err(malformed)?;
    let data = reader.bytes().map_err(malformed)?;
    let directory = path.parent().unwrap_or(Path::new("."));
    let mut writer = SequentialWriter::create(directory, &meta, data.len() as u64)?;
    writer.write(data)?;
    writer.finish()?.persist(path)
}

#[cfg(test)]
pub(crate) fn write_old_form(path: &Path, meta: &SnapshotMeta, data: &[u8]) -> io::Result<()> {
    let mut writer = Writer::new();
    writer.snapshot_meta(meta);
    writer.bytes(data);
    checked_file::write(path, OLD_MAGIC, &writer.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StoredMembership;

    fn meta() -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(crate::types::log_id(3, 7, 42)),
            last_membership: StoredMembership::default(),
        }
    }

    fn data_of(file: &SnapshotFile) -> Vec<u8> {
        let mut data = Vec::new();
        file.reader().read_to_end(&mut data).expect("read");
        data
    }

    fn pattern(length: usize) -> Vec<u8> {
        (0..length).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// An application writes its snapshot in pieces and seeks back to fill in a length; the
    /// file reads back whole after it is made current, and again when the group opens it.
    #[test]
    fn a_built_snapshot_reads_back_and_opens() {
        let directory = tempfile::tempdir().expect("tempdir");
        let mut writer = BuildWriter::create(directory.path(), &meta()).expect("create");
        let data = pattern(3 * PIECE + 12_345);
        writer.write_all(&[0u8; 8]).expect("placeholder");
        for piece in data.chunks(100_000) {
            writer.write_all(piece).expect("write");
        }
        assert_eq!(writer.seek(SeekFrom::Start(0)).expect("seek"), 0);
        writer
            .write_all(&(data.len() as u64).to_le_bytes())
            .expect("patch");
        assert_eq!(
            writer.seek(SeekFrom::End(0)).expect("seek end"),
            8 + data.len() as u64
        );
        writer.write_all(b"tail").expect("tail");
        let file = writer.finish().expect("finish");
        let mut expected = (data.len() as u64).to_le_bytes().to_vec();
        expected.extend_from_slice(&data);
        expected.extend_from_slice(b"tail");
        assert_eq!(data_of(&file), expected);

        let path = current_path(directory.path());
        file.persist(&path).expect("persist");
        drop(file);
        let (opened_meta, opened) = open(&path).expect("open").expect("a snapshot");
        assert_eq!(opened_meta.last_log_id, meta().last_log_id);
        assert_eq!(data_of(&opened), expected);
        assert_eq!(
            fs::read_dir(directory.path()).expect("dir").count(),
            1,
            "only the current snapshot"
        );
    }

    /// A snapshot file an earlier build wrote (`NRS1`) opens, and is rewritten in this form.
    #[test]
    fn a_snapshot_in_the_earlier_form_opens_and_is_rewritten() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = current_path(directory.path());
        let data = pattern(100_000);
        write_old_form(&path, &meta(), &data).expect("write old");
        let (opened_meta, opened) = open(&path).expect("open").expect("a snapshot");
        assert_eq!(opened_meta.last_log_id, meta().last_log_id);
        assert_eq!(data_of(&opened), data);
        assert_eq!(&fs::read(&path).expect("read")[..4], MAGIC);
        drop(opened);
        let (_, again) = open(&path).expect("open again").expect("a snapshot");
        assert_eq!(data_of(&again), data);
    }

    #[test]
    fn a_damaged_snapshot_is_an_error() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = current_path(directory.path());
        let mut writer = SequentialWriter::create(directory.path(), &meta(), 1000).expect("w");
        writer.write(&pattern(1000)).expect("write");
        writer
            .finish()
            .expect("finish")
            .persist(&path)
            .expect("persist");
        let mut bytes = fs::read(&path).expect("read");
        bytes[500] ^= 1;
        fs::write(&path, &bytes).expect("damage");
        let error = open(&path).err().expect("an error");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        bytes.truncate(bytes.len() - 1);
        fs::write(&path, &bytes).expect("truncate");
        assert!(open(&path).is_err(), "a truncated file");
    }

    #[test]
    fn an_unfinished_snapshot_leaves_no_file() {
        let directory = tempfile::tempdir().expect("tempdir");
        let mut writer = SequentialWriter::create(directory.path(), &meta(), 10).expect("w");
        writer.write(b"abc").expect("write");
        assert!(writer.write(&[0; 8]).is_err(), "past the announced length");
        drop(writer);
        let mut build = BuildWriter::create(directory.path(), &meta()).expect("b");
        build.write_all(b"abc").expect("write");
        drop(build);
        assert_eq!(fs::read_dir(directory.path()).expect("dir").count(), 0);
    }
}

//! A group's log on disk: segment files of checksummed records, and the metadata file.
//!
//! Layout of a group directory:
//! - `log-<first index, 20 digits>.seg`: records `[u32 length][u32 crc32][entry]`, the checksum
//!   covering the length and the entry (CRC-32 IEEE through crc32fast). A new segment starts when
//!   the active one passes [`SEGMENT_BYTES`].
//! - `meta-record`: vote, committed log id and last purged log id, one record rewritten in place
//!   under one `fdatasync` (`meta_record.rs`), and beside it the commit hint, a newer committed log
//!   id written at each commit without one; an earlier build's `meta` is read once and carried
//!   into it.
//!
//! Synchronous code with no tokio: the async store (`log_store.rs`) calls it under a mutex and runs
//! fsyncs on the blocking pool.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::checked_file;
use crate::codec::{Reader, Writer};
use crate::meta_record::MetaRecord;
use crate::types::{Entry, LogId, Vote};

/// A segment is closed and a new one started once it holds this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 64 << 20;
/// The newest entries of a group kept in memory, at most this many bytes of records (and always
/// the last one). Older entries are read from their segment when asked for: by the replication
/// of a follower that is behind, or an apply that is. Before, every entry since the last
/// snapshot stayed in memory: a 1 GiB stream held its whole log (5,000 entries of up to 4,096
/// messages each before a snapshot) on every replica.
const CACHE_BYTES: u64 = 8 << 20;
const RECORD_HEADER: usize = 8;

/// What recovery found wrong at the end of the log, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file holding the first bad record.
    pub segment: PathBuf,
    /// Byte offset of the first bad record in that segment; the log was cut there.
    pub offset: u64,
    /// Bytes dropped from that point on, this segment and every later one together.
    pub dropped_bytes: u64,
    /// Why the record was refused.
    pub reason: &'static str,
}

/// The durable small state beside the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) vote: Option<Vote>,
    pub(crate) committed: Option<LogId>,
    pub(crate) purged: Option<LogId>,
}

struct Segment {
    first_index: u64,
    path: PathBuf,
    file: Arc<File>,
    length: u64,
}

/// Where a live record lives (to read it back and to truncate there), and its entry's id.
#[derive(Clone, Copy)]
struct Location {
    segment: usize,
    offset: u64,
    /// The whole record's length, header included.
    length: u64,
    log_id: LogId,
}

/// The open log of one group: where every live entry is in its files, and the newest entries in
/// memory ([`CACHE_BYTES`]).
pub(crate) struct LogFile {
    directory: PathBuf,
    segments: Vec<Segment>,
    locations: BTreeMap<u64, Location>,
    cached: BTreeMap<u64, Entry>,
    /// The record bytes of the `cached` entries.
    cached_bytes: u64,
    cache_limit: u64,
    pub(crate) meta: Meta,
    /// Where `meta` is kept.
    pub(crate) meta_record: MetaRecord,
    /// A unit test's stand-in for the operating system refusing record writes: every one
    /// while `refuse_writes` is set, the next one for `refuse_once`.
    #[cfg(test)]
    pub(crate) refuse_writes: Option<io::ErrorKind>,
    #[cfg(test)]
    pub(crate) refuse_once: Option<io::ErrorKind>,
}

fn checksum(parts: &[&[u8]]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize()
}

fn segment_path(directory: &Path, first_index: u64) -> PathBuf {
    directory.join(format!("log-{first_index:020}.seg"))
}

fn sync_directory(directory: &Path) -> io::Result<()> {
    File::open(directory)?.sync_all()
}

/// Creates `directory` and its missing ancestors, each made durable in its parent (the parent
/// fsynced): a new directory's name is on disk only once its parent is synced, and without that
/// a power cut takes the whole log, fsynced appends included.
fn create_durable_directory(directory: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(directory);
    while let Some(path) = next {
        if path.as_os_str().is_empty() || path.is_dir() {
            break;
        }
        missing.push(path);
        next = path.parent();
    }
    fs::create_dir_all(directory)?;
    for created in missing.iter().rev() {
        match created.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => sync_directory(parent)?,
            _ => sync_directory(Path::new("."))?,
        }
    }
    Ok(())
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
}

impl LogFile {
    /// Opens (or creates) the log in `directory`, reading every segment and cutting the log at the
    /// first record that is short, fails its checksum, does not decode or breaks the index order.
    pub(crate) fn open(directory: &Path) -> io::Result<(LogFile, Option<TornTail>)> {
        Self::open_caching(directory, CACHE_BYTES)
    }

    /// [`LogFile::open`] keeping at most `cache_limit` bytes of the newest entries in memory.
    pub(crate) fn open_caching(
        directory: &Path,
        cache_limit: u64,
    ) -> io::Result<(LogFile, Option<TornTail>)> {
        create_durable_directory(directory)?;
        let (mut meta_record, body) = MetaRecord::open(directory)?;
        let mut meta = match body {
            Some(body) => decode_meta(directory, &body)?,
            None => Meta::default(),
        };
        // The commit hint (written at each commit without an fsync) may know a later commit; a
        // hint that does not decode is no hint.
        if let Some(hint) = meta_record.take_hint() {
            if let Ok(Meta {
                committed: Some(hinted),
                ..
            }) = decode_meta(directory, &hint)
            {
                if meta
                    .committed
                    .as_ref()
                    .is_none_or(|recorded| recorded.index < hinted.index)
                {
                    meta.committed = Some(hinted);
                }
            }
        }
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        for item in fs::read_dir(directory)? {
            let path = item?.path();
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            let Some(number) = name
                .strip_prefix("log-")
                .and_then(|rest| rest.strip_suffix(".seg"))
            else {
                continue;
            };
            if let Ok(first_index) = number.parse::<u64>() {
                names.push((first_index, path));
            }
        }
        names.sort();
        let purged_index = meta.purged.as_ref().map(|log_id| log_id.index);
        let mut log = LogFile {
            directory: directory.to_path_buf(),
            segments: Vec::new(),
            locations: BTreeMap::new(),
            cached: BTreeMap::new(),
            cached_bytes: 0,
            cache_limit,
            meta,
            meta_record,
            #[cfg(test)]
            refuse_writes: None,
            #[cfg(test)]
            refuse_once: None,
        };
        let mut torn: Option<TornTail> = None;
        let mut expected_next: Option<u64> = None;
        for (first_index, path) in names {
            if let Some(tail) = torn.as_mut() {
                tail.dropped_bytes += fs::metadata(&path)?.len();
                fs::remove_file(&path)?;
                continue;
            }
            let mut file = open_append(&path)?;
            let mut contents = Vec::new();
            file.seek(SeekFrom::Start(0))?;
            file.read_to_end(&mut contents)?;
            let segment_number = log.segments.len();
            let mut offset = 0usize;
            let mut failure: Option<&'static str> = None;
            while offset < contents.len() {
                match parse_record(&contents[offset..]) {
                    Err(reason) => {
                        failure = Some(reason);
                        break;
                    }
                    Ok((entry, length)) => {
                        let index = entry.log_id.index;
                        if let Some(next) = expected_next {
                            if index != next {
                                failure = Some("index out of order");
                                break;
                            }
                        }
                        expected_next = Some(index + 1);
                        if purged_index.is_none_or(|purged| index > purged) {
                            log.locations.insert(
                                index,
                                Location {
                                    segment: segment_number,
                                    offset: offset as u64,
                                    length: length as u64,
                                    log_id: entry.log_id,
                                },
                            );
                            log.cache(index, entry, length as u64);
                        }
                        offset += length;
                    }
                }
            }
            if let Some(reason) = failure {
                let dropped = (contents.len() - offset) as u64;
                file.set_len(offset as u64)?;
                file.sync_all()?;
                torn = Some(TornTail {
                    segment: path.clone(),
                    offset: offset as u64,
                    dropped_bytes: dropped,
                    reason,
                });
            }
            log.segments.push(Segment {
                first_index,
                path,
                file: Arc::new(file),
                length: offset as u64,
            });
        }
        if torn.is_some() {
            sync_directory(directory)?;
        }
        if log.segments.is_empty() {
            let first = purged_index.map_or(0, |index| index + 1);
            log.start_segment(first)?;
        }
        Ok((log, torn))
    }

    fn start_segment(&mut self, first_index: u64) -> io::Result<()> {
        let path = segment_path(&self.directory, first_index);
        let file = open_append(&path)?;
        file.set_len(0)?;
        sync_directory(&self.directory)?;
        self.segments.push(Segment {
            first_index,
            path,
            file: Arc::new(file),
            length: 0,
        });
        Ok(())
    }

    pub(crate) fn directory(&self) -> &Path {
        &self.directory
    }

    /// The bytes of the segment files (purged records still in a kept segment count).
    pub(crate) fn bytes(&self) -> u64 {
        self.segments.iter().map(|segment| segment.length).sum()
    }

    /// The file that an fsync must cover for every write so far (older segments were synced when
    /// they were closed).
    pub(crate) fn active_file(&self) -> Option<Arc<File>> {
        self.segments.last().map(|segment| segment.file.clone())
    }

    pub(crate) fn last_log_id(&self) -> Option<LogId> {
        self.locations
            .last_key_value()
            .map(|(_, location)| location.log_id)
            .or(self.meta.purged)
    }

    #[cfg(test)]
    pub(crate) fn entry(&self, index: u64) -> Option<Entry> {
        self.range(index..=index).ok()?.pop()
    }

    /// The indexes of the entries in memory, and their record bytes.
    #[cfg(test)]
    pub(crate) fn cached(&self) -> (Vec<u64>, u64) {
        (self.cached.keys().copied().collect(), self.cached_bytes)
    }

    /// The segment file and offset of the record of entry `index`.
    #[cfg(test)]
    pub(crate) fn record_of(&self, index: u64) -> Option<(PathBuf, u64)> {
        let location = self.locations.get(&index)?;
        let segment = self.segments.get(location.segment)?;
        Some((segment.path.clone(), location.offset))
    }

    /// The live entries in `range`: from memory, or read back from their segment.
    pub(crate) fn range(&self, range: impl std::ops::RangeBounds<u64>) -> io::Result<Vec<Entry>> {
        self.locations
            .range(range)
            .map(|(index, location)| match self.cached.get(index) {
                Some(entry) => Ok(entry.clone()),
                None => self.read(location),
            })
            .collect()
    }

    /// The live entries from `start` to before `end`, stopping once they hold `max_bytes` of
    /// records (always at least the first): what one append to a follower can carry, read once
    /// (openraft asks for up to 300 entries, up to an ingest batch of 4,096 messages each).
    pub(crate) fn range_limited(
        &self,
        start: u64,
        end: u64,
        max_bytes: u64,
    ) -> io::Result<Vec<Entry>> {
        let mut bytes = 0u64;
        let mut entries = Vec::new();
        for (index, location) in self.locations.range(start..end) {
            if !entries.is_empty() && bytes + location.length > max_bytes {
                break;
            }
            bytes += location.length;
            entries.push(match self.cached.get(index) {
                Some(entry) => entry.clone(),
                None => self.read(location)?,
            });
        }
        Ok(entries)
    }

    /// The entry of the record at `location`, read from its segment and checked again.
    fn read(&self, location: &Location) -> io::Result<Entry> {
        use std::os::unix::fs::FileExt;
        let segment = self
            .segments
            .get(location.segment)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "raft log segment not open"))?;
        let length = usize::try_from(location.length)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "raft log record too long"))?;
        let mut record = vec![0u8; length];
        segment.file.read_exact_at(&mut record, location.offset)?;
        let (entry, _) = parse_record(&record).map_err(|reason| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "raft log record at {} of {}: {reason}",
                    location.offset,
                    segment.path.display()
                ),
            )
        })?;
        Ok(entry)
    }

    /// Keeps `entry` in memory, dropping the oldest cached ones past the limit.
    fn cache(&mut self, index: u64, entry: Entry, length: u64) {
        if let Some(replaced) = self.cached.insert(index, entry) {
            drop(replaced);
            self.recount_cache();
        } else {
            self.cached_bytes += length;
        }
        while self.cached_bytes > self.cache_limit && self.cached.len() > 1 {
            let Some((oldest, _)) = self.cached.pop_first() else {
                break;
            };
            let length = self
                .locations
                .get(&oldest)
                .map_or(0, |location| location.length);
            self.cached_bytes = self.cached_bytes.saturating_sub(length);
        }
    }

    /// Counts the cached entries' bytes again (after entries were cut off).
    fn recount_cache(&mut self) {
        self.cached
            .retain(|index, _| self.locations.contains_key(index));
        self.cached_bytes = self
            .cached
            .keys()
            .filter_map(|index| self.locations.get(index))
            .map(|location| location.length)
            .sum();
    }

    /// Writes `entries` after the current end (no fsync: the caller's flusher does that).
    ///
    /// A segment refused as too large (EFBIG: a file-size limit such as `ulimit -f`, or the
    /// filesystem's own) is closed where it is, and the rest goes into a new segment. Only a
    /// record refused at the start of an empty segment fails with EFBIG.
    pub(crate) fn append(&mut self, entries: impl IntoIterator<Item = Entry>) -> io::Result<()> {
        let entries: Vec<Entry> = entries.into_iter().collect();
        match self.append_records(entries.iter().cloned()) {
            Err(error)
                if error.kind() == io::ErrorKind::FileTooLarge
                    && self.segments.last().is_some_and(|active| active.length > 0) =>
            {
                let last = self.last_log_id().map(|log_id| log_id.index);
                let rest: Vec<Entry> = entries
                    .into_iter()
                    .filter(|entry| Some(entry.log_id.index) > last)
                    .collect();
                let Some(first) = rest.first() else {
                    return Ok(());
                };
                tracing::warn!(%error, directory = %self.directory.display(), "raft log segment at a file-size limit; starting a new one");
                if let Some(segment) = self.segments.last() {
                    segment.file.sync_data()?;
                }
                self.start_segment(first.log_id.index)?;
                self.append_records(rest)
            }
            result => result,
        }
    }

    fn append_records(&mut self, entries: impl IntoIterator<Item = Entry>) -> io::Result<()> {
        let mut buffer = Vec::new();
        let mut pending: Vec<(u64, u64, Entry)> = Vec::new();
        for entry in entries {
            let active_length =
                self.segments.last().map_or(0, |segment| segment.length) + buffer.len() as u64;
            if active_length >= SEGMENT_BYTES {
                self.write_buffer(&mut buffer, &mut pending)?;
                if let Some(segment) = self.segments.last() {
                    segment.file.sync_data()?;
                }
                self.start_segment(entry.log_id.index)?;
            }
            let offset =
                self.segments.last().map_or(0, |segment| segment.length) + buffer.len() as u64;
            let mut writer = Writer::new();
            writer.entry(&entry);
            let body = writer.finish();
            let length = (body.len() as u32).to_le_bytes();
            let crc = checksum(&[&length, &body]);
            buffer.extend_from_slice(&length);
            buffer.extend_from_slice(&crc.to_le_bytes());
            buffer.extend_from_slice(&body);
            pending.push((entry.log_id.index, offset, entry));
        }
        self.write_buffer(&mut buffer, &mut pending)
    }

    fn write_buffer(
        &mut self,
        buffer: &mut Vec<u8>,
        pending: &mut Vec<(u64, u64, Entry)>,
    ) -> io::Result<()> {
        if buffer.is_empty() {
            return Ok(());
        }
        #[cfg(test)]
        if let Some(kind) = self.refuse_once.take().or(self.refuse_writes) {
            return Err(io::Error::from(kind));
        }
        let segment_number = self.segments.len() - 1;
        let segment = &mut self.segments[segment_number];
        if let Err(error) = (&*segment.file).write_all(buffer) {
            // A full disk can take part of the buffer: cut the file back to its last whole
            // record so that the append can be made again at the same offset (the file is in
            // append mode, and the recorded length is where the next record goes).
            if let Err(cut) = segment.file.set_len(segment.length) {
                tracing::error!(%cut, path = %segment.path.display(), "raft log not cut back after a failed write");
            }
            return Err(error);
        }
        let end = segment.length + buffer.len() as u64;
        segment.length = end;
        buffer.clear();
        let mut records = pending.drain(..).peekable();
        while let Some((index, offset, entry)) = records.next() {
            let next = records.peek().map_or(end, |(_, next, _)| *next);
            let length = next - offset;
            self.locations.insert(
                index,
                Location {
                    segment: segment_number,
                    offset,
                    length,
                    log_id: entry.log_id,
                },
            );
            self.cache(index, entry, length);
        }
        Ok(())
    }

    /// Removes every entry after `last` (all of them when `None`) from memory and disk, durably.
    pub(crate) fn truncate_after(&mut self, last: Option<&LogId>) -> io::Result<()> {
        let first_removed = last.map_or(0, |log_id| log_id.index + 1);
        let Some(location) = self.locations.get(&first_removed).copied() else {
            // Nothing at or past that index on disk.
            self.cached.split_off(&first_removed);
            self.recount_cache();
            return Ok(());
        };
        for segment in self.segments.drain(location.segment + 1..) {
            fs::remove_file(&segment.path)?;
        }
        let segment = &mut self.segments[location.segment];
        segment.file.set_len(location.offset)?;
        segment.file.sync_all()?;
        segment.length = location.offset;
        sync_directory(&self.directory)?;
        self.locations.split_off(&first_removed);
        self.cached.split_off(&first_removed);
        self.recount_cache();
        Ok(())
    }

    /// Records `upto` as purged (durably, first), then drops entries up to it and deletes the
    /// segments that hold nothing newer.
    pub(crate) fn purge(&mut self, upto: &LogId) -> io::Result<()> {
        self.meta.purged = Some(*upto);
        self.save_meta()?;
        let keep_from = upto.index + 1;
        self.locations = self.locations.split_off(&keep_from);
        self.cached = self.cached.split_off(&keep_from);
        self.recount_cache();
        // A segment can go when the next one starts at or before `keep_from`.
        let mut removable = 0;
        while removable + 1 < self.segments.len()
            && self.segments[removable + 1].first_index <= keep_from
        {
            removable += 1;
        }
        if removable > 0 {
            for segment in self.segments.drain(..removable) {
                fs::remove_file(&segment.path)?;
            }
            for location in self.locations.values_mut() {
                location.segment -= removable;
            }
            sync_directory(&self.directory)?;
        }
        if self.locations.is_empty() && self.segments.len() == 1 && self.segments[0].length > 0 {
            // Everything is purged: restart the file so it does not keep purged records forever.
            let old = self.segments.remove(0);
            self.start_segment(keep_from)?;
            if old.path != self.segments[0].path {
                fs::remove_file(&old.path)?;
                sync_directory(&self.directory)?;
            }
        }
        Ok(())
    }

    /// Saves the metadata durably.
    pub(crate) fn save_meta(&mut self) -> io::Result<()> {
        self.meta_record.write(&encode_meta(&self.meta))
    }

    /// Saves the metadata with a newer committed log id as the record's commit hint: in place,
    /// without an fsync (`meta_record.rs`).
    pub(crate) fn save_commit_hint(&mut self) -> io::Result<()> {
        self.meta_record.write_hint(&encode_meta(&self.meta))
    }
}

/// One record from the front of `input`: the entry and the record's length.
fn parse_record(input: &[u8]) -> Result<(Entry, usize), &'static str> {
    if input.len() < RECORD_HEADER {
        return Err("short record header");
    }
    let length_bytes = &input[0..4];
    let mut length_buffer = [0u8; 4];
    length_buffer.copy_from_slice(length_bytes);
    let length = u32::from_le_bytes(length_buffer) as usize;
    let mut crc_buffer = [0u8; 4];
    crc_buffer.copy_from_slice(&input[4..8]);
    let stored_crc = u32::from_le_bytes(crc_buffer);
    let Some(body) = input.get(RECORD_HEADER..RECORD_HEADER + length) else {
        return Err("short record body");
    };
    if checksum(&[length_bytes, body]) != stored_crc {
        return Err("checksum mismatch");
    }
    let mut reader = Reader::new(body);
    let entry = reader.entry().map_err(|_| "record does not decode")?;
    if !reader.is_empty() {
        return Err("record has trailing bytes");
    }
    Ok((entry, RECORD_HEADER + length))
}

/// The metadata in a record's (or an earlier build's `meta` file's) body.
fn decode_meta(directory: &Path, body: &[u8]) -> io::Result<Meta> {
    let malformed = |_| checked_file::malformed(directory, "metadata");
    let mut reader = Reader::new(body);
    let vote = match reader.u8().map_err(malformed)? {
        0 => None,
        _ => Some(reader.vote().map_err(malformed)?),
    };
    let committed = reader.option_log_id().map_err(malformed)?;
    let purged = reader.option_log_id().map_err(malformed)?;
    Ok(Meta {
        vote,
        committed,
        purged,
    })
}

/// The body of the metadata's record (as the earlier builds' `meta` file held it).
pub(crate) fn encode_meta(meta: &Meta) -> Bytes {
    let mut writer = Writer::new();
    match &meta.vote {
        None => writer.u8(0),
        Some(vote) => {
            writer.u8(1);
            writer.vote(vote);
        }
    }
    writer.option_log_id(meta.committed.as_ref());
    writer.option_log_id(meta.purged.as_ref());
    writer.finish()
}

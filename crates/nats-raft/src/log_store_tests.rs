//! Tests of the file log: recovery, truncation, purge, torn tails.

use super::*;
use crate::types::{log_id, EntryPayload, Proposal};
use bytes::Bytes;
use std::fs::OpenOptions;
use std::io::Write;

fn entry(term: u64, index: u64, body: &'static [u8]) -> Entry {
    Entry {
        log_id: log_id(term, 1, index),
        payload: EntryPayload::Normal(Proposal(Bytes::from_static(body))),
    }
}

fn segment_files(directory: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(directory)
        .expect("read dir")
        .map(|item| item.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "seg"))
        .collect();
    files.sort();
    files
}

#[test]
fn entries_survive_reopen_and_truncate_after_is_durable() {
    let directory = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, torn) = LogFile::open(directory.path()).expect("open");
        assert!(torn.is_none());
        log.append((1..=10).map(|index| entry(1, index, b"payload")))
            .expect("append");
        log.truncate_after(Some(&log_id(1, 1, 6)))
            .expect("truncate");
        log.append([entry(2, 7, b"new")]).expect("append");
        log.meta.vote = Some(Vote::new(2, 1));
        log.meta.committed = Some(log_id(1, 1, 5));
        log.save_meta().expect("meta");
    }
    let (log, torn) = LogFile::open(directory.path()).expect("reopen");
    assert!(torn.is_none());
    assert_eq!(log.last_log_id(), Some(log_id(2, 1, 7)));
    assert_eq!(log.range(..).len(), 7);
    assert_eq!(
        log.entry(7).map(|entry| entry.log_id),
        Some(log_id(2, 1, 7))
    );
    assert_eq!(log.meta.vote, Some(Vote::new(2, 1)));
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 5)));
}

#[test]
fn a_torn_tail_is_cut_at_the_first_bad_record_and_reported() {
    let directory = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, _) = LogFile::open(directory.path()).expect("open");
        log.append((1..=5).map(|index| entry(1, index, b"abcdefgh")))
            .expect("append");
    }
    let segment = segment_files(directory.path()).remove(0);
    let length = std::fs::metadata(&segment).expect("metadata").len();
    // A half-written sixth record.
    let mut file = OpenOptions::new()
        .append(true)
        .open(&segment)
        .expect("open segment");
    file.write_all(&[40, 0, 0, 0, 1, 2, 3]).expect("write");
    drop(file);
    let (log, torn) = LogFile::open(directory.path()).expect("reopen");
    let torn = torn.expect("torn tail reported");
    assert_eq!(torn.offset, length);
    assert_eq!(torn.dropped_bytes, 7);
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 5)));
    assert_eq!(std::fs::metadata(&segment).expect("metadata").len(), length);

    // A flipped bit inside record 3 cuts the log after record 2.
    let mut contents = std::fs::read(&segment).expect("read");
    let record = contents.len() / 5;
    contents[2 * record + 12] ^= 0x10;
    std::fs::write(&segment, &contents).expect("write");
    let (log, torn) = LogFile::open(directory.path()).expect("reopen");
    let torn = torn.expect("bad record reported");
    assert_eq!(torn.reason, "checksum mismatch");
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 2)));
}

#[test]
fn purge_forgets_entries_and_survives_reopen() {
    let directory = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, _) = LogFile::open(directory.path()).expect("open");
        log.append((1..=10).map(|index| entry(1, index, b"x")))
            .expect("append");
        log.purge(&log_id(1, 1, 4)).expect("purge");
        assert_eq!(
            log.range(..).first().map(|entry| entry.log_id.index),
            Some(5)
        );
    }
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.purged, Some(log_id(1, 1, 4)));
    assert_eq!(
        log.range(..).first().map(|entry| entry.log_id.index),
        Some(5)
    );
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 10)));
    // Purging everything leaves an empty log whose last id is the purged one.
    let (mut log, _) = LogFile::open(directory.path()).expect("reopen");
    log.purge(&log_id(1, 1, 10)).expect("purge all");
    drop(log);
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert!(log.range(..).is_empty());
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 10)));
}

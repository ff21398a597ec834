//! Tests of the file log: recovery, truncation, purge, torn tails.

use super::*;
use crate::types::{log_id, EntryPayload, Proposal};
use bytes::Bytes;
use openraft::type_config::TypeConfigExt;
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
    assert_eq!(log.range(..).expect("range").len(), 7);
    assert_eq!(
        log.entry(7).map(|entry| entry.log_id),
        Some(log_id(2, 1, 7))
    );
    assert_eq!(log.meta.vote, Some(Vote::new(2, 1)));
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 5)));
}

/// A directory holding a log of entries 1 to `count` of term 1, each with `body`.
fn log_of(count: u64, body: &'static [u8]) -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("tempdir");
    let (mut log, _) = LogFile::open(directory.path()).expect("open");
    log.append((1..=count).map(|index| entry(1, index, body)))
        .expect("append");
    directory
}

/// A group directory written by an earlier build: its `meta` in the `checked_file` form, as that
/// build's `write_meta` made it.
fn write_old_meta(directory: &Path, meta: &crate::log_file::Meta) {
    crate::checked_file::write(
        &directory.join(crate::meta_record::OLD_FILE),
        crate::meta_record::OLD_MAGIC,
        &crate::log_file::encode_meta(meta),
    )
    .expect("old meta");
}

#[test]
fn an_earlier_builds_meta_file_is_read_and_carried_into_the_record() {
    use crate::meta_record::{FILE, OLD_FILE};
    let directory = log_of(6, b"payload");
    let old = crate::log_file::Meta {
        vote: Some(Vote::new_committed(3, 2)),
        committed: Some(log_id(1, 1, 5)),
        purged: Some(log_id(1, 1, 2)),
    };
    write_old_meta(directory.path(), &old);
    let (mut log, _) = LogFile::open(directory.path()).expect("open the old form");
    assert_eq!(log.meta, old);
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 6)));
    assert_eq!(log.range(..).expect("range").len(), 4, "purged up to 2");
    assert!(
        !directory.path().join(FILE).exists(),
        "opening writes nothing"
    );

    log.meta.committed = Some(log_id(1, 1, 6));
    log.save_meta().expect("save");
    assert!(directory.path().join(FILE).exists());
    assert!(
        !directory.path().join(OLD_FILE).exists(),
        "the old file removed"
    );
    drop(log);
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(
        log.meta,
        crate::log_file::Meta {
            committed: Some(log_id(1, 1, 6)),
            ..old
        }
    );

    // An old file back beside the record (its removal lost to a power cut) is older than the
    // record: ignored, and removed at the next write.
    write_old_meta(directory.path(), &crate::log_file::Meta::default());
    let (mut log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 6)));
    assert_eq!(log.meta.vote, Some(Vote::new_committed(3, 2)));
    log.save_meta().expect("save");
    assert!(!directory.path().join(OLD_FILE).exists());
}

#[test]
fn a_torn_tail_is_cut_at_the_first_bad_record_and_reported() {
    let directory = log_of(5, b"abcdefgh");
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
            log.range(..)
                .expect("range")
                .first()
                .map(|entry| entry.log_id.index),
            Some(5)
        );
    }
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.purged, Some(log_id(1, 1, 4)));
    assert_eq!(
        log.range(..)
            .expect("range")
            .first()
            .map(|entry| entry.log_id.index),
        Some(5)
    );
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 10)));
    // Purging everything leaves an empty log whose last id is the purged one.
    let (mut log, _) = LogFile::open(directory.path()).expect("reopen");
    log.purge(&log_id(1, 1, 10)).expect("purge all");
    drop(log);
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert!(log.range(..).expect("range").is_empty());
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 10)));
}

fn sized(term: u64, index: u64, size: usize) -> Entry {
    Entry {
        log_id: log_id(term, 1, index),
        payload: EntryPayload::Normal(Proposal(Bytes::from(vec![(index % 251) as u8; size]))),
    }
}

fn body_of(entry: &Entry) -> (LogId, Bytes) {
    match &entry.payload {
        EntryPayload::Normal(Proposal(body)) => (entry.log_id, body.clone()),
        _ => (entry.log_id, Bytes::new()),
    }
}

/// Only the newest entries stay in memory (a 1 GiB stream held its whole log on every replica):
/// the others are read back from their segment, the same entries, across truncation, purge and
/// reopen; a record damaged on disk after it left memory is an error, not a wrong entry.
#[test]
fn entries_past_the_cache_are_read_back_from_their_segment() {
    let directory = tempfile::tempdir().expect("tempdir");
    let limit = 4_096;
    let expected: Vec<(LogId, Bytes)> = (1..=60)
        .map(|index| body_of(&sized(1, index, 100 + index as usize * 7)))
        .collect();
    {
        let (mut log, _) = LogFile::open_caching(directory.path(), limit).expect("open");
        log.append((1..=30).map(|index| sized(1, index, 100 + index as usize * 7)))
            .expect("append");
        log.append((31..=60).map(|index| sized(1, index, 100 + index as usize * 7)))
            .expect("append");
        let (cached, bytes) = log.cached();
        assert!(cached.len() < 20, "cached {}", cached.len());
        assert!(bytes <= limit);
        assert_eq!(cached.last(), Some(&60));
        let read: Vec<_> = log.range(..).expect("range").iter().map(body_of).collect();
        assert_eq!(read, expected);
        assert_eq!(log.range(10..20).expect("range").len(), 10);
        // One append's worth: a prefix within the bytes asked for, never empty.
        let limited = log.range_limited(1, 61, 1_000).expect("range");
        let indexes: Vec<u64> = limited.iter().map(|entry| entry.log_id.index).collect();
        assert_eq!(indexes, [1, 2, 3, 4, 5, 6]);
        assert_eq!(log.range_limited(40, 61, 10).expect("range").len(), 1);
        let read: Vec<_> = log
            .range_limited(1, 61, u64::MAX)
            .expect("range")
            .iter()
            .map(body_of)
            .collect();
        assert_eq!(read, expected);

        log.truncate_after(Some(&log_id(1, 1, 50)))
            .expect("truncate");
        log.append((51..=55).map(|index| sized(2, index, 300)))
            .expect("append");
        log.purge(&log_id(1, 1, 5)).expect("purge");
        assert_eq!(log.last_log_id(), Some(log_id(2, 1, 55)));
    }
    let (log, torn) = LogFile::open_caching(directory.path(), limit).expect("reopen");
    assert!(torn.is_none());
    assert!(log.cached().1 <= limit);
    let read: Vec<_> = log.range(..).expect("range").iter().map(body_of).collect();
    let mut wanted: Vec<(LogId, Bytes)> = expected[5..50].to_vec();
    wanted.extend((51..=55).map(|index| body_of(&sized(2, index, 300))));
    assert_eq!(read, wanted);

    // Damage entry 6's record (no longer in memory) on disk: reading it is an error.
    let (path, offset) = log.record_of(6).expect("entry 6");
    assert!(!log.cached().0.contains(&6));
    let mut file = OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open segment");
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset + 12)).expect("seek");
    file.write_all(b"XXXX").expect("damage");
    drop(file);
    let error = log.range(6..=6).expect_err("a damaged record is refused");
    assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    assert!(log.range(7..=8).is_ok());
}

/// A record write refused for want of space (ENOSPC), or at a file-size limit (EFBIG, met
/// first with a new segment, then in that empty one too): the append waits with the log
/// stalled, then finishes by itself once a write succeeds, losing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_refused_for_space_waits_until_a_write_succeeds() {
    for kind in [io::ErrorKind::StorageFull, io::ErrorKind::FileTooLarge] {
        let directory = tempfile::tempdir().expect("tempdir");
        let (mut store, shared, _) = LogStore::open(directory.path()).expect("open");
        let (flushed, done) = TypeConfig::oneshot();
        store
            .append(
                (1..=3).map(|index| entry(1, index, b"before")),
                IOFlushed::signal(flushed),
            )
            .await
            .expect("append");
        done.await.expect("flushed").expect("fsync");

        shared.lock().refuse_writes = Some(kind);
        let (flushed, done) = TypeConfig::oneshot();
        let appending = tokio::spawn(async move {
            let result = store
                .append(
                    (4..=5).map(|index| entry(1, index, b"during")),
                    IOFlushed::signal(flushed),
                )
                .await;
            (store, result)
        });
        let mut stalled = shared.stalled.subscribe();
        let reason =
            tokio::time::timeout(Duration::from_secs(5), stalled.wait_for(Option::is_some))
                .await
                .unwrap_or_else(|_| panic!("{kind:?}: the log never read as stalled"))
                .expect("log open")
                .clone();
        assert!(reason.is_some(), "{kind:?}");
        // Retried (every FULL_RETRY) and still waiting, nothing written meanwhile.
        tokio::time::sleep(FULL_RETRY * 3).await;
        assert!(!appending.is_finished(), "{kind:?}: the append gave up");
        assert_eq!(
            shared.lock().last_log_id().map(|log_id| log_id.index),
            Some(3),
            "{kind:?}"
        );

        shared.lock().refuse_writes = None;
        let (store, result) = tokio::time::timeout(Duration::from_secs(5), appending)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the append did not finish once space returned"))
            .expect("append task");
        result.unwrap_or_else(|error| panic!("{kind:?}: {error}"));
        tokio::time::timeout(Duration::from_secs(5), done)
            .await
            .expect("flushed in time")
            .expect("flushed")
            .expect("fsync");
        assert_eq!(*shared.stalled.borrow(), None, "{kind:?}: still stalled");
        drop(store);
        drop(shared);

        let (log, torn) = LogFile::open(directory.path()).expect("reopen");
        assert!(torn.is_none(), "{kind:?}");
        let bodies: Vec<_> = log.range(..).expect("range").iter().map(body_of).collect();
        assert_eq!(bodies.len(), 5, "{kind:?}");
        assert_eq!(bodies[3].1, Bytes::from_static(b"during"), "{kind:?}");
    }
}

/// A segment at a file-size limit (EFBIG) is closed where it is and the append goes on in a
/// new one: nothing waits, and the log reads back whole after a reopen.
#[test]
fn a_segment_at_a_file_size_limit_is_followed_by_a_new_one() {
    let directory = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, _) = LogFile::open(directory.path()).expect("open");
        log.append((1..=3).map(|index| entry(1, index, b"first")))
            .expect("append");
        log.refuse_once = Some(io::ErrorKind::FileTooLarge);
        log.append((4..=6).map(|index| entry(1, index, b"second")))
            .expect("append past the limit");
        assert_eq!(segment_files(directory.path()).len(), 2);
        // A fresh segment that refuses too: the error goes to the caller (which waits).
        log.refuse_writes = Some(io::ErrorKind::FileTooLarge);
        let refused = log.append([entry(1, 7, b"third")]);
        assert_eq!(
            refused.map_err(|error| error.kind()),
            Err(io::ErrorKind::FileTooLarge)
        );
    }
    let (log, torn) = LogFile::open(directory.path()).expect("reopen");
    assert!(torn.is_none());
    let indexes: Vec<u64> = log
        .range(..)
        .expect("range")
        .iter()
        .map(|entry| entry.log_id.index)
        .collect();
    assert_eq!(indexes, (1..=6).collect::<Vec<u64>>());
}

#[test]
fn a_commit_hint_raises_the_recorded_commit_and_never_replaces_the_synced_record() {
    let directory = log_of(8, b"payload");
    let vote = Vote::new_committed(4, 1);
    {
        let (mut log, _) = LogFile::open(directory.path()).expect("open");
        log.meta.vote = Some(vote);
        log.meta.committed = Some(log_id(1, 1, 3));
        log.save_meta().expect("synced record");
        for index in 4..=7 {
            log.meta.committed = Some(log_id(1, 1, index));
            log.save_commit_hint().expect("hint");
        }
    }
    let (mut log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(
        log.meta.committed,
        Some(log_id(1, 1, 7)),
        "the hint's commit"
    );
    assert_eq!(log.meta.vote, Some(vote), "the synced vote");

    // A vote written after the hints (synced, to a synced slot): both stand; the hints never
    // overwrote the slot holding the earlier vote.
    let later = Vote::new_committed(5, 2);
    log.meta.vote = Some(later);
    log.save_meta().expect("synced record");
    drop(log);
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.vote, Some(later));
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 7)));
    drop(log);

    // A damaged hint (a power cut in its write) is no hint: the synced record stands.
    let record = directory.path().join(crate::meta_record::FILE);
    let file = OpenOptions::new().write(true).open(&record).expect("open");
    std::os::unix::fs::FileExt::write_all_at(&file, b"torn", 2 * 4096 + 24).expect("damage");
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.vote, Some(later));
    assert_eq!(
        log.meta.committed,
        Some(log_id(1, 1, 7)),
        "the synced record already carried commit 7"
    );
}

#[test]
fn a_hint_below_the_synced_commit_does_not_lower_it() {
    let directory = log_of(8, b"payload");
    {
        let (mut log, _) = LogFile::open(directory.path()).expect("open");
        log.meta.committed = Some(log_id(1, 1, 2));
        log.save_meta().expect("synced");
        log.meta.committed = Some(log_id(1, 1, 4));
        log.save_commit_hint().expect("hint");
        log.meta.committed = Some(log_id(1, 1, 6));
        log.save_meta().expect("synced, past the hint");
    }
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 6)));
}

#[tokio::test]
async fn saving_a_commit_writes_the_hint_without_a_synced_metadata_write() {
    let directory = log_of(8, b"payload");
    let (mut store, shared, _) = LogStore::open(directory.path()).expect("open");
    store.save_vote(&Vote::new(2, 1)).await.expect("vote");
    let synced = shared.counters.metadata_writes.load(Ordering::Relaxed);
    store
        .save_committed(Some(log_id(1, 1, 5)))
        .await
        .expect("commit");
    assert_eq!(
        shared.counters.metadata_writes.load(Ordering::Relaxed),
        synced,
        "a commit adds no synced metadata write"
    );
    drop((store, shared));
    let (log, _) = LogFile::open(directory.path()).expect("reopen");
    assert_eq!(log.meta.committed, Some(log_id(1, 1, 5)));
}

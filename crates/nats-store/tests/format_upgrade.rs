//! A store written before CRC-32C records (block header `NSBLK001`, CRC-32 IEEE records) opens,
//! keeps appending IEEE records to its old active block, starts new blocks with the new header
//! (`NSBLK004`: CRC-32C, short and compact records), and survives a crash and a clean reopen with
//! every message intact. An `NSBLK002` active block gets no short records, an `NSBLK003` one no
//! compact records.

use std::fs;
use std::path::Path;
use std::time::Duration;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};

const RECORD_HEADER_LEN: usize = 36;

fn open(dir: &Path) -> FileStore {
    let options = FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(120)),
        block_size: 4096,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    };
    FileStore::open(dir, StreamStoreConfig::default(), options).unwrap()
}

/// A block as a previous format wrote it: `magic` header, long records with CRC-32 (IEEE).
fn old_block(magic: &[u8; 8], first_seq: u64, messages: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    out[..8].copy_from_slice(magic);
    out[8..12].copy_from_slice(&1u32.to_le_bytes());
    out[16..24].copy_from_slice(&first_seq.to_le_bytes());
    let crc = crc32fast::hash(&out[..24]);
    out[24..28].copy_from_slice(&crc.to_le_bytes());
    for (offset, (subject, payload)) in messages.iter().enumerate() {
        let start = out.len();
        let len = RECORD_HEADER_LEN + subject.len() + payload.len() + 4;
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.push(1); // a message
        out.push(0); // no flags
        out.extend_from_slice(&(subject.len() as u16).to_le_bytes());
        out.extend_from_slice(&(first_seq + offset as u64).to_le_bytes());
        out.extend_from_slice(&1_700_000_000_000_000_000i64.to_le_bytes());
        out.extend_from_slice(&0i64.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(subject.as_bytes());
        out.extend_from_slice(payload);
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    out
}

fn block_files(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "blk"))
        .collect();
    paths.sort();
    paths.iter().map(|path| fs::read(path).unwrap()).collect()
}

fn check_all(store: &mut FileStore, count: u64) {
    assert_eq!(store.state().msgs, count);
    for seq in 1..=count {
        let message = store.load(seq).unwrap();
        assert_eq!(message.subject, format!("old.{seq}"));
        assert_eq!(&message.payload[..], format!("payload {seq}").as_bytes());
    }
}

/// Store `old.<seq>` = `payload <seq>` for every sequence of `range`.
fn store_messages(store: &mut FileStore, range: std::ops::RangeInclusive<u64>) {
    for seq in range {
        let payload = format!("payload {seq}");
        store
            .store_msg(&format!("old.{seq}"), b"", payload.as_bytes(), None)
            .unwrap();
    }
}

/// Reopen; recovery finds no damage and every message is there.
fn reopen_intact(dir: &Path, count: u64) -> FileStore {
    let mut store = open(dir);
    let report = store.recovery_report().clone();
    assert!(report.is_clean(), "{report:?}");
    check_all(&mut store, count);
    store
}

/// Open the store of one old block holding messages 1..=`old`, check them, append the next one
/// (into the old active block), crash and reopen intact; returns the store and the old block.
fn append_to_old_block(dir: &Path, old: u64) -> (FileStore, Vec<u8>) {
    let mut store = open(dir);
    assert!(store.recovery_report().is_clean());
    check_all(&mut store, old);
    store_messages(&mut store, old + 1..=old + 1);
    store.flush().unwrap();
    store.abandon();
    let store = reopen_intact(dir, old + 1);
    (store, block_files(dir).swap_remove(0))
}

#[test]
fn an_old_format_store_is_read_appended_and_upgraded_block_by_block() {
    let dir = tempfile::tempdir().unwrap();
    let subjects: Vec<String> = (1..=3).map(|seq| format!("old.{seq}")).collect();
    let payloads: Vec<String> = (1..=3).map(|seq| format!("payload {seq}")).collect();
    let messages: Vec<(&str, &[u8])> = subjects
        .iter()
        .zip(&payloads)
        .map(|(subject, payload)| (subject.as_str(), payload.as_bytes()))
        .collect();
    fs::write(
        dir.path().join("000000000001.blk"),
        old_block(b"NSBLK001", 1, &messages),
    )
    .unwrap();

    // Into the old active block: still IEEE records there (no flag bits).
    let (mut store, first_block) = append_to_old_block(dir.path(), 3);
    assert_eq!(&first_block[..8], b"NSBLK001");
    let fourth = first_block.len() - (RECORD_HEADER_LEN + 5 + 9 + 4);
    assert_eq!(
        first_block[fourth + 5],
        0,
        "flags of the record appended to the old block"
    );

    // Enough to seal the old block and fill new ones.
    store_messages(&mut store, 5..=200);
    store.flush().unwrap();
    let blocks = block_files(dir.path());
    assert!(blocks.len() > 2);
    assert!(blocks[1..].iter().all(|block| &block[..8] == b"NSBLK004"));
    // The first record of a new block is compact (kind 1 and the flags in one byte, flag 8) and
    // short (flag 4: no TTL, no headers): 17 bytes less.
    assert_eq!(blocks[1][32 + 4] >> 4, 1);
    assert_eq!(blocks[1][32 + 4] & 12, 12);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // ... and carries the CRC-32C flag.
        assert_eq!(blocks[1][32 + 4] & 2, 2);
    }
    store.abandon();

    let mut store = reopen_intact(dir.path(), 200);
    store.close().unwrap();
    let mut store = open(dir.path());
    assert_eq!(store.recovery_report().blocks_scanned, 0);
    check_all(&mut store, 200);
}

#[test]
fn an_nsblk002_active_block_gets_long_records_until_it_seals() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("000000000001.blk"),
        old_block(b"NSBLK002", 1, &[("old.1", b"payload 1")]),
    )
    .unwrap();
    let (mut store, first_block) = append_to_old_block(dir.path(), 1);
    assert_eq!(&first_block[..8], b"NSBLK002");
    let second = first_block.len() - (RECORD_HEADER_LEN + 5 + 9 + 4);
    assert_eq!(
        first_block[second + 5] & 4,
        0,
        "no short record in an NSBLK002 block"
    );
    store_messages(&mut store, 3..=100);
    store.close().unwrap();
    let blocks = block_files(dir.path());
    assert!(blocks[1..].iter().all(|block| &block[..8] == b"NSBLK004"));
    reopen_intact(dir.path(), 100);
}

/// An `NSBLK003` block as the previous format wrote it: short records (flag 4, no TTL and no
/// headers, so no `aux` and `headers_len`) with CRC-32 (IEEE), the full sequence in each.
fn nsblk003_block(first_seq: u64, count: u64) -> Vec<u8> {
    let mut out = old_block(b"NSBLK003", first_seq, &[]);
    for seq in first_seq..first_seq + count {
        let subject = format!("old.{seq}");
        let payload = format!("payload {seq}");
        let start = out.len();
        let len = 24 + subject.len() + payload.len() + 4;
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.push(1); // a message
        out.push(4); // short
        out.extend_from_slice(&(subject.len() as u16).to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&1_700_000_000_000_000_000i64.to_le_bytes());
        out.extend_from_slice(subject.as_bytes());
        out.extend_from_slice(payload.as_bytes());
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    out
}

#[test]
fn an_nsblk003_active_block_gets_short_records_but_no_compact_ones_until_it_seals() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("000000000001.blk"), nsblk003_block(1, 3)).unwrap();
    let (mut store, first_block) = append_to_old_block(dir.path(), 3);
    assert_eq!(&first_block[..8], b"NSBLK003");
    // The appended record is short, not compact: kind 1 alone in byte 4, the flags in byte 5.
    let fourth = first_block.len() - (24 + 5 + 9 + 4);
    assert_eq!(first_block[fourth + 4], 1);
    assert_eq!(first_block[fourth + 5] & 12, 4);
    // Erasing a record of the old block rewrites it in its own form.
    assert!(store.erase(2).unwrap());
    store_messages(&mut store, 5..=200);
    store.flush().unwrap();
    store.abandon();
    let blocks = block_files(dir.path());
    assert!(blocks.len() > 2);
    assert!(blocks[1..].iter().all(|block| &block[..8] == b"NSBLK004"));
    assert_eq!(
        blocks[1][32 + 4] & 12,
        12,
        "compact records in the new blocks"
    );
    let mut store = open(dir.path());
    assert!(store.recovery_report().is_clean());
    assert_eq!(store.state().msgs, 199);
    assert!(store.load(2).is_err());
    for seq in (1..=200).filter(|seq| *seq != 2) {
        let message = store.load(seq).unwrap();
        assert_eq!(message.subject, format!("old.{seq}"));
        assert_eq!(&message.payload[..], format!("payload {seq}").as_bytes());
    }
    store.close().unwrap();
}

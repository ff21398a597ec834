//! The FileStore's read-ahead for sequential readers: what a consumer reads in order is right
//! across block ends, appends after the chunk was read, erases, removals and block rewrites.

use std::path::Path;
use std::time::Duration;

use nats_store::{
    FileStore, FileStoreOptions, StoreError, StreamStore, StreamStoreConfig, SyncPolicy,
};

fn open(dir: &Path) -> FileStore {
    let options = FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(120)),
        block_size: 256 * 1024,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    };
    FileStore::open(dir, StreamStoreConfig::default(), options).unwrap()
}

fn payload(seq: u64) -> Vec<u8> {
    let mut body = seq.to_le_bytes().to_vec();
    body.resize(100 + (seq % 50) as usize, seq as u8);
    body
}

fn store_range(store: &mut FileStore, from: u64, to: u64) {
    for seq in from..=to {
        let subject = format!("reads.{}", seq % 3);
        let (stored, _) = store.store_msg(&subject, b"", &payload(seq), None).unwrap();
        assert_eq!(stored, seq);
        if seq % 64 == 0 {
            store.flush().unwrap();
        }
    }
    store.flush().unwrap();
}

/// Reads every message from `from` on with `load_next`, checking each against what was stored.
fn read_all(store: &mut FileStore, filter: &str, from: u64) -> Vec<u64> {
    let mut seen = Vec::new();
    let mut seq = from;
    while let Some(message) = store.load_next(filter, seq).unwrap() {
        assert_eq!(&message.payload[..], &payload(message.seq)[..]);
        assert_eq!(message.subject, format!("reads.{}", message.seq % 3));
        seen.push(message.seq);
        seq = message.seq + 1;
    }
    seen
}

#[test]
fn sequential_reads_stay_right_across_appends_erases_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    store_range(&mut store, 1, 6000);
    assert!(store.block_count() > 3);
    assert_eq!(read_all(&mut store, ">", 1), (1..=6000).collect::<Vec<_>>());

    // Appended after the active block's chunk was read: still found.
    store_range(&mut store, 6001, 6100);
    assert_eq!(
        read_all(&mut store, ">", 5900),
        (5900..=6100).collect::<Vec<_>>()
    );

    // Erased inside the chunk just read: gone, the neighbours intact.
    read_all(&mut store, ">", 3000);
    for seq in [3001u64, 3002, 3100] {
        assert!(store.erase(seq).unwrap());
    }
    for seq in [3000u64, 3003, 3099, 3101] {
        assert_eq!(&store.load(seq).unwrap().payload[..], &payload(seq)[..]);
    }
    assert!(matches!(store.load(3001), Err(StoreError::NotFound)));

    // Most of the early blocks removed: flush rewrites them; reads use the new locations (the
    // reader was in the middle of the first block, its chunk read before the rewrite).
    for seq in 1..=300u64 {
        assert_eq!(&store.load(seq).unwrap().payload[..], &payload(seq)[..]);
    }
    for seq in 1..=2500u64 {
        if seq % 7 != 0 {
            store.remove(seq).unwrap();
        }
    }
    store.flush().unwrap();
    let expected: Vec<u64> = (1..=6100u64)
        .filter(|seq| (*seq > 2500 || seq % 7 == 0) && ![3001, 3002, 3100].contains(seq))
        .collect();
    assert_eq!(read_all(&mut store, ">", 1), expected);

    // A filtered reader (every third message) and a reopened store read the same.
    let filtered: Vec<u64> = expected
        .iter()
        .copied()
        .filter(|seq| seq % 3 == 1)
        .collect();
    assert_eq!(read_all(&mut store, "reads.1", 1), filtered);
    store.close().unwrap();
    let mut store = open(dir.path());
    assert_eq!(read_all(&mut store, ">", 1), expected);
}

//! Index files of sealed blocks, written by the sync pool after the block's fsync: they are
//! compact, they make a reopen read no block, and blocks removed or rewritten while their index
//! write may still be running leave no stale or orphaned index behind.

use std::fs;
use std::path::Path;
use std::time::Duration;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};

fn open(dir: &Path, config: StreamStoreConfig, sync: SyncPolicy) -> FileStore {
    let options = FileStoreOptions {
        sync,
        block_size: 64 * 1024,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    };
    FileStore::open(dir, config, options).unwrap()
}

fn files_with(dir: &Path, extension: &str) -> Vec<(u64, u64)> {
    let mut found: Vec<(u64, u64)> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .map(|path| {
            let id = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
            (id, fs::metadata(&path).unwrap().len())
        })
        .collect();
    found.sort_unstable();
    found
}

#[test]
fn sealed_blocks_get_compact_indexes_and_a_reopen_reads_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let interval = SyncPolicy::Interval(Duration::from_secs(120));
    let mut store = open(dir.path(), StreamStoreConfig::default(), interval);
    for seq in 1..=5000u64 {
        let subject = format!("orders.region{}", seq % 4);
        store
            .store_msg(&subject, b"", &[seq as u8; 128], None)
            .unwrap();
        if seq % 100 == 0 {
            store.flush().unwrap();
        }
    }
    store.flush().unwrap();
    let blocks = files_with(dir.path(), "blk");
    assert!(blocks.len() > 5, "{blocks:?}");
    store.close().unwrap();
    let indexes = files_with(dir.path(), "idx");
    assert_eq!(
        indexes.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        blocks.iter().map(|(id, _)| *id).collect::<Vec<_>>()
    );
    // A sealed block of ~190-byte records: its index is a small fraction of it.
    for ((_, block_len), (_, index_len)) in blocks.iter().zip(&indexes).take(blocks.len() - 1) {
        assert!(index_len * 10 < *block_len, "{index_len} of {block_len}");
    }
    let mut store = open(dir.path(), StreamStoreConfig::default(), interval);
    let report = store.recovery_report().clone();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.blocks_scanned, 0, "{report:?}");
    assert_eq!(store.state().msgs, 5000);
    for seq in [1u64, 777, 2500, 4999, 5000] {
        let message = store.load(seq).unwrap();
        assert_eq!(message.subject, format!("orders.region{}", seq % 4));
        assert_eq!(&message.payload[..], &[seq as u8; 128][..]);
    }
}

/// A small max_msgs removes each block soon after it seals, often while its index write is
/// queued: no index may outlive its block or describe a rewritten one.
#[test]
fn blocks_removed_right_after_sealing_leave_no_index_behind() {
    for sync in [
        SyncPolicy::Interval(Duration::from_secs(120)),
        SyncPolicy::Always,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = StreamStoreConfig {
            max_msgs: 600,
            ..StreamStoreConfig::default()
        };
        let mut store = open(dir.path(), config.clone(), sync);
        for seq in 1..=4000u64 {
            store
                .store_msg("events", b"", &[seq as u8; 200], None)
                .unwrap();
            if seq % 50 == 0 {
                store.flush().unwrap();
            }
            if seq % 700 == 0 {
                // Sparse sealed blocks get rewritten: removals of every other message.
                for gone in (seq - 590..seq - 300).step_by(2) {
                    store.remove(gone).unwrap();
                }
            }
        }
        store.close().unwrap();
        let blocks: Vec<u64> = files_with(dir.path(), "blk")
            .iter()
            .map(|(id, _)| *id)
            .collect();
        let indexes: Vec<u64> = files_with(dir.path(), "idx")
            .iter()
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(indexes, blocks, "{sync:?}");
        let store = open(dir.path(), config, sync);
        let report = store.recovery_report().clone();
        assert!(report.is_clean(), "{sync:?}: {report:?}");
        assert_eq!(report.blocks_scanned, 0, "{sync:?}: {report:?}");
        assert_eq!(store.state().last_seq, 4000);
    }
}

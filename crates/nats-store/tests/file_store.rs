//! FileStore-specific behaviour: block cleanup and compaction, index files on clean close,
//! crash recovery cost, persisted metadata and consumer state, erase on disk, delete.

use std::fs;
use std::path::Path;
use std::time::Duration;

use nats_store::{
    ConsumerState, FileStore, FileStoreOptions, PendingDelivery, SequencePair, StoreError,
    StreamStore, StreamStoreConfig, SyncPolicy,
};

fn options(block_size: u64) -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(60)),
        block_size,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    }
}

fn open(dir: &Path, block_size: u64) -> FileStore {
    FileStore::open(dir, StreamStoreConfig::default(), options(block_size)).unwrap()
}

/// The bytes of the store's message block files. Index files are left out: they are written
/// by a background job (a temporary file renamed into place), so they come and go while the
/// directory is listed, and a file listed a moment before may be gone by its metadata call.
fn disk_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "blk"))
        .map(|path| fs::metadata(&path).unwrap().len())
        .sum()
}

#[test]
fn emptied_blocks_are_deleted_and_sparse_ones_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 2048);
    for seq in 1..=200u64 {
        store
            .store_msg(&format!("s.{}", seq % 3), b"", &[seq as u8; 100], None)
            .unwrap();
    }
    store.flush().unwrap();
    let blocks_before = store.block_count();
    let bytes_before = disk_bytes(dir.path());
    assert!(blocks_before > 10);
    // Empty the first half entirely, keep one message in three of the second half.
    for seq in 1..=100 {
        store.remove(seq).unwrap();
    }
    for seq in 101..=200u64 {
        if seq % 3 != 0 {
            store.remove(seq).unwrap();
        }
    }
    store.flush().unwrap();
    assert!(store.block_count() < blocks_before / 2 + 2);
    assert!(disk_bytes(dir.path()) < bytes_before / 2);
    let survivors: Vec<u64> = (101..=200).filter(|seq| seq % 3 == 0).collect();
    for seq in &survivors {
        assert_eq!(
            &store.load(*seq).unwrap().payload[..],
            &[*seq as u8; 100][..]
        );
    }
    store.close().unwrap();
    let mut store = open(dir.path(), 2048);
    assert!(store.recovery_report().is_clean());
    assert_eq!(store.state().msgs, survivors.len() as u64);
    for seq in &survivors {
        assert_eq!(
            &store.load(*seq).unwrap().payload[..],
            &[*seq as u8; 100][..]
        );
    }
}

#[test]
fn clean_close_reopens_from_indexes_and_crash_scans_only_the_active_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 4096);
    for seq in 1..=500u64 {
        store
            .store_msg("a.b", b"", &seq.to_le_bytes(), None)
            .unwrap();
    }
    store.close().unwrap();
    let mut store = open(dir.path(), 4096);
    let report = store.recovery_report().clone();
    assert_eq!(report.blocks_scanned, 0, "{report:?}");
    assert_eq!(report.blocks_from_index, report.blocks);
    for seq in 501..=600u64 {
        store
            .store_msg("a.b", b"", &seq.to_le_bytes(), None)
            .unwrap();
    }
    store.flush().unwrap();
    store.abandon();
    let mut store = open(dir.path(), 4096);
    let report = store.recovery_report().clone();
    assert_eq!(report.blocks_scanned, 1, "{report:?}");
    assert!(report.is_clean());
    assert_eq!(store.state().msgs, 600);
    for seq in [1u64, 250, 500, 501, 600] {
        assert_eq!(
            &store.load(seq).unwrap().payload[..],
            &seq.to_le_bytes()[..]
        );
    }
}

#[test]
fn metadata_and_consumer_state_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let stream_dir = dir.path().join("ORDERS");
    assert_eq!(FileStore::read_metadata(&stream_dir).unwrap(), None);
    let mut store = open(&stream_dir, 1 << 20);
    store.set_metadata(b"{\"name\":\"ORDERS\"}").unwrap();
    let mut consumer = store.consumer_store("worker").unwrap();
    consumer
        .set_config(b"{\"durable_name\":\"worker\"}")
        .unwrap();
    consumer.update_delivered(1, 5, 1, 100).unwrap();
    consumer.update_delivered(2, 6, 1, 200).unwrap();
    consumer.update_acks(1, 5).unwrap();
    consumer.flush().unwrap();
    drop(consumer);
    store.close().unwrap();

    assert_eq!(
        FileStore::read_metadata(&stream_dir).unwrap().as_deref(),
        Some(&b"{\"name\":\"ORDERS\"}"[..])
    );
    let mut store = open(&stream_dir, 1 << 20);
    assert_eq!(store.metadata(), b"{\"name\":\"ORDERS\"}");
    assert_eq!(store.consumer_names().unwrap(), vec!["worker".to_string()]);
    let mut consumer = store.consumer_store("worker").unwrap();
    assert_eq!(consumer.config(), b"{\"durable_name\":\"worker\"}");
    let mut pending = std::collections::BTreeMap::new();
    pending.insert(
        6,
        PendingDelivery {
            consumer_seq: 2,
            timestamp: 200,
        },
    );
    assert_eq!(
        consumer.state(),
        ConsumerState {
            delivered: SequencePair {
                consumer_seq: 2,
                stream_seq: 6
            },
            ack_floor: SequencePair {
                consumer_seq: 1,
                stream_seq: 5
            },
            pending,
            redelivered: Default::default(),
        }
    );
    assert!(store.consumer_store("../escape").is_err());
    consumer.delete().unwrap();
    assert!(store.consumer_names().unwrap().is_empty());
    store.delete().unwrap();
    assert!(!stream_dir.exists());
}

#[test]
fn erase_overwrites_the_bytes_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 1 << 20);
    store
        .store_msg("secret", b"", b"TOP-SECRET-PAYLOAD", None)
        .unwrap();
    store.store_msg("public", b"", b"hello", None).unwrap();
    store.flush().unwrap();
    assert!(store.erase(1).unwrap());
    store.close().unwrap();
    let needle = b"TOP-SECRET-PAYLOAD";
    for entry in fs::read_dir(dir.path()).unwrap() {
        let bytes = fs::read(entry.unwrap().path()).unwrap_or_default();
        assert!(!bytes.windows(needle.len()).any(|window| window == needle));
    }
    let mut store = open(dir.path(), 1 << 20);
    assert!(store.recovery_report().is_clean());
    assert!(store.load(1).is_err());
    assert_eq!(&store.load(2).unwrap().payload[..], b"hello");
}

#[test]
fn group_commit_reports_the_batch_durable() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileStore::open(
        dir.path(),
        StreamStoreConfig::default(),
        FileStoreOptions {
            sync: SyncPolicy::Always,
            ..FileStoreOptions::default()
        },
    )
    .unwrap();
    for _ in 0..50 {
        store.store_msg("batch", b"", b"x", None).unwrap();
    }
    assert_eq!(store.flush().unwrap(), 50);
    // Visible to a second opener (another process after a crash would see the same bytes).
    let copy = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_file() {
            fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    let reopened =
        FileStore::open(copy.path(), StreamStoreConfig::default(), options(1 << 20)).unwrap();
    assert_eq!(reopened.state().msgs, 50);
}

#[test]
fn purge_and_compact_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 1024);
    for _ in 0..100 {
        store.store_msg("p", b"", &[1u8; 50], None).unwrap();
    }
    store.compact(40).unwrap();
    store.flush().unwrap();
    store.abandon();
    let mut store = open(dir.path(), 1024);
    assert_eq!(store.state().first_seq, 40);
    assert_eq!(store.state().msgs, 61);
    store.purge().unwrap();
    store.close().unwrap();
    let mut store = open(dir.path(), 1024);
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (0, 101, 100));
    assert_eq!(store.block_count(), 1);
    assert_eq!(store.store_msg("p", b"", b"", None).unwrap().0, 101);
}

#[test]
fn limits_tightened_while_closed_apply_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 1 << 20);
    for index in 0..10u64 {
        store
            .store_msg(&format!("k.{}", index % 2), b"", b"v", None)
            .unwrap();
    }
    store.close().unwrap();
    let limits = StreamStoreConfig {
        max_msgs: 6,
        max_msgs_per_subject: 2,
        ..StreamStoreConfig::default()
    };
    let store = FileStore::open(dir.path(), limits, options(1 << 20)).unwrap();
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (4, 7, 10));
}

#[test]
fn second_opener_of_a_directory_is_refused_until_the_first_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stream");
    let mut first = open(&path, 4096);
    // Locked through the directory itself: no `lock` file is created (one inode fewer per
    // stream creation).
    assert!(!path.join("lock").exists());
    first.store_msg("a", b"", b"one", None).unwrap();
    match FileStore::open(&path, StreamStoreConfig::default(), options(4096)) {
        Err(StoreError::Locked(locked)) => assert_eq!(locked, path),
        other => panic!("second open must be refused, got {:?}", other.map(|_| ())),
    }
    // The refused open touched nothing: the first store carries on.
    first.store_msg("a", b"", b"two", None).unwrap();
    first.close().unwrap();

    // Closed (even while the value lives on, as behind a shared handle): open again.
    let mut second = open(&path, 4096);
    assert_eq!(second.state().msgs, 2);
    drop(first);
    assert!(matches!(
        FileStore::open(&path, StreamStoreConfig::default(), options(4096)),
        Err(StoreError::Locked(_))
    ));
    second.store_msg("a", b"", b"three", None).unwrap();
    drop(second);

    // Dropped without close: the lock goes with it.
    let third = open(&path, 4096);
    assert_eq!(third.state().msgs, 3);
}

fn last_block(dir: &Path) -> std::path::PathBuf {
    let mut blocks: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "blk"))
        .collect();
    blocks.sort();
    blocks.pop().unwrap()
}

#[test]
fn zero_filled_tail_is_not_damage_and_the_next_append_follows_the_last_record() {
    for zeros in [1usize, 39, 4096, 1 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(dir.path(), 1 << 22);
        for seq in 1..=50u64 {
            store
                .store_msg("zero.tail", b"", &[seq as u8; 70], None)
                .unwrap();
        }
        store.flush().unwrap();
        store.abandon();
        // What a preallocated block, or a file size extended before its data, leaves behind.
        let path = last_block(dir.path());
        let good_len = fs::metadata(&path).unwrap().len();
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut file, &vec![0u8; zeros]).unwrap();
        drop(file);

        let mut store = open(dir.path(), 1 << 22);
        let report = store.recovery_report().clone();
        assert!(
            report.is_clean(),
            "{zeros} zeros reported as damage: {report:?}"
        );
        assert_eq!(report.zero_tail_bytes, zeros as u64);
        assert_eq!(report.truncated_bytes, 0);
        assert_eq!(store.state().msgs, 50);
        assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
        let (seq, _) = store.store_msg("zero.tail", b"", b"next", None).unwrap();
        assert_eq!(seq, 51);
        store.flush().unwrap();
        store.abandon();

        let mut store = open(dir.path(), 1 << 22);
        assert!(store.recovery_report().is_clean());
        assert_eq!(store.state().msgs, 51);
        assert_eq!(&store.load(51).unwrap().payload[..], b"next");
        assert_eq!(&store.load(50).unwrap().payload[..], &[50u8; 70][..]);
        store.close().unwrap();
    }
}

#[test]
fn a_torn_record_before_zeros_is_still_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 1 << 22);
    for seq in 1..=10u64 {
        store
            .store_msg("torn", b"", &[seq as u8; 70], None)
            .unwrap();
    }
    store.flush().unwrap();
    store.abandon();
    let path = last_block(dir.path());
    let len = fs::metadata(&path).unwrap().len();
    // Cut the last record in half and pad with zeros: damage, not a clean zero tail.
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 40).unwrap();
    file.set_len(len + 4096).unwrap();
    drop(file);
    let store = open(dir.path(), 1 << 22);
    assert!(!store.recovery_report().is_clean());
    assert_eq!(store.state().msgs, 9);
}

fn compressed() -> StreamStoreConfig {
    StreamStoreConfig {
        compression: nats_store::Compression::S2,
        ..StreamStoreConfig::default()
    }
}

fn compressible(seq: u64) -> Vec<u8> {
    format!(
        "{{\"order\":{seq},\"status\":\"shipped\",\"items\":[{}]}}",
        "\"widget\",".repeat(60)
    )
    .into_bytes()
}

#[test]
fn s2_compressed_store_reads_back_everything_and_takes_less_disk() {
    let headers = b"NATS/1.0\r\nNats-Msg-Id: abc\r\nKind: order\r\n\r\n";
    let plain_dir = tempfile::tempdir().unwrap();
    let packed_dir = tempfile::tempdir().unwrap();
    for (dir, config) in [
        (plain_dir.path(), StreamStoreConfig::default()),
        (packed_dir.path(), compressed()),
    ] {
        let mut store = FileStore::open(dir, config, options(64 * 1024)).unwrap();
        for seq in 1..=400u64 {
            let headers: &[u8] = if seq % 2 == 0 { headers } else { b"" };
            store
                .store_msg(
                    &format!("orders.{}", seq % 4),
                    headers,
                    &compressible(seq),
                    None,
                )
                .unwrap();
        }
        store.close().unwrap();
    }
    let plain = disk_bytes(plain_dir.path());
    let packed = disk_bytes(packed_dir.path());
    assert!(
        packed * 3 < plain,
        "compressed {packed} bytes vs plain {plain}"
    );

    let check = |store: &mut FileStore| {
        let state = store.state();
        assert_eq!(state.msgs, 400);
        for seq in [1u64, 2, 199, 400] {
            let message = store.load(seq).unwrap();
            assert_eq!(message.subject, format!("orders.{}", seq % 4));
            assert_eq!(&message.payload[..], &compressible(seq)[..]);
            let expected: &[u8] = if seq % 2 == 0 { headers } else { b"" };
            assert_eq!(&message.headers[..], expected);
        }
        let last = store.load_last("orders.3").unwrap().unwrap();
        assert_eq!(last.seq, 399);
    };
    // After a clean close (indexes) and after a crash (block scans).
    let mut store = FileStore::open(packed_dir.path(), compressed(), options(64 * 1024)).unwrap();
    check(&mut store);
    let plain_store = FileStore::open(
        plain_dir.path(),
        StreamStoreConfig::default(),
        options(64 * 1024),
    )
    .unwrap();
    // Accounting follows the uncompressed message, as nats-server's does.
    assert_eq!(store.state().bytes, plain_store.state().bytes);
    plain_store.abandon();
    store.abandon();
    for entry in fs::read_dir(packed_dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "idx") {
            fs::remove_file(path).unwrap();
        }
    }
    let mut store = FileStore::open(packed_dir.path(), compressed(), options(64 * 1024)).unwrap();
    assert!(store.recovery_report().is_clean());
    assert_eq!(store.recovery_report().blocks_from_index, 0);
    check(&mut store);

    // Removals compact blocks (records move, still compressed); erase still works.
    for seq in (1..=300u64).filter(|seq| seq % 5 != 0) {
        store.remove(seq).unwrap();
    }
    store.erase(400).unwrap();
    store.flush().unwrap();
    assert_eq!(&store.load(5).unwrap().payload[..], &compressible(5)[..]);
    assert!(store.load(400).is_err());
    store.close().unwrap();
    let mut store = FileStore::open(packed_dir.path(), compressed(), options(64 * 1024)).unwrap();
    assert_eq!(store.state().msgs, 400 - 240 - 1);
    assert_eq!(
        &store.load(300).unwrap().payload[..],
        &compressible(300)[..]
    );
    assert_eq!(
        &store.load(399).unwrap().payload[..],
        &compressible(399)[..]
    );

    // Switching compression off keeps old records readable and writes new ones plain.
    store.update_config(StreamStoreConfig::default()).unwrap();
    let (seq, _) = store
        .store_msg("orders.x", b"", &compressible(1), None)
        .unwrap();
    store.close().unwrap();
    let mut store = FileStore::open(
        packed_dir.path(),
        StreamStoreConfig::default(),
        options(64 * 1024),
    )
    .unwrap();
    assert_eq!(&store.load(seq).unwrap().payload[..], &compressible(1)[..]);
    assert_eq!(
        &store.load(305).unwrap().payload[..],
        &compressible(305)[..]
    );
    store.close().unwrap();
}

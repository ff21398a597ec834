//! Store recovery from damaged files: a small valid store (several blocks, a deleted message, a
//! consumer with deliveries and acks) is written once per process for each of four shapes
//! (compression none/s2 x closed cleanly/abandoned as by kill -9); each input copies one, damages
//! its files (block, index, high-water mark, consumer state, metadata) with byte edits and
//! truncations the input chooses, and opens it again.
//!
//! Asserted: no panic (libFuzzer's -malloc_limit_mb catches unbounded allocation); the store
//! opens (unless its metadata, the stream's config, was damaged); when one file was damaged, the last sequence is still the intact store's (the other
//! files say it) and a new message gets a higher sequence (no acknowledged sequence re-issued);
//! every sequence loads or errors; the consumer's ack floor is never above the intact one.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nats_store::{
    Compression, FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy,
};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

const MESSAGES: u64 = 40;

struct Template {
    dir: PathBuf,
    /// Files relative to `dir`, sorted.
    files: Vec<PathBuf>,
    compression: Compression,
    last_seq: u64,
    ack_floor: u64,
}

fn options() -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Interval(Duration::from_secs(600)),
        block_size: 600,
        write_buffer_limit: 4096,
        defer_creation_sync: false,
    }
}

fn config(compression: Compression) -> StreamStoreConfig {
    StreamStoreConfig {
        name: "S".into(),
        compression,
        ..StreamStoreConfig::default()
    }
}

fn root() -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("rnats-fuzz-store-{}", std::process::id()))
}

fn list_files(dir: &Path, relative: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir.join(relative)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = relative.join(entry.file_name());
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => list_files(dir, &path, out),
            Ok(kind) if kind.is_file() && entry.file_name() != "lock" => out.push(path),
            _ => {}
        }
    }
}

fn build(index: usize) -> Template {
    let compression = if index & 1 == 0 {
        Compression::None
    } else {
        Compression::S2
    };
    let clean = index & 2 == 0;
    let dir = root().join(format!("template-{index}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut store = FileStore::open(&dir, config(compression), options()).expect("template store");
    store
        .set_metadata(br#"{"name":"S","subjects":["s.>"]}"#)
        .expect("metadata");
    for seq in 1..=MESSAGES {
        let headers: &[u8] = if seq % 5 == 0 {
            b"NATS/1.0\r\nK: v\r\n\r\n"
        } else {
            b""
        };
        let payload = vec![seq as u8; (seq as usize * 7) % 50];
        store
            .store_msg(&format!("s.{}", seq % 4), headers, &payload, None)
            .expect("store");
    }
    store.remove(7).expect("remove");
    let mut consumer = store.consumer_store("C").expect("consumer");
    consumer.set_config(b"{}").expect("consumer config");
    for seq in 1..=20 {
        consumer
            .update_delivered(seq, seq, 1, seq as i64)
            .expect("delivered");
    }
    for seq in [1, 2, 3, 5, 8] {
        consumer.update_acks(seq, seq).expect("ack");
    }
    consumer.flush().expect("consumer flush");
    let ack_floor = consumer.state().ack_floor.stream_seq;
    drop(consumer);
    store.flush().expect("flush");
    if clean {
        store.close().expect("close");
    } else {
        store.abandon();
    }
    let mut files = Vec::new();
    list_files(&dir, Path::new(""), &mut files);
    files.sort();
    Template {
        dir,
        files,
        compression,
        last_seq: MESSAGES,
        ack_floor,
    }
}

fn templates() -> &'static [Template] {
    static TEMPLATES: OnceLock<Vec<Template>> = OnceLock::new();
    TEMPLATES.get_or_init(|| (0..4).map(build).collect())
}

fn copy_tree(from: &Path, to: &Path, files: &[PathBuf]) {
    let _ = std::fs::remove_dir_all(to);
    for file in files {
        let target = to.join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).expect("work dir");
        }
        // libFuzzer's timeout alarm can interrupt the copy (EINTR): copy again.
        let mut copied = std::fs::copy(from.join(file), &target);
        while matches!(&copied, Err(error) if error.kind() == std::io::ErrorKind::Interrupted) {
            copied = std::fs::copy(from.join(file), &target);
        }
        copied.expect("copy");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, edits)) = data.split_first() else {
        return;
    };
    let template = &templates()[usize::from(selector) % 4];
    let work = root().join("work");
    copy_tree(&template.dir, &work, &template.files);
    let mut damaged = std::collections::BTreeSet::new();
    // Edits of five bytes: file, operation, offset (u16), value.
    for edit in edits.chunks_exact(5).take(16) {
        let file = &template.files[usize::from(edit[0]) % template.files.len()];
        let path = work.join(file);
        let Ok(mut bytes) = std::fs::read(&path) else {
            continue;
        };
        let offset = usize::from(u16::from_le_bytes([edit[2], edit[3]]));
        let at = offset % (bytes.len() + 1);
        match edit[1] % 4 {
            0 | 1 if at < bytes.len() => bytes[at] ^= edit[4].max(1),
            2 if at < bytes.len() => bytes[at] = edit[4],
            3 => bytes.truncate(at),
            _ => continue,
        }
        std::fs::write(&path, &bytes).expect("damage");
        damaged.insert(file.clone());
    }
    // A damaged stream metadata file (the stream's config) is refused with an error: the owner
    // cannot know what the stream was. Any other damage is repaired.
    let mut store = match FileStore::open(&work, config(template.compression), options()) {
        Ok(store) => store,
        Err(_) if damaged.contains(Path::new("meta.bin")) => return,
        Err(error) => panic!("damaged {damaged:?}: open failed: {error}"),
    };
    let state = store.state();
    if damaged.len() <= 1 {
        assert!(
            state.last_seq >= template.last_seq,
            "damaged {damaged:?}: last sequence {} below {}",
            state.last_seq,
            template.last_seq
        );
    }
    for seq in state.first_seq..=state.last_seq.min(state.first_seq + 2 * MESSAGES) {
        let _ = store.load(seq);
    }
    let _ = store.load_next(">", 0);
    let _ = store.num_pending(">", 0, false);
    if let Ok(mut consumer) = store.consumer_store("C") {
        let recovered = consumer.state();
        assert!(
            recovered.ack_floor.stream_seq <= template.ack_floor,
            "damaged {damaged:?}: ack floor {} above the intact {}",
            recovered.ack_floor.stream_seq,
            template.ack_floor
        );
        let _ = consumer.update_acks(9, 9);
        let _ = consumer.flush();
    }
    if let Ok((seq, _)) = store.store_msg("s.new", b"", b"after", None) {
        assert!(
            seq > state.last_seq && (damaged.len() > 1 || seq > template.last_seq),
            "damaged {damaged:?}: new message got sequence {seq} (last was {})",
            state.last_seq
        );
        let _ = store.flush();
    }
    let _ = store.close();
});

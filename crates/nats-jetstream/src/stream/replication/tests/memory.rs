//! A replicated stream's snapshot is never whole in memory: [`ReplicaMachine::snapshot`] writes
//! it to its file a piece at a time as it reads the store, and [`ReplicaMachine::restore`] reads
//! it back in pieces. The test binary's allocator counts the bytes each thread holds, so the
//! test sees what the calls on its own thread held at once, whatever other tests run beside
//! it. (Before, `snapshot` returned the whole stream as one buffer, and `restore` took one.)

use super::harness::{replicator, start_replica};
use crate::replica_tests::contents_of_stream;
use crate::stream::apply::StreamEntry;
use crate::stream::replication::{codec, ReplicaMachine};
use crate::stream::Stream;
use crate::test_transport::TestRouter;
use jetstream_api::StorageType;
use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Cow;
use std::cell::Cell;
use std::io::{Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// Counts the bytes each thread allocated and has not freed, and their peak.
struct PerThread;

thread_local! {
    static HELD: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            count(layout.size() as i64);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: PerThread = PerThread;

/// `work`'s result and the most bytes this thread held during it above what it held before.
fn peak_during<T>(work: impl FnOnce() -> T) -> (T, i64) {
    let before = HELD.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let result = work();
    (result, PEAK.with(Cell::get) - before)
}

fn replica(directory: &Path, storage: StorageType) -> (Arc<Stream>, ReplicaMachine) {
    let (stream, machine, _) = start_replica(directory, storage, TestRouter::new(), &replicator());
    (stream, machine)
}

const MESSAGES: u64 = 32 * 1024;
/// 32 MiB of payloads in all.
const PAYLOAD: usize = 1024;
/// A few pieces (`codec::PIECE`, 1 MiB) and what the stores allocate as they go.
const BOUND: i64 = 8 << 20;

#[tokio::test(flavor = "current_thread")]
async fn a_32_mib_stream_snapshots_and_restores_in_pieces() {
    let root = tempfile::tempdir().expect("tempdir");
    let (source_stream, source) = replica(&root.path().join("a"), StorageType::Memory);
    let payload = vec![b'x'; PAYLOAD];
    for (number, first) in (1..=MESSAGES).step_by(1024).enumerate() {
        let mut batch = Vec::new();
        codec::start_batch(&mut batch);
        for seq in first..first + 1024 {
            let entry = StreamEntry::Message {
                seq,
                timestamp: seq as i64,
                subject: Cow::Owned(format!("orders.{}", seq % 5)),
                headers: Cow::Borrowed(b""),
                payload: Cow::Borrowed(&payload),
                ttl: None,
            };
            codec::encode(&entry, &mut batch);
        }
        codec::finish_batch(&mut batch, 1_000 + number as u64, first + 1023);
        source.apply_committed(&batch).expect("a follower's apply");
    }

    let mut file = tempfile::tempfile().expect("tempfile");
    let (written, held) = peak_during(|| source.snapshot(&mut file));
    written.expect("snapshot");
    let length = file.seek(SeekFrom::End(0)).expect("length");
    assert!(length > MESSAGES * PAYLOAD as u64, "{length} bytes written");
    println!("snapshot of {length} bytes: {held} bytes held at once");
    assert!(
        held < BOUND,
        "snapshot held {held} bytes at once for {length}"
    );

    file.seek(SeekFrom::Start(0)).expect("rewind");
    let mut reader = std::io::BufReader::with_capacity(codec::PIECE, file);
    let (target_stream, target) = replica(&root.path().join("b"), StorageType::File);
    let (restored, held) = peak_during(|| target.restore(&mut reader));
    restored.expect("restore");
    println!("restore: {held} bytes held at once");
    assert!(
        held < BOUND,
        "restore held {held} bytes at once for {length}"
    );
    let (restored_state, restored) = contents_of_stream(&target_stream);
    let (source_state, messages) = contents_of_stream(&source_stream);
    // (`bytes` is each store kind's own count.)
    assert_eq!(
        (
            restored_state.msgs,
            restored_state.first_seq,
            restored_state.last_seq
        ),
        (
            source_state.msgs,
            source_state.first_seq,
            source_state.last_seq
        )
    );
    assert!(
        restored == messages,
        "the restored messages are the source's"
    );
    source_stream.stop(false).await;
    target_stream.stop(false).await;
}

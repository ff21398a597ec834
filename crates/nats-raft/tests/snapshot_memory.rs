//! A group's snapshot is never whole in memory: built into a file, sent a chunk at a time from
//! it, received into a file and restored from it. The test process counts the bytes it holds
//! (a counting global allocator, this file's test alone in its binary) while a 64 MiB snapshot
//! is built on the leader and reaches a wiped follower. Before, the application's snapshot was
//! one `Bytes` on the leader and was assembled whole on the follower: 128 MiB and more at once.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{fast, propose_many, snapshot_and_rejoin_as_4, stop_and_wipe_a_follower, Cluster};

/// Counts the bytes allocated and not yet freed, and their peak since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                let grown = new_size - layout.size();
                let held = HELD.fetch_add(grown, Ordering::Relaxed) + grown;
                PEAK.fetch_max(held, Ordering::Relaxed);
            } else {
                HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const WAIT: Duration = Duration::from_secs(60);
const PADDING: u64 = 64 << 20;
/// What the whole path may hold above what the process held before it: a few 1 MiB pieces
/// (the builder's and the receiver's file buffers, a chunk on each side, the restore's reader).
const BOUND: usize = 16 << 20;

fn snapshot_on_demand(config: &mut nats_raft::GroupConfig) {
    fast(config);
    config.snapshot_after_entries = 1_000_000;
    config.snapshot_lag_threshold = 100;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_64_mib_snapshot_reaches_a_wiped_follower_without_being_held_whole() {
    let mut cluster = Cluster::start_padded(&[1, 2, 3], snapshot_on_demand, PADDING).await;
    let leader = cluster.leader(WAIT).await;
    let behind = stop_and_wipe_a_follower(&cluster, leader).await;
    let indexes = propose_many(&cluster.node(leader), "a", 300).await;
    let last = *indexes.iter().max().expect("indexes");

    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    snapshot_and_rejoin_as_4(&mut cluster, leader, behind, last, WAIT).await;
    let peak = PEAK.load(Ordering::Relaxed);
    let restored_padding = common::lock(&cluster.applied[&4]).restored_padding;
    assert_eq!(restored_padding, PADDING, "the whole snapshot arrived");
    let above = peak.saturating_sub(before);
    println!(
        "held before {} KiB, peak {} KiB: {} KiB above, for a {} MiB snapshot",
        before >> 10,
        peak >> 10,
        above >> 10,
        PADDING >> 20
    );
    assert!(
        above < BOUND,
        "{above} bytes held at once above the {before} before, for a snapshot of {PADDING}"
    );
    cluster.shutdown().await;
}

//! Index memory and speed with 1M distinct subjects, counted by the allocator itself.
//!
//! `cargo run --release -p nats-store --example index_figures` (INDEX_FIGURES_COUNT=n for another
//! subject count, INDEX_FIGURES_MEMORY_ONLY=1 to stop after the memory figures).
//!
//! The index is built directly (`MessageIndex`, one message on each of 1M subjects
//! `kv.bucket.keyNNNNNNN`, as `store_figures` stores them), so every heap byte allocated while
//! building it belongs to it. A counting global allocator reports two figures:
//! - requested: the bytes asked of the allocator (what `heap_bytes`-style sums can see);
//! - footprint: what malloc really hands out: usable size plus its 8-byte chunk header, so the
//!   rounding of small allocations (a 20-byte subject text takes a 32-byte chunk) is counted.
//!
//! Subject index = everything except the per-sequence slots (`slot_bytes`, one allocation);
//! both are printed, with and without the slots. Then the per-operation times of what the issue
//! measures on the index: lookups by subject (the index part of `load_last`), wildcard pending
//! counts, and the rebuild a store open pays (`push` of 1M messages on new subjects).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use nats_store::index::{MessageIndex, Slot};

struct Counting;

static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static FOOTPRINT: AtomicUsize = AtomicUsize::new(0);

/// malloc's chunk header on 64-bit glibc.
const CHUNK_HEADER: usize = 8;

fn footprint(pointer: *mut u8) -> usize {
    // SAFETY: `pointer` was returned by the system allocator (glibc malloc) and is still live.
    unsafe { libc::malloc_usable_size(pointer.cast()) + CHUNK_HEADER }
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            REQUESTED.fetch_add(layout.size(), Ordering::Relaxed);
            FOOTPRINT.fetch_add(footprint(pointer), Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        REQUESTED.fetch_sub(layout.size(), Ordering::Relaxed);
        FOOTPRINT.fetch_sub(footprint(pointer), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let before = footprint(pointer);
        // SAFETY: same contract as the caller's.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            REQUESTED.fetch_add(new_size, Ordering::Relaxed);
            REQUESTED.fetch_sub(layout.size(), Ordering::Relaxed);
            FOOTPRINT.fetch_add(footprint(moved), Ordering::Relaxed);
            FOOTPRINT.fetch_sub(before, Ordering::Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn counters() -> (usize, usize) {
    (
        REQUESTED.load(Ordering::Relaxed),
        FOOTPRINT.load(Ordering::Relaxed),
    )
}

fn slot(timestamp: i64) -> Slot {
    Slot {
        timestamp,
        location: 0,
        size: 40,
        subject_id: 0,
        record_len: 40,
    }
}

fn per_op(label: &str, count: u64, start: Instant) {
    println!(
        "{label}: {:.3} µs/op",
        start.elapsed().as_secs_f64() * 1e6 / count as f64
    );
}

fn main() {
    let count: u64 = std::env::var("INDEX_FIGURES_COUNT")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000_000);
    let subjects: Vec<String> = (0..count).map(|n| format!("kv.bucket.key{n:07}")).collect();
    let subject_bytes: usize = subjects.iter().map(String::len).sum();
    let average = subject_bytes as f64 / count as f64;

    let (requested_before, footprint_before) = counters();
    let start = Instant::now();
    let mut index = MessageIndex::new(1);
    for (position, subject) in subjects.iter().enumerate() {
        index.push(position as u64 + 1, slot(position as i64), subject);
    }
    let build = start.elapsed();
    let (requested_after, footprint_after) = counters();
    let requested = (requested_after - requested_before) as f64 / count as f64;
    let footprint = (footprint_after - footprint_before) as f64 / count as f64;
    let slots = index.slot_bytes() as f64 / count as f64;
    println!("{count} subjects, one message each, average subject {average:.1} B");
    println!(
        "build (push {count} msgs on new subjects, the index part of an open): {:.0} ms",
        build.as_secs_f64() * 1e3
    );
    println!(
        "subject index, allocator footprint: {:.1} B/subject = {:.1} + subject length",
        footprint - slots,
        footprint - slots - average
    );
    println!(
        "subject index, requested bytes:     {:.1} B/subject = {:.1} + subject length",
        requested - slots,
        requested - slots - average
    );
    println!(
        "subject index, heap_bytes():        {:.1} B/subject = {:.1} + subject length",
        index.subject_table().heap_bytes() as f64 / count as f64,
        index.subject_table().heap_bytes() as f64 / count as f64 - average
    );
    println!(
        "with the per-sequence slots ({slots:.1} B/msg), footprint: {:.1} B/subject = {:.1} + subject length",
        footprint,
        footprint - average
    );

    if std::env::var_os("INDEX_FIGURES_MEMORY_ONLY").is_some() {
        return;
    }
    // Random-order lookups miss the caches on every step: timings are noisy on a shared machine,
    // so each is the best of three rounds.
    let probes = count.min(1_000_000);
    let best_of_three = |label: &str, work: &mut dyn FnMut(u64)| {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            for probe in 0..probes {
                work(probe);
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!(
            "{label}: {:.3} µs/op (best of 3)",
            best * 1e6 / probes as f64
        );
    };
    let random = |probe: u64| &subjects[((probe * 7919) % count) as usize];
    best_of_three("last_matching(literal), random order", &mut |probe| {
        assert!(index.last_matching(random(probe)).is_some());
    });
    best_of_three("num_pending(literal), random order", &mut |probe| {
        assert_eq!(
            index.num_pending(std::slice::from_ref(random(probe)), 1, false),
            1
        );
    });
    best_of_three("lookup(literal), random order", &mut |probe| {
        assert!(index.subject_table().lookup(random(probe)).is_some());
    });
    let start = Instant::now();
    for probe in 0..probes {
        index.push(
            count + probe + 1,
            slot((count + probe) as i64),
            random(probe),
        );
    }
    per_op(
        "push on an existing subject (not the previous one), random order",
        probes,
        start,
    );
    for filter in ["kv.bucket.*", "kv.*.key0500000", "kv.>", "*.*.key0000001"] {
        let filters = vec![filter.to_string()];
        let start = Instant::now();
        let pending = index.num_pending(&filters, count / 2, false);
        println!(
            "num_pending({filter}, mid-stream) = {pending}: {:.3} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let start = Instant::now();
    let listed = index.subject_table().matching("kv.bucket.*").len();
    println!(
        "matching(kv.bucket.*) = {listed} ids: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    for seq in 1..=count {
        index.remove(seq);
    }
    per_op("remove the first message of each subject", count, start);
    let start = Instant::now();
    for probe in 0..probes {
        index.remove(count + probe + 1);
    }
    per_op("remove the last message of each subject", probes, start);
    let (requested_end, footprint_end) = counters();
    println!(
        "after removing everything: {} B requested, {} B footprint still held by the index",
        requested_end.saturating_sub(requested_before),
        footprint_end.saturating_sub(footprint_before)
    );
}

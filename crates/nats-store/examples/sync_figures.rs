//! Measures what one durable group commit costs on this disk, per way of making it durable.
//!
//! `cargo run --release -p nats-store --example sync_figures [-- DIR [BATCH_BYTES [ROUNDS]]]`
//! Each round appends BATCH_BYTES (default 256 records of 170 bytes: the js_pub_async window of
//! 128-byte messages) after the previous round and makes it durable, then prints the median and
//! p90 latency per round for: fdatasync on a growing file, on a fallocate'd file, on a
//! zero-filled (written once) file; pwrite with O_DSYNC on a zero-filled file; O_DIRECT|O_DSYNC
//! with page-aligned buffers (rewriting the partial tail page each round); and pwrite+fdatasync
//! from 2, 4 and 8 threads at once on one file (what the FileStore's sync pipeline does): on the
//! virtio disk of the test machine a lone flush waits ~4 ms, overlapping ones far less.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FILE_SIZE: u64 = 64 * 1024 * 1024;
const PAGE: usize = 4096;

fn open(path: &Path, flags: i32) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .custom_flags(flags)
        .open(path)
        .expect("open")
}

fn zero_fill(path: &Path) {
    let file = open(path, 0);
    let zeros = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    while offset < FILE_SIZE {
        file.write_all_at(&zeros, offset).expect("zero fill");
        offset += zeros.len() as u64;
    }
    file.sync_all().expect("sync");
}

fn fallocate(path: &Path) {
    let file = open(path, 0);
    let result = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, FILE_SIZE as libc::off_t) };
    assert_eq!(result, 0, "fallocate");
    file.sync_all().expect("sync");
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let p90 = samples[samples.len() * 9 / 10];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    let bounds = [0.5, 1.0, 2.0, 3.0, 3.9, 4.1, 6.0, f64::MAX];
    let mut histogram = [0usize; 8];
    for sample in &samples {
        let ms = sample.as_secs_f64() * 1e3;
        let bucket = bounds.iter().position(|bound| ms < *bound).unwrap_or(7);
        histogram[bucket] += 1;
    }
    println!(
        "{name:<40} mean {:>6.3} median {:>6.3} p90 {:>6.3} ms  <.5/<1/<2/<3/<3.9/<4.1/<6/more {histogram:?}",
        mean.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3
    );
}

/// pwrite at the tail then fdatasync (or nothing when the file is O_DSYNC).
fn buffered(path: &Path, flags: i32, batch: usize, rounds: usize, datasync: bool) -> Vec<Duration> {
    let file = open(path, flags);
    let data = vec![0x5au8; batch];
    let mut offset = 0u64;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        file.write_all_at(&data, offset).expect("write");
        if datasync {
            file.sync_data().expect("fdatasync");
        }
        samples.push(start.elapsed());
        offset += batch as u64;
    }
    samples
}

/// O_DIRECT|O_DSYNC: the tail page is kept in memory and rewritten with each round.
fn direct(path: &Path, batch: usize, rounds: usize) -> Vec<Duration> {
    let file = open(path, libc::O_DIRECT | libc::O_DSYNC);
    let capacity = batch + 2 * PAGE;
    let layout = std::alloc::Layout::from_size_align(capacity, PAGE).expect("layout");
    let memory = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!memory.is_null());
    let buffer = unsafe { std::slice::from_raw_parts_mut(memory, capacity) };
    let mut tail_len = 0usize;
    let mut page_offset = 0u64;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        buffer[tail_len..tail_len + batch].fill(0x5a);
        let end = tail_len + batch;
        let aligned = end.div_ceil(PAGE) * PAGE;
        buffer[end..aligned].fill(0);
        file.write_all_at(&buffer[..aligned], page_offset)
            .expect("direct write");
        samples.push(start.elapsed());
        let whole = end / PAGE * PAGE;
        buffer.copy_within(whole..end, 0);
        tail_len = end - whole;
        page_offset += whole as u64;
    }
    unsafe { std::alloc::dealloc(memory, layout) };
    samples
}

/// `threads` writers appending to one file, each write followed by its own fdatasync.
fn overlapping(path: &Path, threads: usize, batch: usize, rounds: usize) -> Vec<Duration> {
    let file = std::sync::Arc::new(open(path, 0));
    let next_offset = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let file = file.clone();
            let next_offset = next_offset.clone();
            std::thread::spawn(move || {
                let data = vec![0x5au8; batch];
                let mut samples = Vec::with_capacity(rounds / threads);
                for _ in 0..rounds / threads {
                    let start = Instant::now();
                    let offset =
                        next_offset.fetch_add(batch as u64, std::sync::atomic::Ordering::Relaxed);
                    file.write_all_at(&data, offset).expect("write");
                    file.sync_data().expect("fdatasync");
                    samples.push(start.elapsed());
                }
                samples
            })
        })
        .collect();
    workers
        .into_iter()
        .flat_map(|worker| worker.join().expect("worker"))
        .collect()
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let dir = arguments
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sync-figures"));
    let batch: usize = arguments
        .next()
        .and_then(|value| value.parse().ok())
        .unwrap_or(256 * 170);
    let rounds: usize = arguments
        .next()
        .and_then(|value| value.parse().ok())
        .unwrap_or(300);
    std::fs::create_dir_all(&dir).expect("dir");
    println!(
        "batch {batch} bytes, {rounds} rounds, dir {}",
        dir.display()
    );
    let path = dir.join("probe.bin");
    let fresh = |path: &Path| {
        let _ = std::fs::remove_file(path);
    };

    fresh(&path);
    report(
        "fdatasync, growing file",
        buffered(&path, 0, batch, rounds, true),
    );
    fresh(&path);
    fallocate(&path);
    report(
        "fdatasync, fallocate'd file",
        buffered(&path, 0, batch, rounds, true),
    );
    fresh(&path);
    zero_fill(&path);
    report(
        "fdatasync, zero-filled file",
        buffered(&path, 0, batch, rounds, true),
    );
    fresh(&path);
    zero_fill(&path);
    report(
        "pwrite O_DSYNC, zero-filled file",
        buffered(&path, libc::O_DSYNC, batch, rounds, false),
    );
    fresh(&path);
    report(
        "pwrite O_DSYNC, growing file",
        buffered(&path, libc::O_DSYNC, batch, rounds, false),
    );
    fresh(&path);
    zero_fill(&path);
    report(
        "O_DIRECT|O_DSYNC, zero-filled file",
        direct(&path, batch, rounds),
    );
    fresh(&path);
    fallocate(&path);
    report(
        "O_DIRECT|O_DSYNC, fallocate'd file",
        direct(&path, batch, rounds),
    );
    for threads in [2, 4, 8] {
        fresh(&path);
        let started = Instant::now();
        let samples = overlapping(&path, threads, batch / threads, rounds);
        let rate = samples.len() as f64 / started.elapsed().as_secs_f64();
        report(
            &format!("{threads} overlapping fdatasyncs ({rate:.0}/s)"),
            samples,
        );
    }
    fresh(&path);
}

//! Prints the FileStore's performance figures next to the raw speed of the same disk.
//!
//! `cargo run --release -p nats-store --example store_figures [-- DIR]` (default: a temp dir).
//! Figures: append throughput (1 KB and 128 B; interval sync and `always` + group commit) versus
//! plain sequential write+fsync; open time of a 1M-message store after clean close and after a
//! crash; sequential and scattered reads; load_last / num_pending with 1M distinct subjects; index
//! memory per subject. `STORE_FIGURES_READS_ONLY=1` prints only the read figures,
//! `STORE_FIGURES_INTERVAL_ONLY=1` only the interval-sync appends next to the raw writes.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};

const BATCH: usize = 100;

fn mb(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64() / 1e6
}

/// Raw sequential write of `total` bytes in `chunk`-sized writes; fsync every `sync_every` chunks
/// (0: once at the end).
fn raw_write(dir: &Path, total: u64, chunk: usize, sync_every: usize) -> f64 {
    let cpu_before = thread_cpu_time();
    let path = dir.join("raw.bin");
    let mut file = File::create(&path).expect("create raw file");
    let buffer = vec![0x5au8; chunk];
    let start = Instant::now();
    let mut written = 0u64;
    let mut chunks = 0usize;
    while written < total {
        file.write_all(&buffer).expect("raw write");
        written += chunk as u64;
        chunks += 1;
        if sync_every > 0 && chunks.is_multiple_of(sync_every) {
            file.sync_data().expect("raw fsync");
        }
    }
    file.sync_data().expect("raw fsync");
    let elapsed = start.elapsed();
    let speed = mb(written, elapsed);
    let cpu = thread_cpu_time().saturating_sub(cpu_before);
    // Writes hold BATCH records each: cpu per record, to set next to the store's cpu per message.
    let record = chunk / BATCH;
    println!(
        "    (raw: {:.3} s wall, {:.3} s cpu = {:.3} µs cpu per {record} B record)",
        elapsed.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / (written as f64 / record as f64),
    );
    drop(file);
    let _ = std::fs::remove_file(&path);
    speed
}

fn options(sync: SyncPolicy) -> FileStoreOptions {
    FileStoreOptions {
        sync,
        ..FileStoreOptions::default()
    }
}

/// Append `count` messages of `payload` bytes in batches of BATCH with one flush per batch.
/// Returns (messages/s, MB/s of record bytes written to disk).
fn append(dir: &Path, count: usize, payload: usize, sync: SyncPolicy) -> (f64, f64) {
    let _ = std::fs::remove_dir_all(dir);
    let mut store =
        FileStore::open(dir, StreamStoreConfig::default(), options(sync)).expect("open store");
    let body = vec![0x42u8; payload];
    let subject = "bench.append.subject";
    let start = Instant::now();
    let cpu_before = cpu_time();
    let thread_before = thread_cpu_time();
    for index in 0..count {
        store.store_msg(subject, b"", &body, None).expect("store");
        if (index + 1) % BATCH == 0 {
            store.flush().expect("flush");
        }
    }
    store.flush().expect("flush");
    store.sync().expect("sync");
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    let thread_cpu = thread_cpu_time().saturating_sub(thread_before);
    let record_bytes = (count * (payload + subject.len() + 40)) as u64;
    store.close().expect("close");
    println!(
        "    ({count} msgs: {:.2} s wall, {:.2} s cpu = {:.2} µs cpu/msg; the appending thread {:.2} s = {:.3} µs/msg)",
        elapsed.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / count as f64,
        thread_cpu.as_secs_f64(),
        thread_cpu.as_secs_f64() * 1e6 / count as f64
    );
    (
        count as f64 / elapsed.as_secs_f64(),
        mb(record_bytes, elapsed),
    )
}

/// A consumer's reads: `load_next` from sequence 1 to the end of a reopened store of `count`
/// 128 B messages (page cache warm), then loads of every 97th sequence, 8 passes (scattered).
fn sequential_reads(dir: &Path, count: usize) {
    let _ = std::fs::remove_dir_all(dir);
    let mut store = FileStore::open(
        dir,
        StreamStoreConfig::default(),
        options(SyncPolicy::default()),
    )
    .expect("open store");
    let body = vec![0x42u8; 128];
    for index in 0..count {
        store
            .store_msg("bench.read.subject", b"", &body, None)
            .expect("store");
        if (index + 1) % BATCH == 0 {
            store.flush().expect("flush");
        }
    }
    store.close().expect("close");
    let mut store = FileStore::open(
        dir,
        StreamStoreConfig::default(),
        options(SyncPolicy::default()),
    )
    .expect("reopen store");
    let start = Instant::now();
    let thread_before = thread_cpu_time();
    let mut seq = 1;
    let mut bytes = 0usize;
    while let Some(message) = store.load_next("bench.>", seq).expect("load_next") {
        bytes += message.payload.len();
        seq = message.seq + 1;
    }
    let elapsed = start.elapsed();
    let thread_cpu = thread_cpu_time().saturating_sub(thread_before);
    assert_eq!(bytes, count * 128);
    println!(
        "sequential load_next of {count} msgs of 128 B: {:10.0} reads/s ({:.3} µs cpu/read)",
        count as f64 / elapsed.as_secs_f64(),
        thread_cpu.as_secs_f64() * 1e6 / count as f64
    );
    let start = Instant::now();
    let thread_before = thread_cpu_time();
    let mut reads = 0u64;
    for offset in 1..=8 {
        for seq in (offset..=count as u64).step_by(97) {
            store.load(seq).expect("load");
            reads += 1;
        }
    }
    let elapsed = start.elapsed();
    let thread_cpu = thread_cpu_time().saturating_sub(thread_before);
    println!(
        "scattered load of {reads} msgs (every 97th, 8 passes): {:10.0} reads/s ({:.3} µs cpu/read)",
        reads as f64 / elapsed.as_secs_f64(),
        thread_cpu.as_secs_f64() * 1e6 / reads as f64
    );
    store.close().expect("close");
    let _ = std::fs::remove_dir_all(dir);
}

/// CPU time (user + system) this process used so far, from /proc (10 ms resolution); the machine
/// may be shared, so CPU time is printed next to wall time.
fn cpu_time() -> Duration {
    proc_cpu_time("/proc/self/stat")
}

/// CPU time of the calling thread only (the sync pool's threads excluded).
fn thread_cpu_time() -> Duration {
    proc_cpu_time("/proc/thread-self/stat")
}

fn proc_cpu_time(path: &str) -> Duration {
    let ticks = std::fs::read_to_string(path)
        .ok()
        .and_then(|stat| {
            let after_name = stat.rsplit_once(')')?.1.to_string();
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let user: u64 = fields.get(11)?.parse().ok()?;
            let system: u64 = fields.get(12)?.parse().ok()?;
            Some(user + system)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Best of three opens: (wall, cpu, msgs, summary).
fn open_best(dir: &Path, clean: bool) -> (Duration, Duration, u64, String) {
    let mut best: Option<(Duration, Duration, u64, String)> = None;
    for _ in 0..3 {
        let cpu_before = cpu_time();
        let (wall, msgs, summary) = open_time(dir, clean);
        let cpu = cpu_time().saturating_sub(cpu_before);
        if best
            .as_ref()
            .is_none_or(|(best_wall, ..)| wall < *best_wall)
        {
            best = Some((wall, cpu, msgs, summary));
        }
    }
    best.unwrap_or_default()
}

/// Open once; `clean` closes the store again (so the next open is again after a clean close),
/// otherwise it is abandoned like a crash.
fn open_time(dir: &Path, clean: bool) -> (Duration, u64, String) {
    let start = Instant::now();
    let store = FileStore::open(
        dir,
        StreamStoreConfig::default(),
        options(SyncPolicy::default()),
    )
    .expect("open");
    let elapsed = start.elapsed();
    let report = store.recovery_report();
    let summary = format!(
        "{} blocks from index, {} scanned",
        report.blocks_from_index, report.blocks_scanned
    );
    let mut store = store;
    let msgs = store.state().msgs;
    if clean {
        store.close().expect("close");
    } else {
        store.abandon();
    }
    (elapsed, msgs, summary)
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn main() {
    // Profiling aid: only time opening an existing store directory.
    if let Ok(dir) = std::env::var("STORE_FIGURES_OPEN_ONLY") {
        for _ in 0..3 {
            let (elapsed, msgs, summary) = open_time(Path::new(&dir), false);
            println!(
                "open: {:.0} ms for {msgs} msgs ({summary})",
                elapsed.as_secs_f64() * 1e3
            );
        }
        return;
    }
    let base: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("store-figures-{}", std::process::id()))
        });
    std::fs::create_dir_all(&base).expect("create base dir");
    println!("directory: {}", base.display());

    if let Ok(count) = std::env::var("STORE_FIGURES_APPEND_ONLY") {
        // Profiling aid: the value is the message count (default 2M).
        let count = count.parse().unwrap_or(2_000_000);
        let (rate, speed) = append(&base.join("append"), count, 128, SyncPolicy::default());
        println!("append 128 B: {rate:.0} msg/s {speed:.1} MB/s");
        return;
    }
    if std::env::var_os("STORE_FIGURES_READS_ONLY").is_some() {
        sequential_reads(&base.join("reads"), 500_000);
        let _ = std::fs::remove_dir_all(&base);
        return;
    }
    // --- append throughput vs raw disk ---
    for (payload, count) in [(1024usize, 200_000usize), (128, 1_000_000)] {
        let record = payload + 20 + 40;
        // The physical limit for the same bytes: plain writes of one batch each, one fsync at the end.
        let raw_interval = raw_write(&base, (count * record) as u64, BATCH * record, 0);
        println!(
            "raw write of the same {} MB in {} B writes + one fsync:    {raw_interval:8.1} MB/s",
            count * record / 1_000_000,
            BATCH * record
        );
        let (rate, speed) = append(&base.join("append"), count, payload, SyncPolicy::default());
        println!(
            "append {payload:>4} B, interval sync, flush per {BATCH}:   {rate:10.0} msg/s {speed:8.1} MB/s = {:5.1}% of raw",
            speed / raw_interval * 100.0
        );
        if std::env::var_os("STORE_FIGURES_INTERVAL_ONLY").is_some() {
            continue;
        }
        let always_count = count / 10;
        let raw_always = raw_write(&base, (always_count * record) as u64, BATCH * record, 1);
        let (rate, speed) = append(
            &base.join("append"),
            always_count,
            payload,
            SyncPolicy::Always,
        );
        println!(
            "append {payload:>4} B, sync always, group commit {BATCH}: {rate:10.0} msg/s {speed:8.1} MB/s = {:5.1}% of raw write+fsync per {} B batch ({raw_always:.1} MB/s)",
            speed / raw_always * 100.0,
            BATCH * record
        );
    }

    if std::env::var_os("STORE_FIGURES_INTERVAL_ONLY").is_some() {
        let _ = std::fs::remove_dir_all(&base);
        return;
    }
    sequential_reads(&base.join("reads"), 500_000);

    // --- 1M messages, 1M distinct subjects: open times, lookups, memory ---
    let big = base.join("big");
    let _ = std::fs::remove_dir_all(&big);
    let count = 1_000_000u64;
    let rss_before = rss_bytes();
    let mut store = FileStore::open(
        &big,
        StreamStoreConfig::default(),
        options(SyncPolicy::default()),
    )
    .expect("open big");
    let start = Instant::now();
    let mut subject_bytes = 0usize;
    for index in 0..count {
        let subject = format!("kv.bucket.key{index:07}");
        subject_bytes += subject.len();
        store
            .store_msg(&subject, b"", b"0123456789abcdef", None)
            .expect("store");
        if index % 1000 == 999 {
            store.flush().expect("flush");
        }
    }
    store.flush().expect("flush");
    println!(
        "stored {count} msgs with {count} distinct subjects in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    let subject_index = store.subject_index_bytes();
    let average_subject = subject_bytes as f64 / count as f64;
    println!(
        "subject index: {:.1} bytes/subject incl. text (avg subject {average_subject:.1} B) = {:.1} + subject length; sequence index {:.1} bytes/msg; process RSS growth {:.1} MB",
        subject_index as f64 / count as f64,
        subject_index as f64 / count as f64 - average_subject,
        store.sequence_index_bytes() as f64 / count as f64,
        (rss_bytes().saturating_sub(rss_before)) as f64 / 1e6
    );
    let probes = 100_000u64;
    let start = Instant::now();
    for probe in 0..probes {
        let key = format!("kv.bucket.key{:07}", (probe * 7919) % count);
        let message = store.load_last(&key).expect("load_last");
        assert!(message.is_some());
    }
    println!(
        "load_last(literal subject) with 1M subjects: {:.2} µs/op",
        start.elapsed().as_secs_f64() * 1e6 / probes as f64
    );
    let start = Instant::now();
    let mut total = 0;
    for probe in 0..probes {
        let key = format!("kv.bucket.key{:07}", (probe * 7919) % count);
        total += store.num_pending(&key, 1, false);
    }
    assert_eq!(total, probes);
    println!(
        "num_pending(literal subject) with 1M subjects: {:.2} µs/op",
        start.elapsed().as_secs_f64() * 1e6 / probes as f64
    );
    let start = Instant::now();
    let pending = store.num_pending("kv.bucket.*", 500_000, false);
    println!(
        "num_pending(wildcard over 1M subjects, from mid-stream) = {pending}: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    // A consumer-style filter whose wildcard sits before the distinguishing token: matches one
    // subject of 1M.
    let narrow = "kv.*.key0500000";
    let start = Instant::now();
    store.num_pending(narrow, 1, false);
    println!(
        "first wildcard query (builds the subject tree over 1M subjects): {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    let pending = store.num_pending(narrow, 1, false);
    println!(
        "num_pending({narrow}) with 1M subjects = {pending}: {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    let last = store.load_last(narrow).expect("load_last").map(|m| m.seq);
    println!(
        "load_last({narrow}) with 1M subjects = {last:?}: {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    let states = store.subjects_state(narrow).len();
    println!(
        "subjects_state({narrow}) with 1M subjects = {states} subjects: {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    let last = store
        .load_last("kv.bucket.*")
        .expect("load_last")
        .map(|m| m.seq);
    println!(
        "load_last(kv.bucket.*) matching all 1M subjects = {last:?}: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    println!(
        "subject index with the subject tree built (first wildcard query): {:.1} bytes/subject = {:.1} + subject length",
        store.subject_index_bytes() as f64 / count as f64,
        store.subject_index_bytes() as f64 / count as f64 - average_subject,
    );
    let start = Instant::now();
    let pending = store.num_pending(">", 500_000, false);
    println!(
        "num_pending(>, from mid-stream) = {pending}: {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    store.close().expect("close");
    println!(
        "clean close (index snapshot): {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );

    let (elapsed, cpu, msgs, summary) = open_best(&big, true);
    println!(
        "open after clean close: {:.0} ms wall (best of 3), {:.0} ms cpu, for {msgs} msgs ({summary})",
        elapsed.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3
    );

    // Crash: append more without close, so the active block has no valid index.
    {
        let mut store = FileStore::open(
            &big,
            StreamStoreConfig::default(),
            options(SyncPolicy::default()),
        )
        .expect("reopen");
        for index in 0..50_000u64 {
            store
                .store_msg(
                    &format!("kv.bucket.more{index}"),
                    b"",
                    b"0123456789abcdef",
                    None,
                )
                .expect("store");
        }
        store.flush().expect("flush");
        store.abandon();
    }
    let (elapsed, cpu, msgs, summary) = open_best(&big, false);
    println!(
        "open after crash: {:.0} ms wall (best of 3), {:.0} ms cpu, for {msgs} msgs ({summary})",
        elapsed.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3
    );
    // Worst case: no index files at all (every block scanned and checksummed).
    for entry in std::fs::read_dir(&big).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|ext| ext == "idx") {
            let _ = std::fs::remove_file(path);
        }
    }
    let (elapsed, cpu, msgs, summary) = open_best(&big, false);
    println!(
        "open with every index lost (full scan): {:.0} ms wall (best of 3), {:.0} ms cpu, for {msgs} msgs ({summary})",
        elapsed.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3
    );
    if std::env::var_os("STORE_FIGURES_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
}

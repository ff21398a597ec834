//! Prints the memory a MemStore takes for many small messages (issue 8, js_pub_mem peak RSS).
//!
//! `cargo run --release -p nats-store --example mem_figures [-- COUNT PAYLOAD]`
//! (default 150000 messages of 128 bytes). Figures: resident set (VmRSS) and its peak (VmHWM)
//! before and after storing, from /proc/self/status (Linux only; zero elsewhere).

use nats_store::{MemStore, StreamStore, StreamStoreConfig};

/// A `/proc/self/status` field in KiB, zero when unavailable.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let count: usize = arguments
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(150_000);
    let payload_len: usize = arguments
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(128);
    let payload = vec![0x42u8; payload_len];
    let rss_before = status_kib("VmRSS:");
    let mut store = MemStore::new(StreamStoreConfig::default());
    for _ in 0..count {
        store
            .store_msg("bench.mem.subject", &[], &payload, None)
            .expect("store message");
    }
    let rss_after = status_kib("VmRSS:");
    let peak = status_kib("VmHWM:");
    println!(
        "{count} messages x {payload_len} B: rss before {rss_before} KiB, after {rss_after} KiB \
         (+{} KiB, {:.1} B/message), peak {peak} KiB",
        rss_after.saturating_sub(rss_before),
        rss_after.saturating_sub(rss_before) as f64 * 1024.0 / count as f64
    );
    drop(store);
}

//! Consumer store figures: what one flush costs with 10k messages pending when one of them is acked
//! between flushes (bytes handed to `write`, from /proc/self/io, and wall time), and what creating
//! a durable consumer's store costs, under both sync policies.
//!
//! `cargo run --release -p nats-store --example consumer_figures [pending] [flushes] [creations]`

use std::time::{Duration, Instant};

use nats_store::{
    ConsumerState, FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy,
};

fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|line| line.strip_prefix("wchar: "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

fn options(sync: SyncPolicy) -> FileStoreOptions {
    FileStoreOptions {
        sync,
        ..FileStoreOptions::default()
    }
}

fn policy_name(sync: SyncPolicy) -> &'static str {
    match sync {
        SyncPolicy::Always => "always",
        SyncPolicy::Interval(_) => "interval",
    }
}

/// How the caller hands its state to the store before each flush.
#[derive(Clone, Copy)]
enum Handover {
    /// `set_state(state.clone())`: the whole state (what the consumer task did before).
    WholeState,
    /// `update_state(&state, &[acked])`: only the sequences that changed.
    ChangedOnly,
}

fn measure_flushes(sync: SyncPolicy, pending: u64, flushes: u64, handover: Handover) {
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
    let mut stream = FileStore::open(dir.path(), StreamStoreConfig::default(), options(sync))
        .unwrap_or_else(|error| panic!("open: {error}"));
    let mut store = stream
        .consumer_store("figures")
        .unwrap_or_else(|error| panic!("consumer store: {error}"));
    store
        .set_config(b"{}")
        .unwrap_or_else(|error| panic!("{error}"));
    let mut state = ConsumerState::default();
    for seq in 1..=pending + flushes {
        state.apply_delivered(seq, seq, 1, 1_700_000_000_000_000_000 + seq as i64);
    }
    store
        .set_state(state.clone())
        .and_then(|_| store.flush())
        .unwrap_or_else(|error| panic!("{error}"));
    let bytes_before = written_bytes();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    // Ack from the top so `pending` stays above the requested count throughout.
    for index in 0..flushes {
        let seq = pending + flushes - index;
        state.apply_ack(seq, seq);
        let flush_started = Instant::now();
        match handover {
            Handover::WholeState => store.set_state(state.clone()),
            Handover::ChangedOnly => store.update_state(&state, &[seq]),
        }
        .and_then(|_| store.flush())
        .unwrap_or_else(|error| panic!("{error}"));
        slowest = slowest.max(flush_started.elapsed());
    }
    let elapsed = started.elapsed();
    let bytes = written_bytes() - bytes_before;
    let name = match handover {
        Handover::WholeState => "set_state(clone)",
        Handover::ChangedOnly => "update_state(&state, changed)",
    };
    println!(
        "flush sync={:<8} {name:<30} pending={pending} flushes={flushes}: {:.1} bytes/flush, {:.1} us/flush (slowest {:.1} us)",
        policy_name(sync),
        bytes as f64 / flushes as f64,
        elapsed.as_secs_f64() * 1e6 / flushes as f64,
        slowest.as_secs_f64() * 1e6,
    );
    let reopened = stream
        .consumer_store("figures")
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(reopened.state(), state, "reopened state differs");
}

fn measure_creation(sync: SyncPolicy, creations: u64) {
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
    let mut stream = FileStore::open(dir.path(), StreamStoreConfig::default(), options(sync))
        .unwrap_or_else(|error| panic!("open: {error}"));
    let config = br#"{"config":{"durable_name":"durable-0000","deliver_policy":"all","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant","max_waiting":512,"max_ack_pending":1000,"num_replicas":0},"created":"2026-01-01T00:00:00Z"}"#;
    let started = Instant::now();
    for index in 0..creations {
        let mut store = stream
            .consumer_store(&format!("durable-{index:05}"))
            .unwrap_or_else(|error| panic!("{error}"));
        store
            .set_config(config)
            .unwrap_or_else(|error| panic!("{error}"));
        // A `deliver_policy: new` consumer writes its starting point right away.
        store
            .set_state(ConsumerState {
                delivered: nats_store::SequencePair {
                    consumer_seq: 0,
                    stream_seq: 41,
                },
                ack_floor: nats_store::SequencePair {
                    consumer_seq: 0,
                    stream_seq: 41,
                },
                ..ConsumerState::default()
            })
            .and_then(|_| store.flush())
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let elapsed = started.elapsed();
    println!(
        "create sync={:<8} {creations} durable consumer stores (config + initial state): {:.1} us each",
        policy_name(sync),
        elapsed.as_secs_f64() * 1e6 / creations as f64
    );
}

fn main() {
    let arguments: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|argument| argument.parse().ok())
        .collect();
    let pending = arguments.first().copied().unwrap_or(10_000);
    let flushes = arguments.get(1).copied().unwrap_or(2_000);
    let creations = arguments.get(2).copied().unwrap_or(2_000);
    for sync in [
        SyncPolicy::Interval(Duration::from_secs(120)),
        SyncPolicy::Always,
    ] {
        let flushes = if sync == SyncPolicy::Always {
            flushes.min(300)
        } else {
            flushes
        };
        for handover in [Handover::WholeState, Handover::ChangedOnly] {
            measure_flushes(sync, pending, flushes, handover);
        }
        let creations = if sync == SyncPolicy::Always {
            creations.min(300)
        } else {
            creations
        };
        measure_creation(sync, creations);
    }
}

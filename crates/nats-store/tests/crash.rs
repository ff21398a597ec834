//! Crash tests: a child process (this test binary re-invoked) appends with `SyncPolicy::Always`,
//! printing each sequence once `flush` reported it durable (or, in the pipelined variant, once
//! the `flush_then` callback ran on a sync thread while the child went on appending); the parent
//! SIGKILLs it at a random point, reopens the store and checks every durable message, then lets
//! the next child continue.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};
use rand::Rng;

const CHILD_DIR_VAR: &str = "NATS_STORE_CRASH_CHILD_DIR";
/// Set (to anything) for a child that uses `flush_then` instead of `flush`.
const CHILD_PIPELINED_VAR: &str = "NATS_STORE_CRASH_PIPELINED";

fn options() -> FileStoreOptions {
    FileStoreOptions {
        sync: SyncPolicy::Always,
        block_size: 16 * 1024,
        write_buffer_limit: 64 * 1024,
        defer_creation_sync: false,
    }
}

fn subject_for(seq: u64) -> String {
    format!("crash.{}", seq % 7)
}

fn payload_for(seq: u64) -> Vec<u8> {
    (0..(seq % 300) as usize)
        .map(|i| (seq as usize).wrapping_mul(31).wrapping_add(i) as u8)
        .collect()
}

/// The child's body: append batches forever, reporting durable sequences.
#[test]
fn crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_DIR_VAR) else {
        return;
    };
    let mut store = FileStore::open(&dir, StreamStoreConfig::default(), options()).unwrap();
    let mut rng = rand::thread_rng();
    println!("started last={}", store.state().last_seq);
    loop {
        let batch = rng.gen_range(1..20);
        let mut last = 0;
        for _ in 0..batch {
            let seq = store.state().last_seq + 1;
            let (stored, _) = store
                .store_msg(&subject_for(seq), b"", &payload_for(seq), None)
                .unwrap();
            assert_eq!(stored, seq);
            last = stored;
        }
        // Occasionally remove an old message so delete logs are exercised too.
        if rng.gen_ratio(1, 5) && last > 10 {
            let victim = last - 10;
            if victim % 10 == 3 {
                store.remove(victim).unwrap();
            }
        }
        // And now and then drop the oldest messages (whole blocks go, one is floored). The
        // intent is printed first: a kill can land before or after it became durable.
        if rng.gen_ratio(1, 40) && last > 600 {
            let floor = last - 500;
            println!("compacting {floor}");
            store.compact(floor).unwrap();
        }
        if std::env::var(CHILD_PIPELINED_VAR).is_ok_and(|value| !value.is_empty()) {
            // Printed from the sync thread, after the fsync covering `last` finished.
            let flushed = store
                .flush_then(Box::new(move |durable| {
                    durable.unwrap();
                    println!("durable {last}");
                }))
                .unwrap();
            assert_eq!(flushed, last);
        } else {
            let durable = store.flush().unwrap();
            assert_eq!(durable, last);
            println!("durable {durable}");
        }
    }
}

fn verify(dir: &std::path::Path, durable: u64, compacted_below: u64) -> u64 {
    let mut store = FileStore::open(dir, StreamStoreConfig::default(), options()).unwrap();
    let state = store.state();
    assert!(
        state.last_seq >= durable,
        "lost durable messages: last {} < durable {durable}; {:?}",
        state.last_seq,
        store.recovery_report()
    );
    for seq in 1..=durable {
        match store.load(seq) {
            Ok(message) => {
                assert_eq!(message.subject, subject_for(seq));
                assert_eq!(&message.payload[..], &payload_for(seq)[..], "seq {seq}");
            }
            Err(error) => {
                // Only the child's own removals and compactions may be missing.
                assert!(
                    seq % 10 == 3 || seq < compacted_below,
                    "durable seq {seq} missing: {error}"
                );
            }
        }
    }
    // Everything above the durable point that survived must be intact too.
    for seq in durable + 1..=state.last_seq {
        if let Ok(message) = store.load(seq) {
            assert_eq!(&message.payload[..], &payload_for(seq)[..]);
        }
    }
    let next = state.last_seq + 1;
    let (appended, _) = store
        .store_msg(&subject_for(next), b"", &payload_for(next), None)
        .unwrap();
    assert_eq!(appended, next, "next append continues the sequence");
    store.close().unwrap();
    next
}

#[test]
fn sigkill_during_appends_loses_nothing_durable() {
    sigkill_rounds(false);
}

#[test]
fn sigkill_during_pipelined_appends_loses_nothing_acknowledged() {
    sigkill_rounds(true);
}

fn sigkill_rounds(pipelined: bool) {
    let dir = tempfile::tempdir().unwrap();
    let stream_dir = dir.path().join("stream");
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::thread_rng();
    let mut durable = 0u64;
    let mut compacted_below = 0u64;
    for round in 0..6 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_VAR, &stream_dir)
            .env(CHILD_PIPELINED_VAR, if pipelined { "1" } else { "" })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let kill_after = rng.gen_range(1..200);
        let mut seen = 0;
        while let Some(Ok(line)) = lines.next() {
            if let Some(floor) = line.strip_prefix("compacting ") {
                compacted_below = compacted_below.max(floor.trim().parse().unwrap());
            }
            if let Some(seq) = line.strip_prefix("durable ") {
                durable = durable.max(seq.trim().parse().unwrap());
                seen += 1;
                if seen >= kill_after {
                    break;
                }
            }
        }
        // A little extra random run time so the kill lands mid-write sometimes.
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..3000)));
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines printed between our last read and the kill are durable too.
        for line in lines.map_while(Result::ok) {
            if let Some(floor) = line.strip_prefix("compacting ") {
                compacted_below = compacted_below.max(floor.trim().parse().unwrap());
            }
            if let Some(seq) = line.strip_prefix("durable ") {
                durable = durable.max(seq.trim().parse().unwrap());
            }
        }
        assert!(durable > 0, "round {round}: child reported nothing");
        durable = verify(&stream_dir, durable, compacted_below);
        eprintln!("round {round}: durable {durable}, compacted below {compacted_below}");
    }
}

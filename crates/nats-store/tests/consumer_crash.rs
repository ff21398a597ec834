//! Consumer store crash test: a child process (this test binary re-invoked) delivers and acks with
//! sync always, printing each ack and delivery before it flushes ("intent") and `durable` once the
//! flush returned; the parent SIGKILLs it at a random moment, reopens the store and checks:
//! - every ack confirmed durable is there (not pending, at or below delivered: not sent again);
//! - nothing was lost: every sequence at or below delivered that is not pending had an ack
//!   intent (so no unacked message is silently treated as acked);
//! - delivered is at least what was confirmed.
//!
//! Then the next child continues from the recovered state. Enough flushes happen per child for the
//! log to be compacted, so kills also land around compactions.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nats_store::{ConsumerStore, FileConsumerStore};
use rand::Rng;

const CHILD_DIR_VAR: &str = "NATS_STORE_CONSUMER_CRASH_DIR";
const ROUNDS: usize = 6;

#[test]
fn consumer_crash_child_entry() {
    let Ok(dir) = std::env::var(CHILD_DIR_VAR) else {
        return;
    };
    let mut store = FileConsumerStore::open(std::path::Path::new(&dir), "c", true).unwrap();
    let mut state = store.state();
    let mut rng = rand::thread_rng();
    println!("started");
    loop {
        let mut changed = Vec::new();
        for _ in 0..rng.gen_range(1..60) {
            let seq = state.delivered.stream_seq + 1;
            let consumer_seq = state.delivered.consumer_seq + 1;
            state.apply_delivered(consumer_seq, seq, 1, seq as i64 * 1000);
            changed.push(seq);
        }
        println!("deliver {}", state.delivered.stream_seq);
        let pending: Vec<(u64, u64)> = state
            .pending
            .iter()
            .map(|(seq, pending)| (*seq, pending.consumer_seq))
            .collect();
        for (seq, consumer_seq) in pending {
            // Leave some messages unacked for a long time, redeliver a few.
            if rng.gen_ratio(1, 2) {
                println!("ack {seq}");
                state.apply_ack(consumer_seq, seq);
                changed.push(seq);
            } else if rng.gen_ratio(1, 20) {
                let count = state.redelivered.get(&seq).copied().unwrap_or(0) + 2;
                let consumer_seq = state.delivered.consumer_seq + 1;
                state.apply_delivered(consumer_seq, seq, count, seq as i64 * 1000 + 1);
                changed.push(seq);
            }
        }
        if rng.gen_ratio(1, 3) {
            store.set_state(state.clone()).unwrap();
        } else {
            store.update_state(&state, &changed).unwrap();
        }
        store.flush().unwrap();
        println!("durable");
    }
}

#[derive(Default)]
struct Expectations {
    /// Acks whose flush returned.
    confirmed_acks: BTreeSet<u64>,
    /// Every ack ever attempted (confirmed or not).
    ack_intents: BTreeSet<u64>,
    confirmed_delivered: u64,
    /// Acks and delivered mark printed since the last `durable`.
    unconfirmed_acks: Vec<u64>,
    unconfirmed_delivered: u64,
}

impl Expectations {
    fn record(&mut self, line: &str) {
        if let Some(seq) = line.strip_prefix("ack ") {
            let seq: u64 = seq.parse().unwrap();
            self.ack_intents.insert(seq);
            self.unconfirmed_acks.push(seq);
        } else if let Some(seq) = line.strip_prefix("deliver ") {
            self.unconfirmed_delivered = seq.parse().unwrap();
        } else if line == "durable" {
            self.confirmed_acks.extend(self.unconfirmed_acks.drain(..));
            self.confirmed_delivered = self.unconfirmed_delivered;
        }
    }
}

fn verify(dir: &std::path::Path, expected: &Expectations) -> u64 {
    let store = FileConsumerStore::open(dir, "c", true).unwrap();
    let state = store.state();
    let delivered = state.delivered.stream_seq;
    assert!(
        delivered >= expected.confirmed_delivered,
        "delivered {delivered} < confirmed {}; {:?}",
        expected.confirmed_delivered,
        store.recovery_report()
    );
    for seq in &expected.confirmed_acks {
        assert!(
            !state.pending.contains_key(seq) && *seq <= delivered,
            "confirmed ack of {seq} lost; {:?}",
            store.recovery_report()
        );
    }
    for seq in 1..=delivered {
        if !state.pending.contains_key(&seq) {
            assert!(
                expected.ack_intents.contains(&seq),
                "{seq} is neither pending nor was it ever acked; {:?}",
                store.recovery_report()
            );
        }
    }
    assert!(state.ack_floor.stream_seq <= delivered);
    delivered
}

#[test]
fn sigkilled_while_acking_keeps_every_confirmed_ack() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Expectations::default();
    let mut rng = rand::thread_rng();
    let exe = std::env::current_exe().unwrap();
    let mut compactions_seen = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "consumer_crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_VAR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let kill_after = Duration::from_millis(rng.gen_range(150..700));
        let (lines, received) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let started = Instant::now();
        let mut started_child = false;
        loop {
            // The child prints without pause: the kill time is checked, not waited for.
            if started_child && started.elapsed() >= kill_after {
                break;
            }
            let deadline = if started_child {
                kill_after.saturating_sub(started.elapsed())
            } else {
                Duration::from_secs(30)
            };
            match received.recv_timeout(deadline) {
                Ok(line) => {
                    // libtest prints "test <name> ... " before the test runs, on the same line.
                    started_child |= line.ends_with("started");
                    expected.record(&line);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    assert!(started_child, "child never started");
                    break;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("child exited on its own: {:?}", child.wait());
                }
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Lines written before the kill may still be in the pipe: read them (bounded: the
        // writer is dead, so the pipe ends).
        while let Ok(line) = received.recv_timeout(Duration::from_secs(10)) {
            expected.record(&line);
        }
        reader.join().unwrap();
        // What the killed child printed but never confirmed stays an intent only.
        expected.unconfirmed_acks.clear();
        let delivered = verify(dir.path(), &expected);
        if dir.path().join("c/state.bin").exists() {
            compactions_seen += 1;
        }
        eprintln!(
            "round {round}: delivered {delivered}, {} confirmed acks",
            expected.confirmed_acks.len()
        );
    }
    assert!(
        expected.confirmed_acks.len() > 100,
        "too little happened to test anything"
    );
    assert!(compactions_seen > 0, "no kill landed after a compaction");
}

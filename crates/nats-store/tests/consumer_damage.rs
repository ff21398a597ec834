//! Consumer store damage tests: the log truncated at every offset or with a byte flipped at every
//! offset, the snapshot damaged, files full of garbage. Open must keep every intact frame before
//! the damage, report what it cut, never panic, and never treat an unacked message as acked.

use std::fs;
use std::path::Path;

use nats_store::{ConsumerState, ConsumerStore, FileConsumerStore};
use rand::{Rng, SeedableRng};

/// A consumer store whose log holds `flushes` frames over a snapshot (when `compact_first`).
/// Returns the state after each frame (index 0: before the first frame) and each frame's end.
fn build(dir: &Path, flushes: u64, compact_first: bool) -> (Vec<ConsumerState>, Vec<u64>) {
    let mut store = FileConsumerStore::open(dir, "c", false).unwrap();
    store.set_config(b"{}").unwrap();
    let mut state = ConsumerState::default();
    let log = dir.join("c/state.log");
    if compact_first {
        for seq in 1..=600 {
            state.apply_delivered(seq, seq, 1, seq as i64);
        }
        for seq in (1..=600).step_by(2) {
            state.apply_ack(seq, seq);
        }
        store.set_state(state.clone()).unwrap();
        store.write_snapshot().unwrap();
        assert!(dir.join("c/state.bin").exists(), "no snapshot written");
    }
    let mut states = vec![state.clone()];
    let mut ends = Vec::new();
    let mut next = state.delivered.stream_seq + 1;
    for round in 0..flushes {
        let mut changed = Vec::new();
        for _ in 0..3 {
            state.apply_delivered(state.delivered.consumer_seq + 1, next, 1, next as i64 * 7);
            changed.push(next);
            next += 1;
        }
        let oldest: Vec<(u64, u64)> = state
            .pending
            .iter()
            .take(2)
            .map(|(seq, pending)| (*seq, pending.consumer_seq))
            .collect();
        for (index, (seq, consumer_seq)) in oldest.into_iter().enumerate() {
            if index == 0 || round % 3 == 0 {
                state.apply_ack(consumer_seq, seq);
            } else {
                state.apply_delivered(state.delivered.consumer_seq + 1, seq, 2, 1);
            }
            changed.push(seq);
        }
        store.update_state(&state, &changed).unwrap();
        store.flush().unwrap();
        states.push(state.clone());
        ends.push(fs::metadata(&log).unwrap().len());
    }
    (states, ends)
}

/// The state open must recover when the log is intact only below `offset`.
fn expected_below<'a>(states: &'a [ConsumerState], ends: &[u64], offset: u64) -> &'a ConsumerState {
    let intact_frames = ends.iter().filter(|end| **end <= offset).count();
    &states[intact_frames]
}

fn reopen_twice(dir: &Path) -> (FileConsumerStore, FileConsumerStore) {
    let first = FileConsumerStore::open(dir, "c", false).unwrap();
    let first_state = first.state();
    let second = FileConsumerStore::open(dir, "c", false).unwrap();
    assert_eq!(second.state(), first_state, "a second open differs");
    (first, second)
}

#[test]
fn a_log_truncated_anywhere_keeps_every_whole_frame() {
    let dir = tempfile::tempdir().unwrap();
    let (states, ends) = build(dir.path(), 15, true);
    let log = dir.path().join("c/state.log");
    let original = fs::read(&log).unwrap();
    for cut in 0..=original.len() as u64 {
        fs::write(&log, &original[..cut as usize]).unwrap();
        let (first, second) = reopen_twice(dir.path());
        assert_eq!(
            &first.state(),
            expected_below(&states, &ends, cut),
            "cut at {cut}"
        );
        let on_boundary = cut <= 16 || ends.contains(&cut);
        assert_eq!(
            first.recovery_report().truncated_bytes > 0,
            !on_boundary,
            "cut at {cut}: {:?}",
            first.recovery_report()
        );
        assert!(
            second.recovery_problems().is_empty(),
            "the cut was not made"
        );
    }
}

#[test]
fn a_flipped_byte_anywhere_in_the_log_keeps_the_frames_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (states, ends) = build(dir.path(), 15, true);
    let log = dir.path().join("c/state.log");
    let original = fs::read(&log).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for offset in 0..original.len() {
        let mut damaged = original.clone();
        damaged[offset] ^= 1 << rng.gen_range(0..8);
        fs::write(&log, &damaged).unwrap();
        let (first, _) = reopen_twice(dir.path());
        let expected = if offset < 16 {
            &states[0]
        } else {
            expected_below(&states, &ends, offset as u64)
        };
        assert_eq!(&first.state(), expected, "flip at {offset}");
        assert!(
            !first.recovery_problems().is_empty(),
            "flip at {offset} not reported"
        );
    }
    // Appending resumes after the last intact frame.
    fs::write(&log, &original).unwrap();
    let mut damaged = original.clone();
    let middle = ends[ends.len() / 2] as usize + 3;
    damaged[middle] ^= 0x40;
    fs::write(&log, &damaged).unwrap();
    let mut store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    let mut state = store.state();
    let seq = state.delivered.stream_seq + 1;
    state.apply_delivered(state.delivered.consumer_seq + 1, seq, 1, 1);
    store.update_state(&state, &[seq]).unwrap();
    store.flush().unwrap();
    drop(store);
    let store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    assert_eq!(store.state(), state);
    assert!(store.recovery_problems().is_empty());
}

#[test]
fn a_damaged_snapshot_redelivers_instead_of_acking() {
    let dir = tempfile::tempdir().unwrap();
    let (states, _) = build(dir.path(), 10, true);
    let truth = states.last().unwrap().clone();
    let snapshot = dir.path().join("c/state.bin");
    let original = fs::read(&snapshot).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for _ in 0..50 {
        let mut damaged = original.clone();
        let offset = rng.gen_range(0..damaged.len());
        damaged[offset] ^= 1 << rng.gen_range(0..8);
        fs::write(&snapshot, &damaged).unwrap();
        let store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
        let report = store.recovery_report();
        assert!(report.snapshot_damaged && !report.problems.is_empty());
        let state = store.state();
        // Nothing above the floor counts as delivered, and the floor never passes an unacked
        // message.
        assert_eq!(state.delivered, state.ack_floor);
        assert!(state.pending.is_empty());
        assert!(state.ack_floor.stream_seq <= truth.ack_floor.stream_seq);
        for seq in truth.pending.keys() {
            assert!(
                *seq > state.ack_floor.stream_seq,
                "unacked {seq} counted acked"
            );
        }
        drop(store);
        fs::write(&snapshot, &original).unwrap();
    }
    // The next flush after a damaged open writes a sound snapshot.
    let mut damaged = original.clone();
    damaged[20] ^= 0xff;
    fs::write(&snapshot, &damaged).unwrap();
    let mut store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    let recovered = store.state();
    store.flush().unwrap();
    drop(store);
    let store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
    assert!(store.recovery_problems().is_empty());
    assert_eq!(store.state(), recovered);
}

#[test]
fn garbage_files_never_panic() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("c")).unwrap();
    for round in 0..200 {
        let snapshot: Vec<u8> = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect();
        let mut log: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
        if round % 2 == 0 && log.len() >= 16 {
            // A valid header so the frames behind it are parsed.
            let valid = fs::read(dir.path().join("valid.log")).unwrap_or_default();
            if valid.len() >= 16 {
                log[..16].copy_from_slice(&valid[..16]);
            }
        }
        fs::write(dir.path().join("c/state.bin"), &snapshot).unwrap();
        fs::write(dir.path().join("c/state.log"), &log).unwrap();
        if round == 0 {
            // Keep a real header (generation 0) for later rounds.
            let other = tempfile::tempdir().unwrap();
            let mut store = FileConsumerStore::open(other.path(), "x", false).unwrap();
            store.update_delivered(1, 1, 1, 1).unwrap();
            store.flush().unwrap();
            fs::copy(
                other.path().join("x/state.log"),
                dir.path().join("valid.log"),
            )
            .unwrap();
        }
        // Whatever open made of it, the store works from there and persists it.
        let mut store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
        let mut state = store.state();
        let seq = state.delivered.stream_seq.saturating_add(1);
        state.apply_delivered(state.delivered.consumer_seq.saturating_add(1), seq, 1, 1);
        store.update_state(&state, &[seq]).unwrap();
        store.flush().unwrap();
        drop(store);
        let store = FileConsumerStore::open(dir.path(), "c", false).unwrap();
        assert!(store.recovery_problems().is_empty(), "round {round}");
        assert_eq!(store.state(), state, "round {round}");
    }
}

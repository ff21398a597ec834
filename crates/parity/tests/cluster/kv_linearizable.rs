//! KV linearizability under faults (issue 15): three R3 KV buckets of one key each on a proxied
//! 3-node cluster, one client per node (roaming: it fails over to the others) doing random
//! `get` / `put` / `update(expected revision)` on random buckets, one operation at a time, each
//! recorded with its invocation and its completion, while the fault schedule runs (`kill -9` of
//! a bucket's stream leader, SIGSTOP of one past an election timeout, one cut from both others
//! by the link proxies; each healed, and writes progressing again, before the next). The
//! history of each key is then checked with stateright's `LinearizabilityTester` against a
//! sequential spec of one key: a value and a revision, `put` and a matching `update` store the
//! value at the next revision and return it, a mismatched `update` fails (wrong last sequence),
//! `get` returns the value and its revision.
//!
//! Why one key per bucket: a key's revision is its stream sequence, shared by all the keys of a
//! bucket; with one key it grows by exactly one per applied write, so the spec can predict every
//! revision and a `get` or a write returning a revision is checked exactly.
//!
//! What counts as what:
//! - a write acknowledged, or refused with `wrong last sequence`, has completed;
//! - a write with any other outcome (timed out, connection lost, no responders, another error)
//!   is **indeterminate**: it may or may not have happened. Its client carries on as a new
//!   logical process (the tester allows one operation in flight per process), and the tester
//!   may linearize it at any point after its invocation, or not at all;
//! - a `get` that failed is left out (a read that returned nothing changed nothing).
//!
//! Bounding the check: the tester is a depth-first search over interleavings, and an
//! indeterminate write that never happened can be tried at every later point, so a few dozen of
//! them make it exponential. The buckets keep every write (history 10,000, more than the run
//! makes), and after the schedule the whole stream of each bucket is read from its leader: an
//! indeterminate write whose unique value is not in it did not happen and is left out; one that
//! is stays in flight for the tester. The same read checks two things on its own: every
//! acknowledged write is at its acknowledged revision (**lost** otherwise), and every stored
//! value was written by a client (**unexpected** otherwise). The tester also takes time and
//! memory quadratic in a history's length (a run of minutes took gigabytes whole), so each key's
//! history is cut into segments of a few hundred operations at points where the cut loses
//! nothing (see [`check_key`]), each checked on its own.
//!
//! Reads go to the stream leader (`allow_direct: false`, so `get` is `STREAM.MSG.GET` with
//! `last_by_subj`). With direct gets (the KV default) any replica answers, and a follower's
//! answer can be stale: that is not linearizable by design (nats-server's documentation says
//! so), and is not what this test checks.
//!
//! Not checked: deletes, purges, watchers, history reads, keys sharing a bucket, direct gets,
//! power loss. A write refused with another error than 10071 (nats-server's 10164 `wrong last
//! sequence` without a number, no responders while a stream has no leader) is counted
//! indeterminate, not refused: weaker, never wrong.
//!
//! Figures (debug build of ours, 2-core machine shared with other runs, 3 Dec 2026): short
//! schedule, ours 1,100-1,500 operations, 7-91 indeterminate writes, checked in 20-30 ms;
//! nats-server 2.15.1 280-480 operations. Long schedule (4 rounds, 8 s holds, 4 clients):
//! ours 11,903 operations, 2,153 indeterminate writes (8 of them stored), 12 faults in 118 s,
//! checked in 0.3 s (477 segments), every key linearizable; nats-server 15,068 operations,
//! 1,398 indeterminate, 12 faults in 148 s, two of three keys not linearizable (stale reads, see
//! [`assert_outcome`]), nothing lost.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{Store, UpdateErrorKind};
use async_nats::Client;
use serde_json::json;
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use crate::fault_schedule::{
    create, index_named, info_until, leader_name, node_names, proxied_jetstream_cluster,
    roaming_client, settled, Fault, RECOVERY,
};
use crate::jetstream_faults::message_at;
use crate::jetstream_replicated::lock;

const BUCKETS: [&str; 3] = ["LIN0", "LIN1", "LIN2"];
const KEY: &str = "k";
/// One operation waits this long for its answer (a PubAck, a MSG.GET reply).
const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// A client's pause between two operations: bounds the history (the check is quadratic in
/// its length even when nothing is indeterminate).
const PACE: Duration = Duration::from_millis(15);

/// One key of a KV bucket, as the spec sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct KvKey {
    value: Option<u64>,
    revision: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Get,
    Put(u64),
    /// Write the value if the key's revision is the expected one.
    Update(u64, u64),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ret {
    /// The value and its revision (`None`: no value yet).
    Got(Option<(u64, u64)>),
    /// The revision the write was stored at.
    Written(u64),
    WrongRevision,
}

impl SequentialSpec for KvKey {
    type Op = Op;
    type Ret = Ret;

    fn invoke(&mut self, op: &Op) -> Ret {
        match *op {
            Op::Get => Ret::Got(self.value.map(|value| (value, self.revision))),
            Op::Put(value) => {
                self.revision += 1;
                self.value = Some(value);
                Ret::Written(self.revision)
            }
            Op::Update(value, expected) if expected == self.revision => {
                self.revision += 1;
                self.value = Some(value);
                Ret::Written(self.revision)
            }
            Op::Update(..) => Ret::WrongRevision,
        }
    }
}

/// One operation as a client saw it. `invoked` and `completed` are tickets from one counter
/// taken before the request went out and after its answer came: an operation completed before
/// another was invoked has the lower `completed` than that one's `invoked`.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    /// The logical process: (client, generation). A client starts a new generation after an
    /// indeterminate write.
    process: (usize, usize),
    bucket: usize,
    op: Op,
    invoked: u64,
    /// `None`: indeterminate.
    outcome: Option<(Ret, u64)>,
}

impl Recorded {
    fn written(&self) -> Option<u64> {
        match self.op {
            Op::Put(value) | Op::Update(value, _) => Some(value),
            Op::Get => None,
        }
    }
}

/// What the checker found in one key's history.
#[derive(Debug, Default)]
pub(crate) struct KeyFindings {
    operations: usize,
    indeterminate: usize,
    /// Indeterminate writes found in the stream (kept in flight for the tester).
    applied_indeterminate: usize,
    /// Segments checked (see [`check_key`]).
    segments: usize,
    linearizable: bool,
    lost: Vec<String>,
    unexpected: Vec<String>,
    /// The history as fed to the tester, when it was not linearizable.
    history: Vec<String>,
}

/// A segment is cut at the first clean point after this many operations. Small: the tester's
/// search has no memory of what it tried, so proving a segment not linearizable takes time
/// exponential in its length (a 300-operation segment of nats-server's did not finish in
/// minutes), and a small failing segment is the history to report.
const SEGMENT: usize = 20;
/// The whole check must finish within this.
const CHECK_BOUND: Duration = Duration::from_secs(120);

/// Checks one key's history. `stored`: the bucket's stream (revision -> value), read after the
/// run; `None` checks without it (every indeterminate write stays in flight, the history is one
/// segment: only for small histories).
///
/// With the stream, the history is cut into segments, each checked on its own (stateright's
/// tester takes time and memory quadratic in a history's length, and more with processes).
/// A cut at ticket `t` is taken only where it loses nothing: no operation kept for the tester
/// is in flight across it, the `R` writes invoked before it hold revisions `1..=R` (their
/// acknowledged ones, or for an indeterminate write the one the stream holds it at) and every
/// write invoked after it a higher one. The segment before the cut must then end in the state
/// (value at revision `R`, `R`): a read of exactly that is appended to it, after everything
/// in it, and the next segment starts from that state. A linearization of each segment then
/// concatenates into one of the whole history, and one of the whole history splits into one
/// of each segment, so the verdict is the same as checking it whole.
pub(crate) fn check_key(ops: &[Recorded], stored: Option<&BTreeMap<u64, u64>>) -> KeyFindings {
    let mut findings = KeyFindings {
        operations: ops.len(),
        indeterminate: ops.iter().filter(|op| op.outcome.is_none()).count(),
        linearizable: true,
        ..KeyFindings::default()
    };
    // value -> revision, from the stream.
    let revision_of: HashMap<u64, u64> = stored.map_or_else(HashMap::new, |stored| {
        stored
            .iter()
            .map(|(revision, value)| (*value, *revision))
            .collect()
    });
    if let Some(stored) = stored {
        let written: HashSet<u64> = ops.iter().filter_map(Recorded::written).collect();
        for (revision, value) in stored {
            if !written.contains(value) {
                findings
                    .unexpected
                    .push(format!("value {value} at revision {revision}"));
            }
        }
        for op in ops {
            if let (Some(value), Some((Ret::Written(revision), _))) = (op.written(), &op.outcome) {
                if stored.get(revision) != Some(&value) {
                    findings.lost.push(format!(
                        "{op:?}: acknowledged at {revision}, the stream holds {:?} there",
                        stored.get(revision)
                    ));
                }
            }
        }
    }
    // The operations kept, each with the revision it wrote at (if it did): (op, revision).
    let mut kept: Vec<(&Recorded, Option<u64>)> = Vec::new();
    for op in ops {
        match (&op.outcome, op.written()) {
            (Some((Ret::Written(revision), _)), _) => kept.push((op, Some(*revision))),
            (Some(_), _) => kept.push((op, None)),
            (None, Some(value)) => match revision_of.get(&value) {
                Some(revision) => {
                    findings.applied_indeterminate += 1;
                    kept.push((op, Some(*revision)));
                }
                // Not in the stream: it did not happen.
                None if stored.is_some() => {}
                None => kept.push((op, None)),
            },
            (None, None) => {}
        }
    }
    // Invocations and completions in ticket order: (ticket, index in kept, completion). An
    // indeterminate write can take effect at any time after its invocation: its "completion"
    // here (never fed to the tester) is the first completion of an operation that saw its
    // revision or a later one, when it must have taken effect; no cut falls before that.
    let mut events: Vec<(u64, usize, bool)> = Vec::new();
    for (index, (op, revision)) in kept.iter().enumerate() {
        events.push((op.invoked, index, false));
        match (&op.outcome, revision) {
            (Some((_, completed)), _) => events.push((*completed, index, true)),
            (None, Some(revision)) => {
                let settled = kept
                    .iter()
                    .filter_map(|(other, _)| match &other.outcome {
                        Some((Ret::Written(seen), completed)) if seen > revision => {
                            Some(*completed)
                        }
                        Some((Ret::Got(Some((_, seen))), completed)) if seen >= revision => {
                            Some(*completed)
                        }
                        _ => None,
                    })
                    .min()
                    .unwrap_or(u64::MAX);
                events.push((settled, index, true));
            }
            (None, None) => events.push((u64::MAX, index, true)),
        }
    }
    events.sort_unstable();
    // The lowest revision written by an operation invoked at or after each event.
    let mut min_after = vec![u64::MAX; events.len() + 1];
    for at in (0..events.len()).rev() {
        let (_, index, completion) = events[at];
        min_after[at] = match (completion, kept[index].1) {
            (false, Some(revision)) => min_after[at + 1].min(revision),
            _ => min_after[at + 1],
        };
    }
    let mut segment_start = 0;
    let mut state = KvKey::default();
    let mut in_flight = 0usize;
    let mut writes = 0u64;
    let mut max_revision = 0u64;
    let mut operations = 0usize;
    for at in 0..events.len() {
        let (_, index, completion) = events[at];
        let revision = kept[index].1;
        if completion {
            in_flight -= 1;
        } else {
            operations += 1;
            in_flight += 1;
            if let Some(revision) = revision {
                writes += 1;
                max_revision = max_revision.max(revision);
            }
        }
        let last = at + 1 == events.len();
        let end_state = if last {
            None
        } else if operations >= SEGMENT
            && in_flight == 0
            && max_revision == writes
            && min_after[at + 1] > writes
        {
            stored.and_then(|stored| {
                let value = if writes == 0 {
                    None
                } else {
                    Some(*stored.get(&writes)?)
                };
                Some(KvKey {
                    value,
                    revision: writes,
                })
            })
        } else {
            continue;
        };
        if let Err(history) = check_segment(
            &kept,
            &events[segment_start..=at],
            &state,
            end_state.as_ref(),
        ) {
            findings.linearizable = false;
            findings.history = history;
            return findings;
        }
        if let Some(end_state) = end_state {
            state = end_state;
        }
        segment_start = at + 1;
        operations = 0;
        findings.segments += 1;
    }
    findings
}

/// Runs the tester on one segment from `start`; `end`: the state it must end in (checked by
/// a read after everything in it). `Err`: the segment as fed, when it is not linearizable.
fn check_segment(
    kept: &[(&Recorded, Option<u64>)],
    events: &[(u64, usize, bool)],
    start: &KvKey,
    end: Option<&KvKey>,
) -> Result<(), Vec<String>> {
    let mut tester = LinearizabilityTester::new(start.clone());
    let mut fed = vec![format!("from {start:?}")];
    for &(_, index, completion) in events {
        let op = kept[index].0;
        let result = match (&op.outcome, completion) {
            (Some((ret, _)), true) => {
                fed.push(format!("{:?} returns {ret:?}", op.process));
                tester.on_return(op.process, ret.clone()).map(|_| ())
            }
            // An indeterminate write stays in flight.
            (None, true) => continue,
            _ => {
                fed.push(format!("{:?} invokes {:?}", op.process, op.op));
                tester.on_invoke(op.process, op.op.clone()).map(|_| ())
            }
        };
        if let Err(error) = result {
            panic!("malformed history: {error}");
        }
    }
    if let Some(end) = end {
        let cut = (usize::MAX, 0);
        let ret = Ret::Got(end.value.map(|value| (value, end.revision)));
        fed.push(format!("cut: {cut:?} reads {ret:?}"));
        let appended = tester
            .on_invoke(cut, Op::Get)
            .and_then(|tester| tester.on_return(cut, ret));
        if let Err(error) = appended {
            panic!("malformed history: {error}");
        }
    }
    if tester.serialized_history().is_some() {
        Ok(())
    } else {
        Err(fed)
    }
}

/// Checks every key in a thread with room for the tester's recursion (one frame per
/// operation of a segment).
fn check_all(ops: Vec<Recorded>, stored: Vec<BTreeMap<u64, u64>>) -> Vec<KeyFindings> {
    let (done, findings) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || {
            let keys: Vec<KeyFindings> = (0..BUCKETS.len())
                .map(|bucket| {
                    let of_key: Vec<Recorded> = ops
                        .iter()
                        .filter(|op| op.bucket == bucket)
                        .cloned()
                        .collect();
                    check_key(&of_key, stored.get(bucket))
                })
                .collect();
            let _ = done.send(keys);
        })
        .expect("checker thread");
    match findings.recv_timeout(CHECK_BOUND) {
        Ok(keys) => keys,
        // nats-server's long schedule (3 Dec 2026, one run of two): a segment with its stale
        // reads (see `assert_outcome`) long enough that proving it not linearizable outlasted
        // the bound. Counted as not linearizable (the documented finding); lost and unexpected
        // writes then go unchecked in that run, said in the output.
        Err(error) if test_harness::is_reference() => {
            println!("nats-server: the check did not finish in {CHECK_BOUND:?} ({error}): lost and unexpected writes unchecked");
            (0..BUCKETS.len())
                .map(|_| KeyFindings {
                    history: vec![format!("the check did not finish in {CHECK_BOUND:?}")],
                    ..KeyFindings::default()
                })
                .collect()
        }
        Err(error) => panic!("the check did not finish in {CHECK_BOUND:?}: {error}"),
    }
}

/// The shared state of a run.
struct Run {
    tickets: AtomicU64,
    history: Mutex<Vec<Recorded>>,
    /// Writes acknowledged so far (progress after a fault).
    acked: AtomicUsize,
    stop: AtomicBool,
    /// Why writes were left indeterminate: error -> count.
    errors: Mutex<BTreeMap<String, usize>>,
}

impl Run {
    fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::SeqCst)
    }
}

/// A tiny deterministic generator (xorshift): the schedule of operations needs no quality.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One client's loop: random operations on random buckets, one at a time.
async fn client_loop(id: usize, client: Client, run: Arc<Run>) {
    let jetstream = async_nats::jetstream::ContextBuilder::new()
        .timeout(OP_TIMEOUT)
        .build(client);
    let mut stores: Vec<Store> = Vec::new();
    for bucket in BUCKETS {
        let deadline = Instant::now() + RECOVERY;
        loop {
            match jetstream.get_key_value(bucket).await {
                Ok(store) => {
                    stores.push(store);
                    break;
                }
                Err(error) => assert!(Instant::now() < deadline, "bucket {bucket}: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1));
    let mut generation = 0;
    let mut known_revision = [0u64; BUCKETS.len()];
    let mut n = 0u64;
    while !run.stop.load(Ordering::Relaxed) {
        let bucket = rng.below(BUCKETS.len() as u64) as usize;
        let store = &stores[bucket];
        let value = (id as u64 + 1) * 1_000_000 + n;
        let op = match rng.below(3) {
            0 => Op::Get,
            1 => Op::Put(value),
            // Mostly the revision last seen, sometimes one off it.
            _ => Op::Update(
                value,
                match rng.below(4) {
                    0 => known_revision[bucket] + 1,
                    _ => known_revision[bucket],
                },
            ),
        };
        if op != Op::Get {
            n += 1;
        }
        let invoked = run.ticket();
        let outcome: Option<Ret> = match op {
            Op::Get => match store.entry(KEY).await {
                Ok(entry) => {
                    let got = entry.and_then(|entry| {
                        let value = std::str::from_utf8(&entry.value).ok()?.parse().ok()?;
                        Some((value, entry.revision))
                    });
                    Some(Ret::Got(got))
                }
                // A read that failed changed nothing: left out below.
                Err(_) => None,
            },
            Op::Put(value) => match store.put(KEY, value.to_string().into()).await {
                Ok(revision) => Some(Ret::Written(revision)),
                Err(error) => {
                    *lock(&run.errors)
                        .entry(format!("put: {error}"))
                        .or_default() += 1;
                    None
                }
            },
            Op::Update(value, expected) => {
                match store.update(KEY, value.to_string().into(), expected).await {
                    Ok(revision) => Some(Ret::Written(revision)),
                    Err(error) if error.kind() == UpdateErrorKind::WrongLastRevision => {
                        Some(Ret::WrongRevision)
                    }
                    Err(error) => {
                        *lock(&run.errors)
                            .entry(format!("update: {error}"))
                            .or_default() += 1;
                        None
                    }
                }
            }
        };
        let completed = run.ticket();
        match &outcome {
            Some(Ret::Got(got)) => known_revision[bucket] = got.map_or(0, |(_, revision)| revision),
            Some(Ret::Written(revision)) => {
                known_revision[bucket] = *revision;
                run.acked.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        if outcome.is_none() && op == Op::Get {
            tokio::time::sleep(PACE).await;
            continue;
        }
        let indeterminate = outcome.is_none();
        lock(&run.history).push(Recorded {
            process: (id, generation),
            bucket,
            op,
            invoked,
            outcome: outcome.map(|ret| (ret, completed)),
        });
        if indeterminate {
            generation += 1;
        }
        tokio::time::sleep(PACE).await;
    }
}

/// Waits (bounded by [`RECOVERY`]) until 20 more writes than now were acknowledged.
async fn progress(run: &Run, what: &str) {
    let from = run.acked.load(Ordering::SeqCst);
    let deadline = Instant::now() + RECOVERY;
    while run.acked.load(Ordering::SeqCst) < from + 20 {
        assert!(
            Instant::now() < deadline,
            "no progress {what}: {} writes acknowledged in {RECOVERY:?}",
            run.acked.load(Ordering::SeqCst) - from
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn info_subject(bucket: &str) -> String {
    format!("$JS.API.STREAM.INFO.KV_{bucket}")
}

/// Every write of `bucket`'s stream, read from its leader: revision -> value.
async fn read_bucket(control: &Client, bucket: &str, last: u64) -> BTreeMap<u64, u64> {
    let stream = format!("KV_{bucket}");
    let mut stored = BTreeMap::new();
    for revision in 1..=last {
        if let Some(payload) = message_at(control, &stream, revision).await {
            let value = payload.parse().unwrap_or(0);
            stored.insert(revision, value);
        }
    }
    stored
}

/// What a run found, and its figures.
struct Outcome {
    keys: Vec<KeyFindings>,
    faults: usize,
    took: Duration,
    checked_in: Duration,
}

impl Outcome {
    fn summary(&self) -> String {
        let sum = |f: fn(&KeyFindings) -> usize| self.keys.iter().map(f).sum::<usize>();
        format!(
            "ops {} indeterminate {} (applied {}) faults {} in {:.1?}, checked in {:.1?} \
             ({} segments): non-linearizable keys {} lost {} unexpected {}",
            sum(|k| k.operations),
            sum(|k| k.indeterminate),
            sum(|k| k.applied_indeterminate),
            self.faults,
            self.took,
            self.checked_in,
            sum(|k| k.segments),
            self.keys.iter().filter(|k| !k.linearizable).count(),
            sum(|k| k.lost.len()),
            sum(|k| k.unexpected.len()),
        )
    }

    fn clean(&self) -> bool {
        self.keys
            .iter()
            .all(|k| k.linearizable && k.lost.is_empty() && k.unexpected.is_empty())
    }
}

async fn run(rounds: usize, hold: Duration, clients: usize) -> Outcome {
    let mut cluster = proxied_jetstream_cluster("kvlin");
    let names = node_names(&cluster);
    let control = roaming_client(&cluster, 0).await;
    for bucket in BUCKETS {
        let stream = format!("KV_{bucket}");
        create(
            &control,
            &format!("STREAM.CREATE.{stream}"),
            json!({"name": stream, "subjects": [format!("$KV.{bucket}.>")], "num_replicas": 3,
                   "storage": "file", "max_msgs_per_subject": 10_000, "discard": "new",
                   "allow_rollup_hdrs": true, "deny_delete": true, "allow_direct": false}),
            &stream,
        )
        .await;
    }
    let shared = Arc::new(Run {
        tickets: AtomicU64::new(0),
        history: Mutex::new(Vec::new()),
        acked: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        errors: Mutex::default(),
    });
    let mut tasks = Vec::new();
    for id in 0..clients {
        let client = roaming_client(&cluster, id % cluster.len()).await;
        tasks.push(tokio::spawn(client_loop(id, client, shared.clone())));
    }
    progress(&shared, "before the first fault").await;

    let started = Instant::now();
    let mut faults = 0;
    for round in 0..rounds {
        for fault in [
            Fault::KillLeader,
            Fault::PauseLeader,
            Fault::PartitionLeader,
        ] {
            let bucket = BUCKETS[faults % BUCKETS.len()];
            let info = info_until(
                &control,
                &info_subject(bucket),
                "a leader before the fault",
                |info| settled(info, &names),
            )
            .await;
            let leader = index_named(&names, &leader_name(&info));
            println!(
                "round {round} {fault:?} (leader of {bucket}: {}) at {:.1?}, {} writes acked",
                names[leader],
                started.elapsed(),
                shared.acked.load(Ordering::SeqCst)
            );
            fault
                .inject(&mut cluster, leader, (leader + 1) % 3, hold)
                .await;
            faults += 1;
            progress(&shared, &format!("after {fault:?} in round {round}")).await;
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    for task in tasks {
        tokio::time::timeout(RECOVERY, task)
            .await
            .expect("a client did not stop")
            .expect("client");
    }
    let took = started.elapsed();

    tokio::task::block_in_place(|| cluster.wait_for_mesh())
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let mut stored = Vec::new();
    for bucket in BUCKETS {
        let info = info_until(
            &control,
            &info_subject(bucket),
            "settled after the schedule",
            |info| settled(info, &names),
        )
        .await;
        let last = info["state"]["last_seq"].as_u64().unwrap_or(0);
        stored.push(read_bucket(&control, bucket, last).await);
    }
    println!("indeterminate writes: {:?}", lock(&shared.errors));
    let ops = std::mem::take(&mut *lock(&shared.history));
    let checking = Instant::now();
    let keys = check_all(ops, stored);
    let outcome = Outcome {
        keys,
        faults,
        took,
        checked_in: checking.elapsed(),
    };
    println!("{}", outcome.summary());
    for (bucket, key) in BUCKETS.iter().zip(&outcome.keys) {
        if !key.linearizable || !key.lost.is_empty() || !key.unexpected.is_empty() {
            println!("{bucket}: {key:#?}");
        }
    }
    outcome
}

/// Ours: every key's history linearizable, nothing lost or unexpected. nats-server 2.15.1:
/// nothing lost or unexpected, but its reads are not always linearizable under these faults
/// (documented in docs/parity.md): in the long schedule (`--ignored`, 3 Dec 2026, one run of
/// one with the final checker) a `get` through the client connected to a node that a fault had cut off or paused was
/// answered with a value up to 34 revisions old after later writes had completed elsewhere (LIN0:
/// revisions 289-294 written and acknowledged, then two reads of revision 260; LIN2 alike,
/// 269 after 297). That server still answered `STREAM.MSG.GET` as the stream's leader. Printed
/// there, not failed; ours must not do it.
fn assert_outcome(outcome: &Outcome) {
    if test_harness::is_reference() {
        assert!(
            outcome
                .keys
                .iter()
                .all(|k| k.lost.is_empty() && k.unexpected.is_empty()),
            "{}",
            outcome.summary()
        );
        if !outcome.clean() {
            println!(
                "nats-server: stale reads, as documented: {}",
                outcome.summary()
            );
        }
    } else {
        assert!(outcome.clean(), "{}", outcome.summary());
    }
}

/// One round of the three faults, about half a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fault_schedule_keeps_kv_linearizable() {
    assert_outcome(&run(1, Duration::from_secs(5), 3).await);
}

/// Several rounds (by hand: `cargo test -p parity --test cluster kv_linearizable -- --ignored
/// --nocapture`); prints the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand for the figures"]
async fn a_long_fault_schedule_keeps_kv_linearizable() {
    assert_outcome(&run(4, Duration::from_secs(8), 4).await);
}

fn recorded(process: usize, op: Op, invoked: u64, outcome: Option<(Ret, u64)>) -> Recorded {
    Recorded {
        process: (process, 0),
        bucket: 0,
        op,
        invoked,
        outcome,
    }
}

/// The checker rejects a stale read (a read invoked after a write completed that returns the
/// value before it), accepts the same read when it overlaps the write, and counts an
/// indeterminate write as possibly applied.
#[test]
fn the_checker_rejects_a_stale_read() {
    let write = |invoked, completed| {
        vec![
            recorded(0, Op::Put(1), 0, Some((Ret::Written(1), 1))),
            recorded(0, Op::Put(2), invoked, Some((Ret::Written(2), completed))),
        ]
    };
    let stale = Ret::Got(Some((1, 1)));
    // The read starts after the second write completed: stale.
    let mut history = write(2, 3);
    history.push(recorded(1, Op::Get, 4, Some((stale.clone(), 5))));
    let findings = check_key(&history, None);
    assert!(!findings.linearizable, "{findings:#?}");
    assert!(!findings.history.is_empty());
    // The read overlaps the second write: it may come first.
    let mut history = write(2, 5);
    history.push(recorded(1, Op::Get, 3, Some((stale, 4))));
    assert!(check_key(&history, None).linearizable);

    // An indeterminate write a later read saw: it happened.
    let history = vec![
        recorded(0, Op::Put(7), 0, None),
        recorded(1, Op::Get, 1, Some((Ret::Got(Some((7, 1))), 2))),
        recorded(1, Op::Update(8, 1), 3, Some((Ret::Written(2), 4))),
    ];
    assert!(check_key(&history, None).linearizable);
    // ... but not when the stream says it was never stored.
    let stored: BTreeMap<u64, u64> = [(1, 8)].into();
    let findings = check_key(&history, Some(&stored));
    assert!(!findings.linearizable, "{findings:#?}");
    // A lost write, an unexpected value, a wrong `update` refusal.
    let history = vec![
        recorded(0, Op::Put(1), 0, Some((Ret::Written(1), 1))),
        recorded(0, Op::Update(2, 1), 2, Some((Ret::WrongRevision, 3))),
    ];
    let stored: BTreeMap<u64, u64> = [(1, 9)].into();
    let findings = check_key(&history, Some(&stored));
    assert!(!findings.linearizable, "{findings:#?}");
    assert_eq!(findings.lost.len(), 1, "{findings:#?}");
    assert_eq!(findings.unexpected.len(), 1, "{findings:#?}");

    // A long history is checked in segments: a clean one passes, a stale read late in it fails.
    let mut history = Vec::new();
    let mut stored = BTreeMap::new();
    let mut ticket = 0;
    for n in 1..=400u64 {
        let written = Some((Ret::Written(n), ticket + 1));
        history.push(recorded(0, Op::Put(n), ticket, written));
        let got = Some((Ret::Got(Some((n, n))), ticket + 3));
        history.push(recorded(1, Op::Get, ticket + 2, got));
        stored.insert(n, n);
        ticket += 4;
    }
    let findings = check_key(&history, Some(&stored));
    assert!(findings.linearizable, "{:?}", findings.history.first());
    assert!(findings.segments > 1, "{} segments", findings.segments);
    let last = history.len() - 1;
    history[last].outcome = Some((Ret::Got(Some((399, 399))), ticket - 1));
    assert!(!check_key(&history, Some(&stored)).linearizable);

    // An indeterminate write (stored at revision 2) may take effect long after its invocation:
    // no cut before the first operation that saw it, so reads of revision 1 meanwhile pass.
    let mut history = vec![
        recorded(0, Op::Put(1), 0, Some((Ret::Written(1), 1))),
        recorded(2, Op::Put(99), 2, None),
    ];
    for n in 0..50 {
        let got = Some((Ret::Got(Some((1, 1))), 4 + 2 * n));
        history.push(recorded(1, Op::Get, 3 + 2 * n, got));
    }
    history.push(recorded(0, Op::Put(2), 200, Some((Ret::Written(3), 201))));
    history.push(recorded(
        1,
        Op::Get,
        202,
        Some((Ret::Got(Some((2, 3))), 203)),
    ));
    let stored: BTreeMap<u64, u64> = [(1, 1), (2, 99), (3, 2)].into();
    let findings = check_key(&history, Some(&stored));
    assert!(findings.linearizable, "{:#?}", findings.history);
}

//! KV linearizability under faults (issue 15): three R3 KV buckets of one key each on a proxied
//! 3-node cluster, one client per node (roaming: it fails over to the others) doing random
//! `get` / `put` / `update(expected revision)` on random buckets, one operation at a time, each
//! recorded with its invocation and its completion, while the fault schedule runs (`kill -9` of
//! a bucket's stream leader, SIGSTOP of one past an election timeout, one cut from both others
//! by the link proxies; each healed, and writes progressing again, before the next). The
//! history of each key is then checked (`linearizability.rs`: stateright's
//! `LinearizabilityTester` against a sequential spec of one key; what counts as completed or
//! indeterminate, and how the check is bounded, are said there).
//!
//! Why one key per bucket: a key's revision is its stream sequence, shared by all the keys of a
//! bucket; with one key it grows by exactly one per applied write, so the spec can predict every
//! revision and a `get` or a write returning a revision is checked exactly.
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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{Store, UpdateErrorKind};
use async_nats::Client;
use serde_json::json;

use crate::fault_schedule::{
    create, index_named, info_until, leader_name, node_names, proxied_jetstream_cluster,
    roaming_client, settled, Fault, RECOVERY,
};
use crate::jetstream_faults::message_at;
use crate::jetstream_replicated::lock;
use crate::linearizability::{check_all, KeyFindings, Op, Recorded, Ret};

const BUCKETS: [&str; 3] = ["LIN0", "LIN1", "LIN2"];
const KEY: &str = "k";
/// One operation waits this long for its answer (a PubAck, a MSG.GET reply).
const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// A client's pause between two operations: bounds the history (the check is quadratic in
/// its length even when nothing is indeterminate).
const PACE: Duration = Duration::from_millis(15);

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
#[ignore = "long suite (.ci/long): a fault schedule, 25-30 s per pass"]
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

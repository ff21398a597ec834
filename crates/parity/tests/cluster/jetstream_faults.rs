//! The fault checker for R3 streams (issue 15), after Jepsen's NATS queue checker: publishers
//! with unique payloads on an R3 file stream record every PubAck (sequence, payload) while a
//! fault schedule runs (`kill -9` of the stream leader, `kill -9` of a follower, SIGSTOP of the
//! leader for longer than an election timeout, the leader cut from both others by the link
//! proxies); then everything is healed, the group settles (one leader, every replica current),
//! each replica in turn is made leader and the whole stream is read from it, and the history is
//! checked:
//!
//! - **lost**: an acknowledged payload not at its acknowledged sequence on a replica;
//! - **conflicting**: one sequence acknowledged to two payloads, or one payload at two sequences;
//! - **backwards**: a publisher's acknowledged sequences not increasing (each publishes one
//!   message at a time, so a later publish must get a later sequence);
//! - **unexpected**: a stored payload that no publisher sent;
//! - **duplicates**: a payload stored at more than one sequence (each attempt of a payload
//!   carries it as its `Nats-Msg-Id`, so a retry is deduplicated);
//! - **divergent**: replicas that do not hold the same messages at the same sequences.
//!
//! A publish not acknowledged is retried (same message id) a few times, then left
//! indeterminate: it may or may not be stored, both are fine.
//!
//! The short schedule (one round of each fault, about a minute) is a long suite (`.ci/long`, both
//! passes; out of `.ci/run` since session 28 to keep CI under 30 minutes). The long
//! one (`#[ignore]`, by hand) runs several rounds. Against nats-server (the parity pass, or
//! `NATS_SERVER_BIN` with `--ignored`) the same checker runs; see each test for what it asserts
//! there.
//!
//! Figures of the long schedule (5 rounds of the 4 faults, 8 s holds, 3 publishers; `cargo test
//! -p parity --test cluster jetstream_faults::a_long -- --ignored --nocapture`, debug build of
//! ours, 2-core machine, 2026-12-02): ours 29,017 publishes, 28,584 acked, 20 faults in 229 s,
//! nothing lost, conflicting, duplicated, unexpected or divergent; nats-server 2.15.1 (release
//! build) 414,487 publishes, 413,522 acked, 20 faults in 217 s, nothing found either (the
//! losses Jepsen reports for it need power loss, which this schedule does not inject).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::fault_schedule::{
    create_r3_stream, index_named, info_until, info_within, leader_name, node_names, progress,
    proxied_jetstream_cluster, roaming_client, settled, start_publishers, History, Schedule, ROUND,
    SETTLE,
};
use crate::jetstream_replicated::{base64_decode, lock};

const STREAM: &str = "JEPSEN";
const SUBJECT: &str = "jepsen.queue";
const STREAM_INFO: &str = "$JS.API.STREAM.INFO.JEPSEN";

/// The checker's findings.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    attempted: usize,
    acked: usize,
    indeterminate: usize,
    stored: usize,
    lost: Vec<String>,
    conflicting: Vec<String>,
    backwards: Vec<String>,
    unexpected: Vec<String>,
    duplicates: Vec<String>,
    divergent: Vec<String>,
}

impl Findings {
    pub(crate) fn summary(&self, faults: usize, took: Duration) -> String {
        format!(
            "ops {} acked {} indeterminate {} stored {} faults {faults} in {took:.1?}: lost {} \
             conflicting {} backwards {} unexpected {} duplicates {} divergent replicas {}",
            self.attempted,
            self.acked,
            self.indeterminate,
            self.stored,
            self.lost.len(),
            self.conflicting.len(),
            self.backwards.len(),
            self.unexpected.len(),
            self.duplicates.len(),
            self.divergent.len()
        )
    }

    /// Every safety property held (duplicates included).
    pub(crate) fn clean(&self) -> bool {
        self.lost.is_empty()
            && self.conflicting.is_empty()
            && self.backwards.is_empty()
            && self.unexpected.is_empty()
            && self.duplicates.is_empty()
            && self.divergent.is_empty()
    }
}

/// Checks the history against every replica's stream (sequence -> payload).
pub(crate) fn check(history: &History, replicas: &[(String, BTreeMap<u64, String>)]) -> Findings {
    let mut findings = Findings {
        attempted: history.attempted.len(),
        acked: history.acked.len(),
        indeterminate: history.indeterminate,
        stored: replicas.first().map_or(0, |(_, stored)| stored.len()),
        backwards: history.backwards.clone(),
        ..Findings::default()
    };
    let mut by_seq: HashMap<u64, &str> = HashMap::new();
    let mut by_payload: HashMap<&str, u64> = HashMap::new();
    for (_, payload, seq, _) in &history.acked {
        if let Some(other) = by_seq.insert(*seq, payload) {
            if other != payload {
                findings
                    .conflicting
                    .push(format!("seq {seq} acked to {other} and {payload}"));
            }
        }
        if let Some(other) = by_payload.insert(payload, *seq) {
            if other != *seq {
                findings
                    .conflicting
                    .push(format!("{payload} acked at {other} and {seq}"));
            }
        }
    }
    for (name, stored) in replicas {
        for (payload, seq) in &by_payload {
            if stored.get(seq).map(String::as_str) != Some(*payload) {
                findings.lost.push(format!(
                    "{name}: {payload} acked at {seq}, holds {:?}",
                    stored.get(seq)
                ));
            }
        }
        let mut seen: HashMap<&str, u64> = HashMap::new();
        for (seq, payload) in stored {
            if !history.attempted.contains(payload) {
                findings
                    .unexpected
                    .push(format!("{name}: {payload:?} at {seq}"));
            }
            if let Some(first) = seen.insert(payload, *seq) {
                findings
                    .duplicates
                    .push(format!("{name}: {payload} at {first} and {seq}"));
            }
        }
    }
    if let Some((first_name, first)) = replicas.first() {
        for (name, stored) in &replicas[1..] {
            if stored != first {
                let differing = first
                    .iter()
                    .filter(|(seq, payload)| stored.get(seq) != Some(payload))
                    .count()
                    + stored.keys().filter(|seq| !first.contains_key(seq)).count();
                findings.divergent.push(format!(
                    "{name} ({} messages) differs from {first_name} ({}) at {differing} sequences",
                    stored.len(),
                    first.len()
                ));
            }
        }
    }
    findings
}

/// The payload at `seq` of `stream` (`None`: no message there), read from its current leader.
/// A request can meet a moment without a meta leader (10008) or a stream leader (silence) after
/// faults: asked again, within the settle bound.
pub(crate) async fn message_at(client: &Client, stream: &str, seq: u64) -> Option<String> {
    let subject = format!("$JS.API.STREAM.MSG.GET.{stream}");
    let body = json!({ "seq": seq }).to_string();
    let mut last = String::new();
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline {
        let reply = tokio::time::timeout(
            Duration::from_secs(2),
            client.request(subject.clone(), body.clone().into()),
        )
        .await;
        last = format!("{reply:?}");
        if let Ok(Ok(reply)) = reply {
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            if answer["error"]["err_code"] == 10037 {
                return None;
            }
            if let Some(data) = answer["message"]["data"].as_str() {
                return Some(String::from_utf8_lossy(&base64_decode(data)).into_owned());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("MSG.GET {seq} unanswered: {last}");
}

/// Every message of `stream` through `last`, read from its current leader (gaps left out).
async fn read_stream(client: &Client, stream: &str, last: u64) -> BTreeMap<u64, String> {
    futures::stream::iter(1..=last)
        .map(|seq| async move { (seq, message_at(client, stream, seq).await) })
        .buffered(32)
        .filter_map(|(seq, payload)| async move { payload.map(|payload| (seq, payload)) })
        .collect()
        .await
}

/// Each replica of `stream` made leader in turn (the group healed first) and its messages
/// through `last` read: (replica, sequence -> payload). Against nats-server, a replica that
/// never becomes current after a stepdown ends the reads (see below).
pub(crate) async fn read_every_replica(
    control: &Client,
    stream: &str,
    names: &[String],
    last: u64,
) -> Vec<(String, BTreeMap<u64, String>)> {
    let info_subject = format!("$JS.API.STREAM.INFO.{stream}");
    let mut replicas = Vec::new();
    'replicas: for name in names {
        let deadline = Instant::now() + SETTLE;
        loop {
            let info = match info_within(control, &info_subject, |info| settled(info, names)).await
            {
                Ok(info) => info,
                // nats-server (CI parity pass on 11e6fb4): after a stepdown that followed the
                // schedule, a follower stayed 2,921 behind and not current for a minute. Its
                // catch-up, not a lost write: the replicas read so far are checked.
                Err(stuck) if test_harness::is_reference() => {
                    println!("nats-server never settled to let {name} lead; last {stuck}");
                    if replicas.is_empty() {
                        replicas.push((
                            leader_name(&stuck),
                            read_stream(control, stream, last).await,
                        ));
                    }
                    break 'replicas;
                }
                Err(last) => panic!("settled before a read: last {info_subject} {last}"),
            };
            if leader_name(&info) == *name {
                assert_eq!(info["state"]["last_seq"], last, "{name} leads with {info}");
                break;
            }
            assert!(Instant::now() < deadline, "{name} never led: {info}");
            let _ = tokio::time::timeout(
                Duration::from_secs(5),
                control.request(
                    format!("$JS.API.STREAM.LEADER.STEPDOWN.{stream}"),
                    json!({"placement": {"preferred": name}}).to_string().into(),
                ),
            )
            .await;
        }
        replicas.push((name.clone(), read_stream(control, stream, last).await));
    }
    replicas
}

/// Runs the schedule under load, settles, reads every replica and checks; returns the findings
/// and the number of faults injected.
async fn run(schedule: Schedule) -> (Findings, usize) {
    let mut cluster = proxied_jetstream_cluster("faults");
    let names = node_names(&cluster);
    let control = roaming_client(&cluster, 0).await;
    create_r3_stream(&control, STREAM, "jepsen.>").await;

    let stop = Arc::new(AtomicBool::new(false));
    let history: Arc<Mutex<History>> = Arc::default();
    let publishers =
        start_publishers(&cluster, schedule.publishers, SUBJECT, &stop, &history).await;
    progress(&history, "before the first fault").await;

    let started = Instant::now();
    let mut faults = 0;
    for round in 0..schedule.rounds {
        for fault in ROUND {
            let info = info_until(&control, STREAM_INFO, "a leader before the fault", |info| {
                settled(info, &names)
            })
            .await;
            let leader = index_named(&names, &leader_name(&info));
            let follower = (leader + 1 + round % 2) % 3;
            println!(
                "round {round} {fault:?} (leader {}) at {:.1?}, {} acked",
                names[leader],
                started.elapsed(),
                lock(&history).acked.len()
            );
            fault
                .inject(&mut cluster, leader, follower, schedule.hold)
                .await;
            faults += 1;
            progress(&history, &format!("after {fault:?} in round {round}")).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for publisher in publishers {
        publisher.await.expect("publisher");
    }
    let took = started.elapsed();

    // Healed: one leader, every replica current; then each replica leads in turn and is read.
    tokio::task::block_in_place(|| cluster.wait_for_mesh())
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let info = info_until(
        &control,
        STREAM_INFO,
        "settled after the schedule",
        |info| settled(info, &names),
    )
    .await;
    let last = info["state"]["last_seq"].as_u64().unwrap_or(0);
    let replicas = read_every_replica(&control, STREAM, &names, last).await;
    let findings = check(&lock(&history), &replicas);
    println!("{}", findings.summary(faults, took));
    if !findings.clean() {
        println!("{findings:#?}");
    }
    (findings, faults)
}

/// One round of each fault, about a minute: must find nothing on ours. Against nats-server the
/// short schedule asserts the same (it held in every run here; nats-server's known losses need
/// power loss or longer pauses, see the long schedule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a fault schedule, 30-70 s per pass"]
async fn a_short_fault_schedule_loses_no_acknowledged_write() {
    let (findings, _) = run(Schedule {
        rounds: 1,
        hold: Duration::from_secs(5),
        publishers: 3,
    })
    .await;
    assert!(findings.clean(), "{findings:#?}");
}

/// Several rounds of every fault (by hand: `cargo test -p parity --test cluster
/// jetstream_faults -- --ignored --nocapture`); prints the figures. `RNATS_FAULT_ROUNDS`
/// (default 5) and `RNATS_FAULT_HOLD_S` (seconds each fault is held, default 8) scale it to the
/// issue's counts (20 rounds of 10 s: 20 leader kills, 20 leader pauses of 10 s, 20 partitions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand for the fault figures"]
async fn a_long_fault_schedule_loses_no_acknowledged_write() {
    let knob = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let (findings, _) = run(Schedule {
        rounds: knob("RNATS_FAULT_ROUNDS", 5) as usize,
        hold: Duration::from_secs(knob("RNATS_FAULT_HOLD_S", 8)),
        publishers: 3,
    })
    .await;
    assert!(findings.clean(), "{findings:#?}");
}

/// The checker itself finds each kind of fault in a made-up history (so a clean run means
/// something).
#[test]
fn the_checker_finds_each_kind_of_fault() {
    let history = History {
        attempted: ["a", "b", "c", "d"].map(String::from).into(),
        acked: vec![
            (0, "a".into(), 1, false),
            (0, "b".into(), 2, false),
            (1, "c".into(), 2, false),
        ],
        indeterminate: 1,
        backwards: vec!["publisher 1: c acked at 2 after 3".into()],
        times: Vec::new(),
    };
    let stored = |entries: &[(u64, &str)]| -> BTreeMap<u64, String> {
        entries
            .iter()
            .map(|(seq, p)| (*seq, p.to_string()))
            .collect()
    };
    let clean = check(
        &History {
            acked: history.acked[..2].to_vec(),
            backwards: Vec::new(),
            attempted: history.attempted.clone(),
            indeterminate: 0,
            times: Vec::new(),
        },
        &[
            ("x".into(), stored(&[(1, "a"), (2, "b"), (3, "d")])),
            ("y".into(), stored(&[(1, "a"), (2, "b"), (3, "d")])),
        ],
    );
    assert!(clean.clean(), "{clean:#?}");
    let findings = check(
        &history,
        &[
            (
                "x".into(),
                stored(&[(1, "a"), (2, "b"), (3, "zz"), (4, "a")]),
            ),
            ("y".into(), stored(&[(2, "b")])),
        ],
    );
    // c acked at 2 (held by b) on both; a missing on y.
    assert_eq!(findings.lost.len(), 3, "{findings:#?}");
    assert_eq!(findings.conflicting.len(), 1, "{findings:#?}");
    assert_eq!(findings.backwards.len(), 1, "{findings:#?}");
    assert_eq!(findings.unexpected.len(), 1, "{findings:#?}");
    assert_eq!(findings.duplicates.len(), 1, "{findings:#?}");
    assert_eq!(findings.divergent.len(), 1, "{findings:#?}");
}

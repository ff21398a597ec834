//! The consume side of the fault checker (issues 15 and 20): publishers with unique payloads
//! on an R3 file stream (as in `jetstream_faults`), and while they publish, three consumers
//! read it through roaming clients: an R3 durable pull consumer (a request, then an AckSync per
//! message of the batch), an R3 durable push consumer (an AckSync per delivery) and an ordered
//! consumer. The fault schedule (`kill -9` of a durable's leader, of a follower, SIGSTOP of the
//! leader past an election timeout, the leader cut from both others by the link proxies, each
//! healed) runs under that load. Checked:
//!
//! - **undelivered**: a payload acknowledged to a publisher never delivered to a consumer
//!   (each consumer is drained after the schedule, bounded);
//! - **misplaced**: a delivery whose stream sequence is not the one its payload was acked at;
//! - **forgotten**: a message delivered again after the server confirmed its ack (the AckSync
//!   was answered). A pull request is made only once the previous batch's acks were answered
//!   or timed out, so a confirmed message in its batch is one; the push consumer's ack answers
//!   come on its own subscription, so a delivery read after an answer arrived after it, from
//!   the leader that answered (one route, in order) or a later one. Asserted for both (an
//!   answer carrying a status, the client's server's `503` no-responders, confirms nothing:
//!   see `forgotten`);
//! - **floor**: after each fault is healed, the durable's leader shows an ack floor below the
//!   highest sequence whose acks (it and every one below it) were confirmed before the fault;
//!   after the schedule, a floor below that, or a `num_ack_pending` counting confirmed acks
//!   (more than the unconfirmed sequences between the floor and the delivered sequence); at the
//!   end, a durable not drained to the last sequence with nothing pending;
//! - **over max_ack_pending**: a CONSUMER.INFO sample with more acks pending than
//!   `max_ack_pending`, or more distinct sequences redelivered between two faults than that;
//! - **bad pull ends**: a pull request ended by a status other than 404, 408, `409 Leadership
//!   Change` or 503 (a moment without a leader or a route), or by silence past its expiry (a
//!   waiting request whose leader died or was cut off times out on the client: that is clean);
//! - **disordered**: the ordered consumer handing over a sequence not above its previous one;
//! - **stream**: after the drain each replica is made leader in turn and read, and
//!   `jetstream_faults`' checker runs on them (an acked payload not at its sequence, a payload
//!   at two sequences, replicas that differ), so an undelivered or misplaced message can be
//!   told apart from a lost or moved write.
//!
//! Before and after each fault the group must have healed (`fault_schedule::healed`: one
//! leader, every replica back and seen caught up). Each phase is noted with its time
//! ([`Trail`]) and a failure repeats the notes in its panic message.
//!
//! A floor read from CONSUMER.INFO before a fault may include acks not yet committed (both
//! servers apply an ack on the leader before it is replicated), so the check compares the floor
//! after the fault with what was confirmed before it, not with what was read.
//!
//! The short schedule (one round) runs in `.ci/long` on ours (out of `.ci/run` since session 28);
//! the long one (`#[ignore]`) prints the
//! figures. Long schedule, ours, debug build on the loaded 2-core machine (2 Dec 2026, after the
//! lag and committed-delivery fixes): 17,856 acked, 280 indeterminate, 20 faults in 204 s;
//! nothing undelivered, misplaced, forgotten (pull), disordered or over max_ack_pending, the
//! three replicas identical with every acked write at its sequence; one push delivery after
//! a "confirmed" ack (a no-responders status then counted as an answer, see `forgotten`).
//! Before the fixes (Session
//! 12, 49,261 acked in 451 s) the ordered consumer missed two acked messages and saw one at
//! the wrong sequence: a cut-off leader had delivered its uncommitted batch.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::fault_schedule::{
    cluster_summary, create, create_r3_stream, healed, index_named, info_within, leader_info,
    leader_name, node_names, progress_within, proxied_jetstream_cluster, roaming_client,
    start_publishers, History, Schedule, ROUND, SETTLE,
};
use crate::jetstream_faults::read_every_replica;
use crate::jetstream_replicated::lock;

const STREAM: &str = "CFAULTS";
const SUBJECT: &str = "cfaults.q";
const STREAM_INFO: &str = "$JS.API.STREAM.INFO.CFAULTS";
/// The push consumer's deliveries, and the answers to its acks, come under this prefix.
const PUSH_PREFIX: &str = "cfaults_deliver";
const PUSH_SUBJECT: &str = "cfaults_deliver.push";
const ANSWERS: &str = "cfaults_deliver.answer.";
/// The durables' ack wait: long enough that a message is redelivered only after a fault.
const ACK_WAIT: Duration = Duration::from_secs(4);
const MAX_ACK_PENDING: u64 = 64;
/// Messages a pull request asks for, and how long it waits on the server.
const BATCH: usize = 16;
const EXPIRES: Duration = Duration::from_secs(1);
/// An AckSync (or a pull request past its expiry) waits this long for its answer.
const ANSWER: Duration = Duration::from_secs(2);
/// Times an AckSync is sent before it is left unconfirmed.
const ACK_ATTEMPTS: usize = 3;

const PULL: &str = "PULL";
const PUSH: &str = "PUSH";
const ORDERED: &str = "ORDERED";

/// What one consumer saw.
#[derive(Default)]
struct Consumed {
    deliveries: u64,
    /// Stream sequence -> payload, as delivered.
    delivered: BTreeMap<u64, String>,
    /// Sequences whose AckSync was answered.
    confirmed: BTreeSet<u64>,
    /// AckSyncs left unanswered (pull) or not sent (push).
    unconfirmed: u64,
    /// Push: answers that were a no-responders status (no consumer reached), not counted.
    no_responders: u64,
    /// Deliveries of an already confirmed message.
    forgotten: Vec<String>,
    /// Each sequence's latest delivery: its delivery count and consumer sequence (from the ack
    /// subject), which tell a late copy of an old delivery from a new one.
    latest: HashMap<u64, (u64, u64)>,
    /// Each sequence's latest ack subject: its timestamp token tells a copy of the same
    /// delivery (the same subject) from a new delivery numbered alike.
    latest_reply: HashMap<u64, String>,
    /// Sequences delivered more than once since the last fault.
    redelivered_window: BTreeSet<u64>,
    redeliveries: u64,
    /// The most distinct sequences redelivered between two faults.
    max_window: usize,
    /// How pull requests ended ("batch", "404 No Messages", "silence", ...).
    pull_ends: BTreeMap<String, u64>,
    /// The ordered consumer: sequences not above the previous one, the last one.
    disordered: Vec<String>,
    last_seq: u64,
    errors: u64,
}

impl Consumed {
    /// Records a delivery of `seq` holding `payload`, acked on `reply` (empty: none), read
    /// through server `via`.
    fn delivery(&mut self, seq: u64, payload: String, reply: &str, via: &str) {
        self.deliveries += 1;
        let this = ack_subject_delivery(reply);
        let before = match this {
            Some(this) => self.latest.insert(seq, this),
            None => self.latest.get(&seq).copied(),
        };
        let reply_before = self.latest_reply.insert(seq, reply.to_string());
        if self.confirmed.contains(&seq) {
            self.forgotten.push(format!(
                "{payload} at {seq} delivered after its ack was confirmed (delivery count and \
                 consumer sequence {this:?}, before {before:?}; read through {via}; ack subject \
                 {reply}, before {reply_before:?})"
            ));
        }
        if self.delivered.insert(seq, payload).is_some() {
            self.redeliveries += 1;
            self.redelivered_window.insert(seq);
            self.max_window = self.max_window.max(self.redelivered_window.len());
        }
    }

    /// The highest sequence `h` such that every sequence up to it was confirmed (a gap in
    /// the stream stops it early: a weaker check, never a false finding).
    fn confirmed_floor(&self) -> u64 {
        let mut floor = 0;
        while self.confirmed.contains(&(floor + 1)) {
            floor += 1;
        }
        floor
    }
}

type Shared = Arc<Mutex<Consumed>>;

/// What the run did and when, printed as it goes and repeated in a failure's panic message (CI
/// keeps only the end of a failed run's output): a failure then says which phase it was in
/// and how long the phases before it took.
#[derive(Clone)]
struct Trail(Arc<Mutex<(Instant, Vec<String>)>>);

impl Trail {
    fn new() -> Trail {
        Trail(Arc::new(Mutex::new((Instant::now(), Vec::new()))))
    }

    fn note(&self, what: impl std::fmt::Display) {
        let mut trail = lock(&self.0);
        let line = format!("[{:.1?}] {what}", trail.0.elapsed());
        println!("{line}");
        trail.1.push(line);
    }

    /// Panics with `what` and the trail so far.
    fn fail(&self, what: impl std::fmt::Display) -> ! {
        let trail = lock(&self.0);
        panic!(
            "{what}\n(at {:.1?}; the run so far:\n  {})",
            trail.0.elapsed(),
            trail.1.join("\n  ")
        );
    }
}

/// Waits (bounded) for a task that was told to stop.
async fn joined(trail: &Trail, what: &str, task: tokio::task::JoinHandle<()>) {
    match tokio::time::timeout(SETTLE, task).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => trail.fail(format!("{what}: {error}")),
        Err(_) => trail.fail(format!("{what} did not stop within {SETTLE:?}")),
    }
}

fn consumer_info(name: &str) -> String {
    format!("$JS.API.CONSUMER.INFO.{STREAM}.{name}")
}

fn floor_of(info: &Value) -> u64 {
    info["ack_floor"]["stream_seq"].as_u64().unwrap_or(0)
}

/// Samples the durables' CONSUMER.INFO every 250 ms: acks pending over `max_ack_pending`.
async fn watch_pending(client: Client, stop: Arc<AtomicBool>, over: Arc<Mutex<Vec<String>>>) {
    while !stop.load(Ordering::Relaxed) {
        for name in [PULL, PUSH] {
            if let Some(info) = leader_info(&client, &consumer_info(name)).await {
                let pending = info["num_ack_pending"].as_u64().unwrap_or(0);
                if pending > MAX_ACK_PENDING {
                    lock(&over).push(format!("{name}: {pending} acks pending"));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What the run found, per consumer and overall.
#[derive(Debug, Default)]
struct Findings {
    acked: usize,
    indeterminate: usize,
    faults: usize,
    /// name -> (deliveries, redeliveries, most redelivered between faults, unconfirmed acks)
    figures: BTreeMap<String, (u64, u64, usize, u64)>,
    /// Answers to the push consumer's AckSyncs that were no-responders statuses (not counted
    /// as confirmations).
    push_no_responders: u64,
    pull_ends: BTreeMap<String, u64>,
    undelivered: Vec<String>,
    misplaced: Vec<String>,
    /// Deliveries after a confirmed ack, both durables. The push consumer's were only counted
    /// (`push_forgotten`) until Session 25: 0-5 per short run, 17 and 26 per long run, runs of
    /// `(1, n)` after `(1, n)` just above the confirmed floor at a fault of the leader. Probes
    /// (ack, delivery, proposal and activation on every server, each answer on the client)
    /// showed every one's "answer" was the client's server's `503` no-responders status to the
    /// AckSync sent again while no consumer's ack subscription reached that server (the leader
    /// killed, paused or cut off, the next one not started or not yet heard of), 0-2 ms after
    /// the ack; the deposed leader's proposal of the ack had failed and answered nothing, and
    /// the next leader's committed state rightly lacked the delivery. The pull reader's
    /// `request` always took that status as an error; the push reader now does too
    /// (`no_responders`). Earlier, real causes this check found (fixed): a restarted leader
    /// resuming its term with stale consumers (nats-raft `leadership`), a deposed leader's push
    /// consumer running while its node drained another (`consumer/replicated.rs`), a resumed
    /// leader redelivering what expired during its pause (the leader lease, `consumer_lease`).
    forgotten: Vec<String>,
    floor: Vec<String>,
    over_max_ack_pending: Vec<String>,
    bad_pull_ends: Vec<String>,
    disordered: Vec<String>,
    /// The stream itself, each replica read as leader after the drain (`jetstream_faults`'
    /// checker): an acked payload not at its sequence, a payload at two sequences, replicas
    /// that differ. A consumer's undelivered or misplaced message with none of these is the
    /// consumer's doing, not the stream's.
    stream: Vec<String>,
}

impl Findings {
    fn clean(&self) -> bool {
        self.undelivered.is_empty()
            && self.misplaced.is_empty()
            && self.forgotten.is_empty()
            && self.floor.is_empty()
            && self.over_max_ack_pending.is_empty()
            && self.bad_pull_ends.is_empty()
            && self.disordered.is_empty()
            && self.stream.is_empty()
    }

    fn summary(&self, took: Duration) -> String {
        let mut out = format!(
            "acked {} indeterminate {} faults {} in {took:.1?}; ",
            self.acked, self.indeterminate, self.faults
        );
        for (name, (deliveries, redeliveries, window, unconfirmed)) in &self.figures {
            out += &format!(
                "{name}: deliveries {deliveries} redeliveries {redeliveries} (at most \
                 {window} between faults) unconfirmed acks {unconfirmed}; "
            );
        }
        out += &format!(
            "pull ends {:?}; push acks answered no-responders {}; undelivered {} misplaced {} \
             forgotten confirmed acks {} floor {} over max_ack_pending {} bad pull ends {} \
             disordered {} stream {}",
            self.pull_ends,
            self.push_no_responders,
            self.undelivered.len(),
            self.misplaced.len(),
            self.forgotten.len(),
            self.floor.len(),
            self.over_max_ack_pending.len(),
            self.bad_pull_ends.len(),
            self.disordered.len(),
            self.stream.len()
        );
        out
    }
}

/// A pull request's end as the checker allows it.
fn allowed_pull_end(end: &str) -> bool {
    end == "batch"
        || end == "silence"
        || end.starts_with("404 ")
        || end.starts_with("408 ")
        || end.starts_with("503 ")
        || end == "409 Leadership Change"
}

/// Checks what each consumer saw against the publishers' history.
fn check(history: &History, consumed: &HashMap<&'static str, Shared>, findings: &mut Findings) {
    findings.acked = history.acked.len();
    findings.indeterminate = history.indeterminate;
    let acked_at: HashMap<&str, u64> = history
        .acked
        .iter()
        .map(|(_, payload, seq, _)| (payload.as_str(), *seq))
        .collect();
    for name in [PULL, PUSH, ORDERED] {
        let consumed = lock(&consumed[name]);
        let seen: HashMap<&str, u64> = consumed
            .delivered
            .iter()
            .map(|(seq, payload)| (payload.as_str(), *seq))
            .collect();
        for (payload, seq) in &acked_at {
            match seen.get(payload) {
                None => findings
                    .undelivered
                    .push(format!("{name}: {payload} (acked at {seq})")),
                Some(at) if at != seq => findings.misplaced.push(format!(
                    "{name}: {payload} acked at {seq}, delivered at {at}"
                )),
                Some(_) => {}
            }
        }
        let named = |what: &String| format!("{name}: {what}");
        findings
            .forgotten
            .extend(consumed.forgotten.iter().map(named));
        if name == PUSH {
            findings.push_no_responders = consumed.no_responders;
        }
        findings
            .disordered
            .extend(consumed.disordered.iter().map(named));
        if name != ORDERED && consumed.max_window as u64 > MAX_ACK_PENDING {
            findings.over_max_ack_pending.push(format!(
                "{name}: {} sequences redelivered between two faults",
                consumed.max_window
            ));
        }
        for (end, count) in &consumed.pull_ends {
            *findings.pull_ends.entry(end.clone()).or_default() += count;
            if !allowed_pull_end(end) {
                findings.bad_pull_ends.push(format!("{end} x{count}"));
            }
        }
        findings.figures.insert(
            name.to_string(),
            (
                consumed.deliveries,
                consumed.redeliveries,
                consumed.max_window,
                consumed.unconfirmed,
            ),
        );
    }
}

/// Waits for one leader among `names`, for the stream (healed: every replica back and caught
/// up) and each durable (led: its replicas may lag by the entries in flight while it is used);
/// returns the stream's info and the durables'.
async fn settle(
    trail: &Trail,
    control: &Client,
    names: &[String],
    what: &str,
) -> (Value, HashMap<&'static str, Value>) {
    let stream = healed(control, STREAM_INFO, names)
        .await
        .unwrap_or_else(|error| trail.fail(format!("{what}: {error}")));
    let mut infos = HashMap::new();
    for name in [PULL, PUSH] {
        let subject = consumer_info(name);
        let led = info_within(control, &subject, |info| names.contains(&leader_name(info))).await;
        match led {
            Ok(info) => infos.insert(name, info),
            Err(last) => trail.fail(format!(
                "{what}: {subject} named no leader in {SETTLE:?}; last: {}",
                cluster_summary(&last)
            )),
        };
    }
    trail.note(format!("{what}: {}", cluster_summary(&stream)));
    (stream, infos)
}

/// The two R3 durables, explicit acks.
async fn create_durables(control: &Client) {
    for (name, deliver) in [(PULL, None), (PUSH, Some(PUSH_SUBJECT))] {
        let mut config = json!({
            "durable_name": name,
            "ack_policy": "explicit",
            "ack_wait": ACK_WAIT.as_nanos() as u64,
            "max_ack_pending": MAX_ACK_PENDING,
            "num_replicas": 3,
            "filter_subject": SUBJECT,
        });
        if let Some(deliver) = deliver {
            config["deliver_subject"] = deliver.into();
        }
        create(
            control,
            &format!("CONSUMER.CREATE.{STREAM}.{name}"),
            json!({"stream_name": STREAM, "config": config}),
            name,
        )
        .await;
    }
}

/// After the schedule, healed and with no consumer running: every confirmed ack is in the
/// settled leader's state.
fn check_still(
    infos: &HashMap<&'static str, Value>,
    consumed: &HashMap<&str, Shared>,
) -> Vec<String> {
    let mut found = Vec::new();
    for name in [PULL, PUSH] {
        let info = &infos[name];
        let consumed = lock(&consumed[name]);
        let floor = floor_of(info);
        let delivered = info["delivered"]["stream_seq"].as_u64().unwrap_or(0);
        let confirmed = consumed.confirmed_floor();
        if floor < confirmed {
            found.push(format!(
                "{name}: floor {floor} after the schedule, {confirmed} confirmed"
            ));
        }
        let unconfirmed = (floor + 1..=delivered)
            .filter(|seq| !consumed.confirmed.contains(seq))
            .count() as u64;
        let pending = info["num_ack_pending"].as_u64().unwrap_or(0);
        if pending > unconfirmed {
            found.push(format!(
                "{name}: {pending} acks pending, only {unconfirmed} unconfirmed in \
                 ({floor}, {delivered}]"
            ));
        }
    }
    found
}

/// Runs the consumers again until each durable is acked to `last` with nothing pending and the
/// ordered consumer reached `last` (bounded).
async fn drain(
    trail: &Trail,
    cluster: &Cluster,
    control: &Client,
    consumed: &HashMap<&'static str, Shared>,
    last: u64,
) {
    let readers = Readers::start(cluster, consumed).await;
    let deadline = Instant::now() + SETTLE + ACK_WAIT;
    for name in [PULL, PUSH] {
        loop {
            let info = leader_info(control, &consumer_info(name)).await;
            let done = info.as_ref().is_some_and(|info| {
                floor_of(info) >= last && info["num_ack_pending"] == 0 && info["num_pending"] == 0
            });
            if done {
                break;
            }
            if Instant::now() >= deadline {
                let seen = {
                    let consumed = lock(&consumed[name]);
                    format!(
                        "pull ends {:?}, {} deliveries, confirmed floor {}, {} confirmed",
                        consumed.pull_ends,
                        consumed.deliveries,
                        consumed.confirmed_floor(),
                        consumed.confirmed.len()
                    )
                };
                let state = info.as_ref().map(|info| {
                    format!(
                        "floor {} delivered {} num_ack_pending {} num_pending {} \
                         num_redelivered {} num_waiting {}; {}",
                        floor_of(info),
                        info["delivered"]["stream_seq"],
                        info["num_ack_pending"],
                        info["num_pending"],
                        info["num_redelivered"],
                        info["num_waiting"],
                        cluster_summary(info)
                    )
                });
                trail.fail(format!(
                    "{name} not drained to {last} in {:?}: {state:?}; {seen}",
                    SETTLE + ACK_WAIT
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        trail.note(format!("{name} drained to {last}"));
    }
    while lock(&consumed[ORDERED]).last_seq < last {
        if Instant::now() >= deadline {
            let (at, errors) = {
                let ordered = lock(&consumed[ORDERED]);
                (ordered.last_seq, ordered.errors)
            };
            trail.fail(format!(
                "{ORDERED} not drained to {last}: at {at}, {errors} errors"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    trail.note(format!("{ORDERED} drained to {last}"));
    readers.stop(trail).await;
}

/// Runs the schedule under publish and consume load, drains the consumers and checks.
async fn run(schedule: Schedule) -> Findings {
    let trail = Trail::new();
    let mut cluster = proxied_jetstream_cluster("cfaults");
    let names = node_names(&cluster);
    let control = roaming_client(&cluster, 0).await;
    create_r3_stream(&control, STREAM, "cfaults.>").await;
    create_durables(&control).await;
    let consumed: HashMap<&'static str, Shared> = [PULL, PUSH, ORDERED]
        .into_iter()
        .map(|name| (name, Shared::default()))
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let history: Arc<Mutex<History>> = Arc::default();
    let publishers =
        start_publishers(&cluster, schedule.publishers, SUBJECT, &stop, &history).await;
    let readers = Readers::start(&cluster, &consumed).await;
    let over: Arc<Mutex<Vec<String>>> = Arc::default();
    let watcher = tokio::spawn(watch_pending(
        roaming_client(&cluster, 0).await,
        stop.clone(),
        over.clone(),
    ));
    trail.note("started");
    progressed(&trail, &history, "before the first fault").await;

    let mut findings = Findings::default();
    let started = Instant::now();
    for round in 0..schedule.rounds {
        for (at, fault) in ROUND.into_iter().enumerate() {
            // The leader of one durable or the other (on ours both are the stream's leader).
            let target = if at % 2 == 0 { PULL } else { PUSH };
            let (_, infos) = settle(&trail, &control, &names, "settled before the fault").await;
            let leader = index_named(&names, &leader_name(&infos[target]));
            let follower = (leader + 1 + round % 2) % 3;
            let confirmed: Vec<(&str, u64)> = [PULL, PUSH]
                .into_iter()
                .map(|name| (name, lock(&consumed[name]).confirmed_floor()))
                .collect();
            trail.note(format!(
                "round {round} {fault:?} ({target} leader {}, follower {}), {} acked, \
                 confirmed floors {confirmed:?}",
                names[leader],
                names[follower],
                lock(&history).acked.len()
            ));
            for name in [PULL, PUSH] {
                lock(&consumed[name]).redelivered_window.clear();
            }
            fault
                .inject(&mut cluster, leader, follower, schedule.hold)
                .await;
            findings.faults += 1;
            trail.note(format!("{fault:?} healed"));
            let (_, infos) = settle(&trail, &control, &names, "settled after the fault").await;
            for (name, confirmed) in confirmed {
                let floor = floor_of(&infos[name]);
                if floor < confirmed {
                    findings.floor.push(format!(
                        "{name}: floor {floor} after {fault:?}, {confirmed} confirmed before"
                    ));
                }
            }
            progressed(
                &trail,
                &history,
                &format!("after {fault:?} in round {round}"),
            )
            .await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for publisher in publishers {
        joined(&trail, "a publisher", publisher).await;
    }
    joined(&trail, "the pending watcher", watcher).await;
    readers.stop(&trail).await;
    let took = started.elapsed();
    let (acked, indeterminate) = {
        let history = lock(&history);
        (history.acked.len(), history.indeterminate)
    };
    trail.note(format!(
        "schedule over in {took:.1?}: {acked} acked, {indeterminate} indeterminate"
    ));

    if let Err(error) = tokio::task::block_in_place(|| cluster.wait_for_mesh()) {
        trail.fail(format!("{error}\n{}", cluster.logs()));
    }
    let (stream, infos) = settle(&trail, &control, &names, "settled after the schedule").await;
    findings.floor.extend(check_still(&infos, &consumed));
    // Nothing publishes now: the healed leader's last sequence is the stream's.
    let last = stream["state"]["last_seq"].as_u64().unwrap_or(0);
    drain(&trail, &cluster, &control, &consumed, last).await;
    // Each replica leads in turn and is read: what the consumers saw against what the stream
    // holds.
    let stream = healed(&control, STREAM_INFO, &names)
        .await
        .unwrap_or_else(|error| trail.fail(format!("before reading the replicas: {error}")));
    let last = stream["state"]["last_seq"].as_u64().unwrap_or(0);
    let replicas = read_every_replica(&control, STREAM, &names, last).await;
    let stored = crate::jetstream_faults::check(&lock(&history), &replicas);
    trail.note(format!(
        "{} replicas read through {last}: {}",
        replicas.len(),
        stored.summary(findings.faults, took)
    ));
    if !stored.clean() {
        findings.stream.push(format!("{stored:#?}"));
    }
    findings.over_max_ack_pending.extend(lock(&over).drain(..));
    check(&lock(&history), &consumed, &mut findings);
    trail.note(findings.summary(took));
    if !findings.clean() {
        trail.fail(format!("{findings:#?}"));
    }
    findings
}

/// [`progress_within`], failing with the trail.
async fn progressed(trail: &Trail, history: &Mutex<History>, what: &str) {
    match progress_within(history).await {
        Ok(()) => trail.note(format!("publishes progress {what}")),
        Err(error) => trail.fail(format!("no progress {what}: {error}")),
    }
}

/// One round of each fault: must find nothing on ours. Against nats-server (the parity pass)
/// it is skipped: see [`NATS_SERVER_SKIPPED`]; the long schedule runs there by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a fault schedule, about 35 s"]
async fn a_short_fault_schedule_forgets_no_confirmed_ack() {
    if test_harness::is_reference() {
        eprintln!("skipped against nats-server: {NATS_SERVER_SKIPPED}");
        return;
    }
    let findings = run(Schedule {
        rounds: 1,
        hold: Duration::from_secs(4),
        publishers: 2,
    })
    .await;
    assert!(findings.clean());
}

/// Why the short schedule does not run in the parity pass: against nats-server 2.15.1 (two
/// runs, 2 Dec 2026) the push consumer's AckSyncs were never answered in time (its confirmed
/// floor stayed 0) and the pull consumer was not drained to the last sequence within the
/// bound after the partition of its leader. The long schedule there (4 Dec 2026, bench/README.md
/// "The long fault suites on both servers"): the push consumer delivered nothing at all, as
/// nats-server does not count the push reader's wildcard subscription as interest in its
/// deliver subject (docs/parity.md, "push consumer interest").
const NATS_SERVER_SKIPPED: &str = "nats-server 2.15.1 leaves the push consumer's AckSyncs \
    unanswered and the pull consumer undrained after a leader partition (see the long schedule)";

/// Several rounds of every fault (by hand: `cargo test -p parity --test cluster
/// consumer_faults::a_long -- --ignored --nocapture`); prints the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand for the fault figures"]
async fn a_long_fault_schedule_forgets_no_confirmed_ack() {
    let findings = run(Schedule {
        rounds: 5,
        hold: Duration::from_secs(8),
        publishers: 3,
    })
    .await;
    assert!(findings.clean());
}

mod checker_test;
mod readers;

use readers::{ack_subject_delivery, ack_subject_sequence, Readers};

//! Publishing through stream leader stepdowns (issues 15 and 20): one publisher on each node
//! publishes one message at a time, each with its own message id, while the stream's leadership
//! is stepped down [`STEPDOWNS`] times (`$JS.API.STREAM.LEADER.STEPDOWN`). Every publish is
//! acknowledged, every attempt is answered (a PubAck, "no responders" while no replica leads,
//! or a 10009 refusal: a client asks again at once after either), none waits out its timeout,
//! and the stream's sequences stay gapless and hold each message once.
//!
//! nats-server drops the publishes queued at a leader that steps down (docs/parity.md, leader
//! loss): its publishers wait out their timeout, so there the unanswered attempts are counted and
//! printed, not refused. The figures printed (the stepdown's answer, the first PubAck after it,
//! per publisher) are the ones bench/README.md compares.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::{Client, HeaderMap, RequestErrorKind};
use futures::StreamExt;
use serde_json::Value;

use crate::jetstream_assignments::answers;
use crate::jetstream_replicated::{create_r3, lock, read_all, settled_info, three_nodes};
use crate::meta::ELECTION_BOUND;

/// Stepdowns per run.
const STEPDOWNS: usize = 6;
/// An attempt unanswered this long counts as lost (ours answers every one in milliseconds).
const ACK_WAIT: Duration = Duration::from_secs(2);
/// Attempts per publish at most (refusals and "no responders" are asked again 5 ms later).
const ATTEMPTS: usize = 400;
/// Each publisher's acks after a stepdown's answer before the next stepdown.
const BETWEEN: usize = 10;
/// The stream's leadership moves within this after a stepdown is answered.
const MOVED_BOUND: Duration = Duration::from_secs(3);
/// Publishing resumes (a PubAck for an attempt sent after the request) within this after each
/// stepdown request. nats-server: 25-38 ms (debug build of the test, load 7); ours 57-213 ms.
/// At load 15-30 (session 30) a 1 s bound failed in 6 of 26 runs of ours (20 of main's binary,
/// 6 with the early subscription), at 1.07-1.84 s, with every phase of the handover stretched
/// alike (probes on the three nodes, in the failing rounds: the request reached the leader after
/// 257-540 ms, its in-flight batches committed 10-950 ms later, the transfer to the election
/// 260-450 ms, the first commit 30-310 ms), no one step stalled; nats-server's slowest
/// resumption in the runs alternated with them was 2.0 s. The
/// bound is the publishers' own timeout ([`ACK_WAIT`]): a handover slower than that is one a
/// publisher sees.
const RESUME_BOUND: Duration = ACK_WAIT;
/// The median stepdown answer comes within this. nats-server: 0.5-6 ms, medians 1.3-2.4 ms;
/// ours before the answer went ahead of the handover: 7-95 ms, medians 11-40 ms in 6 runs at
/// load 6-9 (3 of 3 failed a 10 ms bound); since, medians 3-4.3 ms there and 7.5-17 ms at load 14,
/// but 40-114 ms in 3 of 27 runs at load 13-20 (session 26), which failed a 25 ms bound. CI
/// runs at load up to 24, so this bound only catches an answer held for the handover's slow
/// paths (hundreds of ms to seconds); the quiet-machine figure is a benchmark's
/// (bench/README.md, "Publishing after a stepdown").
const ANSWER_BOUND: Duration = Duration::from_millis(250);
/// An attempt sent this long before a stepdown's request may still be crossing to the old
/// leader when it unsubscribes: lost there as on nats-server, it counts as the handover's.
const IN_FLIGHT: Duration = Duration::from_millis(250);
/// How long a request listens for a second answer.
const QUIET: Duration = Duration::from_millis(300);

/// How one attempt ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Acked(u64),
    NoResponders,
    /// An answer without a sequence (nats-server's 10009, or another error).
    Refused(u64),
    TimedOut,
}

/// One stepdown: when it was asked, answered, and the first PubAck after it came.
struct Round {
    asked: Instant,
    answered: Instant,
    resumed: Instant,
}

/// One acknowledged publish.
struct Ack {
    publisher: usize,
    payload: String,
    seq: u64,
    /// When the acknowledged attempt was sent, and when its ack came.
    sent: Instant,
    acked: Instant,
}

#[derive(Default)]
struct Record {
    acks: Vec<Ack>,
    /// Every attempt that was not acknowledged: (publisher, outcome, when sent).
    misses: Vec<(usize, Outcome, Instant)>,
}

async fn attempt(client: &Client, subject: &str, payload: &str) -> Outcome {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Msg-Id", payload);
    let request = async_nats::Request::new()
        .payload(payload.to_string().into())
        .headers(headers)
        .timeout(Some(ACK_WAIT));
    match client.send_request(subject.to_string(), request).await {
        Ok(reply) => {
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            match answer["seq"].as_u64() {
                Some(seq) if answer.get("error").is_none() => Outcome::Acked(seq),
                _ => Outcome::Refused(answer["error"]["err_code"].as_u64().unwrap_or(0)),
            }
        }
        Err(error) if error.kind() == RequestErrorKind::NoResponders => Outcome::NoResponders,
        Err(_) => Outcome::TimedOut,
    }
}

/// Publishes through `client` one message at a time until `stop`, each asked again until
/// acknowledged ([`ATTEMPTS`] at most: a publish never acknowledged fails the test).
fn publisher(
    index: usize,
    client: Client,
    stop: Arc<AtomicBool>,
    record: Arc<Mutex<Record>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let payload = format!("p{index}-{n}");
            let mut acked = false;
            for _ in 0..ATTEMPTS {
                let sent = Instant::now();
                match attempt(&client, "sdp.load", &payload).await {
                    Outcome::Acked(seq) => {
                        lock(&record).acks.push(Ack {
                            publisher: index,
                            payload: payload.clone(),
                            seq,
                            sent,
                            acked: Instant::now(),
                        });
                        acked = true;
                        break;
                    }
                    miss => {
                        lock(&record).misses.push((index, miss, sent));
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            }
            assert!(acked, "{payload} not acknowledged in {ATTEMPTS} attempts");
            n += 1;
        }
    })
}

/// Waits (bounded) until every publisher has `count` acks for attempts sent after `since`.
async fn acks_after(record: &Mutex<Record>, since: Instant, count: usize) {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let enough = (0..3).all(|publisher| {
            lock(record)
                .acks
                .iter()
                .filter(|ack| ack.publisher == publisher && ack.sent >= since)
                .count()
                >= count
        });
        if enough {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "publishing stalled after {since:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Asks `subject` through `client`: the first answer and when it came; a second answer within
/// [`QUIET`] after it fails the test.
async fn timed_answer(client: &Client, subject: &str) -> (Value, Instant) {
    let inbox = client.new_inbox();
    let mut answers = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish_with_reply(subject.to_string(), inbox, "".into())
        .await
        .expect("publish");
    let first = tokio::time::timeout(ELECTION_BOUND, answers.next())
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("{subject}: no answer"));
    let answered = Instant::now();
    let answer = serde_json::from_slice(&first.payload).unwrap_or(Value::Null);
    if let Ok(Some(second)) = tokio::time::timeout(QUIET, answers.next()).await {
        panic!("{subject}: a second answer {:?}", second.payload);
    }
    (answer, answered)
}

/// The stream's leader as STREAM.INFO through `client` names it. nats-server leaves an INFO
/// unanswered now and then while a leadership moves (see `settled_info`): asked again there;
/// ours must answer.
async fn leader(client: &Client) -> String {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let mut got = answers(client, "$JS.API.STREAM.INFO.SDP", Value::Null).await;
        if got.is_empty() && test_harness::is_reference() && Instant::now() < deadline {
            continue;
        }
        assert_eq!(
            got.len(),
            1,
            "STREAM.INFO: expected one answer, got {got:?}"
        );
        let info = got.remove(0);
        return info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    }
}

// Two holes were found with this test, both answered since. (1) A transfer-leader request
// queued ahead of the append bringing the leader's last entry to its target: the target waited
// 2 s for that entry, the transfer failed, the old leader led again and rebuilt its replica
// (968d9ce answers transfer requests beside the sender's queue). (2) A STREAM.INFO sent between
// a stepdown's answer and the successor's first answers went unanswered (about 1 run in 7; 2 of
// 2 with 50 ms added to every stream append): the old leader now keeps it and sends it again
// once the successor answers, and the successor keeps what reaches it before it leads
// (`nats-jetstream/src/api/handover.rs`; parity cluster `stepdown_reads` asks hundreds of reads
// through stepdowns). One natural failure also showed the leader's appends timing out ~1.5 s
// (not explained). bench/README.md, "Stepdowns analysed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_through_stream_stepdowns_are_all_acknowledged_gaplessly() {
    let (_cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "SDP", "sdp.>").await;
    created.assert_created();
    let deadline = Instant::now() + ELECTION_BOUND;
    while attempt(&clients[0], "sdp.warm", "warm").await != Outcome::Acked(1) {
        assert!(Instant::now() < deadline, "the stream takes no publish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled_info(&clients[0], "SDP", &names, 1).await;

    let stop = Arc::new(AtomicBool::new(false));
    let record: Arc<Mutex<Record>> = Arc::default();
    let publishers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| publisher(i, client.clone(), stop.clone(), record.clone()))
        .collect();
    acks_after(&record, Instant::now(), BETWEEN).await;

    let mut rounds: Vec<Round> = Vec::new();
    for round in 0..STEPDOWNS {
        let admin = &clients[round % 3];
        let before = leader(admin).await;
        let asked = Instant::now();
        let (answer, answered) = timed_answer(admin, "$JS.API.STREAM.LEADER.STEPDOWN.SDP").await;
        assert_eq!(answer["success"], true, "stepdown {round}: {answer}");
        let moved = loop {
            let now = leader(admin).await;
            if now != before && names.contains(&now) {
                break now;
            }
            assert!(
                answered.elapsed() < MOVED_BOUND,
                "stepdown {round}: still led by {before}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Each publisher's first ack for an attempt sent after the answer.
        acks_after(&record, answered, 1).await;
        let (resumed, firsts) = {
            let held = lock(&record);
            let since = |publisher: Option<usize>| {
                held.acks
                    .iter()
                    .filter(|ack| ack.sent >= asked && publisher.is_none_or(|p| ack.publisher == p))
                    .map(|ack| ack.acked)
                    .min()
                    .unwrap_or(asked)
            };
            let firsts: Vec<Duration> = (0..3).map(|p| since(Some(p)) - asked).collect();
            (since(None), firsts)
        };
        println!(
            "stepdown {round}: {before} -> {moved}, answered in {:?}, publishing resumed {:?} \
             after the request, first PubAck per publisher {firsts:?}",
            answered - asked,
            resumed - asked,
        );
        rounds.push(Round {
            asked,
            answered,
            resumed,
        });
        acks_after(&record, Instant::now(), BETWEEN).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in publishers {
        task.await.expect("publisher");
    }

    let record = std::mem::take(&mut *lock(&record));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (_, outcome, _) in &record.misses {
        *counts.entry(format!("{outcome:?}")).or_default() += 1;
    }
    // Unanswered attempts, each with whether it was sent while no replica took publishes yet
    // (from a stepdown's request until the first PubAck after it).
    let mut outside = Vec::new();
    for (publisher, outcome, sent) in &record.misses {
        if *outcome != Outcome::TimedOut {
            continue;
        }
        let round = rounds
            .iter()
            .enumerate()
            .rev()
            .find(|(_, r)| r.asked <= *sent);
        let in_window = rounds
            .iter()
            .any(|r| r.asked <= *sent + IN_FLIGHT && *sent < r.resumed);
        match round {
            Some((n, r)) => println!(
                "publisher {publisher}: attempt unanswered, sent {:?} after stepdown {n}'s \
                 request (answered after {:?}, publishing resumed after {:?})",
                *sent - r.asked,
                r.answered - r.asked,
                r.resumed - r.asked
            ),
            None => println!("publisher {publisher}: attempt unanswered before any stepdown"),
        }
        if !in_window {
            outside.push((*publisher, *sent));
        }
    }
    let mut answers: Vec<Duration> = rounds.iter().map(|r| r.answered - r.asked).collect();
    answers.sort();
    let median_answer = answers[answers.len() / 2];
    let slowest_resume = rounds
        .iter()
        .map(|r| r.resumed - r.asked)
        .max()
        .unwrap_or_default();
    println!(
        "{} publishes acknowledged through {STEPDOWNS} stepdowns; attempts not acknowledged: \
         {counts:?}; stepdown answers {answers:?} (median {median_answer:?}); slowest resumption \
         {slowest_resume:?}",
        record.acks.len()
    );

    // Gapless: the acked sequences are 2..=N+1 (1 is the warm-up), each payload once.
    let mut by_seq: BTreeMap<u64, &str> = BTreeMap::new();
    for ack in &record.acks {
        let previous = by_seq.insert(ack.seq, &ack.payload);
        assert!(
            previous.is_none(),
            "seq {} acknowledged for {previous:?} and {}",
            ack.seq,
            ack.payload
        );
    }
    let last = 1 + record.acks.len() as u64;
    let expected: Vec<u64> = (2..=last).collect();
    assert_eq!(by_seq.keys().copied().collect::<Vec<_>>(), expected);
    settled_info(&clients[0], "SDP", &names, last).await;
    let stored = read_all(&clients[0], "SDP", last).await;
    for (seq, payload) in &by_seq {
        assert_eq!(
            stored.get(seq).map(String::as_str),
            Some(*payload),
            "seq {seq}"
        );
    }

    if !test_harness::is_reference() {
        // nats-server drops what crossed its leader's unsubscription too, and more (attempts
        // sent seconds after its answer went unanswered): held to this on ours only.
        assert!(
            outside.is_empty(),
            "attempts unanswered for {ACK_WAIT:?} outside the stepdowns' handovers: {outside:?}"
        );
        assert!(
            slowest_resume <= RESUME_BOUND,
            "publishing resumed {slowest_resume:?} after a stepdown"
        );
        assert!(
            median_answer <= ANSWER_BOUND,
            "stepdown answers {answers:?}: median above {ANSWER_BOUND:?}"
        );
    }
}

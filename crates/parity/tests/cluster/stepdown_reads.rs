//! Reads through stream leader stepdowns (issues 15 and 20): STREAM.INFO and STREAM.MSG.GET are
//! asked every few milliseconds through each node while the stream's leadership is stepped down
//! [`STEPDOWNS`] times. Each read is answered (all but [`UNANSWERED_BOUND`]), and never twice:
//! between the stepdown's answer and the successor's first answers (20-330 ms) the old leader
//! keeps the reads that reach it and sends them again once the successor answers
//! (`nats-jetstream/src/api/handover.rs`); a successor that already answered one stays silent
//! for its copy.
//!
//! nats-server leaves some of these reads unanswered while a leadership moves (docs/parity.md,
//! leader loss): there they are counted and printed, not asserted. No read may be answered
//! twice on either.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::Value;

use crate::jetstream_assignments::one_answer;
use crate::jetstream_replicated::{create_r3, settled_info, three_nodes_of};
use crate::meta::{start_debug, ELECTION_BOUND};

/// Stepdowns per run.
const STEPDOWNS: usize = 3;
/// Each client asks a read this often (STREAM.INFO and STREAM.MSG.GET in turn).
const EVERY: Duration = Duration::from_millis(20);
/// Reads go on this long after each stepdown's answer before the next stepdown.
const BETWEEN: Duration = Duration::from_millis(1500);
/// A read unanswered this long counts as unanswered (ours sends a kept read again within
/// its 8 s bound at the latest).
const FIRST_ANSWER: Duration = Duration::from_secs(10);
/// How long a read listens for a second answer after its first.
const QUIET: Duration = Duration::from_millis(300);
/// Reads left unanswered that ours may still have in a run (of about 1,200). Before the kept
/// reads 90-175 were (nats-server 2.15.1: 9-30). Since, 0 in most runs, but 1 in 1 of 6 at load
/// 6-9 (4 Dec, lead): a STREAM.INFO sent 58 ms after a stepdown's request, not yet explained (a
/// read reaching the successor before it knows it won, and the old leader after its handover
/// ended?). Double answers stay forbidden outright.
const UNANSWERED_BOUND: usize = 2;

/// How one read ended: how many answers it got, the first's body, and when it was sent.
struct Read {
    subject: &'static str,
    /// Its reply subject, as the nodes' debug lines name it.
    inbox: String,
    sent: Instant,
    answers: Vec<Value>,
}

async fn read(client: Client, subject: &'static str, body: &'static str) -> Read {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.expect("subscribe");
    let sent = Instant::now();
    client
        .publish_with_reply(subject, inbox.clone(), body.into())
        .await
        .expect("publish");
    client.flush().await.expect("flush");
    let mut answers = Vec::new();
    let mut wait = FIRST_ANSWER;
    while let Ok(Some(message)) = tokio::time::timeout(wait, replies.next()).await {
        answers.push(serde_json::from_slice(&message.payload).unwrap_or(Value::Null));
        wait = QUIET;
    }
    Read {
        subject,
        inbox,
        sent,
        answers,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_through_stream_stepdowns_are_answered_once() {
    reads_through_stepdowns(Pace::Apart).await;
}

/// Each stepdown as soon as the previous one's successor answers: a successor hands its
/// leadership on again while its predecessor still keeps reads, whose copies then reach a
/// server handing over (kept again there, `handover.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_through_quick_successive_stepdowns_are_answered_once() {
    reads_through_stepdowns(Pace::Quick).await;
}

/// How the stepdowns follow each other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// [`BETWEEN`] after the previous one's answer.
    Apart,
    /// Once the previous one's successor answers STREAM.INFO (a stepdown reaching it earlier
    /// is its predecessor's, `clustered::leader_stepdown`).
    Quick,
}

/// The leader STREAM.INFO names once it names another than `previous`.
async fn next_leader(client: &Client, previous: &str) -> String {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let asked = client.request("$JS.API.STREAM.INFO.SDR", "".into());
        if let Ok(Ok(message)) = tokio::time::timeout(FIRST_ANSWER, asked).await {
            let info: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
            let leader = info["cluster"]["leader"].as_str().unwrap_or("");
            if !leader.is_empty() && leader != previous {
                return leader.to_string();
            }
        }
        assert!(Instant::now() < deadline, "no leader after {previous}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn reads_through_stepdowns(pace: Pace) {
    let (_cluster, names, clients) = three_nodes_of(start_debug(3)).await;
    let (created, _) = create_r3(&clients[0], "SDR", "sdr.>").await;
    created.assert_created();
    let deadline = Instant::now() + ELECTION_BOUND;
    while clients[0].request("sdr.one", "one".into()).await.is_err() {
        assert!(Instant::now() < deadline, "the stream takes no publish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let info = settled_info(&clients[0], "SDR", &names, 1).await;
    let mut leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();

    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = clients
        .iter()
        .map(|client| {
            let client = client.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut reads = Vec::new();
                let mut tick = tokio::time::interval(EVERY);
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let (subject, body) = if n.is_multiple_of(2) {
                        ("$JS.API.STREAM.INFO.SDR", "")
                    } else {
                        ("$JS.API.STREAM.MSG.GET.SDR", r#"{"seq":1}"#)
                    };
                    n += 1;
                    reads.push(tokio::spawn(read(client.clone(), subject, body)));
                }
                let mut done = Vec::new();
                for read in reads {
                    done.push(read.await.expect("read"));
                }
                done
            })
        })
        .collect();

    let mut stepdowns = Vec::new();
    for round in 0..STEPDOWNS {
        if pace == Pace::Apart || round == 0 {
            tokio::time::sleep(BETWEEN).await;
        } else {
            leader = next_leader(&clients[0], &leader).await;
        }
        let asked = Instant::now();
        let answer = one_answer(
            &clients[round % 3],
            "$JS.API.STREAM.LEADER.STEPDOWN.SDR",
            Value::Null,
        )
        .await;
        assert_eq!(answer["success"], true, "stepdown {round}: {answer}");
        stepdowns.push(asked);
    }
    tokio::time::sleep(BETWEEN).await;
    stop.store(true, Ordering::Relaxed);

    let mut total = 0;
    let mut unanswered = Vec::new();
    for (node, reader) in readers.into_iter().enumerate() {
        for read in reader.await.expect("reader") {
            total += 1;
            let since = stepdowns
                .iter()
                .rev()
                .find(|asked| **asked <= read.sent)
                .map(|asked| read.sent - *asked);
            assert!(
                read.answers.len() <= 1,
                "{} ({}) through node {node}, sent {since:?} after a stepdown's request: \
                 answered {} times: {:?}",
                read.subject,
                read.inbox,
                read.answers.len(),
                read.answers
            );
            match read.answers.first() {
                None => unanswered.push(format!(
                    "{} ({}) through node {node}, sent {since:?} after a stepdown's request",
                    read.subject, read.inbox
                )),
                Some(answer) if !test_harness::is_reference() => assert!(
                    answer.get("error").is_none(),
                    "{} through node {node}: {answer}",
                    read.subject
                ),
                Some(_) => {}
            }
        }
    }
    println!(
        "{total} reads through {STEPDOWNS} stepdowns, {} unanswered: {unanswered:#?}",
        unanswered.len()
    );
    if !test_harness::is_reference() {
        assert!(
            unanswered.len() <= UNANSWERED_BOUND,
            "unanswered reads: {unanswered:#?}"
        );
    }
}

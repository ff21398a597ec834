//! A meta leader killed (`kill -9`) and started again on the same store while clients keep
//! sending meta-only requests (STREAM.CREATE of an existing stream, STREAM.NAMES, ACCOUNT.INFO,
//! STREAM.INFO of a stream that does not exist): every request gets at most one answer.
//!
//! On ours the restarted server comes back a follower holding the vote it cast for itself
//! before the kill, and campaigns with a pre-vote as soon as it reaches a peer (refused here:
//! the others elected another leader meanwhile); it must not answer as the meta leader (nor
//! with 10008) before a quorum confirmed it. A nats-server restarts as a follower. The requests go through the two servers that stay up,
//! from before the restart until the three agree on one leader again; each on its own reply
//! subject, counted with one raw subscription.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::jetstream_assignments::connect;
use crate::meta::{agreed_leader, index_of, start, ELECTION_BOUND};

/// Time between two requests of one sender (a double answer lasts 100-200 ms on ours).
const PACE: Duration = Duration::from_millis(5);
/// How long the answers subscription listens after the last request.
const QUIET: Duration = Duration::from_secs(2);
/// Requests sent after the three agree again (the restarted server is routed to the others).
const AFTER: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_meta_leader_never_answers_beside_the_new_one() {
    let mut cluster = start(3);
    let old = agreed_leader(&cluster, &[0, 1, 2], 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let victim = index_of(&cluster, &old);
    let others: Vec<usize> = (0..3).filter(|&i| i != victim).collect();
    let client = connect(&cluster, others[0]).await;
    // A stream to create again and again (identical config: answered with its info).
    let stream = json!({"name": "ONCE", "subjects": ["once.>"], "storage": "memory"});
    let created = crate::jetstream_assignments::one_answer(
        &client,
        "$JS.API.STREAM.CREATE.ONCE",
        stream.clone(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");

    cluster.kill9(victim);
    agreed_leader(&cluster, &others, 3, Some(&old))
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));

    let mut answers = client.subscribe("ANSWERS.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::new();
    for (sender, &through) in others.iter().enumerate() {
        let client = connect(&cluster, through).await;
        let (stop, stream) = (stop.clone(), stream.clone());
        senders.push(tokio::spawn(async move {
            let body = serde_json::to_vec(&stream).expect("json");
            let requests: [(&str, Vec<u8>); 4] = [
                ("$JS.API.STREAM.CREATE.ONCE", body),
                ("$JS.API.STREAM.NAMES", Vec::new()),
                ("$JS.API.INFO", Vec::new()),
                ("$JS.API.STREAM.INFO.MISSING", Vec::new()),
            ];
            let mut n: u64 = 0;
            let mut after_stop = 0;
            while after_stop < AFTER {
                if stop.load(Ordering::Acquire) {
                    after_stop += 1;
                }
                let (subject, payload) = &requests[(n % 4) as usize];
                let reply = format!("ANSWERS.{sender}.{n}");
                client
                    .publish_with_reply(subject.to_string(), reply, payload.clone().into())
                    .await
                    .expect("publish");
                n += 1;
                tokio::time::sleep(PACE).await;
            }
            client.flush().await.expect("flush");
            n
        }));
    }

    let started = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.restart(victim);
        cluster
            .wait_for_mesh()
            .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
        agreed_leader(&cluster, &[0, 1, 2], 3, None)
            .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    });
    stop.store(true, Ordering::Release);
    let mut sent = 0;
    for sender in senders {
        sent += sender.await.expect("sender");
    }

    let mut counts: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    let deadline = Instant::now() + ELECTION_BOUND;
    while let Ok(Some(message)) = tokio::time::timeout(QUIET, answers.next()).await {
        let entry = counts.entry(message.subject.to_string()).or_default();
        entry.0 += 1;
        entry.1.push(
            String::from_utf8_lossy(&message.payload)
                .chars()
                .take(160)
                .collect(),
        );
        assert!(Instant::now() < deadline, "answers never ended");
    }
    let doubled: Vec<(&String, &(usize, Vec<String>))> =
        counts.iter().filter(|(_, (count, _))| *count > 1).collect();
    eprintln!(
        "restarted meta leader: {sent} requests over {} ms, {} answered, {} answered more than once",
        started.elapsed().as_millis(),
        counts.len(),
        doubled.len()
    );
    assert!(
        doubled.is_empty(),
        "requests answered more than once: {doubled:#?}\n{}",
        cluster.logs()
    );
    // The requests sent once all three agreed again were answered (the test saw a working
    // meta group, not only silence).
    assert!(
        counts.len() as u64 >= AFTER,
        "only {} of {sent} answered",
        counts.len()
    );
}

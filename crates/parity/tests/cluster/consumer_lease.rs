//! A push consumer's leader paused (SIGSTOP) past an election, its successor redelivering and
//! confirming every ack (AckSync answered), then the paused leader resumed: no delivery of a
//! confirmed message may reach the client afterwards (issue 20: an answered ack is never
//! forgotten). The consumer fault suite counted 0-2 such deliveries per short run, read
//! through a leader that had been paused or cut off.
//!
//! On resume the old leader's ack deadlines have all passed, so its consumer would redeliver
//! everything at once, before its leadership watch has run and stopped it. rnats' replicated
//! consumers deliver only while their leader's lease holds (nats-raft `lease.rs`: the quorum's
//! last word, by the clock), which ran out during the pause.
//!
//! On rnats the consumer's leader is its stream's leader; on nats-server the test pauses
//! whichever server CONSUMER.INFO names as the consumer's leader. All-rnats clusters normally;
//! all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::jetstream_consumers_replicated::{
    acked_sequence, led_answer, settled_consumer, with_durable,
};
use crate::meta::{index_of, ELECTION_BOUND};

const MESSAGES: u64 = 40;
/// Short, so the paused leader's deadlines have all passed when it resumes.
const ACK_WAIT: Duration = Duration::from_secs(1);
/// How long an AckSync waits for its answer.
const ANSWER: Duration = Duration::from_secs(2);
/// How long deliveries are watched after the paused leader resumes: it has rejoined (it
/// applies the new leader's entries) well within it.
const AFTER_RESUME: Duration = Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_leader_does_not_deliver_what_its_successor_confirmed() {
    let (mut cluster, names, clients) = with_durable(
        json!({"name": "LEASE", "subjects": ["lease.in.>"], "num_replicas": 3, "storage": "file"}),
        json!({
            "durable_name": "PUSHER",
            "ack_policy": "explicit",
            "deliver_subject": "lease.out",
            "ack_wait": ACK_WAIT.as_nanos() as u64,
        }),
    )
    .await;
    let info = settled_consumer(&clients[0], "LEASE", "PUSHER", &names).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let paused = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != paused).unwrap_or(0);
    let client = clients[survivor].clone();
    let mut deliveries = client.subscribe("lease.out").await.expect("subscribe");
    client.flush().await.expect("flush");
    let jetstream = async_nats::jetstream::new(client.clone());
    for n in 1..=MESSAGES {
        jetstream
            .publish("lease.in.item", format!("item-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
    }
    // Every message delivered once by the leader, none acked: all pending there.
    let mut delivered = BTreeSet::new();
    while (delivered.len() as u64) < MESSAGES {
        let message = tokio::time::timeout(Duration::from_secs(10), deliveries.next())
            .await
            .unwrap_or_else(|_| panic!("only {delivered:?} delivered"))
            .expect("subscription");
        if let Some(reply) = message.reply {
            delivered.insert(acked_sequence(&reply));
        }
    }

    cluster.pause(paused);
    let paused_at = Instant::now();
    // The next leader delivers each again (its ack wait having passed) and confirms its ack.
    let mut confirmed = BTreeSet::new();
    let deadline = paused_at + ELECTION_BOUND;
    while (confirmed.len() as u64) < MESSAGES {
        let wait = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(wait, deliveries.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {confirmed:?} confirmed by the next leader\n{}",
                    cluster.logs()
                )
            })
            .expect("subscription");
        let Some(reply) = message.reply.map(|reply| reply.to_string()) else {
            continue;
        };
        let seq = acked_sequence(&reply);
        if confirmed.contains(&seq) {
            continue;
        }
        let answered = tokio::time::timeout(ANSWER, client.request(reply, "".into())).await;
        if matches!(answered, Ok(Ok(_))) {
            confirmed.insert(seq);
        }
    }
    let took_over = paused_at.elapsed();
    // Copies the next leader sent before an ack reached it (its own ack wait ran out while the
    // acks went one by one: a loaded machine, the lead's CI run on adb1b0a, 15 such copies with
    // delivery count 3) are still on their way: read them before the resume, until the
    // subscription has been quiet for longer than an ack wait. The next leader never sends a
    // confirmed message again, so anything after that is the resumed leader's.
    let quiet = ACK_WAIT + Duration::from_millis(500);
    let drain_deadline = Instant::now() + ELECTION_BOUND;
    let mut stale = 0;
    while Instant::now() < drain_deadline {
        match tokio::time::timeout(quiet, deliveries.next()).await {
            Ok(Some(_)) => stale += 1,
            _ => break,
        }
    }

    cluster.resume(paused);
    let resumed_at = Instant::now();
    let mut forgotten = Vec::new();
    while let Some(wait) = (resumed_at + AFTER_RESUME).checked_duration_since(Instant::now()) {
        let Ok(Some(message)) = tokio::time::timeout(wait, deliveries.next()).await else {
            break;
        };
        let Some(reply) = message.reply.map(|reply| reply.to_string()) else {
            continue;
        };
        if confirmed.contains(&acked_sequence(&reply)) {
            forgotten.push(reply);
        }
    }
    println!(
        "the next leader confirmed all {MESSAGES} acks {took_over:?} after the pause \
         ({stale} copies sent before their acks read after); {} deliveries of confirmed \
         messages after the resume",
        forgotten.len()
    );
    assert!(
        forgotten.is_empty(),
        "{} deliveries of confirmed messages after {leader} resumed: {forgotten:?}",
        forgotten.len()
    );
    // The consumer keeps every confirmed ack (asked again while its group settles).
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let subject = "$JS.API.CONSUMER.INFO.LEASE.PUSHER";
        let info = led_answer(&client, subject, Value::Null, deadline).await;
        if info["ack_floor"]["stream_seq"] == MESSAGES && info["num_ack_pending"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "acks kept: {info}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

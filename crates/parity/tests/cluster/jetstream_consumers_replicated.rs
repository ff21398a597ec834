//! Durable consumers of an R3 stream survive their leader's `kill -9` (issue 20): a pull
//! consumer used through a node that does not lead it, messages fetched and AckSync'ed, the
//! consumer's leader killed; then, through a survivor, the consumer's ack floor is never below
//! what was confirmed, no confirmed-acked message comes again, every unacked one does (at least
//! once), and fetching resumes within a bound.
//!
//! On rnats the consumer's leader is its stream's leader (one group per stream); on nats-server
//! each consumer has its own group, so the test kills whichever server CONSUMER.INFO names as
//! the consumer's leader. All-rnats clusters normally; all-nats-server clusters in the parity
//! pass (`NATS_SERVER_BIN`), where every assertion holds too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::jetstream_assignments::{error_code, leader_of, one_answer};
use crate::jetstream_replicated::names_of;
use crate::meta::{index_of, start, ELECTION_BOUND};
use crate::support::connect_all;
use async_nats::jetstream::consumer::PullConsumer;
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};

/// Messages published, fetched before the kill, and confirmed (AckSync) of those.
const PUBLISHED: u64 = 20;
const FETCHED: u64 = 10;
const CONFIRMED: u64 = 6;
/// The consumer's ack wait: unacked messages come again this long after their delivery.
const ACK_WAIT: Duration = Duration::from_secs(2);

/// Waits until CONSUMER.INFO through `client` names a leader among `names` with every other
/// replica current; returns that answer.
async fn settled_consumer(client: &Client, stream: &str, name: &str, names: &[String]) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    let subject = format!("$JS.API.CONSUMER.INFO.{stream}.{name}");
    loop {
        let info = one_answer(client, &subject, Value::Null).await;
        let leader = info["cluster"]["leader"].as_str().unwrap_or("");
        let settled = names.iter().any(|known| known == leader)
            && info["cluster"]["replicas"]
                .as_array()
                .is_some_and(|replicas| {
                    replicas.len() == names.len() - 1
                        && replicas.iter().all(|replica| replica["current"] == true)
                });
        if settled {
            return info;
        }
        assert!(Instant::now() < deadline, "{name} did not settle: {info}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The stream sequence of a delivered message, from its ack subject.
fn stream_sequence(message: &async_nats::jetstream::Message) -> u64 {
    message.info().map(|info| info.stream_sequence).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_confirmed_before_the_leader_is_killed_are_kept_by_the_next_one() {
    let mut cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let clients = connect_all(&cluster).await;
    let created = one_answer(
        &clients[0],
        "$JS.API.STREAM.CREATE.ACKS",
        json!({"name": "ACKS", "subjects": ["acks.>"], "num_replicas": 3, "storage": "file"}),
    )
    .await;
    assert_eq!(created["did_create"], true, "{created}");
    let consumer = one_answer(
        &clients[0],
        "$JS.API.CONSUMER.DURABLE.CREATE.ACKS.WORKER",
        json!({"stream_name": "ACKS", "config": {
            "durable_name": "WORKER",
            "ack_policy": "explicit",
            "ack_wait": ACK_WAIT.as_nanos() as u64,
        }}),
    )
    .await;
    assert_eq!(error_code(&consumer), 0, "{consumer}");
    let info = settled_consumer(&clients[0], "ACKS", "WORKER", &names).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let doomed = index_of(&cluster, &leader);
    // Published, fetched and acknowledged through a node that does not lead the consumer.
    let through = (0..3).find(|&i| i != doomed).unwrap_or(0);
    let client = clients[through].clone();
    let jetstream = async_nats::jetstream::new(client.clone());
    for n in 1..=PUBLISHED {
        let ack = jetstream
            .publish("acks.item", format!("item-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
        assert_eq!(ack.sequence, n);
    }
    let stream = jetstream.get_stream("ACKS").await.expect("stream");
    let consumer: PullConsumer = stream.get_consumer("WORKER").await.expect("consumer");
    let mut fetched = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (fetched.len() as u64) < FETCHED {
        assert!(Instant::now() < deadline, "fetched only {}", fetched.len());
        let mut batch = consumer
            .fetch()
            .max_messages(FETCHED as usize - fetched.len())
            .expires(Duration::from_secs(1))
            .messages()
            .await
            .expect("fetch");
        while let Some(message) = batch.next().await {
            fetched.push(message.expect("message"));
        }
    }
    let mut confirmed = BTreeSet::new();
    for message in fetched.iter().take(CONFIRMED as usize) {
        message.double_ack().await.expect("AckSync confirmed");
        confirmed.insert(stream_sequence(message));
    }
    let unacked: BTreeSet<u64> = fetched
        .iter()
        .skip(CONFIRMED as usize)
        .map(stream_sequence)
        .collect();
    let before = one_answer(&client, "$JS.API.CONSUMER.INFO.ACKS.WORKER", Value::Null).await;
    let floor_before = before["ack_floor"]["stream_seq"].as_u64().unwrap_or(0);
    assert_eq!(floor_before, CONFIRMED, "{before}");

    cluster.kill9(doomed);
    let killed_at = Instant::now();

    // Through the same survivor: everything not confirmed comes (again), nothing confirmed does.
    let mut wanted: BTreeSet<u64> = unacked.clone();
    wanted.extend(FETCHED + 1..=PUBLISHED);
    let mut first_after: Option<Duration> = None;
    let mut seen_again = Vec::new();
    let deadline = killed_at + ELECTION_BOUND + ACK_WAIT;
    while !wanted.is_empty() {
        assert!(
            Instant::now() < deadline,
            "still missing {wanted:?} {:?} after the kill\n{}",
            killed_at.elapsed(),
            cluster.logs()
        );
        let batch = consumer
            .fetch()
            .max_messages(PUBLISHED as usize)
            .expires(Duration::from_secs(1))
            .messages()
            .await;
        let Ok(mut batch) = batch else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        while let Some(message) = batch.next().await {
            // No responders, a leadership change, a timeout: ask again.
            let Ok(message) = message else { break };
            let seq = stream_sequence(&message);
            first_after.get_or_insert_with(|| killed_at.elapsed());
            seen_again.push(seq);
            wanted.remove(&seq);
            if message.double_ack().await.is_err() {
                // Not confirmed: it may come again, which at-least-once allows.
                wanted.insert(seq);
            }
        }
    }
    println!(
        "first delivery {:?} after the leader's kill -9; delivered after it: {seen_again:?}",
        first_after.unwrap_or_default()
    );
    let again: Vec<&u64> = seen_again
        .iter()
        .filter(|seq| confirmed.contains(seq))
        .collect();
    assert!(
        again.is_empty(),
        "confirmed acks forgotten: {again:?} came again"
    );

    let after = one_answer(&client, "$JS.API.CONSUMER.INFO.ACKS.WORKER", Value::Null).await;
    let new_leader = after["cluster"]["leader"].as_str().unwrap_or("");
    assert!(
        new_leader != leader && names.iter().any(|name| name == new_leader),
        "{after}"
    );
    assert!(
        after["ack_floor"]["stream_seq"].as_u64().unwrap_or(0) >= floor_before,
        "{after}"
    );
    assert_eq!(after["ack_floor"]["stream_seq"], PUBLISHED, "{after}");
    assert_eq!(after["num_ack_pending"], 0, "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_leader_stepdown_keeps_its_acks_and_tells_waiting_pulls() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let clients = connect_all(&cluster).await;
    let client = &clients[0];
    let created = one_answer(
        client,
        "$JS.API.STREAM.CREATE.STEP",
        json!({"name": "STEP", "subjects": ["step.>"], "num_replicas": 3}),
    )
    .await;
    assert_eq!(created["did_create"], true, "{created}");
    let consumer = one_answer(
        client,
        "$JS.API.CONSUMER.DURABLE.CREATE.STEP.PULLER",
        json!({"stream_name": "STEP", "config": {"durable_name": "PULLER", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(error_code(&consumer), 0, "{consumer}");
    let before = settled_consumer(client, "STEP", "PULLER", &names).await;
    let old_leader = before["cluster"]["leader"]
        .as_str()
        .unwrap_or("")
        .to_string();

    // Two messages fetched and confirmed, then a pull request left waiting.
    let jetstream = async_nats::jetstream::new(client.clone());
    for n in 1..=2 {
        jetstream
            .publish("step.item", format!("item-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
    }
    let stream = jetstream.get_stream("STEP").await.expect("stream");
    let puller: PullConsumer = stream.get_consumer("PULLER").await.expect("consumer");
    let mut confirmed = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while confirmed < 2 {
        assert!(Instant::now() < deadline, "confirmed only {confirmed}");
        let mut batch = puller
            .fetch()
            .max_messages(2 - confirmed)
            .expires(Duration::from_secs(1))
            .messages()
            .await
            .expect("fetch");
        while let Some(message) = batch.next().await {
            message.expect("message").double_ack().await.expect("ack");
            confirmed += 1;
        }
    }
    let inbox = client.new_inbox();
    let mut waiting = client.subscribe(inbox.clone()).await.expect("subscribe");
    let pull = json!({"batch": 1, "expires": Duration::from_secs(30).as_nanos() as u64});
    client
        .publish_with_reply(
            "$JS.API.CONSUMER.MSG.NEXT.STEP.PULLER",
            inbox,
            pull.to_string().into(),
        )
        .await
        .expect("pull");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = one_answer(client, "$JS.API.CONSUMER.INFO.STEP.PULLER", Value::Null).await;
        if info["num_waiting"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pull request not waiting: {info}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let stepped = one_answer(
        client,
        "$JS.API.CONSUMER.LEADER.STEPDOWN.STEP.PULLER",
        Value::Null,
    )
    .await;
    assert_eq!(stepped["success"], true, "{stepped}");
    assert_eq!(
        stepped["type"], "io.nats.jetstream.api.v1.consumer_leader_stepdown_response",
        "{stepped}"
    );
    let status = tokio::time::timeout(Duration::from_secs(15), waiting.next())
        .await
        .expect("the waiting pull request heard nothing")
        .expect("subscription");
    let headers = status
        .headers
        .as_ref()
        .map(|headers| format!("{headers:?}"));
    assert_eq!(
        status.status.map(|code| code.as_u16()),
        Some(409),
        "{headers:?}"
    );
    assert_eq!(
        status.description.as_deref(),
        Some("Leadership Change"),
        "{headers:?}"
    );

    // Another leader, the confirmed acks kept; the consumer delivers what comes next.
    let deadline = Instant::now() + ELECTION_BOUND;
    let after = loop {
        let info = settled_consumer(client, "STEP", "PULLER", &names).await;
        if info["cluster"]["leader"] != old_leader.as_str() {
            break info;
        }
        assert!(Instant::now() < deadline, "leader unchanged: {info}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(after["ack_floor"]["stream_seq"], 2, "{after}");
    assert_eq!(after["num_ack_pending"], 0, "{after}");
    jetstream
        .publish("step.item", "item-3".into())
        .await
        .expect("publish")
        .await
        .expect("puback");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "item-3 never delivered");
        let Ok(mut batch) = puller
            .fetch()
            .max_messages(1)
            .expires(Duration::from_secs(1))
            .messages()
            .await
        else {
            continue;
        };
        if let Some(Ok(message)) = batch.next().await {
            assert_eq!(stream_sequence(&message), 3);
            message.double_ack().await.expect("ack");
            break;
        }
    }
}

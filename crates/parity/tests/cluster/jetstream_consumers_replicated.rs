//! Durable consumers of an R3 stream survive their leader's `kill -9` (issue 20): a pull
//! consumer used through a node that does not lead it, messages fetched and AckSync'ed, the
//! consumer's leader killed; then, through a survivor, the consumer's ack floor is never below
//! what was confirmed, no confirmed-acked message comes again, every unacked one does (at least
//! once), and fetching resumes within a bound; the killed server, restarted, leads the consumer
//! again with every ack. Also: a push consumer's unacked messages come again from the next
//! leader and its confirmed ones do not; a consumer leader stepdown keeps the acks and tells a
//! waiting pull request `409 Leadership Change`; an interest stream keeps what its consumer has
//! not acknowledged across a leader kill.
//!
//! On rnats the consumer's leader is its stream's leader (one group per stream); on nats-server
//! each consumer has its own group, so the test kills whichever server CONSUMER.INFO names as
//! the consumer's leader. All-rnats clusters normally; all-nats-server clusters in the parity
//! pass (`NATS_SERVER_BIN`), where every assertion holds too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::jetstream_assignments::{answers, error_code, leader_of, one_answer, Answered};
use crate::jetstream_replicated::{names_of, publish_until_acked};
use crate::meta::{index_of, start, ELECTION_BOUND};
use crate::support::connect_all;
use async_nats::jetstream::consumer::PullConsumer;
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

/// Messages published, fetched before the kill, and confirmed (AckSync) of those.
const PUBLISHED: u64 = 20;
const FETCHED: u64 = 10;
const CONFIRMED: u64 = 6;
/// The consumer's ack wait: unacked messages come again this long after their delivery.
const ACK_WAIT: Duration = Duration::from_secs(2);

/// Waits until CONSUMER.INFO through `client` names a leader among `names` with every other
/// replica current; returns that answer.
pub(crate) async fn settled_consumer(
    client: &Client,
    stream: &str,
    name: &str,
    names: &[String],
) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    let subject = format!("$JS.API.CONSUMER.INFO.{stream}.{name}");
    loop {
        let info = led_answer(client, &subject, Value::Null, deadline).await;
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

/// The single answer to a request about a replicated stream, asked again while nobody answers:
/// a group may be between leaders (just after it formed, or after a kill), and nobody answers
/// then, on either server.
pub(crate) async fn led_answer(
    client: &Client,
    subject: &str,
    body: Value,
    deadline: Instant,
) -> Value {
    led_answered(client, subject, body, deadline).await.answer
}

/// [`led_answer`], with how many attempts went unanswered.
async fn led_answered(client: &Client, subject: &str, body: Value, deadline: Instant) -> Answered {
    let mut unanswered = 0;
    loop {
        let mut got = answers(client, subject, body.clone()).await;
        if !got.is_empty() {
            assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
            let answer = got.remove(0);
            return Answered {
                asked: body,
                answer,
                unanswered,
            };
        }
        assert!(Instant::now() < deadline, "{subject}: never answered");
        unanswered += 1;
    }
}

/// One fetch of at most `max` messages, waiting up to a second: what arrived before the end
/// or an error (no responders, a leadership change, a timeout); nothing when the request
/// failed (after a pause, so a retrying caller does not spin).
async fn fetch_some(consumer: &PullConsumer, max: usize) -> Vec<async_nats::jetstream::Message> {
    let batch = consumer
        .fetch()
        .max_messages(max)
        .expires(Duration::from_secs(1))
        .messages()
        .await;
    let Ok(mut batch) = batch else {
        tokio::time::sleep(Duration::from_millis(100)).await;
        return Vec::new();
    };
    let mut got = Vec::new();
    while let Some(Ok(message)) = batch.next().await {
        got.push(message);
    }
    got
}

/// A 3-node cluster with an R3 stream (`stream`) and a durable consumer of it (`consumer`, its
/// config), created through node 0: the cluster, the servers' names, a client per node.
pub(crate) async fn with_durable(
    stream: Value,
    consumer: Value,
) -> (Cluster, Vec<String>, Vec<Client>) {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let clients = connect_all(&cluster).await;
    let stream_name = stream["name"].as_str().unwrap_or("").to_string();
    let durable = consumer["durable_name"].as_str().unwrap_or("").to_string();
    // nats-server refuses placement (10005, peer offline) until its meta leader has heard
    // from every server since it started: asked again then.
    let deadline = Instant::now() + ELECTION_BOUND;
    let created = loop {
        let created = led_answered(
            &clients[0],
            &format!("$JS.API.STREAM.CREATE.{stream_name}"),
            stream.clone(),
            deadline,
        )
        .await;
        if error_code(&created.answer) != 10005 || Instant::now() > deadline {
            break created;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    created.assert_created();
    // The same create again is answered as the first (an identical consumer).
    let created = led_answer(
        &clients[0],
        &format!("$JS.API.CONSUMER.DURABLE.CREATE.{stream_name}.{durable}"),
        json!({"stream_name": stream_name, "config": consumer}),
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert_eq!(error_code(&created), 0, "{created}");
    (cluster, names, clients)
}

/// The stream sequence of a delivered message, from its ack subject.
fn stream_sequence(message: &async_nats::jetstream::Message) -> u64 {
    message.info().map(|info| info.stream_sequence).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_confirmed_before_the_leader_is_killed_are_kept_by_the_next_one() {
    let (mut cluster, names, clients) = with_durable(
        json!({"name": "ACKS", "subjects": ["acks.>"], "num_replicas": 3, "storage": "file"}),
        json!({
            "durable_name": "WORKER",
            "ack_policy": "explicit",
            "ack_wait": ACK_WAIT.as_nanos() as u64,
        }),
    )
    .await;
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
        fetched.extend(fetch_some(&consumer, FETCHED as usize - fetched.len()).await);
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
        for message in fetch_some(&consumer, PUBLISHED as usize).await {
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

    // The killed server comes back with the consumer's state from the log (or a snapshot) and
    // leads it with every ack.
    cluster.restart(doomed);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let deadline = Instant::now() + ELECTION_BOUND;
    let back = loop {
        settled_consumer(&client, "ACKS", "WORKER", &names).await;
        let stepdown = json!({"placement": {"preferred": leader}});
        led_answer(
            &client,
            "$JS.API.CONSUMER.LEADER.STEPDOWN.ACKS.WORKER",
            stepdown,
            deadline,
        )
        .await;
        let info = led_answer(
            &client,
            "$JS.API.CONSUMER.INFO.ACKS.WORKER",
            Value::Null,
            deadline,
        )
        .await;
        if info["cluster"]["leader"] == leader.as_str() {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "{leader} never led again: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(back["ack_floor"]["stream_seq"], PUBLISHED, "{back}");
    assert_eq!(back["num_ack_pending"], 0, "{back}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_leader_stepdown_keeps_its_acks_and_tells_waiting_pulls() {
    let (_cluster, names, clients) = with_durable(
        json!({"name": "STEP", "subjects": ["step.>"], "num_replicas": 3}),
        json!({"durable_name": "PULLER", "ack_policy": "explicit"}),
    )
    .await;
    let client = &clients[0];
    let before = settled_consumer(client, "STEP", "PULLER", &names).await;
    let old_leader = before["cluster"]["leader"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let listed = one_answer(client, "$JS.API.CONSUMER.LIST.STEP", Value::Null).await;
    assert_eq!(
        listed["consumers"][0]["cluster"]["leader"],
        old_leader.as_str(),
        "{listed}"
    );

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
        for message in fetch_some(&puller, 2 - confirmed).await {
            message.double_ack().await.expect("ack");
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
        if let Some(message) = fetch_some(&puller, 1).await.pop() {
            assert_eq!(stream_sequence(&message), 3);
            message.double_ack().await.expect("ack");
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interest_stream_keeps_messages_for_its_consumer_across_a_leader_kill() {
    let (mut cluster, names, clients) = with_durable(
        json!({"name": "INTEREST", "subjects": ["interest.>"], "num_replicas": 3,
               "retention": "interest"}),
        json!({"durable_name": "READER", "ack_policy": "explicit"}),
    )
    .await;
    let info = settled_consumer(&clients[0], "INTEREST", "READER", &names).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let doomed = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != doomed).unwrap_or(0);
    let client = clients[survivor].clone();
    cluster.kill9(doomed);

    // Published as soon as a new leader takes them: kept for the consumer, delivered, then
    // removed once acknowledged.
    let jetstream = async_nats::jetstream::ContextBuilder::new()
        .timeout(Duration::from_secs(2))
        .build(client.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 1..=5 {
        publish_until_acked(&jetstream, "interest.item", &format!("after-{n}"), deadline).await;
    }
    let stream = jetstream.get_stream("INTEREST").await.expect("stream");
    // nats-server's consumer may still be electing its own leader: asked again until then.
    let reader: PullConsumer = loop {
        match stream.get_consumer("READER").await {
            Ok(reader) => break reader,
            Err(error) => assert!(Instant::now() < deadline, "consumer: {error}"),
        }
    };
    let mut wanted: BTreeSet<String> = (1..=5).map(|n| format!("after-{n}")).collect();
    let deadline = Instant::now() + ELECTION_BOUND;
    while !wanted.is_empty() {
        assert!(Instant::now() < deadline, "never delivered: {wanted:?}");
        for message in fetch_some(&reader, 5).await {
            let payload = String::from_utf8_lossy(&message.payload).into_owned();
            if message.double_ack().await.is_ok() {
                wanted.remove(&payload);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = one_answer(&client, "$JS.API.STREAM.INFO.INTEREST", Value::Null).await;
        if info["state"]["messages"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "acked messages kept: {info}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The stream sequence in a delivery's ack subject
/// (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>...`).
pub(crate) fn acked_sequence(reply: &str) -> u64 {
    reply
        .split('.')
        .nth(5)
        .and_then(|seq| seq.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_consumer_resumes_on_the_next_leader_without_confirmed_acks() {
    let (mut cluster, names, clients) = with_durable(
        json!({"name": "PUSH", "subjects": ["push.in.>"], "num_replicas": 3}),
        json!({
            "durable_name": "PUSHER",
            "ack_policy": "explicit",
            "deliver_subject": "push.out",
            "ack_wait": ACK_WAIT.as_nanos() as u64,
        }),
    )
    .await;
    let info = settled_consumer(&clients[0], "PUSH", "PUSHER", &names).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let doomed = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != doomed).unwrap_or(0);
    let client = clients[survivor].clone();
    let mut deliveries = client.subscribe("push.out").await.expect("subscribe");
    client.flush().await.expect("flush");
    let jetstream = async_nats::jetstream::new(client.clone());
    for n in 1..=10 {
        jetstream
            .publish("push.in.item", format!("item-{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
    }
    let mut delivered = Vec::new();
    while delivered.len() < 10 {
        let message = tokio::time::timeout(Duration::from_secs(10), deliveries.next())
            .await
            .unwrap_or_else(|_| panic!("only {delivered:?} delivered"))
            .expect("subscription");
        let reply = message
            .reply
            .map(|reply| reply.to_string())
            .unwrap_or_default();
        delivered.push((acked_sequence(&reply), reply));
    }
    let mut confirmed = BTreeSet::new();
    for (seq, reply) in delivered.iter().take(5) {
        client
            .request(reply.clone(), "".into())
            .await
            .expect("AckSync confirmed");
        confirmed.insert(*seq);
    }
    let mut wanted: BTreeSet<u64> = delivered.iter().skip(5).map(|(seq, _)| *seq).collect();

    cluster.kill9(doomed);
    let killed_at = Instant::now();
    let deadline = killed_at + ELECTION_BOUND + ACK_WAIT;
    while !wanted.is_empty() {
        let wait = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(wait, deliveries.next())
            .await
            .unwrap_or_else(|_| panic!("never redelivered: {wanted:?}\n{}", cluster.logs()))
            .expect("subscription");
        let Some(reply) = message.reply.map(|reply| reply.to_string()) else {
            continue; // a status message (heartbeat, flow control): none configured
        };
        let seq = acked_sequence(&reply);
        assert!(
            !confirmed.contains(&seq),
            "confirmed ack of {seq} forgotten"
        );
        if client.request(reply, "".into()).await.is_ok() {
            wanted.remove(&seq);
        }
    }
    println!(
        "push consumer: every unacked message redelivered {:?} after the leader's kill -9",
        killed_at.elapsed()
    );
    let after = one_answer(&client, "$JS.API.CONSUMER.INFO.PUSH.PUSHER", Value::Null).await;
    assert_eq!(after["ack_floor"]["stream_seq"], 10, "{after}");
    assert_eq!(after["num_ack_pending"], 0, "{after}");
}

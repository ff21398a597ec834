//! Replicated (R3) streams on a 3-node cluster: created through any node and answered once,
//! when the stream's group has a leader; published through every node; every acknowledged
//! message on every replica (the leader's `cluster.replicas` current, and still there after the
//! leader's `kill -9` under a publishing load, with a new leader elected, contiguous sequences
//! and no duplicates); a durable consumer created on the stream leader used by a client that
//! publishes and consumes.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::{answers, connect, error_code, leader_of, one_answer, Answered};
use crate::meta::{start, ELECTION_BOUND};

/// A publish not acknowledged within this is sent again (same message id).
const ACK_WAIT: Duration = Duration::from_secs(2);
/// Replicas catch up (or a restarted one rejoins) within this.
const CATCH_UP: Duration = Duration::from_secs(30);

pub(crate) fn r3_config(name: &str, subjects: &str) -> Value {
    json!({"name": name, "subjects": [subjects], "num_replicas": 3, "storage": "file"})
}

/// Creates an R3 stream through `client`; returns the answer (with how many attempts went
/// unanswered: check it with [`Answered::assert_created`]) and how long it took.
pub(crate) async fn create_r3(client: &Client, name: &str, subjects: &str) -> (Answered, Duration) {
    let started = Instant::now();
    // nats-server refuses placement (10005, peer offline) until its meta leader has heard
    // from every server since it started: asked again then, within the election bound.
    let deadline = started + ELECTION_BOUND;
    let asked = r3_config(name, subjects);
    let mut unanswered = 0;
    loop {
        let subject = format!("$JS.API.STREAM.CREATE.{name}");
        let mut got = answers(client, &subject, asked.clone()).await;
        // nats-server sometimes leaves a create unanswered while its routes settle under load
        // (the CI parity pass on 717dd19: the stream was created, the answer never came); a
        // client asks again. Ours must answer: no retry there.
        if got.is_empty() && test_harness::is_reference() && Instant::now() < deadline {
            unanswered += 1;
            continue;
        }
        assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
        let answer = got.remove(0);
        // 10008 "JetStream system temporarily unavailable" is the answer while the meta group
        // has no leader (one can step down under the load of a full parallel run, as in one run
        // of jetstream_lost_quorum): temporary by its name, a client asks again.
        if !matches!(error_code(&answer), 10005 | 10008) || Instant::now() > deadline {
            let created = Answered {
                asked,
                answer,
                unanswered,
            };
            return (created, started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until STREAM.INFO, asked through `client`, is answered by a leader among `names` with
/// `messages` messages and both other replicas current; returns that answer.
pub(crate) async fn settled_info(
    client: &Client,
    stream: &str,
    names: &[String],
    messages: u64,
) -> Value {
    let deadline = Instant::now() + CATCH_UP;
    let subject = format!("$JS.API.STREAM.INFO.{stream}");
    loop {
        let mut got = answers(client, &subject, Value::Null).await;
        // nats-server leaves an INFO unanswered now and then while a leadership moves under load
        // (the lead's CI parity pass on 3c4cf28, load 33): asked again there; ours must answer.
        if got.is_empty() && test_harness::is_reference() && Instant::now() < deadline {
            continue;
        }
        assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
        let info = got.remove(0);
        let leader = info["cluster"]["leader"].as_str().unwrap_or("");
        let replicas = info["cluster"]["replicas"].as_array().cloned();
        let settled = names.iter().any(|name| name == leader)
            && info["state"]["messages"] == messages
            && replicas.as_ref().is_some_and(|replicas| {
                replicas.len() == names.len() - 1
                    && replicas.iter().all(|replica| {
                        replica["current"] == true
                            && replica.get("offline") != Some(&Value::Bool(true))
                            && names.iter().any(|name| replica["name"] == name.as_str())
                            && replica["name"] != leader
                    })
            });
        if settled {
            return info;
        }
        assert!(Instant::now() < deadline, "{stream} did not settle: {info}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Publishes `payload` (also its message id) until it is acknowledged; returns the ack.
pub(crate) async fn publish_until_acked(
    jetstream: &async_nats::jetstream::Context,
    subject: &str,
    payload: &str,
    deadline: Instant,
) -> async_nats::jetstream::publish::PublishAck {
    loop {
        let message = Publish::build()
            .payload(payload.to_string().into())
            .message_id(payload);
        let attempt = match jetstream.send_publish(subject.to_string(), message).await {
            Ok(pending) => pending.await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(ack) => return ack,
            Err(error) => {
                assert!(Instant::now() < deadline, "{payload} never acked: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Every message of `stream` from sequence 1 on, by sequence, read through `client`.
pub(crate) async fn read_all(client: &Client, stream: &str, last: u64) -> BTreeMap<u64, String> {
    let mut messages = BTreeMap::new();
    let subject = format!("$JS.API.STREAM.MSG.GET.{stream}");
    let deadline = Instant::now() + CATCH_UP;
    for seq in 1..=last {
        // The first answer (one_answer's wait for a second would take minutes here).
        let answer = loop {
            let body = json!({ "seq": seq }).to_string();
            let reply = client
                .request(subject.clone(), body.into())
                .await
                .unwrap_or_else(|error| panic!("seq {seq}: {error}"));
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            // nats-server answers 10008 (JetStream temporarily unavailable) for a while after a
            // leader kill under load (the lead's CI parity pass on 3c4cf28, load 33): asked
            // again there; ours must answer.
            let unavailable = answer["error"]["err_code"] == 10008;
            if unavailable && test_harness::is_reference() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            }
            break answer;
        };
        assert!(answer.get("error").is_none(), "seq {seq}: {answer}");
        let data = answer["message"]["data"].as_str().unwrap_or("");
        let bytes = base64_decode(data);
        messages.insert(seq, String::from_utf8_lossy(&bytes).into_owned());
    }
    messages
}

pub(crate) fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

/// The lock, even when a panicking holder poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn names_of(cluster: &Cluster) -> Vec<String> {
    (0..cluster.len())
        .map(|i| cluster.node(i).name.clone())
        .collect()
}

/// A 3-node cluster with a meta leader, its node names and a client of each node.
pub(crate) async fn three_nodes() -> (Cluster, Vec<String>, [Client; 3]) {
    three_nodes_of(start(3)).await
}

/// [`three_nodes`] of a cluster started with `meta::start_debug` or the like.
pub(crate) async fn three_nodes_of(cluster: Cluster) -> (Cluster, Vec<String>, [Client; 3]) {
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let clients = [
        connect(&cluster, 0).await,
        connect(&cluster, 1).await,
        connect(&cluster, 2).await,
    ];
    (cluster, names, clients)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_keeps_every_acked_message_across_a_leader_kill() {
    let (mut cluster, names, clients) = three_nodes().await;

    // Created through node B, answered once, by the stream's leader.
    let (created, took) = create_r3(&clients[1], "ORDERS", "orders.>").await;
    println!("R3 stream create answered in {took:?}");
    created.assert_created();
    let created = created.answer;
    assert_eq!(created["config"]["num_replicas"], 3, "{created}");
    assert_eq!(created["cluster"]["name"], "meta", "{created}");
    let leader = created["cluster"]["leader"].as_str().unwrap_or("");
    assert!(names.iter().any(|name| name == leader), "{created}");

    // Published through every node: acknowledged in order.
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut expected = 0;
    for (index, client) in clients.iter().enumerate() {
        let jetstream = async_nats::jetstream::new(client.clone());
        for n in 0..10 {
            let ack =
                publish_until_acked(&jetstream, "orders.new", &format!("n{index}-{n}"), deadline)
                    .await;
            expected += 1;
            assert_eq!((ack.stream.as_str(), ack.sequence), ("ORDERS", expected));
            assert!(!ack.duplicate);
        }
    }

    // Every node's answer is the leader's: 30 messages, both other replicas current.
    for client in &clients {
        let info = settled_info(client, "ORDERS", &names, 30).await;
        assert_eq!(info["state"]["last_seq"], 30, "{info}");
        assert_eq!(info["config"]["num_replicas"], 3, "{info}");
    }

    // kill -9 of the leader while a client of another node publishes.
    let info = settled_info(&clients[0], "ORDERS", &names, 30).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let doomed = crate::meta::index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != doomed).unwrap_or(0);
    let publisher = clients[survivor].clone();
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(String, u64, Instant)>>> = Arc::default();
    let load = tokio::spawn({
        let stop = stop.clone();
        let acked = acked.clone();
        async move {
            let jetstream = async_nats::jetstream::ContextBuilder::new()
                .timeout(ACK_WAIT)
                .build(publisher);
            let deadline = Instant::now() + Duration::from_secs(90);
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("load-{n}");
                let ack = publish_until_acked(&jetstream, "orders.load", &payload, deadline).await;
                lock(&acked).push((payload, ack.sequence, Instant::now()));
                n += 1;
            }
        }
    });
    let wait_for = |count: usize| {
        let acked = acked.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            while lock(&acked).len() < count {
                assert!(
                    Instant::now() < deadline,
                    "only {} acked",
                    lock(&acked).len()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for(100).await;
    let killed_at = Instant::now();
    let before_kill = lock(&acked).len();
    cluster.kill9(doomed);
    wait_for(before_kill + 100).await;
    stop.store(true, Ordering::Relaxed);
    load.await.expect("publisher");
    let acked = lock(&acked).clone();
    if let Some((_, _, at)) = acked.iter().find(|(_, _, at)| *at > killed_at) {
        println!(
            "first PubAck after the leader's kill -9: {:?}",
            at.duration_since(killed_at)
        );
    }

    // A new leader among the survivors has every acknowledged message, once, contiguous.
    let survivors: Vec<String> = names.iter().filter(|n| **n != leader).cloned().collect();
    let total = 30 + acked.len() as u64;
    let info = one_answer(
        &clients[survivor],
        "$JS.API.STREAM.INFO.ORDERS",
        Value::Null,
    )
    .await;
    let new_leader = info["cluster"]["leader"].as_str().unwrap_or("");
    assert!(survivors.iter().any(|n| n == new_leader), "{info}");
    assert_eq!(info["state"]["first_seq"], 1, "{info}");
    let last = info["state"]["last_seq"].as_u64().unwrap_or(0);
    assert_eq!(info["state"]["messages"], last, "gaps: {info}");
    let stored = read_all(&clients[survivor], "ORDERS", last).await;
    let distinct: BTreeSet<&String> = stored.values().collect();
    assert_eq!(distinct.len(), stored.len(), "duplicates stored");
    for (payload, seq, _) in &acked {
        assert_eq!(stored.get(seq), Some(payload), "acked {payload} at {seq}");
    }
    // Everything stored was published by this test (at most one unacked attempt per payload).
    assert!(last >= total, "{last} stored, {total} acked");

    // The killed node comes back and catches up: all three replicas current again.
    cluster.restart(doomed);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    settled_info(&clients[survivor], "ORDERS", &names, last).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_consumer_on_an_r3_stream_delivers_what_was_published() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    let a = connect(&cluster, 0).await;
    let c = connect(&cluster, 2).await;
    let (created, _) = create_r3(&a, "WORK", "work.>").await;
    created.assert_created();

    // Asked again while the new stream group is between leaders (nobody answers then).
    let consumer = crate::jetstream_consumers_replicated::led_answer(
        &c,
        "$JS.API.CONSUMER.DURABLE.CREATE.WORK.WORKER",
        json!({"stream_name": "WORK", "config": {"durable_name": "WORKER", "ack_policy": "explicit"}}),
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert!(consumer.get("error").is_none(), "{consumer}");
    assert_eq!(consumer["name"], "WORKER", "{consumer}");

    let jetstream = async_nats::jetstream::new(c.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..20 {
        publish_until_acked(&jetstream, "work.item", &format!("item-{n}"), deadline).await;
    }
    settled_info(&a, "WORK", &names, 20).await;

    let stream = jetstream.get_stream("WORK").await.expect("stream");
    let consumer: async_nats::jetstream::consumer::PullConsumer =
        stream.get_consumer("WORKER").await.expect("consumer");
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 20 {
        assert!(Instant::now() < deadline, "got {got:?}");
        let mut batch = consumer
            .fetch()
            .max_messages(20 - got.len())
            .expires(Duration::from_secs(1))
            .messages()
            .await
            .expect("fetch");
        while let Some(message) = batch.next().await {
            let message = message.expect("message");
            got.push(String::from_utf8_lossy(&message.payload).into_owned());
            message.double_ack().await.expect("ack");
        }
    }
    let wanted: Vec<String> = (0..20).map(|n| format!("item-{n}")).collect();
    assert_eq!(got, wanted);
    let info = one_answer(&a, "$JS.API.CONSUMER.INFO.WORK.WORKER", Value::Null).await;
    assert_eq!(info["num_ack_pending"], 0, "{info}");
    assert_eq!(info["delivered"]["stream_seq"], 20, "{info}");
    assert_eq!(error_code(&info), 0, "{info}");
}

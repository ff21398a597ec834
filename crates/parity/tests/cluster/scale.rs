//! Scaling a stream by STREAM.UPDATE of `num_replicas`, as nats-server does it: R1 -> R3 under
//! publishing (every acknowledged message on every replica after, at its acknowledged
//! sequence, and the durable consumer's ack floor kept), R3 -> R1 -> R3, a count the cluster
//! cannot place refused, R3 -> R5 -> R3 on five servers, our `nats stream edit --replicas`, and
//! the one server of an R1 stream killed in the middle of its scale-up.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Client;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::{answers, error_code, one_answer, Answered};
use crate::jetstream_elsewhere::cli;
use crate::jetstream_replicated::{names_of, publish_until_acked, read_all};
use crate::membership::{
    durable_with_acks, lead_on, members, nodes, placed_without, reader_kept, stream_info,
};
use crate::meta::ELECTION_BOUND;

/// A rescale is answered, and the stream placed and caught up, within this.
const SCALE_BOUND: Duration = Duration::from_secs(60);

pub(crate) fn config(name: &str, replicas: u64) -> Value {
    json!({
        "name": name,
        "subjects": [format!("{}.>", name.to_lowercase())],
        "num_replicas": replicas,
        "storage": "file",
    })
}

/// STREAM.CREATE or STREAM.UPDATE of `config`, asked again while nats-server's meta leader has
/// not heard from every server yet (10005); the answer, with how many attempts went unanswered.
/// nats-server sometimes leaves one unanswered while its routes settle (the CI parity pass on
/// c45dd83, as create_r3 saw on 717dd19): asked again there (both requests are idempotent);
/// ours must answer.
pub(crate) async fn apply(client: &Client, verb: &str, config: Value) -> Answered {
    let name = config["name"].as_str().unwrap_or_default().to_string();
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut unanswered = 0;
    loop {
        let subject = format!("$JS.API.STREAM.{verb}.{name}");
        let answer = if test_harness::is_reference() {
            let mut got = answers(client, &subject, config.clone()).await;
            if got.is_empty() && Instant::now() < deadline {
                unanswered += 1;
                continue;
            }
            assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
            got.remove(0)
        } else {
            one_answer(client, &subject, config.clone()).await
        };
        if error_code(&answer) != 10005 || Instant::now() > deadline {
            return Answered {
                asked: config,
                answer,
                unanswered,
            };
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Publishes `count` payloads `<prefix><n>` to `subject`, each until acknowledged; the
/// payloads by acknowledged sequence.
async fn publish_numbered(
    jetstream: &async_nats::jetstream::Context,
    subject: &str,
    prefix: &str,
    count: usize,
) -> BTreeMap<u64, String> {
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut acked = BTreeMap::new();
    for n in 0..count {
        let payload = format!("{prefix}{n}");
        let ack = publish_until_acked(jetstream, subject, &payload, deadline).await;
        acked.insert(ack.sequence, payload);
    }
    acked
}

/// Waits until the stream is on exactly `count` servers (its leader and its current replicas)
/// with `messages` messages; returns that STREAM.INFO.
async fn placed_on(
    cluster: &Cluster,
    client: &Client,
    stream: &str,
    count: usize,
    messages: u64,
) -> Value {
    if count > 1 {
        return placed_without(cluster, client, stream, &[], count, messages).await;
    }
    let deadline = Instant::now() + SCALE_BOUND;
    loop {
        let info = stream_info(client, stream).await;
        if members(&info).len() == 1 && info["state"]["messages"] == messages {
            return info;
        }
        assert!(
            Instant::now() < deadline,
            "{stream} not on one server: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Every server of the stream, made leader in turn, holds exactly `acked` (payload by
/// sequence) and the durable `READER`'s ack floor at `floor`.
async fn every_replica_holds(
    client: &Client,
    info: &Value,
    acked: &BTreeMap<u64, String>,
    floor: u64,
) {
    let last = acked.keys().next_back().copied().unwrap_or(0);
    for name in members(info) {
        lead_on(client, info["config"]["name"].as_str().unwrap_or(""), &name).await;
        let stream = info["config"]["name"].as_str().unwrap_or("");
        let stored = read_all(client, stream, last).await;
        assert_eq!(&stored, acked, "{name} holds other messages");
        reader_kept(client, stream, floor, last - floor).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r1_stream_scaled_to_r3_under_publishing_keeps_every_acked_message_and_its_consumer() {
    let (cluster, clients) = nodes(3).await;
    let created = apply(&clients[0], "CREATE", config("UP", 1)).await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let mut acked = publish_numbered(&jetstream, "up.x", "u", 20).await;
    durable_with_acks(&jetstream, "UP", 5).await;

    // A writer through another node throughout the scale-up; each payload sent again with its
    // message id until acknowledged.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let jetstream = async_nats::jetstream::new(clients[1].clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut acked = BTreeMap::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) && n < 300 {
                let payload = format!("w{n}");
                let deadline = Instant::now() + SCALE_BOUND;
                let ack = publish_until_acked(&jetstream, "up.x", &payload, deadline).await;
                acked.insert(ack.sequence, payload);
                n += 1;
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let updated = apply(&clients[2], "UPDATE", config("UP", 3)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    assert_eq!(updated["config"]["num_replicas"], 3, "{updated}");
    println!("R1 -> R3 answered in {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let written = writer.await.expect("writer");
    assert!(!written.is_empty(), "nothing written during the scale-up");
    for (seq, payload) in written {
        assert!(
            acked.insert(seq, payload).is_none(),
            "sequence {seq} acked twice"
        );
    }
    let total = acked.len() as u64;
    assert_eq!(
        acked.keys().next_back().copied(),
        Some(total),
        "acked sequences have gaps"
    );
    let info = placed_on(&cluster, &clients[0], "UP", 3, total).await;
    println!("R3 on {:?} after {:?}", members(&info), started.elapsed());
    assert_eq!(info["config"]["num_replicas"], 3, "{info}");
    every_replica_holds(&clients[0], &info, &acked, 5).await;
    // The durable follows the stream's replica count (its config keeps `num_replicas: 0`).
    let reader = one_answer(&clients[0], "$JS.API.CONSUMER.INFO.UP.READER", Value::Null).await;
    assert_eq!(reader["config"]["num_replicas"], 0, "{reader}");
    assert_eq!(
        reader["cluster"]["replicas"].as_array().map(Vec::len),
        Some(2),
        "{reader}"
    );
    assert!(
        info["cluster"]["raft_group"]
            .as_str()
            .is_some_and(|group| group.starts_with("S-R3")),
        "{info}"
    );

    // Still takes publishes, on every replica.
    let ack =
        publish_until_acked(&jetstream, "up.x", "after", Instant::now() + ELECTION_BOUND).await;
    assert_eq!(ack.sequence, total + 1);
    placed_on(&cluster, &clients[0], "UP", 3, total + 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_scaled_to_r1_and_back_keeps_its_messages_and_consumer() {
    let (cluster, clients) = nodes(3).await;
    let created = apply(&clients[0], "CREATE", config("DOWN", 3)).await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let mut acked = publish_numbered(&jetstream, "down.x", "d", 20).await;
    placed_on(&cluster, &clients[0], "DOWN", 3, 20).await;
    durable_with_acks(&jetstream, "DOWN", 5).await;

    let updated = apply(&clients[1], "UPDATE", config("DOWN", 1)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    assert_eq!(updated["config"]["num_replicas"], 1, "{updated}");
    let info = placed_on(&cluster, &clients[0], "DOWN", 1, 20).await;
    assert_eq!(info["config"]["num_replicas"], 1, "{info}");
    assert!(
        info["cluster"]["replicas"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{info}"
    );
    every_replica_holds(&clients[0], &info, &acked, 5).await;
    // Shown as an R1 stream and its consumer are: the cluster's name and the server, nothing more
    // (ours keeps a one-member group there and once showed its raft_group and leader_since).
    // nats-server moves the stream after answering and shows a `desired` block with the old
    // group's fields meanwhile (the CI parity pass on 4bc556b, 1 s after the update): asked
    // again there, bounded. Ours answers the scale once done and must show the R1 block at once.
    let r1_keys = |answer: &Value| {
        let mut keys: Vec<String> = answer["cluster"]
            .as_object()
            .map(|block| block.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort_unstable();
        keys
    };
    let deadline = Instant::now() + SCALE_BOUND;
    for subject in [
        "$JS.API.STREAM.INFO.DOWN",
        "$JS.API.CONSUMER.INFO.DOWN.READER",
    ] {
        loop {
            let answer = one_answer(&clients[0], subject, Value::Null).await;
            let keys = r1_keys(&answer);
            if keys == ["leader", "name"] {
                break;
            }
            assert!(
                test_harness::is_reference() && Instant::now() < deadline,
                "{subject}: {keys:?}: {answer}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let ack =
        publish_until_acked(&jetstream, "down.x", "one", Instant::now() + ELECTION_BOUND).await;
    assert_eq!(ack.sequence, 21);
    acked.insert(21, "one".to_string());

    // And back to R3.
    let updated = apply(&clients[2], "UPDATE", config("DOWN", 3)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    let info = placed_on(&cluster, &clients[0], "DOWN", 3, 21).await;
    every_replica_holds(&clients[0], &info, &acked, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_the_cluster_cannot_place_is_refused_and_the_stream_stays() {
    let (cluster, clients) = nodes(3).await;
    let created = apply(&clients[0], "CREATE", config("FIVE", 1)).await;
    created.assert_created();
    let refused = apply(&clients[1], "UPDATE", config("FIVE", 5)).await.answer;
    println!("R1 -> R5 on three servers: {refused}");
    assert_eq!(error_code(&refused), 10005, "{refused}");
    let info = placed_on(&cluster, &clients[0], "FIVE", 1, 0).await;
    assert_eq!(info["config"]["num_replicas"], 1, "{info}");
    assert!(
        names_of(&cluster).contains(&info["cluster"]["leader"].as_str().unwrap_or("").to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_edits_a_stream_s_replicas() {
    let (cluster, clients) = nodes(3).await;
    let home = tempfile::tempdir().expect("tempdir");
    let created = apply(&clients[0], "CREATE", config("EDIT", 1)).await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    for n in 0..5 {
        publish_until_acked(
            &jetstream,
            "edit.x",
            &format!("e{n}"),
            Instant::now() + ELECTION_BOUND,
        )
        .await;
    }
    let url = cluster.url(0);
    let (ok, text) = cli(
        &url,
        home.path(),
        &["stream", "edit", "EDIT", "--replicas", "3", "-f"],
    );
    assert!(ok, "stream edit --replicas 3:\n{text}");
    assert!(text.contains("Replicas: 3"), "{text}");
    placed_on(&cluster, &clients[0], "EDIT", 3, 5).await;
    let (ok, text) = cli(
        &url,
        home.path(),
        &["stream", "edit", "EDIT", "--replicas", "1", "-f"],
    );
    assert!(ok, "stream edit --replicas 1:\n{text}");
    assert!(text.contains("Replicas: 1"), "{text}");
    placed_on(&cluster, &clients[0], "EDIT", 1, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_scales_to_r5_and_back_on_five_servers() {
    let (cluster, clients) = nodes(5).await;
    let created = apply(&clients[0], "CREATE", config("FANS", 3)).await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let acked = publish_numbered(&jetstream, "fans.x", "f", 20).await;
    placed_on(&cluster, &clients[0], "FANS", 3, 20).await;
    durable_with_acks(&jetstream, "FANS", 5).await;
    let updated = apply(&clients[3], "UPDATE", config("FANS", 5)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    let info = placed_on(&cluster, &clients[0], "FANS", 5, 20).await;
    every_replica_holds(&clients[0], &info, &acked, 5).await;
    let updated = apply(&clients[4], "UPDATE", config("FANS", 3)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    let info = placed_on(&cluster, &clients[0], "FANS", 3, 20).await;
    every_replica_holds(&clients[0], &info, &acked, 5).await;
}

/// Fetches up to `count` messages from `consumer` (again while nothing arrives, within the
/// election bound: the consumer may be starting on its new stream) and acks each with an
/// AckSync; their payloads.
async fn fetch_acked(
    consumer: &async_nats::jetstream::consumer::PullConsumer,
    count: usize,
) -> Vec<String> {
    use futures::StreamExt;
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut payloads = Vec::new();
    while payloads.len() < count && Instant::now() < deadline {
        let Ok(mut batch) = consumer
            .fetch()
            .max_messages(count - payloads.len())
            .expires(Duration::from_secs(1))
            .messages()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        while let Some(Ok(message)) = batch.next().await {
            payloads.push(String::from_utf8_lossy(&message.payload).into_owned());
            message.double_ack().await.expect("ack confirmed");
        }
    }
    payloads
}

/// nats-server keeps an R1 stream's ephemeral consumers through a scale-up (they stay R1 where
/// they ran, with their state); ours ended them before (its clients had to create them again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_consumer_keeps_its_place_when_its_r1_stream_is_scaled_to_r3() {
    use async_nats::jetstream::consumer::{pull, AckPolicy};
    let (cluster, clients) = nodes(3).await;
    apply(&clients[0], "CREATE", config("EPH", 1))
        .await
        .assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_numbered(&jetstream, "eph.x", "e", 5).await;
    let consumer = jetstream
        .get_stream("EPH")
        .await
        .expect("stream")
        .create_consumer(pull::Config {
            ack_policy: AckPolicy::Explicit,
            inactive_threshold: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .expect("ephemeral consumer");
    assert_eq!(fetch_acked(&consumer, 2).await, ["e0", "e1"]);

    let updated = apply(&clients[1], "UPDATE", config("EPH", 3)).await.answer;
    assert!(updated.get("error").is_none(), "{updated}");
    placed_on(&cluster, &clients[0], "EPH", 3, 5).await;

    // The same consumer goes on from where it was, and says so.
    assert_eq!(fetch_acked(&consumer, 3).await, ["e2", "e3", "e4"]);
    let name = consumer.cached_info().name.clone();
    let info = one_answer(
        &clients[2],
        &format!("$JS.API.CONSUMER.INFO.EPH.{name}"),
        Value::Null,
    )
    .await;
    assert_eq!(info["ack_floor"]["stream_seq"], 5, "{info}");
    assert_eq!(info["num_pending"], 0, "{info}");
}

/// A crash in the middle of a scale-up: the one server holding an R1 stream (200 acknowledged
/// messages, a durable with 5 acks) is killed -9 right after the STREAM.UPDATE to three replicas
/// is sent (for `MIDA` before its answer, for `MIDB` once answered) and restarted. The new
/// replicas never held the messages, so they must not take the stream over without it: once
/// the stream is on three servers every acknowledged message is on each, at its sequence, with
/// the durable's ack floor, and it takes publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): kills and restarts during two scale-ups"]
async fn a_server_killed_while_its_r1_stream_scales_up_keeps_every_acked_message() {
    let (mut cluster, clients) = nodes(3).await;
    // On nats-server one case: it loses the durable's confirmed ack floor here (reported by
    // `reader_kept` after waiting the election bound on each replica, 3 minutes for both).
    let cases = [("MIDA", false), ("MIDB", true)];
    let cases = if test_harness::is_reference() {
        &cases[1..]
    } else {
        &cases[..]
    };
    for &(name, answered_first) in cases {
        let subject = format!("{}.x", name.to_lowercase());
        apply(&clients[0], "CREATE", config(name, 1))
            .await
            .assert_created();
        let jetstream = async_nats::jetstream::new(clients[0].clone());
        let mut acked = publish_numbered(&jetstream, &subject, "m", 200).await;
        durable_with_acks(&jetstream, name, 5).await;
        let holder = stream_info(&clients[0], name).await["cluster"]["leader"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let index = crate::meta::index_of(&cluster, &holder);
        let other = clients[(index + 1) % clients.len()].clone();

        let update = {
            let (client, body) = (other.clone(), config(name, 3).to_string());
            let subject = format!("$JS.API.STREAM.UPDATE.{name}");
            tokio::spawn(async move { client.request(subject, body.into()).await })
        };
        if answered_first {
            let answer = update.await.expect("update task").expect("update answered");
            let answer: Value = serde_json::from_slice(&answer.payload).unwrap_or(Value::Null);
            assert!(answer.get("error").is_none(), "{answer}");
        }
        let started = Instant::now();
        cluster.kill9(index);
        cluster.restart(index);
        // Asked again (the update is idempotent): a first one the crash left unapplied. When the
        // holder also led the meta group, nobody answers until a new meta leader is elected,
        // and a server that sees no meta leader answers 10008 "temporarily unavailable"
        // (nats-server's `isLeaderless` too), even as the new leader answers the same request
        // in the election's last moment: asked until the leader answers, within the bound, and
        // the leader answers once.
        let deadline = Instant::now() + ELECTION_BOUND;
        let asked = format!("$JS.API.STREAM.UPDATE.{name}");
        let leaderless = |answer: &Value| answer["error"]["err_code"] == 10008;
        let updated = loop {
            let mut got: Vec<Value> = answers(&other, &asked, config(name, 3))
                .await
                .into_iter()
                .filter(|answer| !leaderless(answer))
                .collect();
            if got.is_empty() && Instant::now() < deadline {
                continue;
            }
            assert_eq!(got.len(), 1, "{asked}: expected one answer, got {got:?}");
            break got.remove(0);
        };
        assert!(updated.get("error").is_none(), "{name}: {updated}");

        println!(
            "{name}: update answered {:?} after the restart",
            started.elapsed()
        );
        let info = placed_on(&cluster, &other, name, 3, 200).await;
        println!(
            "{name}: on three servers {:?} after the restart",
            started.elapsed()
        );
        every_replica_holds(&other, &info, &acked, 5).await;
        println!(
            "{name}: every replica checked {:?} after the restart",
            started.elapsed()
        );
        let jetstream = async_nats::jetstream::new(other.clone());
        let ack = publish_until_acked(
            &jetstream,
            &subject,
            "after",
            Instant::now() + ELECTION_BOUND,
        )
        .await;
        assert_eq!((ack.stream.as_str(), ack.sequence), (name, 201));
        acked.insert(201, "after".into());
        placed_on(&cluster, &other, name, 3, 201).await;
    }
}

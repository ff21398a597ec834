//! Membership changes of replicated streams: `$JS.API.STREAM.PEER.REMOVE.<stream>` answered as
//! nats-server answers it (its errors, then success from the meta leader), and the stream R3
//! again on a server it was not on, with every acknowledged message, the removed server no
//! longer listed among its replicas.
//!
//! Five nodes, so the meta leader has a free server to re-place the removed peer on. All-rnats
//! clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`), where
//! every assertion holds too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::{answers, connect, error_code, one_answer};
use crate::jetstream_r3_admin::directories_named;
use crate::jetstream_replicated::{create_r3, names_of, publish_until_acked, read_all};
use crate::meta::{agreed_leader, index_of, start, system_client, ELECTION_BOUND};

/// The removed peer is replaced, and the new one caught up, within this.
const REPLACE_BOUND: Duration = Duration::from_secs(60);

/// A cluster of `size` nodes with an agreed meta leader and a client of each node.
pub(crate) async fn nodes(size: usize) -> (Cluster, Vec<Client>) {
    let cluster = start(size);
    let all: Vec<usize> = (0..size).collect();
    agreed_leader(&cluster, &all, size as u64, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let mut clients = Vec::new();
    for index in 0..size {
        clients.push(connect(&cluster, index).await);
    }
    (cluster, clients)
}

/// The servers of a stream as its leader's STREAM.INFO names them: the leader, then the
/// replicas.
pub(crate) fn members(info: &Value) -> BTreeSet<String> {
    let mut members = BTreeSet::new();
    if let Some(leader) = info["cluster"]["leader"].as_str().filter(|l| !l.is_empty()) {
        members.insert(leader.to_string());
    }
    for replica in info["cluster"]["replicas"].as_array().into_iter().flatten() {
        if let Some(name) = replica["name"].as_str() {
            members.insert(name.to_string());
        }
    }
    members
}

/// STREAM.INFO's first answer (`Null` for none: a leader change in progress).
pub(crate) async fn stream_info(client: &Client, stream: &str) -> Value {
    client
        .request(format!("$JS.API.STREAM.INFO.{stream}"), "".into())
        .await
        .ok()
        .and_then(|reply| serde_json::from_slice::<Value>(&reply.payload).ok())
        .unwrap_or(Value::Null)
}

/// Waits until STREAM.INFO shows `replicas` servers of the cluster (by name), none of them in
/// `without`, every replica current and online, and `messages` messages; returns that answer.
pub(crate) async fn placed_without(
    cluster: &Cluster,
    client: &Client,
    stream: &str,
    without: &[&str],
    replicas: usize,
    messages: impl Into<Option<u64>>,
) -> Value {
    let messages = messages.into();
    let deadline = Instant::now() + REPLACE_BOUND;
    let names = names_of(cluster);
    loop {
        let info = stream_info(client, stream).await;
        let placed = members(&info);
        let settled = placed.len() == replicas
            && placed.iter().all(|name| names.contains(name))
            && without.iter().all(|gone| !placed.contains(*gone))
            && messages.is_none_or(|messages| info["state"]["messages"] == messages)
            && info["cluster"]["replicas"].as_array().is_some_and(|list| {
                list.iter().all(|replica| {
                    replica["current"] == true && replica.get("offline") != Some(&Value::Bool(true))
                })
            });
        if settled {
            return info;
        }
        assert!(
            Instant::now() < deadline,
            "{stream} not placed without {without:?}: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Hands the stream's leadership to `name` and waits until it leads.
pub(crate) async fn lead_on(client: &Client, stream: &str, name: &str) {
    if let Err(info) = try_lead_on(client, stream, name).await {
        panic!("{name} does not lead {stream}: {info}");
    }
}

/// [`lead_on`] within the election bound; the last STREAM.INFO when `name` does not lead by
/// then.
pub(crate) async fn try_lead_on(client: &Client, stream: &str, name: &str) -> Result<(), Value> {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let info = stream_info(client, stream).await;
        if info["cluster"]["leader"] == name {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(info);
        }
        let _ = client
            .request(
                format!("$JS.API.STREAM.LEADER.STEPDOWN.{stream}"),
                json!({"placement": {"preferred": name}}).to_string().into(),
            )
            .await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// R3 stream `stream` on `<prefix>.>` created through `client`, `messages` messages published
/// through `jetstream` (`<prefix>.x`, ids `<prefix><n>`), every replica placed and holding them,
/// and the durable `READER` with its first `acked` acknowledged: what the membership and CLI
/// tests start from. Returns the stream's info once placed.
pub(crate) async fn r3_with_reader(
    cluster: &Cluster,
    client: &Client,
    jetstream: &async_nats::jetstream::Context,
    (stream, prefix): (&str, &str),
    messages: u64,
    acked: usize,
) -> Value {
    let (created, _) = create_r3(client, stream, &format!("{prefix}.>")).await;
    created.assert_created();
    let deadline = Instant::now() + ELECTION_BOUND;
    let subject = format!("{prefix}.x");
    for n in 0..messages {
        publish_until_acked(jetstream, &subject, &format!("{prefix}{n}"), deadline).await;
    }
    let info = placed_without(cluster, client, stream, &[], 3, messages).await;
    durable_with_acks(jetstream, stream, acked).await;
    info
}

/// Creates the durable pull consumer `READER` on `stream` and acknowledges its first `acked`
/// messages, each ack confirmed (AckSync).
pub(crate) async fn durable_with_acks(
    jetstream: &async_nats::jetstream::Context,
    stream: &str,
    acked: usize,
) {
    let stream = jetstream.get_stream(stream).await.expect("stream");
    let consumer: PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("READER".into()),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .expect("consumer");
    // nats-server 2.15.1 can answer the first fetch of a just created R3 consumer with 503 (no
    // responders) while its leader's interest crosses the routes (the parity pass run on
    // 838c20a, `server_remove_of_a_killed_node...` under load): fetched again there, within the
    // bound. Ours must deliver on the first fetch.
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut done = 0;
    loop {
        let mut batch = consumer
            .fetch()
            .max_messages(acked)
            .messages()
            .await
            .expect("fetch");
        let mut unreachable = false;
        while let Some(message) = batch.next().await {
            match message {
                Ok(message) => {
                    message.double_ack().await.expect("ack");
                    done += 1;
                }
                Err(error)
                    if done == 0
                        && test_harness::is_reference()
                        && error.to_string().contains(": 503,")
                        && Instant::now() < deadline =>
                {
                    println!("first fetch of a new consumer: {error}; fetched again");
                    unreachable = true;
                    break;
                }
                Err(error) => panic!("fetch from READER: {error}"),
            }
        }
        if !unreachable {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(done, acked);
}

/// CONSUMER.INFO of `READER` on `stream`: its ack floor at `floor`, `pending` messages left.
/// A re-placed consumer may answer 10119 "consumer is offline" until its new replicas run
/// (nats-server 2.15.1 did so once right after a SERVER.REMOVE, in the CI parity pass on
/// e0d03b4): asked again then, within the election bound.
pub(crate) async fn reader_kept(client: &Client, stream: &str, floor: u64, pending: u64) {
    let subject = format!("$JS.API.CONSUMER.INFO.{stream}.READER");
    let deadline = Instant::now() + ELECTION_BOUND;
    let reader = loop {
        let reader = if test_harness::is_reference() {
            reader_answer(client, &subject).await
        } else {
            one_answer(client, &subject, Value::Null).await
        };
        // nats-server 2.15.1 once answered with an ack floor of 0 from a wiped server that led
        // the consumer before its replicas were current (CI parity pass on c45dd83, `wiped`):
        // asked again there until the floor is back, within the bound.
        let behind = test_harness::is_reference() && reader["ack_floor"]["stream_seq"] != floor;
        if (error_code(&reader) != 10119 && !behind) || Instant::now() > deadline {
            break reader;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    if test_harness::is_reference() && reader["ack_floor"]["stream_seq"] != floor {
        // Reported, not asserted: the parity pass checks ours' tests run there, and this is
        // nats-server forgetting confirmed acks (ours is held to it above, strictly).
        eprintln!("nats-server lost the ack floor of {stream}.READER (expected {floor}): {reader}");
        return;
    }
    assert_eq!(reader["ack_floor"]["stream_seq"], floor, "{reader}");
    assert_eq!(reader["num_pending"], pending, "{reader}");
}

/// nats-server's answer to `CONSUMER.INFO` of a re-placed consumer: several servers can answer
/// while its group has no leader yet (each replica 10008, the meta leader 10119 "consumer is
/// offline" when it counts every peer offline: `jsConsumerInfoRequest`; the parity pass on
/// 3cfbdfc got 10119 twice). Such answers are one refusal, asked again by the caller; anything
/// else must come alone. Ours answers once: [`one_answer`] there.
async fn reader_answer(client: &Client, subject: &str) -> Value {
    let mut got = answers(client, subject, Value::Null).await;
    if got.len() > 1
        && got
            .iter()
            .all(|answer| matches!(error_code(answer), 10008 | 10119))
    {
        println!(
            "{subject}: nats-server refused {} times: {got:?}",
            got.len()
        );
        return got.remove(0);
    }
    assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
    got.remove(0)
}

fn remove_subject(stream: &str) -> String {
    format!("$JS.API.STREAM.PEER.REMOVE.{stream}")
}

/// `$JS.API.STREAM.PEER.REMOVE.<stream>` for the server `peer`, sent through `client`: the one
/// answer.
pub(crate) async fn remove_peer(client: &Client, stream: &str, peer: &str) -> Value {
    one_answer(client, &remove_subject(stream), json!({ "peer": peer })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_peer_is_replaced_and_the_new_one_holds_every_acked_message() {
    let (cluster, clients) = nodes(5).await;
    let (created, _) = create_r3(&clients[0], "PEERS", "peers.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut payloads = Vec::new();
    for n in 0..20 {
        let payload = format!("p{n}");
        let ack = publish_until_acked(&jetstream, "peers.x", &payload, deadline).await;
        assert_eq!(ack.sequence, n + 1);
        payloads.push(payload);
    }
    let info = placed_without(&cluster, &clients[0], "PEERS", &[], 3, 20).await;
    let before = members(&info);
    let group = info["cluster"]["raft_group"]
        .as_str()
        .unwrap_or("")
        .to_string();

    // A durable consumer with 5 of the 20 acknowledged (each ack confirmed).
    durable_with_acks(&jetstream, "PEERS", 5).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();

    // nats-server's refusals, each answered once (by the meta leader).
    let empty = one_answer(&clients[1], &remove_subject("PEERS"), Value::Null).await;
    assert_eq!(
        empty["type"], "io.nats.jetstream.api.v1.stream_remove_peer_response",
        "{empty}"
    );
    assert_eq!(error_code(&empty), 10003, "{empty}");
    let stranger = remove_peer(&clients[1], "PEERS", "no-such-server").await;
    assert_eq!(error_code(&stranger), 10040, "{stranger}");
    assert_eq!(stranger["error"]["description"], "peer not a member");
    let outsider = cluster
        .nodes()
        .iter()
        .map(|node| node.name.clone())
        .find(|name| !before.contains(name))
        .expect("a server without the stream");
    let not_member = remove_peer(&clients[1], "PEERS", &outsider).await;
    assert_eq!(error_code(&not_member), 10040, "{not_member}");
    let missing = remove_peer(&clients[1], "NOPE", &leader).await;
    assert_eq!(error_code(&missing), 10059, "{missing}");

    // A follower removed: success, and the stream R3 again without it.
    let removed = before
        .iter()
        .find(|name| **name != leader)
        .cloned()
        .expect("a follower");
    let started = Instant::now();
    let answer = remove_peer(&clients[1], "PEERS", &removed).await;
    assert_eq!(
        answer,
        json!({"type": "io.nats.jetstream.api.v1.stream_remove_peer_response", "success": true})
    );
    let info = placed_without(&cluster, &clients[0], "PEERS", &[&removed], 3, 20).await;
    println!(
        "peer {removed} replaced in {:?}: {:?}",
        started.elapsed(),
        members(&info)
    );
    let after = members(&info);
    let newcomer = after
        .difference(&before)
        .next()
        .cloned()
        .expect("a new peer");

    // The new peer, made leader, holds every acknowledged message and takes publishes.
    lead_on(&clients[0], "PEERS", &newcomer).await;
    let stored = read_all(&clients[0], "PEERS", 20).await;
    let stored: Vec<String> = stored.into_values().collect();
    assert_eq!(stored, payloads);
    reader_kept(&clients[0], "PEERS", 5, 15).await;
    let ack = publish_until_acked(&jetstream, "peers.x", "after", deadline + REPLACE_BOUND).await;
    assert_eq!(ack.sequence, 21);
    placed_without(&cluster, &clients[0], "PEERS", &[&removed], 3, 21).await;

    // The removed server let its replica go: nothing of the stream's group on its disk.
    let index = index_of(&cluster, &removed);
    let root = cluster.node(index).store_dir.clone().expect("store dir");
    let deadline = Instant::now() + REPLACE_BOUND;
    while !directories_named(&root, &group).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{removed} keeps {:?}",
            directories_named(&root, &group)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_free_server_the_removal_is_refused_and_the_stream_keeps_its_peers() {
    let (cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], "TRI", "tri.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    publish_until_acked(&jetstream, "tri.x", "one", deadline).await;
    let info = placed_without(&cluster, &clients[0], "TRI", &[], 3, 1).await;
    let before = members(&info);
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let removed = before
        .iter()
        .find(|name| **name != leader)
        .cloned()
        .expect("a follower");
    let answer = remove_peer(&clients[1], "TRI", &removed).await;
    assert_eq!(
        answer,
        json!({
            "type": "io.nats.jetstream.api.v1.stream_remove_peer_response",
            "error": {"code": 503, "err_code": 10075, "description": "peer remap failed"}
        })
    );
    // Still R3 on the same servers, and it takes publishes.
    publish_until_acked(&jetstream, "tri.x", "two", deadline).await;
    let info = placed_without(&cluster, &clients[0], "TRI", &[], 3, 2).await;
    assert_eq!(members(&info), before, "{info}");
}

/// A server of the stream (`info`, its STREAM.INFO) that leads neither it nor the meta group
/// of the five nodes: its name and index.
pub(crate) fn idle_follower(cluster: &Cluster, info: &Value) -> (String, usize) {
    let all: Vec<usize> = (0..cluster.len()).collect();
    let meta_leader = agreed_leader(cluster, &all, 5, None).expect("meta leader");
    let stream_leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let follower = members(info)
        .into_iter()
        .find(|name| *name != stream_leader && *name != meta_leader)
        .expect("a follower that does not lead the meta group");
    let index = index_of(cluster, &follower);
    (follower, index)
}

const SERVER_REMOVE_TYPE: &str = "io.nats.jetstream.api.v1.meta_server_remove_response";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_remove_of_a_killed_node_re_places_its_streams_and_consumers() {
    let (mut cluster, clients) = nodes(5).await;
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let info = r3_with_reader(&cluster, &clients[0], &jetstream, ("SRV", "srv"), 20, 5).await;
    let all: Vec<usize> = (0..cluster.len()).collect();
    let (victim, victim_index) = idle_follower(&cluster, &info);
    cluster.kill9(victim_index);
    let through = (0..cluster.len())
        .find(|&i| i != victim_index)
        .expect("a live node");
    let system = system_client(&cluster, through).await;

    // nats-server's refusals, then success.
    let answer = one_answer(&system, "$JS.API.SERVER.REMOVE", Value::Null).await;
    assert_eq!(answer["type"], SERVER_REMOVE_TYPE, "{answer}");
    assert_eq!(error_code(&answer), 10003, "{answer}");
    let answer = one_answer(
        &system,
        "$JS.API.SERVER.REMOVE",
        json!({"peer": "no-such-server"}),
    )
    .await;
    assert_eq!(error_code(&answer), 10044, "{answer}");
    assert_eq!(
        answer["error"]["description"],
        "server is not a member of the cluster"
    );
    let answer = one_answer(
        &system,
        "$JS.API.SERVER.REMOVE",
        json!({"peer_id": "NOSUCHID"}),
    )
    .await;
    assert_eq!(error_code(&answer), 10044, "{answer}");
    let started = Instant::now();
    let answer = one_answer(&system, "$JS.API.SERVER.REMOVE", json!({ "peer": victim })).await;
    assert_eq!(answer, json!({"type": SERVER_REMOVE_TYPE, "success": true}));

    // The stream R3 again on live servers, with every message and the consumer's state.
    let client = &clients[through];
    let info = placed_without(&cluster, client, "SRV", &[&victim], 3, 20).await;
    println!(
        "server {victim} removed, its stream re-placed in {:?}: {:?}",
        started.elapsed(),
        members(&info)
    );
    for name in members(&info) {
        lead_on(client, "SRV", &name).await;
        reader_kept(client, "SRV", 5, 15).await;
    }
    let jetstream = async_nats::jetstream::new(client.clone());
    let ack = publish_until_acked(
        &jetstream,
        "srv.x",
        "after",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert_eq!(ack.sequence, 21);
    let live: Vec<usize> = all.into_iter().filter(|&i| i != victim_index).collect();
    agreed_leader(&cluster, &live, 4, None).expect("a meta group of the four left");
}

/// Peer removals during writes on a 4-node cluster: each cycle removes one of the R3 stream's
/// servers (a follower, then its leader, in turn) and the meta leader places it on the one free
/// server, the one removed the cycle before (re-added with its old replica gone). A writer
/// publishes unique payloads one at a time throughout, each sent again with the same message id
/// until acknowledged. At the end every replica, made leader in turn, holds exactly the
/// acknowledged payloads at their acknowledged sequences, and its replicas are current.
///
/// What a publisher needs during the cycles, asserted on ours and printed for nats-server (which
/// leaves a publish sent around a leader's removal unanswered now and then: its client waits out
/// its 5 s timeout; 2 of 2 runs on 4 Dec): every attempt answered (an acknowledgement, or a
/// refusal retried at once), every publish acknowledged within [`ACK_BOUND`], and with
/// `rate_kept`, publishing during the cycles at least that share of its rate just before them
/// in the same run (a membership change must not stall the leader).
async fn remove_and_re_add_during_writes(cycles: usize, rate_kept: Option<f64>) {
    let (cluster, clients) = nodes(4).await;
    let (created, _) = create_r3(&clients[0], "CYCLE", "cycle.>").await;
    created.assert_created();
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(Mutex::new(Vec::<Published>::new()));
    let writer = {
        let jetstream = async_nats::jetstream::new(clients[0].clone());
        let (stop, published) = (stop.clone(), published.clone());
        tokio::spawn(async move {
            let mut acked = BTreeMap::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let payload = format!("w{n}");
                let (sequence, record) = publish_recorded(&jetstream, &payload).await;
                lock(&published).push(record);
                assert!(
                    acked.insert(sequence, payload.clone()).is_none(),
                    "sequence {sequence} acked twice (again for {payload})"
                );
                n += 1;
            }
            acked
        })
    };
    // The rate before the cycles, in this run: the time the first acknowledgements took.
    let deadline = Instant::now() + ELECTION_BOUND;
    let warm_from = loop {
        let first = lock(&published).first().map(|record| record.acked);
        if let Some(first) = first {
            break first;
        }
        assert!(Instant::now() < deadline, "no publish acknowledged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    while lock(&published).len() <= WARM_ACKS {
        assert!(
            Instant::now() < deadline,
            "publishing too slow before the cycles"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let warm_until = Instant::now();
    let warm_rate = acks_between(&lock(&published), warm_from, warm_until);
    for cycle in 0..cycles {
        let info = placed_without(&cluster, &clients[1], "CYCLE", &[], 3, None).await;
        let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
        let placed = members(&info);
        let removed = if cycle % 2 == 1 {
            leader.clone()
        } else {
            placed
                .iter()
                .find(|name| **name != leader)
                .cloned()
                .expect("a follower")
        };
        let started = Instant::now();
        let answer = remove_peer(&clients[1], "CYCLE", &removed).await;
        assert_eq!(
            answer,
            json!({"type": "io.nats.jetstream.api.v1.stream_remove_peer_response", "success": true}),
            "cycle {cycle}"
        );
        let info = placed_without(&cluster, &clients[1], "CYCLE", &[&removed], 3, None).await;
        println!(
            "cycle {cycle}: {removed} (leader: {}) replaced in {:?}: {:?}",
            removed == leader,
            started.elapsed(),
            members(&info)
        );
    }
    let cycles_until = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.expect("writer");
    let published = lock(&published).clone();
    let cycle_rate = acks_between(&published, warm_until, cycles_until);
    let slowest = published
        .iter()
        .map(|record| record.took)
        .max()
        .unwrap_or_default();
    let unanswered: Vec<&Published> = published.iter().filter(|r| r.unanswered > 0).collect();
    let refused: usize = published.iter().map(|record| record.refused).sum();
    let slow: Vec<Duration> = published
        .iter()
        .map(|record| record.took)
        .filter(|took| *took > Duration::from_millis(100))
        .collect();
    let mut took: Vec<Duration> = published.iter().map(|record| record.took).collect();
    took.sort();
    let median = took.get(took.len() / 2).copied().unwrap_or_default();
    println!(
        "{} publishes acknowledged over {cycles} cycles; per second: {warm_rate:.0} before the \
         cycles, {cycle_rate:.0} during them; median {median:?}, slowest {slowest:?}, {} over \
         100 ms taking {:?} in all; {refused} attempts refused and retried; {} publishes with an \
         unanswered attempt: {unanswered:?}",
        acked.len(),
        slow.len(),
        slow.iter().sum::<Duration>(),
        unanswered.len()
    );
    if !test_harness::is_reference() {
        assert!(
            unanswered.is_empty(),
            "publishes not answered within the client's timeout: {unanswered:?}"
        );
        assert!(
            slowest <= ACK_BOUND,
            "a publish took {slowest:?} to be acknowledged"
        );
        if let Some(kept) = rate_kept {
            assert!(
                cycle_rate >= warm_rate * kept,
                "publishing slowed during the cycles: {cycle_rate:.1}/s against {warm_rate:.1}/s before"
            );
        }
    }
    let last = acked.keys().next_back().copied().unwrap_or(0);
    let expected: Vec<String> = acked.values().cloned().collect();
    assert_eq!(acked.len() as u64, last, "acknowledged sequences have gaps");
    let info = placed_without(&cluster, &clients[1], "CYCLE", &[], 3, last).await;
    for name in members(&info) {
        lead_on(&clients[1], "CYCLE", &name).await;
        placed_without(&cluster, &clients[1], "CYCLE", &[], 3, last).await;
        let stored: Vec<String> = read_all(&clients[1], "CYCLE", last)
            .await
            .into_values()
            .collect();
        assert!(
            stored == expected,
            "{name} does not hold the acknowledged payloads"
        );
    }
}

/// Acknowledgements counted before the cycles start, to measure the rate they are held to.
const WARM_ACKS: usize = 40;
/// The longest a publish may take, from its first attempt to its acknowledgement, during the
/// cycles: the slowest were 0.2-0.94 s in 12 runs of 10 cycles at load 11-18 (debug build); a
/// leader's handover and its successor's election are the longest waits a publisher sees.
const ACK_BOUND: Duration = Duration::from_secs(3);
/// The share of the rate before ten cycles that publishing keeps during them: 0.35-1.2 in 12
/// runs at load 11-18 (debug build; the low ones while a release build ran), the
/// membership changes costing a publisher 0.8-3 s of waits over 100 ms in 8-9 s of cycles.
/// nats-server kept 0.30 in one run, with two publishes unanswered for 5 s.
const RATE_KEPT: f64 = 0.2;

/// One publish of the cycles' writer.
#[derive(Clone, Debug)]
struct Published {
    /// When it was acknowledged.
    acked: Instant,
    /// From its first attempt to its acknowledgement.
    took: Duration,
    /// Attempts refused (an error answer, or no responders) and sent again.
    refused: usize,
    /// Attempts the client gave up waiting for (no answer within its timeout).
    unanswered: usize,
}

/// Publishes `payload` (also its message id) until acknowledged, as `publish_until_acked` does
/// (within [`REPLACE_BOUND`]), recording its attempts; its sequence and record.
async fn publish_recorded(
    jetstream: &async_nats::jetstream::Context,
    payload: &str,
) -> (u64, Published) {
    let sent = Instant::now();
    let (mut refused, mut unanswered) = (0, 0);
    loop {
        let message = async_nats::jetstream::message::PublishMessage::build()
            .payload(payload.to_string().into())
            .message_id(payload);
        let attempt = match jetstream.send_publish("cycle.x", message).await {
            Ok(pending) => pending.await,
            Err(error) => Err(error),
        };
        match attempt {
            Ok(ack) => {
                let acked = Instant::now();
                let took = acked - sent;
                let record = Published {
                    acked,
                    took,
                    refused,
                    unanswered,
                };
                return (ack.sequence, record);
            }
            Err(error) => {
                if error.kind() == async_nats::jetstream::context::PublishErrorKind::TimedOut {
                    unanswered += 1;
                } else {
                    refused += 1;
                }
                assert!(
                    sent.elapsed() < REPLACE_BOUND,
                    "{payload} never acked: {error}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Acknowledgements per second between `from` and `until`.
fn acks_between(published: &[Published], from: Instant, until: Instant) -> f64 {
    let count = published
        .iter()
        .filter(|record| record.acked > from && record.acked <= until)
        .count();
    count as f64 / (until - from).as_secs_f64().max(0.001)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_cycles_of_peer_remove_and_re_add_during_writes_lose_nothing() {
    // Three cycles measure no rate worth holding to (0.33-1.24 of the rate before them in 5
    // runs at load 12-13): the rate is asserted over ten.
    remove_and_re_add_during_writes(3, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 10 cycles (cargo test -p parity --test cluster membership -- --ignored)"]
async fn ten_cycles_of_peer_remove_and_re_add_during_writes_lose_nothing() {
    remove_and_re_add_during_writes(10, Some(RATE_KEPT)).await;
}

/// Consumer `num_replicas` and `mem_storage` on an R3 stream, as nats-server takes them: an R1
/// memory consumer accepted and reported as asked, a consumer of more replicas than its stream
/// refused with 10126.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_replicas_and_memory_storage_as_nats_server() {
    let (cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], "CREP", "crep.>").await;
    created.assert_created();
    placed_without(&cluster, &clients[0], "CREP", &[], 3, 0).await;
    let create = |name: &str, replicas: u64| {
        json!({
            "stream_name": "CREP",
            "config": {
                "durable_name": name,
                "ack_policy": "explicit",
                "num_replicas": replicas,
                "mem_storage": true,
            }
        })
    };
    let one = one_answer(
        &clients[1],
        "$JS.API.CONSUMER.CREATE.CREP.ONE",
        create("ONE", 1),
    )
    .await;
    assert!(one.get("error").is_none(), "{one}");
    assert_eq!(one["config"]["num_replicas"], 1, "{one}");
    assert_eq!(one["config"]["mem_storage"], true, "{one}");
    let info = one_answer(&clients[2], "$JS.API.CONSUMER.INFO.CREP.ONE", Value::Null).await;
    assert_eq!(info["config"]["num_replicas"], 1, "{info}");
    assert_eq!(info["config"]["mem_storage"], true, "{info}");
    let five = one_answer(
        &clients[1],
        "$JS.API.CONSUMER.CREATE.CREP.FIVE",
        create("FIVE", 5),
    )
    .await;
    assert_eq!(error_code(&five), 10126, "{five}");
}

//! Membership changes of replicated streams: `$JS.API.STREAM.PEER.REMOVE.<stream>` answered as
//! nats-server answers it (its errors, then success from the meta leader), and the stream R3
//! again on a server it was not on, with every acknowledged message, the removed server no
//! longer listed among its replicas.
//!
//! Five nodes, so the meta leader has a free server to re-place the removed peer on. All-rnats
//! clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`), where
//! every assertion holds too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::{connect, error_code, one_answer};
use crate::jetstream_r3_admin::directories_named;
use crate::jetstream_replicated::{create_r3, names_of, publish_until_acked, read_all};
use crate::meta::{agreed_leader, index_of, start, ELECTION_BOUND};

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
    messages: u64,
) -> Value {
    let deadline = Instant::now() + REPLACE_BOUND;
    let names = names_of(cluster);
    loop {
        let info = stream_info(client, stream).await;
        let placed = members(&info);
        let settled = placed.len() == replicas
            && placed.iter().all(|name| names.contains(name))
            && without.iter().all(|gone| !placed.contains(*gone))
            && info["state"]["messages"] == messages
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
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let info = stream_info(client, stream).await;
        if info["cluster"]["leader"] == name {
            return;
        }
        let _ = client
            .request(
                format!("$JS.API.STREAM.LEADER.STEPDOWN.{stream}"),
                json!({"placement": {"preferred": name}}).to_string().into(),
            )
            .await;
        assert!(
            Instant::now() < deadline,
            "{name} does not lead {stream}: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
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
    assert_eq!(created["did_create"], true, "{created}");
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
    let stream = jetstream.get_stream("PEERS").await.expect("stream");
    let consumer: PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("READER".into()),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .expect("consumer");
    let mut batch = consumer
        .fetch()
        .max_messages(5)
        .messages()
        .await
        .expect("fetch");
    let mut acked = 0;
    while let Some(message) = batch.next().await {
        message.expect("message").double_ack().await.expect("ack");
        acked += 1;
    }
    assert_eq!(acked, 5);
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
    let reader = one_answer(
        &clients[0],
        "$JS.API.CONSUMER.INFO.PEERS.READER",
        Value::Null,
    )
    .await;
    assert_eq!(reader["ack_floor"]["stream_seq"], 5, "{reader}");
    assert_eq!(reader["num_pending"], 15, "{reader}");
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
    assert_eq!(created["did_create"], true, "{created}");
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

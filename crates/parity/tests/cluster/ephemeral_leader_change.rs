//! An ephemeral consumer of an R3 stream after the stream's leadership moved: it keeps running
//! on the server that created it (R1, not in the stream's group), and the cluster still answers
//! for it as nats-server does, once: CONSUMER.INFO with its state and its `cluster` naming that
//! server, CONSUMER.NAMES and LIST counting it once, CONSUMER.DELETE deleting it (no more
//! deliveries, gone from every list), and its inactivity threshold removing it everywhere.
//! Ours (before the ephemerals were found through their host) answered 10014 "consumer not
//! found" from the new leader and left it out of the lists.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::{answers, error_code, one_answer};
use crate::jetstream_replicated::create_r3;
use crate::membership::{lead_on, nodes, stream_info};
use crate::meta::index_of;

/// The inactivity threshold of the ephemeral left idle.
const IDLE_THRESHOLD: Duration = Duration::from_secs(2);
/// It is removed everywhere within this after the threshold.
const REMOVAL_BOUND: Duration = Duration::from_secs(20);

/// Creates an ephemeral pull consumer of `stream` (explicit acks, `threshold` of inactivity);
/// returns its name and the server running it.
async fn ephemeral(client: &Client, stream: &str, threshold: Duration) -> (String, String) {
    let created = one_answer(
        client,
        &format!("$JS.API.CONSUMER.CREATE.{stream}"),
        json!({"stream_name": stream, "config": {
            "ack_policy": "explicit",
            "inactive_threshold": threshold.as_nanos() as u64,
        }}),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let name = created["name"].as_str().expect("a name").to_string();
    let host = created["cluster"]["leader"]
        .as_str()
        .expect("its server")
        .to_string();
    (name, host)
}

/// CONSUMER.INFO of `name` on `stream`, asked once through `client`.
async fn consumer_info(client: &Client, stream: &str, name: &str) -> Value {
    let subject = format!("$JS.API.CONSUMER.INFO.{stream}.{name}");
    one_answer(client, &subject, Value::Null).await
}

/// CONSUMER.INFO of `name` through `client` answers 10014 (consumer not found).
async fn assert_gone(client: &Client, stream: &str, name: &str) {
    let info = consumer_info(client, stream, name).await;
    assert_eq!(error_code(&info), 10014, "{info}");
}

/// The sorted names CONSUMER.NAMES answers (once) through `client`, and its `total`.
async fn names(client: &Client, stream: &str) -> (BTreeSet<String>, u64) {
    let answer = one_answer(
        client,
        &format!("$JS.API.CONSUMER.NAMES.{stream}"),
        json!({}),
    )
    .await;
    assert!(answer.get("error").is_none(), "{answer}");
    let names: Vec<String> = answer["consumers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_string))
        .collect();
    let set: BTreeSet<String> = names.iter().cloned().collect();
    assert_eq!(set.len(), names.len(), "a name twice: {answer}");
    (set, answer["total"].as_u64().unwrap_or(0))
}

/// A message of `stream` fetched through the pull consumer `name` (one request, 3 s).
async fn fetch_one(client: &Client, stream: &str, name: &str) -> Option<String> {
    let inbox = client.new_inbox();
    let mut subscription = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish_with_reply(
            format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}"),
            inbox,
            json!({"batch": 1, "expires": 2_000_000_000u64})
                .to_string()
                .into(),
        )
        .await
        .expect("publish");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, subscription.next()).await {
        if message.status.is_none() && !message.payload.is_empty() {
            return Some(String::from_utf8_lossy(&message.payload).into_owned());
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_is_found_listed_and_deleted_after_its_stream_leader_moved() {
    let (cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], "EPHL", "ephl.>").await;
    created.assert_created();
    // Ours runs an ephemeral on the stream's leader; nats-server places it on one of the
    // stream's servers: the test follows where each runs.
    let (kept, host) = ephemeral(&clients[1], "EPHL", Duration::from_secs(120)).await;
    let (idle, _) = ephemeral(&clients[2], "EPHL", IDLE_THRESHOLD).await;
    let durable = one_answer(
        &clients[0],
        "$JS.API.CONSUMER.CREATE.EPHL.DUR",
        json!({"stream_name": "EPHL", "config": {"durable_name": "DUR", "ack_policy": "explicit"}}),
    )
    .await;
    assert!(durable.get("error").is_none(), "{durable}");

    // The stream's leadership moves to another server; the ephemerals stay where they run.
    let other = (0..3)
        .map(|i| cluster.node(i).name.clone())
        .find(|name| *name != host)
        .expect("another server");
    lead_on(&clients[0], "EPHL", &other).await;
    let host_index = index_of(&cluster, &host);

    for client in &clients {
        let info = consumer_info(client, "EPHL", &kept).await;
        assert!(info.get("error").is_none(), "{info}");
        assert_eq!(info["name"], kept.as_str(), "{info}");
        assert_eq!(info["cluster"]["leader"], host.as_str(), "{info}");
    }
    for client in &clients {
        let (listed, total) = names(client, "EPHL").await;
        assert!(
            listed.contains(&kept) && listed.contains("DUR"),
            "{listed:?}"
        );
        assert_eq!(total, listed.len() as u64, "{listed:?}");
    }
    let list = one_answer(&clients[2], "$JS.API.CONSUMER.LIST.EPHL", json!({})).await;
    let listed: Vec<&Value> = list["consumers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|info| info["name"] == kept.as_str())
        .collect();
    assert_eq!(listed.len(), 1, "{list}");
    assert_eq!(listed[0]["cluster"]["leader"], host.as_str(), "{list}");
    let count = list["consumers"].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(list["total"], count, "{list}");

    // It keeps delivering where it runs.
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    jetstream
        .publish("ephl.1", "one".into())
        .await
        .expect("publish")
        .await
        .expect("ack");
    assert_eq!(
        fetch_one(&clients[host_index], "EPHL", &kept)
            .await
            .as_deref(),
        Some("one")
    );

    // Its host answers a pause (once), and a leader stepdown of it.
    let until = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let until = until
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a time");
    let paused = one_answer(
        &clients[0],
        &format!("$JS.API.CONSUMER.PAUSE.EPHL.{kept}"),
        json!({ "pause_until": until }),
    )
    .await;
    assert_eq!(paused["paused"], true, "{paused}");
    let stepped = one_answer(
        &clients[1],
        &format!("$JS.API.CONSUMER.LEADER.STEPDOWN.EPHL.{kept}"),
        Value::Null,
    )
    .await;
    assert_eq!(stepped["success"], true, "{stepped}");
    let missing = one_answer(&clients[2], "$JS.API.CONSUMER.PAUSE.EPHL.NOPE", json!({})).await;
    assert_eq!(error_code(&missing), 10014, "{missing}");

    // The idle one goes everywhere after its threshold.
    let deadline = Instant::now() + IDLE_THRESHOLD + REMOVAL_BOUND;
    loop {
        let (listed, _) = names(&clients[1], "EPHL").await;
        if !listed.contains(&idle) {
            break;
        }
        assert!(Instant::now() < deadline, "{idle} still listed: {listed:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_gone(&clients[1], "EPHL", &idle).await;

    // DELETE through the new leader's node.
    let deleted = one_answer(
        &clients[index_of(&cluster, &other)],
        &format!("$JS.API.CONSUMER.DELETE.EPHL.{kept}"),
        Value::Null,
    )
    .await;
    assert_eq!(deleted["success"], true, "{deleted}");
    assert_gone(&clients[0], "EPHL", &kept).await;
    let (listed, total) = names(&clients[2], "EPHL").await;
    assert_eq!(listed, BTreeSet::from(["DUR".to_string()]), "{total}");
    let list = one_answer(&clients[1], "$JS.API.CONSUMER.LIST.EPHL", json!({})).await;
    assert_eq!(list["total"], 1, "{list}");
    // And it no longer delivers.
    jetstream
        .publish("ephl.2", "two".into())
        .await
        .expect("publish")
        .await
        .expect("ack");
    assert_eq!(fetch_one(&clients[host_index], "EPHL", &kept).await, None);
    drop(cluster);
}

/// A three-server cluster with the R3 stream `stream` whose ephemeral `name` runs on `host`
/// while `other` leads the stream.
struct Moved {
    cluster: Cluster,
    clients: Vec<Client>,
    name: String,
    host: String,
    other: String,
}

async fn moved(stream: &str) -> Moved {
    let (cluster, clients) = nodes(3).await;
    let subjects = format!("{}.>", stream.to_lowercase());
    let (created, _) = create_r3(&clients[0], stream, &subjects).await;
    created.assert_created();
    let (name, host) = ephemeral(&clients[0], stream, Duration::from_secs(120)).await;
    let other = (0..3)
        .map(|i| cluster.node(i).name.clone())
        .find(|name| *name != host)
        .expect("another server");
    lead_on(&clients[0], stream, &other).await;
    Moved {
        cluster,
        clients,
        name,
        host,
        other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_survives_the_kill_of_a_later_leader_and_goes_with_its_host() {
    let Moved {
        mut cluster,
        clients,
        name,
        host,
        other,
    } = moved("EPHK").await;
    let host_index = index_of(&cluster, &host);
    let other_index = index_of(&cluster, &other);
    let third = (0..3)
        .find(|i| *i != host_index && *i != other_index)
        .expect("a third");

    // The leader it was moved to is killed: the stream's group elects one of the two left.
    cluster.kill9(other_index);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = stream_info(&clients[third], "EPHK").await;
        let now = info["cluster"]["leader"].as_str().unwrap_or_default();
        if !now.is_empty() && now != other {
            break;
        }
        assert!(Instant::now() < deadline, "no new leader: {info}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let info = consumer_info(&clients[third], "EPHK", &name).await;
    assert_eq!(info["name"], name.as_str(), "{info}");
    assert_eq!(info["cluster"]["leader"], host.as_str(), "{info}");
    let (listed, total) = names(&clients[third], "EPHK").await;
    assert_eq!(listed, BTreeSet::from([name.clone()]), "{total}");
    let deleted = one_answer(
        &clients[host_index],
        &format!("$JS.API.CONSUMER.DELETE.EPHK.{name}"),
        Value::Null,
    )
    .await;
    assert_eq!(deleted["success"], true, "{deleted}");
    let (listed, _) = names(&clients[third], "EPHK").await;
    assert!(listed.is_empty(), "{listed:?}");
    drop(cluster);
}

/// The ephemeral's host killed, the consumer (R1, in memory) is gone with it. Ours then answers
/// CONSUMER.INFO 10014 and leaves it out of the lists; nats-server's meta group keeps its
/// assignment: INFO goes unanswered (its host does not answer) and NAMES still lists it
/// (docs/parity.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_whose_host_is_killed_is_gone() {
    let Moved {
        mut cluster,
        clients,
        name,
        host,
        other,
    } = moved("EPHG").await;
    let other_index = index_of(&cluster, &other);
    cluster.kill9(index_of(&cluster, &host));
    let got = answers(
        &clients[other_index],
        &format!("$JS.API.CONSUMER.INFO.EPHG.{name}"),
        Value::Null,
    )
    .await;
    if test_harness::is_reference() {
        // nats-server leaves it unanswered: the assignment's host is gone.
        assert!(got.iter().all(|info| error_code(info) == 10014), "{got:?}");
        return;
    }
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(error_code(&got[0]), 10014, "{got:?}");
    let (listed, total) = names(&clients[other_index], "EPHG").await;
    assert!(listed.is_empty(), "{listed:?} {total}");
    drop(cluster);
}

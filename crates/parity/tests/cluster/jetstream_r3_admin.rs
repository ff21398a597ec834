//! STREAM.DELETE and STREAM.UPDATE of R3 streams, sent through a server that does not lead the
//! stream: a delete is answered once, leaves no directory of the stream or its Raft group on any
//! node's disk, and frees the name for a new stream; an update (subjects, max_msgs) is answered
//! once and holds on every replica, each made leader in turn (stepdown with a preferred server).
//! STREAM.LIST, answered by the meta leader, shows a stream led elsewhere as its leader does.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use test_harness::cluster::Cluster;

use crate::jetstream_assignments::one_answer;
use crate::jetstream_replicated::{
    create_r3, publish_until_acked, r3_config, settled_info, three_nodes,
};
use crate::meta::{agreed_leader, index_of, ELECTION_BOUND};

/// Removal of a deleted stream's files on every node happens within this.
const REMOVAL_BOUND: Duration = Duration::from_secs(15);

/// Every path under `root` (directories and files), recursively.
pub(crate) fn paths_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// The directories under `root` named `name`.
pub(crate) fn directories_named(root: &Path, name: &str) -> Vec<String> {
    paths_under(root)
        .into_iter()
        .filter(|path| path.is_dir() && path.file_name().is_some_and(|n| n == name))
        .map(|path| path.display().to_string())
        .collect()
}

/// Every node's directories named after the stream or its Raft group.
fn leftovers(cluster: &Cluster, names: &[&str]) -> Vec<String> {
    cluster
        .nodes()
        .iter()
        .filter_map(|node| node.store_dir.as_deref())
        .flat_map(|root| names.iter().flat_map(|name| directories_named(root, name)))
        .collect()
}

/// A node that does not lead `stream` (per `info`).
fn follower_of(cluster: &Cluster, info: &Value) -> usize {
    let leader = info["cluster"]["leader"].as_str().unwrap_or("");
    let leader = index_of(cluster, leader);
    (0..cluster.len()).find(|&i| i != leader).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_deleted_through_a_follower_is_gone_from_every_node() {
    let (cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "GONE", "gone.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..5 {
        publish_until_acked(&jetstream, "gone.x", &format!("m{n}"), deadline).await;
    }
    let info = settled_info(&clients[0], "GONE", &names, 5).await;
    let group = info["cluster"]["raft_group"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(!group.is_empty(), "no raft_group: {info}");
    assert!(
        !leftovers(&cluster, &[&group]).is_empty(),
        "the group's directory was not found on disk: the check below would prove nothing"
    );

    let through = follower_of(&cluster, &info);
    let deleted = one_answer(&clients[through], "$JS.API.STREAM.DELETE.GONE", Value::Null).await;
    assert_eq!(
        deleted,
        json!({"type": "io.nats.jetstream.api.v1.stream_delete_response", "success": true})
    );
    let deadline = Instant::now() + REMOVAL_BOUND;
    loop {
        let left = leftovers(&cluster, &["GONE", &group]);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still on disk: {left:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for client in &clients {
        let info = one_answer(client, "$JS.API.STREAM.INFO.GONE", Value::Null).await;
        assert_eq!(info["error"]["err_code"], 10059, "{info}");
    }

    // The name is free: a new stream of it, other subjects, starts empty.
    let again = one_answer(
        &clients[through],
        "$JS.API.STREAM.CREATE.GONE",
        r3_config("GONE", "again.>"),
    )
    .await;
    assert_eq!(again["did_create"], true, "{again}");
    assert_eq!(again["state"]["messages"], 0, "{again}");
    let ack = publish_until_acked(
        &jetstream,
        "again.x",
        "first",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert_eq!((ack.stream.as_str(), ack.sequence), ("GONE", 1));
    settled_info(&clients[0], "GONE", &names, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_updated_through_a_follower_holds_on_every_replica() {
    let (cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "UPD", "upd.a").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..3 {
        publish_until_acked(&jetstream, "upd.a", &format!("a{n}"), deadline).await;
    }
    let info = settled_info(&clients[0], "UPD", &names, 3).await;

    let through = follower_of(&cluster, &info);
    let mut config = r3_config("UPD", "upd.a");
    config["subjects"] = json!(["upd.a", "upd.b"]);
    config["max_msgs"] = json!(5);
    let updated = one_answer(&clients[through], "$JS.API.STREAM.UPDATE.UPD", config).await;
    assert!(updated.get("error").is_none(), "{updated}");
    assert_eq!(updated["config"]["subjects"], json!(["upd.a", "upd.b"]));
    assert_eq!(updated["config"]["max_msgs"], 5, "{updated}");
    let mut published = 3;
    for n in 0..4 {
        publish_until_acked(&jetstream, "upd.b", &format!("b{n}"), deadline).await;
        published += 1;
    }
    settled_info(&clients[0], "UPD", &names, 5).await;

    // Each replica leads in turn: it has the new config and applies it to a publish.
    for name in &names {
        let info = settled_info(&clients[0], "UPD", &names, 5).await;
        if info["cluster"]["leader"] != name.as_str() {
            let answer = one_answer(
                &clients[0],
                "$JS.API.STREAM.LEADER.STEPDOWN.UPD",
                json!({"placement": {"preferred": name}}),
            )
            .await;
            assert_eq!(answer["success"], true, "{answer}");
        }
        let deadline = Instant::now() + ELECTION_BOUND;
        let info = loop {
            let info = settled_info(&clients[0], "UPD", &names, 5).await;
            if info["cluster"]["leader"] == name.as_str() {
                break info;
            }
            assert!(Instant::now() < deadline, "{name} does not lead: {info}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(info["config"]["subjects"], json!(["upd.a", "upd.b"]));
        assert_eq!(info["config"]["max_msgs"], 5, "{info}");
        published += 1;
        let payload = format!("led-by-{name}");
        let ack = publish_until_acked(&jetstream, "upd.b", &payload, deadline).await;
        assert_eq!(ack.sequence, published, "{payload}");
        let info = settled_info(&clients[0], "UPD", &names, 5).await;
        assert_eq!(info["state"]["first_seq"], published - 4, "{info}");
    }
}

/// STREAM.LIST is answered by the meta leader; an R3 stream led by another server is listed as
/// its leader shows it (`leader_since`, both other replicas). Ours once listed the meta leader's
/// own follower view of it: a `cluster` block without `replicas` or `leader_since`, so `nats
/// stream report` named one replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_led_elsewhere_is_listed_with_its_leader_s_cluster_view() {
    let (cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "LISTED", "listed.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    publish_until_acked(&jetstream, "listed.x", "one", deadline).await;
    let meta = tokio::task::block_in_place(|| agreed_leader(&cluster, &[0, 1, 2], 3, None))
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let info = loop {
        let info = settled_info(&clients[0], "LISTED", &names, 1).await;
        let leader = info["cluster"]["leader"].as_str().unwrap_or("");
        if !leader.is_empty() && leader != meta {
            break info;
        }
        assert!(Instant::now() < deadline, "only {meta} leads: {info}");
        if leader == meta {
            let elsewhere = names.iter().find(|name| **name != meta);
            let answer = one_answer(
                &clients[0],
                "$JS.API.STREAM.LEADER.STEPDOWN.LISTED",
                json!({"placement": {"preferred": elsewhere}}),
            )
            .await;
            assert_eq!(answer["success"], true, "{answer}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let elsewhere = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    assert_eq!(
        info["cluster"]["replicas"].as_array().map(Vec::len),
        Some(2),
        "{info}"
    );

    let listed = one_answer(&clients[0], "$JS.API.STREAM.LIST", json!({})).await;
    let stream = listed["streams"]
        .as_array()
        .and_then(|streams| streams.iter().find(|s| s["config"]["name"] == "LISTED"))
        .unwrap_or_else(|| panic!("LISTED not listed: {listed}"));
    let block = &stream["cluster"];
    assert_eq!(block["leader"], elsewhere.as_str(), "{listed}");
    assert!(block["leader_since"].is_string(), "{listed}");
    let mut replicas: Vec<&str> = block["replicas"]
        .as_array()
        .map(|replicas| replicas.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    replicas.sort_unstable();
    let mut others: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| *name != elsewhere)
        .collect();
    others.sort_unstable();
    assert_eq!(replicas, others, "{listed}");
}

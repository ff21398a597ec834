//! The `cluster` block of a consumer's info in a cluster, as nats-server's: a consumer without a
//! Raft group of its own (an ephemeral one, R1 wherever its stream is replicated, or any consumer
//! of an R1 stream) names the cluster and the server it runs on, and nothing else (no
//! `raft_group`, no `replicas`), in the CREATE answer, CONSUMER.INFO and CONSUMER.LIST alike.
//! Ours left the block out for them.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::jetstream_assignments::one_answer;
use crate::jetstream_replicated::create_r3;
use crate::membership::nodes;
use crate::scale::{apply, config};

/// Asserts `info`'s `cluster` is the block of a consumer running alone on one of `servers`, in
/// the cluster `name`; returns that server.
fn runs_alone(info: &Value, name: &str, servers: &BTreeSet<String>) -> String {
    let block = &info["cluster"];
    assert_eq!(block["name"], name, "{info}");
    assert!(block.get("raft_group").is_none(), "{info}");
    assert!(block.get("replicas").is_none(), "{info}");
    let leader = block["leader"].as_str().unwrap_or_default().to_string();
    assert!(
        servers.contains(&leader),
        "{leader:?} not one of {servers:?}: {info}"
    );
    leader
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_without_a_group_names_the_cluster_and_its_server() {
    let (cluster, clients) = nodes(3).await;
    let servers: BTreeSet<String> = (0..3).map(|i| cluster.node(i).name.clone()).collect();

    // An ephemeral consumer of an R3 stream.
    let (created, _) = create_r3(&clients[0], "CINFO", "cinfo.>").await;
    created.assert_created();
    let cluster_name = created.answer["cluster"]["name"]
        .as_str()
        .expect("the stream's cluster name")
        .to_string();
    let ephemeral = one_answer(
        &clients[1],
        "$JS.API.CONSUMER.CREATE.CINFO",
        json!({"stream_name": "CINFO", "config": {"ack_policy": "explicit"}}),
    )
    .await;
    assert!(ephemeral.get("error").is_none(), "{ephemeral}");
    let host = runs_alone(&ephemeral, &cluster_name, &servers);
    let name = ephemeral["name"].as_str().expect("the ephemeral's name");
    let info = one_answer(
        &clients[2],
        &format!("$JS.API.CONSUMER.INFO.CINFO.{name}"),
        Value::Null,
    )
    .await;
    assert_eq!(runs_alone(&info, &cluster_name, &servers), host, "{info}");

    // A durable consumer of an R1 stream runs where the stream is.
    let one = apply(&clients[0], "CREATE", config("CONE", 1)).await;
    assert!(one.answer.get("error").is_none(), "{}", one.answer);
    let stream_host = one.answer["cluster"]["leader"]
        .as_str()
        .expect("the R1 stream's server")
        .to_string();
    let durable = one_answer(
        &clients[2],
        "$JS.API.CONSUMER.CREATE.CONE.D",
        json!({"stream_name": "CONE", "config": {"durable_name": "D", "ack_policy": "explicit"}}),
    )
    .await;
    assert!(durable.get("error").is_none(), "{durable}");
    assert_eq!(runs_alone(&durable, &cluster_name, &servers), stream_host);
    let info = one_answer(&clients[1], "$JS.API.CONSUMER.INFO.CONE.D", Value::Null).await;
    assert_eq!(runs_alone(&info, &cluster_name, &servers), stream_host);
    let list = one_answer(&clients[0], "$JS.API.CONSUMER.LIST.CONE", json!({})).await;
    let listed = &list["consumers"][0];
    assert_eq!(listed["name"], "D", "{list}");
    assert_eq!(runs_alone(listed, &cluster_name, &servers), stream_host);
}

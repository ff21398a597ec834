//! `/jsz?streams=1&consumers=1&config=1&raft=1` and `/varz` on every node of a 3-node cluster
//! with an R3 stream and a durable consumer of it (issues 15 and 18), field for field where the
//! servers must agree: each node (followers too) lists the stream's other replicas and the
//! consumer, with its committed state and its `cluster` block; `raft=1` adds the stream's Raft
//! group, its consumers' (`consumer_raft_groups`) and the counts of streams and consumers the
//! node leads (`streams_leader`, `consumers_leader`); `/varz` `jetstream.meta` describes the meta
//! group as `/jsz` `meta_cluster` does. Ids, times and `current`/`active` of the replicas differ
//! legitimately and are not compared.
//!
//! On rnats a durable consumer rides its stream's group (docs/parity.md, "replicated
//! consumers"): its leader and Raft group are the stream's; on nats-server they are its own. The
//! test reads both from CONSUMER.INFO. All-rnats clusters normally; all-nats-server clusters in
//! the parity pass (`NATS_SERVER_BIN`), where every assertion holds too.

use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::PullConsumer;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::{http_get, Cluster};

use crate::jetstream_assignments::answers;
use crate::jetstream_consumers_replicated::{settled_consumer, with_durable};
use crate::jetstream_replicated::{r3_config, settled_info};
use crate::meta::{agreed_leader, system_client};

/// Replicas apply what was committed (the consumer's ack included) within this.
const SETTLE: Duration = Duration::from_secs(30);

/// The names in a `cluster` block's `replicas`, sorted.
fn replica_names(cluster: &Value) -> Vec<String> {
    let mut names: Vec<String> = cluster["replicas"]
        .as_array()
        .map(|replicas| {
            replicas
                .iter()
                .filter_map(|replica| replica["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every server's name but `own`, sorted.
fn others(names: &[String], own: &str) -> Vec<String> {
    let mut others: Vec<String> = names.iter().filter(|name| *name != own).cloned().collect();
    others.sort();
    others
}

fn get_json(cluster: &Cluster, index: usize, path: &str) -> Result<Value, String> {
    let body = http_get(cluster.node(index).monitor_port, path)
        .ok_or_else(|| format!("node {index}: {path} not answered"))?;
    serde_json::from_str(&body).map_err(|error| format!("node {index}: {path}: {error}: {body}"))
}

/// What the servers agree on, for the checks.
struct Expected<'a> {
    names: &'a [String],
    stream_leader: &'a str,
    consumer_leader: &'a str,
    consumer_group: &'a str,
}

/// Node `index`'s `/jsz?streams=1&consumers=1&config=1&raft=1`, checked; the stream's Raft group
/// and the node's leader counts.
fn check_jsz(
    cluster: &Cluster,
    index: usize,
    expected: &Expected,
) -> Result<(String, u64, u64), String> {
    let own = cluster.node(index).name.as_str();
    let jsz = get_json(cluster, index, "/jsz?streams=1&consumers=1&config=1&raft=1")?;
    let fail = |what: &str| Err(format!("node {own}: {what}: {jsz}"));
    let account = jsz["account_details"]
        .as_array()
        .and_then(|accounts| accounts.iter().find(|account| account["name"] == "APP"));
    let Some(stream) = account
        .and_then(|account| account["stream_detail"].as_array())
        .and_then(|streams| streams.iter().find(|stream| stream["name"] == "S"))
    else {
        return fail("no stream S in account APP");
    };
    let cluster_block = &stream["cluster"];
    if cluster_block["leader"] != expected.stream_leader {
        return fail("stream leader");
    }
    if replica_names(cluster_block) != others(expected.names, own) {
        return fail("stream replicas are not every other server");
    }
    if !stream["config"].is_object() {
        return fail("no stream config with config=1");
    }
    let group = stream["stream_raft_group"].as_str().unwrap_or("");
    if group.is_empty() || cluster_block["raft_group"] != group {
        return fail("stream_raft_group is not the cluster block's raft_group");
    }
    let consumers = stream["consumer_detail"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let [consumer] = consumers.as_slice() else {
        return fail("not exactly one consumer");
    };
    if consumer["name"] != "D" || consumer["stream_name"] != "S" {
        return fail("consumer names");
    }
    if !consumer["config"].is_object() {
        return fail("no consumer config with config=1");
    }
    // The stored config: without the metadata only CONSUMER.INFO's answer adds.
    let metadata = &consumer["config"]["metadata"];
    if metadata.get("_nats.ver").is_some() || metadata.get("_nats.level").is_some() {
        return fail("consumer config with response-only metadata");
    }
    // The committed state: message 1 delivered and acknowledged. (`num_pending` differs: a
    // nats-server follower of the consumer does not count it, 0; ours counts from its stream.)
    if consumer["delivered"]["stream_seq"] != 1
        || consumer["ack_floor"]["stream_seq"] != 1
        || consumer["num_ack_pending"] != 0
    {
        return fail("consumer state is not the committed one");
    }
    if consumer["cluster"]["leader"] != expected.consumer_leader
        || consumer["cluster"]["raft_group"] != expected.consumer_group
    {
        return fail("consumer cluster block");
    }
    if replica_names(&consumer["cluster"]) != others(expected.names, own) {
        return fail("consumer replicas are not every other server");
    }
    if stream["consumer_raft_groups"]
        != json!([{"name": "D", "raft_group": expected.consumer_group}])
    {
        return fail("consumer_raft_groups");
    }
    // The Raft groups this server runs: the meta group, the stream's and (nats-server) the
    // consumer's own; ours' consumer rides the stream's group (docs/parity.md).
    let groups = if test_harness::is_reference() { 3 } else { 2 };
    if jsz["ha_assets"] != groups {
        return fail("ha_assets is not the Raft groups run here");
    }
    // Absent when zero (Go's omitempty).
    let count = |key: &str| jsz.get(key).map(|count| count.as_u64().unwrap_or(0));
    let (streams_leader, consumers_leader) = (count("streams_leader"), count("consumers_leader"));
    if streams_leader == Some(0) || consumers_leader == Some(0) {
        return fail("a zero leader count shown");
    }
    let leads_stream = own == expected.stream_leader;
    let leads_consumer = own == expected.consumer_leader;
    if streams_leader.is_some() != leads_stream || consumers_leader.is_some() != leads_consumer {
        return fail("streams_leader/consumers_leader do not follow who leads");
    }
    Ok((
        group.to_string(),
        streams_leader.unwrap_or(0),
        consumers_leader.unwrap_or(0),
    ))
}

/// Node `index`'s `/varz` `jetstream.meta`, checked against `/jsz` `meta_cluster`.
fn check_varz_meta(
    cluster: &Cluster,
    index: usize,
    names: &[String],
    meta_leader: &str,
) -> Result<(), String> {
    let own = cluster.node(index).name.as_str();
    let varz = get_json(cluster, index, "/varz")?;
    let meta = &varz["jetstream"]["meta"];
    let fail = |what: &str| Err(format!("node {own}: /varz jetstream.meta: {what}: {meta}"));
    if meta["name"] != "meta" || meta["leader"] != meta_leader {
        return fail("name or leader");
    }
    if meta["peer"].as_str().is_none_or(|peer| peer.len() != 8) {
        return fail("no 8-character leader peer id");
    }
    if meta["cluster_size"] != 3 || meta["quorum_needed"] != 2 {
        return fail("size or quorum");
    }
    // The Raft groups run here, as in `/jsz` (see `check_jsz`).
    let groups = if test_harness::is_reference() { 3 } else { 2 };
    if varz["jetstream"]["stats"]["ha_assets"] != groups {
        return Err(format!(
            "node {own}: /varz jetstream.stats.ha_assets: {}",
            varz["jetstream"]["stats"]
        ));
    }
    if replica_names(meta) != others(names, own) {
        return fail("replicas are not every other server");
    }
    for key in ["pending", "pending_requests", "pending_infos"] {
        if !meta[key].is_u64() {
            return fail(key);
        }
    }
    let snapshot = &meta["snapshot"];
    if !snapshot["pending_entries"].is_u64()
        || !snapshot["pending_size"].is_u64()
        || !snapshot["last_time"].is_string()
    {
        return fail("snapshot");
    }
    // The meta log past its last snapshot holds at least the stream's and the consumer's
    // assignments (nats-server snapshots at start and on membership entries, then once a
    // minute, after this test's checks), and its files are not empty.
    if snapshot["pending_entries"].as_u64().unwrap_or(0) == 0
        || snapshot["pending_size"].as_u64().unwrap_or(0) == 0
    {
        return fail("no entries or bytes past the last snapshot");
    }
    let jsz = get_json(cluster, index, "/jsz")?;
    if jsz["meta_cluster"]["leader"] != meta["leader"] {
        return fail("not the leader /jsz meta_cluster names");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_shows_the_r3_stream_its_consumer_and_the_meta_group_as_nats_server() {
    let started = Instant::now();
    let (cluster, names, clients) = with_durable(
        r3_config("S", "s.>"),
        json!({"durable_name": "D", "ack_policy": "explicit"}),
    )
    .await;
    println!("stream and durable created after {:?}", started.elapsed());
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    for n in 1..=3u64 {
        let ack = jetstream
            .publish("s.x", format!("m{n}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
        assert_eq!(ack.sequence, n);
    }
    // Message 1 fetched and acknowledged (AckSync: committed on the consumer's replicas).
    let consumer: PullConsumer = jetstream
        .get_stream("S")
        .await
        .expect("stream")
        .get_consumer("D")
        .await
        .expect("consumer");
    let deadline = Instant::now() + SETTLE;
    let message = loop {
        assert!(Instant::now() < deadline, "message 1 never fetched");
        let batch = consumer
            .fetch()
            .max_messages(1)
            .expires(Duration::from_secs(1))
            .messages()
            .await;
        if let Ok(mut batch) = batch {
            if let Some(Ok(message)) = batch.next().await {
                break message;
            }
        }
    };
    message.double_ack().await.expect("AckSync confirmed");

    println!("message 1 acknowledged after {:?}", started.elapsed());
    let info = settled_info(&clients[0], "S", &names, 3).await;
    let stream_leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let consumer_info = settled_consumer(&clients[0], "S", "D", &names).await;
    let expected = Expected {
        names: &names,
        stream_leader: &stream_leader,
        consumer_leader: consumer_info["cluster"]["leader"].as_str().unwrap_or(""),
        consumer_group: consumer_info["cluster"]["raft_group"]
            .as_str()
            .unwrap_or(""),
    };
    assert!(!expected.consumer_group.is_empty(), "{consumer_info}");

    println!("stream and consumer settled after {:?}", started.elapsed());
    // Every node, followers included, shows it all once the replicas applied the ack.
    let deadline = Instant::now() + SETTLE;
    let seen = loop {
        let seen: Result<Vec<_>, String> = (0..3)
            .map(|index| check_jsz(&cluster, index, &expected))
            .collect();
        match seen {
            Ok(seen) => break seen,
            Err(error) => assert!(Instant::now() < deadline, "{error}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("every /jsz as expected after {:?}", started.elapsed());
    // One Raft group name for the stream on every node; one leader of each.
    assert!(
        seen.iter().all(|(group, _, _)| *group == seen[0].0),
        "{seen:?}"
    );
    assert_eq!(seen.iter().map(|(_, streams, _)| streams).sum::<u64>(), 1);
    assert_eq!(
        seen.iter().map(|(_, _, consumers)| consumers).sum::<u64>(),
        1
    );

    // Without `raft`: no Raft groups, no leader counts (nats-server counts them only then).
    for index in 0..3 {
        let jsz = get_json(&cluster, index, "/jsz?streams=1&consumers=1").expect("/jsz");
        assert!(jsz.get("streams_leader").is_none(), "{jsz}");
        assert!(jsz.get("consumers_leader").is_none(), "{jsz}");
        let stream = &jsz["account_details"][0]["stream_detail"][0];
        assert!(stream.get("stream_raft_group").is_none(), "{stream}");
        assert!(stream.get("consumer_raft_groups").is_none(), "{stream}");
        assert!(
            stream["consumer_detail"][0].get("config").is_none(),
            "{stream}"
        );
    }

    // /varz jetstream.meta on every node: the meta group every node names.
    let meta_leader = agreed_leader(&cluster, &[0, 1, 2], 3, None).expect("meta leader");
    let deadline = Instant::now() + SETTLE;
    loop {
        let checked: Result<Vec<()>, String> = (0..3)
            .map(|index| check_varz_meta(&cluster, index, &names, &meta_leader))
            .collect();
        match checked {
            Ok(_) => break,
            Err(error) => assert!(Instant::now() < deadline, "{error}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // $SYS STATSZ of every server: the same Raft group count in `jetstream.stats` as /jsz and
    // /varz (nats-server builds all three from one `usageStats`). Ours showed 0 there.
    let system = system_client(&cluster, 0).await;
    let groups = if test_harness::is_reference() { 3 } else { 2 };
    let deadline = Instant::now() + SETTLE;
    loop {
        let got = answers(&system, "$SYS.REQ.SERVER.PING.STATSZ", Value::Null).await;
        let counts: Vec<&Value> = got
            .iter()
            .map(|answer| &answer["statsz"]["jetstream"]["stats"]["ha_assets"])
            .collect();
        if counts.len() == 3 && counts.iter().all(|count| **count == groups) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "STATSZ jetstream.stats.ha_assets {counts:?}, expected {groups} from each of 3"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

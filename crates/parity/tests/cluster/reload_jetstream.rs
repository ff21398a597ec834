//! JetStream turned on and off by a config reload in a cluster, as nats-server's
//! `jetStreamOption` there: three nodes, JetStream in the files of nodes 0 and 1 only (the meta
//! group forms of those two: nats-server's "Adjusting JetStream expected peer set size to 2");
//! node 2 reloaded with `jetstream { }` starts JetStream and joins the meta group as its third
//! member, so an R3 stream can be placed; then the meta leader reloaded without `jetstream`
//! stops it: another node leads the meta group, `/jsz` there says disabled, the meta group keeps
//! it as a member (size 3, as nats-server), and its clients still reach JetStream through the
//! cluster: the R3 stream takes publishes from them with the two members left. Turned on again
//! with another store directory, it runs from there and the meta group is of three again.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_assignments::one_answer;
use crate::jetstream_replicated::{create_r3, publish_until_acked};
use crate::meta::{index_of, jsz, kind, meta_cluster, ELECTION_BOUND, SYSTEM_ACCOUNT};
use crate::reload_routes::{await_log, rewrite_and_hangup};
use crate::support::connect;

/// The `jetstream { }` line of node `index`, in a store directory of its own.
fn jetstream_line(stores: &Path, index: usize) -> String {
    format!(
        "jetstream {{ store_dir: {:?} }}\n",
        stores.join(format!("n{index}")).display().to_string()
    )
}

fn config(cluster: &Cluster, index: usize) -> String {
    std::fs::read_to_string(&cluster.node(index).config_path).expect("config")
}

/// Waits (bounded) until `check` holds for node `index`'s `/jsz`; returns that `/jsz`.
fn await_jsz(cluster: &Cluster, index: usize, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let seen = jsz(cluster, index);
        if let Some(jsz) = seen.as_ref().filter(|jsz| check(jsz)) {
            return jsz.clone();
        }
        assert!(
            Instant::now() < deadline,
            "node {index}: {what}; /jsz: {seen:?}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Against nats-server only: the names its servers' `/jsz` give the meta group's peers, by peer
/// id. nats-server 2.15.1 sometimes names a member "Server name unknown at this time (peerID: X)"
/// after these reloads: seen in a CI parity pass and locally, node 2 (whose JetStream a reload
/// turned on) listing its own peer so, offline, in its `/jsz` for 30 s and more, and in the
/// `cluster` of the R3 stream it created; the other servers name that peer. [`members`] resolves
/// such a name through this map. Ours must always name its members itself: empty for ours.
fn reference_peer_names(cluster: &Cluster) -> HashMap<String, String> {
    let mut names = HashMap::new();
    if !test_harness::is_reference() {
        return names;
    }
    for index in 0..3 {
        let Some(meta) = meta_cluster(cluster, index) else {
            continue;
        };
        for replica in meta["replicas"].as_array().into_iter().flatten() {
            if let (Some(peer), Some(name)) = (replica["peer"].as_str(), replica["name"].as_str()) {
                if !name.starts_with(UNKNOWN_NAME) {
                    names.insert(peer.to_string(), name.to_string());
                }
            }
        }
    }
    names
}

/// How nats-server names a peer whose server it does not know (yet).
const UNKNOWN_NAME: &str = "Server name unknown";

/// The servers a `cluster` block (`/jsz` `meta_cluster`, a stream's) names: its leader and its
/// replicas (a node's `/jsz` lists every member but itself); a name nats-server did not know is
/// resolved through `known` ([`reference_peer_names`]).
fn members(meta: &Value, known: &HashMap<String, String>) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = meta["replicas"]
        .as_array()
        .map(|replicas| {
            replicas
                .iter()
                .filter_map(|replica| {
                    let name = replica["name"].as_str()?;
                    let resolved = name
                        .starts_with(UNKNOWN_NAME)
                        .then(|| replica["peer"].as_str().and_then(|peer| known.get(peer)))
                        .flatten();
                    Some(resolved.map_or(name, String::as_str).to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    names.extend(meta["leader"].as_str().map(str::to_string));
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_turned_on_joins_the_meta_group_and_turned_off_leaves_its_leadership() {
    let stores = tempfile::tempdir().expect("store dirs");
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "meta".into();
    options.extra_config = SYSTEM_ACCOUNT.into();
    options.node_config = vec![
        jetstream_line(stores.path(), 0),
        jetstream_line(stores.path(), 1),
        String::new(),
    ];
    let cluster = Cluster::start(options);
    let names: BTreeSet<String> = (0..3).map(|i| cluster.node(i).name.clone()).collect();

    // The two JetStream servers form the meta group without node 2.
    await_jsz(&cluster, 0, "a meta leader of two", |jsz| {
        jsz["meta_cluster"]["leader"].is_string() && jsz["meta_cluster"]["cluster_size"] == 2
    });
    await_jsz(&cluster, 2, "JetStream disabled", |jsz| {
        jsz["disabled"] == true
    });

    // Node 2 turns JetStream on: it starts and joins as the third member.
    let on = format!(
        "{}{}",
        config(&cluster, 2),
        jetstream_line(stores.path(), 2)
    );
    rewrite_and_hangup(&cluster, 2, &on);
    await_log(&cluster, 2, "Reloaded: JetStream", 1);
    await_log(&cluster, 2, "Reloaded server configuration", 1);
    for index in 0..3 {
        await_jsz(&cluster, index, "three meta members", |jsz| {
            let mut seen = members(&jsz["meta_cluster"], &reference_peer_names(&cluster));
            seen.insert(cluster.node(index).name.clone());
            jsz.get("disabled") != Some(&Value::Bool(true)) && seen == names
        });
    }

    // An R3 stream needs node 2's JetStream.
    let clients = [
        connect(&cluster, 0).await,
        connect(&cluster, 1).await,
        connect(&cluster, 2).await,
    ];
    let (created, _) = create_r3(&clients[2], "TOGGLED", "toggled.>").await;
    created.assert_created();
    let peers = members(&created.answer["cluster"], &reference_peer_names(&cluster));
    assert_eq!(peers.len(), 3, "{}", created.answer);

    // The meta leader turns JetStream off: another node leads, the member stays listed.
    let leader = meta_cluster(&cluster, 0)
        .and_then(|meta| meta["leader"].as_str().map(str::to_string))
        .expect("a meta leader");
    let off_index = index_of(&cluster, &leader);
    let off = config(&cluster, off_index).replace(&jetstream_line(stores.path(), off_index), "");
    rewrite_and_hangup(&cluster, off_index, &off);
    await_log(&cluster, off_index, "Reloaded: JetStream", 1);
    await_jsz(&cluster, off_index, "JetStream disabled", |jsz| {
        jsz["disabled"] == true
    });
    let other = (0..3).find(|&i| i != off_index).expect("another node");
    let after = await_jsz(&cluster, other, "another meta leader", |jsz| {
        let meta = &jsz["meta_cluster"];
        meta["leader"].is_string() && meta["leader"] != leader.as_str()
    });
    assert_eq!(after["meta_cluster"]["cluster_size"], 3, "{after}");

    // The node's clients reach JetStream through the cluster; the R3 stream, with two of its
    // members left, takes their publishes.
    let info = one_answer(&clients[off_index], "$JS.API.INFO", Value::Null).await;
    assert!(info.get("error").is_none(), "{info}");
    assert_eq!(info["streams"], 1, "{info}");
    let jetstream = async_nats::jetstream::new(clients[off_index].clone());
    let ack = publish_until_acked(
        &jetstream,
        "toggled.one",
        "after-off",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    assert_eq!(ack.stream, "TOGGLED");
    assert_eq!(ack.sequence, 1);

    // Back on with another store directory: it runs from there and is a member again, the
    // group still of three (its old self replaced, as nats-server).
    let moved = stores.path().join("moved");
    let again = format!(
        "{off}jetstream {{ store_dir: {:?} }}\n",
        moved.display().to_string()
    );
    rewrite_and_hangup(&cluster, off_index, &again);
    await_log(&cluster, off_index, "Reloaded: JetStream", 2);
    let expected = moved.join("jetstream").display().to_string();
    for index in 0..3 {
        await_jsz(&cluster, index, "three meta members again", |jsz| {
            let mut seen = members(&jsz["meta_cluster"], &reference_peer_names(&cluster));
            seen.insert(cluster.node(index).name.clone());
            jsz.get("disabled") != Some(&Value::Bool(true))
                && seen == names
                && jsz["meta_cluster"]["cluster_size"] == 3
                && (index != off_index || jsz["config"]["store_dir"] == expected.as_str())
        });
    }
}

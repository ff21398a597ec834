//! Clustered JetStream in two accounts: each account's streams are assigned by the one meta
//! group, keyed by account, so the same stream name in two accounts is two streams (own Raft
//! group, own messages, own subjects), each account's STREAM.NAMES lists only its own, and
//! deleting one leaves the other serving. R1 and R3 alike, created and used through different
//! nodes.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use async_nats::Client;
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_assignments::{error_code, leader_of, one_answer};
use crate::jetstream_replicated::{publish_until_acked, settled_info};
use crate::meta::{kind, ELECTION_BOUND};

const ACCOUNTS: &str = "accounts {\n  SYS: { users: [{user: sys, password: sys}] }\n  \
    A: { jetstream: enabled, users: [{user: a, password: a}] }\n  \
    B: { jetstream: enabled, users: [{user: b, password: b}] }\n}\n\
    system_account: SYS\nno_auth_user: a\n";

fn start() -> Cluster {
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "accounts".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = ACCOUNTS.into();
    Cluster::start(options)
}

async fn connect_as(cluster: &Cluster, index: usize, user: &str) -> Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .request_timeout(Some(Duration::from_secs(10)))
        .ignore_discovered_servers()
        .connect(cluster.url(index))
        .await
        .unwrap_or_else(|e| panic!("connect {user} to node {index}: {e}"))
}

/// Creates `name` (subjects `orders.>`) with `replicas` through `client`, asking again while
/// placement is refused right after start (nats-server's 10005) or the meta group has no
/// leader yet (10008).
async fn create(client: &Client, name: &str, replicas: u64) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    let body = json!({"name": name, "subjects": ["orders.>"], "num_replicas": replicas,
        "storage": "file"});
    loop {
        let created = one_answer(
            client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            body.clone(),
        )
        .await;
        let code = error_code(&created);
        if !matches!(code, 10005 | 10008) || Instant::now() > deadline {
            assert_eq!(code, 0, "create {name} R{replicas}: {created}");
            return created;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn stream_names(answer: &Value) -> Vec<String> {
    answer["streams"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

async fn publish_n(client: &Client, prefix: &str, count: usize) {
    let jetstream = async_nats::jetstream::new(client.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..count {
        publish_until_acked(&jetstream, "orders.new", &format!("{prefix}-{n}"), deadline).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_stream_name_in_two_accounts_is_two_replicated_streams() {
    let cluster = start();
    leader_of(&cluster, &[0, 1, 2]);
    let names: Vec<String> = (0..3).map(|i| cluster.node(i).name.clone()).collect();
    let a = connect_as(&cluster, 0, "a").await;
    let b = connect_as(&cluster, 1, "b").await;

    for replicas in [3, 1] {
        let stream = format!("ORDERS_R{replicas}");
        let in_a = create(&a, &stream, replicas).await;
        let in_b = create(&b, &stream, replicas).await;
        assert_eq!(in_a["config"]["num_replicas"], replicas, "{in_a}");
        assert_eq!(in_b["config"]["num_replicas"], replicas, "{in_b}");
        // Both capture `orders.>` in their own account: one publish each, for the stream
        // created last (the R1 stream takes over `orders.>` after the R3 one is deleted).
        if replicas == 3 {
            publish_n(&connect_as(&cluster, 2, "a").await, "a", 3).await;
            publish_n(&connect_as(&cluster, 2, "b").await, "b", 5).await;
            let info_a = settled_info(&a, &stream, &names, 3).await;
            let info_b = settled_info(&b, &stream, &names, 5).await;
            assert_eq!(info_a["state"]["messages"], 3, "{info_a}");
            assert_eq!(info_b["state"]["messages"], 5, "{info_b}");
            // The first message of each is its own account's.
            let first_a = one_answer(
                &a,
                &format!("$JS.API.STREAM.MSG.GET.{stream}"),
                json!({"seq": 1}),
            )
            .await;
            let first_b = one_answer(
                &b,
                &format!("$JS.API.STREAM.MSG.GET.{stream}"),
                json!({"seq": 1}),
            )
            .await;
            assert_eq!(first_a["message"]["data"], "YS0w", "a-0: {first_a}");
            assert_eq!(first_b["message"]["data"], "Yi0w", "b-0: {first_b}");
            // Each account lists its own stream only; A deletes its own and B's stays.
            let listed_a = one_answer(&a, "$JS.API.STREAM.NAMES", Value::Null).await;
            assert_eq!(stream_names(&listed_a), vec![stream.clone()], "{listed_a}");
            let deleted =
                one_answer(&a, &format!("$JS.API.STREAM.DELETE.{stream}"), Value::Null).await;
            assert_eq!(deleted["success"], true, "{deleted}");
            let listed_a = one_answer(&a, "$JS.API.STREAM.NAMES", Value::Null).await;
            assert!(stream_names(&listed_a).is_empty(), "{listed_a}");
            publish_n(&b, "b-after", 1).await;
            settled_info(&b, &stream, &names, 6).await;
            let deleted =
                one_answer(&b, &format!("$JS.API.STREAM.DELETE.{stream}"), Value::Null).await;
            assert_eq!(deleted["success"], true, "{deleted}");
        } else {
            publish_n(&a, "a1", 2).await;
            publish_n(&b, "b1", 4).await;
            let info_a =
                one_answer(&a, &format!("$JS.API.STREAM.INFO.{stream}"), Value::Null).await;
            let info_b =
                one_answer(&b, &format!("$JS.API.STREAM.INFO.{stream}"), Value::Null).await;
            assert_eq!(info_a["state"]["messages"], 2, "{info_a}");
            assert_eq!(info_b["state"]["messages"], 4, "{info_b}");
        }
    }
}

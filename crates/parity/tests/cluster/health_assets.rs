//! `$SYS.REQ.SERVER.PING.HEALTHZ` with an account, stream and consumer in a three-node
//! JetStream cluster, every server answering: an account counts as found on every server once
//! the meta group assigned a stream of it (held there or not), a stream only on the servers
//! holding it (an R1 stream: one ok, two 404s), a replicated durable consumer on every replica
//! (its followers too), and an account without streams nowhere. Account B's one R1 stream
//! makes B found on all three.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_assignments::{error_code, leader_of, one_answer};
use crate::meta::{kind, ELECTION_BOUND};

const ACCOUNTS: &str = "accounts {\n  SYS: { users: [{user: sys, password: sys}] }\n  \
    A: { jetstream: enabled, users: [{user: a, password: a}] }\n  \
    B: { jetstream: enabled, users: [{user: b, password: b}] }\n}\n\
    system_account: SYS\nno_auth_user: a\n";

async fn connect_as(cluster: &Cluster, user: &str) -> Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .request_timeout(Some(Duration::from_secs(10)))
        .ignore_discovered_servers()
        .connect(cluster.url(0))
        .await
        .unwrap_or_else(|e| panic!("connect {user}: {e}"))
}

/// `subject` with `body` through `client`, asked again while the meta group has no leader or
/// cannot place it yet (10008, 10005).
async fn create(client: &Client, subject: &str, body: Value) {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let created = one_answer(client, subject, body.clone()).await;
        let code = error_code(&created);
        if !matches!(code, 10005 | 10008) || Instant::now() > deadline {
            assert_eq!(code, 0, "{subject}: {created}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The status codes of the three servers' HEALTHZ answers to `body`, sorted.
async fn status_codes(system: &Client, body: &Value) -> Vec<u64> {
    let inbox = system.new_inbox();
    let mut answers = system.subscribe(inbox.clone()).await.expect("subscribe");
    system
        .publish_with_reply(
            "$SYS.REQ.SERVER.PING.HEALTHZ",
            inbox,
            body.to_string().into(),
        )
        .await
        .expect("publish");
    let mut codes = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while codes.len() < 3 {
        match tokio::time::timeout_at(deadline, answers.next()).await {
            Ok(Some(answer)) => {
                let value: Value = serde_json::from_slice(&answer.payload).expect("json");
                codes.push(value["data"]["status_code"].as_u64().unwrap_or(0));
            }
            _ => break,
        }
    }
    codes.sort_unstable();
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_finds_assets_on_the_servers_holding_them() {
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "health".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = ACCOUNTS.into();
    let cluster = Cluster::start(options);
    leader_of(&cluster, &[0, 1, 2]);
    let a = connect_as(&cluster, "a").await;
    create(
        &a,
        "$JS.API.STREAM.CREATE.R3S",
        json!({"name": "R3S", "subjects": ["r3.>"], "num_replicas": 3}),
    )
    .await;
    create(
        &a,
        "$JS.API.STREAM.CREATE.ONE",
        json!({"name": "ONE", "subjects": ["one.>"], "num_replicas": 1}),
    )
    .await;
    create(
        &a,
        "$JS.API.CONSUMER.CREATE.R3S.C",
        json!({"stream_name": "R3S", "config": {"durable_name": "C", "ack_policy": "explicit"}}),
    )
    .await;
    // Account B: one R1 stream, held by one server only.
    let b = connect_as(&cluster, "b").await;
    create(
        &b,
        "$JS.API.STREAM.CREATE.BONE",
        json!({"name": "BONE", "subjects": ["bone.>"], "num_replicas": 1}),
    )
    .await;
    let system = connect_as(&cluster, "sys").await;

    let cases = [
        (json!({"account": "A"}), vec![200, 200, 200]),
        (
            json!({"account": "A", "stream": "R3S", "consumer": "C"}),
            vec![200, 200, 200],
        ),
        (
            json!({"account": "A", "stream": "ONE"}),
            vec![200, 404, 404],
        ),
        (json!({"account": "B"}), vec![200, 200, 200]),
        (json!({"account": "NOPE"}), vec![404, 404, 404]),
    ];
    // The replicas catch up and the consumer's assignment reaches its followers: asked again
    // until every case holds, bounded.
    let deadline = Instant::now() + ELECTION_BOUND;
    for (body, expected) in cases {
        loop {
            let codes = status_codes(&system, &body).await;
            if codes == expected {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{body}: status codes {codes:?}, expected {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

//! JetStream for accounts that arrive at run time in a JetStream cluster in operator mode: an
//! account JWT pushed over `$SYS.REQ.CLAIMS.UPDATE` to a cluster of full resolvers, enabling
//! JetStream, lets the account create R1 and R3 streams through any node, under its JWT's
//! limits; a later update disabling JetStream stops them everywhere (`$JS.API` answers 10039),
//! and one enabling it again brings them back with their messages, without a restart.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use async_nats::Client;
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_assignments::{error_code, leader_of};
use crate::jetstream_replicated::{publish_until_acked, settled_info};
use crate::jwt_builder::{account_jwt_at, now, user_jwt, Trust};
use crate::meta::{kind, ELECTION_BOUND};
use crate::operator_resolver::{connect_when_known, full_resolvers, push_jwt, wait_for_routes};

/// A three-node JetStream cluster of full resolvers (each its own directory) trusting `trust`.
fn start(trust: &Trust, directory: &tempfile::TempDir) -> Cluster {
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "tenants".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = full_resolvers(trust, directory);
    let cluster = Cluster::launch(options);
    wait_for_routes(&cluster);
    leader_of(&cluster, &[0, 1, 2]);
    cluster
}

/// The account's JWT claims: JetStream with room for `streams` streams, or none.
fn jetstream(streams: Option<i64>) -> Value {
    let mut limits = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1,
        "exports": -1, "wildcards": true, "conn": -1, "leaf": -1});
    if let Some(streams) = streams {
        limits["mem_storage"] = json!(-1);
        limits["disk_storage"] = json!(-1);
        limits["streams"] = json!(streams);
        limits["consumer"] = json!(-1);
    }
    json!({ "limits": limits })
}

/// An account of its own with one user, connected to every node once each holds the account.
struct Tenant {
    key: nkeys::KeyPair,
    clients: Vec<Client>,
}

impl Tenant {
    async fn push(cluster: &Cluster, trust: &Trust, claims: Value) -> Tenant {
        let key = nkeys::KeyPair::new_account();
        Tenant::update(cluster, trust, &key, claims, now()).await;
        let user = nkeys::KeyPair::new_user();
        let jwt = user_jwt(&user, &key, None, json!({}));
        let mut clients = Vec::new();
        for index in 0..cluster.len() {
            clients.push(connect_when_known(cluster, index, &jwt, &user).await);
        }
        Tenant { key, clients }
    }

    async fn update(
        cluster: &Cluster,
        trust: &Trust,
        key: &nkeys::KeyPair,
        claims: Value,
        issued: i64,
    ) {
        let jwt = account_jwt_at(key, &trust.operator, claims, issued);
        let answer = push_jwt(cluster, 0, trust, jwt).await;
        assert_eq!(answer["data"]["message"], "jwt updated", "{answer}");
    }
}

/// One request's answer; `None` when nobody answered in time.
async fn ask(client: &Client, subject: &str, body: Value) -> Option<Value> {
    let payload = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let asked = client.request(subject.to_string(), payload.into());
    match tokio::time::timeout(Duration::from_secs(5), asked).await {
        Ok(Ok(message)) => serde_json::from_slice(&message.payload).ok(),
        _ => None,
    }
}

/// Ask until `done` holds for the answer (bounded); the last answer.
async fn ask_until(
    client: &Client,
    subject: &str,
    body: Value,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let answer = ask(client, subject, body.clone()).await;
        match answer {
            Some(answer) if done(&answer) => return answer,
            answer => assert!(
                Instant::now() < deadline,
                "{subject}: last answer {answer:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates `name` (subjects `<name>.>`, file storage) with `replicas` through `client`, asking
/// again while the meta group or placement is not ready (10005, 10008).
async fn create(client: &Client, name: &str, replicas: u64) -> Value {
    let body = json!({"name": name, "subjects": [format!("{name}.>")],
        "num_replicas": replicas, "storage": "file"});
    ask_until(
        client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        body,
        |answer| !matches!(error_code(answer), 10005 | 10008),
    )
    .await
}

fn names(cluster: &Cluster) -> Vec<String> {
    cluster
        .nodes()
        .iter()
        .map(|node| node.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_account_gets_clustered_jetstream_under_its_limits() {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start(&trust, &directory);
    let tenant = Tenant::push(&cluster, &trust, jetstream(Some(2))).await;

    let one = create(&tenant.clients[1], "ONE", 1).await;
    assert_eq!(error_code(&one), 0, "{one}");
    let three = create(&tenant.clients[2], "THREE", 3).await;
    assert_eq!(error_code(&three), 0, "{three}");
    let deadline = Instant::now() + ELECTION_BOUND;
    let publisher = async_nats::jetstream::new(tenant.clients[0].clone());
    let ack = publish_until_acked(&publisher, "ONE.a", "one-1", deadline).await;
    assert_eq!((ack.stream.as_str(), ack.sequence), ("ONE", 1));
    let ack = publish_until_acked(&publisher, "THREE.a", "three-1", deadline).await;
    assert_eq!((ack.stream.as_str(), ack.sequence), ("THREE", 1));
    let info = settled_info(&tenant.clients[1], "THREE", &names(&cluster), 1).await;
    assert_eq!(info["config"]["num_replicas"], 3, "{info}");

    // The JWT's two streams, whichever node is asked.
    let refused = create(&tenant.clients[0], "FULL", 1).await;
    assert_eq!(
        refused["error"],
        json!({"code": 400, "err_code": 10027, "description": "maximum number of streams reached"}),
        "{refused}"
    );
    let info = ask_until(&tenant.clients[2], "$JS.API.INFO", Value::Null, |info| {
        info["streams"] == 2
    })
    .await;
    assert_eq!(info["limits"]["max_streams"], 2, "{info}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_disables_and_enables_jetstream_across_the_cluster() {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start(&trust, &directory);
    let tenant = Tenant::push(&cluster, &trust, jetstream(Some(-1))).await;
    let issued = now();
    assert_eq!(error_code(&create(&tenant.clients[1], "ONE", 1).await), 0);
    assert_eq!(error_code(&create(&tenant.clients[2], "THREE", 3).await), 0);
    let deadline = Instant::now() + ELECTION_BOUND;
    let publisher = async_nats::jetstream::new(tenant.clients[0].clone());
    publish_until_acked(&publisher, "ONE.a", "one-1", deadline).await;
    publish_until_acked(&publisher, "THREE.a", "three-1", deadline).await;
    settled_info(&tenant.clients[0], "THREE", &names(&cluster), 1).await;

    // Disabled: every node answers the account's `$JS.API` with 10039.
    Tenant::update(&cluster, &trust, &tenant.key, jetstream(None), issued + 1).await;
    for client in &tenant.clients {
        for subject in ["$JS.API.INFO", "$JS.API.STREAM.INFO.THREE"] {
            ask_until(client, subject, Value::Null, |answer| {
                error_code(answer) == 10039
            })
            .await;
        }
    }

    // Enabled again: both streams are back with their message, and take new ones.
    Tenant::update(
        &cluster,
        &trust,
        &tenant.key,
        jetstream(Some(-1)),
        issued + 2,
    )
    .await;
    let subject = "$JS.API.STREAM.INFO.THREE";
    let info = ask_until(&tenant.clients[1], subject, Value::Null, |info| {
        info["state"]["messages"] == 1 && info["cluster"]["leader"].is_string()
    })
    .await;
    assert_eq!(info["config"]["num_replicas"], 3, "{info}");
    let info = ask_until(
        &tenant.clients[2],
        "$JS.API.STREAM.INFO.ONE",
        Value::Null,
        |info| info["state"]["messages"] == 1,
    )
    .await;
    assert_eq!(info["config"]["num_replicas"], 1, "{info}");
    if test_harness::is_reference() {
        // nats-server 2.15.1 answers STREAM.INFO of both again (the R3 one naming a leader
        // and no replicas), but a publish to either finds no responder for at least 30 s
        // (docs/parity.md).
        return;
    }
    settled_info(&tenant.clients[1], "THREE", &names(&cluster), 1).await;
    let deadline = Instant::now() + ELECTION_BOUND;
    let publisher = async_nats::jetstream::new(tenant.clients[2].clone());
    let ack = publish_until_acked(&publisher, "ONE.b", "one-2", deadline).await;
    assert_eq!((ack.stream.as_str(), ack.sequence), ("ONE", 2));
    let ack = publish_until_acked(&publisher, "THREE.b", "three-2", deadline).await;
    assert_eq!((ack.stream.as_str(), ack.sequence), ("THREE", 2));
    settled_info(&tenant.clients[0], "THREE", &names(&cluster), 2).await;
}

/// Tiered limits in a cluster: an R3 stream is counted against the JWT's `R3` tier and an R1
/// stream against `R1` (nats-server's `selectLimits` by replica count), each tier's stream
/// limit refusing only its own tier with 10027; `$JS.API.INFO` reports each tier's usage. A
/// JWT whose only tier is `R3` enables JetStream, and an R1 stream there finds no tier: 10120.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_streams_count_against_the_r3_tier() {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start(&trust, &directory);
    let tier = |streams: i64| json!({"mem_storage": -1, "disk_storage": -1, "streams": streams, "consumer": -1});
    let mut claims = jetstream(None);
    claims["limits"]["tiered_limits"] = json!({"R1": tier(1), "R3": tier(2)});
    let tenant = Tenant::push(&cluster, &trust, claims).await;

    assert_eq!(error_code(&create(&tenant.clients[0], "ONE", 1).await), 0);
    for (index, name) in ["THREE", "FOUR"].into_iter().enumerate() {
        let answer = create(&tenant.clients[index + 1], name, 3).await;
        assert_eq!(error_code(&answer), 0, "{answer}");
    }
    let refused = create(&tenant.clients[2], "FIVE", 3).await;
    assert_eq!(error_code(&refused), 10027, "{refused}");
    let refused = create(&tenant.clients[1], "TWO", 1).await;
    assert_eq!(error_code(&refused), 10027, "{refused}");
    let info = ask_until(&tenant.clients[0], "$JS.API.INFO", Value::Null, |info| {
        info["streams"] == 3
    })
    .await;
    assert_eq!(info["tiers"]["R1"]["streams"], 1, "{info}");
    assert_eq!(info["tiers"]["R3"]["streams"], 2, "{info}");
    assert_eq!(info["tiers"]["R3"]["limits"]["max_streams"], 2, "{info}");
    // Consumers count in their own tier (a durable without `num_replicas` takes its stream's):
    // one on the R1 stream, two on an R3 stream, one of them R1 by its `num_replicas`.
    let consumers = [("ONE", "C1", 0), ("THREE", "C3", 0), ("THREE", "C31", 1)];
    for (index, (stream, name, replicas)) in consumers.into_iter().enumerate() {
        let subject = format!("$JS.API.CONSUMER.CREATE.{stream}.{name}");
        let body = json!({"stream_name": stream, "config": {"durable_name": name,
            "ack_policy": "explicit", "num_replicas": replicas}});
        let created = ask_until(&tenant.clients[index], &subject, body, |answer| {
            !matches!(error_code(answer), 10005 | 10008)
        })
        .await;
        assert_eq!(error_code(&created), 0, "{subject}: {created}");
    }
    let info = ask_until(&tenant.clients[1], "$JS.API.INFO", Value::Null, |info| {
        info["consumers"] == 3
    })
    .await;
    assert_eq!(info["tiers"]["R1"]["consumers"], 2, "{info}");
    assert_eq!(info["tiers"]["R3"]["consumers"], 1, "{info}");

    let mut claims = jetstream(None);
    claims["limits"]["tiered_limits"] = json!({"R3": tier(-1)});
    let only_r3 = Tenant::push(&cluster, &trust, claims).await;
    let answer = create(&only_r3.clients[1], "THREE", 3).await;
    assert_eq!(error_code(&answer), 0, "{answer}");
    let refused = create(&only_r3.clients[2], "ONE", 1).await;
    assert_eq!(
        refused["error"],
        json!({"code": 400, "err_code": 10120,
               "description": "no JetStream default or applicable tiered limit present"}),
        "{refused}"
    );
}

/// Publishes `payload` to `subject` through `client` as a request, asking again while no
/// stream leader answers (bounded); the PubAck or error answer.
async fn publish(client: &Client, subject: &str, payload: &str) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let asked = client.request(subject.to_string(), payload.to_string().into());
        match tokio::time::timeout(Duration::from_secs(5), asked).await {
            Ok(Ok(message)) => {
                return serde_json::from_slice(&message.payload).expect("a JSON answer")
            }
            answer => assert!(Instant::now() < deadline, "{subject}: {answer:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Tiered storage: the bytes of each tier are held to that tier's own `disk_storage`, as
/// nats-server counts usage per tier (`jsAccount.wouldExceedLimits`), not to the sum of the
/// tiers' maxima. Messages of 535 stored bytes: the R1 tier's 2,000 take three, the fourth is
/// refused with 10002 (the two tiers' 4,000 would take seven); the R3 tier's 2,000 are its
/// own (the cluster's total, every replica's bytes, against three times the tier's maximum;
/// the followers' usage reaches the leader up to 1.5 s late on both servers, so published in a
/// burst it may take a few more: `jetstream_usage` checks the exact sum once reports are in).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tier_holds_its_own_stored_bytes() {
    let trust = Trust::new();
    let directory = tempfile::tempdir().expect("resolver dirs");
    let cluster = start(&trust, &directory);
    let tier =
        |disk: i64| json!({"mem_storage": -1, "disk_storage": disk, "streams": -1, "consumer": -1});
    let mut claims = jetstream(None);
    claims["limits"]["tiered_limits"] = json!({"R1": tier(2000), "R3": tier(2000)});
    let tenant = Tenant::push(&cluster, &trust, claims).await;
    for (name, replicas) in [("ONE", 1), ("THREE", 3)] {
        let answer = create(&tenant.clients[0], name, replicas).await;
        assert_eq!(error_code(&answer), 0, "{answer}");
    }
    let payload = "x".repeat(500);
    let exceeded = json!({"code": 400, "err_code": 10002,
        "description": "resource limits exceeded for account"});

    for seq in 1..=3 {
        let ack = publish(&tenant.clients[1], "ONE.a", &payload).await;
        assert_eq!(ack["seq"], seq, "{ack}");
    }
    let refused = publish(&tenant.clients[1], "ONE.a", &payload).await;
    assert_eq!(refused["error"], exceeded, "{refused}");

    let mut taken = 0;
    let refused = loop {
        let answer = publish(&tenant.clients[2], "THREE.a", &payload).await;
        if answer.get("error").is_some() {
            break answer;
        }
        taken += 1;
        assert!(taken < 12, "the R3 tier took {taken} messages: {answer}");
    };
    assert_eq!(refused["error"], exceeded, "{refused}");
    assert!(taken >= 3, "the R3 tier took {taken} messages");
    // The R1 tier is still full, whatever R3 holds.
    let refused = publish(&tenant.clients[0], "ONE.a", &payload).await;
    assert_eq!(refused["error"], exceeded, "{refused}");

    // `$JS.API.INFO` reports each tier's bytes summed over the servers: the R1 stream's once,
    // the R3 stream's once for each replica (`jetstream_usage` for an untiered account).
    let mut stored = Vec::new();
    for (name, messages) in [("ONE", 3), ("THREE", taken)] {
        let subject = format!("$JS.API.STREAM.INFO.{name}");
        let info = ask_until(&tenant.clients[0], &subject, Value::Null, |info| {
            info["state"]["messages"] == messages
        })
        .await;
        stored.push(info["state"]["bytes"].as_u64().unwrap_or(0));
    }
    let (one, three) = (stored[0], 3 * stored[1]);
    let info = ask_until(&tenant.clients[1], "$JS.API.INFO", Value::Null, |info| {
        info["tiers"]["R1"]["storage"] == one && info["tiers"]["R3"]["storage"] == three
    })
    .await;
    assert_eq!(info["storage"], one + three, "{info}");
}

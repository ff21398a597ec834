//! Clustered JetStream's stream assignments: `$JS.API` create/update/delete answered once,
//! through the meta leader; an R1 stream placed on one server and used through every node
//! (publish on one, read on another, info from each, answered exactly once); names and list
//! from the meta leader; nats-server's placement errors; two concurrent creates of one name;
//! a node restarted after streams were created and deleted without it knows them.
//!
//! Every request is sent on an inbox that collects all answers for a while, so a second
//! answer (a server that should have stayed silent) fails the test. All-rnats clusters
//! normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`), where every
//! assertion holds too.

use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::meta::{agreed_leader, index_of, start, system_client, ELECTION_BOUND};

/// How long an inbox listens for further answers after the first.
const QUIET: Duration = Duration::from_millis(700);
/// The first answer must come within this (a create is proposed, applied and carried out).
const FIRST_ANSWER: Duration = Duration::from_secs(10);

pub(crate) async fn connect(cluster: &test_harness::cluster::Cluster, index: usize) -> Client {
    async_nats::connect(cluster.url(index))
        .await
        .unwrap_or_else(|error| panic!("connect to node {index}: {error}"))
}

/// Sends `body` to `subject` and returns every answer that arrived: the first within
/// [`FIRST_ANSWER`], the others within [`QUIET`] after it.
pub(crate) async fn answers(client: &Client, subject: &str, body: Value) -> Vec<Value> {
    answers_within(client, subject, body, QUIET).await
}

/// [`answers`], the others looked for within `quiet` after the one before.
pub(crate) async fn answers_within(
    client: &Client,
    subject: &str,
    body: Value,
    quiet: Duration,
) -> Vec<Value> {
    let inbox = client.new_inbox();
    let mut subscription = client.subscribe(inbox.clone()).await.expect("subscribe");
    let payload = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).expect("json")
    };
    client
        .publish_with_reply(subject.to_string(), inbox, payload.into())
        .await
        .expect("publish");
    client.flush().await.expect("flush");
    let mut got = Vec::new();
    let mut wait = FIRST_ANSWER;
    while let Ok(Some(message)) = tokio::time::timeout(wait, subscription.next()).await {
        got.push(serde_json::from_slice(&message.payload).unwrap_or(Value::Null));
        wait = quiet;
    }
    got
}

/// The single answer to a request; fails on none or more than one.
pub(crate) async fn one_answer(client: &Client, subject: &str, body: Value) -> Value {
    let mut got = answers(client, subject, body).await;
    assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
    got.remove(0)
}

/// The answer to a request a helper may have sent more than once: nats-server sometimes leaves
/// a request unanswered while its routes settle under load (the reply is lost, the request may
/// still have taken effect) and a client asks again. `unanswered` counts the attempts before
/// the answered one that got no answer (attempts refused with a retryable code changed nothing
/// and are not counted).
pub(crate) struct Answered {
    /// The body sent.
    pub(crate) asked: Value,
    pub(crate) answer: Value,
    pub(crate) unanswered: u32,
}

impl Answered {
    /// The stream create succeeded: no error and the config asked for; `did_create` when the
    /// first attempt was answered. After an unanswered attempt (nats-server only: on ours every
    /// attempt must be answered, so the check stays strict there) the stream may already exist
    /// from that attempt, and the create of an existing identical stream is answered without
    /// `did_create` (the CI parity pass on 838c20a: scale.rs's EDIT, created at 22:18:22.09,
    /// answered only to the second create at 22:18:32.09).
    pub(crate) fn assert_created(&self) {
        let answer = &self.answer;
        assert!(answer.get("error").is_none(), "{answer}");
        if self.unanswered == 0 || !test_harness::is_reference() {
            assert_eq!(answer["did_create"], true, "{answer}");
        } else {
            assert!(answer["did_create"].as_bool() != Some(false), "{answer}");
            println!("asked again after {} unanswered: {answer}", self.unanswered);
        }
        for (key, value) in self.asked.as_object().into_iter().flatten() {
            assert_eq!(&answer["config"][key], value, "config {key}: {answer}");
        }
    }
}

pub(crate) fn error_code(answer: &Value) -> u64 {
    answer["error"]["err_code"].as_u64().unwrap_or(0)
}

/// Waits for one meta leader that every live node names.
pub(crate) fn leader_of(cluster: &test_harness::cluster::Cluster, nodes: &[usize]) -> String {
    agreed_leader(cluster, nodes, 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r1_stream_is_created_once_and_used_through_every_node() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let a = connect(&cluster, 0).await;
    let b = connect(&cluster, 1).await;
    let c = connect(&cluster, 2).await;
    let names: Vec<String> = (0..3).map(|i| cluster.node(i).name.clone()).collect();

    let created = one_answer(
        &b,
        "$JS.API.STREAM.CREATE.ORDERS",
        json!({"name": "ORDERS", "subjects": ["orders.>"]}),
    )
    .await;
    assert_eq!(created["did_create"], true, "{created}");
    assert_eq!(created["cluster"]["name"], "meta", "{created}");
    let holder = created["cluster"]["leader"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(names.contains(&holder), "{created}");
    assert!(created["cluster"].get("replicas").is_none(), "{created}");

    // Published through node C, it reaches the stream wherever it was placed.
    let jetstream = async_nats::jetstream::new(c.clone());
    let deadline = Instant::now() + FIRST_ANSWER;
    let ack = loop {
        let attempt = match jetstream.publish("orders.1", "first".into()).await {
            Ok(pending) => pending.await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(ack) => break ack,
            Err(error) => {
                assert!(Instant::now() < deadline, "publish through C: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(ack.stream, "ORDERS");
    assert_eq!(ack.sequence, 1);

    // Read through node A.
    let message = one_answer(&a, "$JS.API.STREAM.MSG.GET.ORDERS", json!({"seq": 1})).await;
    assert_eq!(message["message"]["subject"], "orders.1", "{message}");
    assert_eq!(message["message"]["data"], "Zmlyc3Q=", "{message}");

    // Info from every node: one answer each, the same stream, placed on the same server.
    let mut infos = Vec::new();
    for client in [&a, &b, &c] {
        let info = one_answer(client, "$JS.API.STREAM.INFO.ORDERS", Value::Null).await;
        assert_eq!(info["state"]["messages"], 1, "{info}");
        assert_eq!(info["cluster"]["leader"], holder.as_str(), "{info}");
        assert_eq!(info["cluster"]["name"], "meta", "{info}");
        infos.push((info["config"].clone(), info["created"].clone()));
    }
    assert!(infos.windows(2).all(|pair| pair[0] == pair[1]), "{infos:?}");

    // Names and list: once, from the meta leader, whichever node is asked.
    for client in [&a, &b, &c] {
        let names = one_answer(client, "$JS.API.STREAM.NAMES", Value::Null).await;
        assert_eq!(names["streams"], json!(["ORDERS"]), "{names}");
        let list = one_answer(client, "$JS.API.STREAM.LIST", Value::Null).await;
        assert_eq!(list["total"], 1, "{list}");
        assert_eq!(list["streams"][0]["config"]["name"], "ORDERS", "{list}");
        assert_eq!(list["streams"][0]["state"]["messages"], 1, "{list}");
    }

    // A stream nobody has: one "not found".
    let missing = one_answer(&c, "$JS.API.STREAM.INFO.NOPE", Value::Null).await;
    assert_eq!(error_code(&missing), 10059, "{missing}");

    // The same config again: answered, not created again; another config: 10058.
    let again = one_answer(
        &c,
        "$JS.API.STREAM.CREATE.ORDERS",
        json!({"name": "ORDERS", "subjects": ["orders.>"]}),
    )
    .await;
    assert!(again.get("error").is_none(), "{again}");
    assert!(again.get("did_create").is_none(), "{again}");
    let different = one_answer(
        &a,
        "$JS.API.STREAM.CREATE.ORDERS",
        json!({"name": "ORDERS", "subjects": ["other.>"]}),
    )
    .await;
    assert_eq!(error_code(&different), 10058, "{different}");
    let overlap = one_answer(
        &a,
        "$JS.API.STREAM.CREATE.OVERLAP",
        json!({"name": "OVERLAP", "subjects": ["orders.eu"]}),
    )
    .await;
    assert_eq!(error_code(&overlap), 10065, "{overlap}");

    // Placement nats-server cannot satisfy on three servers.
    let five = one_answer(
        &a,
        "$JS.API.STREAM.CREATE.FIVE",
        json!({"name": "FIVE", "subjects": ["five"], "num_replicas": 5}),
    )
    .await;
    assert_eq!(error_code(&five), 10005, "{five}");
    assert_eq!(
        five["error"]["description"], "no suitable peers for placement",
        "{five}"
    );
    let elsewhere = one_answer(
        &b,
        "$JS.API.STREAM.CREATE.ELSEWHERE",
        json!({"name": "ELSEWHERE", "subjects": ["elsewhere"], "placement": {"cluster": "XX"}}),
    )
    .await;
    assert_eq!(error_code(&elsewhere), 10005, "{elsewhere}");

    // Update through another node: answered once, by the holder, with the new subjects.
    let updated = one_answer(
        &c,
        "$JS.API.STREAM.UPDATE.ORDERS",
        json!({"name": "ORDERS", "subjects": ["orders.>", "returns.>"]}),
    )
    .await;
    assert_eq!(
        updated["config"]["subjects"],
        json!(["orders.>", "returns.>"]),
        "{updated}"
    );
    assert_eq!(updated["cluster"]["leader"], holder.as_str(), "{updated}");

    // Delete through node A: once; then the stream is gone everywhere.
    let deleted = one_answer(&a, "$JS.API.STREAM.DELETE.ORDERS", Value::Null).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    for client in [&a, &b, &c] {
        let info = one_answer(client, "$JS.API.STREAM.INFO.ORDERS", Value::Null).await;
        assert_eq!(error_code(&info), 10059, "{info}");
    }
    let names = one_answer(&b, "$JS.API.STREAM.NAMES", Value::Null).await;
    assert_eq!(names["total"], 0, "{names}");
    let again = one_answer(&b, "$JS.API.STREAM.DELETE.ORDERS", Value::Null).await;
    assert_eq!(error_code(&again), 10059, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_of_one_name_make_one_stream() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let a = connect(&cluster, 0).await;
    let c = connect(&cluster, 2).await;

    let (first, second) = tokio::join!(
        one_answer(
            &a,
            "$JS.API.STREAM.CREATE.RACE",
            json!({"name": "RACE", "subjects": ["race.a"]}),
        ),
        one_answer(
            &c,
            "$JS.API.STREAM.CREATE.RACE",
            json!({"name": "RACE", "subjects": ["race.c"]}),
        ),
    );
    let created: Vec<&Value> = [&first, &second]
        .into_iter()
        .filter(|answer| answer["did_create"] == true)
        .collect();
    let refused: Vec<&Value> = [&first, &second]
        .into_iter()
        .filter(|answer| error_code(answer) == 10058)
        .collect();
    assert_eq!((created.len(), refused.len()), (1, 1), "{first}\n{second}");
    let info = one_answer(&a, "$JS.API.STREAM.INFO.RACE", Value::Null).await;
    assert_eq!(info["config"]["subjects"], created[0]["config"]["subjects"]);

    // The same config twice at once: both succeed, one stream, created once.
    let body = json!({"name": "TWIN", "subjects": ["twin"]});
    let (first, second) = tokio::join!(
        one_answer(&a, "$JS.API.STREAM.CREATE.TWIN", body.clone()),
        one_answer(&c, "$JS.API.STREAM.CREATE.TWIN", body.clone()),
    );
    assert!(first.get("error").is_none() && second.get("error").is_none());
    let did_create = [&first, &second]
        .iter()
        .filter(|answer| answer["did_create"] == true)
        .count();
    assert_eq!(did_create, 1, "{first}\n{second}");
    assert_eq!(first["created"], second["created"]);
    let names = one_answer(&c, "$JS.API.STREAM.NAMES", Value::Null).await;
    assert_eq!(names["streams"], json!(["RACE", "TWIN"]), "{names}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_knows_the_streams_changed_while_it_was_down() {
    let mut cluster = start(3);
    let leader = leader_of(&cluster, &[0, 1, 2]);
    let client = connect(&cluster, 0).await;
    let early = one_answer(
        &client,
        "$JS.API.STREAM.CREATE.EARLY",
        json!({"name": "EARLY", "subjects": ["early"]}),
    )
    .await;
    assert_eq!(early["did_create"], true, "{early}");
    let holder = early["cluster"]["leader"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // The node to take down: neither the meta leader nor EARLY's server, so the survivors
    // keep both.
    let down = (0..3)
        .find(|&i| cluster.node(i).name != leader && cluster.node(i).name != holder)
        .expect("a third node");
    let up: Vec<usize> = (0..3).filter(|&i| i != down).collect();
    let client = connect(&cluster, up[0]).await;

    cluster.kill9(down);
    // Wait until the leader no longer counts the killed node, so nothing is placed on it.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let late = one_answer(
        &client,
        "$JS.API.STREAM.CREATE.LATE",
        json!({"name": "LATE", "subjects": ["late"]}),
    )
    .await;
    assert_eq!(late["did_create"], true, "{late}");
    let gone = one_answer(&client, "$JS.API.STREAM.DELETE.EARLY", Value::Null).await;
    assert_eq!(gone["success"], true, "{gone}");

    cluster.restart(down);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    // Make the restarted node the meta leader: its names are then its own state.
    let name = cluster.node(down).name.clone();
    let system = system_client(&cluster, up[0]).await;
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let current = leader_of(&cluster, &[0, 1, 2]);
        if current == name {
            break;
        }
        let _ = system
            .request(
                "$JS.API.META.LEADER.STEPDOWN",
                json!({"placement": {"preferred": name}}).to_string().into(),
            )
            .await;
        assert!(
            Instant::now() < deadline,
            "{name} did not become meta leader\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(index_of(&cluster, &name), down);
    let restarted = connect(&cluster, down).await;
    let names = one_answer(&restarted, "$JS.API.STREAM.NAMES", Value::Null).await;
    assert_eq!(names["streams"], json!(["LATE"]), "{names}");
    let info = one_answer(&restarted, "$JS.API.STREAM.INFO.LATE", Value::Null).await;
    assert_eq!(info["config"]["name"], "LATE", "{info}");
    let early = one_answer(&restarted, "$JS.API.STREAM.INFO.EARLY", Value::Null).await;
    assert_eq!(error_code(&early), 10059, "{early}");
}

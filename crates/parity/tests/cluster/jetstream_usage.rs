//! An account's JetStream usage in a cluster (issue 16): every server counts the bytes of the
//! replicas it holds and reports them to the others (nats-server's `$JSC.ARU.<account>.<node>`
//! updates, about every 1.5 s), so `$JS.API.INFO` answers the sum over the servers (an R1
//! stream's bytes once, an R3 stream's three times) wherever it is asked, and the account's
//! `max_file` holds that sum: an R3 stream of an account limited to `max_file` takes a third of
//! it (each message counts three times).
//!
//! The reports carry the API requests each server answered too: INFO's `api` counters are the
//! sum over the servers, and its `consumers` count every consumer of the account wherever its
//! stream runs (nats-server counts the meta group's assignments; ours, the consumers each
//! server reports for the streams it leads). A memory limit (`max_mem`) holds the sum as the
//! file limit does.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use async_nats::Client;
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_assignments::{answers, error_code, leader_of};
use crate::meta::{kind, ELECTION_BOUND};

/// The usage reports of the other servers arrive within this (nats-server's 1.5 s tick and a
/// loaded machine's delays).
const REPORTED: Duration = Duration::from_secs(15);

/// A three-node cluster whose account `APP` has JetStream with `limits`, once it has a meta
/// leader, and a client of each node.
async fn start(limits: &str) -> (Cluster, [Client; 3]) {
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "usage".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = format!(
        "accounts {{\n  SYS: {{ users: [{{user: sys, password: sys}}] }}\n  \
         APP: {{ jetstream: {limits}, users: [{{user: app, password: app}}] }}\n}}\n\
         system_account: SYS\nno_auth_user: app\n"
    );
    let cluster = Cluster::start(options);
    leader_of(&cluster, &[0, 1, 2]);
    let clients = [
        connect(&cluster, 0).await,
        connect(&cluster, 1).await,
        connect(&cluster, 2).await,
    ];
    (cluster, clients)
}

async fn connect(cluster: &Cluster, index: usize) -> Client {
    async_nats::ConnectOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .ignore_discovered_servers()
        .connect(cluster.url(index))
        .await
        .unwrap_or_else(|error| panic!("connect to node {index}: {error}"))
}

/// One answer to `subject`, asked again while nobody answers or the meta group is busy
/// (nats-server's 10005 placement refusal right after start, 10008 without a leader).
async fn ask(client: &Client, subject: &str, body: Value) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let got = answers(client, subject, body.clone()).await;
        let retry = match got.first() {
            None => true,
            Some(answer) => matches!(error_code(answer), 10005 | 10008),
        };
        if !retry || Instant::now() > deadline {
            assert_eq!(got.len(), 1, "{subject}: expected one answer, got {got:?}");
            return got[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn create(client: &Client, name: &str, replicas: u64) -> Value {
    create_in(client, name, replicas, "file").await
}

async fn create_in(client: &Client, name: &str, replicas: u64, storage: &str) -> Value {
    let body = json!({"name": name, "subjects": [format!("{}.>", name.to_lowercase())],
        "num_replicas": replicas, "storage": storage});
    let created = ask(client, &format!("$JS.API.STREAM.CREATE.{name}"), body).await;
    assert_eq!(error_code(&created), 0, "create {name}: {created}");
    created
}

/// Publishes one message (no headers) and returns the PubAck or the refusal, asking again while
/// the stream has no leader yet (no responders, a timeout).
async fn publish(client: &Client, subject: &str, payload: &'static str) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        match client.request(subject.to_string(), payload.into()).await {
            Ok(answer) => return serde_json::from_slice(&answer.payload).unwrap_or(Value::Null),
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "{subject} never answered: {error}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The bytes STREAM.INFO reports once its leader stores `messages` messages.
async fn stream_bytes(client: &Client, name: &str, messages: u64) -> u64 {
    let deadline = Instant::now() + REPORTED;
    loop {
        let info = ask(client, &format!("$JS.API.STREAM.INFO.{name}"), Value::Null).await;
        if info["state"]["messages"] == messages {
            return info["state"]["bytes"].as_u64().unwrap_or(0);
        }
        assert!(Instant::now() < deadline, "{name}: {info}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Purges `name` and returns once the first answer (the stream leader's) says so.
async fn purge(client: &Client, name: &str) {
    let subject = format!("$JS.API.STREAM.PURGE.{name}");
    let purged = client_request(client, &subject)
        .await
        .unwrap_or_else(|error| panic!("purge {name}: {error}"));
    assert_eq!(purged["success"], true, "{purged}");
}

/// Waits until `$JS.API.INFO`, asked through every client, reports `storage` bytes; returns how
/// long that took.
async fn wait_for_storage(clients: &[Client], storage: u64) -> Duration {
    wait_for_bytes(clients, "storage", storage).await
}

/// Waits until `$JS.API.INFO`, asked through every client, reports `bytes` in `field`
/// (`storage` or `memory`) and none in the other; returns how long that took.
async fn wait_for_bytes(clients: &[Client], field: &str, bytes: u64) -> Duration {
    let other = if field == "storage" {
        "memory"
    } else {
        "storage"
    };
    let started = Instant::now();
    for (index, client) in clients.iter().enumerate() {
        loop {
            // The first answer (the meta leader's), not `ask`'s wait for more: this measures
            // how fast the reports follow.
            let info = client_request(client, "$JS.API.INFO")
                .await
                .unwrap_or_else(|error| json!({ "error": error }));
            if info[field] == bytes {
                assert_eq!(info[other], 0, "{info}");
                break;
            }
            assert!(
                started.elapsed() < REPORTED,
                "INFO through node {index}: {field} {} where {bytes} was expected: {info}",
                info[field]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_info_sums_every_servers_replicas() {
    let (_cluster, clients) = start("enabled").await;
    let first = create(&clients[0], "ONE", 1).await;
    let second = create(&clients[1], "TWO", 1).await;
    create(&clients[2], "THREE", 3).await;
    println!(
        "R1 streams on {} and {}",
        first["cluster"]["leader"], second["cluster"]["leader"]
    );

    for n in 0..4 {
        let ack = publish(&clients[n % 3], "one.x", "twenty bytes of data").await;
        assert_eq!(error_code(&ack), 0, "{ack}");
    }
    for n in 0..2 {
        let ack = publish(&clients[n % 3], "two.x", "some data").await;
        assert_eq!(error_code(&ack), 0, "{ack}");
    }
    for n in 0..5 {
        let ack = publish(&clients[n % 3], "three.x", "replicated").await;
        assert_eq!(error_code(&ack), 0, "{ack}");
    }
    let one = stream_bytes(&clients[0], "ONE", 4).await;
    let two = stream_bytes(&clients[0], "TWO", 2).await;
    let three = stream_bytes(&clients[0], "THREE", 5).await;
    // An R1 stream's bytes count once, an R3 stream's once for each replica.
    let took = wait_for_storage(&clients, one + two + 3 * three).await;
    println!(
        "INFO storage {} after the publishes: {took:?}",
        one + two + 3 * three
    );

    purge(&clients[2], "ONE").await;
    let took = wait_for_storage(&clients, two + 3 * three).await;
    println!("INFO storage {} after the purge: {took:?}", two + 3 * three);
    purge(&clients[0], "THREE").await;
    let took = wait_for_storage(&clients, two).await;
    println!("INFO storage {two} after the R3 purge: {took:?}");
}

/// Each message of an R3 stream counts three times against the account's `max_file`: with the
/// reports caught up after every publish, the stream stores a third of what one replica's bytes
/// would allow, and the next publish is refused with 10002.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_limit_holds_the_sum_of_every_replica() {
    // 40 messages of 41 bytes (subject `three.x`, 7, the payload, 4, and 30 of overhead).
    held_to_a_third("{max_mem: 0, max_file: 1640}", "file", 41).await;
}

/// As the test above, for a memory stream: `max_mem` holds the sum of every replica's bytes
/// (nats-server's `wouldExceedLimits` for memory storage).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_limit_holds_the_sum_of_every_replica() {
    // 40 messages of 27 bytes in memory (subject `three.x`, 7, the payload, 4, and 16 of
    // overhead).
    held_to_a_third("{max_mem: 1080, max_file: 0}", "memory", 27).await;
}

/// An R3 stream in `storage` of an account whose `limits` leave room for 40 messages of
/// `per_message` bytes takes 13 (each counts three times) and refuses the 14th with 10002.
async fn held_to_a_third(limits: &str, storage: &str, per_message: u64) {
    let (_cluster, clients) = start(limits).await;
    create_in(&clients[0], "THREE", 3, storage).await;
    let field = if storage == "file" {
        "storage"
    } else {
        "memory"
    };
    let mut stored = 0;
    let refusal = loop {
        let ack = publish(&clients[stored % 3], "three.x", "data").await;
        if error_code(&ack) != 0 {
            break ack;
        }
        stored += 1;
        assert!(stored <= 40, "more than one replica's room stored");
        // Every server's report of the new message is in before the next publish.
        wait_for_bytes(&clients, field, 3 * per_message * stored as u64).await;
    };
    assert_eq!(error_code(&refusal), 10002, "{refusal}");
    assert_eq!(
        refusal["error"]["description"],
        "resource limits exceeded for account"
    );
    assert_eq!(stored, 13, "messages stored before the refusal");
}

/// An R1 stream `AA` held by a server that does not lead the meta group (the meta leader
/// stepped down when it holds it), whose requests (STREAM.INFO, MSG.GET, its consumers'
/// creation) are answered by its holder on both servers, with two messages of `PER_MESSAGE`
/// bytes. Waits until INFO, asked through every node, counts both: the holder's report after its
/// last answer is in (the others answered nothing of the account but INFO, which the meta
/// leader counts at once).
async fn r1_stream_held_elsewhere(cluster: &Cluster, clients: &[Client; 3]) -> &'static str {
    let created = create(&clients[0], "AA", 1).await;
    let holder = created["cluster"]["leader"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ack = publish(&clients[1], "aa.x", "data").await;
    assert_eq!(error_code(&ack), 0, "{ack}");
    let other = (0..3)
        .map(|index| cluster.node(index).name.clone())
        .find(|name| *name != holder)
        .unwrap_or_default();
    let system = crate::meta::system_client(cluster, 0).await;
    let deadline = Instant::now() + ELECTION_BOUND;
    while leader_of(cluster, &[0, 1, 2]) == holder {
        // Answered by the holder (in the system account: not counted in APP's).
        let stepdown = json!({"placement": {"preferred": other}}).to_string();
        let _ = system
            .request("$JS.API.META.LEADER.STEPDOWN", stepdown.into())
            .await;
        assert!(
            Instant::now() < deadline,
            "{holder} still leads the meta group\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ack = publish(&clients[2], "aa.x", "data").await;
    assert_eq!(error_code(&ack), 0, "{ack}");
    wait_for_storage(clients, 2 * PER_MESSAGE).await;
    "AA"
}

/// A file store's bytes for one message of a two-letter stream's `xx.x` subject and the payload
/// `data` (4 + 4 and 30 of overhead).
const PER_MESSAGE: u64 = 38;

/// The INFO answer (the meta leader's) through `client`, asked until it answers.
async fn info(client: &Client) -> Value {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        match client_request(client, "$JS.API.INFO").await {
            Ok(answer) if answer["error"].is_null() => return answer,
            other => assert!(Instant::now() < deadline, "INFO: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `api.total` and `api.errors` count the requests every server answered: STREAM.INFO and a
/// failing MSG.GET of an R1 stream held by a server that does not lead the meta group are
/// answered there, and the meta leader's INFO counts them once that server's report is in
/// (nats-server's `remoteUpdateUsage` sums the reports' API counters). INFO itself counts after
/// it is answered, on the meta leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_counters_sum_every_servers_answers() {
    let (cluster, clients) = start("enabled").await;
    let held = r1_stream_held_elsewhere(&cluster, &clients).await;
    let base = info(&clients[0]).await;
    let (total, errors) = (&base["api"]["total"], &base["api"]["errors"]);
    let (total, errors) = (total.as_u64().unwrap_or(0), errors.as_u64().unwrap_or(0));
    // Every INFO answered since the base one (that one included) counts.
    let mut infos = 1;

    // Through every node: the holder answers each.
    for n in 0..5 {
        let answer = ask(
            &clients[n % 3],
            &format!("$JS.API.STREAM.INFO.{held}"),
            json!({}),
        )
        .await;
        assert_eq!(error_code(&answer), 0, "{answer}");
    }
    for n in 0..3 {
        let subject = format!("$JS.API.STREAM.MSG.GET.{held}");
        let answer = ask(&clients[n % 3], &subject, json!({"seq": 99})).await;
        assert_eq!(error_code(&answer), 10037, "{answer}");
    }
    let started = Instant::now();
    for round in 0.. {
        let info = info(&clients[round % 3]).await;
        let got = (&info["api"]["total"], &info["api"]["errors"]);
        let got = (got.0.as_u64().unwrap_or(0), got.1.as_u64().unwrap_or(0));
        let all_in = (total + infos + 8, errors + 3);
        if got == all_in {
            break;
        }
        // The holder's count arrives with its next report, never more than once.
        assert!(
            got.0 <= all_in.0 && got.1 <= all_in.1,
            "api {got:?}, {all_in:?} expected at most: {info}"
        );
        assert!(
            started.elapsed() < REPORTED,
            "api {got:?} where {all_in:?} was expected (the holder's answers not counted?): {info}"
        );
        infos += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "api counters summed {:?} after the requests",
        started.elapsed()
    );
}

/// INFO's `consumers` (and `streams`) count every consumer of the account, wherever it runs:
/// durables and ephemerals of an R1 stream held by a server that does not lead the meta group,
/// of an R3 stream (before and after its leadership moves), and of another R1 stream, asked
/// through every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_are_counted_wherever_they_run() {
    let (cluster, clients) = start("enabled").await;
    let held = r1_stream_held_elsewhere(&cluster, &clients).await;
    // Wherever it lands (on the meta leader or not).
    create(&clients[1], "BB", 1).await;
    create(&clients[2], "RRR", 3).await;
    let durable = |stream: &str, name: &str| {
        (
            format!("$JS.API.CONSUMER.CREATE.{stream}.{name}"),
            json!({"stream_name": stream, "config": {"durable_name": name, "ack_policy": "explicit"}}),
        )
    };
    // An ephemeral kept for the test's length (nats-server drops an idle one after 5 s).
    let ephemeral = |stream: &str| {
        (
            format!("$JS.API.CONSUMER.CREATE.{stream}"),
            json!({"stream_name": stream, "config": {"ack_policy": "explicit",
                "inactive_threshold": 300_000_000_000u64}}),
        )
    };
    let requests = [
        durable(held, "D1"),
        ephemeral(held),
        durable("BB", "D2"),
        durable("RRR", "D3"),
        ephemeral("RRR"),
    ];
    for (n, (subject, body)) in requests.iter().enumerate() {
        let created = ask(&clients[n % 3], subject, body.clone()).await;
        assert_eq!(error_code(&created), 0, "{subject}: {created}");
    }
    let expected = requests.len() as u64;
    let took = wait_for_counts(&clients, 3, expected).await;
    println!("{expected} consumers counted {took:?} after the last creation");

    // The R3 stream's leadership moves: its durable then runs on the new leader, and its
    // ephemeral (ours) stays on the server that created it. Each still counts once, after the
    // reports of both servers since the change (two of nats-server's ticks, more than one of
    // ours) are in.
    let leader_of_rrr = |info: &Value| info["cluster"]["leader"].as_str().map(str::to_string);
    let before = leader_of_rrr(&ask(&clients[0], "$JS.API.STREAM.INFO.RRR", Value::Null).await);
    let stepped = ask(
        &clients[1],
        "$JS.API.STREAM.LEADER.STEPDOWN.RRR",
        Value::Null,
    )
    .await;
    assert_eq!(stepped["success"], true, "{stepped}");
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let info = ask(&clients[2], "$JS.API.STREAM.INFO.RRR", Value::Null).await;
        let now = leader_of_rrr(&info);
        if now.is_some() && now != before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "RRR's leadership did not move: {info}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Watched for 4 s at least: a count right after the move may predate the reports.
    let moved = Instant::now();
    loop {
        let info = info(&clients[0]).await;
        let counted = info["streams"] == 3 && info["consumers"] == expected;
        if counted && moved.elapsed() > Duration::from_secs(4) {
            break;
        }
        assert!(
            moved.elapsed() < REPORTED,
            "after RRR's move: 3 streams and {expected} consumers expected: {info}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    wait_for_counts(&clients, 3, expected).await;

    let subject = format!("$JS.API.CONSUMER.DELETE.{held}.D1");
    let deleted = ask(&clients[0], &subject, Value::Null).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    let took = wait_for_counts(&clients, 3, expected - 1).await;
    println!("the deletion counted after {took:?}");
}

/// Waits until INFO, asked through every client, counts `streams` and `consumers`.
async fn wait_for_counts(clients: &[Client], streams: u64, consumers: u64) -> Duration {
    let started = Instant::now();
    for (index, client) in clients.iter().enumerate() {
        loop {
            let info = info(client).await;
            if info["streams"] == streams && info["consumers"] == consumers {
                break;
            }
            assert!(
                started.elapsed() < REPORTED,
                "INFO through node {index}: {streams} streams and {consumers} consumers expected: {info}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    started.elapsed()
}

/// A server that stops: its last report keeps counting (its replicas are still on its disk),
/// as nats-server's does. Ours once forgot it after 20 s of silence; it now forgets a server
/// only once it is no longer in the meta group and silent for 20 s (a removed or wiped
/// server's bytes must not count for ever): the stopped server removed
/// (`$JS.API.SERVER.REMOVE`) 30 s after it stopped, both count nothing of it within a few
/// seconds (nats-server 2.15.1: 2 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_servers_last_report_is_kept_until_it_is_removed() {
    let (mut cluster, clients) = start("enabled").await;
    // Held by a server that does not lead the meta group, and counted by the leader from its
    // report: a holder leading the meta group counts its own bytes at once, and killed before
    // its next report (1.5 s ticks) has told the others nothing, so the next leader's INFO
    // would never count them, on either server.
    let stream = r1_stream_held_elsewhere(&cluster, &clients).await;
    let bytes = 2 * PER_MESSAGE;
    let held = client_request(&clients[0], &format!("$JS.API.STREAM.INFO.{stream}"))
        .await
        .expect("STREAM.INFO");
    let holder = held["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let stopped = crate::meta::index_of(&cluster, &holder);
    cluster.kill9(stopped);
    let asked = &clients[(stopped + 1) % 3];
    let killed = Instant::now();
    // Watched for 30 s (the stopped server may have led the meta group: no answer until the
    // others elect a leader).
    let mut answered = 0;
    while killed.elapsed() < Duration::from_secs(30) {
        if let Ok(answer) = client_request(asked, "$JS.API.INFO").await {
            if let Some(storage) = answer["storage"].as_u64() {
                assert_eq!(storage, bytes, "after {:?}: {answer}", killed.elapsed());
                answered += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(answered > 0, "INFO never answered");

    let system = async_nats::ConnectOptions::with_user_and_password("sys".into(), "sys".into())
        .request_timeout(Some(Duration::from_secs(10)))
        .ignore_discovered_servers()
        .connect(cluster.url((stopped + 1) % 3))
        .await
        .expect("connect sys");
    let removal = json!({ "peer": holder }).to_string();
    let removed = system
        .request("$JS.API.SERVER.REMOVE", removal.into())
        .await
        .expect("SERVER.REMOVE answered");
    let removed: Value = serde_json::from_slice(&removed.payload).unwrap_or(Value::Null);
    assert_eq!(removed["success"], true, "{removed}");
    let started = Instant::now();
    let mut storage = None;
    while started.elapsed() < FORGOTTEN_AFTER_REMOVAL {
        if let Ok(answer) = client_request(asked, "$JS.API.INFO").await {
            storage = answer["storage"].as_u64();
            if storage == Some(0) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "{}: storage {storage:?} {:?} after the stopped server's removal",
        kind().label(),
        started.elapsed()
    );
    assert_eq!(storage, Some(0), "a removed server's report still counted");
}

/// A removed server, silent for longer than ours waits, no longer counts within this: a
/// usage tick (1.5 s) and the removal's application, on a loaded machine.
const FORGOTTEN_AFTER_REMOVAL: Duration = Duration::from_secs(10);

/// The first answer to an empty request on `subject`.
async fn client_request(client: &Client, subject: &str) -> Result<Value, String> {
    let answer = client
        .request(subject.to_string(), "".into())
        .await
        .map_err(|error| error.to_string())?;
    serde_json::from_slice(&answer.payload).map_err(|error| error.to_string())
}

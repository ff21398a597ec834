//! Rolling operations on a 3-node JetStream cluster: lame duck mode (SIGUSR2) on the leader of
//! an R3 stream hands the stream's leadership over before the node leaves, so a publisher on
//! another node keeps getting PubAcks (the longest gap between two acks is printed: the
//! unavailability figure, beside nats-server's in the parity pass), no acknowledged message is
//! lost, the node's clients hear INFO `ldm` without the node in `connect_urls`, the other
//! nodes' clients stop being offered it, and the node exits 0.
//!
//! `/healthz` on a restarted node says ok only once its replicas caught up with their leaders
//! (ours; nats-server's says ok earlier, see the test), and a rolling restart of every node under
//! publish and consume load loses no acknowledged message.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use serde_json::{json, Value};
use test_harness::cluster::{http_get, http_get_any, Cluster, ClusterOptions, Topology};
use test_harness::RawClient;

use crate::jetstream_assignments::{connect, error_code, leader_of, one_answer};
use crate::jetstream_replicated::{create_r3, lock, names_of, publish_until_acked, settled_info};
use crate::meta::{index_of, kind, ELECTION_BOUND, SYSTEM_ACCOUNT};
use crate::wiped::wipe_store;

/// Lame duck settings of every node: clients closed [`GRACE`] after the INFO `ldm`.
const LAME_DUCK: &str = "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"2s\"\n";
const GRACE: Duration = Duration::from_secs(2);
/// A publish not acknowledged within this is sent again (same message id).
const ACK_WAIT: Duration = Duration::from_millis(500);
/// A node in lame duck mode exits within this (grace period, one client closed a second, the
/// shutdown itself).
const EXIT_BOUND: Duration = Duration::from_secs(20);
/// The longest gap between two PubAcks while the stream leader leaves in lame duck mode: its
/// leadership is handed over, so no election timeout (4-9 s on nats-server) is waited out; a
/// publish in flight at the handover may go unanswered and is sent again after [`ACK_WAIT`].
const HANDOVER_BOUND: Duration = Duration::from_secs(2);

/// How much later than the INFO `ldm` the successor may stamp its `leader_since` (see the
/// lame duck test): well under an election timeout.
const LEADER_STAMP_SLACK: Duration = Duration::from_millis(500);

/// A 3-node JetStream cluster with lame duck settings, and its node names.
fn start_cluster(topology: Topology) -> (Cluster, Vec<String>) {
    let mut options = ClusterOptions::new(&[kind(); 3], topology);
    options.name = "meta".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = format!("{SYSTEM_ACCOUNT}{LAME_DUCK}");
    let cluster = Cluster::start(options);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    (cluster, names)
}

/// A cluster from [`start_cluster`] with R3 stream `name` on `<prefix>.>`, `warm` messages
/// published and every replica current: the cluster, node names, a client of node 0 and the
/// stream leader's name.
async fn cluster_with_stream(
    name: &str,
    prefix: &str,
    warm: usize,
) -> (Cluster, Vec<String>, async_nats::Client, String) {
    cluster_with_stream_on(Topology::FullMesh, name, prefix, warm).await
}

/// [`cluster_with_stream`] with its routes configured as `topology` says.
pub(crate) async fn cluster_with_stream_on(
    topology: Topology,
    name: &str,
    prefix: &str,
    warm: usize,
) -> (Cluster, Vec<String>, async_nats::Client, String) {
    let (cluster, names) = start_cluster(topology);
    let admin = connect(&cluster, 0).await;
    // A loaded machine can leave the meta leader without a recent quorum acknowledgement for a
    // moment (10008, temporarily unavailable): asked again, within the election bound.
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let (created, _) = create_r3(&admin, name, &format!("{prefix}.>")).await;
        if error_code(&created.answer) == 10008 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        created.assert_created();
        break;
    }
    let jetstream = async_nats::jetstream::new(admin.clone());
    // The first one until acknowledged: the new stream's interest may not have reached this
    // node yet (no responders: "no stream found for given subject", once in the lead's CI run
    // on adb1b0a under load); it carries a message id, so a retry stores it once.
    let subject = format!("{prefix}.warm");
    if warm > 0 {
        let bound = Instant::now() + ELECTION_BOUND;
        publish_until_acked(&jetstream, &subject, "warm-0", bound).await;
        publish_many(&jetstream, &subject, warm - 1).await;
    }
    let info = settled_info(&admin, name, &names, warm as u64).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    (cluster, names, admin, leader)
}

/// Asks STREAM.INFO through `client` (bounded) until a leader other than `previous` answers;
/// returns when that leadership began (`cluster.leader_since`).
pub(crate) async fn new_leader_since(
    client: &async_nats::Client,
    stream: &str,
    previous: &str,
) -> time::OffsetDateTime {
    let subject = format!("$JS.API.STREAM.INFO.{stream}");
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let request = client.request(subject.clone(), "".into());
        let answer = tokio::time::timeout(Duration::from_secs(1), request).await;
        if let Ok(Ok(reply)) = answer {
            let info: Value = serde_json::from_slice(&reply.payload).unwrap_or_default();
            let leader = info["cluster"]["leader"].as_str().unwrap_or("");
            let since = info["cluster"]["leader_since"].as_str().unwrap_or("");
            if !leader.is_empty() && leader != previous {
                let format = time::format_description::well_known::Rfc3339;
                return time::OffsetDateTime::parse(since, &format)
                    .unwrap_or_else(|error| panic!("leader_since {since:?}: {error}; {info}"));
            }
        }
        assert!(Instant::now() < deadline, "{stream} got no new leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One acknowledged publish: its payload, stream sequence and when the ack came.
struct Acked {
    payload: String,
    sequence: u64,
    at: Instant,
}

/// Publishes `<prefix>-<n>` (also the message id) one at a time through `client`, each sent
/// again after [`ACK_WAIT`] until acknowledged, until `stop` is set.
fn publisher(
    client: async_nats::Client,
    subject: &'static str,
    prefix: &'static str,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<Acked>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let jetstream = async_nats::jetstream::new(client);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let payload = format!("{prefix}-{n}");
            let message = Publish::build()
                .payload(payload.clone().into())
                .message_id(payload.clone());
            let attempt = async {
                let pending = jetstream.send_publish(subject, message).await.ok()?;
                tokio::time::timeout(ACK_WAIT, pending).await.ok()?.ok()
            };
            match attempt.await {
                Some(ack) => {
                    lock(&acked).push(Acked {
                        payload,
                        sequence: ack.sequence,
                        at: Instant::now(),
                    });
                    n += 1;
                }
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
}

/// The longest gap between two consecutive acks.
fn longest_gap(acked: &[Acked]) -> Duration {
    acked
        .windows(2)
        .map(|pair| pair[1].at.duration_since(pair[0].at))
        .max()
        .unwrap_or_default()
}

/// Every acknowledged message is in `stream` at its acknowledged sequence; otherwise the
/// mismatch with the payloads around that sequence.
async fn assert_all_stored(client: &async_nats::Client, stream: &str, acked: &[Acked]) {
    let jetstream = async_nats::jetstream::new(client.clone());
    let stream = jetstream
        .get_stream(stream)
        .await
        .unwrap_or_else(|error| panic!("{stream}: {error}"));
    let payload_at = |sequence: u64| {
        let stream = stream.clone();
        async move {
            stream
                .get_raw_message(sequence)
                .await
                .map(|message| String::from_utf8_lossy(&message.payload).into_owned())
                .map_err(|error| error.to_string())
        }
    };
    for entry in acked {
        let stored = payload_at(entry.sequence).await;
        if stored.as_deref() != Ok(entry.payload.as_str()) {
            let mut around = Vec::new();
            for sequence in entry.sequence.saturating_sub(3)..=entry.sequence + 3 {
                around.push((sequence, payload_at(sequence).await));
            }
            panic!(
                "{} was acked at sequence {}, which holds {stored:?}; around it: {around:?}",
                entry.payload, entry.sequence
            );
        }
    }
}

/// Lines from `client` until an INFO whose JSON satisfies `wanted` (bounded by its timeout).
fn info_where(client: &mut RawClient, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
    loop {
        let line = client.read_line()?;
        let Some(json) = line.strip_prefix("INFO ") else {
            continue;
        };
        let info: Value = serde_json::from_str(json).ok()?;
        if wanted(&info) {
            return Some(info);
        }
    }
}

fn connect_urls(info: &Value) -> Vec<String> {
    info["connect_urls"]
        .as_array()
        .map(|urls| {
            urls.iter()
                .filter_map(|url| url.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn raw_client(cluster: &Cluster, index: usize) -> RawClient {
    let mut client = RawClient::connect_addr(&cluster.node(index).addr());
    client.send("CONNECT {\"protocol\":1,\"verbose\":false}\r\nPING\r\n");
    client.timeout = Duration::from_secs(10);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_leader_in_lame_duck_mode_hands_over_and_no_acked_write_is_lost() {
    let (mut cluster, _, _, leader) = cluster_with_stream("LDM", "ldm", 5).await;
    let leaving = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != leaving).unwrap_or(0);
    let leaving_url = cluster.node(leaving).addr();
    let survivor_url = cluster.node(survivor).addr();

    let mut on_leaving = raw_client(&cluster, leaving);
    let mut on_survivor = raw_client(&cluster, survivor);
    let leaving_jetstream = async_nats::jetstream::new(connect(&cluster, leaving).await);
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let publishing = publisher(
        connect(&cluster, survivor).await,
        "ldm.load",
        "load",
        stop.clone(),
        acked.clone(),
    );
    // Publishing runs before the signal.
    let deadline = Instant::now() + ELECTION_BOUND;
    while lock(&acked).len() < 20 {
        assert!(Instant::now() < deadline, "the publisher got no acks");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let signalled = lock(&acked).len();
    cluster.node(leaving).send_signal(libc::SIGUSR2);

    // The leaving node's clients are told, and offered only the other servers.
    let ldm = info_where(&mut on_leaving, |info| info["ldm"] == true)
        .unwrap_or_else(|| panic!("no INFO ldm on the leaving node\n{}", cluster.logs()));
    let offered = connect_urls(&ldm);
    assert!(!offered.contains(&leaving_url), "{ldm}");
    assert!(offered.contains(&survivor_url), "{ldm}");
    let told = time::OffsetDateTime::now_utc();
    // Its clients are still served during the grace period: JetStream stopped on the node, so
    // their JetStream requests reach the other servers.
    // Sent again (same message id) while unanswered, within the grace period.
    let told_at = Instant::now();
    let mut served = None;
    while served.is_none() && told_at.elapsed() < GRACE - Duration::from_millis(300) {
        let message = Publish::build()
            .payload("in the grace period".into())
            .message_id("grace");
        let attempt = async {
            let pending = leaving_jetstream
                .send_publish("ldm.grace", message)
                .await
                .ok()?;
            tokio::time::timeout(ACK_WAIT, pending).await.ok()?.ok()
        };
        served = attempt.await;
    }
    assert!(
        served.is_some(),
        "a publish through the leaving node in its grace period got no ack"
    );
    // The INFO comes once the node handed its leaderships over and stopped JetStream: the
    // stream's next leader took over before the clients were told, not in an election after.
    // The successor stamps `leader_since` when its own process notices its leadership, which
    // on a loaded machine can trail the first heartbeat the leaving node heard from it (once
    // 0.6 ms after the INFO reached this test, at load 35); an election after the INFO would
    // come an election timeout (2 s or more) after the leaving node stopped.
    let asker = connect(&cluster, survivor).await;
    let since = new_leader_since(&asker, "LDM", &leader).await;
    assert!(
        since <= told + LEADER_STAMP_SLACK,
        "the next stream leader took over at {since}, after the clients were told at {told}"
    );
    // The other nodes' clients stop being offered the leaving node.
    let update = info_where(&mut on_survivor, |info| {
        !connect_urls(info).contains(&leaving_url)
    })
    .unwrap_or_else(|| panic!("survivor's clients still offered {leaving_url}"));
    assert!(update.get("ldm").is_none(), "{update}");

    let code = tokio::task::block_in_place(|| cluster.node_mut(leaving).wait_exit(EXIT_BOUND));
    assert_eq!(
        code,
        Some(0),
        "lame duck mode must end in exit 0\n{}",
        cluster.logs()
    );

    // Publishing goes on without the node.
    let target = lock(&acked).len() + 20;
    let deadline = Instant::now() + ELECTION_BOUND;
    while lock(&acked).len() < target {
        assert!(
            Instant::now() < deadline,
            "publishing stopped after lame duck mode"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let _ = publishing.await;

    let acked = std::mem::take(&mut *lock(&acked));
    let gap = longest_gap(&acked[signalled.saturating_sub(1)..]);
    println!(
        "{} lame duck mode of the stream leader: longest gap between PubAcks {gap:?} ({} acked)",
        kind().label(),
        acked.len()
    );
    let reader = connect(&cluster, survivor).await;
    assert_all_stored(&reader, "LDM", &acked).await;
    assert!(
        gap <= HANDOVER_BOUND,
        "PubAcks stopped for {gap:?} while the leader left in lame duck mode"
    );
}

/// The longest gap between two PubAcks while one node of a rolling restart is out: a leader's
/// handover, or the publisher's reconnect when its server closes it, plus one retry. nats-server
/// gets the bound of an election instead (its timeout a random 4-9 s): in one of two parity runs
/// (4 Dec 2026, 2.15.1, load 15-20) its PubAcks stopped for 6.8 s while meta-1 restarted.
fn restart_gap_bound() -> Duration {
    if test_harness::is_reference() {
        Duration::from_secs(12)
    } else {
        Duration::from_secs(3)
    }
}
/// A restarted node says ok on `/healthz` within this.
const HEALTHY_BOUND: Duration = Duration::from_secs(60);

/// Waits (bounded) until node `index` answers `/healthz` with 200 and `{"status":"ok"}`.
fn wait_healthy(cluster: &Cluster, index: usize) -> Duration {
    wait_healthy_at(cluster, index, "/healthz").0
}

/// Waits (bounded) until node `index` answers `path` with `{"status":"ok"}`; how long it took
/// and the other answers seen on the way (each once, the first 20).
fn wait_healthy_at(cluster: &Cluster, index: usize, path: &str) -> (Duration, Vec<Value>) {
    let started = Instant::now();
    let port = cluster.node(index).monitor_port;
    let mut seen = Vec::new();
    loop {
        let (status, body) = http_get_any(port, path).unwrap_or_default();
        let health = serde_json::from_str::<Value>(&body).unwrap_or(Value::Null);
        if status == 200 && health["status"] == "ok" {
            return (started.elapsed(), seen);
        }
        let answer = json!({"status_code": status, "body": health});
        if status != 0 && seen.len() < 20 && !seen.contains(&answer) {
            seen.push(answer);
        }
        assert!(
            started.elapsed() < HEALTHY_BOUND,
            "node {index} never healthy: {body}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The messages JetStream holds on node `index` (`/jsz` `messages`: its replicas included).
fn messages_held(cluster: &Cluster, index: usize) -> Option<u64> {
    let body = http_get(cluster.node(index).monitor_port, "/jsz")?;
    let jsz: Value = serde_json::from_str(&body).ok()?;
    jsz["messages"].as_u64()
}

/// Publishes `count` messages on `subject` through `jetstream`, 100 in flight at a time, each
/// acknowledged.
async fn publish_many(jetstream: &async_nats::jetstream::Context, subject: &str, count: usize) {
    let payload = bytes::Bytes::from(vec![b'x'; 64]);
    for chunk in 0..count.div_ceil(100) {
        let mut pending = Vec::new();
        for _ in 0..100.min(count - chunk * 100) {
            let ack = jetstream
                .publish(subject.to_string(), payload.clone())
                .await
                .unwrap_or_else(|error| panic!("publish: {error}"));
            pending.push(ack);
        }
        for ack in pending {
            ack.await.unwrap_or_else(|error| panic!("ack: {error}"));
        }
    }
}

/// How the follower of the `/healthz` catch-up tests leaves while the others take writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaving {
    /// SIGTERM, exit 0, restarted with its store.
    Restarted,
    /// `kill -9`, its store emptied, restarted under its name.
    Wiped,
}

/// An R3 stream `name` on `<prefix>.>` with 10 messages; a follower no client of the test uses
/// leaves as `how`, 3000 messages are published meanwhile, and it is restarted: once its
/// `path` (a `/healthz`) says ok it must hold them all (`/jsz` `messages`). The answers that
/// were not ok on the way.
async fn healthz_waits_for_the_catch_up(
    name: &str,
    prefix: &str,
    how: Leaving,
    path: &str,
) -> Vec<Value> {
    let (mut cluster, names, admin, leader) = cluster_with_stream(name, prefix, 10).await;
    let jetstream = async_nats::jetstream::new(admin.clone());
    // A follower that no client of this test uses.
    let down = (1..3).find(|&i| names[i] != leader).unwrap_or(2);
    tokio::task::block_in_place(|| wait_healthy(&cluster, down));

    match how {
        Leaving::Restarted => {
            cluster.node(down).send_signal(libc::SIGTERM);
            let code = tokio::task::block_in_place(|| cluster.node_mut(down).wait_exit(EXIT_BOUND));
            assert_eq!(code, Some(0), "{}", cluster.logs());
        }
        Leaving::Wiped => {
            cluster.kill9(down);
            wipe_store(&cluster, down);
        }
    }
    const MISSED: u64 = 3000;
    publish_many(&jetstream, &format!("{prefix}.missed"), MISSED as usize).await;

    let (took, held, seen) = tokio::task::block_in_place(|| {
        cluster.restart(down);
        let (took, seen) = wait_healthy_at(&cluster, down, path);
        (took, messages_held(&cluster, down), seen)
    });
    let label = match how {
        Leaving::Restarted => "restarted",
        Leaving::Wiped => "wiped",
    };
    println!(
        "{} {label} replica healthy at {path} {took:?} after it answered clients, holding {held:?} of {}",
        kind().label(),
        10 + MISSED
    );
    // nats-server's healthz counts a restarted replica that has not heard from its leader yet as
    // current (its raft isCurrent checks leader contact only once a leader is known): measured
    // here it said ok 0.23 s after the restart holding 10 of 3010 messages. Ours waits
    // (docs/parity.md). A wiped one it holds back until it runs its replica again and caught up.
    if how == Leaving::Restarted && test_harness::is_reference() {
        return seen;
    }
    assert_eq!(
        held,
        Some(10 + MISSED),
        "{path} said ok before the {label} replica caught up\n{}",
        cluster.logs()
    );
    seen
}

// Once intermittent on ours (about 1 run in 6 under load: ok while `/jsz` held 1311-2010 of
// 3010): the first append a restarted follower accepted brought every entry it missed, and the
// one append of slack nats-raft's `leader_contact.rs` gave called it current while it was still
// applying them. The first append now gives no slack. Again in the lead's CI run at load 12 (ok
// holding 2210 of 3010): the first append came with an old commit (28 of 43 entries, built
// before the leader backed off from the stopped node) and the next one's slack went back to
// it. The slack is now earned: only once the follower applied the highest commit announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_says_ok_only_once_a_restarted_replica_has_caught_up() {
    healthz_waits_for_the_catch_up("CATCH", "catch", Leaving::Restarted, "/healthz").await;
}

/// A wiped server (killed, its store emptied, restarted under its name) says ok only once it
/// runs its replica again and that replica caught up. Ours once said ok as soon as it was
/// current with the meta leader: its new incarnation held no group yet, and `/healthz` only
/// looked at the groups running here (clusterbench: ok 0.6 s before the leader listed it
/// current). nats-server checks every stream the meta group places on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_says_ok_only_once_a_wiped_replica_has_caught_up() {
    healthz_waits_for_the_catch_up("WIPE", "wipe", Leaving::Wiped, "/healthz").await;
}

/// The same with the stream's account named and `details`: nats-server checks the account's
/// streams placed on the server after the meta group, and lists each failing one. Ours once
/// checked only the meta group when an account was named (ok while the replica was empty).
/// Every answer on the way is the meta group's error or the stream's, in nats-server's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_of_the_account_says_ok_only_once_a_wiped_replica_has_caught_up() {
    let path = "/healthz?account=APP&details=true";
    let seen = healthz_waits_for_the_catch_up("WIPEA", "wipea", Leaving::Wiped, path).await;
    println!("{} answers before ok: {seen:?}", kind().label());
    for answer in seen {
        let health = &answer["body"];
        assert_eq!(answer["status_code"], 503, "{answer}");
        assert_eq!(health["status"], "error", "{health}");
        let errors = health["errors"].as_array().expect("errors");
        assert!(!errors.is_empty(), "{health}");
        for error in errors {
            let text = error["error"].as_str().unwrap_or("");
            match error["type"].as_str() {
                Some("JETSTREAM") => assert!(text.starts_with("JetStream "), "{health}"),
                Some("STREAM") => {
                    assert_eq!(error["account"], "APP", "{health}");
                    assert_eq!(error["stream"], "WIPEA", "{health}");
                    let prefix = "JetStream stream 'APP > WIPEA' is not current: ";
                    assert!(text.starts_with(prefix), "{health}");
                }
                _ => panic!("unexpected error: {health}"),
            }
        }
    }
}

/// One restart of a rolling restart: how long the node was out (signal to `/healthz` ok) and
/// the longest gap between two PubAcks meanwhile.
struct Restart {
    node: String,
    out: Duration,
    longest_gap: Duration,
}

/// Pulls from durable `consumer` of `stream` through `client` until `stop`, recording every
/// payload delivered and acknowledging it; errors (a leader change, a reconnect) are retried.
pub(crate) fn consumer_task(
    client: async_nats::Client,
    stream: &'static str,
    consumer: &'static str,
    stop: Arc<AtomicBool>,
    consumed: Arc<Mutex<std::collections::HashSet<String>>>,
) -> tokio::task::JoinHandle<()> {
    use futures::StreamExt;
    tokio::spawn(async move {
        let jetstream = async_nats::jetstream::new(client);
        while !stop.load(Ordering::Relaxed) {
            let pull = async {
                let stream = jetstream.get_stream(stream).await.ok()?;
                let pull: async_nats::jetstream::consumer::PullConsumer =
                    stream.get_consumer(consumer).await.ok()?;
                let mut batch = pull
                    .fetch()
                    .max_messages(100)
                    .expires(Duration::from_millis(500))
                    .messages()
                    .await
                    .ok()?;
                while let Some(Ok(message)) = batch.next().await {
                    let payload = String::from_utf8_lossy(&message.payload).into_owned();
                    lock(&consumed).insert(payload);
                    let _ = message.ack().await;
                }
                Some(())
            };
            if tokio::time::timeout(Duration::from_secs(5), pull)
                .await
                .ok()
                .flatten()
                .is_none()
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
}

/// A client of every node that reconnects within 100 ms.
async fn cluster_client(cluster: &Cluster) -> async_nats::Client {
    let urls: Vec<String> = (0..cluster.len()).map(|i| cluster.url(i)).collect();
    async_nats::ConnectOptions::new()
        .reconnect_delay_callback(|_| Duration::from_millis(100))
        .connect(urls)
        .await
        .expect("connect to the cluster")
}

/// Waits (bounded) until `acked` holds `count` acknowledgements.
async fn wait_acked(acked: &Mutex<Vec<Acked>>, count: usize, what: &str) {
    let deadline = Instant::now() + ELECTION_BOUND;
    while lock(acked).len() < count {
        assert!(
            Instant::now() < deadline,
            "{what}: stuck at {}",
            lock(acked).len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// Once intermittent on ours (about 1 run in 6 under load: "roll-360" acked at 361, which held
// "roll-361"). The leaving leader's last proposal failed during its lame duck handover; its
// replica was rebuilt and the restarted group resumed the same Raft term as leader (openraft
// restores a committed vote for itself), so the ingest task, which knew leaderships by term,
// kept its duplicate window holding the failed message's id and answered the retry as a
// duplicate at a sequence it never stored. Leaderships are now numbered (nats-raft
// `leadership.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_loses_no_acked_message() {
    rolling_restart(false).await;
}

// Once intermittent on ours (about 1 run in 5: stream seq 24 never delivered, ack floor 434,
// nothing pending). Most likely the same resumed term (not caught in a log: it passed every
// run since): consumers kept running from their in-memory state while their committed state
// was rebuilt without the deliveries whose proposals had failed; a new leadership number
// restarts them from the committed state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_consumes_every_acked_message() {
    rolling_restart(true).await;
}

/// Restarts every node in turn (lame duck, exit 0, start, `/healthz` ok) while a publisher and
/// a durable pull consumer run; every acked message must stay stored and, when `check_consumed`,
/// be consumed at least once.
async fn rolling_restart(check_consumed: bool) {
    let (mut cluster, names, admin, _) = cluster_with_stream("ROLL", "roll", 0).await;
    let jetstream = async_nats::jetstream::new(admin.clone());
    let config = async_nats::jetstream::consumer::pull::Config {
        durable_name: Some("WORK".into()),
        ack_policy: async_nats::jetstream::consumer::AckPolicy::Explicit,
        ack_wait: Duration::from_secs(2),
        ..Default::default()
    };
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let created = async {
            let stream = jetstream.get_stream("ROLL").await.ok()?;
            stream.create_consumer(config.clone()).await.ok()
        };
        if created.await.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the durable consumer was never created"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let stop_publishing = Arc::new(AtomicBool::new(false));
    let stop_consuming = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let consumed: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
    let publishing = publisher(
        cluster_client(&cluster).await,
        "roll.load",
        "roll",
        stop_publishing.clone(),
        acked.clone(),
    );
    let consuming = consumer_task(
        cluster_client(&cluster).await,
        "ROLL",
        "WORK",
        stop_consuming.clone(),
        consumed.clone(),
    );
    wait_acked(&acked, 20, "publishing before the restarts").await;

    let mut restarts = Vec::new();
    for (node, name) in names.iter().enumerate() {
        let first = lock(&acked).len();
        let started = Instant::now();
        cluster.node(node).send_signal(libc::SIGUSR2);
        let out = tokio::task::block_in_place(|| {
            let code = cluster.node_mut(node).wait_exit(EXIT_BOUND);
            assert_eq!(
                code,
                Some(0),
                "node {node} lame duck exit\n{}",
                cluster.logs()
            );
            cluster.restart(node);
            wait_healthy(&cluster, node);
            started.elapsed()
        });
        let target = lock(&acked).len() + 20;
        wait_acked(&acked, target, "publishing after a restart").await;
        let longest_gap = longest_gap(&lock(&acked)[first.saturating_sub(1)..]);
        restarts.push(Restart {
            node: name.clone(),
            out,
            longest_gap,
        });
    }
    stop_publishing.store(true, Ordering::Relaxed);
    let _ = publishing.await;
    let acked = std::mem::take(&mut *lock(&acked));

    // Every acknowledged message is consumed at least once (redeliveries after ack_wait
    // included), and still stored at its sequence.
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        if !check_consumed {
            break;
        }
        let missing: Vec<(&str, u64)> = {
            let consumed = lock(&consumed);
            acked
                .iter()
                .filter(|entry| !consumed.contains(&entry.payload))
                .map(|entry| (entry.payload.as_str(), entry.sequence))
                .collect()
        };
        if missing.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let info = one_answer(&admin, "$JS.API.CONSUMER.INFO.ROLL.WORK", Value::Null).await;
            panic!(
                "{} acked messages never consumed, e.g. (payload, stream sequence) {:?}; \
                 consumer: {info}\n{}",
                missing.len(),
                &missing[..missing.len().min(5)],
                cluster.logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_consuming.store(true, Ordering::Relaxed);
    let _ = consuming.await;
    let reader = connect(&cluster, 0).await;
    assert_all_stored(&reader, "ROLL", &acked).await;

    for restart in &restarts {
        println!(
            "{} rolling restart (lame duck, start, /healthz ok) of {}: out {:?}, longest gap between PubAcks {:?}",
            kind().label(),
            restart.node,
            restart.out,
            restart.longest_gap
        );
    }
    println!(
        "{} rolling restart: {} acked (consumption checked: {check_consumed})",
        kind().label(),
        acked.len()
    );
    for restart in &restarts {
        assert!(
            restart.longest_gap <= restart_gap_bound(),
            "PubAcks stopped for {:?} while {} restarted",
            restart.longest_gap,
            restart.node
        );
    }
}

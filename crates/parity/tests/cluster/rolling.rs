//! Rolling operations on a 3-node JetStream cluster: lame duck mode (SIGUSR2) on the leader of
//! an R3 stream hands the stream's leadership over before the node leaves, so a publisher on
//! another node keeps getting PubAcks (the longest gap between two acks is printed: the
//! unavailability figure, beside nats-server's in the parity pass), no acknowledged message is
//! lost, the node's clients hear INFO `ldm` without the node in `connect_urls`, the other
//! nodes' clients stop being offered it, and the node exits 0.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use serde_json::Value;
use test_harness::cluster::{Cluster, ClusterOptions, Topology};
use test_harness::RawClient;

use crate::jetstream_assignments::{connect, leader_of};
use crate::jetstream_failover::stream_leader;
use crate::jetstream_replicated::{create_r3, lock, names_of, publish_until_acked, settled_info};
use crate::meta::{index_of, kind, ELECTION_BOUND, SYSTEM_ACCOUNT};

/// Lame duck settings of every node: clients closed one second after the INFO `ldm`.
const LAME_DUCK: &str = "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n";
/// A publish not acknowledged within this is sent again (same message id).
const ACK_WAIT: Duration = Duration::from_millis(500);
/// A node in lame duck mode exits within this (grace period, one client closed a second, the
/// shutdown itself).
const EXIT_BOUND: Duration = Duration::from_secs(20);
/// The longest gap between two PubAcks while the stream leader leaves in lame duck mode: its
/// leadership is handed over, so no election timeout (4-9 s on nats-server) is waited out; a
/// publish in flight at the handover may go unanswered and is sent again after [`ACK_WAIT`].
const HANDOVER_BOUND: Duration = Duration::from_secs(2);

/// A 3-node JetStream cluster with lame duck settings, and its node names.
fn start_cluster() -> (Cluster, Vec<String>) {
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "meta".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = format!("{SYSTEM_ACCOUNT}{LAME_DUCK}");
    let cluster = Cluster::start(options);
    leader_of(&cluster, &[0, 1, 2]);
    let names = names_of(&cluster);
    (cluster, names)
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

/// Every acknowledged message is in `stream` at its acknowledged sequence.
async fn assert_all_stored(client: &async_nats::Client, stream: &str, acked: &[Acked]) {
    let jetstream = async_nats::jetstream::new(client.clone());
    let stream = jetstream
        .get_stream(stream)
        .await
        .unwrap_or_else(|error| panic!("{stream}: {error}"));
    for entry in acked {
        let message = stream
            .get_raw_message(entry.sequence)
            .await
            .unwrap_or_else(|error| panic!("acked {} lost: {error}", entry.payload));
        assert_eq!(
            String::from_utf8_lossy(&message.payload),
            entry.payload,
            "sequence {}",
            entry.sequence
        );
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
    let (mut cluster, names) = start_cluster();
    let admin = connect(&cluster, 0).await;
    let (created, _) = create_r3(&admin, "LDM", "ldm.>").await;
    assert_eq!(created["did_create"], true, "{created}");
    let jetstream = async_nats::jetstream::new(admin.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..5 {
        publish_until_acked(&jetstream, "ldm.warm", &format!("warm-{n}"), deadline).await;
    }
    let info = settled_info(&admin, "LDM", &names, 5).await;
    let leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let leaving = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != leaving).unwrap_or(0);
    let leaving_url = cluster.node(leaving).addr();
    let survivor_url = cluster.node(survivor).addr();

    let mut on_leaving = raw_client(&cluster, leaving);
    let mut on_survivor = raw_client(&cluster, survivor);
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
    // The INFO comes once the node handed its leaderships over and stopped JetStream: the
    // stream has another leader already, not one still to be elected after a timeout.
    let asker = connect(&cluster, survivor).await;
    let now_leading = stream_leader(&asker, "LDM").await;
    assert!(
        now_leading.as_ref().is_some_and(|name| *name != leader),
        "no new stream leader when the clients were told (got {now_leading:?}, was {leader})"
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

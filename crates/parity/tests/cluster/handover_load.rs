//! A stream leader handing its leadership over (lame duck mode) while publishes are pipelined to
//! it: a publish the group refuses during the handover must not end the handover. In the lead's
//! CI run on e0625e8 one did: the refused batch had the replica rebuilt by restarting its group,
//! the transfer died with the old group (the successor waited for an entry no one sent), and the
//! stream stayed leaderless for 4.5 s, until its followers' election. As there, a consumer acks
//! beside the publishes (its records are proposed beside the stream's batches), and the
//! followers' answers are delayed (there, a slow fsync): the leader holds entries it has not sent
//! to its successor yet (one append in flight per follower) when the handover starts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;

use serde_json::json;
use test_harness::cluster::{LinkMode, Topology};

use crate::jetstream_assignments::{connect, one_answer};
use crate::meta::{index_of, ELECTION_BOUND};
use crate::rolling::{cluster_with_stream_on, consumer_task, new_leader_since};

/// How late the leader's route frames reach its followers.
const FOLLOWER_DELAY: Duration = Duration::from_millis(20);
/// Durable consumers acking beside the publishes: their records are proposals of their own.
const CONSUMERS: [&str; 8] = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7"];
/// Publishes in flight at once: at any moment some batch of the stream is being proposed.
const IN_FLIGHT: usize = 64;
/// How long after the signal the next leader may stamp its `leader_since`: a handover takes
/// milliseconds; an election after a failed one comes an election timeout (2 s or more) later.
const HANDOVER_SLACK: Duration = Duration::from_millis(1500);

/// Publishes [`IN_FLIGHT`] messages at a time through `client` until `stop`, counting the acks.
fn pipelined(
    client: async_nats::Client,
    subject: &'static str,
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let jetstream = async_nats::jetstream::new(client);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let mut pending = Vec::with_capacity(IN_FLIGHT);
            for _ in 0..IN_FLIGHT {
                n += 1;
                let message = Publish::build().payload(format!("load-{n}").into());
                if let Ok(ack) = jetstream.send_publish(subject, message).await {
                    pending.push(std::future::IntoFuture::into_future(ack));
                }
            }
            let answers = futures::future::join_all(pending);
            if let Ok(answers) = tokio::time::timeout(Duration::from_secs(1), answers).await {
                let acked = answers.iter().filter(|answer| answer.is_ok()).count();
                acks.fetch_add(acked as u64, Ordering::Relaxed);
            }
        }
    })
}

/// Waits (bounded) until `acks` reaches `target`.
async fn wait_acks(acks: &AtomicU64, target: u64, what: &str) {
    let deadline = Instant::now() + ELECTION_BOUND;
    while acks.load(Ordering::Relaxed) < target {
        assert!(
            Instant::now() < deadline,
            "{what}: {} of {target} acks",
            acks.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How the stream leader is made to hand over.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Handover {
    /// SIGUSR2: lame duck mode, then the node exits.
    LameDuck,
    /// `$JS.API.STREAM.LEADER.STEPDOWN`.
    StepDown,
    /// SIGTERM: the server shuts down (nats-server steps its leaderships down first).
    Shutdown,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lame_duck_stream_leader_hands_over_under_pipelined_publishes() {
    handover_under_load(Handover::LameDuck).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stepdown_hands_over_under_pipelined_publishes() {
    handover_under_load(Handover::StepDown).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_leader_shut_down_hands_over_under_pipelined_publishes() {
    handover_under_load(Handover::Shutdown).await;
}

/// The stream leader hands over `how` while publishes are pipelined and eight consumers ack:
/// the next leader takes over within [`HANDOVER_SLACK`], and publishing goes on.
async fn handover_under_load(how: Handover) {
    let (mut cluster, _, _, leader) =
        cluster_with_stream_on(Topology::Proxied, "LDMP", "ldmp", 0).await;
    let leaving = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != leaving).unwrap_or(0);
    for follower in (0..3).filter(|&i| i != leaving) {
        cluster.set_direction(leaving, follower, LinkMode::Delay(FOLLOWER_DELAY));
    }
    let admin = connect(&cluster, survivor).await;
    let config = async_nats::jetstream::consumer::pull::Config {
        ack_policy: async_nats::jetstream::consumer::AckPolicy::Explicit,
        ..Default::default()
    };
    let stream = async_nats::jetstream::new(admin.clone())
        .get_stream("LDMP")
        .await
        .unwrap_or_else(|error| panic!("LDMP: {error}"));
    for name in CONSUMERS {
        let config = async_nats::jetstream::consumer::pull::Config {
            durable_name: Some(name.to_string()),
            ..config.clone()
        };
        stream
            .create_consumer(config)
            .await
            .unwrap_or_else(|error| panic!("consumer {name}: {error}"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(AtomicU64::new(0));
    let publishing = pipelined(
        connect(&cluster, survivor).await,
        "ldmp.load",
        stop.clone(),
        acks.clone(),
    );
    let consuming: Vec<_> = CONSUMERS
        .iter()
        .map(|name| consumer_task(admin.clone(), "LDMP", name, stop.clone(), Arc::default()))
        .collect();
    wait_acks(
        &acks,
        10 * IN_FLIGHT as u64,
        "publishing before the handover",
    )
    .await;

    let signalled = time::OffsetDateTime::now_utc();
    match how {
        Handover::LameDuck => cluster.node(leaving).send_signal(libc::SIGUSR2),
        Handover::Shutdown => cluster.node(leaving).send_signal(libc::SIGTERM),
        Handover::StepDown => {
            let answer = one_answer(&admin, "$JS.API.STREAM.LEADER.STEPDOWN.LDMP", json!({})).await;
            assert_eq!(answer["success"], true, "{answer}");
        }
    }
    let asker = connect(&cluster, survivor).await;
    let since = new_leader_since(&asker, "LDMP", &leader).await;
    assert!(
        since <= signalled + HANDOVER_SLACK,
        "the next stream leader took over at {since}, {:?} after it was asked at {signalled}: \
         not handed over ({how:?})\n{}",
        since - signalled,
        cluster.logs()
    );
    let target = acks.load(Ordering::Relaxed) + 10 * IN_FLIGHT as u64;
    wait_acks(&acks, target, "publishing after the handover").await;
    stop.store(true, Ordering::Relaxed);
    let _ = publishing.await;
    for consumer in consuming {
        let _ = consumer.await;
    }
    if how != Handover::StepDown {
        let code = tokio::task::block_in_place(|| {
            cluster.node_mut(leaving).wait_exit(Duration::from_secs(20))
        });
        assert!(
            code.is_some(),
            "{how:?}: the node did not exit\n{}",
            cluster.logs()
        );
    }
}

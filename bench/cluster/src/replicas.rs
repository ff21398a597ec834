//! Replica workloads of issue 20 on a JetStream cluster: how long a restarted follower takes to
//! be current again on a large stream with many consumers (and a wiped one, as MB/s of
//! catch-up), and the idle cost (CPU, RSS) of many R3 durable consumers.

use crate::cluster::{Cluster, NODES};
use crate::jsapi;
use anyhow::{Context, Result};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use std::time::{Duration, Instant};

const BIG: &str = "BIG";
const BIG_SUBJECT: &str = "big.msgs";
/// Message size of the catch-up stream.
pub const BIG_MESSAGE: usize = 1024;
/// Bound of the consumer creations on the catch-up stream.
const CREATE_TIMEOUT: Duration = Duration::from_secs(180);
/// Consumer creations in flight at once.
const CREATE_CONCURRENCY: usize = 16;

pub struct Catchup {
    /// From the restart (spawn) of a follower that missed a tenth of the stream until
    /// STREAM.INFO lists it current, and until its own `/healthz` answers 200.
    pub restart_current: Option<Duration>,
    pub restart_healthz: Option<Duration>,
    /// The bytes it missed over the time until current.
    pub restart_mb_per_s: Option<f64>,
    /// The same for a follower restarted with an empty store directory, and the stream's bytes
    /// over that time.
    pub wiped_current: Option<Duration>,
    pub wiped_healthz: Option<Duration>,
    pub wiped_mb_per_s: Option<f64>,
}

/// Creates `count` R3 durable consumers `<prefix><i>` on `stream`, [`CREATE_CONCURRENCY`]
/// requests in flight, stopping early when `limit` passes; returns how many exist.
pub async fn create_consumers(
    client: &async_nats::Client,
    stream: &str,
    prefix: &str,
    count: usize,
    limit: Duration,
) -> Result<usize> {
    let started = Instant::now();
    let mut next = 0;
    let mut created = 0;
    let mut failed = 0;
    let mut in_flight = FuturesUnordered::new();
    loop {
        while next < count && in_flight.len() < CREATE_CONCURRENCY && started.elapsed() < limit {
            let name = format!("{prefix}{next}");
            next += 1;
            in_flight.push(async move { jsapi::create_consumer(client, stream, &name).await });
        }
        match in_flight.next().await {
            None => break,
            Some(Ok(())) => created += 1,
            Some(Err(error)) => {
                failed += 1;
                if failed <= 3 {
                    eprintln!("  consumer creation failed: {error:#}");
                }
            }
        }
    }
    if failed > 0 {
        eprintln!("  {failed} consumer creations failed");
    }
    Ok(created)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Polls (every 50 ms, for at most `limit`) until node `node` is a current replica of `stream` in
/// STREAM.INFO and until its `/healthz` is ok; the times since `since`.
async fn wait_current(
    cluster: &Cluster,
    client: &async_nats::Client,
    node: usize,
    since: Instant,
    limit: Duration,
) -> (Option<Duration>, Option<Duration>) {
    let mut current = None;
    let mut healthz = None;
    while since.elapsed() < limit && (current.is_none() || healthz.is_none()) {
        if current.is_none() && jsapi::replica_current(cluster, client, BIG, node).await {
            current = Some(since.elapsed());
        }
        if healthz.is_none() && cluster.healthz_ok(node).await {
            healthz = Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (current, healthz)
}

/// Waits (bounded, 30 s) until STREAM.INFO no longer lists the killed `node` as current: until
/// then the leader's view is stale, and a restart would seem current at once.
async fn wait_not_current(cluster: &Cluster, client: &async_nats::Client, node: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while jsapi::replica_current(cluster, client, BIG, node).await {
        if Instant::now() > deadline {
            eprintln!(
                "  {}: node {node} still listed current 30 s after its kill",
                cluster.label
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Preloads an R3 stream of `megabytes` MiB in [`BIG_MESSAGE`] messages with `consumers` R3
/// durable consumers; then kills a follower, publishes another tenth, restarts it and waits for
/// it to be current; then kills it again, wipes its store, publishes another hundredth and
/// waits again, each for at most `limit`. Each restart waits until the leader lists the dead
/// node as not current.
pub async fn catchup(
    cluster: &mut Cluster,
    megabytes: usize,
    consumers: usize,
    limit: Duration,
) -> Result<Catchup> {
    let count = megabytes * 1024 * 1024 / BIG_MESSAGE;
    let admin = cluster.connect(0).await?;
    jsapi::create_stream(&admin, BIG, BIG_SUBJECT, Some(consumers.max(1))).await?;
    let leader = jsapi::stream_leader(cluster, &admin, BIG).await?;
    let publisher = cluster.connect(leader).await?;
    let loaded = Instant::now();
    jsapi::preload(&publisher, BIG_SUBJECT, count, BIG_MESSAGE).await?;
    eprintln!(
        "  {}: {count} x {BIG_MESSAGE} B preloaded in {:.1} s",
        cluster.label,
        loaded.elapsed().as_secs_f64()
    );
    let created = create_consumers(&publisher, BIG, "C", consumers, CREATE_TIMEOUT).await?;
    eprintln!("  {}: {created} consumers on {BIG}", cluster.label);

    let follower = (leader + 1) % NODES;
    let before = jsapi::stream_bytes(&publisher, BIG).await?;
    cluster.kill(follower);
    jsapi::preload(&publisher, BIG_SUBJECT, count / 10, BIG_MESSAGE).await?;
    let missed = jsapi::stream_bytes(&publisher, BIG)
        .await?
        .saturating_sub(before);
    wait_not_current(cluster, &publisher, follower).await;
    let restarted = Instant::now();
    cluster.spawn(follower)?;
    let (restart_current, restart_healthz) =
        wait_current(cluster, &publisher, follower, restarted, limit).await;
    let restart_mb_per_s = restart_current.map(|time| mib(missed) / time.as_secs_f64());

    cluster.kill(follower);
    let store = cluster.store_dir(follower);
    std::fs::remove_dir_all(&store).with_context(|| format!("wipe {store:?}"))?;
    jsapi::preload(&publisher, BIG_SUBJECT, count / 100, BIG_MESSAGE).await?;
    wait_not_current(cluster, &publisher, follower).await;
    let bytes = jsapi::stream_bytes(&publisher, BIG).await?;
    let wiped = Instant::now();
    cluster.spawn(follower)?;
    let (wiped_current, wiped_healthz) =
        wait_current(cluster, &publisher, follower, wiped, limit).await;
    let wiped_mb_per_s = wiped_current.map(|time| mib(bytes) / time.as_secs_f64());
    Ok(Catchup {
        restart_current,
        restart_healthz,
        restart_mb_per_s,
        wiped_current,
        wiped_healthz,
        wiped_mb_per_s,
    })
}

pub struct Idle {
    pub created: usize,
    pub creation: Duration,
    /// CPU time of the three nodes over the idle window, in CPUs (1.0 = one core busy).
    pub cpu: f64,
    pub rss: Vec<Option<u64>>,
}

/// Creates `consumers` R3 durable consumers on one R3 stream (stopping when `limit` passes),
/// lets the cluster settle for 5 s, then measures its CPU over `window` and its RSS.
pub async fn idle(
    cluster: &Cluster,
    consumers: usize,
    limit: Duration,
    window: Duration,
) -> Result<Idle> {
    let client = cluster.connect(0).await?;
    jsapi::create_stream(&client, "IDLE", "idle.msgs", Some(consumers.max(1))).await?;
    jsapi::preload(&client, "idle.msgs", 100, 128).await?;
    let started = Instant::now();
    let created = create_consumers(&client, "IDLE", "I", consumers, limit).await?;
    let creation = started.elapsed();
    eprintln!(
        "  {}: {created} consumers created in {:.1} s",
        cluster.label,
        creation.as_secs_f64()
    );
    drop(client);
    let (cpu, rss) = cluster.idle_cost(window).await;
    Ok(Idle {
        created,
        creation,
        cpu,
        rss,
    })
}

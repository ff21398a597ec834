//! Replicated-consumer workloads (issue 20) on a JetStream cluster: an R3 durable pull
//! consumer's throughput with explicit acks and with AckSync, pull latency while the stream and
//! consumer leaders step down, and the time until consumption resumes after the consumer
//! leader's kill -9. Pull requests are raw `$JS.API.CONSUMER.MSG.NEXT` requests on an inbox, so
//! both servers see the same wire traffic.

use crate::cluster::{Cluster, NODES};
use crate::jsapi;
use anyhow::{bail, Result};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const STREAM: &str = "CB";
const SUBJECT: &str = "cb.msgs";
/// Messages asked for by one pull request of the throughput workload; two are kept in flight.
const PULL_BATCH: usize = 250;
/// If nothing arrives for this long, the throughput puller asks again (a lost or expired request).
const QUIET: Duration = Duration::from_secs(1);
/// The one-at-a-time puller's request expiry and patience: a request lost in a leader change
/// (sent to a node that just stopped leading) is replaced after [`SEQUENTIAL_QUIET`], so the
/// latencies show the server's stall, not a long client timeout.
const SEQUENTIAL_EXPIRES: Duration = Duration::from_millis(200);
const SEQUENTIAL_QUIET: Duration = Duration::from_millis(250);
/// At most one pull per this interval (one message each).
const SEQUENTIAL_PACE: Duration = Duration::from_millis(1);

/// Creates the stream and preloads it with `count` messages of `size` bytes.
pub async fn prepare(cluster: &Cluster, count: usize, size: usize) -> Result<()> {
    let client = cluster.connect(0).await?;
    jsapi::create_stream(&client, STREAM, SUBJECT, None).await?;
    let leader = jsapi::stream_leader(cluster, &client, STREAM).await?;
    // Publish on the leader's node, as a client near the leader would.
    let publisher = cluster.connect(leader).await?;
    jsapi::preload(&publisher, SUBJECT, count, size).await
}

/// Consumed messages per second and the servers' CPU time per consumed message.
pub struct Consumption {
    pub rate: f64,
    pub cpu_per_message: f64,
}

fn pull_request(batch: usize, expires: Duration) -> bytes::Bytes {
    json!({"batch": batch, "expires": expires.as_nanos() as u64})
        .to_string()
        .into()
}

/// Consumes up to `total` messages (or until `limit` passes) through a fresh R3 durable pull
/// consumer `name`, two pull requests of [`PULL_BATCH`] in flight, acking every message: a
/// plain `+ACK` publish, or with `sync` an AckSync (a request whose answer is awaited; up to
/// the consumer's max_ack_pending in flight). The clock stops at the last ack sent (flushed)
/// or, with `sync`, at the last ack answered.
pub async fn consume(
    cluster: &Cluster,
    name: &str,
    total: usize,
    sync: bool,
    limit: Duration,
) -> Result<Consumption> {
    let admin = cluster.connect(0).await?;
    jsapi::create_consumer(&admin, STREAM, name).await?;
    let leader = jsapi::consumer_leader(cluster, &admin, STREAM, name).await?;
    // A client on a follower's node: its pulls, deliveries and acks cross a route, as for a
    // client that is not next to the leader (the usual case for two thirds of the clients).
    let client = cluster.connect((leader + 1) % NODES).await?;
    let inbox = client.new_inbox();
    let mut deliveries = client.subscribe(inbox.clone()).await?;
    client.flush().await?;
    let next = format!("$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{name}");
    let request = pull_request(PULL_BATCH, Duration::from_secs(5));

    let cpu_before = cluster.cpu_seconds();
    let started = Instant::now();
    for _ in 0..2 {
        client
            .publish_with_reply(next.clone(), inbox.clone(), request.clone())
            .await?;
    }
    client.flush().await?;
    let mut received = 0usize;
    let mut since_request = 0usize;
    let mut acked = 0usize;
    let mut answers = FuturesUnordered::new();
    while acked < total && started.elapsed() < limit {
        tokio::select! {
            delivery = tokio::time::timeout(QUIET, deliveries.next()) => {
                let message = match delivery {
                    Err(_) => {
                        client.publish_with_reply(next.clone(), inbox.clone(), request.clone()).await?;
                        continue;
                    }
                    Ok(None) => bail!("{}: inbox subscription closed", cluster.label),
                    Ok(Some(message)) => message,
                };
                if message.status.is_some() {
                    // 408 expired / 409 / 404: the request is done; ask again.
                    if message.status.map(u16::from) != Some(100) {
                        client.publish_with_reply(next.clone(), inbox.clone(), request.clone()).await?;
                    }
                    continue;
                }
                let Some(reply) = message.reply else { continue };
                received += 1;
                if sync {
                    let client = client.clone();
                    answers.push(async move { client.request(reply, "+ACK".into()).await });
                } else {
                    client.publish(reply, bytes::Bytes::from_static(b"+ACK")).await?;
                    acked += 1;
                }
                since_request += 1;
                if since_request >= PULL_BATCH && received < total {
                    since_request -= PULL_BATCH;
                    client.publish_with_reply(next.clone(), inbox.clone(), request.clone()).await?;
                }
            }
            Some(answer) = answers.next(), if !answers.is_empty() => {
                answer?;
                acked += 1;
            }
        }
    }
    client.flush().await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cluster.cpu_seconds() - cpu_before;
    if acked == 0 {
        bail!("{}: consumer {name} consumed nothing", cluster.label);
    }
    eprintln!(
        "  {}: {name} {acked}/{total} acked in {elapsed:.2} s ({})",
        cluster.label,
        if sync { "AckSync" } else { "ack" }
    );
    Ok(Consumption {
        rate: acked as f64 / elapsed,
        cpu_per_message: cpu / acked as f64,
    })
}

/// What a sequential puller saw: per message, when it was received and how long since its
/// first pull request (retries after a 408/409 or a silent request included).
type Received = Arc<Mutex<Vec<(Instant, Duration)>>>;

/// Pulls one message at a time (at most one per [`SEQUENTIAL_PACE`]) from `consumer` on
/// `client` until `stop` is set, acking each
/// (plain ack), recording the receive times and latencies in `log`.
async fn pull_one_at_a_time(
    client: async_nats::Client,
    consumer: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    log: Received,
) -> Result<()> {
    use std::sync::atomic::Ordering;
    let inbox = client.new_inbox();
    let mut deliveries = client.subscribe(inbox.clone()).await?;
    client.flush().await?;
    let next = format!("$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{consumer}");
    let request = pull_request(1, SEQUENTIAL_EXPIRES);
    // Paced, so the preloaded stream lasts the whole window on either server.
    let mut pace = tokio::time::interval(SEQUENTIAL_PACE);
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        pace.tick().await;
        let first = Instant::now();
        'message: loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            client
                .publish_with_reply(next.clone(), inbox.clone(), request.clone())
                .await?;
            client.flush().await?;
            loop {
                match tokio::time::timeout(SEQUENTIAL_QUIET, deliveries.next()).await {
                    Err(_) => continue 'message,
                    Ok(None) => bail!("inbox subscription closed"),
                    Ok(Some(message)) if message.status.is_some() => {
                        if message.status.map(u16::from) == Some(100) {
                            continue;
                        }
                        continue 'message;
                    }
                    Ok(Some(message)) => {
                        let now = Instant::now();
                        if let Some(reply) = message.reply {
                            client
                                .publish(reply, bytes::Bytes::from_static(b"+ACK"))
                                .await?;
                        }
                        if let Ok(mut log) = log.lock() {
                            log.push((now, now - first));
                        }
                        break 'message;
                    }
                }
            }
        }
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index].as_secs_f64() * 1e6
}

/// Pull latency (us) p50, p99 and max over a window in which the consumer leader steps down,
/// then the stream leader, then the consumer leader again (2 s apart), and how many of the
/// three stepdown requests succeeded.
pub struct Stepdowns {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub pulls: usize,
    pub succeeded: usize,
    /// The longest a stepdown request took to be answered (or to time out, 10 s).
    pub slowest_answer: Duration,
}

pub async fn latency_during_stepdowns(cluster: &Cluster) -> Result<Stepdowns> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let name = "LAT";
    let admin = cluster.connect(0).await?;
    jsapi::create_consumer(&admin, STREAM, name).await?;
    let leader = jsapi::consumer_leader(cluster, &admin, STREAM, name).await?;
    let client = cluster.connect((leader + 1) % NODES).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let log: Received = Arc::default();
    let puller = tokio::spawn(pull_one_at_a_time(
        client,
        name.to_string(),
        stop.clone(),
        log.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut succeeded = 0;
    let stepdowns = [
        format!("CONSUMER.LEADER.STEPDOWN.{STREAM}.{name}"),
        format!("STREAM.LEADER.STEPDOWN.{STREAM}"),
        format!("CONSUMER.LEADER.STEPDOWN.{STREAM}.{name}"),
    ];
    let mut slowest = Duration::ZERO;
    for subject in &stepdowns {
        let asked = Instant::now();
        match jsapi::api_ok(&admin, subject, json!({})).await {
            Ok(_) => succeeded += 1,
            Err(error) => eprintln!("  {}: {subject}: {error:#}", cluster.label),
        }
        slowest = slowest.max(asked.elapsed());
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    stop.store(true, Ordering::Relaxed);
    puller.await??;
    let mut latencies: Vec<Duration> = log
        .lock()
        .map(|log| log.iter().map(|&(_, latency)| latency).collect())
        .unwrap_or_default();
    latencies.sort();
    Ok(Stepdowns {
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        max: percentile(&latencies, 1.0),
        pulls: latencies.len(),
        succeeded,
        slowest_answer: slowest,
    })
}

/// Time from the kill -9 of consumer `LAT`'s leader until a puller on a surviving node,
/// pulling from right after the kill, receives a message. (Not a puller running across the
/// kill: deliveries already on their way when the leader died would show as an instant resume.)
/// The killed node is restarted afterwards.
pub async fn resume_after_kill(cluster: &mut Cluster) -> Result<Duration> {
    use std::sync::atomic::{AtomicBool, Ordering};
    const RESUME_TIMEOUT: Duration = Duration::from_secs(60);
    let name = "LAT";
    let leader = {
        let admin = cluster.connect(0).await?;
        jsapi::consumer_leader(cluster, &admin, STREAM, name).await?
    };
    let survivor = (leader + 1) % NODES;
    let client = cluster.connect(survivor).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let log: Received = Arc::default();
    let killed = Instant::now();
    cluster.kill(leader);
    let puller = tokio::spawn(pull_one_at_a_time(
        client,
        name.to_string(),
        stop.clone(),
        log.clone(),
    ));
    let deadline = killed + RESUME_TIMEOUT;
    let resumed = loop {
        let first = log
            .lock()
            .ok()
            .and_then(|log| log.first().map(|&(at, _)| at));
        if let Some(at) = first {
            break Some(at - killed);
        }
        if Instant::now() > deadline || puller.is_finished() {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    stop.store(true, Ordering::Relaxed);
    puller.await??;
    cluster.spawn(leader)?;
    cluster.wait_listening(leader).await?;
    resumed.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: no message within {RESUME_TIMEOUT:?} of the leader's kill",
            cluster.label
        )
    })
}

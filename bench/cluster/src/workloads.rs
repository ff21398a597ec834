//! The workloads, each run against a started [`Cluster`] and bounded in time: cross-node
//! pub->sub, fan-out to a subscriber on every node, cross-node request/reply latency, and many
//! subscriptions spread over the nodes (RSS and time until visible on the peers). These use
//! async-nats (`--client async-nats`); raw.rs has the cheap client of the same workloads.

use crate::cluster::{Cluster, NODES};
use anyhow::{bail, Result};
use bytes::Bytes;
use futures::StreamExt;
use std::time::{Duration, Instant};

pub const PAYLOAD: usize = 128;
/// How long the publisher of a throughput workload publishes.
pub const PUBLISH_WINDOW: Duration = Duration::from_secs(3);
/// A subscriber that saw nothing for this long after the publisher stopped is done.
pub const IDLE: Duration = Duration::from_secs(1);
const WARM_TIMEOUT: Duration = Duration::from_secs(10);

/// Delivered messages per second, the share of the published messages delivered, and the
/// CPU time the three servers spent per delivery (steadier than the rates on a shared machine).
pub struct Throughput {
    pub rate: f64,
    pub delivered: f64,
    pub cpu_per_delivery: f64,
    /// CPU time the bench process (the clients) spent per delivery.
    pub client_cpu_per_delivery: f64,
}

/// The CPU clocks of a throughput run: the servers' and this process's.
pub struct Meter {
    started: Instant,
    servers: f64,
    clients: f64,
}

impl Meter {
    pub fn start(cluster: &Cluster) -> Meter {
        Meter {
            servers: cluster.cpu_seconds(),
            clients: process_cpu_seconds(),
            started: Instant::now(),
        }
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// `delivered` of `expected` deliveries, the last at `last`.
    pub fn finish(
        &self,
        cluster: &Cluster,
        delivered: u64,
        expected: u64,
        last: Instant,
    ) -> Throughput {
        let per_delivery = |seconds: f64| seconds / (delivered.max(1) as f64);
        let seconds = last.duration_since(self.started).as_secs_f64().max(1e-9);
        Throughput {
            rate: delivered as f64 / seconds,
            delivered: delivered as f64 / (expected.max(1) as f64),
            cpu_per_delivery: per_delivery(cluster.cpu_seconds() - self.servers),
            client_cpu_per_delivery: per_delivery(process_cpu_seconds() - self.clients),
        }
    }
}

/// CPU time (user + system) this process spent so far, in seconds.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Publishes probes (1-byte payloads) on `subject` until every subscriber has seen one.
async fn warm(
    publisher: &async_nats::Client,
    subject: &str,
    subscribers: &mut [async_nats::Subscriber],
) -> Result<()> {
    let deadline = Instant::now() + WARM_TIMEOUT;
    for subscriber in subscribers.iter_mut() {
        loop {
            publisher
                .publish(subject.to_string(), Bytes::from_static(b"p"))
                .await?;
            publisher.flush().await?;
            if let Ok(Some(_)) =
                tokio::time::timeout(Duration::from_millis(50), subscriber.next()).await
            {
                break;
            }
            if Instant::now() > deadline {
                bail!("interest on {subject} did not reach the publisher's node");
            }
        }
    }
    // Drain the probes still in flight.
    tokio::time::sleep(Duration::from_millis(100)).await;
    for subscriber in subscribers.iter_mut() {
        while let Ok(Some(_)) =
            tokio::time::timeout(Duration::from_millis(1), subscriber.next()).await
        {}
    }
    Ok(())
}

/// One publisher on node 0; a subscriber on each of `subscriber_nodes`. Rate = deliveries
/// (summed over subscribers) per second from the first publish to the last delivery.
pub async fn throughput(cluster: &Cluster, subscriber_nodes: &[usize]) -> Result<Throughput> {
    let subject = "bench.flow";
    let publisher = cluster.connect(0).await?;
    let mut subscriber_clients = Vec::new();
    let mut subscribers = Vec::new();
    for &node in subscriber_nodes {
        let client = cluster.connect(node).await?;
        subscribers.push(client.subscribe(subject).await?);
        client.flush().await?;
        subscriber_clients.push(client);
    }
    warm(&publisher, subject, &mut subscribers).await?;

    let meter = Meter::start(cluster);
    let started = meter.started();
    let counters: Vec<_> = subscribers
        .into_iter()
        .map(|mut subscriber| {
            tokio::spawn(async move {
                let mut count = 0u64;
                let mut last = Instant::now();
                while let Ok(Some(message)) = tokio::time::timeout(
                    PUBLISH_WINDOW + IDLE + Duration::from_secs(1),
                    subscriber.next(),
                )
                .await
                {
                    if message.payload.len() == PAYLOAD {
                        count += 1;
                        last = Instant::now();
                    }
                    if message.payload.as_ref() == b"end" {
                        break;
                    }
                }
                (count, last)
            })
        })
        .collect();
    let payload = Bytes::from(vec![b'x'; PAYLOAD]);
    let mut sent = 0u64;
    while started.elapsed() < PUBLISH_WINDOW {
        for _ in 0..256 {
            publisher.publish(subject, payload.clone()).await?;
        }
        sent += 256;
    }
    publisher.flush().await?;
    // The end marker follows the data on the same route, so it arrives last; it may be lost
    // to a slow-consumer cut like any message, hence the idle bound in the counters.
    publisher
        .publish(subject, Bytes::from_static(b"end"))
        .await?;
    publisher.flush().await?;
    let mut delivered = 0u64;
    let mut last = started;
    for counter in counters {
        let (count, at) = counter.await?;
        delivered += count;
        last = last.max(at);
    }
    let expected = sent * subscriber_nodes.len() as u64;
    Ok(meter.finish(cluster, delivered, expected, last))
}

/// Requester on node 0, responder on node 1; sequential requests for `window`. Returns the
/// p50 and p99 round-trip latency in microseconds.
pub async fn request_reply(cluster: &Cluster, window: Duration) -> Result<(f64, f64)> {
    let requester = cluster.connect(0).await?;
    let responder_client = cluster.connect(1).await?;
    let mut service = responder_client.subscribe("bench.service").await?;
    responder_client.flush().await?;
    let responder = tokio::spawn(async move {
        while let Some(message) = service.next().await {
            if let Some(reply) = message.reply {
                if responder_client
                    .publish(reply, message.payload)
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    });
    let deadline = Instant::now() + WARM_TIMEOUT;
    loop {
        let answer = tokio::time::timeout(
            Duration::from_millis(200),
            requester.request("bench.service", Bytes::from_static(b"warm")),
        )
        .await;
        if let Ok(Ok(_)) = answer {
            break;
        }
        if Instant::now() > deadline {
            responder.abort();
            bail!("the responder on node 1 never answered");
        }
    }
    let payload = Bytes::from(vec![b'r'; PAYLOAD]);
    let mut latencies = Vec::new();
    let started = Instant::now();
    while started.elapsed() < window {
        let sent = Instant::now();
        requester.request("bench.service", payload.clone()).await?;
        latencies.push(sent.elapsed().as_secs_f64() * 1e6);
    }
    responder.abort();
    latencies.sort_by(f64::total_cmp);
    let at = |quantile: f64| latencies[((latencies.len() - 1) as f64 * quantile) as usize];
    Ok((at(0.50), at(0.99)))
}

/// What the subscription workload measured.
pub struct Subscriptions {
    /// From the first SUB sent until a publish on every other node reached the last
    /// subscription of every node.
    pub visible: Duration,
    /// RSS of each node once all subscriptions are visible, in bytes.
    pub rss: Vec<Option<u64>>,
}

/// `total` subscriptions (distinct subjects) spread evenly over the nodes, one client each.
pub async fn subscriptions(cluster: &Cluster, total: usize) -> Result<Subscriptions> {
    let mut clients = Vec::new();
    for node in 0..NODES {
        clients.push(cluster.connect(node).await?);
    }
    let per_node = total / NODES;
    let started = Instant::now();
    let mut kept = Vec::new();
    let mut last_subscribers = Vec::new();
    for (node, client) in clients.iter().enumerate() {
        for index in 0..per_node {
            let subscriber = client
                .subscribe(format!("bench.many.{node}.{index}"))
                .await?;
            if index + 1 == per_node {
                last_subscribers.push(subscriber);
            } else {
                kept.push(subscriber);
            }
        }
    }
    for client in &clients {
        client.flush().await?;
    }
    let deadline = started + Duration::from_secs(60);
    for (node, subscriber) in last_subscribers.iter_mut().enumerate() {
        let subject = format!("bench.many.{node}.{}", per_node - 1);
        for (from, client) in clients.iter().enumerate() {
            if from == node {
                continue;
            }
            let marker = format!("from{from}");
            'probe: loop {
                client
                    .publish(subject.clone(), marker.clone().into())
                    .await?;
                client.flush().await?;
                while let Ok(Some(message)) =
                    tokio::time::timeout(Duration::from_millis(20), subscriber.next()).await
                {
                    if message.payload.as_ref() == marker.as_bytes() {
                        break 'probe;
                    }
                }
                if Instant::now() > deadline {
                    bail!("subscription on node {node} not visible on node {from} within 60 s");
                }
            }
        }
    }
    let visible = started.elapsed();
    let rss = cluster.rss();
    drop(kept);
    Ok(Subscriptions { visible, rss })
}

//! Raw `$JS.API` helpers for the replicated-consumer workloads: JSON requests (answers parsed as
//! `serde_json::Value`, so neither server's extra fields matter), stream and consumer creation,
//! pipelined preloads, leaders and replica state. No async-nats JetStream types on purpose: the
//! bench drives both servers through the same wire requests.

use crate::cluster::Cluster;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const API_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a fresh cluster may take to elect a meta leader and accept the first stream.
const FIRST_STREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// One `$JS.API.<subject>` request; the answer as JSON (an `error` object is returned, not
/// raised: callers decide).
pub async fn api(client: &async_nats::Client, subject: &str, body: Value) -> Result<Value> {
    let request = client.request(format!("$JS.API.{subject}"), body.to_string().into());
    let reply = tokio::time::timeout(API_TIMEOUT, request)
        .await
        .with_context(|| format!("$JS.API.{subject}: no answer in {API_TIMEOUT:?}"))?
        .with_context(|| format!("$JS.API.{subject}"))?;
    serde_json::from_slice(&reply.payload).with_context(|| format!("$JS.API.{subject} answer"))
}

/// The same, failing on an `error` answer.
pub async fn api_ok(client: &async_nats::Client, subject: &str, body: Value) -> Result<Value> {
    let answer = api(client, subject, body).await?;
    if let Some(error) = answer.get("error") {
        bail!("$JS.API.{subject}: {error}");
    }
    Ok(answer)
}

/// Creates an R3 file stream on `subjects`, retrying (bounded) while the fresh cluster has no
/// meta leader yet. `max_consumers` above both servers' default limit per stream (1,000)
/// must be asked for.
pub async fn create_stream(
    client: &async_nats::Client,
    name: &str,
    subject: &str,
    max_consumers: Option<usize>,
) -> Result<()> {
    let deadline = Instant::now() + FIRST_STREAM_TIMEOUT;
    let mut config = json!({"name": name, "subjects": [subject], "num_replicas": 3,
        "storage": "file", "retention": "limits"});
    if let Some(max) = max_consumers {
        config["max_consumers"] = json!(max);
    }
    loop {
        match api_ok(client, &format!("STREAM.CREATE.{name}"), config.clone()).await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() > deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Creates an R3 durable pull consumer with explicit acks.
pub async fn create_consumer(client: &async_nats::Client, stream: &str, name: &str) -> Result<()> {
    let body = json!({"stream_name": stream, "config": {"durable_name": name,
        "ack_policy": "explicit", "num_replicas": 3, "deliver_policy": "all"}});
    api_ok(client, &format!("CONSUMER.CREATE.{stream}.{name}"), body).await?;
    Ok(())
}

/// Publishes `count` messages of `size` bytes to `subject`, windows of `window` publishes in
/// flight, every PubAck awaited; fails on a missing or negative PubAck.
pub async fn preload(
    client: &async_nats::Client,
    subject: &str,
    count: usize,
    size: usize,
) -> Result<()> {
    const WINDOW: usize = 1000;
    let payload = Bytes::from(vec![b'x'; size]);
    if count == 0 {
        return Ok(());
    }
    // The first one alone, again while nobody answers yet: a new leader's subscription may
    // not have reached this node's routes (503 no responders, an empty answer).
    let deadline = Instant::now() + FIRST_STREAM_TIMEOUT;
    loop {
        let answer = client.request(subject.to_string(), payload.clone()).await;
        let stored = answer.ok().and_then(|reply| {
            let answer: Value = serde_json::from_slice(&reply.payload).ok()?;
            answer.get("seq").map(|_| ())
        });
        if stored.is_some() {
            break;
        }
        if Instant::now() > deadline {
            bail!("preload: no PubAck on {subject} within {FIRST_STREAM_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let count = count - 1;
    let inbox = client.new_inbox();
    let mut acks = client.subscribe(format!("{inbox}.*")).await?;
    let mut sent = 0;
    while sent < count {
        let window = WINDOW.min(count - sent);
        for i in 0..window {
            client
                .publish_with_reply(subject.to_string(), format!("{inbox}.{i}"), payload.clone())
                .await?;
        }
        client.flush().await?;
        for _ in 0..window {
            let ack = tokio::time::timeout(API_TIMEOUT, acks.next())
                .await
                .context("preload: PubAck missing")?
                .context("preload: inbox closed")?;
            let answer: Value = serde_json::from_slice(&ack.payload).unwrap_or(Value::Null);
            if answer.get("seq").is_none() {
                bail!(
                    "preload: negative PubAck {:?}",
                    String::from_utf8_lossy(&ack.payload)
                );
            }
        }
        sent += window;
    }
    Ok(())
}

/// The node leading `cluster_info` (a STREAM.INFO or CONSUMER.INFO answer's `cluster`).
fn leader_of(cluster: &Cluster, info: &Value) -> Option<usize> {
    cluster.node_named(info.get("cluster")?.get("leader")?.as_str()?)
}

/// The node leading the asset whose `$JS.API.<info>` (STREAM.INFO or CONSUMER.INFO) answer
/// names it, waiting (bounded) while it has none.
async fn leader(cluster: &Cluster, client: &async_nats::Client, info: &str) -> Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(answer) = api(client, info, json!({})).await {
            if let Some(node) = leader_of(cluster, &answer) {
                return Ok(node);
            }
        }
        if Instant::now() > deadline {
            bail!("{info}: no leader after 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The node leading stream `stream`.
pub async fn stream_leader(
    cluster: &Cluster,
    client: &async_nats::Client,
    stream: &str,
) -> Result<usize> {
    leader(cluster, client, &format!("STREAM.INFO.{stream}")).await
}

/// The node leading consumer `consumer` of `stream`.
pub async fn consumer_leader(
    cluster: &Cluster,
    client: &async_nats::Client,
    stream: &str,
    consumer: &str,
) -> Result<usize> {
    leader(
        cluster,
        client,
        &format!("CONSUMER.INFO.{stream}.{consumer}"),
    )
    .await
}

/// Whether STREAM.INFO, asked now, lists node `node` as a current replica (`current: true`,
/// not offline) or as the leader.
pub async fn replica_current(
    cluster: &Cluster,
    client: &async_nats::Client,
    stream: &str,
    node: usize,
) -> bool {
    let Ok(info) = api(client, &format!("STREAM.INFO.{stream}"), json!({})).await else {
        return false;
    };
    if leader_of(cluster, &info) == Some(node) {
        return true;
    }
    let replicas = info
        .get("cluster")
        .and_then(|c| c.get("replicas"))
        .and_then(Value::as_array);
    replicas.into_iter().flatten().any(|replica| {
        let named = replica
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| cluster.node_named(name));
        named == Some(node)
            && replica.get("current").and_then(Value::as_bool) == Some(true)
            && replica.get("offline").and_then(Value::as_bool) != Some(true)
    })
}

/// The stream's stored bytes (STREAM.INFO `state.bytes`).
pub async fn stream_bytes(client: &async_nats::Client, stream: &str) -> Result<u64> {
    let info = api_ok(client, &format!("STREAM.INFO.{stream}"), json!({})).await?;
    info.get("state")
        .and_then(|s| s.get("bytes"))
        .and_then(Value::as_u64)
        .context("STREAM.INFO without state.bytes")
}

//! Client-side building blocks shared by the workloads: connections with large client buffers,
//! the server round trip ("barrier"), sequence-numbered payloads, and windowed JetStream
//! publishing with every ack checked. Knows nothing about servers' processes or plots.

use anyhow::{anyhow, bail, Context, Result};
use async_nats::jetstream::{self, context::PublishAckFuture};
use async_nats::{Client, ConnectOptions, Subject};
use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use std::collections::VecDeque;
use std::future::IntoFuture;
use std::time::{Duration, Instant};
use tokio::time::timeout;

/// A connection whose subscriptions never drop messages on the client side (async-nats drops
/// when a subscription's channel is full).
pub async fn connect(url: &str) -> Result<Client> {
    ConnectOptions::new()
        .subscription_capacity(4 * 1024 * 1024)
        .client_capacity(8192)
        .connection_timeout(Duration::from_secs(10))
        .request_timeout(Some(Duration::from_secs(20)))
        .connect(url)
        .await
        .with_context(|| format!("connect {url}"))
}

/// One connection attempt that fails fast (for polling a starting server).
pub async fn connect_once(url: &str) -> Result<Client> {
    ConnectOptions::new()
        .connection_timeout(Duration::from_millis(500))
        .request_timeout(Some(Duration::from_secs(5)))
        .connect(url)
        .await
        .with_context(|| format!("connect {url}"))
}

/// Server round trip: publish to a private inbox this connection subscribes to and wait for
/// the echo. The server handles a connection's operations in order, so every earlier PUB/SUB
/// has been processed when it returns (async-nats' flush only writes the buffer out).
pub async fn barrier(client: &Client) -> Result<()> {
    let inbox = Subject::from(client.new_inbox());
    let mut subscription = client.subscribe(inbox.clone()).await?;
    client
        .publish(inbox, Bytes::from_static(b"barrier"))
        .await?;
    client.flush().await?;
    match timeout(Duration::from_secs(20), subscription.next()).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => bail!("barrier: subscription closed"),
        Err(_) => bail!("barrier: the server did not echo within 20 s"),
    }
}

/// Payloads carrying their sequence number in the first 8 bytes (when they have 8).
pub struct PayloadMaker {
    size: usize,
    arena: BytesMut,
    filler: Vec<u8>,
}

impl PayloadMaker {
    pub fn new(size: usize) -> Self {
        PayloadMaker {
            size,
            arena: BytesMut::new(),
            filler: vec![b'x'; size],
        }
    }

    pub fn make(&mut self, sequence: u64) -> Bytes {
        if self.size < 8 {
            return Bytes::copy_from_slice(&self.filler);
        }
        if self.arena.capacity() < self.size {
            self.arena
                .reserve((self.size * 64).clamp(64 * 1024, 4 * 1024 * 1024));
        }
        self.arena.put_u64(sequence);
        self.arena.extend_from_slice(&self.filler[8..]);
        self.arena.split().freeze()
    }
}

pub fn sequence_of(payload: &[u8]) -> Option<u64> {
    let head: [u8; 8] = payload.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(head))
}

pub fn js_context(client: Client, window: usize) -> jetstream::Context {
    jetstream::context::ContextBuilder::new()
        .timeout(Duration::from_secs(20))
        .max_ack_inflight(window.max(1) + 16)
        .backpressure_on_inflight(true)
        .build(client)
}

/// How many messages to publish and when to stop early.
pub struct PublishPlan<'a> {
    pub stream: &'a str,
    pub count: u64,
    pub size: usize,
    pub window: usize,
    /// No new publish is started after this long (the outstanding ones are still awaited).
    pub time_limit: Duration,
    /// Subject of message `i` (0-based).
    pub subject: &'a dyn Fn(u64) -> Subject,
}

pub struct Published {
    pub acked: u64,
    pub elapsed: Duration,
}

/// Publishes with up to `window` acks outstanding. Every ack must name the stream, not be a
/// duplicate, and the sequences must follow each other from the first one.
pub async fn publish_windowed(
    js: &jetstream::Context,
    plan: &PublishPlan<'_>,
) -> Result<Published> {
    let mut payloads = PayloadMaker::new(plan.size);
    let mut pending: VecDeque<PublishAckFuture> = VecDeque::with_capacity(plan.window);
    let mut acked = 0u64;
    let mut expected_sequence: Option<u64> = None;
    let mut settle = |ack: Result<jetstream::publish::PublishAck>| -> Result<()> {
        let ack = ack?;
        if ack.stream != plan.stream || ack.duplicate {
            bail!("bad ack {ack:?} (expected stream {})", plan.stream);
        }
        if let Some(expected) = expected_sequence {
            if ack.sequence != expected {
                bail!(
                    "ack sequence {} where {expected} was expected",
                    ack.sequence
                );
            }
        }
        expected_sequence = Some(ack.sequence + 1);
        acked += 1;
        Ok(())
    };
    async fn wait(future: PublishAckFuture) -> Result<jetstream::publish::PublishAck> {
        timeout(Duration::from_secs(30), future.into_future())
            .await
            .map_err(|_| anyhow!("ack timed out"))?
            .map_err(|error| anyhow!("publish ack: {error}"))
    }
    let started = Instant::now();
    for index in 0..plan.count {
        if started.elapsed() > plan.time_limit {
            break;
        }
        if pending.len() >= plan.window {
            if let Some(future) = pending.pop_front() {
                settle(wait(future).await)?;
            }
        }
        let future = timeout(
            Duration::from_secs(30),
            js.publish((plan.subject)(index), payloads.make(index)),
        )
        .await
        .map_err(|_| anyhow!("publish timed out"))?
        .map_err(|error| anyhow!("publish: {error}"))?;
        pending.push_back(future);
    }
    while let Some(future) = pending.pop_front() {
        settle(wait(future).await)?;
    }
    Ok(Published {
        acked,
        elapsed: started.elapsed(),
    })
}

/// `$JS.API.STREAM.INFO.<stream>` as raw JSON (no client-side parsing of the state).
pub async fn stream_info(client: &Client, stream: &str) -> Result<serde_json::Value> {
    let reply = timeout(
        Duration::from_secs(5),
        client.request(format!("$JS.API.STREAM.INFO.{stream}"), Bytes::new()),
    )
    .await
    .map_err(|_| anyhow!("stream info timed out"))??;
    let value: serde_json::Value = serde_json::from_slice(&reply.payload)?;
    if let Some(error) = value.get("error") {
        bail!("stream info: {error}");
    }
    Ok(value)
}

pub fn stream_messages(info: &serde_json::Value) -> Option<u64> {
    info.get("state")?.get("messages")?.as_u64()
}

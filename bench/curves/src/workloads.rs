//! The measured workloads, each against one server URL: core fan-out to K subscriber
//! connections, JetStream windowed publish of one message size, and a durable pull consumer
//! draining a prefilled stream. Every count is verified; a mismatch is an error, never a rate.
//! Called by the curve runner in main.rs; knows nothing about processes or plots.

use crate::client::{
    barrier, connect, js_context, publish_windowed, sequence_of, stream_info, stream_messages,
    PayloadMaker, PublishPlan,
};
use anyhow::{anyhow, bail, Result};
use async_nats::jetstream::{self, consumer, stream};
use async_nats::Subject;
use futures::StreamExt;
use std::time::{Duration, Instant};
use tokio::time::timeout;

/// No new message for this long inside a run is a failure.
const IDLE: Duration = Duration::from_secs(10);

fn unique_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    format!("{}{}", std::process::id(), nanos % 1_000_000_000)
}

/// One publisher connection, `subscribers` subscriber connections on the same subject; every
/// subscriber must receive every sequence once, in order. Returns the aggregate delivered
/// rate: subscribers x messages / (first publish .. last subscriber done).
pub async fn core_fanout(url: &str, subscribers: usize, messages: u64, size: usize) -> Result<f64> {
    let subject = Subject::from(format!("curves.fan.{}", unique_token()));
    let mut connections = Vec::with_capacity(subscribers);
    let mut receivers = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let client = connect(url).await?;
        let mut subscription = client.subscribe(subject.clone()).await?;
        barrier(&client).await?;
        receivers.push(tokio::spawn(async move {
            let mut next = 0u64;
            while next < messages {
                let message = match timeout(IDLE, subscription.next()).await {
                    Ok(Some(message)) => message,
                    Ok(None) => bail!("subscription closed after {next} of {messages}"),
                    Err(_) => bail!("no message for {IDLE:?} after {next} of {messages}"),
                };
                if message.payload.len() != size || sequence_of(&message.payload) != Some(next) {
                    bail!("message {next}: wrong size or sequence (lost, duplicated or reordered)");
                }
                next += 1;
            }
            Ok(Instant::now())
        }));
        connections.push(client);
    }
    let publisher = connect(url).await?;
    let mut payloads = PayloadMaker::new(size);
    let started = Instant::now();
    for sequence in 0..messages {
        publisher
            .publish(subject.clone(), payloads.make(sequence))
            .await?;
    }
    barrier(&publisher).await?;
    let mut finished = started;
    for receiver in receivers {
        finished = finished.max(receiver.await??);
    }
    let delivered = subscribers as f64 * messages as f64;
    Ok(delivered / finished.duration_since(started).as_secs_f64())
}

async fn create_stream(
    js: &jetstream::Context,
    name: &str,
    subjects: &str,
) -> Result<stream::Stream> {
    let _ = js.delete_stream(name).await;
    js.create_stream(stream::Config {
        name: name.to_string(),
        subjects: vec![subjects.to_string()],
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|error| anyhow!("create stream {name}: {error}"))
}

pub struct PublishRun {
    pub messages_per_second: f64,
    pub megabytes_per_second: f64,
    pub acked: u64,
}

/// Windowed async publish of `count` messages of `size` bytes to a fresh file stream (stopping
/// early after `time_limit`), after a short warm-up and purge. The stream must hold exactly
/// what was acked.
pub async fn js_publish(
    url: &str,
    size: usize,
    count: u64,
    window: usize,
    time_limit: Duration,
) -> Result<PublishRun> {
    let client = connect(url).await?;
    let js = js_context(client.clone(), window);
    let token = unique_token();
    let name = format!("CURVES_PUB_{token}");
    let subject = Subject::from(format!("curves.pub.{token}"));
    let stream = create_stream(&js, &name, &subject).await?;
    let subject_of = |_: u64| subject.clone();
    let warm_up = PublishPlan {
        stream: &name,
        count: 20,
        size,
        window,
        time_limit,
        subject: &subject_of,
    };
    publish_windowed(&js, &warm_up).await?;
    stream
        .purge()
        .await
        .map_err(|error| anyhow!("purge: {error}"))?;
    let plan = PublishPlan { count, ..warm_up };
    let outcome = publish_windowed(&js, &plan).await;
    let result = match outcome {
        Ok(published) => {
            let held = stream_messages(&stream_info(&client, &name).await?);
            if held != Some(published.acked) {
                bail!(
                    "stream holds {held:?} messages, {} were acked",
                    published.acked
                );
            }
            let seconds = published.elapsed.as_secs_f64();
            Ok(PublishRun {
                messages_per_second: published.acked as f64 / seconds,
                megabytes_per_second: published.acked as f64 * size as f64 / seconds / 1e6,
                acked: published.acked,
            })
        }
        Err(error) => Err(error),
    };
    let _ = timeout(Duration::from_secs(30), js.delete_stream(&name)).await;
    result
}

pub const CONSUME_STREAM: &str = "CURVES_CONSUME";

/// Creates the consume stream and fills it with `count` messages spread round-robin over
/// `subjects` distinct subjects. Returns the publish rate of the fill.
pub async fn prefill_subjects(url: &str, subjects: u64, count: u64, size: usize) -> Result<f64> {
    let client = connect(url).await?;
    let js = js_context(client.clone(), 256);
    create_stream(&js, CONSUME_STREAM, "curves.con.>").await?;
    let subject_of = |index: u64| Subject::from(format!("curves.con.{}", index % subjects));
    let plan = PublishPlan {
        stream: CONSUME_STREAM,
        count,
        size,
        window: 256,
        time_limit: Duration::from_secs(3600),
        subject: &subject_of,
    };
    let published = publish_windowed(&js, &plan).await?;
    if published.acked != count {
        bail!("prefill: {} of {count} acked", published.acked);
    }
    let held = stream_messages(&stream_info(&client, CONSUME_STREAM).await?);
    if held != Some(count) {
        bail!("prefill: stream holds {held:?}, expected {count}");
    }
    Ok(count as f64 / published.elapsed.as_secs_f64())
}

pub async fn delete_consume_stream(url: &str) -> Result<()> {
    let js = js_context(connect(url).await?, 16);
    js.delete_stream(CONSUME_STREAM)
        .await
        .map_err(|error| anyhow!("delete stream: {error}"))?;
    Ok(())
}

/// A new durable pull consumer (explicit ack) fetches batches and acks every message; the
/// clock stops when the server reports ack floor = count with nothing pending. Each stream
/// sequence must arrive once, first delivery. The consumer is deleted afterwards.
pub async fn consume(url: &str, count: u64, batch: usize, durable: &str) -> Result<f64> {
    let client = connect(url).await?;
    let js = js_context(client.clone(), 256);
    let stream = js
        .get_stream(CONSUME_STREAM)
        .await
        .map_err(|error| anyhow!("get stream: {error}"))?;
    let consumer: consumer::PullConsumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some(durable.to_string()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: Duration::from_secs(120),
            max_ack_pending: (batch as i64 * 4).max(1000),
            ..Default::default()
        })
        .await
        .map_err(|error| anyhow!("create consumer: {error}"))?;
    let mut seen = vec![false; count as usize];
    let mut received = 0u64;
    let started = Instant::now();
    while received < count {
        let want = (count - received).min(batch as u64) as usize;
        let mut messages = consumer
            .batch()
            .max_messages(want)
            .expires(IDLE)
            .messages()
            .await
            .map_err(|error| anyhow!("pull request: {error}"))?;
        let before = received;
        while let Some(message) = timeout(IDLE * 2, messages.next())
            .await
            .map_err(|_| anyhow!("batch stalled after {received} of {count}"))?
        {
            let message = message.map_err(|error| anyhow!("batch: {error}"))?;
            let info = message.info().map_err(|error| anyhow!("info: {error}"))?;
            let slot = info
                .stream_sequence
                .checked_sub(1)
                .and_then(|index| seen.get_mut(index as usize))
                .ok_or_else(|| anyhow!("stream sequence {} out of range", info.stream_sequence))?;
            if *slot || info.delivered != 1 {
                bail!("redelivery of stream sequence {}", info.stream_sequence);
            }
            *slot = true;
            message
                .ack()
                .await
                .map_err(|error| anyhow!("ack: {error}"))?;
            received += 1;
        }
        if received == before {
            bail!("empty batch after {received} of {count}");
        }
    }
    // acks are fire-and-forget: wait until the server has applied all of them
    let deadline = Instant::now() + IDLE;
    let mut consumer = consumer;
    loop {
        let info = consumer
            .info()
            .await
            .map_err(|error| anyhow!("consumer info: {error}"))?;
        if info.ack_floor.stream_sequence == count && info.num_ack_pending == 0 {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "acks not applied: ack floor {} pending {}",
                info.ack_floor.stream_sequence,
                info.num_ack_pending
            );
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    let elapsed = started.elapsed();
    let _ = stream.delete_consumer(durable).await;
    Ok(count as f64 / elapsed.as_secs_f64())
}

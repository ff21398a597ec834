//! Restart time against store size: fill one stream to a target size, then time from process
//! spawn until `$JS.API.STREAM.INFO` reports every message, after a graceful stop (SIGTERM) and
//! after kill -9 (with freshly acked messages that only the kill interrupted).
//! Called by the curve runner in main.rs; uses server.rs for the process.

use crate::client::{
    connect, connect_once, js_context, publish_windowed, stream_info, stream_messages, PublishPlan,
};
use crate::server::Server;
use anyhow::{anyhow, bail, Result};
use async_nats::jetstream::stream;
use async_nats::Subject;
use bytes::Bytes;
use std::time::{Duration, Instant};

pub const RESTART_STREAM: &str = "CURVES_RESTART";
/// Messages are spread over this many subjects, so per-subject state is part of what a
/// restart must bring back.
const SUBJECTS: u64 = 1000;

fn subject_of(index: u64) -> Subject {
    Subject::from(format!("curves.rst.{}", index % SUBJECTS))
}

/// Appends `count` messages of `size` bytes (creating the stream on first use, starting at
/// message index `first`). Returns the publish rate.
pub async fn append(server: &Server, first: u64, count: u64, size: usize) -> Result<f64> {
    let client = connect(&server.url()).await?;
    let js = js_context(client.clone(), 256);
    if first == 0 {
        js.create_stream(stream::Config {
            name: RESTART_STREAM.to_string(),
            subjects: vec!["curves.rst.>".to_string()],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .map_err(|error| anyhow!("create stream: {error}"))?;
    }
    let subject = |index: u64| subject_of(first + index);
    let window = (32 * 1024 * 1024 / size.max(1)).clamp(8, 256);
    let plan = PublishPlan {
        stream: RESTART_STREAM,
        count,
        size,
        window,
        time_limit: Duration::from_secs(3600),
        subject: &subject,
    };
    let published = publish_windowed(&js, &plan).await?;
    if published.acked != count {
        bail!("{} of {count} acked", published.acked);
    }
    let held = stream_messages(&stream_info(&client, RESTART_STREAM).await?);
    if held != Some(first + count) {
        bail!("stream holds {held:?}, expected {}", first + count);
    }
    Ok(count as f64 / published.elapsed.as_secs_f64())
}

/// Spawns the (stopped) server and polls until STREAM.INFO reports `expected` messages.
/// Returns the time from spawn to that answer.
pub async fn timed_start(server: &mut Server, expected: u64, limit: Duration) -> Result<Duration> {
    let spawned = server.spawn()?;
    let deadline = spawned + limit;
    let mut last_seen: Option<u64> = None;
    loop {
        if server.has_died() {
            bail!("{} exited while recovering", server.spec.label);
        }
        if let Ok(client) = connect_once(&server.url()).await {
            loop {
                match stream_info(&client, RESTART_STREAM).await {
                    Ok(info) => {
                        last_seen = stream_messages(&info);
                        if last_seen == Some(expected) {
                            return Ok(spawned.elapsed());
                        }
                    }
                    Err(_)
                        if client.connection_state()
                            != async_nats::connection::State::Connected =>
                    {
                        break;
                    }
                    Err(_) => {}
                }
                if Instant::now() > deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        if Instant::now() > deadline {
            bail!("no full STREAM.INFO within {limit:?} (last messages count seen: {last_seen:?}, expected {expected})");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Publishes one message with a new `Nats-Msg-Id` (as the stream's message `index`, so its
/// sequence must be `index + 1`) and returns the time until its PubAck. Right after a restart
/// this is where a server that rebuilds its duplicate window lazily (nats-server's
/// `rebuildDedupe`, and rnats) reads back the messages of the last `duplicate_window`.
pub async fn first_deduplicated_publish(
    server: &Server,
    index: u64,
    size: usize,
) -> Result<Duration> {
    let client = connect(&server.url()).await?;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", format!("curves-restart-{index}").as_str());
    let payload = Bytes::from(vec![b'r'; size]);
    let started = Instant::now();
    let reply = client
        .request_with_headers(subject_of(index), headers, payload)
        .await
        .map_err(|error| anyhow!("publish with Nats-Msg-Id: {error}"))?;
    let took = started.elapsed();
    let ack: serde_json::Value = serde_json::from_slice(&reply.payload)?;
    let duplicate = ack.get("duplicate").and_then(|value| value.as_bool()) == Some(true);
    if ack.get("error").is_some()
        || duplicate
        || ack.get("seq").and_then(|seq| seq.as_u64()) != Some(index + 1)
    {
        bail!("unexpected PubAck {ack} (expected seq {})", index + 1);
    }
    Ok(took)
}

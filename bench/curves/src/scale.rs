//! The scale workloads of issue 21, each against one server URL:
//! - connections: N raw client connections with 10 subscriptions each (one shared fan-out
//!   subject, nine of their own), then one publisher's messages to the shared subject, counted
//!   exactly on every connection (raw sockets: 20,000 async-nats clients would cost the bench
//!   more than the servers);
//! - streams: K file streams created, then a publish spread over all of them and STREAM.INFO
//!   requests over all of them.
//!
//! Every count is verified; a mismatch is an error, never a rate. Called by the curve runner
//! in main.rs; the server's RSS is read there (server.rs).

use crate::client::{connect, js_context, PayloadMaker};
use anyhow::{anyhow, bail, Context, Result};
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::Subject;
use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use std::collections::VecDeque;
use std::future::IntoFuture;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::timeout;

/// No new frame for this long inside a run is a failure.
const IDLE: Duration = Duration::from_secs(20);
/// Connections set up at once.
const CONNECTING: usize = 256;
/// Loopback source addresses the connections are spread over: past ~14,000 connections from
/// one address to one port, the kernel's ephemeral-port search costs more than either server
/// (bench/README.md, "Connection storms").
const SOURCES: u8 = 8;
/// The subject every connection subscribes to (sid 1); its nine others are its own.
const FAN_SUBJECT: &str = "curves.conns.fan";

/// How many connections this process can hold: the open-file soft limit raised to the hard
/// one (the servers inherit it), less a margin for the processes' other descriptors.
pub fn connection_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1000;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    (limit.rlim_cur as usize).saturating_sub(64)
}

fn address_of(url: &str) -> Result<SocketAddr> {
    url.trim_start_matches("nats://")
        .parse()
        .with_context(|| format!("address of {url}"))
}

/// One server frame, as far as these clients care.
#[derive(Debug, PartialEq)]
enum Frame {
    Msg,
    Ping,
    Pong,
    Other,
}

/// A raw connection: the socket and what was read but not yet parsed.
struct Raw {
    stream: TcpStream,
    buffer: BytesMut,
}

impl Raw {
    async fn open(server: SocketAddr, source: u8, buffer: usize) -> Result<Raw> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(Ipv4Addr::new(127, 0, 0, source).into(), 0))?;
        let stream = timeout(IDLE, socket.connect(server))
            .await
            .map_err(|_| anyhow!("connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Raw {
            stream,
            buffer: BytesMut::with_capacity(buffer),
        })
    }

    /// The next whole frame, reading as needed; `-ERR` is an error.
    async fn frame(&mut self) -> Result<Frame> {
        loop {
            if let Some(frame) = parse(&mut self.buffer)? {
                return Ok(frame);
            }
            if self.buffer.capacity() - self.buffer.len() < 512 {
                self.buffer.reserve(4096);
            }
            let read = timeout(IDLE, self.stream.read_buf(&mut self.buffer))
                .await
                .map_err(|_| anyhow!("no frame for {IDLE:?}"))??;
            if read == 0 {
                bail!("connection closed by the server");
            }
        }
    }

    /// Reads until PONG, answering PINGs; a MSG before it is an error.
    async fn until_pong(&mut self) -> Result<()> {
        loop {
            match self.frame().await? {
                Frame::Pong => return Ok(()),
                Frame::Ping => self.stream.write_all(b"PONG\r\n").await?,
                Frame::Msg => bail!("a message where none was due (a duplicate delivery)"),
                Frame::Other => {}
            }
        }
    }
}

/// Parses one frame off the front of `buffer`, or None when it is not whole yet.
fn parse(buffer: &mut BytesMut) -> Result<Option<Frame>> {
    let Some(end) = buffer.windows(2).position(|pair| pair == b"\r\n") else {
        return Ok(None);
    };
    let line = &buffer[..end];
    if line.starts_with(b"MSG ") {
        let size: usize = line
            .rsplit(|&byte| byte == b' ')
            .next()
            .and_then(|field| std::str::from_utf8(field).ok())
            .and_then(|field| field.parse().ok())
            .ok_or_else(|| anyhow!("bad MSG line {:?}", String::from_utf8_lossy(line)))?;
        let whole = end + 2 + size + 2;
        if buffer.len() < whole {
            return Ok(None);
        }
        buffer.advance(whole);
        return Ok(Some(Frame::Msg));
    }
    let frame = match line {
        b"PING" => Frame::Ping,
        b"PONG" => Frame::Pong,
        _ if line.starts_with(b"-ERR") => {
            bail!("server: {}", String::from_utf8_lossy(line))
        }
        _ => Frame::Other,
    };
    buffer.advance(end + 2);
    Ok(Some(frame))
}

/// Opens connection `index`: CONNECT, its ten subscriptions, and the PONG that says the
/// server has them.
async fn subscriber(server: SocketAddr, index: usize, buffer: usize) -> Result<Raw> {
    let mut raw = Raw::open(server, 1 + (index % SOURCES as usize) as u8, buffer).await?;
    let mut hello = String::from(
        "CONNECT {\"verbose\":false,\"pedantic\":false,\"echo\":false,\"lang\":\"raw\"}\r\n",
    );
    hello.push_str(&format!("SUB {FAN_SUBJECT} 1\r\n"));
    for own in 2..=10 {
        hello.push_str(&format!("SUB curves.conns.{index}.{own} {own}\r\n"));
    }
    hello.push_str("PING\r\n");
    raw.stream.write_all(hello.as_bytes()).await?;
    raw.until_pong().await?;
    Ok(raw)
}

/// N connections, subscribed and confirmed. Returned separately from the fan-out so the
/// caller can read the server's RSS with all of them in place.
pub struct Connected {
    server: SocketAddr,
    connections: Vec<Raw>,
}

pub async fn connect_subscribers(url: &str, count: usize) -> Result<Connected> {
    let server = address_of(url)?;
    // A large fan-out keeps small client buffers (20,000 x 64 KiB would be 1.3 GB).
    let buffer = if count > 1000 { 4096 } else { 64 * 1024 };
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let mut opening = futures::stream::FuturesOrdered::new();
    for index in 0..count {
        let gate = gate.clone();
        opening.push_back(async move {
            let _permit = gate.acquire().await;
            subscriber(server, index, buffer)
                .await
                .with_context(|| format!("connection {index}"))
        });
    }
    let mut connections = Vec::with_capacity(count);
    while let Some(connection) = opening.next().await {
        connections.push(connection?);
    }
    Ok(Connected {
        server,
        connections,
    })
}

/// One publisher sends `messages` x `size` bytes to the shared subject; every connection must
/// get each exactly once (counted, then a PING whose PONG must come before any further
/// message). Returns deliveries per second: connections x messages / (first publish .. the
/// last connection has all).
pub async fn fan_out(connected: Connected, messages: u64, size: usize) -> Result<f64> {
    let Connected {
        server,
        connections,
    } = connected;
    let count = connections.len();
    let mut receivers = Vec::with_capacity(count);
    for (index, mut raw) in connections.into_iter().enumerate() {
        receivers.push(tokio::spawn(async move {
            let mut got = 0u64;
            while got < messages {
                match raw.frame().await? {
                    Frame::Msg => got += 1,
                    Frame::Ping => raw.stream.write_all(b"PONG\r\n").await?,
                    Frame::Pong | Frame::Other => {}
                }
            }
            let done = Instant::now();
            raw.stream.write_all(b"PING\r\n").await?;
            raw.until_pong()
                .await
                .with_context(|| format!("connection {index} after {messages}"))?;
            anyhow::Ok(done)
        }));
    }
    let mut publisher = Raw::open(server, 1, 4096).await?;
    publisher
        .stream
        .write_all(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"lang\":\"raw\"}\r\n")
        .await?;
    let mut frame = format!("PUB {FAN_SUBJECT} {size}\r\n").into_bytes();
    frame.extend(std::iter::repeat_n(b'x', size));
    frame.extend_from_slice(b"\r\n");
    let per_write = (64 * 1024 / frame.len()).max(1) as u64;
    let mut batch = Vec::with_capacity(frame.len() * per_write as usize);
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < messages {
        batch.clear();
        let now = per_write.min(messages - sent);
        for _ in 0..now {
            batch.extend_from_slice(&frame);
        }
        publisher.stream.write_all(&batch).await?;
        sent += now;
    }
    publisher.stream.write_all(b"PING\r\n").await?;
    publisher.until_pong().await.context("publisher")?;
    let mut finished = started;
    for receiver in receivers {
        finished = finished.max(receiver.await??);
    }
    Ok(count as f64 * messages as f64 / finished.duration_since(started).as_secs_f64())
}

/// The streams of one point: `STREAMS_<i>` on subject `curves.streams.<i>`.
fn stream_name(index: usize) -> String {
    format!("CURVES_S{index}")
}

/// Creates `count` file streams, `in_flight` requests at a time; returns creations per second.
pub async fn create_streams(url: &str, count: usize, in_flight: usize) -> Result<f64> {
    let client = connect(url).await?;
    let started = Instant::now();
    let mut answers = futures::stream::iter(0..count)
        .map(|index| {
            let client = client.clone();
            async move {
                let name = stream_name(index);
                let body = serde_json::json!({
                    "name": name,
                    "subjects": [format!("curves.streams.{index}")],
                    "storage": "file",
                });
                let reply = client
                    .request(
                        format!("$JS.API.STREAM.CREATE.{name}"),
                        body.to_string().into(),
                    )
                    .await
                    .map_err(|error| anyhow!("create {name}: {error}"))?;
                let answer: serde_json::Value = serde_json::from_slice(&reply.payload)?;
                if answer.get("error").is_some() || answer["did_create"] != true {
                    bail!("create {name}: {answer}");
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(in_flight.max(1));
    while let Some(answer) = answers.next().await {
        answer?;
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// Publishes `messages` x `size` bytes round-robin over the `count` streams, `window` acks
/// outstanding; every ack must name the stream of its subject. Returns acked messages per
/// second.
pub async fn publish_over_streams(
    url: &str,
    count: usize,
    messages: u64,
    size: usize,
    window: usize,
) -> Result<f64> {
    let js = js_context(connect(url).await?, window);
    let mut payloads = PayloadMaker::new(size);
    let mut pending: VecDeque<(usize, PublishAckFuture)> = VecDeque::with_capacity(window);
    async fn settle(index: usize, future: PublishAckFuture) -> Result<()> {
        let ack = timeout(IDLE, future.into_future())
            .await
            .map_err(|_| anyhow!("ack timed out"))?
            .map_err(|error| anyhow!("publish ack: {error}"))?;
        if ack.stream != stream_name(index) || ack.duplicate {
            bail!("bad ack {ack:?} (expected stream {})", stream_name(index));
        }
        Ok(())
    }
    let started = Instant::now();
    for sequence in 0..messages {
        if pending.len() >= window {
            if let Some((index, future)) = pending.pop_front() {
                settle(index, future).await?;
            }
        }
        let index = sequence as usize % count;
        let subject = Subject::from(format!("curves.streams.{index}"));
        let future = timeout(IDLE, js.publish(subject, payloads.make(sequence)))
            .await
            .map_err(|_| anyhow!("publish timed out"))?
            .map_err(|error| anyhow!("publish: {error}"))?;
        pending.push_back((index, future));
    }
    while let Some((index, future)) = pending.pop_front() {
        settle(index, future).await?;
    }
    Ok(messages as f64 / started.elapsed().as_secs_f64())
}

/// `requests` STREAM.INFO requests round-robin over the `count` streams, `in_flight` at a time;
/// every answer must be an info (no error). Returns answers per second.
pub async fn info_over_streams(
    url: &str,
    count: usize,
    requests: usize,
    in_flight: usize,
) -> Result<f64> {
    let client = connect(url).await?;
    let started = Instant::now();
    let mut answers = futures::stream::iter(0..requests)
        .map(|request| {
            let client = client.clone();
            async move {
                let name = stream_name(request % count);
                let reply = client
                    .request(format!("$JS.API.STREAM.INFO.{name}"), Bytes::new())
                    .await
                    .map_err(|error| anyhow!("info {name}: {error}"))?;
                let text = &reply.payload[..];
                if text.is_empty() || text.windows(8).any(|part| part == b"\"error\":") {
                    bail!("info {name}: {}", String::from_utf8_lossy(text));
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(in_flight.max(1));
    while let Some(answer) = answers.next().await {
        answer?;
    }
    Ok(requests as f64 / started.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_parsed_whole_or_not_at_all() {
        let mut buffer = BytesMut::from(&b"INFO {}\r\nMSG a 1 3\r\nab"[..]);
        assert_eq!(parse(&mut buffer).ok().flatten(), Some(Frame::Other));
        assert_eq!(parse(&mut buffer).ok().flatten(), None);
        buffer.extend_from_slice(b"c\r\nPING\r\nPONG\r\n");
        assert_eq!(parse(&mut buffer).ok().flatten(), Some(Frame::Msg));
        assert_eq!(parse(&mut buffer).ok().flatten(), Some(Frame::Ping));
        assert_eq!(parse(&mut buffer).ok().flatten(), Some(Frame::Pong));
        assert!(buffer.is_empty());
        let mut refused = BytesMut::from(&b"-ERR 'Authorization Violation'\r\n"[..]);
        assert!(parse(&mut refused).is_err());
    }
}

//! A cheap NATS client for the core workloads (`--client raw`, the default): blocking std
//! sockets, one OS thread per connection, no async runtime, the same for both clusters. The
//! publisher writes pre-built batches of 1,000 PUBs with a PING at the end of each and keeps at
//! most [`FENCE`] batches unanswered (the PONGs bound what the publisher's node has not read
//! yet); the subscribers count MSG frames by their header line alone (the payload is skipped by
//! its size), so they count exactly and spend almost nothing per message. With async-nats
//! (`--client async-nats`) the three subscribers' connections in the bench process took more
//! of the two cores than the servers did, and its 64k-message subscription queues dropped.

use crate::cluster::Cluster;
use crate::workloads::{Meter, Throughput, PAYLOAD};
use anyhow::{bail, Context, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PUBs per write of the publisher.
const BATCH: usize = 1000;
/// Batches the publisher may have written whose PING its node has not answered yet.
const FENCE: usize = 4;
const READ_CHUNK: usize = 256 * 1024;
const WARM_TIMEOUT: Duration = Duration::from_secs(10);

/// One TCP connection speaking the NATS client protocol.
pub struct Connection {
    stream: TcpStream,
    /// Read buffer: `data[at..end]` is read and not parsed yet.
    data: Vec<u8>,
    at: usize,
    end: usize,
}

/// A MSG taken apart: its reply subject (if any) and payload.
type Received = (Option<Vec<u8>>, Vec<u8>);

/// One protocol operation the server sent.
enum Op {
    /// A MSG: its reply subject's range in `data` (if any) and its payload's range.
    Msg {
        reply: Option<(usize, usize)>,
        payload: (usize, usize),
    },
    Ping,
    Pong,
    Other,
}

impl Connection {
    /// Connects to `port` on 127.0.0.1 and sends CONNECT; returns once the server answered a
    /// PING (so it has processed the CONNECT).
    pub fn connect(port: u16) -> Result<Connection> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .with_context(|| format!("connect to 127.0.0.1:{port}"))?;
        stream.set_nodelay(true)?;
        let mut connection = Connection {
            stream,
            data: vec![0; 2 * READ_CHUNK],
            at: 0,
            end: 0,
        };
        connection.set_timeout(Duration::from_secs(20))?;
        connection.send(
            b"CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"headers\":false,\"echo\":true}\r\n",
        )?;
        connection.round_trip()?;
        Ok(connection)
    }

    fn set_timeout(&mut self, timeout: Duration) -> Result<()> {
        self.stream.set_read_timeout(Some(timeout))?;
        Ok(())
    }

    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).context("write")
    }

    /// PING, then wait for the PONG (MSGs before it are dropped).
    pub fn round_trip(&mut self) -> Result<()> {
        self.send(b"PING\r\n")?;
        loop {
            match self.next()? {
                Some(Op::Pong) => return Ok(()),
                Some(Op::Ping) => self.send(b"PONG\r\n")?,
                Some(_) => {}
                None => bail!("no PONG within the read timeout"),
            }
        }
    }

    /// Reads more; `false` when the read timed out.
    fn fill(&mut self) -> Result<bool> {
        if self.at > 0 {
            self.data.copy_within(self.at..self.end, 0);
            self.end -= self.at;
            self.at = 0;
        }
        if self.data.len() - self.end < READ_CHUNK {
            self.data.resize(self.end + 2 * READ_CHUNK, 0);
        }
        match self.stream.read(&mut self.data[self.end..]) {
            Ok(0) => bail!("connection closed"),
            Ok(read) => {
                self.end += read;
                Ok(true)
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Ok(false)
            }
            Err(error) => Err(error).context("read"),
        }
    }

    /// The next operation, reading as needed; `None` when a read timed out.
    fn next(&mut self) -> Result<Option<Op>> {
        loop {
            if let Some(op) = self.parse()? {
                return Ok(Some(op));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// One operation from `data`, if a whole one is there.
    fn parse(&mut self) -> Result<Option<Op>> {
        let rest = &self.data[self.at..self.end];
        let Some(newline) = rest.iter().position(|byte| *byte == b'\n') else {
            return Ok(None);
        };
        let end = newline.saturating_sub(1);
        let line = &rest[..end];
        if line.starts_with(b"MSG ") {
            // MSG <subject> <sid> [reply] <size>: the size is the last field, read from the end.
            let mut size = 0usize;
            let mut scale = 1usize;
            let mut digits = 0;
            for digit in line.iter().rev().take_while(|byte| byte.is_ascii_digit()) {
                size += usize::from(digit - b'0') * scale;
                scale *= 10;
                digits += 1;
            }
            if digits == 0 {
                bail!("MSG line without a size: {}", String::from_utf8_lossy(line));
            }
            let whole = end + 2 + size + 2;
            if rest.len() < whole {
                return Ok(None);
            }
            let fields = line.split(|byte| *byte == b' ').filter(|f| !f.is_empty());
            let reply = if fields.count() == 5 {
                // The reply is the field before the size.
                let before_size = end - digits - 1;
                let start = line[..before_size]
                    .iter()
                    .rposition(|byte| *byte == b' ')
                    .map_or(0, |space| space + 1);
                Some((self.at + start, self.at + before_size))
            } else {
                None
            };
            let payload = (self.at + end + 2, self.at + end + 2 + size);
            self.at += whole;
            return Ok(Some(Op::Msg { reply, payload }));
        }
        let op = match line {
            b"PONG" => Op::Pong,
            b"PING" => Op::Ping,
            _ if line.starts_with(b"-ERR") => bail!("{}", String::from_utf8_lossy(line)),
            _ => Op::Other,
        };
        self.at += newline + 1;
        Ok(Some(op))
    }

    /// Waits (up to the read timeout) for a MSG; its reply subject and payload, or `None` if
    /// none came.
    fn next_msg(&mut self) -> Result<Option<Received>> {
        loop {
            match self.next()? {
                Some(Op::Msg { reply, payload }) => {
                    let reply = reply.map(|(from, to)| self.data[from..to].to_vec());
                    return Ok(Some((reply, self.data[payload.0..payload.1].to_vec())));
                }
                Some(Op::Ping) => self.send(b"PONG\r\n")?,
                Some(_) => {}
                None => return Ok(None),
            }
        }
    }

    /// Counts MSGs of `size` bytes (into `progress` as well) until one whose payload is
    /// `b"end"`, or until nothing came for `idle`, or `deadline`. Returns the count and when
    /// the last counted MSG was read (taken once per read, not per message).
    fn count(
        &mut self,
        size: usize,
        progress: &AtomicU64,
        idle: Duration,
        deadline: Instant,
    ) -> Result<(u64, Instant)> {
        self.set_timeout(idle)?;
        let mut count = 0u64;
        let mut last = Instant::now();
        loop {
            let before = count;
            let mut ended = false;
            while let Some(op) = self.parse()? {
                match op {
                    Op::Msg { payload, .. } => {
                        let length = payload.1 - payload.0;
                        if length == size {
                            count += 1;
                        } else if &self.data[payload.0..payload.1] == b"end" {
                            ended = true;
                            break;
                        }
                    }
                    Op::Ping => self.send(b"PONG\r\n")?,
                    _ => {}
                }
            }
            if count != before {
                last = Instant::now();
                progress.store(count, Ordering::Relaxed);
            }
            if ended || Instant::now() > deadline || !self.fill()? {
                return Ok((count, last));
            }
        }
    }
}

/// Publishes 1-byte probes on `subject` until every subscriber has seen one.
fn warm(publisher: &mut Connection, subject: &str, subscribers: &mut [Connection]) -> Result<()> {
    let deadline = Instant::now() + WARM_TIMEOUT;
    let probe = format!("PUB {subject} 1\r\np\r\n");
    for subscriber in subscribers.iter_mut() {
        subscriber.set_timeout(Duration::from_millis(50))?;
        loop {
            publisher.send(probe.as_bytes())?;
            publisher.round_trip()?;
            if subscriber.next_msg()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                bail!("interest on {subject} did not reach the publisher's node");
            }
        }
    }
    Ok(())
}

/// One publisher on node 0 and a subscriber on each of `subscriber_nodes`, all raw clients;
/// the publisher publishes 128 B messages for `window`. With `ahead` > 0 the publisher also
/// waits while the slowest subscriber is more than `ahead` messages behind (so no buffer on the
/// way can grow without bound). Rate = deliveries (summed) per second from the first publish to
/// the last delivery; the count is exact (MSG frames of the payload's size).
pub fn throughput(
    cluster: &Cluster,
    subscriber_nodes: &[usize],
    window: Duration,
    idle: Duration,
    ahead: u64,
) -> Result<Throughput> {
    let subject = "bench.flow";
    let mut publisher = Connection::connect(cluster.client_port(0))?;
    let mut subscribers = Vec::new();
    for &node in subscriber_nodes {
        let mut subscriber = Connection::connect(cluster.client_port(node))?;
        subscriber.send(format!("SUB {subject} 1\r\n").as_bytes())?;
        subscriber.round_trip()?;
        subscribers.push(subscriber);
    }
    warm(&mut publisher, subject, &mut subscribers)?;

    let mut batch = Vec::with_capacity(BATCH * (PAYLOAD + 32) + 8);
    for _ in 0..BATCH {
        batch.extend_from_slice(format!("PUB {subject} {PAYLOAD}\r\n").as_bytes());
        batch.extend(std::iter::repeat_n(b'x', PAYLOAD));
        batch.extend_from_slice(b"\r\n");
    }
    batch.extend_from_slice(b"PING\r\n");

    let progress: Vec<Arc<AtomicU64>> = subscribers
        .iter()
        .map(|_| Arc::new(AtomicU64::new(0)))
        .collect();
    let meter = Meter::start(cluster);
    let started = meter.started();
    let deadline = started + window + idle + Duration::from_secs(5);
    let counters: Vec<_> = subscribers
        .into_iter()
        .zip(progress.iter().cloned())
        .map(|(mut subscriber, progress)| {
            std::thread::spawn(move || subscriber.count(PAYLOAD, &progress, idle, deadline))
        })
        .collect();

    let mut sent = 0u64;
    let mut unanswered = 0usize;
    let mut stalled = false;
    while started.elapsed() < window && !stalled {
        if ahead > 0 {
            let waiting = Instant::now();
            while sent.saturating_sub(slowest(&progress)) > ahead {
                if waiting.elapsed() > idle {
                    // A subscriber stopped making progress (messages lost on the way):
                    // stop publishing; the delivered share says how many.
                    stalled = true;
                    break;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            if stalled {
                break;
            }
        }
        publisher.send(&batch)?;
        sent += BATCH as u64;
        unanswered += 1;
        while unanswered > FENCE {
            match publisher.next()? {
                Some(Op::Pong) => unanswered -= 1,
                Some(Op::Ping) => publisher.send(b"PONG\r\n")?,
                Some(_) => {}
                None => bail!("the publisher's node answered no PING within the read timeout"),
            }
        }
    }
    while unanswered > 0 {
        match publisher.next()? {
            Some(Op::Pong) => unanswered -= 1,
            Some(Op::Ping) => publisher.send(b"PONG\r\n")?,
            Some(_) => {}
            None => bail!("the publisher's node answered no PING within the read timeout"),
        }
    }
    // The end marker follows the data on the same route, so it arrives last; it may be lost
    // to a slow-consumer cut like any message, hence the idle bound in the counters.
    publisher.send(format!("PUB {subject} 3\r\nend\r\n").as_bytes())?;
    publisher.round_trip()?;
    let mut delivered = 0u64;
    let mut last = started;
    for counter in counters {
        let (count, at) = counter
            .join()
            .map_err(|_| anyhow::anyhow!("subscriber thread panicked"))??;
        delivered += count;
        last = last.max(at);
    }
    let expected = sent * subscriber_nodes.len() as u64;
    Ok(meter.finish(cluster, delivered, expected, last))
}

fn slowest(progress: &[Arc<AtomicU64>]) -> u64 {
    progress
        .iter()
        .map(|count| count.load(Ordering::Relaxed))
        .min()
        .unwrap_or(0)
}

/// Requester on node 0, responder on node 1, both raw clients; sequential requests (128 B)
/// for `window`. Returns the p50 and p99 round trip in microseconds.
pub fn request_reply(cluster: &Cluster, window: Duration) -> Result<(f64, f64)> {
    let mut responder = Connection::connect(cluster.client_port(1))?;
    responder.send(b"SUB bench.service 1\r\n")?;
    responder.round_trip()?;
    let answering = std::thread::spawn(move || -> Result<()> {
        loop {
            let Some((reply, payload)) = responder.next_msg()? else {
                bail!("no request within the read timeout");
            };
            let Some(reply) = reply else { continue };
            let mut answer = b"PUB ".to_vec();
            answer.extend_from_slice(&reply);
            answer.extend_from_slice(format!(" {}\r\n", payload.len()).as_bytes());
            answer.extend_from_slice(&payload);
            answer.extend_from_slice(b"\r\n");
            responder.send(&answer)?;
            if payload == b"stop" {
                return Ok(());
            }
        }
    });
    let mut requester = Connection::connect(cluster.client_port(0))?;
    requester.send(b"SUB _INBOX.bench 1\r\n")?;
    requester.round_trip()?;
    requester.set_timeout(Duration::from_millis(200))?;
    let deadline = Instant::now() + WARM_TIMEOUT;
    loop {
        requester.send(b"PUB bench.service _INBOX.bench 4\r\nwarm\r\n")?;
        if requester.next_msg()?.is_some() {
            break;
        }
        if Instant::now() > deadline {
            bail!("the responder on node 1 never answered");
        }
    }
    requester.set_timeout(Duration::from_secs(5))?;
    let mut request = format!("PUB bench.service _INBOX.bench {PAYLOAD}\r\n").into_bytes();
    request.extend(std::iter::repeat_n(b'r', PAYLOAD));
    request.extend_from_slice(b"\r\n");
    let mut latencies = Vec::new();
    // When each request slower than 1 ms started (from `started`), for the tail's pattern.
    let mut slow = Vec::new();
    let started = Instant::now();
    while started.elapsed() < window {
        let sent = Instant::now();
        requester.send(&request)?;
        // Late answers to the warm-up requests (4 bytes) are skipped.
        loop {
            match requester.next_msg()? {
                Some((_, payload)) if payload.len() == PAYLOAD => break,
                Some(_) => {}
                None => bail!("no answer within 5 s"),
            }
        }
        let micros = sent.elapsed().as_secs_f64() * 1e6;
        if micros > 1000.0 {
            slow.push(sent.duration_since(started).as_secs_f64() * 1e3);
        }
        latencies.push(micros);
    }
    requester.send(b"PUB bench.service _INBOX.bench 4\r\nstop\r\n")?;
    loop {
        match requester.next_msg()? {
            Some((_, payload)) if payload == b"stop" => break,
            Some(_) => {}
            None => bail!("no answer to the stop request within 5 s"),
        }
    }
    answering
        .join()
        .map_err(|_| anyhow::anyhow!("responder thread panicked"))??;
    if latencies.is_empty() {
        bail!("no request completed");
    }
    let mut gaps: Vec<f64> = slow.windows(2).map(|pair| pair[1] - pair[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let total = latencies.len();
    latencies.sort_by(f64::total_cmp);
    let at = |quantile: f64| latencies[((latencies.len() - 1) as f64 * quantile) as usize];
    eprintln!(
        "  {}: {total} requests, {} over 1 ms (median gap between them {:.1} ms), p90 {:.0} us, p99.9 {:.0} us, max {:.0} us",
        cluster.label,
        slow.len(),
        gaps.get(gaps.len() / 2).copied().unwrap_or(0.0),
        at(0.90),
        at(0.999),
        at(1.0),
    );
    Ok((at(0.50), at(0.99)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a peer that writes `bytes`, then reads (our PONGs) until we close.
    fn fed(bytes: &[u8]) -> Connection {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (mut other, _) = listener.accept().expect("accept");
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            other.write_all(&bytes).expect("write");
            let mut sink = Vec::new();
            let _ = other.read_to_end(&mut sink);
        });
        Connection {
            stream,
            data: Vec::new(),
            at: 0,
            end: 0,
        }
    }

    #[test]
    fn counts_exactly_across_reads_and_skips_other_sizes() {
        let mut bytes = Vec::new();
        for index in 0..10_000 {
            if index % 7 == 0 {
                bytes.extend_from_slice(b"MSG s 1 1\r\np\r\nPING\r\n");
            }
            bytes.extend_from_slice(format!("MSG bench.flow 1 {PAYLOAD}\r\n").as_bytes());
            bytes.extend(std::iter::repeat_n(b'\n', PAYLOAD));
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"MSG s 1 _INBOX.x 3\r\nend\r\n");
        let mut connection = fed(&bytes);
        let progress = AtomicU64::new(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let (count, _) = connection
            .count(PAYLOAD, &progress, Duration::from_secs(5), deadline)
            .expect("count");
        assert_eq!(count, 10_000);
        assert_eq!(progress.load(Ordering::Relaxed), 10_000);
    }

    #[test]
    fn reads_the_reply_subject_and_payload() {
        let mut connection =
            fed(b"MSG bench.service 1 _INBOX.bench 4\r\nwarm\r\nMSG a 2 3\r\nxyz\r\n");
        let (reply, payload) = connection.next_msg().expect("msg").expect("some");
        assert_eq!(reply.as_deref(), Some(&b"_INBOX.bench"[..]));
        assert_eq!(payload, b"warm");
        let (reply, payload) = connection.next_msg().expect("msg").expect("some");
        assert_eq!(reply, None);
        assert_eq!(payload, b"xyz");
    }
}

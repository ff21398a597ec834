//! A cheap websocket NATS client for the bench (`--client raw`): blocking std sockets, one OS
//! thread per connection, no async runtime. The publisher sends pre-built binary frames of
//! 1,000 PUBs each, masked once with a random key (RFC 6455 requires client frames masked; the
//! servers unmask every byte whatever the key), so it spends almost nothing per message; the
//! subscriber strips the frame headers and walks the MSG lines. The figure then measures the
//! servers, not the client (the async-nats client took about two thirds of the CPU).

use anyhow::{bail, Context, Result};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

static PLAIN_TCP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--transport tcp`: the same client and pattern over the servers' plain TCP port (no
/// upgrade, no frames, no masking), to tell websocket costs from the core path's.
pub fn use_plain_tcp() {
    PLAIN_TCP.store(true, std::sync::atomic::Ordering::Relaxed);
}

pub fn plain_tcp() -> bool {
    PLAIN_TCP.load(std::sync::atomic::Ordering::Relaxed)
}

/// PUBs per frame the publisher sends.
const BATCH: usize = 1000;

/// One websocket connection speaking the NATS client protocol.
pub struct Connection {
    stream: TcpStream,
    mask: [u8; 4],
    /// Bytes read from the socket, frames not yet taken apart.
    raw: Vec<u8>,
    /// The NATS protocol bytes the frames carried, not yet parsed.
    data: Vec<u8>,
    /// Where parsing resumes in `data`.
    at: usize,
    /// Whether MSGs are taken apart (reply, payload) or only counted.
    keep: bool,
    /// Plain TCP (`--transport tcp`): bytes go as they are.
    tcp: bool,
}

/// A MSG the subscriber received: its reply subject (if any) and payload.
pub struct Msg {
    pub reply: Option<String>,
    pub payload: Vec<u8>,
}

fn mask_key() -> [u8; 4] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0x9e37_79b9);
    let mixed = nanos.wrapping_mul(0x9e37_79b9) | 1;
    mixed.to_le_bytes()
}

impl Connection {
    /// Upgrades a TCP connection to `port` and sends CONNECT; returns once the server answered
    /// a PING (so it has processed the CONNECT).
    pub fn connect(port: u16) -> Result<Connection> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        let tcp = plain_tcp();
        if !tcp {
            write!(
                stream,
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            )?;
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if stream.read(&mut byte)? == 0 {
                    bail!("closed during the upgrade");
                }
                head.push(byte[0]);
            }
            if !head.starts_with(b"HTTP/1.1 101") {
                bail!("upgrade refused: {}", String::from_utf8_lossy(&head));
            }
        }
        let mut connection = Connection {
            stream,
            mask: mask_key(),
            tcp,
            raw: Vec::with_capacity(1 << 20),
            data: Vec::with_capacity(1 << 20),
            at: 0,
            keep: true,
        };
        connection.send(
            b"CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"headers\":false}\r\n",
        )?;
        connection.round_trip()?;
        Ok(connection)
    }

    /// `payload` as one masked binary frame (as it is over plain TCP).
    pub fn frame(&self, payload: &[u8]) -> Vec<u8> {
        if self.tcp {
            return payload.to_vec();
        }
        let mut frame = Vec::with_capacity(payload.len() + 14);
        frame.push(0x82);
        match payload.len() {
            length @ 0..=125 => frame.push(0x80 | length as u8),
            length @ 126..=65_535 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(length as u16).to_be_bytes());
            }
            length => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(length as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&self.mask);
        frame.extend(
            payload
                .iter()
                .enumerate()
                .map(|(index, byte)| byte ^ self.mask[index % 4]),
        );
        frame
    }

    pub fn send(&mut self, payload: &[u8]) -> Result<()> {
        let frame = self.frame(payload);
        self.stream.write_all(&frame)?;
        Ok(())
    }

    pub fn send_frame(&mut self, frame: &[u8]) -> Result<()> {
        self.stream.write_all(frame)?;
        Ok(())
    }

    /// PING, then wait for the PONG (every MSG before it is dropped).
    pub fn round_trip(&mut self) -> Result<()> {
        self.send(b"PING\r\n")?;
        loop {
            if let Op::Pong = self.next()? {
                return Ok(());
            }
        }
    }

    /// Takes every complete frame out of `raw`, its payload onto `data`.
    fn unframe(&mut self) -> Result<()> {
        if self.tcp {
            self.data.extend_from_slice(&self.raw);
            self.raw.clear();
            return Ok(());
        }
        let mut start = 0;
        loop {
            let rest = &self.raw[start..];
            if rest.len() < 2 {
                break;
            }
            let opcode = rest[0] & 0x0f;
            let (length, header) = match rest[1] & 0x7f {
                126 if rest.len() >= 4 => (u16::from_be_bytes([rest[2], rest[3]]) as usize, 4),
                127 if rest.len() >= 10 => {
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(&rest[2..10]);
                    (u64::from_be_bytes(bytes) as usize, 10)
                }
                126 | 127 => break,
                length => (length as usize, 2),
            };
            if rest.len() < header + length {
                break;
            }
            match opcode {
                0x0..=0x2 => self.data.extend_from_slice(&rest[header..header + length]),
                0x8 => bail!("the server closed the websocket"),
                _ => {}
            }
            start += header + length;
        }
        self.raw.drain(..start);
        Ok(())
    }

    /// Reads more from the socket.
    fn fill(&mut self) -> Result<()> {
        let mut buffer = [0u8; 64 * 1024];
        let read = self.stream.read(&mut buffer).context("read")?;
        if read == 0 {
            bail!("connection closed");
        }
        self.raw.extend_from_slice(&buffer[..read]);
        self.unframe()
    }

    /// The next protocol operation.
    fn next(&mut self) -> Result<Op> {
        loop {
            if let Some(op) = self.parse()? {
                return Ok(op);
            }
            if self.at > 0 {
                self.data.drain(..self.at);
                self.at = 0;
            }
            self.fill()?;
        }
    }

    /// One operation from `data`, if a whole one is there.
    fn parse(&mut self) -> Result<Option<Op>> {
        let rest = &self.data[self.at..];
        let Some(newline) = rest.iter().position(|byte| *byte == b'\n') else {
            return Ok(None);
        };
        let end = newline.saturating_sub(1);
        let line = &rest[..end];
        if line.starts_with(b"MSG ") {
            // The size is the last field: its digits, read from the end.
            let digits = line.iter().rev().take_while(|byte| byte.is_ascii_digit());
            let (mut size, mut scale) = (0usize, 1usize);
            for digit in digits {
                size += usize::from(digit - b'0') * scale;
                scale *= 10;
            }
            if rest.len() < end + 2 + size + 2 {
                return Ok(None);
            }
            let msg = self.keep.then(|| {
                let text = String::from_utf8_lossy(line);
                let fields: Vec<&str> = text.split(' ').collect();
                Msg {
                    reply: (fields.len() == 5).then(|| fields[3].to_string()),
                    payload: rest[end + 2..end + 2 + size].to_vec(),
                }
            });
            self.at += end + 2 + size + 2;
            return Ok(Some(Op::Msg(msg)));
        }
        let op = if line == b"PONG" {
            Op::Pong
        } else if line == b"PING" {
            Op::Ping
        } else if line.starts_with(b"-ERR") {
            bail!("{}", String::from_utf8_lossy(line));
        } else {
            Op::Other
        };
        self.at += end + 2;
        Ok(Some(op))
    }

    /// The next MSG (answering the server's PINGs on the way); `None` when only counted.
    pub fn next_msg(&mut self) -> Result<Option<Msg>> {
        loop {
            match self.next()? {
                Op::Msg(msg) => return Ok(msg),
                Op::Ping => self.send(b"PONG\r\n")?,
                _ => {}
            }
        }
    }
}

enum Op {
    Msg(Option<Msg>),
    Ping,
    Pong,
    Other,
}

/// Messages per second from one publisher to one subscriber, both raw websocket clients on
/// threads of their own.
pub fn pubsub(port: u16, messages: usize, size: usize) -> Result<f64> {
    let mut subscriber = Connection::connect(port)?;
    subscriber.send(b"SUB bench 1\r\n")?;
    subscriber.round_trip()?;
    subscriber.keep = false;
    let mut publisher = Connection::connect(port)?;
    let mut batch = Vec::with_capacity(BATCH * (size + 20));
    for _ in 0..BATCH {
        batch.extend_from_slice(format!("PUB bench {size}\r\n").as_bytes());
        batch.extend(std::iter::repeat_n(b'x', size));
        batch.extend_from_slice(b"\r\n");
    }
    let frame = publisher.frame(&batch);
    let receiving = std::thread::spawn(move || -> Result<usize> {
        let mut count = 0;
        while count < messages {
            subscriber.next_msg()?;
            count += 1;
        }
        Ok(count)
    });
    let started = Instant::now();
    let mut sent = 0;
    while sent < messages {
        publisher.send_frame(&frame)?;
        sent += BATCH;
    }
    let received = receiving
        .join()
        .map_err(|_| anyhow::anyhow!("subscriber thread panicked"))??;
    let elapsed = started.elapsed();
    publisher.round_trip()?;
    Ok(received as f64 / elapsed.as_secs_f64())
}

/// Median and p99 request/reply round trip, requester and responder raw websocket clients.
pub fn latency(port: u16, requests: usize) -> Result<(Duration, Duration)> {
    let mut responder = Connection::connect(port)?;
    responder.send(b"SUB echo 1\r\n")?;
    responder.round_trip()?;
    let answering = std::thread::spawn(move || -> Result<()> {
        loop {
            let Some(msg) = responder.next_msg()? else {
                continue;
            };
            let Some(reply) = msg.reply else { continue };
            let mut answer = format!("PUB {reply} {}\r\n", msg.payload.len()).into_bytes();
            answer.extend_from_slice(&msg.payload);
            answer.extend_from_slice(b"\r\n");
            responder.send(&answer)?;
            if msg.payload == b"stop" {
                return Ok(());
            }
        }
    });
    let mut requester = Connection::connect(port)?;
    requester.send(b"SUB _INBOX.bench 1\r\n")?;
    requester.round_trip()?;
    let request = requester.frame(b"PUB echo _INBOX.bench 4\r\nping\r\n");
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        requester.send_frame(&request)?;
        requester.next_msg()?;
        times.push(started.elapsed());
    }
    requester.send(b"PUB echo _INBOX.bench 4\r\nstop\r\n")?;
    requester.next_msg()?;
    answering
        .join()
        .map_err(|_| anyhow::anyhow!("responder thread panicked"))??;
    times.sort();
    Ok((times[times.len() / 2], times[times.len() * 99 / 100]))
}

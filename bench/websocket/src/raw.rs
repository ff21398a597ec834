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

/// Where the three threads of a request's round trip ran (`--placement`): the share of round
/// trips in which the requester and the responder were last seen on the same CPU, and in which
/// the server's busiest thread (the one that carried the messages) was on the requester's or on
/// the responder's CPU. A wake-up across vCPUs costs this VM about ten times one on the same
/// vCPU (bench/README.md), so these shares are what a round's p50 follows.
#[derive(Default)]
pub struct Placement {
    pub requester_with_responder: f64,
    pub server_with_requester: f64,
    pub server_with_responder: f64,
}

/// `--pin-clients split|same`: the requester on CPU 0 and the responder on CPU 1 (split, the
/// placement a quiet machine settles in), or both on CPU 0 (same); the servers stay free.
static PIN_CLIENTS: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();

pub fn pin_clients(requester: usize, responder: usize) {
    let _ = PIN_CLIENTS.set(Some((requester, responder)));
}

/// Pin this thread to `cpu`.
fn pin_to(cpu: usize) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and sched_setaffinity get valid
    // pointers to it and its size, for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!("pin to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU this thread runs on.
fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's state.
    unsafe { libc::sched_getcpu() }
}

/// The CPU time (utime + stime, in ticks) and last CPU of each thread of process `pid`.
fn threads_of(pid: u32) -> Vec<(u64, u64, i32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces), from field 3 on.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let number = |index: usize| {
            fields
                .get(index)
                .and_then(|field| field.parse::<u64>().ok())
        };
        // utime, stime and processor are fields 14, 15 and 39: 11, 12 and 36 here.
        let (Some(utime), Some(stime), Some(cpu)) = (number(11), number(12), number(36)) else {
            continue;
        };
        let tid = task.file_name().to_string_lossy().parse().unwrap_or(0);
        threads.push((tid, utime + stime, cpu as i32));
    }
    threads
}

/// Median and p99 request/reply round trip, requester and responder raw websocket clients;
/// with `server` (its pid), where the threads ran too.
pub fn latency(
    port: u16,
    requests: usize,
    server: Option<u32>,
) -> Result<(Duration, Duration, Placement)> {
    let mut responder = Connection::connect(port)?;
    responder.send(b"SUB echo 1\r\n")?;
    responder.round_trip()?;
    let responder_cpu = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(-1));
    let responder_seen = responder_cpu.clone();
    let pins = PIN_CLIENTS.get().copied().flatten();
    let answering = std::thread::spawn(move || -> Result<()> {
        if let Some((_, cpu)) = pins {
            pin_to(cpu)?;
        }
        loop {
            let Some(msg) = responder.next_msg()? else {
                continue;
            };
            responder_seen.store(current_cpu(), std::sync::atomic::Ordering::Relaxed);
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
    if let Some((cpu, _)) = pins {
        pin_to(cpu)?;
    }
    let mut requester = Connection::connect(port)?;
    requester.send(b"SUB _INBOX.bench 1\r\n")?;
    requester.round_trip()?;
    let request = requester.frame(b"PUB echo _INBOX.bench 4\r\nping\r\n");
    let mut times = Vec::with_capacity(requests);
    // The server thread that carried the messages: the one whose CPU time grew most over the
    // first round trips; then its CPU is read every so often (outside the timed part).
    let before = server.map(threads_of).unwrap_or_default();
    let mut busiest: Option<u64> = None;
    let (mut samples, mut together, mut with_requester, mut with_responder) = (0, 0, 0, 0);
    for index in 0..requests {
        let started = Instant::now();
        requester.send_frame(&request)?;
        requester.next_msg()?;
        times.push(started.elapsed());
        let Some(pid) = server else { continue };
        if index == 1000 {
            busiest = threads_of(pid)
                .into_iter()
                .max_by_key(|(tid, ticks, _)| {
                    let earlier = before.iter().find(|(old, _, _)| old == tid);
                    ticks
                        - earlier
                            .map_or(0, |(_, old_ticks, _)| *old_ticks)
                            .min(*ticks)
                })
                .map(|(tid, _, _)| tid);
        }
        if index > 1000 && index % 20 == 0 {
            let requester_at = current_cpu();
            let responder_at = responder_cpu.load(std::sync::atomic::Ordering::Relaxed);
            let server_at = threads_of(pid)
                .into_iter()
                .find(|(tid, _, _)| Some(*tid) == busiest)
                .map(|(_, _, cpu)| cpu);
            samples += 1;
            together += usize::from(requester_at == responder_at);
            with_requester += usize::from(server_at == Some(requester_at));
            with_responder += usize::from(server_at == Some(responder_at));
        }
    }
    requester.send(b"PUB echo _INBOX.bench 4\r\nstop\r\n")?;
    requester.next_msg()?;
    answering
        .join()
        .map_err(|_| anyhow::anyhow!("responder thread panicked"))??;
    times.sort();
    let share = |count: usize| count as f64 / samples.max(1) as f64;
    let placement = Placement {
        requester_with_responder: share(together),
        server_with_requester: share(with_requester),
        server_with_responder: share(with_responder),
    };
    Ok((
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        placement,
    ))
}

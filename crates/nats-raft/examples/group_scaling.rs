//! The group-scaling figure: 3 node processes on loopback TCP, each running N R3 groups; once every
//! group has a leader, the coordinator samples each node's CPU time and RSS over an idle window.
//!
//! ```sh
//! cargo run --release -p nats-raft --example group_scaling -- --groups 2000 --seconds 20
//! cargo run --release -p nats-raft --example group_scaling -- --groups 2000 --quiesce
//! ```
//!
//! `--quiesce` turns heartbeats and elections off in every group once all have a leader (openraft's
//! runtime toggles), to show the cost of idle groups without their heartbeats. `--heartbeat-ms`
//! changes the heartbeat interval (election timeout 4-8 times it). Stores live under /dev/shm so
//! the start-up fsyncs do not dominate; the idle window does no log I/O.
//!
//! The transport is a minimal stand-in for routes: one TCP connection per ordered pair of nodes,
//! frames `[u32 length][u8 kind][u64 id][u16 group length][group][message]`, replies matched by id.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use nats_raft::{
    GroupConfig, Network, NetworkError, NodeId, RaftGroup, ReplyFuture, Role, StateMachine,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

const NODES: [NodeId; 3] = [1, 2, 3];
const REQUEST: u8 = 0;
const REPLY: u8 = 1;
const NO_GROUP: u8 = 2;

struct Options {
    groups: usize,
    seconds: u64,
    quiesce: bool,
    heartbeat_ms: u64,
}

fn parse_options(arguments: &[String]) -> Options {
    let mut options = Options {
        groups: 500,
        seconds: 20,
        quiesce: false,
        heartbeat_ms: 500,
    };
    let mut iterator = arguments.iter();
    while let Some(argument) = iterator.next() {
        let mut value = || {
            iterator
                .next()
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{argument} needs a number"))
        };
        match argument.as_str() {
            "--groups" => options.groups = value() as usize,
            "--seconds" => options.seconds = value(),
            "--heartbeat-ms" => options.heartbeat_ms = value(),
            "--quiesce" => options.quiesce = true,
            _ => {}
        }
    }
    options
}

fn main() -> io::Result<()> {
    let arguments: Vec<String> = std::env::args().collect();
    if arguments.get(1).map(String::as_str) == Some("node") {
        let runtime = tokio::runtime::Runtime::new()?;
        return runtime.block_on(node(&arguments[2..]));
    }
    coordinator(&arguments[1..])
}

// ---------------------------------------------------------------- coordinator

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Total CPU seconds (user + system) and RSS in MiB of a process.
fn sample(pid: u32) -> io::Result<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    let ticks = |index: usize| {
        fields
            .get(index - 3)
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let cpu = (ticks(14) + ticks(15)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or(0.0);
    Ok((cpu, rss_kib / 1024.0))
}

fn wait_line(output: &mut impl std::io::BufRead, prefix: &str) -> io::Result<String> {
    let mut line = String::new();
    loop {
        line.clear();
        if output.read_line(&mut line)? == 0 {
            return Err(io::Error::other(format!(
                "a node exited before printing {prefix}"
            )));
        }
        if line.starts_with(prefix) {
            return Ok(line);
        }
    }
}

fn coordinator(arguments: &[String]) -> io::Result<()> {
    let options = parse_options(arguments);
    let root = PathBuf::from(format!("/dev/shm/nats-raft-scaling-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let ports: Vec<u16> = NODES
        .iter()
        .map(|_| free_port())
        .collect::<io::Result<_>>()?;
    let port_list = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let executable = std::env::current_exe()?;
    let mut children = Vec::new();
    for node in NODES {
        let mut command = Command::new(&executable);
        command
            .arg("node")
            .args(["--id", &node.to_string(), "--ports", &port_list])
            .args(["--dir", &root.display().to_string()])
            .args(arguments)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        children.push(command.spawn()?);
    }
    struct Reap(Vec<std::process::Child>, PathBuf);
    impl Drop for Reap {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let mut reap = Reap(children, root.clone());
    let started = Instant::now();
    let mut outputs = Vec::new();
    for child in &mut reap.0 {
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        outputs.push(std::io::BufReader::new(stdout));
    }
    // Each node prints "ready" once every group has a leader.
    for (node, output) in outputs.iter_mut().enumerate() {
        let line = wait_line(output, "ready")?;
        eprintln!(
            "node {}: {} after {:.1}s",
            node + 1,
            line.trim(),
            started.elapsed().as_secs_f64()
        );
    }
    if options.quiesce {
        for child in &mut reap.0 {
            let stdin = child
                .stdin
                .as_mut()
                .ok_or_else(|| io::Error::other("no stdin"))?;
            std::io::Write::write_all(stdin, b"quiesce\n")?;
        }
        for output in &mut outputs {
            wait_line(output, "quiesced")?;
        }
    }
    // Let start-up work (snapshots, the blank entries) settle before the idle window.
    std::thread::sleep(Duration::from_secs(5));
    let pids: Vec<u32> = reap.0.iter().map(|child| child.id()).collect();
    let before: Vec<(f64, f64)> = pids
        .iter()
        .map(|pid| sample(*pid))
        .collect::<io::Result<_>>()?;
    std::thread::sleep(Duration::from_secs(options.seconds));
    let after: Vec<(f64, f64)> = pids
        .iter()
        .map(|pid| sample(*pid))
        .collect::<io::Result<_>>()?;
    println!(
        "groups={} heartbeat_ms={} quiesce={} window={}s",
        options.groups, options.heartbeat_ms, options.quiesce, options.seconds
    );
    for (node, (start, end)) in before.iter().zip(&after).enumerate() {
        let cpu_percent = (end.0 - start.0) / options.seconds as f64 * 100.0;
        println!(
            "node {}: idle CPU {:.1}% of one core, RSS {:.0} MiB",
            node + 1,
            cpu_percent,
            end.1
        );
    }
    drop(reap);
    Ok(())
}

// ---------------------------------------------------------------- node

struct Nothing;

impl StateMachine for Nothing {
    fn apply(&mut self, _index: u64, _payload: Bytes) -> io::Result<()> {
        Ok(())
    }
    fn snapshot(&mut self, _out: &mut dyn nats_raft::SnapshotOut) -> io::Result<()> {
        Ok(())
    }
    fn restore(&mut self, _snapshot: &mut dyn io::Read) -> io::Result<()> {
        Ok(())
    }
}

type Groups = Arc<RwLock<HashMap<String, Arc<RaftGroup>>>>;

/// An outgoing connection to one peer.
struct Peer {
    frames: mpsc::UnboundedSender<Bytes>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Option<Bytes>>>>>,
    next_id: AtomicU64,
}

struct TcpNetwork {
    peers: HashMap<NodeId, Peer>,
}

impl Network for TcpNetwork {
    fn send(&self, group: &str, target: NodeId, message: Bytes) -> ReplyFuture {
        let unreachable = move || NetworkError::Unreachable(format!("node {target}"));
        let Some(peer) = self.peers.get(&target) else {
            return Box::pin(async move { Err(unreachable()) });
        };
        let id = peer.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        peer.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(id, sender);
        let mut frame = BytesMut::with_capacity(15 + group.len() + message.len());
        frame.put_u32((11 + group.len() + message.len()) as u32);
        frame.put_u8(REQUEST);
        frame.put_u64(id);
        frame.put_u16(group.len() as u16);
        frame.put_slice(group.as_bytes());
        frame.put_slice(&message);
        let sent = peer.frames.send(frame.freeze()).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(unreachable());
            }
            match receiver.await {
                Ok(Some(reply)) => Ok(reply),
                _ => Err(unreachable()),
            }
        })
    }
}

async fn read_frame(reader: &mut (impl AsyncReadExt + Unpin)) -> io::Result<Bytes> {
    let length = reader.read_u32().await? as usize;
    let mut buffer = vec![0u8; length];
    reader.read_exact(&mut buffer).await?;
    Ok(Bytes::from(buffer))
}

async fn write_frames(
    mut writer: impl AsyncWriteExt + Unpin,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
) {
    while let Some(frame) = frames.recv().await {
        if writer.write_all(&frame).await.is_err() {
            return;
        }
        while let Ok(frame) = frames.try_recv() {
            if writer.write_all(&frame).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
}

async fn connect(port: u16) -> io::Result<Peer> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let stream = loop {
        match TcpStream::connect(("127.0.0.1", port)).await {
            Ok(stream) => break stream,
            Err(error) if Instant::now() > deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    stream.set_nodelay(true)?;
    let (reader, writer) = stream.into_split();
    let (frames, receiver) = mpsc::unbounded_channel();
    tokio::spawn(write_frames(tokio::io::BufWriter::new(writer), receiver));
    let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Option<Bytes>>>>> = Arc::default();
    let replies = pending.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        while let Ok(mut frame) = read_frame(&mut reader).await {
            if frame.len() < 9 {
                break;
            }
            let kind = frame.get_u8();
            let id = frame.get_u64();
            let waiter = replies
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(&id);
            if let Some(waiter) = waiter {
                let _ = waiter.send((kind == REPLY).then_some(frame));
            }
        }
    });
    Ok(Peer {
        frames,
        pending,
        next_id: AtomicU64::new(1),
    })
}

async fn serve_connection(stream: TcpStream, groups: Groups) {
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    let (frames, receiver) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(write_frames(tokio::io::BufWriter::new(writer), receiver));
    let mut reader = BufReader::new(reader);
    while let Ok(mut frame) = read_frame(&mut reader).await {
        if frame.len() < 11 || frame.get_u8() != REQUEST {
            return;
        }
        let id = frame.get_u64();
        let group_length = frame.get_u16() as usize;
        if frame.len() < group_length {
            return;
        }
        let name = frame.split_to(group_length);
        let group = std::str::from_utf8(&name).ok().and_then(|name| {
            groups
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(name)
                .cloned()
        });
        let frames = frames.clone();
        tokio::spawn(async move {
            let (kind, reply) = match group {
                Some(group) => (REPLY, group.handle_message(frame).await),
                None => (NO_GROUP, Bytes::new()),
            };
            let mut out = BytesMut::with_capacity(13 + reply.len());
            out.put_u32((9 + reply.len()) as u32);
            out.put_u8(kind);
            out.put_u64(id);
            out.put_slice(&reply);
            let _ = frames.send(out.freeze());
        });
    }
}

async fn node(arguments: &[String]) -> io::Result<()> {
    let options = parse_options(arguments);
    let find = |flag: &str| {
        arguments
            .iter()
            .position(|argument| argument == flag)
            .and_then(|position| arguments.get(position + 1))
            .cloned()
            .ok_or_else(|| io::Error::other(format!("{flag} missing")))
    };
    let id: NodeId = find("--id")?.parse().map_err(io::Error::other)?;
    let ports: Vec<u16> = find("--ports")?
        .split(',')
        .map(|port| port.parse().map_err(io::Error::other))
        .collect::<io::Result<_>>()?;
    let directory = Path::new(&find("--dir")?).join(format!("node-{id}"));
    let listener = TcpListener::bind(("127.0.0.1", ports[(id - 1) as usize])).await?;
    let groups: Groups = Arc::default();
    let serving = groups.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream, serving.clone()));
        }
    });
    let mut peers = HashMap::new();
    for peer in NODES.into_iter().filter(|peer| *peer != id) {
        peers.insert(peer, connect(ports[(peer - 1) as usize]).await?);
    }
    let network: Arc<dyn Network> = Arc::new(TcpNetwork { peers });
    for number in 0..options.groups {
        let name = format!("G{number}");
        let mut config = GroupConfig::new(&name, id, NODES.to_vec(), directory.join(&name));
        config.heartbeat_interval = Duration::from_millis(options.heartbeat_ms);
        config.election_timeout = (
            Duration::from_millis(options.heartbeat_ms * 4),
            Duration::from_millis(options.heartbeat_ms * 8),
        );

        let group = RaftGroup::start(config, Box::new(Nothing), network.clone())
            .await
            .map_err(io::Error::other)?;
        groups
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(name, Arc::new(group));
    }
    let all: Vec<Arc<RaftGroup>> = groups
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .values()
        .cloned()
        .collect();
    let waiting = Instant::now();
    let mut reported = 0;
    loop {
        let without_leader = all
            .iter()
            .filter(|group| group.status().leader.is_none())
            .count();
        if without_leader == 0 {
            break;
        }
        let elapsed = waiting.elapsed().as_secs();
        if elapsed >= reported + 10 {
            reported = elapsed;
            eprintln!("node {id}: {without_leader} groups without a leader after {elapsed}s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let leaders = all
        .iter()
        .filter(|group| group.status().role == Role::Leader)
        .count();
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("ready leaders={leaders} groups={}\n", all.len()).as_bytes())
        .await?;
    stdout.flush().await?;
    // Commands from the coordinator, until it kills us or exits.
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line == "quiesce" {
            for group in &all {
                group.set_active(false);
            }
            stdout.write_all(b"quiesced\n").await?;
            stdout.flush().await?;
        }
    }
    // The coordinator is gone (its end of stdin closed): stop rather than linger.
    Ok(())
}

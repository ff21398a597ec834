//! Connection storms (issue 21): N clients connect to one server at the same moment, each
//! reading INFO and sending `CONNECT {}` + `PING` over a raw socket; measured is the time from
//! the first connect until every client has its PONG, and the server's resident memory while
//! all N are connected. Ours and nats-server are alternated round by round on fresh servers,
//! and the report gives medians and the ratio (nats-server time / ours: > 1 means ours is
//! faster; RSS ours / nats-server: < 1 means ours is smaller).
//!
//! The open-file limit binds both sides: the bench raises its soft limit to the hard one and
//! the server inherits it, so the largest storm is a little below the hard limit.

use anyhow::{bail, Context, Result};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};

const START_TIMEOUT: Duration = Duration::from_secs(20);
/// A storm that has not finished by then counts as failed (a client may wait out SYN retries).
const STORM_TIMEOUT: Duration = Duration::from_secs(60);
/// File descriptors kept free for the process itself (stdio, the runtime, the listener).
const FD_RESERVE: u64 = 64;

struct Options {
    ours: PathBuf,
    reference: PathBuf,
    sizes: Vec<usize>,
    rounds: usize,
    /// Loopback source addresses the clients are spread over (see `client_socket`).
    sources: u8,
}

fn parse_options() -> Result<Options> {
    let mut ours = None;
    let mut reference = None;
    let mut sizes = vec![2_000, 10_000, 20_000];
    let mut rounds = 3;
    let mut sources = 8;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value = || arguments.next().context("missing value");
        match argument.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--ref" => reference = Some(PathBuf::from(value()?)),
            "--sizes" => {
                sizes = value()?
                    .split(',')
                    .map(|size| size.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .context("--sizes takes numbers separated by commas")?
            }
            "--rounds" => rounds = value()?.parse().context("--rounds takes a number")?,
            "--sources" => {
                sources = value()?
                    .parse()
                    .ok()
                    .filter(|count| (1..=254).contains(count))
                    .context("--sources takes a number from 1 to 254")?
            }
            other => bail!(
                "unknown argument {other}; usage: storm --ours BIN --ref BIN [--sizes 2000,10000,20000] [--rounds 3] [--sources 8]"
            ),
        }
    }
    Ok(Options {
        ours: ours.context("--ours BIN is required")?,
        reference: reference.context("--ref BIN is required")?,
        sizes,
        rounds,
        sources,
    })
}

/// Raise the soft open-file limit to the hard one; returns the limit now in force.
fn raise_file_limit() -> Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit owned by this frame.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            bail!("getrlimit: {}", std::io::Error::last_os_error());
        }
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            bail!("setrlimit: {}", std::io::Error::last_os_error());
        }
    }
    Ok(limit.rlim_cur)
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A server process, killed when dropped (and by the kernel if the bench dies first).
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    async fn start(binary: &PathBuf) -> Result<Server> {
        let port = free_port()?;
        let mut command = Command::new(binary);
        command
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid and _exit are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("start {binary:?}"))?;
        let server = Server { child, port };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)).await {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                if reader.read_line(&mut line).await.is_ok() && line.starts_with("INFO ") {
                    break;
                }
            }
            if Instant::now() > deadline {
                bail!("{binary:?} did not start on port {port}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Let the probe connection's close settle before the storm.
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(server)
    }

    /// Resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    fn memory(&self) -> Result<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let field = |name: &str| -> Result<u64> {
            let line = status
                .lines()
                .find(|line| line.starts_with(name))
                .with_context(|| format!("no {name} in /proc status"))?;
            line.split_whitespace()
                .nth(1)
                .context("malformed status line")?
                .parse()
                .context("malformed status number")
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client socket bound to `source` (a loopback address), its port left to `connect`.
///
/// Why several source addresses: with every client on 127.0.0.1 the kernel's search for a free
/// ephemeral port (`__inet_hash_connect`) walks the even ports first and checks each taken one
/// against the established table; past ~14,000 connections to one server (half of
/// `ip_local_port_range`) every connect walks all of them, and the bench's own two workers
/// spent three quarters of their CPU there in a 20,000-client storm (perf), holding both
/// servers alike. Real storms come from many hosts; spreading the clients over a few loopback
/// addresses (IP_BIND_ADDRESS_NO_PORT, so the port is still chosen per destination at
/// connect) keeps the search short.
fn client_socket(source: Ipv4Addr) -> Result<TcpSocket> {
    let socket = TcpSocket::new_v4()?;
    let enable: libc::c_int = 1;
    // SAFETY: setsockopt on a socket this function owns, with a pointer to a live c_int and
    // its size.
    let status = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&enable as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if status != 0 {
        bail!(
            "IP_BIND_ADDRESS_NO_PORT: {}",
            std::io::Error::last_os_error()
        );
    }
    socket.bind(SocketAddr::from((source, 0)))?;
    Ok(socket)
}

/// One client: connect, INFO, CONNECT + PING, PONG. Returns the open socket.
async fn one_client(port: u16, source: Ipv4Addr) -> Result<BufReader<TcpStream>> {
    let stream = client_socket(source)?
        .connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    if !line.starts_with("INFO ") {
        bail!("expected INFO, got {line:?}");
    }
    reader
        .get_mut()
        .write_all(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\nPING\r\n")
        .await?;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            bail!("closed before PONG");
        }
        if line == "PONG\r\n" {
            return Ok(reader);
        }
    }
}

struct Outcome {
    seconds: f64,
    rss_kib: u64,
    failed: usize,
    /// How the kernel's queues treated this storm (deltas of system-wide counters; nothing
    /// else on the machine opens connections at this rate, so they are the storm's).
    kernel: [u64; KERNEL_COUNTERS.len()],
}

/// `/proc/net/netstat` counters of the listen path: the accept queue overflowing (the
/// handshake's final ACK dropped until the server accepts), and the SYN queue full (answered
/// with a cookie or dropped). They show whether the kernel, not the server, held a storm.
const KERNEL_COUNTERS: [&str; 3] = ["ListenOverflows", "SyncookiesSent", "TCPReqQFullDrop"];

fn kernel_counters() -> [u64; KERNEL_COUNTERS.len()] {
    let mut values = [0; KERNEL_COUNTERS.len()];
    let Ok(text) = std::fs::read_to_string("/proc/net/netstat") else {
        return values;
    };
    let lines: Vec<&str> = text.lines().collect();
    // Pairs of lines: "TcpExt: Name1 Name2 ..." then "TcpExt: 1 2 ...".
    for pair in lines.chunks(2) {
        let [names, numbers] = pair else { continue };
        if !names.starts_with("TcpExt:") {
            continue;
        }
        for (name, number) in names.split_whitespace().zip(numbers.split_whitespace()) {
            if let Some(index) = KERNEL_COUNTERS.iter().position(|wanted| *wanted == name) {
                values[index] = number.parse().unwrap_or(0);
            }
        }
    }
    values
}

/// N clients at once against a fresh server.
async fn storm(binary: &PathBuf, clients: usize, sources: u8) -> Result<Outcome> {
    let server = Server::start(binary).await?;
    let port = server.port;
    let start_line = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for client in 0..clients {
        let start_line = start_line.clone();
        // 127.0.0.1, 127.0.0.2, ... in turn.
        let source = Ipv4Addr::new(127, 0, 0, 1 + (client % usize::from(sources)) as u8);
        tasks.push(tokio::spawn(async move {
            start_line.wait().await;
            tokio::time::timeout(STORM_TIMEOUT, one_client(port, source)).await
        }));
    }
    let counters_before = kernel_counters();
    start_line.wait().await;
    let started = Instant::now();
    let mut sockets = Vec::with_capacity(clients);
    let mut failed = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(Ok(socket))) => sockets.push(socket),
            _ => failed += 1,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let counters_after = kernel_counters();
    let mut kernel = [0; KERNEL_COUNTERS.len()];
    for (index, delta) in kernel.iter_mut().enumerate() {
        *delta = counters_after[index].saturating_sub(counters_before[index]);
    }
    let (rss_kib, _) = server.memory()?;
    drop(sockets);
    drop(server);
    Ok(Outcome {
        seconds,
        rss_kib,
        failed,
        kernel,
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

#[tokio::main(worker_threads = 2)]
async fn main() -> Result<()> {
    let options = parse_options()?;
    let limit = raise_file_limit()?;
    let cap = usize::try_from(limit.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX);
    println!(
        "open-file limit {limit}; storms above {cap} clients are cut to {cap}; clients spread over {} loopback source addresses",
        options.sources
    );
    println!(
        "| clients | nats-server time | ours time | time ratio | nats-server RSS | ours RSS | RSS ratio | per-round time ratios |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for &size in &options.sizes {
        let clients = size.min(cap);
        let mut times = [Vec::new(), Vec::new()];
        let mut memory = [Vec::new(), Vec::new()];
        let mut round_ratios = Vec::new();
        for round in 0..options.rounds {
            // Alternate which server goes first.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut this_round = [0.0; 2];
            for which in order {
                let binary = if which == 0 {
                    &options.reference
                } else {
                    &options.ours
                };
                let outcome = storm(binary, clients, options.sources).await?;
                if outcome.failed > 0 {
                    eprintln!(
                        "{} clients: {} of them failed against {binary:?}",
                        clients, outcome.failed
                    );
                }
                let counters: Vec<String> = KERNEL_COUNTERS
                    .iter()
                    .zip(outcome.kernel)
                    .map(|(name, delta)| format!("{name} +{delta}"))
                    .collect();
                eprintln!(
                    "{clients} clients, {}: {:.3} s; {}",
                    if which == 0 { "nats-server" } else { "ours" },
                    outcome.seconds,
                    counters.join(", ")
                );
                this_round[which] = outcome.seconds;
                times[which].push(outcome.seconds);
                memory[which].push(outcome.rss_kib as f64 / 1024.0);
                // Let the sockets' TIME_WAIT and the processes' exit settle between storms.
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            round_ratios.push(format!("{:.2}", this_round[0] / this_round[1]));
        }
        let reference_time = median(&mut times[0]);
        let our_time = median(&mut times[1]);
        let reference_rss = median(&mut memory[0]);
        let our_rss = median(&mut memory[1]);
        println!(
            "| {clients} | {:.3} s | {:.3} s | {:.2} | {:.1} MiB | {:.1} MiB | {:.2} | {} |",
            reference_time,
            our_time,
            reference_time / our_time,
            reference_rss,
            our_rss,
            our_rss / reference_rss,
            round_ratios.join(" ")
        );
    }
    Ok(())
}

//! Connection storms (issue 21): N clients connect to one server at the same moment, each
//! reading INFO and sending `CONNECT {}` + `PING` over a raw socket; measured is the time from
//! the first connect until every client has its PONG, and the server's resident memory while
//! all N are connected. Ours and nats-server are alternated round by round on fresh servers,
//! and the report gives medians and the ratio (nats-server time / ours: > 1 means ours is
//! faster; RSS ours / nats-server: < 1 means ours is smaller). Each storm also reports the CPU
//! time the server and the bench used during it, per client: the figure load changes least.
//!
//! The client side is one thread and one epoll loop over non-blocking sockets, each made and
//! bound to a (source address, port) pair of the bench's choosing before the clock starts, so
//! the bench's own CPU per client is small (about 16 us against nats-server's 100-150 and ours'
//! 40) and the kernel searches no ephemeral ports: both servers share the machine's two cores
//! with the bench, and a heavy bench (the earlier tokio one used ~145 us per client) bounded
//! the ratios it measured.
//!
//! The open-file limit binds both sides: the bench raises its soft limit to the hard one and
//! the server inherits it, so the largest storm is a little below the hard limit.

use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    fn start(binary: &PathBuf) -> Result<Server> {
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
        let address = std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        loop {
            if let Ok(stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
                stream.set_read_timeout(Some(Duration::from_secs(1)))?;
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_ok() && line.starts_with("INFO ") {
                    break;
                }
            }
            if Instant::now() > deadline {
                bail!("{binary:?} did not start on port {port}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let the probe connection's close settle before the storm.
        std::thread::sleep(Duration::from_millis(200));
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

/// The request every client sends once it has INFO.
const CONNECT_PING: &[u8] =
    b"CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\nPING\r\n";

/// Client ports are assigned by the bench from here up, below Linux's ephemeral range (32768 by
/// default) so they never meet a port the kernel hands out to another process's `connect`.
const FIRST_CLIENT_PORT: u16 = 1024;

/// Where one client is in its handshake. The bytes of INFO and PONG are matched as they come,
/// so a client keeps no buffer of its own (one shared scratch buffer serves every read).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Matching `INFO ` (`matched` bytes of it so far), then the line's end.
    Info,
    /// Sent CONNECT + PING; matching `PONG\r\n` at the start of each line (`matched` bytes),
    /// `SKIP_LINE` while skipping a line that is not PONG.
    Pong,
    Done,
    Failed,
}

const SKIP_LINE: u8 = u8::MAX;

struct Client {
    fd: std::os::fd::OwnedFd,
    phase: Phase,
    matched: u8,
    /// The previous byte was `\r` (INFO's line end).
    after_cr: bool,
}

impl Client {
    /// Feed what the server sent; returns the phase after it. Sends CONNECT + PING when INFO is
    /// complete.
    fn feed(&mut self, bytes: &[u8]) -> Phase {
        for &byte in bytes {
            match self.phase {
                Phase::Info => {
                    let prefix = b"INFO ";
                    if usize::from(self.matched) < prefix.len() {
                        if byte != prefix[usize::from(self.matched)] {
                            self.phase = Phase::Failed;
                            return self.phase;
                        }
                        self.matched += 1;
                    } else if byte == b'\n' && self.after_cr {
                        if !send_all(&self.fd, CONNECT_PING) {
                            self.phase = Phase::Failed;
                            return self.phase;
                        }
                        self.phase = Phase::Pong;
                        self.matched = 0;
                    }
                    self.after_cr = byte == b'\r';
                }
                Phase::Pong => {
                    let pong = b"PONG\r\n";
                    if self.matched == SKIP_LINE {
                        if byte == b'\n' {
                            self.matched = 0;
                        }
                    } else if byte == pong[usize::from(self.matched)] {
                        self.matched += 1;
                        if usize::from(self.matched) == pong.len() {
                            self.phase = Phase::Done;
                        }
                    } else {
                        self.matched = if byte == b'\n' { 0 } else { SKIP_LINE };
                    }
                }
                Phase::Done | Phase::Failed => {}
            }
        }
        self.phase
    }
}

fn send_all(fd: &std::os::fd::OwnedFd, bytes: &[u8]) -> bool {
    // SAFETY: send on a socket this process owns, from a live slice of the given length.
    let sent = unsafe {
        libc::send(
            fd.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(sent).is_ok_and(|sent| sent == bytes.len())
}

fn os_error(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {}", std::io::Error::last_os_error())
}

fn set_option(fd: RawFd, level: libc::c_int, name: libc::c_int, what: &str) -> Result<()> {
    let enable: libc::c_int = 1;
    // SAFETY: setsockopt on an open socket with a pointer to a live c_int and its size.
    let status = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&enable as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if status != 0 {
        return Err(os_error(what));
    }
    Ok(())
}

fn socket_address(address: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(address).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// A non-blocking client socket bound to an explicit (source address, port) that the bench
/// chose. The next port to try for `source` is
/// `*next_port`; a port another socket holds (a wildcard listener of another process) is
/// skipped.
///
/// Why explicit pairs: left to `connect`, the kernel searches for a free ephemeral port per
/// connection (`__inet_hash_connect`, checking each taken candidate against the established
/// table), which took three quarters of the bench's CPU in a 20,000-client storm from one
/// source address (perf, 3 Dec) and a share of it still with 8 sources. With the port bound
/// here, `connect` has nothing to search. Spread over several loopback sources as real storms
/// come from many hosts.
fn client_socket(source: Ipv4Addr, next_port: &mut u16) -> Result<Client> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once below.
    let raw = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if raw < 0 {
        return Err(os_error("socket"));
    }
    // SAFETY: `raw` is a descriptor this function just opened and nothing else owns.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    // SO_REUSEADDR: a pair still in TIME_WAIT from an earlier storm (towards another server
    // port) binds again.
    set_option(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, "SO_REUSEADDR")?;
    set_option(raw, libc::IPPROTO_TCP, libc::TCP_NODELAY, "TCP_NODELAY")?;
    loop {
        let port = *next_port;
        if port == 0 {
            bail!("no free client port left on {source}");
        }
        *next_port = port.wrapping_add(1);
        let address = socket_address(source, port);
        // SAFETY: bind with a pointer to a live sockaddr_in and its size.
        let status = unsafe {
            libc::bind(
                raw,
                (&address as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if status == 0 {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EADDRINUSE) {
            bail!("bind {source}:{port}: {error}");
        }
    }
    Ok(Client {
        fd,
        phase: Phase::Info,
        matched: 0,
        after_cr: false,
    })
}

struct Outcome {
    seconds: f64,
    rss_kib: u64,
    failed: usize,
    /// CPU time (user + system) used during the storm by the bench and by the server.
    bench_cpu: Duration,
    server_cpu: Duration,
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

/// The bench's own CPU time so far (user + system, every thread).
fn own_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage with a pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let micros = |time: libc::timeval| {
        Duration::from_secs(time.tv_sec as u64) + Duration::from_micros(time.tv_usec as u64)
    };
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// A process's CPU time so far: the sum of its threads' run time (`schedstat`, nanoseconds).
fn process_cpu(pid: u32) -> Duration {
    let mut total = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
                total += text
                    .split_whitespace()
                    .next()
                    .and_then(|ns| ns.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(total)
}

/// Clients connected between two looks at the epoll queue while the storm is being started.
const CONNECT_BATCH: usize = 64;

/// N clients at once against a fresh server: every socket made and bound first, then one
/// thread connects them all (a look at the epoll queue every `CONNECT_BATCH` connects, so
/// early clients are answered while the rest connect) and drives every handshake from one
/// epoll loop. The clock runs from the first connect to the last PONG.
fn storm(binary: &PathBuf, clients: usize, sources: &[Ipv4Addr]) -> Result<Outcome> {
    let server = Server::start(binary)?;
    let destination = socket_address(Ipv4Addr::LOCALHOST, server.port);
    // SAFETY: epoll_create1 with a constant flag; the descriptor is owned at once below.
    let raw_epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if raw_epoll < 0 {
        return Err(os_error("epoll_create1"));
    }
    // SAFETY: a descriptor this function just opened and nothing else owns.
    let epoll = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw_epoll) };
    let mut next_ports = vec![FIRST_CLIENT_PORT; sources.len()];
    let mut all = Vec::with_capacity(clients);
    for index in 0..clients {
        let which = index % sources.len();
        all.push(client_socket(sources[which], &mut next_ports[which])?);
    }

    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut scratch = vec![0u8; 4096];
    let mut resolved = 0;
    let mut failed = 0;
    // One look at the epoll queue: read what arrived, advance those clients.
    let mut poll = |all: &mut Vec<Client>,
                    timeout_ms: i32,
                    resolved: &mut usize,
                    failed: &mut usize|
     -> Result<()> {
        // SAFETY: epoll_wait into a live buffer of `events.len()` entries.
        let count = unsafe {
            libc::epoll_wait(
                raw_epoll,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if count < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                return Ok(());
            }
            bail!("epoll_wait: {error}");
        }
        for event in &events[..count as usize] {
            let client = &mut all[event.u64 as usize];
            // SAFETY: read into the live scratch buffer, at most its length.
            let read = unsafe {
                libc::read(
                    client.fd.as_raw_fd(),
                    scratch.as_mut_ptr().cast(),
                    scratch.len(),
                )
            };
            let before = client.phase;
            if matches!(before, Phase::Done | Phase::Failed) {
                continue;
            }
            let after = match usize::try_from(read) {
                Ok(0) => Phase::Failed,
                Ok(length) => client.feed(&scratch[..length]),
                Err(_)
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock =>
                {
                    before
                }
                Err(_) => Phase::Failed,
            };
            client.phase = after;
            match after {
                Phase::Done => *resolved += 1,
                Phase::Failed => {
                    *resolved += 1;
                    *failed += 1;
                }
                Phase::Info | Phase::Pong => {}
            }
        }
        Ok(())
    };

    let counters_before = kernel_counters();
    let bench_before = own_cpu();
    let server_before = process_cpu(server.child.id());
    let started = Instant::now();
    for batch_start in (0..clients).step_by(CONNECT_BATCH) {
        let batch_end = (batch_start + CONNECT_BATCH).min(clients);
        for (index, client) in all[batch_start..batch_end].iter_mut().enumerate() {
            // SAFETY: connect with a pointer to a live sockaddr_in and its size.
            let status = unsafe {
                libc::connect(
                    client.fd.as_raw_fd(),
                    (&destination as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            if status != 0
                && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINPROGRESS)
            {
                client.phase = Phase::Failed;
                resolved += 1;
                failed += 1;
                continue;
            }
            // Registered once connecting: an unconnected socket polls as hung up.
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: (batch_start + index) as u64,
            };
            // SAFETY: epoll_ctl on the storm's epoll descriptor with a live event.
            let status = unsafe {
                libc::epoll_ctl(
                    raw_epoll,
                    libc::EPOLL_CTL_ADD,
                    client.fd.as_raw_fd(),
                    &mut event,
                )
            };
            if status != 0 {
                return Err(os_error("epoll_ctl"));
            }
        }
        poll(&mut all, 0, &mut resolved, &mut failed)?;
    }
    let deadline = started + STORM_TIMEOUT;
    while resolved < clients {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let timeout_ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        poll(&mut all, timeout_ms, &mut resolved, &mut failed)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let bench_cpu = own_cpu().saturating_sub(bench_before);
    let server_cpu = process_cpu(server.child.id()).saturating_sub(server_before);
    let counters_after = kernel_counters();
    let mut kernel = [0; KERNEL_COUNTERS.len()];
    for (index, delta) in kernel.iter_mut().enumerate() {
        *delta = counters_after[index].saturating_sub(counters_before[index]);
    }
    failed += clients - resolved;
    let (rss_kib, _) = server.memory()?;
    drop(all);
    drop(epoll);
    drop(server);
    Ok(Outcome {
        seconds,
        rss_kib,
        failed,
        bench_cpu,
        server_cpu,
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

fn main() -> Result<()> {
    let options = parse_options()?;
    let limit = raise_file_limit()?;
    // The bench holds every client socket and one epoll descriptor.
    let cap = usize::try_from(limit.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX);
    println!(
        "open-file limit {limit}; storms above {cap} clients are cut to {cap}; clients spread over {} loopback source addresses",
        options.sources
    );
    println!(
        "| clients | nats-server time | ours time | time ratio | nats-server RSS | ours RSS | RSS ratio | CPU us/client nats-server / ours / bench | per-round time ratios |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut storm_number = 0usize;
    for &size in &options.sizes {
        let clients = size.min(cap);
        let mut times = [Vec::new(), Vec::new()];
        let mut memory = [Vec::new(), Vec::new()];
        let mut cpu = [Vec::new(), Vec::new()];
        let mut bench_cpu = Vec::new();
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
                // Each storm's clients come from source addresses of their own
                // (127.S.0.1, 127.S.0.2, ...), so no pair of the storm before is still in
                // TIME_WAIT.
                let block = 1 + (storm_number % 250) as u8;
                storm_number += 1;
                let sources: Vec<Ipv4Addr> = (1..=options.sources)
                    .map(|host| Ipv4Addr::new(127, block, 0, host))
                    .collect();
                let outcome = storm(binary, clients, &sources)?;
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
                let per_client = |time: Duration| time.as_secs_f64() * 1e6 / clients.max(1) as f64;
                eprintln!(
                    "{clients} clients, {}: {:.3} s; CPU {:.3} s server, {:.3} s bench ({:.1} / {:.1} us per client); {}",
                    if which == 0 { "nats-server" } else { "ours" },
                    outcome.seconds,
                    outcome.server_cpu.as_secs_f64(),
                    outcome.bench_cpu.as_secs_f64(),
                    per_client(outcome.server_cpu),
                    per_client(outcome.bench_cpu),
                    counters.join(", ")
                );
                this_round[which] = outcome.seconds;
                times[which].push(outcome.seconds);
                memory[which].push(outcome.rss_kib as f64 / 1024.0);
                cpu[which].push(per_client(outcome.server_cpu));
                bench_cpu.push(per_client(outcome.bench_cpu));
                // Let the processes' exit settle between storms.
                std::thread::sleep(Duration::from_millis(300));
            }
            round_ratios.push(format!("{:.2}", this_round[0] / this_round[1]));
        }
        let reference_time = median(&mut times[0]);
        let our_time = median(&mut times[1]);
        let reference_rss = median(&mut memory[0]);
        let our_rss = median(&mut memory[1]);
        println!(
            "| {clients} | {:.3} s | {:.3} s | {:.2} | {:.1} MiB | {:.1} MiB | {:.2} | {:.0} / {:.0} / {:.0} | {} |",
            reference_time,
            our_time,
            reference_time / our_time,
            reference_rss,
            our_rss,
            our_rss / reference_rss,
            median(&mut cpu[0]),
            median(&mut cpu[1]),
            median(&mut bench_cpu),
            round_ratios.join(" ")
        );
    }
    Ok(())
}

//! Dev-only, the one home of test helpers; its user is the black-box suite in `crates/parity`.
//! Here: start a server binary (ours, or the real nats-server when `NATS_SERVER_BIN` is set)
//! on 127.0.0.1 with a free port, build and find our binaries, and talk the text protocol by
//! hand ([`RawClient`]) for byte-exact wire tests. Modules: TLS [`certificates`], clusters
//! ([`cluster`]), async-nats helpers for JetStream ([`client`]), the monitoring endpoints
//! ([`monitoring`]) and runs of our `nats` CLI ([`cli`]). It knows no product crate: it sees
//! the server only over the wire.
//!
//! Everything outside [`client`] is synchronous std code so both plain `#[test]`s and
//! `#[tokio::test]`s can use it. Every wait is bounded.

pub mod certificates;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod monitoring;
pub mod panic_note;
mod ready;
mod spawner;
pub mod waits;

pub use spawner::SpawnTied;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a server gets to start listening.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The directory holding our binaries: `target/<profile>`, derived from the running test
/// executable (`target/<profile>/deps/<test>-<hash>`).
pub fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test exe has a parent");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

/// Our binaries, as (package, binary).
const OUR_BINARIES: [(&str, &str); 2] = [("nats-server", "nats-server"), ("nats-cli", "nats")];

static BUILT: Mutex<bool> = Mutex::new(false);

/// Path of one of our binaries ([`OUR_BINARIES`]). The first call in a test process builds
/// them all with one `cargo build` (a no-op when they are current): the black-box tests live in
/// the `parity` crate, which cannot depend on another package's binary, so this is what keeps
/// the binaries in step with the sources. One invocation for both keeps one feature set, so
/// their dependencies are built once.
pub fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    assert!(
        OUR_BINARIES.contains(&(package, bin)),
        "{package}/{bin} is not one of our binaries"
    );
    let dir = target_profile_dir();
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !*built {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet"]);
        // `cargo test` gives this process the test crate's build variables (CARGO_PKG_NAME,
        // CARGO_MANIFEST_DIR, OUT_DIR...). Build scripts such as ring's rerun when those change
        // (`rerun-if-env-changed`), so passing them on made every test run rebuild ring,
        // rustls and all above them, and the next `cargo test` rebuild them back.
        for (name, _) in std::env::vars_os() {
            if is_cargo_build_variable(&name.to_string_lossy()) {
                cmd.env_remove(&name);
            }
        }
        for (package, bin) in OUR_BINARIES {
            cmd.args(["-p", package, "--bin", bin]);
        }
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "cargo build of our binaries failed");
        *built = true;
    }
    dir.join(bin)
}

/// The variables cargo sets for a crate's build scripts, binaries and tests (not its
/// configuration variables such as CARGO_HOME or CARGO_TARGET_DIR, which must stay).
fn is_cargo_build_variable(name: &str) -> bool {
    name == "OUT_DIR"
        || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || name.starts_with("CARGO_BIN_")
        || matches!(
            name,
            "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
        )
}

/// The server under test: `NATS_SERVER_BIN` (e.g. the real nats-server, for parity runs) or ours.
pub fn server_binary() -> PathBuf {
    match std::env::var_os("NATS_SERVER_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => workspace_binary("nats-server", "nats-server"),
    }
}

/// True when the tests run against a reference server (`NATS_SERVER_BIN` set), not ours.
pub fn is_reference() -> bool {
    std::env::var_os("NATS_SERVER_BIN").is_some_and(|p| !p.is_empty())
}

/// Our `nats` CLI binary.
pub fn cli_binary() -> PathBuf {
    workspace_binary("nats-cli", "nats")
}

/// A free TCP port on 127.0.0.1, asked from the OS. A port is never handed out twice in one
/// process: tests run in parallel threads, and a port released by one test's probe could
/// otherwise go to two servers at once. (The race with other programs is accepted.)
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// Options for [`TestServer::start`].
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Add `-js` and a store dir (a fresh temp dir unless `store_dir` is set).
    pub jetstream: bool,
    pub store_dir: Option<PathBuf>,
    /// Config file contents; written to a temp file and passed with `-c`.
    pub config: Option<String>,
    /// Enable monitoring on a free port (`-m`).
    pub monitoring: bool,
    /// Extra command-line arguments.
    pub args: Vec<String>,
    /// Use this port instead of a fresh free one (restarts).
    pub port: Option<u16>,
}

/// A running server process; killed when dropped, and when the test process dies
/// ([`SpawnTied`]).
pub struct TestServer {
    child: Option<Child>,
    pub port: u16,
    pub monitor_port: Option<u16>,
    pub options: ServerOptions,
    /// Keeps temp dirs (store, config, log) alive as long as the server.
    pub temp: tempfile::TempDir,
    pub store_dir: Option<PathBuf>,
}

impl TestServer {
    pub fn start(options: ServerOptions) -> TestServer {
        let temp = tempfile::tempdir().expect("tempdir");
        Self::start_in(options, temp)
    }

    /// A server run with this config file and no other option.
    pub fn with_config(config: &str) -> TestServer {
        Self::start(ServerOptions {
            config: Some(config.to_string()),
            ..Default::default()
        })
    }

    /// A plain server, no JetStream.
    pub fn core() -> TestServer {
        Self::start(ServerOptions::default())
    }

    /// A JetStream-enabled server with a fresh store dir.
    pub fn jetstream() -> TestServer {
        Self::start(ServerOptions {
            jetstream: true,
            ..Default::default()
        })
    }

    /// Start, and start again (at most twice more) when a port handed out by [`free_port`] was
    /// taken by another process before the server could bind it: the OS hands the same
    /// ephemeral ports to outgoing connections, and another test run may probe them too.
    fn start_in(options: ServerOptions, mut temp: tempfile::TempDir) -> TestServer {
        let mut attempt = 1;
        loop {
            let mut server = Self::spawn_in(options.clone(), temp);
            match server.await_ready() {
                Ok(()) => return server,
                Err(log) if attempt < 3 && log.contains("address already in use") => {
                    attempt += 1;
                    temp =
                        std::mem::replace(&mut server.temp, tempfile::tempdir().expect("tempdir"));
                }
                Err(log) => panic!("server exited during start; log:\n{log}"),
            }
        }
    }

    fn spawn_in(mut options: ServerOptions, temp: tempfile::TempDir) -> TestServer {
        let port = options.port.unwrap_or_else(free_port);
        options.port = Some(port);
        let mut args: Vec<String> = vec![
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
        ];
        let mut store_dir = None;
        if options.jetstream {
            let dir = options
                .store_dir
                .clone()
                .unwrap_or_else(|| temp.path().join("store"));
            options.store_dir = Some(dir.clone());
            args.push("-js".into());
            args.push("-sd".into());
            args.push(dir.display().to_string());
            store_dir = Some(dir);
        }
        let mut monitor_port = None;
        if options.monitoring {
            let m = free_port();
            monitor_port = Some(m);
            args.push("-m".into());
            args.push(m.to_string());
        }
        if let Some(config) = &options.config {
            let path = temp.path().join("server.conf");
            std::fs::write(&path, config).expect("write config");
            args.push("-c".into());
            args.push(path.display().to_string());
        }
        args.extend(options.args.iter().cloned());
        let log = std::fs::File::create(temp.path().join("server.log")).expect("log file");
        let log_err = log.try_clone().expect("clone log");
        let child = Command::new(server_binary())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn_tied()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", server_binary()));
        TestServer {
            child: Some(child),
            port,
            monitor_port,
            options,
            temp,
            store_dir,
        }
    }

    /// Wait until the server serves clients on its port ([`ready::serves_clients`]); its log
    /// when it exited instead.
    fn await_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!("({status})\n{}", self.log()));
                }
            }
            let pid = self.child.as_ref().map(Child::id);
            if ready::serves_clients(self.port, pid, None) {
                if let Some(m) = self.monitor_port {
                    wait_port(m, deadline);
                }
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "server did not start in time; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn monitor_url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}{}",
            self.monitor_port.expect("monitoring enabled"),
            path
        )
    }

    pub fn log_path(&self) -> PathBuf {
        self.temp.path().join("server.log")
    }

    /// Everything the server printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGKILL and reap.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Wait (bounded by `timeout`) for the process to exit on its own and reap it: its exit
    /// code, or `None` if it still ran at the deadline (it is left running) or died by a signal.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        reap_within(&mut self.child, timeout)
    }

    /// SIGTERM and wait (bounded) for a graceful exit; returns the exit status code if it exited.
    pub fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Start again on the same port, store dir and options (after `stop` or `kill9`).
    pub fn restart(&mut self) {
        self.stop();
        let options = self.options.clone();
        let temp = std::mem::replace(&mut self.temp, tempfile::tempdir().expect("tempdir"));
        let mut fresh = TestServer::start_in(options, temp);
        std::mem::swap(self, &mut fresh);
        fresh.child = None;
    }
}

/// Wait (bounded) for `child` to exit and reap it (`child` becomes `None`): its exit code, or
/// `None` if it still runs at the deadline or died by a signal.
pub(crate) fn reap_within(child: &mut Option<Child>, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        let running = child.as_mut()?;
        if let Ok(Some(status)) = running.try_wait() {
            *child = None;
            return status.code();
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_port(port: u16, deadline: Instant) {
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "port {port} did not open in time"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Path helper for tests that write files next to the server's.
pub fn path_in(server: &TestServer, name: &str) -> PathBuf {
    Path::new(server.temp.path()).join(name)
}

/// A bare TCP connection speaking the NATS text protocol by hand, for wire-exact tests.
/// Every read is bounded by [`RawClient::timeout`].
pub struct RawClient {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Bytes of `buffer` before this index were already consumed (compacted lazily, so reading
    /// many small lines does not shift the buffer each time).
    start: usize,
    /// The INFO line the server sent on connect (without `INFO ` and the line end).
    pub info: String,
    pub timeout: Duration,
}

impl RawClient {
    /// Connect and read the INFO line.
    pub fn connect(server: &TestServer) -> RawClient {
        Self::connect_addr(&server.addr())
    }

    pub fn connect_addr(addr: &str) -> RawClient {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let _ = stream.set_nodelay(true);
        let mut client = RawClient {
            stream,
            buffer: Vec::new(),
            start: 0,
            info: String::new(),
            timeout: Duration::from_secs(5),
        };
        let line = client.read_line().expect("INFO line");
        assert!(line.starts_with("INFO "), "expected INFO, got {line:?}");
        client.info = line["INFO ".len()..].trim().to_string();
        client
    }

    /// Connect, read INFO, send `CONNECT <json>` and wait for the PONG of a PING.
    pub fn connect_with(server: &TestServer, connect_json: &str) -> RawClient {
        let mut client = Self::connect(server);
        client.send(&format!("CONNECT {connect_json}\r\nPING\r\n"));
        // A verbose connection gets +OK for CONNECT first.
        client.read_until_line("PONG");
        client
    }

    pub fn send(&mut self, text: &str) {
        self.send_bytes(text.as_bytes());
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        use std::io::Write;
        // A write to a connection the server closed may fail; the following read shows it.
        let _ = self.stream.write_all(bytes);
    }

    /// Read more bytes until `deadline`; false on EOF, error or timeout.
    fn fill(&mut self, deadline: Instant) -> Result<bool, ()> {
        use std::io::Read;
        let now = Instant::now();
        if now >= deadline {
            return Err(());
        }
        let _ = self.stream.set_read_timeout(Some(deadline - now));
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        let mut chunk = [0u8; 65536];
        match self.stream.read(&mut chunk) {
            Ok(0) => Ok(false),
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(())
            }
            // A reset or other error ends the connection as EOF does, but is said: a reset
            // can discard bytes the server sent before it, which a test then misses.
            Err(error) => {
                eprintln!("RawClient: read ended by {:?}: {error}", error.kind());
                Ok(false)
            }
        }
    }

    /// The next `\r\n`-terminated line (without the line end); `None` on EOF or timeout.
    pub fn read_line(&mut self) -> Option<String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let unread = &self.buffer[self.start..];
            if let Some(pos) = unread.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&unread[..pos]).into_owned();
                self.start += pos + 2;
                return Some(line);
            }
            match self.fill(deadline) {
                Ok(true) => {}
                _ => return None,
            }
        }
    }

    /// Read exactly `n` bytes (a payload) plus its trailing `\r\n`.
    pub fn read_payload(&mut self, n: usize) -> Option<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        while self.buffer.len() - self.start < n + 2 {
            match self.fill(deadline) {
                Ok(true) => {}
                _ => return None,
            }
        }
        let payload = self.buffer[self.start..self.start + n].to_vec();
        self.start += n + 2;
        Some(payload)
    }

    /// The next line must equal `expected`.
    pub fn expect_line(&mut self, expected: &str) {
        let line = self.read_line();
        assert_eq!(
            line.as_deref(),
            Some(expected),
            "unexpected line from server"
        );
    }

    /// Lines until (and including) the first one equal to `last`.
    pub fn read_until_line(&mut self, last: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            match self.read_line() {
                Some(line) => {
                    let done = line == last;
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                None => panic!("no {last:?} from server; got {lines:?}"),
            }
        }
    }

    /// Everything the server sends until it closes the connection (bounded by `timeout`);
    /// `None` when it is still open at the deadline.
    pub fn read_to_close(&mut self) -> Option<String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.fill(deadline) {
                Ok(true) => {}
                Ok(false) => {
                    let text = String::from_utf8_lossy(&self.buffer[self.start..]).into_owned();
                    self.buffer.clear();
                    self.start = 0;
                    return Some(text);
                }
                Err(()) => return None,
            }
        }
    }

    /// Send PING and collect every line up to the PONG (proves the server handled all before).
    pub fn ping_collect(&mut self) -> Vec<String> {
        self.send("PING\r\n");
        self.read_until_line("PONG")
    }
}

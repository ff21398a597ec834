//! One server process of a test cluster: which binary (ours or the real nats-server), its
//! ports, config, store and log, and what a test does to it (kill -9, restart on the same ports
//! and store, SIGSTOP/SIGCONT). Killed when dropped.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::SpawnTied;

/// Which server a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// Our `nats-server` binary from this workspace.
    Ours,
    /// The real nats-server: `NATS_SERVER_BIN`, else `nats-server` on PATH.
    Reference,
}

impl ServerKind {
    /// The binary to run, or why there is none.
    pub fn binary(self) -> Result<PathBuf, String> {
        match self {
            ServerKind::Ours => Ok(crate::workspace_binary("nats-server", "nats-server")),
            ServerKind::Reference => reference_binary()
                .ok_or_else(|| "no reference nats-server (NATS_SERVER_BIN or PATH)".to_string()),
        }
    }

    /// Short label for names and logs.
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::Ours => "ours",
            ServerKind::Reference => "go",
        }
    }
}

/// The real nats-server: `NATS_SERVER_BIN` when set, else the first `nats-server` on PATH that
/// is not our own build.
pub fn reference_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let ours = crate::target_profile_dir();
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file() && !candidate.starts_with(&ours))
}

/// A server process of a [`crate::cluster::Cluster`].
pub struct Node {
    pub index: usize,
    pub kind: ServerKind,
    /// `server_name` in its config.
    pub name: String,
    pub client_port: u16,
    pub cluster_port: u16,
    pub monitor_port: u16,
    /// The JetStream store dir, when JetStream is on (kept across restarts).
    pub store_dir: Option<PathBuf>,
    pub config_path: PathBuf,
    pub log_path: PathBuf,
    binary: PathBuf,
    child: Option<Child>,
    paused: bool,
}

impl Node {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        index: usize,
        kind: ServerKind,
        binary: PathBuf,
        name: String,
        ports: (u16, u16, u16),
        directory: PathBuf,
        config: &str,
        jetstream: bool,
    ) -> Node {
        std::fs::create_dir_all(&directory).expect("node dir");
        let config_path = directory.join("server.conf");
        std::fs::write(&config_path, config).expect("write node config");
        Node {
            index,
            kind,
            name,
            client_port: ports.0,
            cluster_port: ports.1,
            monitor_port: ports.2,
            store_dir: jetstream.then(|| directory.join("store")),
            config_path,
            log_path: directory.join("server.log"),
            binary,
            child: None,
            paused: false,
        }
    }

    /// Start the process (appending to its log). Does not wait; see [`Node::start_until_ready`].
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "node {} already running", self.name);
        let mut args: Vec<String> = vec![
            "-c".into(),
            self.config_path.display().to_string(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            self.client_port.to_string(),
            "-m".into(),
            self.monitor_port.to_string(),
        ];
        if let Some(dir) = &self.store_dir {
            args.extend(["-js".into(), "-sd".into(), dir.display().to_string()]);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("node log");
        let log_err = log.try_clone().expect("clone log");
        let child = Command::new(&self.binary)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Killed with the test process even when it dies without its destructors.
            .spawn_tied()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", self.binary));
        self.child = Some(child);
        self.paused = false;
    }

    /// Wait until the node is ready, starting it (again) when it is not running. A port can be
    /// taken between being chosen and being bound (after a kill, too) as the local port of
    /// some other program's outgoing connection (free ports and ephemeral ports share a range);
    /// the bind then fails, so a start that exits is retried until `deadline`.
    pub fn start_until_ready(&mut self, deadline: Instant) {
        loop {
            if self.child.is_none() {
                self.spawn();
            }
            match self.try_wait_ready(deadline) {
                Ok(()) => return,
                Err(e)
                    if Instant::now() >= deadline
                        || !e.to_lowercase().contains("address already in use") =>
                {
                    panic!("{e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Wait (bounded) until the client port answers with INFO and the monitor port listens;
    /// the log when the process exits first or the deadline passes.
    fn try_wait_ready(&mut self, deadline: Instant) -> Result<(), String> {
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!(
                        "node {} exited during start ({status}); log:\n{}",
                        self.name,
                        self.log()
                    ));
                }
            }
            let pid = self.child.as_ref().map(Child::id);
            if crate::ready::serves_clients(self.client_port, pid, Some(&self.name))
                && TcpStream::connect(("127.0.0.1", self.monitor_port)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "node {} did not start in time; log:\n{}",
                    self.name,
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.client_port)
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    pub fn route_addr(&self) -> String {
        format!("127.0.0.1:{}", self.cluster_port)
    }

    pub fn monitor_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.monitor_port, path)
    }

    /// Everything the process printed, over all its runs.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Send `signal` (e.g. SIGUSR2, lame duck mode) to the running process.
    pub fn send_signal(&self, signal_number: libc::c_int) {
        if let Some(pid) = self.pid() {
            signal(pid, signal_number);
        }
    }

    /// Wait (bounded by `timeout`) for the process to exit on its own and reap it: its exit
    /// code, or `None` if it still ran at the deadline (it is left running) or died by a signal.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let code = crate::reap_within(&mut self.child, timeout);
        if self.child.is_none() {
            self.paused = false;
        }
        code
    }

    /// SIGKILL and reap (a paused process dies too).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused = false;
    }

    /// SIGSTOP, and wait (bounded) until the kernel shows the process stopped: the process
    /// keeps its sockets but does nothing.
    pub fn pause(&mut self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGSTOP);
            wait_for_state(pid, true);
            self.paused = true;
        }
    }

    /// SIGCONT after [`Node::pause`], and wait until it runs again.
    pub fn resume(&mut self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGCONT);
            wait_for_state(pid, false);
            self.paused = false;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child this node spawned and has not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Wait (up to 5 s) until `/proc/<pid>/stat` shows the process stopped (`T`), or not.
/// Signal delivery is asynchronous: a process may still run briefly after `kill` returns.
fn wait_for_state(pid: u32, stopped: bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return;
        };
        // The state follows the parenthesised command name.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        if state.is_some_and(|s| matches!(s, 'T' | 't')) == stopped {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!(
        "process {pid} did not {} in time",
        if stopped { "stop" } else { "continue" }
    );
}

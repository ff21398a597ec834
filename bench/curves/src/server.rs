//! One server process under test (ours or nats-server): a free loopback port, a fresh store
//! directory, spawn / graceful stop / kill -9 / restart on the same port and store.
//! Used by every curve; knows nothing about the workloads run against it.

use anyhow::{bail, Context, Result};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which binary, under which name in the figures, with which store settings.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// Name in the CSV and the legends ("rnats", "nats-server", ...).
    pub label: String,
    pub binary: PathBuf,
    /// `jetstream { sync_interval: always }` (fsync before every PubAck).
    pub sync_always: bool,
}

pub struct Server {
    pub spec: ServerSpec,
    port: u16,
    directory: PathBuf,
    child: Option<Child>,
    starts: u32,
}

/// A port the OS just handed out for 127.0.0.1 (released again for the server to take).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Server {
    /// Starts the server with a fresh store under `work_root` and waits until it answers
    /// `$JS.API.INFO`.
    pub async fn start(spec: &ServerSpec, work_root: &Path, tag: &str) -> Result<Server> {
        let directory = work_root.join(format!("{tag}-{}", spec.label));
        if directory.exists() {
            fs::remove_dir_all(&directory).with_context(|| format!("remove {directory:?}"))?;
        }
        fs::create_dir_all(directory.join("store"))?;
        let mut server = Server {
            spec: spec.clone(),
            port: free_port()?,
            directory,
            child: None,
            starts: 0,
        };
        server.spawn()?;
        server.wait_ready(Duration::from_secs(30)).await?;
        Ok(server)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn store_dir(&self) -> PathBuf {
        self.directory.join("store")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Spawns the process on this server's port and store; returns when it was spawned (the
    /// caller measures from here).
    pub fn spawn(&mut self) -> Result<Instant> {
        if self.child.is_some() {
            bail!("{} is already running", self.spec.label);
        }
        self.starts += 1;
        let log = fs::File::create(self.directory.join(format!("server-{}.log", self.starts)))?;
        let mut command = Command::new(&self.spec.binary);
        command.args(["-a", "127.0.0.1", "-p", &self.port.to_string()]);
        if self.spec.sync_always {
            let config = self.directory.join("server.conf");
            fs::write(
                &config,
                format!(
                    "jetstream {{\n  store_dir: {:?}\n  sync_interval: always\n}}\n",
                    self.store_dir().display().to_string()
                ),
            )?;
            command.arg("-c").arg(&config);
        } else {
            command.arg("-js").arg("-sd").arg(self.store_dir());
        }
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: prctl, getppid and _exit are async-signal-safe; the kernel kills the server
        // when this benchmark dies, so no server outlives a crashed or killed run. A benchmark
        // that died before the prctl took effect is seen by the changed parent pid.
        let parent = std::process::id() as libc::pid_t;
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let started = Instant::now();
        let child = command
            .spawn()
            .with_context(|| format!("spawn {:?}", self.spec.binary))?;
        self.child = Some(child);
        Ok(started)
    }

    /// Whether the process has exited (it then is forgotten, so it can be spawned again).
    pub fn has_died(&mut self) -> bool {
        let exited = match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => true,
        };
        if exited {
            self.child = None;
        }
        exited
    }

    /// Connects and asks `$JS.API.INFO` until it answers, within `limit`.
    pub async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if self.has_died() {
                bail!(
                    "{} exited during startup (see {:?})",
                    self.spec.label,
                    self.directory
                );
            }
            if let Ok(client) = crate::client::connect_once(&self.url()).await {
                let reply = tokio::time::timeout(
                    Duration::from_secs(2),
                    client.request("$JS.API.INFO", bytes::Bytes::new()),
                )
                .await;
                if let Ok(Ok(message)) = reply {
                    if !message.payload.is_empty() {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not answer $JS.API.INFO within {limit:?}",
                    self.spec.label
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM and wait for the exit; returns how long the shutdown took. Killed after `limit`.
    pub async fn stop_graceful(&mut self, limit: Duration) -> Result<Duration> {
        let Some(mut child) = self.child.take() else {
            bail!("{} is not running", self.spec.label);
        };
        let started = Instant::now();
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        while started.elapsed() < limit {
            if !matches!(child.try_wait(), Ok(None)) {
                return Ok(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "{} did not stop within {limit:?} after SIGTERM",
            self.spec.label
        )
    }

    /// kill -9 and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Peak resident set size of the running process (VmHWM), in bytes.
    pub fn peak_rss(&self) -> Option<u64> {
        self.status_bytes("VmHWM:")
    }

    /// Resident set size of the running process now (VmRSS), in bytes.
    pub fn rss(&self) -> Option<u64> {
        self.status_bytes("VmRSS:")
    }

    /// A kB field of /proc/PID/status, in bytes.
    fn status_bytes(&self, field: &str) -> Option<u64> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let line = status.lines().find(|line| line.starts_with(field))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Bytes under the store directory.
    pub fn store_bytes(&self) -> u64 {
        fn walk(path: &Path) -> u64 {
            let Ok(entries) = fs::read_dir(path) else {
                return 0;
            };
            entries
                .flatten()
                .map(|entry| match entry.metadata() {
                    Ok(meta) if meta.is_dir() => walk(&entry.path()),
                    Ok(meta) => meta.len(),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.store_dir())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.directory);
    }
}

//! A 3-node cluster of one server binary (ours or nats-server) on 127.0.0.1: free ports,
//! generated configs with explicit routes to every peer (full mesh), a bounded wait for the
//! mesh, and every process killed when the cluster drops (and by the kernel, PR_SET_PDEATHSIG,
//! when the benchmark itself dies). Knows nothing about the workloads.

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NODES: usize = 3;
const START_TIMEOUT: Duration = Duration::from_secs(20);
const MESH_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Cluster {
    pub label: String,
    client_ports: Vec<u16>,
    monitor_ports: Vec<u16>,
    binary: PathBuf,
    /// One per node; `None` while the node is down (killed by a workload).
    children: Vec<Option<Child>>,
    directory: PathBuf,
}

/// A port the OS just handed out for 127.0.0.1 (released again for the server to take).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Cluster {
    /// Starts the three nodes and waits (bounded) until a message published on each node
    /// reaches a subscriber on every other node. With `jetstream`, every node runs JetStream
    /// with its own store directory (`<work>/<label>/store<node>`) and a monitoring port.
    pub async fn start(
        label: &str,
        binary: &Path,
        work_root: &Path,
        jetstream: bool,
    ) -> Result<Cluster> {
        let directory = work_root.join(label);
        if directory.exists() {
            fs::remove_dir_all(&directory).with_context(|| format!("remove {directory:?}"))?;
        }
        fs::create_dir_all(&directory)?;
        let client_ports: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_>>()?;
        let cluster_ports: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_>>()?;
        let monitor_ports: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_>>()?;
        let mut cluster = Cluster {
            label: label.to_string(),
            client_ports: client_ports.clone(),
            monitor_ports: monitor_ports.clone(),
            binary: binary.to_path_buf(),
            children: Vec::new(),
            directory: directory.clone(),
        };
        for node in 0..NODES {
            let routes: Vec<String> = (0..NODES)
                .filter(|&peer| peer != node)
                .map(|peer| format!("\"nats-route://127.0.0.1:{}\"", cluster_ports[peer]))
                .collect();
            let mut config = format!(
                "server_name: \"{label}-{node}\"\nlisten: \"127.0.0.1:{}\"\ncluster {{\n  name: \"bench\"\n  listen: \"127.0.0.1:{}\"\n  routes: [{}]\n}}\n",
                client_ports[node],
                cluster_ports[node],
                routes.join(", ")
            );
            if jetstream {
                config.push_str(&format!(
                    "http: \"127.0.0.1:{}\"\njetstream {{\n  store_dir: \"{}\"\n}}\n",
                    monitor_ports[node],
                    cluster.store_dir(node).display()
                ));
            }
            fs::write(directory.join(format!("node{node}.conf")), config)?;
            cluster.children.push(None);
            cluster.spawn(node)?;
        }
        cluster.wait_ready().await?;
        cluster.wait_mesh().await?;
        Ok(cluster)
    }

    /// Starts node `node` from its config (again, after [`Cluster::kill`]); its log is appended.
    pub fn spawn(&mut self, node: usize) -> Result<()> {
        let config_path = self.directory.join(format!("node{node}.conf"));
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.directory.join(format!("node{node}.log")))?;
        let mut command = Command::new(&self.binary);
        command
            .arg("-c")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: prctl, getppid and _exit are async-signal-safe; the kernel kills the
        // server when this benchmark dies, so no node outlives a crashed or killed run.
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
        let child = command
            .spawn()
            .with_context(|| format!("spawn {:?}", self.binary))?;
        self.children[node] = Some(child);
        Ok(())
    }

    /// kill -9 of node `node`, waited for.
    pub fn kill(&mut self, node: usize) {
        if let Some(mut child) = self.children[node].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The JetStream store directory of node `node`.
    pub fn store_dir(&self, node: usize) -> PathBuf {
        self.directory.join(format!("store{node}"))
    }

    /// The node named `name` (`<label>-<node>`), if it is one of this cluster's.
    pub fn node_named(&self, name: &str) -> Option<usize> {
        let node: usize = name
            .strip_prefix(&format!("{}-", self.label))?
            .parse()
            .ok()?;
        (node < NODES).then_some(node)
    }

    /// Whether node `node`'s `/healthz` answers 200 now.
    pub async fn healthz_ok(&self, node: usize) -> bool {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let attempt = async {
            let mut stream =
                tokio::net::TcpStream::connect(("127.0.0.1", self.monitor_ports[node])).await?;
            stream
                .write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                .await?;
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).await?;
            Ok::<bool, std::io::Error>(head.ends_with(b" 200"))
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), attempt).await,
            Ok(Ok(true))
        )
    }

    pub fn url(&self, node: usize) -> String {
        format!("nats://127.0.0.1:{}", self.client_ports[node])
    }

    pub fn client_port(&self, node: usize) -> u16 {
        self.client_ports[node]
    }

    pub async fn connect(&self, node: usize) -> Result<async_nats::Client> {
        async_nats::ConnectOptions::new()
            .client_capacity(65_536)
            .subscription_capacity(1 << 20)
            .connect(self.url(node))
            .await
            .with_context(|| format!("connect to {} node {node}", self.label))
    }

    /// Resident set size of each node now (VmRSS), in bytes.
    pub fn rss(&self) -> Vec<Option<u64>> {
        self.children
            .iter()
            .map(|child| {
                let child = child.as_ref()?;
                let status = fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
                let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .collect()
    }

    /// After 5 s of settling (the work just asked for is not idle cost), the nodes' CPU over
    /// `window` in CPUs (1.0 = one core busy), and their RSS then.
    pub async fn idle_cost(&self, window: Duration) -> (f64, Vec<Option<u64>>) {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let before = self.cpu_seconds();
        let measured = Instant::now();
        tokio::time::sleep(window).await;
        let cpu = (self.cpu_seconds() - before) / measured.elapsed().as_secs_f64();
        (cpu, self.rss())
    }

    /// CPU time (user + system) the nodes spent so far, summed, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        self.children
            .iter()
            .flatten()
            .filter_map(|child| {
                let stat = fs::read_to_string(format!("/proc/{}/stat", child.id())).ok()?;
                // Fields after the command name (which may hold spaces), from field 3 on.
                let rest = &stat[stat.rfind(')')? + 2..];
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let user: f64 = fields.get(11)?.parse().ok()?;
                let system: f64 = fields.get(12)?.parse().ok()?;
                Some((user + system) / ticks)
            })
            .sum()
    }

    fn check_alive(&mut self) -> Result<()> {
        for (node, child) in self.children.iter_mut().enumerate() {
            let Some(child) = child else { continue };
            if !matches!(child.try_wait(), Ok(None)) {
                bail!(
                    "{} node {node} exited (see {:?})",
                    self.label,
                    self.directory.join(format!("node{node}.log"))
                );
            }
        }
        Ok(())
    }

    async fn wait_ready(&mut self) -> Result<()> {
        for node in 0..NODES {
            self.wait_listening(node).await?;
        }
        Ok(())
    }

    /// Waits (bounded) until node `node` accepts client connections.
    pub async fn wait_listening(&mut self, node: usize) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        {
            loop {
                self.check_alive()?;
                if tokio::net::TcpStream::connect(("127.0.0.1", self.client_ports[node]))
                    .await
                    .is_ok()
                {
                    break;
                }
                if Instant::now() > deadline {
                    bail!(
                        "{} node {node} did not listen within {START_TIMEOUT:?}",
                        self.label
                    );
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }

    /// For every ordered pair (from, to): a publish on `from` reaches a subscriber on `to`.
    async fn wait_mesh(&mut self) -> Result<()> {
        let deadline = Instant::now() + MESH_TIMEOUT;
        let mut clients = Vec::new();
        for node in 0..NODES {
            clients.push(self.connect(node).await?);
        }
        for to in 0..NODES {
            let subject = format!("bench.mesh.{to}");
            let mut subscriber = clients[to].subscribe(subject.clone()).await?;
            clients[to].flush().await?;
            for (from, client) in clients.iter().enumerate() {
                if from == to {
                    continue;
                }
                loop {
                    self.check_alive()?;
                    client
                        .publish(subject.clone(), from.to_string().into())
                        .await?;
                    client.flush().await?;
                    let received =
                        tokio::time::timeout(Duration::from_millis(50), subscriber.next()).await;
                    if let Ok(Some(message)) = received {
                        if message.payload.as_ref() == from.to_string().as_bytes() {
                            break;
                        }
                    }
                    if Instant::now() > deadline {
                        bail!(
                            "{}: node {from} -> node {to} not routed within {MESH_TIMEOUT:?}",
                            self.label
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.children.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // CLUSTERBENCH_KEEP=1 keeps the configs, logs and stores for a look afterwards.
        if std::env::var_os("CLUSTERBENCH_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.directory);
        }
    }
}

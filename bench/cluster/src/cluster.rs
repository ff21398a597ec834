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
    children: Vec<Child>,
    directory: PathBuf,
}

/// A port the OS just handed out for 127.0.0.1 (released again for the server to take).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Cluster {
    /// Starts the three nodes and waits (bounded) until a message published on each node
    /// reaches a subscriber on every other node.
    pub async fn start(label: &str, binary: &Path, work_root: &Path) -> Result<Cluster> {
        let directory = work_root.join(label);
        if directory.exists() {
            fs::remove_dir_all(&directory).with_context(|| format!("remove {directory:?}"))?;
        }
        fs::create_dir_all(&directory)?;
        let client_ports: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_>>()?;
        let cluster_ports: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_>>()?;
        let mut cluster = Cluster {
            label: label.to_string(),
            client_ports: client_ports.clone(),
            children: Vec::new(),
            directory: directory.clone(),
        };
        for node in 0..NODES {
            let routes: Vec<String> = (0..NODES)
                .filter(|&peer| peer != node)
                .map(|peer| format!("\"nats-route://127.0.0.1:{}\"", cluster_ports[peer]))
                .collect();
            let config = format!(
                "server_name: \"{label}-{node}\"\nlisten: \"127.0.0.1:{}\"\ncluster {{\n  name: \"bench\"\n  listen: \"127.0.0.1:{}\"\n  routes: [{}]\n}}\n",
                client_ports[node],
                cluster_ports[node],
                routes.join(", ")
            );
            let config_path = directory.join(format!("node{node}.conf"));
            fs::write(&config_path, config)?;
            let log = fs::File::create(directory.join(format!("node{node}.log")))?;
            let mut command = Command::new(binary);
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
                .with_context(|| format!("spawn {binary:?}"))?;
            cluster.children.push(child);
        }
        cluster.wait_ready().await?;
        cluster.wait_mesh().await?;
        Ok(cluster)
    }

    pub fn url(&self, node: usize) -> String {
        format!("nats://127.0.0.1:{}", self.client_ports[node])
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
                let status = fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
                let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .collect()
    }

    /// CPU time (user + system) the nodes spent so far, summed, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        self.children
            .iter()
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
        let deadline = Instant::now() + START_TIMEOUT;
        for node in 0..NODES {
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
        for child in self.children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.directory);
    }
}

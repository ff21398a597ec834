//! Test clusters: N server processes, each ours or the real nats-server ([`ServerKind`]), on
//! 127.0.0.1 with free ports and generated configs, joined by routes in a chosen [`Topology`].
//! Used by the cluster suite (`crates/parity/tests/cluster/`) and anything else that needs more
//! than one server.
//!
//! - [`Cluster::start`] starts every node and waits (bounded) for the mesh: a message published
//!   on each node reaches a subscriber on every other node (routes carry one hop, so this proves
//!   every direct route), and `/routez` names every peer where a node serves it.
//! - Nodes can be killed (`kill -9`), restarted on the same ports and store, paused (SIGSTOP) and
//!   resumed; their logs are printed, and their files kept, when a test panics with the cluster
//!   alive. Every process is killed when the cluster drops, and (PR_SET_PDEATHSIG) when the
//!   test process dies without unwinding, whichever thread started it ([`crate::SpawnTied`]).
//! - [`Topology::Proxied`] puts a TCP proxy on every route link ([`link_proxy`]) so a test can
//!   blackhole, reset or delay one link. Gossip would let nodes dial each other around the
//!   proxies (an implicit route goes to the address a peer advertises), so in that topology
//!   every node has an explicit route to every other through a proxy and advertises the address
//!   of a [`link_proxy::GossipSink`], which refuses every connection: the only routes that can
//!   form are the proxied ones.
//!
//! This module knows nothing of any test; it only starts, watches and stops processes.

pub mod link_proxy;
mod node;
mod probe;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use link_proxy::{GossipSink, Link, LinkMode, LinkProxy};
pub use node::{reference_binary, Node, ServerKind};
pub use probe::{functional_mesh, http_get, http_get_any, routez_peers};

/// How long a whole cluster gets to start and mesh.
pub const MESH_TIMEOUT: Duration = Duration::from_secs(10);

/// How the routes are configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Every node has an explicit route to every other node.
    FullMesh,
    /// Node 0 has no routes; every other node has one route, to node 0. The rest of the mesh
    /// comes from gossip (implicit routes).
    Seed,
    /// A full mesh of explicit routes, each through a [`LinkProxy`], gossip sunk.
    Proxied,
}

/// What to start.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    pub kinds: Vec<ServerKind>,
    pub topology: Topology,
    /// The `cluster { name }` every node gets.
    pub name: String,
    /// Nodes (by index) that run JetStream, each with its own store dir.
    pub jetstream: Vec<usize>,
    /// Route credentials: every node requires them (`cluster { authorization }`) and puts them
    /// in its route URLs.
    pub route_credentials: Option<(String, String)>,
    /// `cluster { ping_interval }` (with `ping_max: 2`): how fast a silent route is dropped.
    pub route_ping_interval: Option<Duration>,
    /// More route URLs every node dials (e.g. a node of another cluster).
    pub extra_routes: Vec<String>,
    /// Appended to every node's config, `{node}` replaced by the node's name (for a directory
    /// of its own).
    pub extra_config: String,
    /// Appended to one node's config (by index), after `extra_config`, `{node}` replaced too.
    pub node_config: Vec<String>,
    /// Appended inside every node's `cluster { }` block (route `tls { }`, `permissions { }`).
    pub cluster_extra: String,
    /// JetStream store dirs by node index, in place of the node's own `n<i>/store` (e.g. a
    /// test disk mounted there before the cluster starts); kept across restarts.
    pub store_dirs: Vec<std::path::PathBuf>,
}

impl ClusterOptions {
    pub fn new(kinds: &[ServerKind], topology: Topology) -> ClusterOptions {
        ClusterOptions {
            kinds: kinds.to_vec(),
            topology,
            name: "harness".into(),
            jetstream: Vec::new(),
            route_credentials: None,
            route_ping_interval: None,
            extra_routes: Vec::new(),
            extra_config: String::new(),
            node_config: Vec::new(),
            cluster_extra: String::new(),
            store_dirs: Vec::new(),
        }
    }
}

/// Ports of one node: client, cluster, monitor.
type Ports = (u16, u16, u16);

/// A running cluster. Dropping it kills every node and closes every proxy.
pub struct Cluster {
    pub options: ClusterOptions,
    nodes: Vec<Node>,
    links: Vec<Arc<Link>>,
    proxies: Vec<LinkProxy>,
    gossip_sink: Option<GossipSink>,
    /// Configs, logs and stores of every node.
    directory: Option<tempfile::TempDir>,
}

impl Cluster {
    /// Start every node and wait for the mesh; panics (with the logs) if it does not form.
    pub fn start(options: ClusterOptions) -> Cluster {
        let cluster = Cluster::launch(options);
        if let Err(e) = cluster.wait_for_mesh() {
            panic!("cluster did not mesh: {e}\n{}", cluster.logs());
        }
        cluster
    }

    /// Start every node (each answering on its client port) without waiting for routes.
    pub fn launch(options: ClusterOptions) -> Cluster {
        crate::panic_note::install();
        let count = options.kinds.len();
        let binaries: Vec<_> = options
            .kinds
            .iter()
            .map(|kind| kind.binary().unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let directory = tempfile::tempdir().expect("cluster tempdir");
        let ports: Vec<Ports> = (0..count)
            .map(|_| (crate::free_port(), crate::free_port(), crate::free_port()))
            .collect();
        let mut links = Vec::new();
        let mut proxies = Vec::new();
        let mut gossip_sink = None;
        // routes[i]: the route URLs node i dials.
        let routes: Vec<Vec<u16>> = match options.topology {
            Topology::FullMesh => (0..count)
                .map(|i| (0..count).filter(|&j| j != i).map(|j| ports[j].1).collect())
                .collect(),
            Topology::Seed => (0..count)
                .map(|i| if i == 0 { vec![] } else { vec![ports[0].1] })
                .collect(),
            Topology::Proxied => {
                gossip_sink = Some(GossipSink::start(crate::free_port()).expect("gossip sink"));
                let mut routes = vec![Vec::new(); count];
                for a in 0..count {
                    for b in a + 1..count {
                        let link = Link::new_pair(a, b);
                        for (from, to) in [(a, b), (b, a)] {
                            let proxy = LinkProxy::start(
                                link.clone(),
                                from,
                                to,
                                crate::free_port(),
                                ports[to].1,
                            )
                            .expect("link proxy");
                            routes[from].push(proxy.port);
                            proxies.push(proxy);
                        }
                        links.push(link);
                    }
                }
                routes
            }
        };
        let advertise = gossip_sink.as_ref().map(|sink| sink.port);
        let mut nodes: Vec<Node> = (0..count)
            .map(|i| {
                let kind = options.kinds[i];
                let name = format!("{}-{i}-{}", options.name, kind.label());
                let mut config = node_config(&options, &name, ports[i].1, &routes[i], advertise);
                if let Some(own) = options.node_config.get(i) {
                    config.push_str(&own.replace("{node}", &name));
                }
                Node::new(
                    i,
                    kind,
                    binaries[i].clone(),
                    name,
                    ports[i],
                    directory.path().join(format!("n{i}")),
                    &config,
                    options.jetstream.contains(&i),
                )
            })
            .collect();
        for node in nodes.iter_mut() {
            if let (Some(store), Some(dir)) =
                (node.store_dir.as_mut(), options.store_dirs.get(node.index))
            {
                *store = dir.clone();
            }
            node.spawn();
        }
        let mut cluster = Cluster {
            options,
            nodes,
            links,
            proxies,
            gossip_sink,
            directory: Some(directory),
        };
        let deadline = Instant::now() + crate::START_TIMEOUT;
        for node in cluster.nodes.iter_mut() {
            node.start_until_ready(deadline);
        }
        cluster
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, index: usize) -> &Node {
        &self.nodes[index]
    }

    /// Node `index`, to signal it or wait for its exit.
    pub fn node_mut(&mut self, index: usize) -> &mut Node {
        &mut self.nodes[index]
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Client URL of node `index`.
    pub fn url(&self, index: usize) -> String {
        self.nodes[index].url()
    }

    /// Nodes that are running and not paused.
    pub fn live(&self) -> Vec<usize> {
        self.nodes
            .iter()
            .filter(|n| n.is_running() && !n.is_paused())
            .map(|n| n.index)
            .collect()
    }

    /// Wait (bounded by [`MESH_TIMEOUT`]) until every live node routes to every other.
    pub fn wait_for_mesh(&self) -> Result<(), String> {
        self.wait_for_mesh_of(&self.live(), MESH_TIMEOUT)
    }

    /// Wait until the given nodes route to each other: the functional probe between every pair,
    /// and each one's `/routez` (where served) naming the others among its peers.
    pub fn wait_for_mesh_of(&self, indices: &[usize], timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let addresses: Vec<(usize, String)> =
            indices.iter().map(|&i| (i, self.nodes[i].addr())).collect();
        functional_mesh(&addresses, deadline)?;
        for &i in indices {
            let expected: BTreeSet<String> = indices
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| self.nodes[j].name.clone())
                .collect();
            loop {
                match routez_peers(self.nodes[i].monitor_port) {
                    None => break,
                    Some(peers) if expected.is_subset(&peers) => break,
                    Some(peers)
                        if peers.len() >= expected.len()
                            && !peers.iter().any(|p| expected.contains(p)) =>
                    {
                        // Peers listed by id only (no remote_name): count them.
                        break;
                    }
                    Some(peers) => {
                        if Instant::now() > deadline {
                            return Err(format!(
                                "/routez of {} lists {peers:?}, expected {expected:?}",
                                self.nodes[i].name
                            ));
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        }
        Ok(())
    }

    /// The peers node `index` lists in `/routez` (see [`routez_peers`]).
    pub fn route_peers(&self, index: usize) -> Option<BTreeSet<String>> {
        routez_peers(self.nodes[index].monitor_port)
    }

    /// `kill -9` node `index`.
    pub fn kill9(&mut self, index: usize) {
        self.nodes[index].kill9();
    }

    /// Start node `index` again on the same ports, config and store (kills it first if it
    /// runs), and wait until it answers clients. Does not wait for its routes.
    pub fn restart(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.kill9();
        node.start_until_ready(Instant::now() + crate::START_TIMEOUT);
    }

    /// SIGSTOP node `index`.
    pub fn pause(&mut self, index: usize) {
        self.nodes[index].pause();
    }

    /// SIGCONT node `index`.
    pub fn resume(&mut self, index: usize) {
        self.nodes[index].resume();
    }

    /// The link between nodes `a` and `b` ([`Topology::Proxied`] only).
    pub fn link(&self, a: usize, b: usize) -> &Arc<Link> {
        let (a, b) = (a.min(b), a.max(b));
        self.links
            .iter()
            .find(|l| l.a == a && l.b == b)
            .unwrap_or_else(|| panic!("no link {a}-{b}: the cluster is not Topology::Proxied"))
    }

    /// Set both directions of the link between `a` and `b`.
    pub fn set_link(&self, a: usize, b: usize, mode: LinkMode) {
        self.link(a, b).set(mode);
    }

    /// Set only the traffic that `from` sends to `to`.
    pub fn set_direction(&self, from: usize, to: usize, mode: LinkMode) {
        self.link(from, to).set_direction(from, to, mode);
    }

    /// Every link back to [`LinkMode::Pass`].
    pub fn heal_all(&self) {
        for link in &self.links {
            link.set(LinkMode::Pass);
        }
    }

    /// Connections that tried to go around the proxies by gossip (refused).
    pub fn gossip_attempts(&self) -> usize {
        self.gossip_sink.as_ref().map_or(0, |s| s.attempts())
    }

    /// Every node's log, labelled.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            let _ = writeln!(
                out,
                "===== {} ({:?}, client {}, cluster {}) =====\n{}",
                node.name,
                node.kind,
                node.client_port,
                node.cluster_port,
                node.log()
            );
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        if panicking {
            eprintln!("cluster logs (the test panicked):\n{}", self.logs());
        }
        self.nodes.clear();
        self.proxies.clear();
        self.gossip_sink = None;
        if let Some(directory) = self.directory.take() {
            if panicking {
                eprintln!("cluster files kept in {}", directory.keep().display());
            }
        }
        if let Some(message) = panicking.then(crate::panic_note::last).flatten() {
            eprintln!("the test panicked at {message}");
        }
    }
}

/// The config file of one node.
fn node_config(
    options: &ClusterOptions,
    name: &str,
    cluster_port: u16,
    routes: &[u16],
    advertise: Option<u16>,
) -> String {
    let credentials = options
        .route_credentials
        .as_ref()
        .map(|(user, password)| format!("{user}:{password}@"))
        .unwrap_or_default();
    let routes: Vec<String> = routes
        .iter()
        .map(|port| format!("\"nats-route://{credentials}127.0.0.1:{port}\""))
        .chain(options.extra_routes.iter().map(|url| format!("\"{url}\"")))
        .collect();
    let mut config = format!(
        "server_name: \"{name}\"\ncluster {{\n  name: \"{}\"\n  listen: \"127.0.0.1:{cluster_port}\"\n  routes: [{}]\n",
        options.name,
        routes.join(", ")
    );
    if let Some(port) = advertise {
        let _ = writeln!(config, "  advertise: \"127.0.0.1:{port}\"");
    }
    if let Some(interval) = options.route_ping_interval {
        let _ = writeln!(
            config,
            "  ping_interval: \"{}ms\"\n  ping_max: 2",
            interval.as_millis()
        );
    }
    if let Some((user, password)) = &options.route_credentials {
        let _ = writeln!(
            config,
            "  authorization {{ user: \"{user}\", password: \"{password}\", timeout: 2 }}"
        );
    }
    config.push_str(&options.cluster_extra);
    config.push_str("}\n");
    config.push_str(&options.extra_config.replace("{node}", name));
    config
}

//! An in-process cluster for the group tests: a [`Network`] over direct calls between groups in
//! one runtime, with nodes that can be cut off, stopped, restarted and wiped, and a recording
//! state machine.

#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use nats_raft::{
    GroupConfig, GroupStatus, Network, NetworkError, NodeId, RaftGroup, ReplyFuture, Role,
    StateMachine,
};

pub const GROUP: &str = "S-orders";

/// What a node's state machine has applied, shared with the test.
#[derive(Default)]
pub struct Applied {
    pub entries: Vec<(u64, Bytes)>,
    pub restores: usize,
    /// The padding the last restore read (and found as written).
    pub restored_padding: u64,
}

pub type AppliedHandle = Arc<Mutex<Applied>>;

/// Records every applied proposal; a snapshot is the whole list, then `padding` bytes of a
/// pattern written and read back in pieces (a large snapshot that is never whole in memory).
/// Fails on a payload equal to `poison`, to exercise supervision.
pub struct Recorder {
    pub applied: AppliedHandle,
    pub poison: Option<Bytes>,
    pub padding: u64,
}

/// The byte at `position` of a snapshot's padding.
fn padding_byte(position: u64) -> u8 {
    (position % 251) as u8
}

const PADDING_PIECE: usize = 64 << 10;

impl StateMachine for Recorder {
    fn apply(&mut self, index: u64, payload: Bytes) -> io::Result<()> {
        if self.poison.as_ref() == Some(&payload) {
            return Err(io::Error::other("poisoned entry"));
        }
        lock(&self.applied).entries.push((index, payload));
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn nats_raft::SnapshotOut) -> io::Result<()> {
        let applied = lock(&self.applied);
        let mut buffer = BytesMut::new();
        for (index, payload) in &applied.entries {
            buffer.put_u64(*index);
            buffer.put_u32(payload.len() as u32);
            buffer.put_slice(payload);
        }
        out.write_all(&(buffer.len() as u64).to_le_bytes())?;
        out.write_all(&buffer)?;
        let mut written = 0;
        let mut piece = vec![0u8; PADDING_PIECE];
        while written < self.padding {
            let length = (self.padding - written).min(PADDING_PIECE as u64) as usize;
            for (offset, byte) in piece[..length].iter_mut().enumerate() {
                *byte = padding_byte(written + offset as u64);
            }
            out.write_all(&piece[..length])?;
            written += length as u64;
        }
        Ok(())
    }

    fn restore(&mut self, snapshot: &mut dyn io::Read) -> io::Result<()> {
        let mut length = [0u8; 8];
        snapshot.read_exact(&mut length)?;
        let mut whole = vec![0u8; u64::from_le_bytes(length) as usize];
        snapshot.read_exact(&mut whole)?;
        let mut snapshot_entries = Bytes::from(whole);
        let mut entries = Vec::new();
        while snapshot_entries.has_remaining() {
            if snapshot_entries.remaining() < 12 {
                return Err(io::Error::other("bad snapshot"));
            }
            let index = snapshot_entries.get_u64();
            let length = snapshot_entries.get_u32() as usize;
            if snapshot_entries.remaining() < length {
                return Err(io::Error::other("bad snapshot"));
            }
            entries.push((index, snapshot_entries.split_to(length)));
        }
        let mut padding = 0u64;
        let mut piece = vec![0u8; PADDING_PIECE];
        loop {
            let read = snapshot.read(&mut piece)?;
            if read == 0 {
                break;
            }
            for (offset, byte) in piece[..read].iter().enumerate() {
                if *byte != padding_byte(padding + offset as u64) {
                    return Err(io::Error::other("bad snapshot padding"));
                }
            }
            padding += read as u64;
        }
        let mut applied = lock(&self.applied);
        applied.entries = entries;
        applied.restores += 1;
        applied.restored_padding = padding;
        Ok(())
    }
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Default)]
struct RouterState {
    groups: HashMap<(String, NodeId), Arc<RaftGroup>>,
    isolated: BTreeSet<NodeId>,
    /// When each node (first) last received a request or a reply from another (second).
    heard: HashMap<(NodeId, NodeId), tokio::time::Instant>,
    /// The bytes of every request delivered so far.
    sent_bytes: u64,
    /// Each (sender, target, group) link's in-order delivery of appends.
    links: HashMap<(NodeId, NodeId, String), Arc<nats_raft::InOrder>>,
}

/// Delivers messages between the groups registered in it.
#[derive(Default)]
pub struct Router {
    state: Mutex<RouterState>,
}

impl Router {
    /// The bytes of every request delivered so far (replies not counted).
    pub fn sent_bytes(&self) -> u64 {
        lock(&self.state).sent_bytes
    }

    fn link(&self, from: NodeId, to: NodeId, group: &str) -> Arc<nats_raft::InOrder> {
        lock(&self.state)
            .links
            .entry((from, to, group.to_string()))
            .or_default()
            .clone()
    }

    fn connected(&self, from: NodeId, to: NodeId) -> bool {
        let state = lock(&self.state);
        !state.isolated.contains(&from) && !state.isolated.contains(&to)
    }

    fn heard(&self, node: NodeId, from: NodeId) {
        lock(&self.state)
            .heard
            .insert((node, from), tokio::time::Instant::now());
    }

    fn group(&self, group: &str, node: NodeId) -> Option<Arc<RaftGroup>> {
        lock(&self.state)
            .groups
            .get(&(group.to_string(), node))
            .cloned()
    }
}

struct NodeNetwork {
    from: NodeId,
    router: Arc<Router>,
}

/// The largest message the test transport carries, as a route's pending limit bounds what one
/// message may be (a larger one is lost, the connection with it).
pub const MAX_MESSAGE: usize = 5 << 20;

impl Network for NodeNetwork {
    fn send(&self, group: &str, target: NodeId, message: Bytes) -> ReplyFuture {
        let router = self.router.clone();
        let from = self.from;
        // Appends are handed over in the order they were sent (the leader pipelines them).
        let in_order = match router.group(group, target) {
            Some(destination)
                if nats_raft::is_append_request(&message)
                    && message.len() <= MAX_MESSAGE
                    && router.connected(from, target) =>
            {
                Some(
                    router
                        .link(from, target, group)
                        .deliver(destination, message.clone()),
                )
            }
            _ => None,
        };
        let group = group.to_string();
        Box::pin(async move {
            let unreachable = || NetworkError::Unreachable(format!("node {target}"));
            if message.len() > MAX_MESSAGE {
                return Err(NetworkError::Unreachable(format!(
                    "a message of {} bytes to node {target}",
                    message.len()
                )));
            }
            if !router.connected(from, target) {
                return Err(unreachable());
            }
            let destination = router.group(&group, target).ok_or_else(unreachable)?;
            lock(&router.state).sent_bytes += message.len() as u64;
            router.heard(target, from);
            let reply = match in_order {
                Some(delivered) => delivered.await.ok_or_else(unreachable)?,
                None => destination.handle_message(message).await,
            };
            if !router.connected(from, target) {
                return Err(unreachable());
            }
            router.heard(from, target);
            Ok(reply)
        })
    }

    /// An isolated node is unreachable for the others, and they for it, as a route's loss.
    fn reachable(&self, target: NodeId) -> bool {
        self.router.connected(self.from, target)
    }

    fn last_heard(&self, target: NodeId) -> Option<tokio::time::Instant> {
        lock(&self.router.state)
            .heard
            .get(&(self.from, target))
            .copied()
    }
}

/// A test cluster of one group over several nodes, each with its directory.
pub struct Cluster {
    pub router: Arc<Router>,
    pub root: tempfile::TempDir,
    pub members: Vec<NodeId>,
    pub applied: HashMap<NodeId, AppliedHandle>,
    pub tune: fn(&mut GroupConfig),
    /// The padding of every node's snapshots (`Recorder::padding`).
    pub padding: u64,
}

pub fn fast(config: &mut GroupConfig) {
    config.heartbeat_interval = Duration::from_millis(500);
    config.election_timeout = (Duration::from_secs(2), Duration::from_secs(4));
}

impl Cluster {
    pub async fn start(members: &[NodeId], tune: fn(&mut GroupConfig)) -> Cluster {
        Cluster::start_padded(members, tune, 0).await
    }

    /// A cluster whose snapshots carry `padding` bytes after the applied entries.
    pub async fn start_padded(
        members: &[NodeId],
        tune: fn(&mut GroupConfig),
        padding: u64,
    ) -> Cluster {
        let mut cluster = Cluster {
            router: Arc::new(Router::default()),
            root: tempfile::tempdir().expect("tempdir"),
            members: members.to_vec(),
            applied: HashMap::new(),
            tune,
            padding,
        };
        for node in members {
            cluster.start_node(*node, true, None).await;
        }
        cluster
    }

    pub fn directory(&self, node: NodeId) -> PathBuf {
        self.root.path().join(format!("node-{node}"))
    }

    pub async fn start_node(
        &mut self,
        node: NodeId,
        bootstrap: bool,
        poison: Option<Bytes>,
    ) -> Arc<RaftGroup> {
        let mut config = GroupConfig::new(GROUP, node, self.members.clone(), self.directory(node));
        config.bootstrap = bootstrap;
        (self.tune)(&mut config);
        let applied = AppliedHandle::default();
        self.applied.insert(node, applied.clone());
        let network = Arc::new(NodeNetwork {
            from: node,
            router: self.router.clone(),
        });
        let group = RaftGroup::start(
            config,
            Box::new(Recorder {
                applied,
                poison,
                padding: self.padding,
            }),
            network,
        )
        .await
        .expect("group starts");
        let group = Arc::new(group);
        lock(&self.router.state)
            .groups
            .insert((GROUP.to_string(), node), group.clone());
        group
    }

    pub fn node(&self, node: NodeId) -> Arc<RaftGroup> {
        self.router.group(GROUP, node).expect("node is running")
    }

    pub fn running(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = lock(&self.router.state)
            .groups
            .keys()
            .map(|(_, node)| *node)
            .collect();
        nodes.sort();
        nodes
    }

    /// Stops a node (as a kill: no goodbye to the others) and unregisters it.
    pub async fn stop_node(&self, node: NodeId) {
        let group = lock(&self.router.state)
            .groups
            .remove(&(GROUP.to_string(), node));
        if let Some(group) = group {
            group.shutdown().await;
        }
    }

    pub fn isolate(&self, node: NodeId) {
        lock(&self.router.state).isolated.insert(node);
    }

    pub fn heal(&self, node: NodeId) {
        lock(&self.router.state).isolated.remove(&node);
    }

    /// Waits until one running, connected node is leader and every other running node agrees.
    pub async fn leader(&self, timeout: Duration) -> NodeId {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let running = self.running();
            let statuses: Vec<(NodeId, GroupStatus)> = running
                .iter()
                .map(|node| (*node, self.node(*node).status()))
                .collect();
            let leaders: Vec<NodeId> = statuses
                .iter()
                .filter(|(node, status)| {
                    status.role == Role::Leader && !lock(&self.router.state).isolated.contains(node)
                })
                .map(|(node, _)| *node)
                .collect();
            if let [leader] = leaders.as_slice() {
                let agreed = statuses.iter().all(|(node, status)| {
                    lock(&self.router.state).isolated.contains(node)
                        || status.leader == Some(*leader)
                });
                if agreed {
                    return *leader;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no agreed leader within {timeout:?}: {statuses:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn applied_entries(&self, node: NodeId) -> Vec<(u64, Bytes)> {
        lock(&self.applied[&node]).entries.clone()
    }

    /// Waits until `node` has applied through `index`.
    pub async fn wait_applied(&self, node: NodeId, index: u64, timeout: Duration) -> GroupStatus {
        self.node(node)
            .wait_for(timeout, |status| {
                status.applied.is_some_and(|applied| applied >= index)
            })
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "node {node} did not apply {index}: {error}: {:#?}",
                    self.node(node).status()
                )
            })
    }

    pub async fn shutdown(&self) {
        for node in self.running() {
            self.stop_node(node).await;
        }
    }
}

/// Proposes `count` payloads `prefix-N` concurrently on `leader`, returns their indexes in order.
pub async fn propose_many(group: &RaftGroup, prefix: &str, count: usize) -> Vec<u64> {
    let proposals = (0..count).map(|number| {
        let payload = Bytes::from(format!("{prefix}-{number}"));
        group.propose(payload)
    });
    futures::future::join_all(proposals)
        .await
        .into_iter()
        .map(|result| result.expect("proposal committed"))
        .collect()
}

pub fn payloads(entries: &[(u64, Bytes)]) -> Vec<Bytes> {
    entries.iter().map(|(_, payload)| payload.clone()).collect()
}

/// Stops a follower of `leader` and deletes its directory; returns it.
pub async fn stop_and_wipe_a_follower(cluster: &Cluster, leader: NodeId) -> NodeId {
    let behind = cluster
        .running()
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    cluster.stop_node(behind).await;
    std::fs::remove_dir_all(cluster.directory(behind)).expect("wipe");
    behind
}

/// The leader snapshots and purges its log (the start of it is gone); `behind`, stopped and
/// wiped, is replaced by node 4, which rejoins empty: the log the leader still has does not
/// reach back far enough, so node 4 gets the snapshot, then the tail up to `last`.
pub async fn snapshot_and_rejoin_as_4(
    cluster: &mut Cluster,
    leader: NodeId,
    behind: NodeId,
    last: u64,
    wait: Duration,
) {
    cluster.node(leader).snapshot_now().await.expect("snapshot");
    // Everything up to `last` is in the snapshot and purged: the log's file starts over empty.
    let deadline = tokio::time::Instant::now() + wait;
    while cluster.node(leader).log_size()
        != (nats_raft::LogSize {
            entries: 0,
            bytes: 0,
        })
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the leader purged its log"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cluster
        .node(leader)
        .remove_member(behind)
        .await
        .expect("remove");
    cluster.start_node(4, false, None).await;
    cluster.node(leader).add_member(4).await.expect("add");
    cluster.wait_applied(4, last, wait).await;
    let restores = lock(&cluster.applied[&4]).restores;
    assert!(restores >= 1, "node 4 restored from a snapshot");
    assert_eq!(cluster.applied_entries(4), cluster.applied_entries(leader));
}

//! A replicated stream on three nodes in one process: a real nats-raft group per node over an
//! in-memory network, a real stream (ingest task, stores on memory and file) per node, and the
//! test router as each node's core routing. Publishes go through the leader's router; every
//! replica must end with the same messages, PubAcks must wait for a quorum, sequences must stay
//! contiguous across a leader change, and a restarted or wiped follower must catch up.

use super::{ProposeFuture, ReplicaMachine, ReplicationError, Replicator};
use crate::consumer::replicated::{Record, ReplicatedConsumers};
use crate::consumer::ConsumerEntry;
use crate::replica_tests::contents_of_stream;
use crate::resources::Usage;
use crate::stream::{IngestContext, Stream, StreamCommand};
use crate::test_transport::TestRouter;
use crate::{Message, Transport};
use bytes::Bytes;
use jetstream_api::{StorageType, StreamConfig};
use nats_raft::{GroupConfig, Network, NetworkError, NodeId, RaftGroup, ReplyFuture};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

const GROUP: &str = "S-R3F-test0001";
const WAIT: Duration = Duration::from_secs(20);

/// Delivers raft messages between the groups registered in it; isolated nodes are unreachable.
#[derive(Default)]
struct Net {
    groups: Mutex<HashMap<NodeId, Arc<RaftGroup>>>,
    isolated: Mutex<BTreeSet<NodeId>>,
}

struct NodeNetwork {
    from: NodeId,
    net: Arc<Net>,
}

impl Network for NodeNetwork {
    fn send(&self, _group: &str, target: NodeId, message: Bytes) -> ReplyFuture {
        let net = self.net.clone();
        let from = self.from;
        Box::pin(async move {
            let unreachable = || NetworkError::Unreachable(format!("node {target}"));
            let connected = |net: &Net| {
                !net.isolated.lock().contains(&from) && !net.isolated.lock().contains(&target)
            };
            if !connected(&net) {
                return Err(unreachable());
            }
            let destination = net
                .groups
                .lock()
                .get(&target)
                .cloned()
                .ok_or_else(unreachable)?;
            let reply = destination.handle_message(message).await;
            if !connected(&net) {
                return Err(unreachable());
            }
            Ok(reply)
        })
    }
}

/// The stream's replicator over whichever group the node runs now; it also restarts the group
/// over a fresh store when the replica must be rebuilt (what the server's stream group does).
struct GroupReplicator {
    group: Mutex<Option<Arc<RaftGroup>>>,
    leadership: watch::Sender<Option<u64>>,
    rebuilds: AtomicUsize,
    /// How to start this node's group again (set once the group first starts).
    starter: Mutex<Option<GroupStarter>>,
}

#[derive(Clone)]
struct GroupStarter {
    config: GroupConfig,
    machine: ReplicaMachine,
    restores: Arc<AtomicUsize>,
    net: Arc<Net>,
}

impl GroupReplicator {
    /// Starts the node's group (again) and follows its leadership.
    async fn start_group(self: &Arc<Self>, starter: GroupStarter) -> Arc<RaftGroup> {
        let node = starter.config.node_id;
        let network = Arc::new(NodeNetwork {
            from: node,
            net: starter.net.clone(),
        });
        let state_machine = Box::new(Machine {
            replica: starter.machine.clone(),
            restores: starter.restores.clone(),
        });
        let group = Arc::new(
            RaftGroup::start(starter.config.clone(), state_machine, network)
                .await
                .expect("group starts"),
        );
        *self.group.lock() = Some(group.clone());
        *self.starter.lock() = Some(starter.clone());
        let mut leading = group.leading();
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let value = *leading.borrow_and_update();
                this.leadership.send_replace(value);
                if leading.changed().await.is_err() {
                    this.leadership.send_replace(None);
                    return;
                }
            }
        });
        starter.net.groups.lock().insert(node, group.clone());
        group
    }

    async fn rebuild(self: Arc<Self>) {
        let Some(starter) = self.starter.lock().clone() else {
            return;
        };
        let Some(group) = self.group.lock().take() else {
            return;
        };
        starter.net.groups.lock().remove(&starter.config.node_id);
        group.shutdown().await;
        self.leadership.send_replace(None);
        starter.machine.reset().expect("replica reset");
        self.start_group(starter).await;
    }
}

/// The replicator a node's stream is started with, before its group exists.
fn replicator() -> Arc<GroupReplicator> {
    let (leadership, _) = watch::channel(None);
    Arc::new(GroupReplicator {
        group: Mutex::new(None),
        leadership,
        rebuilds: AtomicUsize::new(0),
        starter: Mutex::new(None),
    })
}

/// Rebuilds run on their own task; the replicator hands them an `Arc` of itself.
struct Shared(Arc<GroupReplicator>);

impl Replicator for Shared {
    fn propose(&self, batch: Bytes) -> ProposeFuture {
        let group = self.0.group.lock().clone();
        Box::pin(async move {
            let Some(group) = group else {
                return Err(ReplicationError::NotLeader);
            };
            match group.propose(batch).await {
                Ok(_) => Ok(()),
                Err(nats_raft::RaftGroupError::NotLeader { .. }) => {
                    Err(ReplicationError::NotLeader)
                }
                Err(error) => Err(ReplicationError::Failed(error.to_string())),
            }
        })
    }

    fn leadership(&self) -> watch::Receiver<Option<u64>> {
        self.0.leadership.subscribe()
    }

    fn rebuilt(&self) {
        self.0.rebuilds.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(self.0.clone().rebuild());
    }
}

/// nats-raft's view of the replica, counting restores.
struct Machine {
    replica: ReplicaMachine,
    restores: Arc<AtomicUsize>,
}

impl nats_raft::StateMachine for Machine {
    fn apply(&mut self, _index: u64, payload: Bytes) -> std::io::Result<()> {
        self.replica.apply_committed(&payload)
    }

    fn snapshot(&mut self) -> std::io::Result<Bytes> {
        self.replica.snapshot()
    }

    fn restore(&mut self, snapshot: Bytes) -> std::io::Result<()> {
        self.restores.fetch_add(1, Ordering::Relaxed);
        self.replica.restore(&snapshot)
    }
}

struct Node {
    router: Arc<TestRouter>,
    stream: Arc<Stream>,
    replicator: Arc<GroupReplicator>,
    restores: Arc<AtomicUsize>,
    /// The committed states of the stream's replicated consumers on this node.
    consumers: Arc<ReplicatedConsumers>,
}

impl Node {
    fn group(&self) -> Arc<RaftGroup> {
        self.replicator
            .group
            .lock()
            .clone()
            .expect("the node runs its group")
    }
}

struct Cluster {
    net: Arc<Net>,
    root: tempfile::TempDir,
    members: Vec<NodeId>,
    nodes: HashMap<NodeId, Node>,
    storage: HashMap<NodeId, StorageType>,
}

fn stream_config(storage: StorageType) -> StreamConfig {
    let mut config: StreamConfig = serde_json::from_value(serde_json::json!({
        "name": "ORDERS", "subjects": ["orders.>"], "num_replicas": 3,
        "duplicate_window": 60_000_000_000i64,
    }))
    .expect("config");
    config.storage = storage;
    crate::stream::check_and_fill(&config, false).expect("a valid config")
}

impl Cluster {
    /// Three nodes: file, memory, file.
    async fn start() -> Cluster {
        let mut cluster = Cluster {
            net: Arc::default(),
            root: tempfile::tempdir().expect("tempdir"),
            members: vec![1, 2, 3],
            nodes: HashMap::new(),
            storage: HashMap::from([
                (1, StorageType::File),
                (2, StorageType::Memory),
                (3, StorageType::File),
            ]),
        };
        for node in cluster.members.clone() {
            cluster.start_node(node, true).await;
        }
        cluster
    }

    fn directory(&self, node: NodeId) -> PathBuf {
        self.root.path().join(format!("node-{node}"))
    }

    async fn start_node(&mut self, node: NodeId, bootstrap: bool) {
        let storage = *self.storage.entry(node).or_insert(StorageType::File);
        let directory = self.directory(node);
        let router = TestRouter::new();
        let transport: Arc<dyn Transport> = router.clone();
        let context = IngestContext {
            transport,
            sync_always: false,
            domain: None,
            usage: Arc::new(Usage::new(1 << 30, 1 << 34)),
            batch_limits: Default::default(),
        };
        let replicator = replicator();
        let (stream, mut machine) = Stream::start_replicated(
            stream_config(storage),
            1,
            &directory.join("store"),
            crate::SyncPolicy::default(),
            context,
            Arc::new(Shared(replicator.clone())),
        )
        .expect("stream starts");
        let consumers = ReplicatedConsumers::new(
            Arc::new(Shared(replicator.clone())),
            Arc::downgrade(&stream),
        );
        machine.set_consumers(consumers.clone());
        let mut config =
            GroupConfig::new(GROUP, node, self.members.clone(), directory.join("raft"));
        config.bootstrap = bootstrap;
        config.heartbeat_interval = Duration::from_millis(100);
        config.election_timeout = (Duration::from_millis(1000), Duration::from_millis(2000));
        config.snapshot_after_entries = 20;
        config.snapshot_lag_threshold = 20;
        let restores = Arc::new(AtomicUsize::new(0));
        let starter = GroupStarter {
            config,
            machine,
            restores: restores.clone(),
            net: self.net.clone(),
        };
        replicator.start_group(starter).await;
        self.nodes.insert(
            node,
            Node {
                router,
                stream,
                replicator,
                restores,
                consumers,
            },
        );
    }

    /// Stops a node as a kill would (no goodbye): its group and its stream.
    async fn stop_node(&mut self, node: NodeId) {
        self.net.groups.lock().remove(&node);
        if let Some(stopped) = self.nodes.remove(&node) {
            *stopped.replicator.starter.lock() = None;
            let group = stopped.replicator.group.lock().take();
            if let Some(group) = group {
                group.shutdown().await;
            }
            stopped.replicator.leadership.send_replace(None);
            stopped.stream.stop(false).await;
        }
    }

    async fn shutdown(&mut self) {
        for node in self.members.clone() {
            self.stop_node(node).await;
        }
        let others: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in others {
            self.stop_node(node).await;
        }
    }

    /// Waits until exactly one running node leads (and may decide) and every running node
    /// follows it, returns it.
    async fn leader(&self) -> NodeId {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leaders: Vec<NodeId> = self
                .nodes
                .iter()
                .filter(|(_, node)| node.replicator.leadership.borrow().is_some())
                .map(|(id, _)| *id)
                .collect();
            if let [leader] = leaders.as_slice() {
                let agreed = self.nodes.values().all(|node| {
                    node.replicator
                        .group
                        .lock()
                        .as_ref()
                        .is_some_and(|group| group.status().leader == Some(*leader))
                });
                if agreed {
                    return *leader;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no single leader: {leaders:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn followers(&self, leader: NodeId) -> Vec<NodeId> {
        let mut followers: Vec<NodeId> = self
            .nodes
            .keys()
            .copied()
            .filter(|node| *node != leader)
            .collect();
        followers.sort();
        followers
    }

    /// Waits until every running node's stream has announced `last_seq`.
    async fn wait_all(&self, last_seq: u64) {
        for (id, node) in &self.nodes {
            let mut watch = node.stream.last_sequence.subscribe();
            let reached =
                tokio::time::timeout(WAIT, watch.wait_for(|last| *last >= last_seq)).await;
            assert!(
                matches!(reached, Ok(Ok(_))),
                "node {id} did not reach {last_seq}: {:?}",
                node.stream.store.state()
            );
        }
    }

    /// Every running replica holds the same messages and counters (a memory store counts bytes
    /// without the file records' framing, so bytes are compared among stores of one kind).
    fn assert_identical(&self) {
        let mut reference = None;
        let mut bytes_by_kind: HashMap<StorageType, u64> = HashMap::new();
        for (id, node) in &self.nodes {
            let (mut state, messages) = contents_of_stream(&node.stream);
            let kind = self.storage[id];
            let bytes = *bytes_by_kind.entry(kind).or_insert(state.bytes);
            assert_eq!(state.bytes, bytes, "node {id}: bytes among {kind:?} stores");
            state.bytes = 0;
            match &reference {
                None => reference = Some((*id, state, messages)),
                Some((first, first_state, first_messages)) => {
                    assert_eq!(&state, first_state, "node {id} against node {first}: state");
                    assert_eq!(
                        &messages, first_messages,
                        "node {id} against node {first}: messages"
                    );
                }
            }
        }
    }
}

/// Publishes `count` messages through `node`'s router concurrently; returns the replies in
/// publish order (each within `timeout`, `None` when none came).
async fn publish(
    node: &Node,
    prefix: &str,
    count: usize,
    headers: Option<&str>,
    timeout: Duration,
) -> Vec<Option<String>> {
    let inbox = format!("_INBOX.{}", crate::nuid::next_id());
    let mut replies = node.router.channel(&format!("{inbox}.*"));
    for index in 0..count {
        node.router.publish(Message {
            subject: Bytes::from(format!("orders.{}", index % 5)),
            reply: Some(Bytes::from(format!("{inbox}.{index}"))),
            headers: headers.map(|block| Bytes::from(block.to_string())),
            payload: Bytes::from(format!("{prefix}-{index}")),
        });
    }
    let mut answers = vec![None; count];
    let deadline = tokio::time::Instant::now() + timeout;
    let mut received = 0;
    while received < count {
        match tokio::time::timeout_at(deadline, replies.recv()).await {
            Ok(Some(reply)) => {
                let subject = String::from_utf8_lossy(&reply.subject).to_string();
                let index: usize = subject
                    .rsplit('.')
                    .next()
                    .and_then(|tail| tail.parse().ok())
                    .expect("reply index");
                answers[index] = Some(String::from_utf8_lossy(&reply.payload).to_string());
                received += 1;
            }
            _ => break,
        }
    }
    answers
}

fn acked_sequences(answers: &[Option<String>]) -> Vec<u64> {
    answers
        .iter()
        .map(|answer| {
            let answer = answer.as_ref().expect("a PubAck");
            let ack: serde_json::Value = serde_json::from_str(answer).expect("json PubAck");
            ack["seq"]
                .as_u64()
                .unwrap_or_else(|| panic!("not stored: {answer}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_through_the_leader_reach_every_replica() {
    let mut cluster = Cluster::start().await;
    let leader = cluster.leader().await;
    let answers = publish(&cluster.nodes[&leader], "m", 300, None, WAIT).await;
    let mut sequences = acked_sequences(&answers);
    sequences.sort();
    assert_eq!(sequences, (1..=300).collect::<Vec<u64>>());

    // A duplicate is answered as one and logs nothing new.
    let with_id = "NATS/1.0\r\nNats-Msg-Id: once\r\n\r\n";
    let first = publish(&cluster.nodes[&leader], "id", 1, Some(with_id), WAIT).await;
    assert_eq!(acked_sequences(&first), vec![301]);
    let again = publish(&cluster.nodes[&leader], "id", 1, Some(with_id), WAIT).await;
    assert!(
        again[0]
            .as_deref()
            .is_some_and(|ack| ack.contains("duplicate")),
        "{again:?}"
    );

    // Removals and purges are entries too.
    let leader_stream = cluster.nodes[&leader].stream.clone();
    let (reply, deleted) = tokio::sync::oneshot::channel();
    leader_stream.send(StreamCommand::DeleteMessage {
        seq: 8,
        erase: false,
        reply,
    });
    assert_eq!(deleted.await.expect("answer"), Ok(true));
    let (reply, purged) = tokio::sync::oneshot::channel();
    leader_stream.send(StreamCommand::Purge {
        filter: "orders.1".to_string(),
        up_to_seq: 0,
        keep: 2,
        reply,
    });
    assert_eq!(purged.await.expect("answer"), Ok(58));
    let tail = publish(&cluster.nodes[&leader], "tail", 1, None, WAIT).await;
    assert_eq!(acked_sequences(&tail), vec![302]);

    cluster.wait_all(302).await;
    cluster.assert_identical();
    let (state, _) = contents_of_stream(&cluster.nodes[&leader].stream);
    assert_eq!(state.msgs, 302 - 1 - 58);

    // A follower takes no publishes: nothing answers and nothing is stored.
    let follower = cluster.followers(leader)[0];
    let ignored = publish(
        &cluster.nodes[&follower],
        "f",
        1,
        None,
        Duration::from_millis(700),
    )
    .await;
    assert_eq!(ignored, vec![None]);
    assert_eq!(cluster.nodes[&follower].stream.store.state().last_seq, 302);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_puback_waits_for_a_quorum() {
    let mut cluster = Cluster::start().await;
    let leader = cluster.leader().await;
    acked_sequences(&publish(&cluster.nodes[&leader], "before", 5, None, WAIT).await);
    let followers = cluster.followers(leader);
    cluster.stop_node(followers[0]).await;
    cluster.stop_node(followers[1]).await;

    let leader_node = &cluster.nodes[&leader];
    let inbox = "_INBOX.quorum";
    let mut replies = leader_node.router.channel(inbox);
    leader_node.router.publish(Message {
        subject: Bytes::from_static(b"orders.q"),
        reply: Some(Bytes::from_static(inbox.as_bytes())),
        headers: None,
        payload: Bytes::from_static(b"needs a quorum"),
    });
    let early = tokio::time::timeout(Duration::from_millis(1500), replies.recv()).await;
    assert!(early.is_err(), "acked without a quorum: {early:?}");
    assert_eq!(
        *leader_node.stream.last_sequence.borrow(),
        5,
        "consumers see only committed messages"
    );

    cluster.start_node(followers[0], true).await;
    let reply = tokio::time::timeout(WAIT, replies.recv())
        .await
        .expect("acked once a follower is back")
        .expect("reply");
    let ack: serde_json::Value = serde_json::from_slice(&reply.payload).expect("json");
    assert_eq!(ack["seq"], 6, "{ack}");
    cluster.wait_all(6).await;
    cluster.assert_identical();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_change_keeps_sequences_contiguous() {
    let mut cluster = Cluster::start().await;
    let first_leader = cluster.leader().await;
    let before = publish(&cluster.nodes[&first_leader], "a", 50, None, WAIT).await;
    let mut sequences = acked_sequences(&before);
    cluster.stop_node(first_leader).await;

    let second_leader = cluster.leader().await;
    assert_ne!(second_leader, first_leader);
    let after = publish(&cluster.nodes[&second_leader], "b", 50, None, WAIT).await;
    sequences.extend(acked_sequences(&after));
    sequences.sort();
    assert_eq!(sequences, (1..=100).collect::<Vec<u64>>());
    cluster.wait_all(100).await;
    cluster.assert_identical();

    // The old leader comes back as a follower and ends identical.
    cluster.start_node(first_leader, true).await;
    cluster.wait_all(100).await;
    cluster.assert_identical();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_follower_catches_up() {
    let mut cluster = Cluster::start().await;
    let leader = cluster.leader().await;
    acked_sequences(&publish(&cluster.nodes[&leader], "a", 40, None, WAIT).await);
    let follower = cluster.followers(leader)[0];
    cluster.stop_node(follower).await;
    for round in 0..30 {
        // Many small batches: the log passes the snapshot threshold while the follower is away.
        acked_sequences(
            &publish(&cluster.nodes[&leader], &format!("b{round}"), 2, None, WAIT).await,
        );
    }
    cluster.start_node(follower, true).await;
    cluster.wait_all(100).await;
    cluster.assert_identical();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_follower_catches_up_from_a_snapshot() {
    let mut cluster = Cluster::start().await;
    let leader = cluster.leader().await;
    for round in 0..25 {
        acked_sequences(
            &publish(&cluster.nodes[&leader], &format!("a{round}"), 4, None, WAIT).await,
        );
    }
    // A durable consumer with deliveries and an ack, in the log before the snapshot.
    let config = serde_json::from_value(
        serde_json::json!({"durable_name": "C", "name": "C", "ack_policy": "explicit"}),
    )
    .expect("consumer config");
    let delivered = crate::consumer::replicated::first_delivery;
    let records = [
        Record::Create {
            name: "C".into(),
            config: Box::new(config),
            created: 5,
            start_seq: 1,
        },
        Record::Entries {
            name: "C".into(),
            entries: vec![
                delivered(1, 1),
                delivered(2, 2),
                ConsumerEntry::Acked {
                    stream_seq: 1,
                    consumer_seq: 1,
                    all: false,
                },
            ],
        },
    ];
    cluster.nodes[&leader]
        .consumers
        .propose(&records)
        .await
        .expect("consumer records committed");
    let committed = cluster.nodes[&leader].consumers.committed();
    assert_eq!(committed["C"].state.ack_floor.stream_seq, 1);
    let leader_group = cluster.nodes[&leader].group();
    leader_group.snapshot_now().await.expect("snapshot");
    let wiped = cluster.followers(leader)[0];
    cluster.stop_node(wiped).await;
    std::fs::remove_dir_all(cluster.directory(wiped)).expect("wipe");
    leader_group.remove_member(wiped).await.expect("removed");

    // A wiped node comes back under a new id and joins through the leader.
    let replacement = 4;
    cluster.storage.insert(replacement, cluster.storage[&wiped]);
    cluster.start_node(replacement, false).await;
    cluster.members.push(replacement);
    leader_group.add_member(replacement).await.expect("added");
    cluster.wait_all(100).await;
    assert!(
        cluster.nodes[&replacement].restores.load(Ordering::Relaxed) > 0,
        "caught up from the leader's snapshot"
    );
    cluster.assert_identical();
    assert_eq!(
        cluster.nodes[&replacement].consumers.committed(),
        committed,
        "the snapshot carried the consumer's committed state"
    );
    let more = publish(&cluster.nodes[&leader], "after", 3, None, WAIT).await;
    assert_eq!(acked_sequences(&more), vec![101, 102, 103]);
    cluster.wait_all(103).await;
    cluster.assert_identical();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leaders_unacked_messages_are_dropped_and_its_replica_rebuilt() {
    let mut cluster = Cluster::start().await;
    let old_leader = cluster.leader().await;
    acked_sequences(&publish(&cluster.nodes[&old_leader], "a", 50, None, WAIT).await);
    cluster.wait_all(50).await;

    // Cut off, the old leader stores what it is sent but can commit none of it.
    cluster.net.isolated.lock().insert(old_leader);
    let cut_off = publish(
        &cluster.nodes[&old_leader],
        "lost",
        20,
        None,
        Duration::from_millis(1500),
    )
    .await;
    assert!(
        cut_off.iter().all(Option::is_none),
        "acked without a quorum: {cut_off:?}"
    );

    let deadline = tokio::time::Instant::now() + WAIT;
    let new_leader = loop {
        let leading = cluster
            .followers(old_leader)
            .into_iter()
            .find(|node| cluster.nodes[node].replicator.leadership.borrow().is_some());
        if let Some(node) = leading {
            break node;
        }
        assert!(tokio::time::Instant::now() < deadline, "no new leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let after = publish(&cluster.nodes[&new_leader], "b", 30, None, WAIT).await;
    let mut sequences = acked_sequences(&after);
    sequences.sort();
    assert_eq!(sequences, (51..=80).collect::<Vec<u64>>());

    // Healed, the old leader learns it was deposed, drops what never committed and follows.
    cluster.net.isolated.lock().clear();
    let deadline = tokio::time::Instant::now() + WAIT;
    while cluster.nodes[&old_leader]
        .replicator
        .rebuilds
        .load(Ordering::Relaxed)
        == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the old leader was not rebuilt"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.wait_all(80).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let stores: Vec<u64> = cluster
            .nodes
            .values()
            .map(|node| node.stream.store.state().msgs)
            .collect();
        if stores.iter().all(|msgs| *msgs == 80) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "replicas differ: {stores:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.assert_identical();
    let (_, messages) = contents_of_stream(&cluster.nodes[&old_leader].stream);
    assert!(
        messages
            .iter()
            .all(|message| !message.payload.starts_with(b"lost")),
        "an unacknowledged message of the deposed leader survived"
    );
    cluster.shutdown().await;
}

/// Figures, not a check: R3 on file stores in one process (three groups, in-memory network,
/// the raft logs fdatasynced as always): pipelined publishes of 128 B in windows of 1,000, and
/// one publish at a time (p50/p99 of the PubAck). Run with
/// `cargo test --release -p nats-jetstream --lib replication::tests::measure -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement"]
async fn measure_r3_publish_throughput_and_latency() {
    let mut cluster = Cluster::start().await;
    cluster.storage.insert(2, StorageType::File);
    cluster.stop_node(2).await;
    std::fs::remove_dir_all(cluster.directory(2)).expect("wipe");
    cluster.start_node(2, true).await;
    let leader = cluster.leader().await;
    let node = &cluster.nodes[&leader];
    let payload = Bytes::from(vec![b'x'; 128]);
    let total = 50_000;
    let window = 1_000;
    let mut replies = node.router.channel("_INBOX.measure.*");
    let started = std::time::Instant::now();
    for chunk in 0..total / window {
        for index in 0..window {
            node.router.publish(Message {
                subject: Bytes::from_static(b"orders.measure"),
                reply: Some(Bytes::from(format!(
                    "_INBOX.measure.{}",
                    chunk * window + index
                ))),
                headers: None,
                payload: payload.clone(),
            });
        }
        for _ in 0..window {
            tokio::time::timeout(WAIT, replies.recv())
                .await
                .expect("ack in time")
                .expect("ack");
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "R3 file, 128 B, windows of {window}: {total} in {elapsed:?} = {:.0} msgs/s",
        total as f64 / elapsed.as_secs_f64()
    );
    let mut latencies = Vec::new();
    let mut sync_replies = node.router.channel("_INBOX.sync");
    for _ in 0..2_000 {
        let sent = std::time::Instant::now();
        node.router.publish(Message {
            subject: Bytes::from_static(b"orders.sync"),
            reply: Some(Bytes::from_static(b"_INBOX.sync")),
            headers: None,
            payload: payload.clone(),
        });
        tokio::time::timeout(WAIT, sync_replies.recv())
            .await
            .expect("ack in time")
            .expect("ack");
        latencies.push(sent.elapsed());
    }
    latencies.sort();
    eprintln!(
        "R3 file, 128 B, one at a time: p50 {:?} p99 {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() * 99 / 100]
    );
    cluster.shutdown().await;
}

//! The seam to clustered JetStream: [`Cluster`], the one interface through which the `$JS.API`
//! handlers reach the meta group (is this server its leader, which streams are assigned where,
//! choose peers, propose a change), and [`StreamAssignment`], what the meta group hands back
//! to [`crate::JetStream::apply_stream_assignment`] once a change is applied.
//!
//! Implemented by nats-server's clustering layer (`cluster/meta.rs`) and installed with
//! [`crate::JetStream::set_cluster`]; without one, JetStream answers as a single server. This
//! file knows nothing of Raft, routes or peers' addresses: only server names and configs.
//!
//! [`StreamGroup`] is a replicated stream's Raft group on this server as the registry (which
//! starts the stream over it) and the handlers (who leads, the `cluster` block) see it.

use crate::{ReplicaMachine, Replicator};
use bytes::Bytes;
use jetstream_api::{ApiError, ClusterInfo, StreamConfig};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A proposal's outcome, resolved once the meta group applied it on this server (the leader).
pub type ProposalFuture = Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send>>;
/// What a [`StreamGroup`] operation resolves to.
pub type GroupFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the meta group holds about one stream, as the API handlers need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignedStream {
    /// The config as checked and filled by the meta leader.
    pub config: StreamConfig,
    /// The names of the servers the stream is placed on; the first serves it (R1: the only).
    pub servers: Vec<String>,
    /// When the stream was created, Unix nanoseconds.
    pub created: i64,
}

/// Which request a stream assignment answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamChange {
    Create,
    Update,
}

/// A change to propose for one stream: its (checked) config, the peers chosen by
/// [`Cluster::place`] (kept on update), and where the answer goes.
#[derive(Clone, Debug)]
pub struct StreamProposal {
    pub config: StreamConfig,
    pub change: StreamChange,
    pub servers: Vec<String>,
    pub reply: Bytes,
}

/// An applied stream assignment for a stream this server holds: create or update it, and
/// answer `reply` (set only while the request is fresh, not when the log is replayed).
#[derive(Clone, Debug)]
pub struct StreamAssignment {
    /// The account the stream belongs to.
    pub account: String,
    pub config: StreamConfig,
    pub change: StreamChange,
    pub created: i64,
    pub reply: Option<Bytes>,
    /// Whether the stream runs a Raft group: every stream of more than one replica, and one
    /// scaled down to a single replica (its group shrinks to one member and keeps running).
    pub replicated: bool,
}

/// The meta group as the `$JS.API` handlers see it.
pub trait Cluster: Send + Sync + 'static {
    /// The cluster's name (`cluster { name }` in STREAM.INFO).
    fn name(&self) -> String;
    /// Whether this server leads the meta group now.
    fn is_meta_leader(&self) -> bool;
    /// Whether this server leads the meta group within `timeout`: at once when it does; when
    /// it was just elected and a quorum has not confirmed it yet, once they do (a request
    /// arriving in between is answered then, not dropped).
    fn meta_leader_within(&self, timeout: std::time::Duration) -> GroupFuture<bool> {
        let _ = timeout;
        let leads = self.is_meta_leader();
        Box::pin(async move { leads })
    }
    /// Whether this server is the meta group's elected leader (openraft's), confirmed by a
    /// quorum or not yet ([`Cluster::is_meta_leader`] is the confirmed one).
    fn is_meta_elected(&self) -> bool {
        self.is_meta_leader()
    }
    /// Whether the meta group has no working leader from here (nats-server's `isLeaderless`:
    /// then the requests it would route through the meta group get 10008).
    fn meta_unavailable(&self) -> bool {
        false
    }
    /// Whether this server sees no working meta leader now, however briefly its meta group has
    /// run ([`Cluster::meta_unavailable`] is this once it has run its lost-quorum interval): a
    /// request that needs the meta group then waits for one (`api/meta_wait.rs`).
    fn meta_leader_missing(&self) -> bool {
        self.meta_unavailable()
    }
    /// Whether this server sees a working meta leader ([`Cluster::meta_leader_missing`] no
    /// longer holds) within `timeout`: at once when it does; else once it hears of one.
    fn meta_leader_seen_within(&self, timeout: Duration) -> GroupFuture<bool> {
        let _ = timeout;
        let seen = !self.meta_leader_missing();
        Box::pin(async move { seen })
    }
    /// The meta group as this server sees it, for the API's debug log lines (role, term,
    /// leader, whether it leads for the API).
    fn meta_view(&self) -> String {
        format!("leads {}", self.is_meta_leader())
    }
    /// The stream's assignment, if the meta group has one.
    fn stream(&self, name: &str) -> Option<AssignedStream>;
    /// Every assigned stream of the JetStream account, sorted by name.
    fn streams(&self) -> Vec<AssignedStream>;
    /// Chooses the servers for a new stream (placement, storage, the least-loaded servers), or
    /// nats-server's placement error. Leader only.
    fn place(&self, config: &StreamConfig) -> Result<Vec<String>, ApiError>;
    /// Proposes a stream assignment; resolves once applied here. Leader only.
    fn propose_stream(&self, proposal: StreamProposal) -> ProposalFuture;
    /// Proposes the stream's removal; the server holding it answers `reply`. Leader only.
    fn propose_stream_removal(&self, name: &str, reply: Bytes) -> ProposalFuture;
    /// The running Raft group of a replicated stream on this server; `None` for a stream of one
    /// replica or not assigned here.
    fn stream_group(&self, name: &str) -> Option<Arc<dyn StreamGroup>>;
    /// The group of the incarnation `created` of a replicated stream assigned here: the one
    /// running, or a new one (not started; the registry starts it with its replica) after
    /// stopping a group of an earlier incarnation. `None` when the meta group no longer assigns
    /// that incarnation here.
    fn open_stream_group(
        &self,
        name: &str,
        created: i64,
    ) -> GroupFuture<Option<Arc<dyn StreamGroup>>>;
    /// Stops the group of incarnation `created` of `name` and deletes its files (its stream was
    /// removed or replaced); a later incarnation's group stays.
    fn close_stream_group(&self, name: &str, created: i64) -> GroupFuture<()>;
    /// `$JS.API.STREAM.PEER.REMOVE`: takes the server named `peer` off the stream's peers and
    /// places the stream on a free server instead; resolves once the meta group applied it, or
    /// with nats-server's refusal (no such stream, not a member, no server free). Leader only.
    fn remove_stream_peer(&self, name: &str, peer: &str) -> ProposalFuture {
        let _ = (name, peer);
        Box::pin(async { Err(jetstream_api::errors::CLUSTER_REQUIRED.to_error()) })
    }
    /// STREAM.UPDATE changing `num_replicas`: the servers the stream keeps and gains for
    /// `replicas` (its current servers first, new ones placed as for a new stream; scaling down
    /// keeps the stream's leader when known here), or nats-server's placement error. Leader only.
    fn rescale(&self, name: &str, replicas: usize) -> Result<Vec<String>, ApiError> {
        let _ = (name, replicas);
        Err(jetstream_api::errors::STREAM_REPLICAS_NOT_UPDATABLE.to_error())
    }
    /// The account's JetStream began on this server after the meta group started (an account
    /// JWT pushed or updated at run time): the assignments already placed here for it are
    /// carried out, as at start.
    fn account_served(&self) {}
    /// The account's JetStream stopped on this server (an update disabled it) and its streams
    /// are closed: the Raft groups of its replicated streams here stop too; their files stay.
    fn account_stopped(&self) -> GroupFuture<()> {
        Box::pin(async {})
    }
}

/// A replica whose group has had no working leader for this long answers STREAM.INFO itself
/// (no leader named, every member listed), as a nats-server replica of a leaderless group does;
/// shorter gaps (an election) are left to the next leader.
pub const LEADERLESS_ANSWER: Duration = Duration::from_secs(2);

/// A replicated stream's Raft group on this server, as the stream and the API handlers see it.
/// Implemented by nats-server's `cluster/stream_group.rs`.
pub trait StreamGroup: Send + Sync + 'static {
    /// What the stream's ingest task proposes through and learns its leadership from.
    fn replicator(self: Arc<Self>) -> Arc<dyn Replicator>;
    /// Where the replica's store lives (emptied and rebuilt from the group at every start).
    fn store_root(&self) -> PathBuf;
    /// Starts the group over the replica's apply entry point.
    fn start(self: Arc<Self>, machine: ReplicaMachine) -> GroupFuture<Result<(), String>>;
    /// Whether this server leads the stream now (and has applied everything committed before).
    fn is_leader(&self) -> bool;
    /// Whether this server is the group's elected leader in its term, whether or not it leads
    /// for the stream now ([`StreamGroup::is_leader`]: not while the leadership is new and its
    /// log not yet applied, held, or without a quorum's word for the lost-quorum interval, a
    /// lapsed lease). Such a leader still leads the term until a vote elsewhere ends it, and is
    /// the one to act on a LEADER.STEPDOWN, as nats-server's raft leader is until it steps down.
    fn is_elected(&self) -> bool {
        self.is_leader()
    }
    /// When this server's leadership of the stream in the group's current term began (before
    /// [`StreamGroup::is_leader`] turned true); `None` while it is not elected
    /// ([`StreamGroup::is_elected`]). A request that reached this server earlier reached it
    /// while another led (or nobody did).
    fn leading_since(&self) -> Option<std::time::Instant> {
        None
    }
    /// How long this replica has known no working leader of its group (`None` while it leads or
    /// hears from one): the time since it last heard from its leader, since its quorum last
    /// acknowledged it (a leader cut off from the others), or since it last heard from any
    /// other member (no leader known), and never longer than since it heard any other member;
    /// `None` too while any other member is routed to this server (it may lead, or answer).
    fn leaderless_for(&self) -> Option<Duration>;
    /// Waits at most `timeout` for the group to have a leader: `Some(true)` once this server leads
    /// and a quorum acknowledged it (so it takes writes), `Some(false)` once another server has
    /// led steadily for a while (a leader seen only for a moment may lose the role before it
    /// answered), `None` when neither happened in time.
    fn wait_for_leader(self: Arc<Self>, timeout: Duration) -> GroupFuture<Option<bool>>;
    /// STREAM.INFO's `cluster` block, as nats-server fills it; `None` while the group is not
    /// running.
    fn cluster_info(&self) -> Option<ClusterInfo>;
    /// Hands leadership to another member (`preferred`, a server name, when given): resolves
    /// once the stream stopped taking publishes here (the handover goes on behind it, as
    /// nats-server answers once its node stepped down), or with why it cannot be (not the
    /// leader, no such member).
    fn step_down(self: Arc<Self>, preferred: Option<String>) -> GroupFuture<Result<(), ApiError>>;
    /// While held, this server's leadership is kept from the stream (it takes no publishes and
    /// runs no consumers, `is_leader` is false) though the group may elect it: a stream scaled
    /// up from one replica fills its new log from its old store first. Released with `false`.
    fn hold_leadership(&self, held: bool) {
        let _ = held;
    }
    /// While this server hands its leadership over (a stepdown answered, the transfer under
    /// way), nobody answers the stream's requests: a future resolving once they are answered
    /// again, here or by the successor (which has applied its election's entry, as far as this
    /// server can tell), or the handover was given up; bounded. `None` when no handover runs.
    /// The requests this server would have answered meanwhile are kept until then
    /// (`api/handover.rs`).
    fn handover(&self) -> Option<GroupFuture<()>> {
        None
    }
}

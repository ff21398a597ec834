//! JetStream for rnats: streams, consumers and the `$JS.API` handlers.
//!
//! JetStream is a *client of core routing*: it never touches sockets. The core server hands it a
//! [`Transport`] (publish into routing, internal subscriptions, interest checks) and a typed
//! [`JetStreamConfig`] parsed from `-js`/`-sd` and the `jetstream { ... }` config block, then calls
//! [`JetStream::start`]. This crate must not know about connections, the parser or the sublist.
//!
//! # Shape: a one-way stack (each layer imports only those below it)
//! - [`JetStream`] (`engine.rs`): the handle the server keeps (cheap `Clone`, an `Arc` inside):
//!   `start`, `banner_lines`, `jsz`, `varz`, `shutdown`.
//! - `api/`: `$JS.API.>` requests wait in two queues (admin, info) served by dedicated
//!   threads (`api/queue.rs`); admin requests run in arrival order (they must not race) on
//!   one thread, info requests on one per CPU. The
//!   handlers are functions over `api::Context`, one file per resource. `DIRECT.GET` is served
//!   by per-stream subscriptions.
//! - `registry/`: one per account: streams by name with their consumer sets;
//!   create/update/delete with the cross-stream checks (subject overlap through one index of
//!   all streams' subjects, cycles) and the account's limits and `max_bytes` reservations
//!   (`registry/limits.rs`); recovery at start.
//!   Callable without the API (it does not import it).
//! - `consumer/`: one task per consumer; its delivery state changes only through
//!   `consumer::apply` entries.
//! - `stream/`: a stream = config + store (`stream/store.rs`, the one place its lock is
//!   taken) + an ingest task fed by a bounded queue, the only writer, which changes the store
//!   only through `stream::apply` entries (the seam a replication log plugs into). Mirrors and
//!   sources find origins through `StreamLookup`; consumers are known to the stream only as
//!   `InterestHolder`s. `stream/storage.rs`: the on-disk layout, the config in the store's
//!   metadata blob.
//! - `cluster.rs`: the seam to clustered JetStream ([`Cluster`], implemented by the server's
//!   meta group); with one installed, `api/clustered.rs` answers each request on one server.
//! - Leaves: `level.rs`, `nuid.rs`, `subject.rs`, `time_format.rs`, `resources.rs`,
//!   `transport.rs`.
//!
//! Internal subscription handlers run on the publisher's task: they only enqueue work for the
//! task that owns the stream or consumer; they never block and never do I/O. ARCHITECTURE.md
//! ("Inside nats-jetstream") has the lock table and where each step happens.

mod api;
pub mod cluster;
mod consumer;
mod engine;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod jsz;
mod level;
mod nuid;
mod registry;
#[cfg(test)]
mod replica_tests;
mod resources;
mod stream;
mod subject;
#[cfg(test)]
mod test_transport;
#[cfg(test)]
mod tests;
mod time_format;
mod transport;

pub use cluster::{
    AssignedStream, Cluster, GroupFuture, ProposalFuture, StreamAssignment, StreamChange,
    StreamGroup, StreamProposal,
};
pub use engine::cluster_usage::{
    AccountUsage, ApiCounts, ConsumerCounts, RemoteUsage, StoredBytes, TIERS,
};
pub use engine::JetStream;
pub use error::JetStreamError;
pub use jetstream_api::AccountLimits;
pub use jsz::JszDetail;

/// An account JWT's `tiered_limits` by tier name (`R1`, `R3`); empty for an account with flat
/// (untiered) limits, the only kind a config file gives.
pub type TieredLimits = std::collections::BTreeMap<String, AccountLimits>;
pub use stream::replication::{
    Lease, NoLease, ProposeFuture, ReplicaMachine, ReplicationError, Replicator, SubmitFuture,
};
pub use transport::{Handler, Message, Transport};

use std::path::PathBuf;
use std::time::Duration;

/// When the file store fsyncs. nats-server's `sync_interval`: a duration (default 2 minutes) or
/// `always` (fsync before every PubAck, made cheap by group commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    Interval(Duration),
    Always,
}

impl Default for SyncPolicy {
    fn default() -> Self {
        SyncPolicy::Interval(Duration::from_secs(120))
    }
}

/// The `jetstream { ... }` block and the `-js`/`-sd` flags, typed. `None` limits mean "not set":
/// JetStream then picks nats-server's defaults (a share of memory and disk).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JetStreamConfig {
    pub enabled: bool,
    /// The parent directory; the store lives in `<store_dir>/jetstream`. `None`: under the OS
    /// temp dir (honouring TMPDIR), as nats-server does.
    pub store_dir: Option<PathBuf>,
    /// `max_mem` / `max_mem_store` / `max_memory_store`, bytes.
    pub max_memory: Option<i64>,
    /// `max_file` / `max_file_store`, bytes.
    pub max_store: Option<i64>,
    pub sync_interval: SyncPolicy,
    pub domain: Option<String>,
    pub strict: bool,
    /// `max_buffered_msgs`, `max_buffered_size`, `unique_tag` and other keys JetStream may use.
    pub unique_tag: Option<String>,
    /// `limits { batch { ... } }`.
    pub batch_limits: BatchLimits,
    /// `request_queue_limit`: `$JS.API` requests waiting in the API queue before all of them
    /// are dropped (nats-server's `JSDefaultRequestQueueLimit`, 10,000, when 0 or negative).
    pub request_queue_limit: i64,
    /// `info_queue_limit`: the same for the info queue (`request_queue_limit` when 0 or negative).
    pub info_queue_limit: i64,
}

/// nats-server's server-wide batch publish limits (`jetstream { limits { batch { ... } } }`).
/// Zero (or negative) means "not set": nats-server's default, which differs between atomic
/// and fast batches for the inflight bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchLimits {
    /// `max_inflight_per_stream`: open batches on one stream (atomic 50, fast 1000).
    pub max_inflight_per_stream: i64,
    /// `max_inflight_total`: open batches on the server (atomic 1000, fast 50 000).
    pub max_inflight_total: i64,
    /// `max_msgs`: messages in one atomic batch (1000); fast batches have no bound.
    pub max_msgs: i64,
    /// `timeout`: inactivity after which an open batch is abandoned (10 s).
    pub timeout: Duration,
}

/// One account JetStream serves: its name (its directory under `<store_dir>/jetstream`), core
/// routing in that account, and its JetStream limits (`-1`: none, the server's apply).
pub struct AccountSetup {
    pub name: String,
    pub transport: std::sync::Arc<dyn Transport>,
    pub limits: AccountLimits,
    /// The JWT's tiers when the account's limits are tiered: each stream is then held to the
    /// tier of its replica count (`R1`, `R3`; 10120 when the JWT gives none), and
    /// `$JS.API.INFO` reports usage per tier, as nats-server.
    pub tiers: TieredLimits,
}

/// Who this server is, for API responses, advisories and `/jsz`.
#[derive(Clone, Debug, Default)]
pub struct ServerIdentity {
    pub server_id: String,
    pub server_name: String,
    pub version: String,
}

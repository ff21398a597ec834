//! JetStream for rnats: streams, the `$JS.API` handlers and (later) consumers.
//!
//! JetStream is a *client of core routing*: it never touches sockets. The core server hands it a
//! [`Transport`] (publish into routing, internal subscriptions, interest checks) and a typed
//! [`JetStreamConfig`] parsed from `-js`/`-sd` and the `jetstream { ... }` config block, then calls
//! [`JetStream::start`]. This crate must not know about connections, the parser or the sublist.
//!
//! # Shape
//! - [`JetStream`] (`engine.rs`): the handle the server keeps (cheap `Clone`, an `Arc` inside):
//!   `start`, `banner_lines`, `jsz`, `varz`, `shutdown`.
//! - `api/`: one task serves `$JS.API.>` in arrival order (admin requests must not race);
//!   `DIRECT.GET` is served by per-stream subscriptions and reader tasks.
//! - `registry.rs`: streams by name; create/update/delete with the cross-stream checks (subject
//!   overlap, `max_bytes` reservations); recovery at start.
//! - `stream/`: a stream = config + store + an ingest task fed by a queue. Internal
//!   subscription handlers (which run on the publisher's task) only enqueue. The task drains
//!   its queue in batches: checks, `store_msg` per message, ONE `flush` (group commit), then the
//!   PubAcks. With `sync_interval: always` the flush hands the fsync to the store's sync pool
//!   (`flush_then`) and the PubAcks go out from its callback while the task stores the next batch.
//!   The queue is bounded (100k messages / 128 MiB, then `429` as nats-server); counters
//!   (`Nats-Incr`), rollups, TTLs, subject delete markers, republish and the input subject
//!   transform all happen on that task.
//! - `stream/mirror.rs` and `stream/sources.rs`: mirrors and sources of local streams follow the
//!   origin's new-message watch; a mirror copies under the origin's sequences, a source hands
//!   messages to ingest as publishes with a `Nats-Stream-Source` header (its position, recovered
//!   from the store at start). External ones are accepted and stay inactive.
//! - `storage.rs`: `<store_dir>/jetstream/$G/streams/<name>/` via nats-store's FileStore; the
//!   stream config rides in the store's metadata blob.
//!
//! # Design for consumers (the consumer issue plugs in here)
//! - Reading: `Stream::store` is `Arc<Mutex<Box<dyn StreamStore>>>`. The ingest task holds the
//!   lock only while it stores and flushes one batch; a consumer takes it briefly to
//!   `load_next(filter, seq)` / `num_pending`. Never hold it across an `.await`.
//! - Waking: `Stream::last_sequence` is a `tokio::sync::watch` of the last stored sequence,
//!   updated after each durable batch; consumers `subscribe()` and wait for changes.
//! - Interest: consumers register their filter subjects in `Stream::interest` (id -> filters);
//!   interest retention stores only what some registered consumer wants and counts the
//!   consumers in `consumer_count`.
//! - Acks and retention: interest/work-queue removal is a `StreamCommand::Remove { seq }` sent to
//!   the stream's queue, so it is ordered with publishes and purges.
//! - Consumer state: `StreamStore::consumer_store(name)` gives each consumer its persisted state.
//!
//! Internal subscription handlers run on the publisher's task: they only enqueue work for the
//! task that owns the stream or consumer; they never block and never do I/O.

mod advisories;
mod api;
mod level;
mod consumer;
mod engine;
mod error;
mod nuid;
mod registry;
mod resources;
mod storage;
mod stream;
mod subject;
#[cfg(test)]
mod test_transport;
#[cfg(test)]
mod tests;
mod time_format;
mod transport;

pub use engine::JetStream;
pub use error::JetStreamError;
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

/// Who this server is, for API responses, advisories and `/jsz`.
#[derive(Clone, Debug, Default)]
pub struct ServerIdentity {
    pub server_id: String,
    pub server_name: String,
    pub version: String,
}

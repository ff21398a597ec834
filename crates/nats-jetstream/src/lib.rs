//! JetStream for rnats: streams, consumers and the `$JS.API` handlers.
//!
//! JetStream is a *client of core routing*: it never touches sockets. The core server hands it a
//! [`Transport`] (publish into routing, internal subscriptions) and a typed [`JetStreamConfig`]
//! parsed from `-js`/`-sd` and the `jetstream { ... }` config block. Everything JetStream owns
//! (streams, consumers, stores) lives behind that interface, so this crate must not know about
//! connections, the parser or the sublist.
//!
//! Internal subscription handlers run on the publisher's task: they only enqueue work for the
//! task that owns the stream or consumer; they never block and never do I/O.

mod advisories;
mod api;
mod engine;
mod error;
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
}

/// Who this server is, for API responses, advisories and `/jsz`.
#[derive(Clone, Debug, Default)]
pub struct ServerIdentity {
    pub server_id: String,
    pub server_name: String,
    pub version: String,
}

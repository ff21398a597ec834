//! Store configuration: the storage-independent stream limits and the FileStore's own options.

use std::time::Duration;

/// What a stream does when a limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiscardPolicy {
    /// Remove the oldest messages to make room (nats-server default).
    #[default]
    Old,
    /// Reject the new message with a limit error.
    New,
}

/// How a FileStore keeps message bodies on disk (stream config `compression`). MemStore keeps
/// them as they are whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Bodies stored as published.
    #[default]
    None,
    /// `"s2"`: each record's headers and payload compressed (Snappy block format, which S2
    /// decoders read too) when that makes the record smaller. Records written before a change of
    /// setting stay as they are; readers handle both.
    S2,
}

/// Limits a store enforces, independent of where it keeps its bytes.
/// Negative numbers and `Duration::ZERO` mean "unlimited", as in nats-server's StreamConfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStoreConfig {
    /// Stream name (used in error messages and paths only).
    pub name: String,
    /// Maximum number of messages, -1 unlimited.
    pub max_msgs: i64,
    /// Maximum total bytes (as accounted by the store's `bytes`), -1 unlimited.
    pub max_bytes: i64,
    /// Maximum age of a message, zero unlimited.
    pub max_age: Duration,
    /// Maximum messages kept per subject, -1 (or 0) unlimited.
    pub max_msgs_per_subject: i64,
    /// Maximum headers+payload size of one message, -1 unlimited.
    pub max_msg_size: i32,
    /// What happens when `max_msgs` / `max_bytes` is reached.
    pub discard: DiscardPolicy,
    /// With [`DiscardPolicy::New`], also reject when one subject is at `max_msgs_per_subject`.
    pub discard_new_per_subject: bool,
    /// Whether per-message TTLs passed to `store_msg` are honoured (ignored when false).
    pub allow_msg_ttl: bool,
    /// How new records are kept on disk (FileStore only).
    pub compression: Compression,
}

impl Default for StreamStoreConfig {
    fn default() -> Self {
        StreamStoreConfig {
            name: String::new(),
            max_msgs: -1,
            max_bytes: -1,
            max_age: Duration::ZERO,
            max_msgs_per_subject: -1,
            max_msg_size: -1,
            discard: DiscardPolicy::Old,
            discard_new_per_subject: false,
            allow_msg_ttl: false,
            compression: Compression::None,
        }
    }
}

/// When the FileStore calls fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Every `flush` fsyncs (group commit: one fsync per batch). nats-server `sync_interval: always`.
    Always,
    /// `flush` writes to the OS; fsync happens when this much time passed since the last one.
    Interval(Duration),
}

impl Default for SyncPolicy {
    fn default() -> Self {
        SyncPolicy::Interval(Duration::from_secs(120))
    }
}

/// FileStore tuning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStoreOptions {
    /// fsync policy.
    pub sync: SyncPolicy,
    /// A block file is sealed and a new one started once it reaches this size.
    pub block_size: u64,
    /// Buffered (not yet written) record bytes that trigger a write even without `flush`.
    pub write_buffer_limit: usize,
    /// A new store (and a new consumer store under it) writes its files without fsyncing them:
    /// the owner runs the pending sync ([`crate::StreamStore::pending_creation`],
    /// [`crate::ConsumerStore::pending_creation`]) before it confirms the creation, off its
    /// serialising lock, so concurrent creations share their fsyncs; the store runs it itself
    /// before the first acknowledgement that relies on it. Off: every creation fsyncs inline
    /// before `open` / `set_config` returns.
    pub defer_creation_sync: bool,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions {
            sync: SyncPolicy::default(),
            block_size: 8 * 1024 * 1024,
            write_buffer_limit: 1024 * 1024,
            defer_creation_sync: false,
        }
    }
}

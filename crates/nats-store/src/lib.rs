//! nats-store: JetStream message storage.
//!
//! What lives here: the [`StreamStore`] trait (a stream's messages, limits and indexes), the
//! [`ConsumerStore`] trait (a consumer's delivered/ack state), and two implementations of each:
//! [`MemStore`] (memory only) and [`FileStore`] (one directory per stream, append-only block files
//! with per-record checksums, crash recovery, index snapshot on clean close).
//!
//! Who calls it: the JetStream stream task owns one store and drives it synchronously (store a batch,
//! `flush` once, then acknowledge). Consumers obtain their [`ConsumerStore`] from the stream's store.
//!
//! What it must not know: the wire protocol, JSON, tokio, the `$JS.API`. Configuration and metadata
//! that the server serialises (stream and consumer JSON) are opaque byte blobs here.
//!
//! How the owner drives a store:
//! - publish path: `store_msg` for each message of a batch, then one `flush()` (with
//!   `SyncPolicy::Always` that is one fsync for the batch), then send the PubAcks;
//! - a periodic timer calls `flush()` too (interval fsync happens inside it) and, when
//!   `next_expiry()` is due, `expire(now)` (max_age and per-message TTL);
//! - startup: scan the streams directory, `FileStore::read_metadata(dir)` gives back the blob the
//!   stream stored with `set_metadata` (its JSON config), then `FileStore::open(dir, limits, options)`
//!   and `consumer_names()` / `consumer_store(name)` for its consumers;
//! - shutdown: `close()` (writes the index snapshot so the next open reads no message data).
//!
//! Both stores share one engine (`engine::Store<B>`) that owns the in-memory index and every limit;
//! a backend only decides where record bytes live. That keeps MemStore and FileStore behaviour identical.

mod config;
mod consumer;
mod directory;
#[doc(hidden)]
pub mod engine;
mod error;
mod file;
mod filter;
#[doc(hidden)]
pub mod index;
mod memory;
mod subject_tree;
mod traits;
mod types;

pub use config::{Compression, DiscardPolicy, FileStoreOptions, StreamStoreConfig, SyncPolicy};
pub use consumer::{ConsumerState, MemConsumerStore, PendingDelivery, SequencePair};
pub use directory::check_store_directory;
pub use error::StoreError;
pub use file::{
    is_trash, remove_dir_soon, remove_leftover, ConsumerRecoveryReport, ConsumerRemoval,
    CreationSync, FileConsumerStore, FileStore, RecoveryReport,
};
pub use filter::subject_matches_filter;
pub use memory::MemStore;
pub use traits::{ConsumerStore, DurableCallback, StreamStore};
pub use types::{RemovedMessage, StoredMessage, StreamState, SubjectState, TTL_NEVER};

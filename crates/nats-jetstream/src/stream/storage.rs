//! Where stream stores live and how they are opened: `<store_dir>/jetstream/<account>/streams/<name>/`
//! (nats-server's layout; the functions here take the account's directory,
//! `<store_dir>/jetstream/<account>`), memory streams in memory. The stream
//! config and creation time are persisted through the store's opaque metadata blob, so a restart
//! recovers streams by scanning the streams directory.

use super::ingest_store_config;
use crate::SyncPolicy;
use jetstream_api::{StorageType, StreamConfig, Timestamp};
use nats_store::{CreationSync, MemStore, StoreError, StreamStore};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What we persist next to a stream's messages.
#[derive(Serialize, Deserialize)]
pub(crate) struct StreamMetadata {
    pub config: StreamConfig,
    pub created: Timestamp,
}

pub(crate) fn streams_directory(account_directory: &Path) -> PathBuf {
    account_directory.join("streams")
}

pub(crate) fn stream_directory(account_directory: &Path, name: &str) -> PathBuf {
    streams_directory(account_directory).join(name)
}

/// Open (creating when new) the store of a stream.
pub(crate) fn open_store(
    account_directory: &Path,
    config: &StreamConfig,
    sync: SyncPolicy,
) -> Result<Box<dyn StreamStore>, StoreError> {
    let limits = ingest_store_config(config);
    match config.storage {
        StorageType::Memory => Ok(Box::new(MemStore::new(limits))),
        StorageType::File => {
            let directory = stream_directory(account_directory, &config.name);
            let options = nats_store::FileStoreOptions {
                sync: match sync {
                    SyncPolicy::Always => nats_store::SyncPolicy::Always,
                    SyncPolicy::Interval(interval) => nats_store::SyncPolicy::Interval(interval),
                },
                // The registry syncs a new stream's (and consumer's) files after its admin lock
                // and before the creation is answered (`sync_created`).
                defer_creation_sync: true,
                ..Default::default()
            };
            file_store(&directory, limits, options)
        }
    }
}

fn file_store(
    directory: &Path,
    limits: nats_store::StreamStoreConfig,
    options: nats_store::FileStoreOptions,
) -> Result<Box<dyn StreamStore>, StoreError> {
    let store = nats_store::FileStore::open(directory, limits, options)?;
    let report = store.recovery_report();
    if !report.problems.is_empty() || report.truncated_bytes > 0 {
        tracing::warn!(directory = %directory.display(), ?report, "stream store repaired on open");
    }
    Ok(Box::new(store))
}

pub(crate) fn save_metadata(
    store: &mut dyn StreamStore,
    config: &StreamConfig,
    created: i64,
) -> Result<(), StoreError> {
    let metadata = StreamMetadata {
        config: config.clone(),
        created: Timestamp::from_unix_nanos(created),
    };
    let blob = serde_json::to_vec(&metadata).unwrap_or_default();
    store.set_metadata(&blob)
}

/// Names of the file streams found on disk.
pub(crate) fn stored_stream_names(account_directory: &Path) -> std::io::Result<Vec<String>> {
    let directory = streams_directory(account_directory);
    if !directory.is_dir() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&directory)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            if let Some(name) = entry.file_name().to_str() {
                if nats_store::is_trash(name) {
                    // A deleted stream a crash left behind: removed now, never recovered.
                    nats_store::remove_leftover(entry.path());
                } else {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Open a stream found on disk and read back its config.
pub(crate) fn recover_stream(
    account_directory: &Path,
    name: &str,
    sync: SyncPolicy,
) -> Result<(Box<dyn StreamStore>, StreamMetadata), String> {
    let placeholder = StreamConfig {
        name: name.to_string(),
        storage: StorageType::File,
        max_msgs: -1,
        max_bytes: -1,
        max_msgs_per_subject: -1,
        max_msg_size: -1,
        ..Default::default()
    };
    let mut store = open_store(account_directory, &placeholder, sync).map_err(|e| e.to_string())?;
    let metadata: StreamMetadata = serde_json::from_slice(store.metadata())
        .map_err(|error| format!("stream metadata unreadable: {error}"))?;
    store
        .update_config(ingest_store_config(&metadata.config))
        .map_err(|error| error.to_string())?;
    Ok((store, metadata))
}

/// Make a creation durable before it is confirmed: run what the store left pending
/// (`pending_creation`), on a blocking thread and outside the admin lock, so the fsyncs of
/// concurrent creations overlap (a journaling file system commits them together) instead of
/// queueing behind one lock. Nothing pending (memory storage, done already): no thread.
pub(crate) async fn sync_created(creation: Option<Arc<CreationSync>>) -> Result<(), StoreError> {
    let Some(creation) = creation.filter(|creation| !creation.is_done()) else {
        return Ok(());
    };
    tokio::task::spawn_blocking(move || creation.run())
        .await
        .unwrap_or_else(|error| {
            Err(StoreError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(error),
            })
        })
}

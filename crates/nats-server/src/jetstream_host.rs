//! JetStream as this server hosts it: started at start-up (`server::run`) or when a reload turns
//! it on (`reload/jetstream.rs`), in a cluster with its meta group (`cluster::start`), and
//! stopped when a reload turns it off, as nats-server's `enableJetStream` / `disableJetStream`:
//! its Raft leaderships handed to other voters first, then the meta group, the streams' groups
//! and the engine stopped (files kept). Turned on again, a new engine starts with the file's
//! settings (another `store_dir`, other limits), and in a cluster the server joins the meta group
//! again (the same member with the same store, a new one with another).
//!
//! The running engine and meta group sit in [`Slot`]s of the server, read by monitoring, the
//! system account's requests and the route INFO. Starts and stops queued by reloads run one
//! after another in the order the reloads asked for them ([`queue`]).

use std::future::Future;
use std::sync::Arc;

use nats_jetstream::{AccountSetup, JetStream, Transport};
use parking_lot::RwLock;

use crate::config::Options;
use crate::server::Server;

/// A value that may be set, replaced and taken while the server runs (the JetStream engine,
/// the meta group). Readers get a clone (an `Arc` inside), never a guard.
pub struct Slot<T> {
    value: RwLock<Option<T>>,
}

impl<T: Clone> Slot<T> {
    pub const fn new() -> Slot<T> {
        Slot {
            value: RwLock::new(None),
        }
    }

    pub fn get(&self) -> Option<T> {
        self.value.read().clone()
    }

    pub(crate) fn set(&self, value: T) {
        *self.value.write() = Some(value);
    }

    pub(crate) fn take(&self) -> Option<T> {
        self.value.write().take()
    }
}

impl<T: Clone> Default for Slot<T> {
    fn default() -> Slot<T> {
        Slot::new()
    }
}

/// `<store_dir>/jetstream`, as `JetStream::start_accounts` uses it.
pub(crate) fn store_root(options: &Options) -> std::path::PathBuf {
    options
        .jetstream
        .store_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("nats"))
        .join("jetstream")
}

/// Starts JetStream with `options`' settings for `accounts` (10039 in `refused`), and in a
/// cluster its meta group; logs the banner as nats-server. An error leaves JetStream off.
pub(crate) async fn start(
    server: &Arc<Server>,
    options: &Options,
    accounts: Vec<AccountSetup>,
    refused: Vec<(String, Arc<dyn Transport>)>,
) -> Result<(), String> {
    tracing::info!("Starting JetStream");
    let started = std::time::Instant::now();
    let store_root = store_root(options);
    // nats-server's check: a store it cannot write stops here, rather than running without
    // the streams.
    nats_store::check_store_directory(&store_root).map_err(|error| error.to_string())?;
    let jetstream = JetStream::start_accounts(
        options.jetstream.clone(),
        server.identity(),
        accounts,
        refused,
    )
    .await
    .map_err(|error| error.to_string())?;
    for line in jetstream.banner_lines() {
        tracing::info!("{line}");
    }
    server.jetstream.set(jetstream.clone());
    server.jetstream_changed();
    match crate::cluster::start(server, options, &store_root).await {
        Ok(Some(meta)) => server.meta.set(meta),
        Ok(None) => {}
        Err(error) => {
            server.jetstream.take();
            jetstream.shutdown().await;
            return Err(error);
        }
    }
    tracing::info!("Took {:?} to start JetStream", started.elapsed());
    Ok(())
}

/// Stops JetStream turned off by a reload: every Raft leadership held here handed to another
/// voter first (as lame duck mode does), then the meta group, the streams' groups and the
/// engine; the stream files stay. The server then runs without JetStream (`/jsz` disabled,
/// `$JS.API` left to the cluster's other servers, or unanswered on a single server).
pub(crate) async fn stop(server: &Server) {
    if let Some(meta) = server.meta.take() {
        let moved = meta.transfer_leaderships().await;
        if moved > 0 {
            tracing::info!("Transferred {moved} Raft leaderships");
        }
        meta.shutdown().await;
    }
    if let Some(jetstream) = server.jetstream.take() {
        tracing::info!("Initiating JetStream Shutdown...");
        jetstream.shutdown().await;
        tracing::info!("JetStream Shutdown");
    }
    server.jetstream_changed();
}

/// Runs `change` (a start or a stop) after every change queued before it has finished.
pub(crate) fn queue(server: &Server, change: impl Future<Output = ()> + Send + 'static) {
    let mut last = server.jetstream_changes.lock();
    let previous = last.take();
    *last = Some(tokio::spawn(async move {
        if let Some(previous) = previous {
            let _ = previous.await;
        }
        change.await;
    }));
}

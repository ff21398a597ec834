//! Replicated streams in the registry: start one over the Raft group the cluster layer hands in
//! (its store where the group says, emptied and refilled from the group's snapshot and log) and
//! register it as any stream, with its durable consumers replicated through the same group
//! (`consumer/replicated.rs`): their committed states are applied on every replica, and this
//! server runs their tasks only while it leads the stream. Called by `api/clustered.rs` when an
//! assignment of more than one replica is applied on this server; knows the group only through
//! [`StreamGroup`].

use super::Registry;
use crate::cluster::StreamGroup;
use crate::consumer::replicated::{self as replicated_consumers, ReplicatedConsumers};
use crate::consumer::{Consumers, Home};
use crate::stream::Stream;
use jetstream_api::{errors, ApiError, StreamConfig};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// How long a replica's creation waits for its directory's lock to be released.
const STORE_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
const STORE_RELEASE_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

impl Registry {
    /// Creates the replica of an assigned stream (`config` as the meta leader checked it) and
    /// starts its group; returns the stream and whether it was created (false: this
    /// incarnation already runs here).
    pub(crate) async fn create_replicated_stream(
        self: &Arc<Self>,
        config: &StreamConfig,
        created: i64,
        group: &Arc<dyn StreamGroup>,
    ) -> Result<(Arc<Stream>, bool), ApiError> {
        let _guard = self.admin_lock.lock().await;
        if self.closing() != super::Closing::Open {
            return Err(Self::refused_by_stop());
        }
        if let Some(existing) = self.get(&config.name) {
            if existing.created == created {
                return Ok((existing, false));
            }
            return Err(errors::STREAM_NAME_EXIST.to_error());
        }
        if super::overlaps_other_stream(self, config) {
            return Err(errors::STREAM_SUBJECT_OVERLAP.to_error());
        }
        self.check_account_limits(config, None)?;
        // The replica's directory may still be locked by the incarnation a moment ago stopped
        // (JetStream turned off and on again for the account: its group's state machine, which
        // holds the old store, is dropped after the group stops): waited for, bounded.
        let deadline = tokio::time::Instant::now() + STORE_RELEASE_WAIT;
        let (stream, mut machine) = loop {
            match Stream::start_replicated(
                config.clone(),
                created,
                &group.store_root(),
                self.config.sync_interval,
                self.ingest_context(),
                group.clone().replicator(),
            ) {
                Err(error)
                    if error.kind() == std::io::ErrorKind::WouldBlock
                        && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(STORE_RELEASE_RETRY).await;
                }
                started => break started.map_err(|error| errors::STREAM_CREATE.with_err(error))?,
            }
        };
        let replicas =
            ReplicatedConsumers::new(group.clone().replicator(), Arc::downgrade(&stream));
        machine.set_consumers(replicas.clone());
        if let Err(error) = group.clone().start(machine).await {
            stream.stop(false).await;
            return Err(errors::STREAM_CREATE.with_err(error));
        }
        self.reserve(&stream.config(), 1);
        let consumers =
            self.insert_with(stream.clone(), Consumers::replicated_by(replicas.clone()));
        self.on_stream_started(&stream, &consumers);
        self.follow_leadership(&stream, &consumers, &replicas, group);
        Ok((stream, true))
    }

    /// Runs the stream's replicated consumers here while this server leads the stream: started
    /// from their committed states when it takes the leadership (it has applied everything
    /// committed before its term then), stopped when it loses it or a new leadership begins
    /// (also one resumed in the same Raft term by a rebuilt group), before the admin lock is
    /// taken (`consumer::replicated::follow_leadership_change`). Ends with the stream.
    fn follow_leadership(
        self: &Arc<Self>,
        stream: &Arc<Stream>,
        consumers: &Arc<Consumers>,
        replicas: &Arc<ReplicatedConsumers>,
        group: &Arc<dyn StreamGroup>,
    ) {
        let mut leadership = group.clone().replicator().leadership();
        let registry = Arc::downgrade(self);
        let stream = Arc::downgrade(stream);
        let consumers = Arc::downgrade(consumers);
        let replicas: Weak<ReplicatedConsumers> = Arc::downgrade(replicas);
        tokio::spawn(async move {
            let mut leading = None;
            loop {
                let now = *leadership.borrow_and_update();
                let (Some(registry), Some(stream), Some(consumers), Some(replicas)) = (
                    registry.upgrade(),
                    stream.upgrade(),
                    consumers.upgrade(),
                    replicas.upgrade(),
                ) else {
                    return;
                };
                if stream.stopped.load(Ordering::Relaxed) {
                    return;
                }
                if now != leading {
                    let home = Home {
                        stream: &stream,
                        consumers: &consumers,
                        transport: &registry.transport,
                        domain: registry.config.domain.as_deref(),
                    };
                    replicated_consumers::follow_leadership_change(
                        &registry.admin_lock,
                        &home,
                        &replicas,
                        leading.is_some(),
                        now.is_some(),
                    )
                    .await;
                    leading = now;
                }
                drop((registry, stream, consumers, replicas));
                if leadership.changed().await.is_err() {
                    return;
                }
            }
        });
    }
}

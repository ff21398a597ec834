//! Replicated streams in the registry: start one over the Raft group the cluster layer hands in
//! (its store where the group says, emptied and refilled from the group's snapshot and log) and
//! register it as any stream. Called by `api/clustered.rs` when an assignment of more than one
//! replica is applied on this server; knows the group only through [`StreamGroup`].

use super::Registry;
use crate::cluster::StreamGroup;
use crate::stream::Stream;
use jetstream_api::{errors, ApiError, StreamConfig};
use std::sync::Arc;

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
        let (stream, machine) = Stream::start_replicated(
            config.clone(),
            created,
            &group.store_root(),
            self.config.sync_interval,
            self.ingest_context(),
            group.clone().replicator(),
        )
        .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        if let Err(error) = group.clone().start(machine).await {
            stream.stop(false).await;
            return Err(errors::STREAM_CREATE.with_err(error));
        }
        self.reserve(&stream.config(), 1);
        let consumers = self.insert(stream.clone());
        self.on_stream_started(&stream, &consumers);
        Ok((stream, true))
    }
}

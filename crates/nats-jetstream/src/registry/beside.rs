//! A single server's file stream creations beside one another (issue 21).
//!
//! The admin queue serves one request at a time, and a file stream's creation spends most of
//! its time in the file system (a directory and its files made, or a spare renamed in; on ext4
//! each new inode is a scan of the group's bitmap), so with many creations in flight the admin
//! thread was their bound while the other core idled. A plain one (file storage, one replica,
//! no mirror, no sources, first sequence 1, a new name, no subject overlapping another stream,
//! an account without stream-count or storage maximum) that conflicts with none in flight is
//! checked and admitted on the admin thread under the admin lock ([`Registry::admit_beside`]),
//! its reservation counted there, and its store is made on a blocking thread
//! ([`Registry::open_admitted`]); it joins the registry under the admin lock again
//! ([`Registry::finish_admitted`]) before its ticket is released. The account's other admin
//! requests wait until none is in flight (`api/queue.rs`), as for the meta leader's proposals
//! in flight (`api/creations.rs`, the same bookkeeping), so what they see does not change.

use super::{overlaps_other_stream, Closing, Registry};
use crate::api::creations::{Admission, Creations, Plainness, Ticket};
use crate::stream::{self, storage, Stream};
use jetstream_api::{errors, ApiError, StorageType, StreamConfig};
use nats_store::{CreationSync, StreamStore};
use std::sync::Arc;
use tokio::sync::watch;

/// A creation admitted beside the creations in flight: its store is made next, off the admin
/// thread.
pub(crate) struct Admitted {
    pub(crate) config: StreamConfig,
    pub(crate) created: i64,
    ticket: Ticket,
}

/// What [`Registry::admit_beside`] decided.
pub(crate) enum Beside {
    /// Admitted: open its store with [`Registry::open_admitted`], then [`Registry::finish_admitted`].
    Admitted(Box<Admitted>),
    /// Not plain (or its checks fail) and none in flight: the serial path, which answers as
    /// before.
    Serial,
    /// Wait for the creations in flight to change, then ask again.
    Wait(watch::Receiver<Vec<crate::api::creations::Creating>>),
}

impl Registry {
    /// Check `requested` and admit it beside the account's creations in flight when it is plain
    /// (see the module's doc). Checked under the admin lock, which a finishing creation takes
    /// to join the registry before it releases its ticket: a stream is either in the registry or
    /// in flight here, never neither.
    pub(crate) async fn admit_beside(
        self: &Arc<Self>,
        requested: &StreamConfig,
        pedantic: bool,
        creations: &Creations,
    ) -> Beside {
        let config = stream::check_and_fill(requested, pedantic).map(stream::with_static_metadata);
        let _guard = self.admin_lock.lock().await;
        let plain = config.as_ref().is_ok_and(|config| self.plain(config));
        let for_admission = config.unwrap_or_else(|_| requested.clone());
        let plainness = Plainness {
            depends: !plain,
            headroom: None,
        };
        match creations.admit(&for_admission, &plainness) {
            Admission::InFlight(ticket) => {
                // Counted now, so the creations admitted after it are checked against it.
                self.reserve(&for_admission, 1);
                Beside::Admitted(Box::new(Admitted {
                    config: for_admission,
                    created: crate::time_format::now_nanos(),
                    ticket,
                }))
            }
            Admission::Serial => Beside::Serial,
            Admission::Wait(changes) => Beside::Wait(changes),
        }
    }

    /// Whether a filled `config` may be created beside others: every check the serial path
    /// makes passes now, and none depends on a stream in flight (their names and subjects are
    /// `Creations::admit`'s to compare, their reservations are counted).
    fn plain(&self, config: &StreamConfig) -> bool {
        // Closed to creations (a stop began): the serial path answers the refusal.
        self.closing() == Closing::Open
            && config.storage == StorageType::File
            && config.replicas <= 1
            && config.mirror.is_none()
            && config.sources.is_empty()
            && config.first_seq <= 1
            && self.get(&config.name).is_none()
            && !overlaps_other_stream(self, config)
            && self
                .tier_limits(config.replicas)
                .is_ok_and(|(limits, tiered)| {
                    !tiered && limits.max_streams <= 0 && limits.max_storage < 0
                })
            && self.check_account_limits(config, None).is_ok()
    }

    /// Make the admitted stream's store and write its metadata: file system work, for a
    /// blocking thread.
    pub(crate) fn open_admitted(
        &self,
        config: &StreamConfig,
        created: i64,
    ) -> Result<Box<dyn StreamStore>, ApiError> {
        let mut store =
            storage::open_store(&self.account_directory, config, self.config.sync_interval)
                .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        storage::save_metadata(&mut *store, config, created)
            .and_then(|_| store.flush().map(|_| ()))
            .map_err(|error| errors::STREAM_CREATE.with_err(error))?;
        // The creation's fsyncs here, on this blocking thread, already off the admin lock: its
        // answer then needs no second blocking thread (`Context::answer_when_durable` finds the
        // creation done). A failure leaves it pending: the answer's own sync tries again and
        // reports it.
        if let Some(creation) = store.pending_creation() {
            let _ = creation.run();
        }
        Ok(store)
    }

    /// Start the admitted stream on its store and register it (its reservation released when
    /// it failed), then release its ticket. Once the registry's streams are stopped (a stop
    /// that did not wait for this creation, see [`Closing`]) the stream is not started: its
    /// store is closed and the creation refused (its directory stays, a stream the next start
    /// loads).
    pub(crate) async fn finish_admitted(
        self: &Arc<Self>,
        admitted: Box<Admitted>,
        store: Result<Box<dyn StreamStore>, ApiError>,
    ) -> Result<(Arc<Stream>, Option<Arc<CreationSync>>), ApiError> {
        let Admitted {
            config,
            created,
            ticket,
        } = *admitted;
        let guard = self.admin_lock.lock().await;
        let store = match store {
            Ok(mut store) if self.closing() == Closing::Stopped => {
                if let Err(error) = store.close() {
                    tracing::warn!(stream = %config.name, %error, "closing a store made during a stop");
                }
                Err(Self::refused_by_stop())
            }
            store => store,
        };
        let started = store.and_then(|store| {
            let pending = store.pending_creation();
            Stream::start(config.clone(), created, store, self.ingest_context())
                .map(|stream| (stream, pending))
                .map_err(|error| errors::STREAM_CREATE.with_err(error))
        });
        match &started {
            Ok((stream, _)) => {
                let consumers = self.insert(stream.clone());
                self.on_stream_started(stream, &consumers);
            }
            Err(_) => self.reserve(&config, -1),
        }
        drop(guard);
        drop(ticket);
        started
    }
}

//! What the ingest task does besides publishing: expiry (max_age, per-message TTL, subject
//! delete markers) and the stream commands (purge, message delete, mirror batches, config
//! update, stop). Each command first commits what the batch stored before it.

use super::super::apply::{next_position, Applied, StreamEntry};
use super::super::StreamCommand;
use super::Ingest;
use jetstream_api::errors;
use nats_store::StreamStore;
use std::borrow::Cow;
use std::time::Duration;

impl Ingest {
    pub(super) fn expire_due(&mut self) {
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.write();
        let now = crate::time_format::now_nanos();
        self.expire(&mut **store, now);
        self.fire_schedules(&mut **store, now);
        self.expire_batches();
        self.commit(&mut **store);
    }

    /// Remove what max_age and per-message TTLs say is due, leaving subject delete markers where
    /// the stream asks for them.
    pub(super) fn expire(&mut self, store: &mut dyn StreamStore, now: i64) {
        if store.next_expiry().is_none_or(|due| due > now) {
            return;
        }
        let removed = match self.apply(store, &StreamEntry::Expire { now }) {
            Ok(Applied::Expired(removed)) => removed,
            Ok(_) => Vec::new(),
            Err(error) => {
                tracing::error!(stream = %self.config.name, %error, "expiring messages failed");
                return;
            }
        };
        self.dirty = true;
        let marker_seconds = self.config.subject_delete_marker_ttl.0 / 1_000_000_000;
        if marker_seconds <= 0 {
            return;
        }
        let mut removed = removed;
        removed.sort_by_key(|message| message.seq);
        for message in removed {
            if self.markers.remove(&message.seq) {
                continue;
            }
            if !matches!(store.load_last(&message.subject), Ok(None)) {
                continue;
            }
            let header = format!(
                "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: {}\r\nNats-Rollup: sub\r\n\r\n",
                go_compat::duration::format(marker_seconds.saturating_mul(1_000_000_000))
            );
            let ttl = Some(Duration::from_secs(marker_seconds as u64));
            let (seq, timestamp) = next_position(store, now);
            let marker = StreamEntry::Message {
                seq,
                timestamp,
                subject: Cow::Borrowed(&message.subject),
                headers: Cow::Borrowed(header.as_bytes()),
                payload: Cow::Borrowed(&[]),
                ttl,
            };
            match self.apply(store, &marker) {
                Ok(_) => {
                    self.markers.insert(seq);
                }
                Err(error) => {
                    tracing::error!(stream = %self.config.name, %error, "placing a subject delete marker failed")
                }
            }
        }
    }

    /// Origin messages for a mirror: same sequence and time, without the batch and expected-*
    /// headers meant for the origin (as nats-server); sequences the origin no longer has become
    /// deleted ones here.
    fn store_mirrored(
        &mut self,
        store: &mut dyn StreamStore,
        messages: Vec<nats_store::StoredMessage>,
    ) {
        for message in messages {
            let last = store.state().last_seq;
            if message.seq <= last {
                continue;
            }
            if last > 0 && message.seq > last + 1 {
                let gap = StreamEntry::Skip {
                    seq: last + 1,
                    count: message.seq - last - 1,
                };
                if let Err(error) = self.apply(store, &gap) {
                    tracing::error!(stream = %self.config.name, %error, "mirror gap failed");
                    return;
                }
            }
            let headers = super::super::headers::without_origin_checks(&message.headers);
            let mirrored = StreamEntry::Message {
                seq: message.seq,
                timestamp: message.timestamp,
                subject: Cow::Borrowed(&message.subject),
                headers: Cow::Borrowed(headers.as_deref().unwrap_or(&message.headers)),
                payload: Cow::Borrowed(&message.payload),
                ttl: None,
            };
            if let Err(error) = self.apply(store, &mirrored) {
                tracing::error!(stream = %self.config.name, %error, "mirroring a message failed");
                return;
            }
        }
        self.stream.mirror_contact.store(
            crate::time_format::now_nanos(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// A non-publish command; true for Stop.
    pub(super) fn execute(&mut self, store: &mut dyn StreamStore, command: StreamCommand) -> bool {
        self.dirty = true;
        match command {
            StreamCommand::Publish(_) | StreamCommand::Sourced(_) => false,
            StreamCommand::Purge {
                filter,
                up_to_seq,
                keep,
                reply,
            } => {
                let purge = StreamEntry::Purge {
                    filter: Cow::Owned(filter),
                    up_to_seq,
                    keep,
                };
                let result = match self.apply(store, &purge) {
                    Ok(Applied::Purged(purged)) => Ok(purged),
                    Ok(_) => Ok(0),
                    Err(error) => Err(errors::STREAM_GENERAL.with_err(error)),
                };
                self.commit(store);
                self.answer_command(reply, result);
                false
            }
            StreamCommand::DeleteMessage { seq, erase, reply } => {
                let entry = if erase {
                    StreamEntry::Erase { seq }
                } else {
                    StreamEntry::Remove { seq }
                };
                let result = match self.apply(store, &entry) {
                    Ok(Applied::Removed(existed)) => Ok(existed),
                    Ok(_) => Ok(false),
                    Err(error) => Err(errors::STREAM_MSG_DELETE_FAILED.with_err(error)),
                };
                self.commit(store);
                self.answer_command(reply, result);
                false
            }
            StreamCommand::Mirror(messages) => {
                self.store_mirrored(store, messages);
                false
            }
            StreamCommand::Acked { seq } => {
                self.acked(store, seq);
                false
            }
            StreamCommand::InterestReleased => {
                self.retention.interest_released = true;
                false
            }
            StreamCommand::UpdateConfig { config, reply } => {
                let entry = StreamEntry::Config {
                    config: config.clone(),
                    created: self.stream.created,
                };
                let result = self
                    .apply(store, &entry)
                    .map(|_| ())
                    .map_err(|error| errors::STREAM_UPDATE.with_err(error));
                if result.is_ok() {
                    let schedules_turned_on =
                        config.allow_msg_schedules && !self.config.allow_msg_schedules;
                    self.set_config(*config);
                    if !self.config.allow_atomic_publish {
                        self.batches.clear();
                    }
                    if !self.config.allow_batch_publish {
                        self.fast_batches.clear();
                    }
                    if schedules_turned_on {
                        self.recover_schedules(store);
                    }
                }
                self.commit(store);
                self.answer_command(reply, result);
                false
            }
            StreamCommand::Stop { delete, reply } => {
                let result = if delete {
                    store.delete()
                } else {
                    store.close()
                };
                if let Err(error) = result {
                    tracing::error!(stream = %self.config.name, %error, "closing stream store failed");
                }
                if delete {
                    self.stream.release_usage();
                }
                let _ = reply.send(());
                true
            }
        }
    }
}

//! A store that cannot write (a full disk, a failed write): the stream refuses publishes with
//! nats-server's "store failed" error (503, 10077, the operating system's reason as text) until
//! a write succeeds again, and resumes by itself: every commit and a timer retry the write.
//!
//! What was stored in memory before the failure stays buffered in the store (the FileStore keeps
//! a failed write's records and writes them again from the same offset); the PubAcks of those
//! messages are held here and sent once the retried write (and sync, per policy) succeeds, so no
//! publisher hears "stored" for a message that is not on disk. Consumers are not woken for them
//! until then; reads of what was written before go on as usual.
//!
//! nats-server, for comparison: on ENOSPC it disables JetStream and answers nothing (publishers
//! time out); for other store errors it answers 10077 with the error text. Called by `mod.rs`
//! (`commit`, the timer) and `publish.rs` (the refusal).

use super::Ingest;
use bytes::Bytes;
use jetstream_api::{errors, ApiError};
use nats_store::{StoreError, StreamStore};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the task waits between retries when nothing else wakes it.
pub(super) const RETRY_INTERVAL: Duration = Duration::from_millis(250);

/// The state of a stream whose last write failed.
pub(super) struct WriteFailure {
    /// What publishes are refused with.
    pub error: ApiError,
    /// PubAcks of messages stored before the failure, sent once they are written.
    pub held_acks: Vec<(Bytes, Bytes)>,
    pub since: Instant,
    /// The last retry: at most one per [`RETRY_INTERVAL`] (a retry after a failed sync
    /// rewrites the active block).
    pub last_attempt: Instant,
}

/// The text a publisher sees: the operating system's reason, as Go prints it.
pub(super) fn failure_text(error: &StoreError) -> String {
    match error {
        StoreError::Io { source, .. } => {
            format!("failed to store message: {}", go_compat::errno_text(source))
        }
        other => format!("failed to store message: {other}"),
    }
}

/// A failed sync reported from a durability callback (a sync pool thread) to the task.
#[derive(Clone, Default)]
pub(super) struct FailedSync(Arc<Mutex<Option<StoreError>>>);

impl FailedSync {
    /// Record the failure (the first one is kept until the task takes it); returns the refusal
    /// the waiting publishers get. Logged once per failure.
    pub fn fail(&self, stream: &str, error: &StoreError) -> ApiError {
        let mut slot = self.0.lock();
        if slot.is_none() {
            tracing::error!(%stream, %error, "stream store sync failed: nothing since the last sync is acknowledged");
            *slot = Some(copy_error(error));
        }
        errors::STREAM_STORE_FAILED.with_err(failure_text(error))
    }
}

/// A store error as a value to keep (`StoreError` is not `Clone`: the I/O source is rebuilt).
fn copy_error(error: &StoreError) -> StoreError {
    match error {
        StoreError::Io { path, source } => StoreError::Io {
            path: path.clone(),
            source: match source.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(source.kind(), source.to_string()),
            },
        },
        other => StoreError::Corrupt(other.to_string()),
    }
}

/// The error replies for publishes whose messages were not made durable.
pub(super) fn refusals(
    stream: &str,
    acks: Vec<(Bytes, Bytes)>,
    refusal: &ApiError,
) -> Vec<(Bytes, Bytes)> {
    let response = jetstream_api::PubAck::error(stream.to_string(), refusal.clone());
    let payload = Bytes::from(jetstream_api::json::encode_response(&response));
    acks.into_iter()
        .map(|(reply, _)| (reply, payload.clone()))
        .collect()
}

impl Ingest {
    /// Take a sync failure reported by a durability callback: from now on publishes are
    /// refused until a forced sync succeeds.
    pub(super) fn take_failed_sync(&mut self) {
        let Some(error) = self.failed_sync.0.lock().take() else {
            return;
        };
        if self.write_failure.is_none() {
            self.write_failure = Some(WriteFailure {
                error: errors::STREAM_STORE_FAILED.with_err(failure_text(&error)),
                held_acks: Vec::new(),
                since: Instant::now(),
                last_attempt: Instant::now(),
            });
        }
    }

    /// The refusal while the store cannot write, if it cannot.
    pub(super) fn refused_while_failing(&self) -> Option<ApiError> {
        self.write_failure
            .as_ref()
            .map(|failure| failure.error.clone())
    }

    /// A write failed: hold `acks` (their messages stay buffered in the store) and refuse
    /// publishes until a retry succeeds. Logged once per failure, not per retry.
    pub(super) fn write_failed(&mut self, error: &StoreError, acks: Vec<(Bytes, Bytes)>) {
        match &mut self.write_failure {
            Some(failure) => failure.held_acks.extend(acks),
            None => {
                tracing::error!(
                    stream = %self.config.name,
                    %error,
                    "stream store cannot write: publishes are refused until a write succeeds"
                );
                self.write_failure = Some(WriteFailure {
                    error: errors::STREAM_STORE_FAILED.with_err(failure_text(error)),
                    held_acks: acks,
                    since: Instant::now(),
                    last_attempt: Instant::now(),
                });
            }
        }
    }

    /// Try the failed write again; on success the held PubAcks go out and publishing resumes.
    pub(super) fn retry_write(&mut self, store: &mut dyn StreamStore) {
        let Some(failure) = self.write_failure.take() else {
            return;
        };
        if failure.last_attempt.elapsed() < RETRY_INTERVAL {
            self.write_failure = Some(failure);
            return;
        }
        // The held acknowledgements come first: their messages were stored first.
        let mut acks = failure.held_acks;
        acks.append(&mut self.pending_acks);
        self.pending_acks = acks;
        let since = failure.since;
        // A forced flush: everything written and synced inline (after a failed sync the store
        // writes its unsynced bytes again first); the probe that the disk works again.
        if store.sync().is_err() {
            self.write_failure = Some(WriteFailure {
                error: failure.error,
                held_acks: std::mem::take(&mut self.pending_acks),
                since,
                last_attempt: Instant::now(),
            });
            return;
        }
        // Wakes the consumers for what the failed write held back; the held PubAcks go out.
        self.dirty = true;
        self.commit(store);
        match &mut self.write_failure {
            // Failed again after all: keep the first failure's time.
            Some(again) => again.since = since,
            None => tracing::info!(
                stream = %self.config.name,
                after = ?since.elapsed(),
                "stream store writes again: publishing resumed"
            ),
        }
    }

    /// The store error of one publish as its answer: limits refuse with their own text; an I/O
    /// failure (nothing was stored) also makes the stream refuse later publishes until a write
    /// succeeds.
    pub(super) fn store_failure(&mut self, error: StoreError) -> super::Outcome {
        match error {
            StoreError::MaxMessages
            | StoreError::MaxBytes
            | StoreError::MaxMessagesPerSubject
            | StoreError::MaxMessageSize => {
                super::Outcome::Refused(errors::STREAM_STORE_FAILED.with_err(error))
            }
            StoreError::Io { .. } => {
                let refusal = errors::STREAM_STORE_FAILED.with_err(failure_text(&error));
                self.write_failed(&error, Vec::new());
                super::Outcome::Refused(refusal)
            }
            other => {
                tracing::error!(stream = %self.config.name, error = %other, "storing a message failed");
                super::Outcome::Dropped
            }
        }
    }
}

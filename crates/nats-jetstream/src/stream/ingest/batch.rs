//! Atomic batch publish (ADR-50, `allow_atomic`): messages carrying `Nats-Batch-Id` and
//! `Nats-Batch-Sequence` are staged in memory, each answered with an empty reply, until the one
//! with `Nats-Batch-Commit: 1` (or `eob`, an end-of-batch marker that is not stored itself).
//! The commit checks every staged message as one unit (`staged_checks.rs`, nats-server's
//! `checkMsgHeadersPreClusteredProposal` with its staged diff: counters run on, a subject
//! written earlier in the batch blocks expected-sequence checks and rollups on it, discard-new
//! limits count the whole batch) and only then stores them all; its PubAck carries `batch` and
//! `count`. Any failure abandons the whole batch.
//!
//! Called by the ingest task (`mod.rs`) for client publishes with a batch id; it runs under the
//! store lock like every publish. Limits come from the server's `limits { batch { ... } }`,
//! each unset one nats-server 2.15's default: 10 s of inactivity, 1000 messages per batch,
//! 50 open batches per stream, 1000 on the server.

use super::super::headers::{self, PublishHeaders};
use super::staged_checks::StagedDiff;
use super::Ingest;
use crate::transport::Message;
use crate::BatchLimits;
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::advisory::{Advisory, AdvisoryBody};
use jetstream_api::{errors, ApiError};
use nats_store::StreamStore;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// A batch (atomic or fast) left alone this long is abandoned, unless `timeout` says otherwise.
const DEFAULT_BATCH_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_BATCH_SIZE: u64 = 1000;
const MAX_BATCH_ID_LENGTH: usize = 64;
const DEFAULT_MAX_INFLIGHT_PER_STREAM: usize = 50;
const DEFAULT_MAX_INFLIGHT_TOTAL: usize = 1000;

/// A configured bound, or `default` when the config leaves it unset (nats-server only honours
/// values above zero).
pub(super) fn configured_or(configured: i64, default: usize) -> usize {
    if configured > 0 {
        usize::try_from(configured).unwrap_or(usize::MAX)
    } else {
        default
    }
}

impl BatchLimits {
    /// The inactivity timeout of atomic and fast batches.
    pub(super) fn inactivity_timeout(&self) -> Duration {
        if self.timeout.is_zero() {
            DEFAULT_BATCH_TIMEOUT
        } else {
            self.timeout
        }
    }

    fn atomic_max_size(&self) -> u64 {
        configured_or(self.max_msgs, DEFAULT_MAX_BATCH_SIZE as usize) as u64
    }

    fn atomic_max_inflight_per_stream(&self) -> usize {
        configured_or(
            self.max_inflight_per_stream,
            DEFAULT_MAX_INFLIGHT_PER_STREAM,
        )
    }

    fn atomic_max_inflight_total(&self) -> usize {
        configured_or(self.max_inflight_total, DEFAULT_MAX_INFLIGHT_TOTAL)
    }
}

/// Open atomic batches on every stream of this process (nats-server's global inflight bound).
static INFLIGHT_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// One open batch: its messages in batch-sequence order.
pub(super) struct StagedBatch {
    messages: Vec<Message>,
    deadline: Instant,
}

impl StagedBatch {
    fn open(deadline: Instant, max_inflight_total: usize) -> Option<StagedBatch> {
        let previous = INFLIGHT_TOTAL.fetch_add(1, Ordering::Relaxed);
        if previous >= max_inflight_total {
            INFLIGHT_TOTAL.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(StagedBatch {
            messages: Vec::new(),
            deadline,
        })
    }
}

impl Drop for StagedBatch {
    fn drop(&mut self) {
        INFLIGHT_TOTAL.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A batch that times out after inactivity.
pub(super) trait Expiring {
    fn deadline(&self) -> Instant;
}

impl Expiring for StagedBatch {
    fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// A stream's open batches of one kind, by batch id.
pub(super) struct OpenBatches<T> {
    pub(super) open: HashMap<String, T>,
}

impl<T> Default for OpenBatches<T> {
    fn default() -> Self {
        OpenBatches {
            open: HashMap::new(),
        }
    }
}

impl<T: Expiring> OpenBatches<T> {
    /// Drop the batches whose inactivity timer ran out; their ids.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<String> {
        let expired: Vec<String> = self
            .open
            .iter()
            .filter(|(_, batch)| batch.deadline() <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.open.remove(id);
        }
        expired
    }

    /// When the next open batch times out.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(Expiring::deadline).min()
    }

    /// Abandon every open batch (publishing of this kind turned off).
    pub(super) fn clear(&mut self) {
        self.open.clear();
    }
}

/// The stream's open atomic batches.
pub(super) type AtomicBatches = OpenBatches<StagedBatch>;

const ABANDONED_ADVISORY_PREFIX: &str = "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED";

/// The body of a batch-abandoned advisory.
#[derive(serde::Serialize)]
struct BatchAbandoned {
    stream: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    domain: String,
    batch: String,
    reason: &'static str,
}

impl AdvisoryBody for BatchAbandoned {
    const TYPE: &'static str = "io.nats.jetstream.advisory.v1.stream_batch_abandoned";
}

/// How a batch message asks to commit.
#[derive(PartialEq, Eq)]
enum Commit {
    No,
    /// `Nats-Batch-Commit: 1`: this message is the last of the batch.
    Last,
    /// `Nats-Batch-Commit: eob`: the batch ends before this message, which is not stored.
    EndOfBatch,
    Invalid,
}

impl Ingest {
    /// One message of an atomic batch (nats-server's `processJetStreamAtomicBatchMsg`): the
    /// answer for its reply, if any (empty while staging, the PubAck or error at the commit).
    pub(super) fn stage_batch_message(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        batch_id: &str,
    ) -> Option<Bytes> {
        match self.stage(store, message, publish_headers, batch_id) {
            Ok(answer) => answer,
            Err(error) => Some(self.error_ack(error)),
        }
    }

    fn stage(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        batch_id: &str,
    ) -> Result<Option<Bytes>, ApiError> {
        self.check_batch_message(message)?;
        let header_block = message.headers.as_deref().unwrap_or(&[]);
        if !self.config.allow_atomic_publish {
            return Err(errors::ATOMIC_PUBLISH_DISABLED.to_error());
        }
        if batch_id.len() > MAX_BATCH_ID_LENGTH {
            return Err(errors::ATOMIC_PUBLISH_INVALID_BATCH_ID.to_error());
        }
        let Some(sequence) = publish_headers
            .batch_sequence
            .and_then(headers::parse_unsigned)
        else {
            return Err(errors::ATOMIC_PUBLISH_MISSING_SEQ.to_error());
        };
        let commit = match publish_headers.batch_commit {
            None => Commit::No,
            Some("1") => Commit::Last,
            Some("eob") => Commit::EndOfBatch,
            Some(_) => Commit::Invalid,
        };
        // The end-of-batch marker does not count towards the batch size.
        let size = if commit == Commit::EndOfBatch {
            sequence.saturating_sub(1)
        } else {
            sequence
        };
        let limits = self.context.batch_limits;
        let max_size = limits.atomic_max_size();
        let too_large = || errors::ATOMIC_PUBLISH_TOO_LARGE_BATCH.with(&[("size", &max_size)]);
        let now = Instant::now();
        let deadline = now + limits.inactivity_timeout();
        if self
            .batches
            .open
            .get(batch_id)
            .is_some_and(|batch| batch.deadline <= now)
        {
            self.batches.open.remove(batch_id);
            self.advise_abandoned(batch_id, "timeout");
        }
        if !self.batches.open.contains_key(batch_id) {
            if sequence != 1 {
                if size > max_size {
                    return Err(too_large());
                }
                return Err(errors::ATOMIC_PUBLISH_INCOMPLETE_BATCH.to_error());
            }
            if self.batches.open.len() >= limits.atomic_max_inflight_per_stream() {
                return Err(errors::ATOMIC_PUBLISH_TOO_MANY_INFLIGHT.to_error());
            }
            let Some(batch) = StagedBatch::open(deadline, limits.atomic_max_inflight_total())
            else {
                return Err(errors::ATOMIC_PUBLISH_TOO_MANY_INFLIGHT.to_error());
            };
            self.batches.open.insert(batch_id.to_string(), batch);
        }
        // From here on every refusal abandons the batch; most are advised (nats-server's reasons).
        let abandon = |ingest: &mut Ingest, error: ApiError, reason: Option<&'static str>| {
            ingest.batches.open.remove(batch_id);
            if let Some(reason) = reason {
                ingest.advise_abandoned(batch_id, reason);
            }
            Err(error)
        };
        if commit == Commit::Invalid {
            let invalid = errors::ATOMIC_PUBLISH_INVALID_BATCH_COMMIT.to_error();
            return abandon(self, invalid, None);
        }
        let mut message = message.clone();
        if publish_headers.required_api_level.is_some() {
            if !crate::level::required_level_met(Some(header_block)) {
                return abandon(
                    self,
                    errors::REQUIRED_API_LEVEL.to_error(),
                    Some("unsupported"),
                );
            }
            let stripped =
                headers::remove_headers(header_block, |name| name == b"Nats-Required-Api-Level");
            message.headers = Some(Bytes::from(stripped));
        }
        let Some(batch) = self.batches.open.get_mut(batch_id) else {
            return Err(errors::ATOMIC_PUBLISH_INCOMPLETE_BATCH.to_error());
        };
        batch.deadline = deadline;
        let expected = batch.messages.len() as u64 + 1;
        if sequence != expected || (sequence == 1 && commit == Commit::EndOfBatch) {
            let incomplete = errors::ATOMIC_PUBLISH_INCOMPLETE_BATCH.to_error();
            return abandon(self, incomplete, Some("incomplete"));
        }
        if size > max_size {
            return abandon(self, too_large(), Some("large"));
        }
        message.reply = None;
        if commit != Commit::EndOfBatch {
            batch.messages.push(message);
        }
        if commit == Commit::No {
            // An empty reply: staged, not yet stored.
            return Ok(Some(Bytes::new()));
        }
        let Some(batch) = self.batches.open.remove(batch_id) else {
            return Err(errors::ATOMIC_PUBLISH_INCOMPLETE_BATCH.to_error());
        };
        let mut messages = batch.messages.clone();
        drop(batch);
        if commit == Commit::EndOfBatch {
            // The last stored message gets the commit header the marker stood for.
            if let Some(last) = messages.last_mut() {
                let block = last.headers.as_deref().unwrap_or(&[]);
                last.headers = Some(Bytes::from(headers::append_header(
                    block,
                    "Nats-Batch-Commit",
                    "1",
                )));
            }
        }
        self.commit_batch(store, batch_id, &messages)
    }

    /// Drop the atomic and fast batches whose inactivity timer ran out.
    pub(super) fn expire_batches(&mut self) {
        let now = Instant::now();
        for id in self.batches.expire(now) {
            self.advise_abandoned(&id, "timeout");
        }
        self.fast_batches.expire(now);
    }

    /// `$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.<stream>`, when someone listens.
    fn advise_abandoned(&self, batch_id: &str, reason: &'static str) {
        let subject = format!("{ABANDONED_ADVISORY_PREFIX}.{}", self.config.name);
        if !self.context.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::nuid::next_id(),
            jetstream_api::Timestamp::now(),
            BatchAbandoned {
                stream: self.config.name.clone(),
                domain: self.context.domain.clone().unwrap_or_default(),
                batch: batch_id.to_string(),
                reason,
            },
        );
        self.context.transport.publish(Message {
            subject: Bytes::from(subject),
            reply: None,
            headers: None,
            payload: Bytes::from(jetstream_api::json::encode_response(&body)),
        });
    }

    /// What every batch message (atomic or fast) must pass on arrival: not sealed, resources
    /// left, within `max_msg_size`.
    pub(super) fn check_batch_message(&self, message: &Message) -> Result<(), ApiError> {
        if self.config.sealed {
            return Err(errors::STREAM_SEALED.to_error());
        }
        let header_block = message.headers.as_deref().unwrap_or(&[]);
        let size = crate::resources::message_size(
            self.config.storage,
            message.subject.len(),
            header_block.len(),
            message.payload.len(),
        );
        if let Some(refusal) =
            self.context
                .usage
                .refuses(self.config.storage, self.config.replicas, size)
        {
            return Err(refusal);
        }
        let max_size = self.config.max_msg_size;
        if max_size >= 0
            && (header_block.len() > max_size as usize
                || message.payload.len() > max_size as usize - header_block.len())
        {
            return Err(errors::STREAM_MESSAGE_EXCEEDS_MAXIMUM.to_error());
        }
        Ok(())
    }

    /// Check the whole batch, then store it: all of it, or (refused) none.
    fn commit_batch(
        &mut self,
        store: &mut dyn StreamStore,
        batch_id: &str,
        messages: &[Message],
    ) -> Result<Option<Bytes>, ApiError> {
        let mut diff = StagedDiff::default();
        let last_seq = store.state().last_seq;
        let mut checked = Vec::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            let Ok(subject) = std::str::from_utf8(&message.subject) else {
                return Err(errors::ATOMIC_PUBLISH_INCOMPLETE_BATCH.to_error());
            };
            let subject = self
                .transform_subject(subject)
                .unwrap_or_else(|| subject.to_string());
            let header_block = message.headers.as_deref().unwrap_or(&[]);
            let publish_headers = PublishHeaders::parse(header_block);
            if publish_headers.expected_last_msg_id.is_some() {
                return Err(errors::ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH
                    .with(&[("header", &"Nats-Expected-Last-Msg-Id")]));
            }
            let position = last_seq + index as u64;
            checked.push(self.check_staged(
                store,
                &mut diff,
                subject,
                message,
                &publish_headers,
                position,
            )?);
        }
        let count = checked.len();
        for (index, message) in checked.into_iter().enumerate() {
            let publish_headers = PublishHeaders::parse(&message.headers);
            let outcome = self.store_checked(
                store,
                &message.subject,
                &message.headers,
                &message.payload,
                &publish_headers,
                message.counted,
                false,
            );
            let last = index + 1 == count;
            match outcome {
                super::Outcome::Stored(seq) | super::Outcome::Counted(seq, _) if last => {
                    return Ok(Some(self.batch_ack(seq, batch_id, count)));
                }
                super::Outcome::Stored(_) | super::Outcome::Counted(..) => {}
                super::Outcome::Refused(error) if last => return Err(error),
                // As nats-server: a failure inside the commit ends it, and only the commit
                // message had a reply to answer on.
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The commit's PubAck: `{"stream":..,"seq":N,"batch":"id","count":C}`.
    pub(super) fn batch_ack(&self, seq: u64, batch_id: &str, count: usize) -> Bytes {
        let mut ack = BytesMut::with_capacity(self.ack_prefix.len() + batch_id.len() + 48);
        ack.put_slice(&self.ack_prefix);
        ack.put_slice(seq.to_string().as_bytes());
        ack.put_slice(b",\"batch\":");
        ack.put_slice(&jetstream_api::json::encode_response(batch_id));
        ack.put_slice(format!(",\"count\":{count}}}").as_bytes());
        ack.freeze()
    }

    pub(super) fn error_ack(&self, error: ApiError) -> Bytes {
        let response = jetstream_api::PubAck::error(self.config.name.clone(), error);
        Bytes::from(jetstream_api::json::encode_response(&response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_time_out_after_inactivity() {
        let mut batches = AtomicBatches::default();
        let now = Instant::now();
        let timeout = BatchLimits::default().inactivity_timeout();
        let batch = StagedBatch::open(now + timeout, usize::MAX).expect("below the global bound");
        batches.open.insert("b".to_string(), batch);
        assert_eq!(batches.next_deadline(), Some(now + timeout));
        batches.expire(now + timeout - Duration::from_millis(1));
        assert_eq!(batches.open.len(), 1);
        batches.expire(now + timeout);
        assert!(batches.open.is_empty());
        assert_eq!(batches.next_deadline(), None);
    }

    #[test]
    fn unset_limits_are_nats_server_defaults() {
        let unset = BatchLimits::default();
        assert_eq!(unset.inactivity_timeout(), Duration::from_secs(10));
        assert_eq!(unset.atomic_max_size(), 1000);
        assert_eq!(unset.atomic_max_inflight_per_stream(), 50);
        assert_eq!(unset.atomic_max_inflight_total(), 1000);
        let negative = BatchLimits {
            max_inflight_per_stream: -1,
            max_inflight_total: 0,
            max_msgs: -5,
            timeout: Duration::ZERO,
        };
        assert_eq!(negative.atomic_max_size(), 1000);
        assert_eq!(negative.atomic_max_inflight_per_stream(), 50);
        let set = BatchLimits {
            max_inflight_per_stream: 1,
            max_inflight_total: 2,
            max_msgs: 3,
            timeout: Duration::from_millis(500),
        };
        assert_eq!(set.inactivity_timeout(), Duration::from_millis(500));
        assert_eq!(set.atomic_max_size(), 3);
        assert_eq!(set.atomic_max_inflight_per_stream(), 1);
        assert_eq!(set.atomic_max_inflight_total(), 2);
    }
}

//! The checks an atomic batch runs at its commit, message by message, and a fast batch runs
//! on each message: nats-server's `checkMsgHeadersPreClusteredProposal` with its staged diff.
//! Counters run on through the batch, a subject the batch already writes blocks
//! expected-sequence checks and rollups on it, and discard-new limits count the whole batch.
//! Called by `batch.rs` and `fast_batch.rs` under the store lock.

use super::super::counter;
use super::super::headers::{self, MessageTtl, PublishHeaders};
use super::Ingest;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::{errors, ApiError, DiscardPolicy, StorageType};
use nats_store::StreamStore;
use std::collections::{HashMap, HashSet};

/// What the commit learns about the batch so far (nats-server's `batchStagedDiff`).
#[derive(Default)]
pub(super) struct StagedDiff {
    msg_ids: HashSet<String>,
    /// Running counters per subject.
    counters: HashMap<String, counter::CounterState>,
    /// Messages and bytes the batch writes per subject, and whether the last one is a schedule.
    inflight: HashMap<String, (u64, u64, bool)>,
    /// Subjects already checked with an expected last subject sequence, and the sequence.
    expected_per_subject: HashMap<String, u64>,
}

/// A batch message that passed the commit checks, possibly rewritten (counter body, rollup).
pub(super) struct Checked {
    pub subject: String,
    pub headers: Vec<u8>,
    pub payload: Bytes,
    pub counted: Option<String>,
}

impl Ingest {
    /// nats-server's `checkMsgHeadersPreClusteredProposal` for one staged message, in its order.
    /// `position`: the stream's last sequence as it will be just before this message.
    pub(super) fn check_staged(
        &self,
        store: &mut dyn StreamStore,
        diff: &mut StagedDiff,
        subject: String,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        position: u64,
    ) -> Result<Checked, ApiError> {
        let header_block = message.headers.as_deref().unwrap_or(&[]);
        let mut rewritten_headers: Option<Vec<u8>> = None;
        let mut increment = None;
        let mut is_schedule = false;
        if !header_block.is_empty() {
            if header_block.len() > super::MAX_HEADER_SIZE {
                return Err(errors::STREAM_HEADER_EXCEEDS_MAXIMUM.to_error());
            }
            increment = counter::check_increment(
                publish_headers,
                &message.payload,
                self.config.allow_msg_counter,
                false,
            )?;
            if let Some(expected) = publish_headers.expected_stream {
                if expected != self.config.name {
                    return Err(errors::STREAM_NOT_MATCH.to_error());
                }
            }
            if let Some(ttl) = publish_headers.ttl {
                match headers::parse_ttl(ttl) {
                    Ok(MessageTtl::None) => {}
                    _ if !self.config.allow_msg_ttl => {
                        return Err(errors::MESSAGE_TTL_DISABLED.to_error())
                    }
                    Err(()) => return Err(errors::MESSAGE_TTL_INVALID.to_error()),
                    Ok(_) => {}
                }
            }
            if let Some(id) = publish_headers.msg_id {
                if diff.msg_ids.contains(id) || self.stream.dedupe.lock().window.get(id).is_some() {
                    return Err(errors::ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE.to_error());
                }
                diff.msg_ids.insert(id.to_string());
            }
            if publish_headers.stream_source.is_some() {
                return Err(errors::MESSAGE_SOURCE_HDR_NOT_ALLOWED.to_error());
            }
        }
        if increment.is_none() && self.config.allow_msg_counter {
            return Err(errors::MESSAGE_INCR_MISSING.to_error());
        }
        let mut payload = message.payload.clone();
        let mut counted = None;
        if let Some(increment) = increment {
            let previous = match diff.counters.get(&subject) {
                Some(state) => state.clone(),
                None => counter::last_state(store, &subject)?,
            };
            let applied = counter::apply(
                previous,
                increment,
                None,
                &subject,
                header_block,
                &message.payload,
            )?;
            diff.counters.insert(subject.clone(), applied.state);
            payload = Bytes::from(applied.body);
            counted = Some(applied.total);
            rewritten_headers = applied.headers;
            self.check_sizes(
                rewritten_headers.as_deref().unwrap_or(header_block),
                &payload,
            )?;
        }
        if !header_block.is_empty() {
            self.check_staged_expectations(store, diff, &subject, publish_headers, position)?;
            let staged_schedule = publish_headers
                .scheduler
                .and_then(|scheduler| diff.inflight.get(scheduler))
                .map(|entry| entry.2);
            let check = self.check_schedule(
                store,
                &subject,
                header_block,
                publish_headers,
                staged_schedule,
            )?;
            is_schedule = check.is_schedule;
            if check.rewritten.is_some() {
                rewritten_headers = check.rewritten;
            }
            let rollup = match &rewritten_headers {
                Some(block) => PublishHeaders::parse(block).rollup.map(str::to_string),
                None => publish_headers.rollup.map(str::to_string),
            };
            if let Some(rollup) = rollup {
                self.check_staged_rollup(diff, &subject, &rollup)?;
            }
        }
        let headers = rewritten_headers.unwrap_or_else(|| header_block.to_vec());
        let size = match self.config.storage {
            StorageType::File => 22 + subject.len() + headers.len() + payload.len() + 8,
            StorageType::Memory => subject.len() + headers.len() + payload.len() + 16,
        } as u64;
        let subject_ops = {
            let entry = diff
                .inflight
                .entry(subject.clone())
                .or_insert((0, 0, false));
            entry.0 += 1;
            entry.1 += size;
            entry.2 = is_schedule;
            entry.0
        };
        if self.config.discard == DiscardPolicy::New {
            self.check_staged_limits(store, diff, &subject, &headers, subject_ops)?;
        }
        Ok(Checked {
            subject,
            headers,
            payload,
            counted,
        })
    }

    /// Expected last sequence (first message only) and expected last subject sequence (not on
    /// a subject the batch already writes).
    fn check_staged_expectations(
        &self,
        store: &mut dyn StreamStore,
        diff: &mut StagedDiff,
        subject: &str,
        publish_headers: &PublishHeaders<'_>,
        position: u64,
    ) -> Result<(), ApiError> {
        if let Some(expected) = publish_headers.expected_last_sequence {
            if headers::parse_sequence(expected) != position {
                return Err(errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &position)]));
            }
            if !diff.inflight.is_empty() {
                return Err(errors::STREAM_WRONG_LAST_SEQUENCE_CONSTANT.to_error());
            }
        }
        let Some(expected) = publish_headers.expected_last_subject_sequence else {
            if publish_headers
                .expected_last_subject_sequence_subject
                .is_some()
            {
                return Err(errors::STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID.to_error());
            }
            return Ok(());
        };
        let expected = headers::parse_sequence(expected);
        let check_subject = publish_headers
            .expected_last_subject_sequence_subject
            .unwrap_or(subject);
        if diff.inflight.contains_key(check_subject) {
            return Err(errors::STREAM_WRONG_LAST_SEQUENCE_CONSTANT.to_error());
        }
        if let Some(&known) = diff.expected_per_subject.get(check_subject) {
            if known != expected {
                return Err(errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &known)]));
            }
            return Ok(());
        }
        let last = match store.load_last(check_subject) {
            Ok(Some(message)) => Some(message.seq),
            Ok(None) | Err(nats_store::StoreError::NotFound) => None,
            Err(_) => Some(0),
        };
        let actual = last.unwrap_or(0);
        if actual != expected || (last.is_none() && expected != 0) {
            return Err(errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &actual)]));
        }
        diff.expected_per_subject
            .insert(check_subject.to_string(), actual);
        Ok(())
    }

    /// A rollup inside a batch: `sub` only on the subject's first message in the batch, `all`
    /// only as the batch's first message.
    fn check_staged_rollup(
        &self,
        diff: &StagedDiff,
        subject: &str,
        rollup: &str,
    ) -> Result<(), ApiError> {
        if !self.config.allow_rollup || self.config.deny_purge {
            return Err(errors::STREAM_ROLLUP_FAILED.with_err("rollup not permitted"));
        }
        match rollup {
            "sub" if diff.inflight.contains_key(subject) => {
                Err(errors::STREAM_ROLLUP_FAILED.with_err("batch rollup sub invalid"))
            }
            "all" if !diff.inflight.is_empty() => {
                Err(errors::STREAM_ROLLUP_FAILED.with_err("batch rollup all invalid"))
            }
            "sub" | "all" => Ok(()),
            other => {
                Err(errors::STREAM_ROLLUP_FAILED
                    .with_err(format!("rollup value invalid: {other:?}")))
            }
        }
    }

    /// Discard-new limits counted over what is stored plus the whole batch so far.
    fn check_staged_limits(
        &self,
        store: &mut dyn StreamStore,
        diff: &StagedDiff,
        subject: &str,
        header_block: &[u8],
        subject_ops: u64,
    ) -> Result<(), ApiError> {
        let (max_msgs, max_bytes) = (self.config.max_msgs, self.config.max_bytes);
        if max_msgs > 0 || max_bytes > 0 {
            let state = store.state();
            let (batch_msgs, batch_bytes) = diff
                .inflight
                .values()
                .fold((0, 0), |(msgs, bytes), (ops, size, _)| {
                    (msgs + ops, bytes + size)
                });
            if max_msgs > 0 && state.msgs + batch_msgs > max_msgs as u64 {
                return Err(errors::STREAM_STORE_FAILED.with_err("maximum messages exceeded"));
            }
            if max_bytes > 0 && state.bytes + batch_bytes > max_bytes as u64 {
                return Err(errors::STREAM_STORE_FAILED.with_err("maximum bytes exceeded"));
            }
        }
        let per_subject = self.config.max_msgs_per_subject;
        if self.config.discard_new_per_subject
            && per_subject > 0
            && PublishHeaders::parse(header_block).rollup.is_none()
        {
            let stored = store
                .subjects_state(subject)
                .get(subject)
                .map_or(0, |state| state.msgs);
            if stored + subject_ops > per_subject as u64 {
                return Err(
                    errors::STREAM_STORE_FAILED.with_err("maximum messages per subject exceeded")
                );
            }
        }
        Ok(())
    }
}

//! One publish through nats-server's checks (`processJetStreamMsg` order): expected-* headers,
//! duplicate window, counters, sizes, resources, interest, TTL, rollup, then the store and the
//! republish. Called by the batch loop in `mod.rs` with the store locked.

use super::super::apply::{next_position, StreamEntry};
use super::super::counter;
use super::super::headers::{self, MessageTtl, PublishHeaders};
use super::{Ingest, Origin, Outcome, MAX_HEADER_SIZE};
use crate::transport::Message;
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::{errors, ApiError, RetentionPolicy};
use nats_store::{StoreError, StreamStore, TTL_NEVER};
use std::borrow::Cow;
use std::time::Duration;

impl Ingest {
    /// nats-server's `processJetStreamMsg` for one message, in its order of checks.
    /// A sourced message (`Origin::Source`) skips what nats-server skips for one: the refusal
    /// of `Nats-Stream-Source` and the `Nats-TTL` checks (kept verbatim, applied only where the
    /// stream allows per-message TTLs).
    pub(super) fn publish(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        origin: Origin,
    ) -> Outcome {
        let sourced = origin == Origin::Source;
        let Ok(subject) = std::str::from_utf8(&message.subject) else {
            return Outcome::Dropped;
        };
        let transformed = self.transform_subject(subject);
        let subject = transformed.as_deref().unwrap_or(subject);
        if self.config.sealed {
            return Outcome::Refused(errors::STREAM_SEALED.to_error());
        }
        let header_block: &[u8] = message.headers.as_deref().unwrap_or(&[]);
        let increment = match counter::check_increment(
            publish_headers,
            &message.payload,
            self.config.allow_msg_counter,
            sourced,
        ) {
            Ok(increment) => increment,
            Err(error) => return Outcome::Refused(error),
        };
        let rewritten =
            match self.check_headers(store, subject, header_block, publish_headers, sourced) {
                Ok(rewritten) => rewritten,
                Err(error) => return error,
            };
        // A schedule gains `Nats-Rollup: sub`: everything after the checks sees the new block.
        let rewritten_headers = rewritten.as_deref().map(PublishHeaders::parse);
        let (header_block, publish_headers) = match (&rewritten, &rewritten_headers) {
            (Some(block), Some(parsed)) => (&block[..], parsed),
            _ => (header_block, publish_headers),
        };
        if self.config.allow_msg_counter && increment.is_none() {
            return Outcome::Refused(errors::MESSAGE_INCR_MISSING.to_error());
        }
        // A sourced increment on a stream without counters is stored as its origin wrote it.
        let counted = match increment.filter(|_| self.config.allow_msg_counter) {
            Some(increment) => {
                let source = publish_headers.stream_source.filter(|_| sourced);
                let applied = counter::last_state(store, subject).and_then(|previous| {
                    counter::apply(
                        previous,
                        increment,
                        source,
                        subject,
                        header_block,
                        &message.payload,
                    )
                });
                match applied {
                    Ok(counted) => Some(counted),
                    Err(error) => return Outcome::Refused(error),
                }
            }
            None => None,
        };
        let counted_headers = counted
            .as_ref()
            .and_then(|counted| counted.headers.as_deref())
            .map(|block| (block, PublishHeaders::parse(block)));
        let (header_block, publish_headers) = match &counted_headers {
            Some((block, parsed)) => (*block, parsed),
            None => (header_block, publish_headers),
        };
        let payload = match &counted {
            Some(counted) => &counted.body[..],
            None => &message.payload[..],
        };
        if let Err(error) = self.check_sizes(header_block, payload) {
            return Outcome::Refused(error);
        }
        let total = counted.as_ref().map(|counted| counted.total.clone());
        self.store_checked(
            store,
            subject,
            header_block,
            payload,
            publish_headers,
            total,
            sourced,
        )
    }

    /// The stream's input transform, which applies before anything else looks at the subject.
    pub(super) fn transform_subject(&self, subject: &str) -> Option<String> {
        self.transforms
            .input
            .as_ref()
            .and_then(|transform| transform.apply(subject))
    }

    /// `max_msg_size` and the 64 KiB header bound.
    pub(super) fn check_sizes(&self, header_block: &[u8], payload: &[u8]) -> Result<(), ApiError> {
        let max_size = self.config.max_msg_size;
        if max_size >= 0 {
            let max_size = max_size as usize;
            if header_block.len() > max_size || payload.len() > max_size - header_block.len() {
                return Err(errors::STREAM_MESSAGE_EXCEEDS_MAXIMUM.to_error());
            }
        }
        if header_block.len() > MAX_HEADER_SIZE {
            return Err(errors::STREAM_HEADER_EXCEEDS_MAXIMUM.to_error());
        }
        Ok(())
    }

    /// The part of `processJetStreamMsg` that runs for every message, checked or not (atomic
    /// batches run their checks before the commit): resources, interest, TTL, the store, the
    /// duplicate window, rollup and republish. `counted`: the new total on a counter stream.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn store_checked(
        &mut self,
        store: &mut dyn StreamStore,
        subject: &str,
        header_block: &[u8],
        payload: &[u8],
        publish_headers: &PublishHeaders<'_>,
        counted: Option<String>,
        sourced: bool,
    ) -> Outcome {
        let size = crate::resources::message_size(
            self.config.storage,
            subject.len(),
            header_block.len(),
            payload.len(),
        );
        if let Some(refusal) =
            self.context
                .usage
                .refuses(self.config.storage, self.config.replicas, size)
        {
            return Outcome::Refused(refusal);
        }
        if let Some(refusal) = self.refused_while_failing() {
            return Outcome::Refused(refusal);
        }
        let msg_id = publish_headers.msg_id;
        let rollup = publish_headers.rollup;
        if self.config.retention == RetentionPolicy::Interest
            && !self.stream.interest.wants(subject)
        {
            return self.skip_without_interest(store, msg_id, rollup, subject);
        }
        // A TTL raised to the subject delete marker TTL is stored as raised (nats-server
        // rewrites the header, at the end of the block).
        let mut raised_block: Option<Vec<u8>> = None;
        let ttl = match publish_headers.ttl.map(headers::parse_ttl) {
            None | Some(Ok(MessageTtl::None)) => None,
            Some(Ok(MessageTtl::Never)) => Some(TTL_NEVER),
            Some(Ok(MessageTtl::Seconds(seconds))) => {
                let minimum = (self.config.subject_delete_marker_ttl.0 / 1_000_000_000) as u64;
                if minimum > seconds && self.config.max_msgs_per_subject != 1 {
                    let without = headers::remove_headers(header_block, |name| name == b"Nats-TTL");
                    raised_block = Some(headers::append_header(
                        &without,
                        "Nats-TTL",
                        &minimum.to_string(),
                    ));
                    Some(Duration::from_secs(minimum))
                } else {
                    Some(Duration::from_secs(seconds))
                }
            }
            Some(Err(())) if sourced => None,
            Some(Err(())) => return Outcome::Refused(errors::MESSAGE_TTL_INVALID.to_error()),
        };
        let header_block = raised_block.as_deref().unwrap_or(header_block);
        let (seq, timestamp) = next_position(store, crate::time_format::now_nanos());
        let entry = StreamEntry::Message {
            seq,
            timestamp,
            subject: Cow::Borrowed(subject),
            headers: Cow::Borrowed(header_block),
            payload: Cow::Borrowed(payload),
            ttl,
        };
        let stored = match self.apply(store, &entry) {
            // A rollup may pass a discard-new-per-subject limit: it is about to purge the very
            // messages that hold the subject at its limit (nats-server lets it through).
            Err(StoreError::MaxMessagesPerSubject) if rollup.is_some() => {
                let filter = if rollup == Some("all") { "" } else { subject };
                let purge = StreamEntry::Purge {
                    filter: Cow::Borrowed(filter),
                    up_to_seq: 0,
                    keep: 0,
                };
                self.apply(store, &purge)
                    .and_then(|_| self.apply(store, &entry))
            }
            other => other,
        };
        if let Err(error) = stored {
            return self.store_failure(error);
        }
        self.dirty = true;
        self.stream.dedupe.lock().stored(msg_id, seq, timestamp);
        if let Some(rollup) = rollup {
            self.apply_rollup(store, subject, rollup, 1);
        }
        self.purge_fired_schedule(store, publish_headers);
        self.track_schedule(subject, publish_headers, seq, timestamp);
        self.republish(store, subject, header_block, payload, seq, timestamp);
        match counted {
            Some(total) => Outcome::Counted(seq, total),
            None => Outcome::Stored(seq),
        }
    }

    /// The header checks, each answering with nats-server's error. Ok(Some(block)): the
    /// header block as it is to be stored (a schedule gains its rollup).
    fn check_headers(
        &self,
        store: &mut dyn StreamStore,
        subject: &str,
        header_block: &[u8],
        publish_headers: &PublishHeaders<'_>,
        sourced: bool,
    ) -> Result<Option<Vec<u8>>, Outcome> {
        let refuse = |error: ApiError| Err(Outcome::Refused(error));
        if let Some(expected) = publish_headers.expected_stream {
            if expected != self.config.name {
                return refuse(errors::STREAM_NOT_MATCH.to_error());
            }
        }
        if let Some(ttl) = publish_headers.ttl.filter(|_| !sourced) {
            let has_ttl = !matches!(headers::parse_ttl(ttl), Ok(MessageTtl::None) | Err(()));
            if has_ttl && !self.config.allow_msg_ttl {
                return refuse(errors::MESSAGE_TTL_DISABLED.to_error());
            }
        }
        if let Some(expected) = publish_headers.expected_last_subject_sequence {
            let expected = headers::parse_sequence(expected);
            let check_subject = publish_headers
                .expected_last_subject_sequence_subject
                .unwrap_or(subject);
            let last = match store.load_last(check_subject) {
                Ok(Some(message)) => Some(message.seq),
                Ok(None) | Err(StoreError::NotFound) => None,
                Err(_) => Some(0),
            };
            let actual = last.unwrap_or(0);
            if last.is_none() && expected == 0 {
                // No message on the subject and none expected.
            } else if actual != expected || last.is_none() {
                return refuse(errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &actual)]));
            }
        } else if publish_headers
            .expected_last_subject_sequence_subject
            .is_some()
        {
            return refuse(errors::STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID.to_error());
        }
        if let Some(expected) = publish_headers.expected_last_sequence {
            let last = store.state().last_seq;
            if headers::parse_sequence(expected) != last {
                return refuse(errors::STREAM_WRONG_LAST_SEQUENCE.with(&[("seq", &last)]));
            }
        }
        let mut rewritten = None;
        if !sourced {
            match self.check_schedule(store, subject, header_block, publish_headers, None) {
                Ok(check) => rewritten = check.rewritten,
                Err(error) => return refuse(error),
            }
        }
        if publish_headers.stream_source.is_some() && !sourced {
            return refuse(errors::MESSAGE_SOURCE_HDR_NOT_ALLOWED.to_error());
        }
        if let Some(id) = publish_headers.msg_id {
            if self.config.mirror.is_none() {
                if let Some(seq) = self.stream.dedupe.lock().window.get(id) {
                    return Err(Outcome::Duplicate(seq));
                }
            }
        }
        if let Some(expected) = publish_headers.expected_last_msg_id {
            let last_msg_id = self.stream.dedupe.lock().last_msg_id.clone();
            if expected != last_msg_id {
                return refuse(errors::STREAM_WRONG_LAST_MSG_ID.with(&[("id", &last_msg_id)]));
            }
        }
        if let Some(rollup) = publish_headers.rollup {
            if (!self.config.allow_rollup || self.config.deny_purge) && !sourced {
                return refuse(errors::STREAM_ROLLUP_FAILED.with_err("rollup not permitted"));
            }
            if rollup != "sub" && rollup != "all" {
                return refuse(
                    errors::STREAM_ROLLUP_FAILED
                        .with_err(format!("rollup value invalid: {rollup:?}")),
                );
            }
        }
        Ok(rewritten)
    }

    /// Interest retention with nobody interested: the sequence is used, nothing is kept.
    fn skip_without_interest(
        &mut self,
        store: &mut dyn StreamStore,
        msg_id: Option<&str>,
        rollup: Option<&str>,
        subject: &str,
    ) -> Outcome {
        let seq = store.state().last_seq + 1;
        if let Err(error) = self.apply(store, &StreamEntry::Skip { seq, count: 1 }) {
            return self.store_failure(error);
        }
        self.dirty = true;
        self.stream
            .dedupe
            .lock()
            .stored(msg_id, seq, crate::time_format::now_nanos());
        if let Some(rollup) = rollup {
            self.apply_rollup(store, subject, rollup, 0);
        }
        Outcome::Stored(seq)
    }

    fn apply_rollup(
        &mut self,
        store: &mut dyn StreamStore,
        subject: &str,
        rollup: &str,
        keep: u64,
    ) {
        // A sourced message's rollup is kept as a header but purges only where rollups are
        // allowed (client rollups were refused earlier otherwise).
        if !self.config.allow_rollup || self.config.deny_purge {
            return;
        }
        let filter = match rollup {
            "sub" => subject,
            "all" => "",
            _ => return,
        };
        let purge = StreamEntry::Purge {
            filter: Cow::Borrowed(filter),
            up_to_seq: 0,
            keep,
        };
        if let Err(error) = self.apply(store, &purge) {
            tracing::error!(stream = %self.config.name, %error, "rollup purge failed");
        }
    }

    /// A schedule's last firing (`Nats-Schedule-Next: purge`) removes the schedule, where
    /// rollups are allowed (nats-server's `processJetStreamMsgWithRollup`).
    fn purge_fired_schedule(
        &mut self,
        store: &mut dyn StreamStore,
        publish_headers: &PublishHeaders<'_>,
    ) {
        if publish_headers.schedule_next != Some("purge")
            || !self.config.allow_rollup
            || self.config.deny_purge
        {
            return;
        }
        if let Some(scheduler) = publish_headers.scheduler {
            let purge = StreamEntry::Purge {
                filter: Cow::Borrowed(scheduler),
                up_to_seq: 0,
                keep: 0,
            };
            if let Err(error) = self.apply(store, &purge) {
                tracing::error!(stream = %self.config.name, %error, "purging a fired schedule failed");
            }
        }
    }

    /// `republish`: the stored message again, on the transformed subject, with the stream's
    /// bookkeeping headers.
    fn republish(
        &self,
        store: &mut dyn StreamStore,
        subject: &str,
        header_block: &[u8],
        payload: &[u8],
        seq: u64,
        timestamp: i64,
    ) {
        let Some(republish) = &self.config.republish else {
            return;
        };
        let Some(destination) = self
            .transforms
            .republish
            .as_ref()
            .and_then(|transform| transform.apply(subject))
        else {
            return;
        };
        let last_on_subject = match store.load_prev(subject, seq.saturating_sub(1)) {
            Ok(Some(message)) if seq > 1 => message.seq,
            _ => 0,
        };
        let mut block = BytesMut::new();
        if header_block.is_empty() {
            block.put_slice(b"NATS/1.0\r\n");
        } else {
            block.put_slice(&header_block[..header_block.len().saturating_sub(2)]);
        }
        let time = crate::time_format::rfc3339_from_nanos(timestamp);
        block.put_slice(
            format!(
                "Nats-Stream: {}\r\nNats-Subject: {subject}\r\nNats-Sequence: {seq}\r\nNats-Time-Stamp: {time}\r\nNats-Last-Sequence: {last_on_subject}\r\n",
                self.config.name
            )
            .as_bytes(),
        );
        let body = if republish.headers_only {
            block.put_slice(format!("Nats-Msg-Size: {}\r\n", payload.len()).as_bytes());
            Bytes::new()
        } else {
            Bytes::copy_from_slice(payload)
        };
        block.put_slice(b"\r\n");
        self.context.transport.publish(Message {
            subject: Bytes::from(destination),
            reply: None,
            headers: Some(block.freeze()),
            payload: body,
        });
    }
}

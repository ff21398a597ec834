//! Fast batch publish (`allow_batched`, nats-server 2.14+): the batch rides in the reply
//! subject, `<prefix>.<batch id>.<flow>.<gap mode>.<batch seq>.<op>.$FI` (op 0 start,
//! 1 append, 2 commit, 3 commit with an end-of-batch marker, 4 ping). Unlike an atomic batch,
//! each message is checked and stored as it arrives; the publisher hears flow-control acks
//! (`{"type":"ack","seq":N,"msgs":M}`, every M stored messages, M adjusted to how many fast
//! batches share the stream), gap reports (`{"type":"gap",...}`), per-message errors
//! (`{"type":"err",...}`) and, at the commit, a PubAck with `batch` and `count`.
//!
//! Called by the ingest task (`mod.rs`) for client publishes whose reply ends in `.$FI`. The
//! task stores each message before it reads the next, so nothing is ever pending between
//! "checked" and "stored" as in nats-server's replicated path.

use super::super::headers::{self, PublishHeaders};
use super::batch::{configured_or, Expiring, OpenBatches};
use super::staged_checks::StagedDiff;
use super::Ingest;
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::{errors, ApiError};
use nats_store::StreamStore;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::time::Instant;

const REPLY_SUFFIX: &[u8] = b".$FI";
const MAX_BATCH_ID_LENGTH: usize = 64;
/// Defaults when `limits { batch { ... } }` leaves the inflight bounds unset (the same keys
/// as for atomic batches, with larger defaults).
const DEFAULT_MAX_INFLIGHT_PER_STREAM: usize = 1000;
const DEFAULT_MAX_INFLIGHT_TOTAL: usize = 50_000;
/// The most messages between two flow-control acks.
const MAX_ACK_EVERY: u16 = 500;

static INFLIGHT_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// What the reply subject of one fast batch message says.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct FastOperation {
    id: String,
    seq: u64,
    flow: u16,
    gap_ok: bool,
    ping: bool,
    commit: bool,
    end_of_batch: bool,
}

/// Whether a reply subject belongs to a fast batch at all.
pub(super) fn is_fast_reply(reply: &[u8]) -> bool {
    reply.len() > REPLY_SUFFIX.len() && reply.ends_with(REPLY_SUFFIX)
}

/// nats-server's `getFastBatch` for a reply ending in `.$FI`; None: the pattern is invalid.
pub(super) fn parse_fast_reply(reply: &str) -> Option<FastOperation> {
    let rest = reply.strip_suffix(".$FI")?;
    let mut tokens = rest.rsplitn(6, '.');
    let operation = signed(tokens.next()?);
    if !(0..=4).contains(&operation) {
        return None;
    }
    let seq =
        headers::parse_unsigned(tokens.next()?).filter(|seq| *seq != 0 && *seq != u64::MAX)?;
    let end_of_batch = operation == 3;
    if (seq == 1 && end_of_batch) || (operation == 0 && seq != 1) || (operation == 1 && seq <= 1) {
        return None;
    }
    let gap_ok = match tokens.next()? {
        "fail" => false,
        "ok" => true,
        _ => return None,
    };
    let flow = match signed(tokens.next()?) {
        flow if flow <= 0 => 10,
        flow => flow.min(u16::MAX as i64) as u16,
    };
    let id = tokens.next()?;
    // The batch id is a token after a prefix: a reply without one has no batch.
    tokens.next()?;
    Some(FastOperation {
        id: id.to_string(),
        seq,
        flow,
        gap_ok,
        ping: operation == 4,
        commit: operation == 2 || end_of_batch,
        end_of_batch,
    })
}

/// nats-server's `parseInt64`: digits only, anything else is -1.
fn signed(text: &str) -> i64 {
    headers::parse_unsigned(text)
        .and_then(|value| i64::try_from(value).ok())
        .unwrap_or(-1)
}

/// One open fast batch.
pub(super) struct FastBatch {
    /// Highest batch sequence received.
    last: u64,
    /// Highest batch sequence stored (or skipped as a duplicate).
    persisted: u64,
    /// Batch sequence the last flow-control ack named.
    flow_seq: u64,
    /// Stream sequence of the last stored message.
    stream_seq: u64,
    ack_every: u16,
    client_max_ack_every: u16,
    gap_ok: bool,
    commit: bool,
    deadline: Instant,
}

impl Drop for FastBatch {
    fn drop(&mut self) {
        INFLIGHT_TOTAL.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Expiring for FastBatch {
    fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// The stream's open fast batches.
pub(super) type FastBatches = OpenBatches<FastBatch>;

/// `{"type":"ack","seq":N,"msgs":M}`
fn flow_ack(seq: u64, messages: u16) -> Bytes {
    Bytes::from(format!(r#"{{"type":"ack","seq":{seq},"msgs":{messages}}}"#))
}

/// `{"type":"gap","last_seq":A,"seq":B}`
fn gap_report(expected: u64, current: u64) -> Bytes {
    Bytes::from(format!(
        r#"{{"type":"gap","last_seq":{expected},"seq":{current}}}"#
    ))
}

impl Ingest {
    /// One fast batch message (nats-server's `processJetStreamFastBatchMsg` on a single server).
    pub(super) fn fast_batch_message(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        reply: Bytes,
    ) {
        let operation = std::str::from_utf8(&reply).ok().and_then(parse_fast_reply);
        if let Err(error) = self.fast_batch_step(store, message, publish_headers, operation, &reply)
        {
            if !self.config.no_ack {
                let answer = self.error_ack(error);
                self.pending_acks.push((reply, answer));
            }
        }
    }

    fn answer(&mut self, reply: &Bytes, payload: Bytes) {
        self.pending_acks.push((reply.clone(), payload));
    }

    /// Err: refused before the batch took the message, answered as a plain publish would be.
    fn fast_batch_step(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        publish_headers: &PublishHeaders<'_>,
        operation: Option<FastOperation>,
        reply: &Bytes,
    ) -> Result<(), ApiError> {
        self.check_batch_message(message)?;
        if !self.config.allow_batch_publish {
            return Err(errors::BATCH_PUBLISH_DISABLED.to_error());
        }
        let operation =
            operation.ok_or_else(|| errors::BATCH_PUBLISH_INVALID_PATTERN.to_error())?;
        if operation.id.len() > MAX_BATCH_ID_LENGTH {
            return Err(errors::BATCH_PUBLISH_INVALID_BATCH_ID.to_error());
        }
        let now = Instant::now();
        self.fast_batches.expire(now);
        let id = operation.id.as_str();
        if !self.fast_batches.open.contains_key(id) {
            // Only a first message opens a batch (2.15.1 also refuses a ping for one it lacks).
            if operation.seq != 1 || operation.ping {
                return Err(errors::BATCH_PUBLISH_UNKNOWN_BATCH_ID.to_error());
            }
            let limits = self.context.batch_limits;
            let max_per_stream = configured_or(
                limits.max_inflight_per_stream,
                DEFAULT_MAX_INFLIGHT_PER_STREAM,
            );
            let max_total = configured_or(limits.max_inflight_total, DEFAULT_MAX_INFLIGHT_TOTAL);
            if self.fast_batches.open.len() >= max_per_stream
                || INFLIGHT_TOTAL.fetch_add(1, Ordering::Relaxed) >= max_total
            {
                if self.fast_batches.open.len() < max_per_stream {
                    INFLIGHT_TOTAL.fetch_sub(1, Ordering::Relaxed);
                }
                return Err(errors::BATCH_PUBLISH_TOO_MANY_INFLIGHT.to_error());
            }
            // Alone on the stream a publisher gets what it asks for; otherwise it ramps up.
            let ack_every = if self.fast_batches.open.is_empty() {
                operation.flow.min(MAX_ACK_EVERY)
            } else {
                1
            };
            let batch = FastBatch {
                last: 0,
                persisted: 0,
                flow_seq: 0,
                stream_seq: 0,
                ack_every,
                client_max_ack_every: operation.flow,
                gap_ok: operation.gap_ok,
                commit: false,
                deadline: now,
            };
            self.fast_batches.open.insert(operation.id.clone(), batch);
        }
        let mut message = message.clone();
        if publish_headers.required_api_level.is_some() {
            let block = message.headers.as_deref().unwrap_or(&[]);
            if !crate::level::required_level_met(Some(block)) {
                self.fast_batches.open.remove(id);
                return Err(errors::REQUIRED_API_LEVEL.to_error());
            }
            let stripped =
                headers::remove_headers(block, |name| name == b"Nats-Required-Api-Level");
            message.headers = Some(Bytes::from(stripped));
        }
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return Err(errors::BATCH_PUBLISH_UNKNOWN_BATCH_ID.to_error());
        };
        batch.deadline = now + self.context.batch_limits.inactivity_timeout();
        if operation.ping {
            self.fast_ping(&operation, reply);
            return Ok(());
        }
        if batch.commit {
            // Committing already (after an error): the publisher waits for the PubAck.
            return Ok(());
        }
        batch.last += 1;
        if batch.last != operation.seq {
            let forward = operation.seq > batch.last;
            let expected = batch.last;
            if forward && batch.gap_ok {
                batch.last = operation.seq;
            } else {
                batch.last -= 1;
            }
            let continues = forward && batch.gap_ok;
            if forward {
                self.answer(reply, gap_report(expected, operation.seq));
            }
            if !continues {
                self.fast_commit(id, reply);
                return Ok(());
            }
        }
        if operation.commit {
            if operation.end_of_batch {
                if let Some(batch) = self.fast_batches.open.get_mut(id) {
                    batch.last -= 1;
                    batch.persisted = batch.last;
                }
                self.fast_commit(id, reply);
                return Ok(());
            }
            self.fast_commit(id, reply);
        }
        if operation.seq == 1 && !self.config.no_ack && !operation.commit {
            let ack_every = self
                .fast_batches
                .open
                .get(id)
                .map_or(1, |batch| batch.ack_every);
            self.answer(reply, flow_ack(0, ack_every));
        }
        self.fast_store(store, &message, &operation, reply);
        Ok(())
    }

    /// A ping: report a gap if the publisher is ahead, then resend the last flow-control ack.
    fn fast_ping(&mut self, operation: &FastOperation, reply: &Bytes) {
        let id = operation.id.as_str();
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return;
        };
        let mut resend = true;
        if operation.seq > batch.last {
            let report = gap_report(batch.last + 1, operation.seq + 1);
            let gap_ok = batch.gap_ok;
            if gap_ok {
                batch.last = operation.seq;
                batch.persisted = batch.last;
            }
            self.answer(reply, report);
            if gap_ok {
                resend = !self.fast_flow_control(id, reply);
            } else if self.fast_commit(id, reply) {
                resend = false;
            }
        }
        if resend {
            if let Some(batch) = self.fast_batches.open.get(id) {
                let ack = flow_ack(batch.flow_seq, batch.ack_every);
                self.answer(reply, ack);
            }
        }
    }

    /// Check and store one message of the batch.
    fn fast_store(
        &mut self,
        store: &mut dyn StreamStore,
        message: &Message,
        operation: &FastOperation,
        reply: &Bytes,
    ) {
        let id = operation.id.as_str();
        let Ok(subject) = std::str::from_utf8(&message.subject) else {
            return;
        };
        let subject = self
            .transform_subject(subject)
            .unwrap_or_else(|| subject.to_string());
        let header_block = message.headers.as_deref().unwrap_or(&[]);
        let publish_headers = PublishHeaders::parse(header_block);
        let position = store.state().last_seq;
        let mut diff = StagedDiff::default();
        let checked = self.check_staged(
            store,
            &mut diff,
            subject,
            message,
            &publish_headers,
            position,
        );
        let checked = match checked {
            Ok(checked) => checked,
            Err(error) => return self.fast_refused(error, &publish_headers, operation, reply),
        };
        let stored_headers = PublishHeaders::parse(&checked.headers);
        let outcome = self.store_checked(
            store,
            &checked.subject,
            &checked.headers,
            &checked.payload,
            &stored_headers,
            checked.counted,
            false,
        );
        let seq = match outcome {
            super::Outcome::Stored(seq) | super::Outcome::Counted(seq, _) => seq,
            super::Outcome::Refused(error) => {
                if !self.config.no_ack {
                    let answer = self.error_ack(error);
                    self.answer(reply, answer);
                }
                return;
            }
            super::Outcome::Duplicate(_) | super::Outcome::Dropped => return,
        };
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return;
        };
        batch.stream_seq = seq;
        batch.persisted = batch.last;
        if batch.commit {
            let count = batch.last;
            self.fast_batches.open.remove(id);
            let ack = self.batch_ack(seq, id, count as usize);
            self.answer(reply, ack);
        } else {
            self.fast_flow_control(id, reply);
        }
    }

    /// A message the checks refused: a duplicate is skipped, anything else is reported; in
    /// gap-fail mode the batch then ends (committing what was stored before it).
    fn fast_refused(
        &mut self,
        error: ApiError,
        publish_headers: &PublishHeaders<'_>,
        operation: &FastOperation,
        reply: &Bytes,
    ) {
        let id = operation.id.as_str();
        let duplicate =
            error.err_code == errors::ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE.err_code;
        if duplicate {
            if let Some(batch) = self.fast_batches.open.get_mut(id) {
                batch.persisted = operation.seq;
            }
            self.fast_flow_control(id, reply);
            if !operation.commit {
                return;
            }
        }
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return;
        };
        if !batch.gap_ok && batch.last == 1 {
            // Refused as the first message: answered as a plain publish would be.
            self.fast_batches.open.remove(id);
            let duplicate_of = publish_headers
                .msg_id
                .and_then(|msg_id| self.stream.dedupe.lock().window.get(msg_id));
            let answer = match duplicate_of.filter(|_| duplicate) {
                Some(seq) => {
                    let mut ack = self.ack_prefix.clone();
                    ack.extend_from_slice(seq.to_string().as_bytes());
                    ack.extend_from_slice(b",\"duplicate\": true,\"batch\":");
                    ack.extend_from_slice(&jetstream_api::json::encode_response(id));
                    ack.extend_from_slice(format!(",\"count\":{}}}", operation.seq).as_bytes());
                    Bytes::from(ack)
                }
                None => self.error_ack(error),
            };
            self.answer(reply, answer);
            return;
        }
        let gap_ok = batch.gap_ok;
        if !duplicate {
            let body = jetstream_api::json::encode_response(&error);
            let report = format!(
                r#"{{"type":"err","seq":{},"error":{}}}"#,
                operation.seq,
                String::from_utf8_lossy(&body)
            );
            self.answer(reply, Bytes::from(report));
        }
        if gap_ok && !operation.commit {
            return;
        }
        if !duplicate {
            if let Some(batch) = self.fast_batches.open.get_mut(id) {
                batch.last -= 1;
                batch.persisted = batch.last;
            }
        }
        self.fast_commit(id, reply);
    }

    /// Mark the batch committing; when everything received is stored, answer with the PubAck
    /// and close the batch (true).
    fn fast_commit(&mut self, id: &str, reply: &Bytes) -> bool {
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return true;
        };
        batch.commit = true;
        if batch.last != batch.persisted {
            return false;
        }
        let (seq, count) = (batch.stream_seq, batch.last);
        self.fast_batches.open.remove(id);
        let ack = self.batch_ack(seq, id, count as usize);
        self.answer(reply, ack);
        true
    }

    /// Send a flow-control ack when enough messages were stored since the last one, adjusting
    /// its interval to the number of fast batches on the stream. True when one was sent.
    fn fast_flow_control(&mut self, id: &str, reply: &Bytes) -> bool {
        let sharing = self.fast_batches.open.len().max(1);
        let Some(batch) = self.fast_batches.open.get_mut(id) else {
            return false;
        };
        let every = u64::from(batch.ack_every.max(1));
        if batch.persisted < batch.flow_seq + every {
            return false;
        }
        batch.flow_seq += (batch.persisted - batch.flow_seq) / every * every;
        let fair =
            ((MAX_ACK_EVERY as usize / sharing).max(1) as u16).min(batch.client_max_ack_every);
        if batch.ack_every < fair {
            batch.ack_every = batch.ack_every.saturating_mul(2).min(fair);
        } else if batch.ack_every > fair {
            batch.ack_every = (batch.ack_every / 2).max(fair);
        }
        let ack = flow_ack(batch.flow_seq, batch.ack_every);
        self.answer(reply, ack);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_patterns() {
        let parsed = parse_fast_reply("_INBOX.x.b1.10.fail.1.0.$FI").expect("valid");
        assert_eq!(
            parsed,
            FastOperation {
                id: "b1".to_string(),
                seq: 1,
                flow: 10,
                gap_ok: false,
                ping: false,
                commit: false,
                end_of_batch: false
            }
        );
        let eob = parse_fast_reply("p.b.0.ok.3.3.$FI").expect("valid");
        assert!(eob.commit && eob.end_of_batch && eob.gap_ok);
        assert_eq!(eob.flow, 10);
        assert!(
            parse_fast_reply("p.b.10.fail.1.3.$FI").is_none(),
            "eob as seq 1"
        );
        assert!(
            parse_fast_reply("p.b.10.fail.2.0.$FI").is_none(),
            "start past 1"
        );
        assert!(
            parse_fast_reply("p.b.10.fail.1.1.$FI").is_none(),
            "append at 1"
        );
        assert!(
            parse_fast_reply("p.b.10.maybe.1.0.$FI").is_none(),
            "gap mode"
        );
        assert!(
            parse_fast_reply("p.b.10.fail.1.9.$FI").is_none(),
            "operation"
        );
        assert!(parse_fast_reply("bad.$FI").is_none());
        assert!(is_fast_reply(b"x.$FI"));
        assert!(!is_fast_reply(b".$FI"));
    }
}

//! Delivery: reading batches from the stream store (redeliveries first), sending to the
//! waiting pull request or the push subject, pacing (replay original, rate limit) and push flow
//! control.

use super::{Candidate, Task, FLOW_CONTROL_BYTES, LOAD_BATCH};
use crate::consumer::{needs_ack, ConsumerEntry};
use crate::transport::Message;
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::{status, PriorityPolicy, ReplayPolicy};
use nats_store::StoredMessage;
use std::time::Duration;
use tokio::time::Instant;

impl Task {
    /// Deliver as much as the requests, acks pending and flow control allow.
    pub(super) fn deliver(&mut self) {
        if self.pause_remaining().is_some() || self.deleting {
            return;
        }
        let push = !self.config.deliver_subject.is_empty();
        if push && !self.push_bound {
            return;
        }
        let paced =
            self.config.replay_policy == ReplayPolicy::Original || self.config.rate_limit > 0;
        loop {
            let now = Instant::now();
            if self.send_not_before.is_some_and(|at| now < at) {
                return;
            }
            self.send_not_before = None;
            if !self.lease_holds(now) {
                return;
            }
            let limit = if push {
                if self.config.flow_control && self.flow_control_bytes >= 2 * FLOW_CONTROL_BYTES {
                    // Stalled. A batch can overshoot the stall mark, so one answered request
                    // may not bring us back under it: make sure the client always has a
                    // request to answer, or delivery never resumes.
                    self.after_push_delivery(0);
                    return;
                }
                LOAD_BATCH
            } else {
                // Requests whose requester went away are dropped silently, as nats-server does.
                while let Some(front) = self.waiting.requests.front() {
                    let reply = std::str::from_utf8(&front.reply).unwrap_or("");
                    if self.transport.has_interest(reply) {
                        // Checked once per batch, not again for each message it takes.
                        self.interest_checked = Some(front.reply.clone());
                        break;
                    }
                    self.waiting.requests.pop_front();
                }
                if self.waiting.len() == 0 {
                    self.consumer.state.lock().num_waiting = 0;
                    return;
                }
                (self.waiting.batch_pending().max(1) as usize).min(LOAD_BATCH)
            };
            let limit = if paced { 1 } else { limit };
            let (candidates, end_of_stream) = self.load(limit);
            if self.consumer.replication.is_some()
                && self
                    .stream
                    .followed
                    .load(std::sync::atomic::Ordering::SeqCst)
            {
                // This node applies another leader's log: its stop is on the way, and what it
                // loaded that leader delivers (`Stream::followed`).
                self.put_back(candidates.into_iter());
                return;
            }
            let loaded = candidates.len();
            // One clock reading per batch: the delivery time of every message in it.
            let sent_at = Instant::now();
            let sent_at_nanos = crate::time_format::now_nanos();
            let mut unsent = candidates.into_iter();
            while let Some(candidate) = unsent.next() {
                if let Some(due) = self.replay_due(&candidate, now) {
                    self.send_not_before = Some(due);
                    self.put_back(std::iter::once(candidate).chain(unsent));
                    return;
                }
                let pace = paced.then(|| Pace::of(&candidate));
                if let Some(candidate) = self.send(candidate, push, sent_at, sent_at_nanos) {
                    // No waiting request can take it now (none left, or the ones left are
                    // for another pin or below their overflow thresholds).
                    self.put_back(std::iter::once(candidate).chain(unsent));
                    if !push {
                        self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
                    }
                    return;
                }
                if let Some(pace) = pace {
                    self.pace_after(pace, now);
                }
            }
            if !push {
                self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
            }
            if end_of_stream || loaded == 0 {
                if !push {
                    let mut statuses = Vec::new();
                    self.waiting.end_no_wait(&mut statuses);
                    for (subject, body) in statuses {
                        self.send_status(subject, body);
                    }
                    self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
                }
                return;
            }
        }
    }

    /// A replicated consumer delivers only while its leader's lease holds (`Replicator::lease`):
    /// a leader paused or cut off past it may have been replaced, and the next leader may have
    /// confirmed acks of what this one would send. Nothing is dropped: what is due stays
    /// pending here until the lease is back (the quorum's next word) or the consumer stops with
    /// the leadership. Checked per batch, one atomic load.
    fn lease_holds(&mut self, now: Instant) -> bool {
        let holds = self
            .consumer
            .replication
            .as_ref()
            .is_none_or(|replication| replication.lease_holds());
        self.lease_retry = (!holds).then(|| now + super::LEASE_RETRY);
        holds
    }

    /// `replay_policy: original`: a new message waits until as much time has passed since the
    /// previous delivery as passed between the two stores.
    pub(super) fn replay_due(&self, candidate: &Candidate, now: Instant) -> Option<Instant> {
        if self.config.replay_policy != ReplayPolicy::Original || candidate.delivery_count > 1 {
            return None;
        }
        let (last_timestamp, last_sent) = self.replay_last?;
        let gap = candidate
            .message
            .timestamp
            .saturating_sub(last_timestamp)
            .max(0) as u64;
        let due = last_sent + Duration::from_nanos(gap);
        (due > now).then_some(due)
    }

    /// Bookkeeping after a paced delivery: replay position and the rate limit's next slot.
    fn pace_after(&mut self, pace: Pace, now: Instant) {
        if self.config.replay_policy == ReplayPolicy::Original && pace.first_delivery {
            self.replay_last = Some((pace.timestamp, now));
        }
        if self.config.rate_limit > 0 {
            let wait = Duration::from_secs_f64(pace.bits as f64 / self.config.rate_limit as f64);
            self.send_not_before = Some(now + wait);
        }
    }

    /// Loaded but not delivered: redeliveries go back to the queue; the cursor never moved.
    pub(super) fn put_back(&mut self, rest: impl Iterator<Item = Candidate>) {
        let mut skipped = Vec::new();
        for candidate in rest {
            if candidate.delivery_count > 1 {
                self.redeliver.insert(candidate.message.seq);
            } else if candidate.from_skip_list {
                skipped.push(candidate.message.seq);
            }
        }
        for seq in skipped.into_iter().rev() {
            self.last_per_subject.push_front(seq);
        }
    }

    /// Read up to `limit` messages: redeliveries first, then new ones from the cursor (as many
    /// as max_ack_pending leaves room for). Returns them and whether the stream has no more.
    pub(super) fn load(&mut self, limit: usize) -> (Vec<Candidate>, bool) {
        let ack = needs_ack(&self.config);
        let max_deliver = self.config.max_deliver;
        let first_seq = self.stream.store.state().first_seq;
        let mut shared = self.consumer.state.lock();
        if shared.skip_removed(first_seq) {
            self.dirty = true;
        }
        let mut room = if ack && self.config.max_ack_pending > 0 {
            (self.config.max_ack_pending as usize).saturating_sub(shared.state.pending.len())
        } else {
            usize::MAX
        };
        let mut cursor = shared.state.delivered.stream_seq + 1;
        // A consumer of a replicated stream, durable or ephemeral, delivers only committed
        // messages (the leader's store may hold a batch still being proposed, which a failed
        // proposal drops): a delivery past the log would hand out a message the next leader
        // stores other messages in place of, and make the consumer skip those.
        let committed_last = self.stream.readable_last();
        let mut out = Vec::new();
        let mut exceeded = Vec::new();
        let mut gone = Vec::new();
        let mut end_of_stream = false;
        let mut new_messages = 0usize;
        let mut store = self.stream.store.read();
        while out.len() < limit {
            if let Some(seq) = self.redeliver.pop_first() {
                let Some(pending) = shared.state.pending.get(&seq) else {
                    continue;
                };
                let _ = pending;
                let count = shared.state.redelivered.get(&seq).copied().unwrap_or(0) + 2;
                if max_deliver > 0 && count > max_deliver as u64 {
                    exceeded.push((seq, count - 1));
                    continue;
                }
                match store.load(seq) {
                    Ok(message) => out.push(Candidate {
                        message,
                        delivery_count: count,
                        pending_after: 0,
                        from_skip_list: false,
                    }),
                    Err(_) => gone.push(seq),
                }
                continue;
            }
            if room == 0 {
                break;
            }
            let from_skip_list = !self.last_per_subject.is_empty();
            let next = if let Some(seq) = self.last_per_subject.pop_front() {
                match store.load(seq) {
                    Ok(message) => Some(message),
                    Err(_) => continue,
                }
            } else {
                match store.load_next_matching(&self.filters, cursor) {
                    Ok(Some(message)) if committed_last.is_none_or(|last| message.seq <= last) => {
                        Some(message)
                    }
                    _ => None,
                }
            };
            let Some(message) = next else {
                end_of_stream = true;
                break;
            };
            cursor = message.seq + 1;
            room -= 1;
            new_messages += 1;
            out.push(Candidate {
                message,
                delivery_count: 1,
                pending_after: 0,
                from_skip_list,
            });
        }
        if !out.is_empty() {
            let after = if self.last_per_subject.is_empty() {
                let last_per_subject = false;
                if self.filters.is_empty() {
                    store.num_pending(">", cursor, last_per_subject)
                } else {
                    store.num_pending_matching(&self.filters, cursor, last_per_subject)
                }
            } else {
                self.last_per_subject.len() as u64
            };
            let mut remaining_new = new_messages as u64;
            for candidate in &mut out {
                if candidate.delivery_count == 1 {
                    remaining_new -= 1;
                    candidate.pending_after = after + remaining_new;
                } else {
                    candidate.pending_after = after + remaining_new;
                }
            }
        }
        drop(store);
        // As nats-server: a message past max_deliver leaves pending but keeps its redelivery
        // count, and the ack floor does not move over it.
        for (seq, _) in &exceeded {
            shared.apply(&ConsumerEntry::Exhausted { stream_seq: *seq });
        }
        for seq in &gone {
            shared.apply(&ConsumerEntry::Gone { stream_seq: *seq });
        }
        if !gone.is_empty() || !exceeded.is_empty() {
            self.dirty = true;
        }
        drop(shared);
        for (seq, deliveries) in exceeded {
            self.clear_deadline(seq);
            self.advise_max_deliveries(seq, deliveries);
        }
        (out, end_of_stream && self.redeliver.is_empty())
    }

    /// Deliver one message at `now` (`now_nanos` on the wall clock). None when sent; when no
    /// request can take it, it comes back for the caller to put back.
    fn send(
        &mut self,
        candidate: Candidate,
        push: bool,
        now: Instant,
        now_nanos: i64,
    ) -> Option<Candidate> {
        let message = &candidate.message;
        let (mut headers, payload) = self.render(message);
        let consumer_seq = self.consumer.state.lock().state.delivered.consumer_seq + 1;
        let reply = super::ack_subject::write_reply(
            self.ack_prefix.as_str().as_bytes(),
            candidate.delivery_count,
            message.seq,
            consumer_seq,
            message.timestamp,
            candidate.pending_after,
        );
        // nats-server's size for max_bytes and flow control: subject, ack reply, headers, body.
        let size = (message.subject.len()
            + reply.len()
            + headers.as_ref().map_or(0, |h| h.len())
            + payload.len()) as i64;
        let target = if push {
            self.deliver_subject.clone()
        } else {
            match self.next_waiting(size, candidate.pending_after, now) {
                Some(target) => target,
                None => return Some(candidate),
            }
        };
        if !push && self.config.priority_policy == PriorityPolicy::PinnedClient {
            headers = Some(with_pin_header(headers, &self.pin_id()));
        }
        {
            let mut guard = self.consumer.state.lock();
            let shared = &mut *guard;
            shared.apply(&ConsumerEntry::Delivered {
                consumer_seq,
                stream_seq: message.seq,
                delivery_count: candidate.delivery_count,
                timestamp: now_nanos,
                ack: needs_ack(&self.config),
            });
            shared.last_delivered_active = Some(now_nanos);
        }
        self.dirty = true;
        if needs_ack(&self.config) {
            let at = now + self.ack_wait_for(candidate.delivery_count);
            self.set_deadline(message.seq, at);
        } else {
            // Ack none: delivered is acknowledged, retention applies now.
            self.stream.acked(message.seq);
        }
        let message = candidate.message;
        self.transport.deliver(
            &target,
            Message {
                subject: Bytes::from(message.subject),
                reply: Some(reply),
                headers,
                payload,
            },
        );
        self.last_delivery = now;
        if push {
            self.after_push_delivery(size as u64);
        }
        None
    }

    /// Push flow control: after enough unconfirmed bytes, ask the client to confirm.
    pub(super) fn after_push_delivery(&mut self, size: u64) {
        if !self.config.flow_control {
            return;
        }
        self.flow_control_bytes += size;
        if self.flow_control_outstanding.is_none() && self.flow_control_bytes >= FLOW_CONTROL_BYTES
        {
            self.flow_control_counter += 1;
            let random = (crate::time_format::now_nanos() as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(self.flow_control_counter);
            let reply = status::flow_control_reply(&self.stream.name, &self.consumer.name, random);
            self.flow_control_outstanding = Some((reply.clone(), self.flow_control_bytes));
            self.transport.publish(Message {
                subject: Bytes::from(self.config.deliver_subject.clone()),
                reply: Some(Bytes::from(reply)),
                headers: Some(Bytes::from_static(status::FLOW_CONTROL_REQUEST)),
                payload: Bytes::new(),
            });
        }
    }

    /// Headers and payload as delivered (headers_only replaces the body by its size).
    pub(super) fn render(&self, message: &StoredMessage) -> (Option<Bytes>, Bytes) {
        if !self.config.headers_only {
            let headers = (!message.headers.is_empty()).then(|| message.headers.clone());
            return (headers, message.payload.clone());
        }
        let mut block = BytesMut::with_capacity(message.headers.len() + 40);
        if message.headers.is_empty() {
            block.put_slice(b"NATS/1.0\r\n");
        } else {
            block.put_slice(&message.headers[..message.headers.len().saturating_sub(2)]);
        }
        block.put_slice(format!("Nats-Msg-Size: {}\r\n\r\n", message.payload.len()).as_bytes());
        (Some(block.freeze()), Bytes::new())
    }
}

/// What pacing needs of a delivered message (taken before the message moves into the send).
struct Pace {
    first_delivery: bool,
    timestamp: i64,
    /// Subject, headers and payload, in bits (the rate limit's unit).
    bits: u64,
}

impl Pace {
    fn of(candidate: &Candidate) -> Pace {
        let message = &candidate.message;
        Pace {
            first_delivery: candidate.delivery_count == 1,
            timestamp: message.timestamp,
            bits: 8
                * (message.subject.len() + message.headers.len() + message.payload.len()) as u64,
        }
    }
}

/// The header block with `Nats-Pin-Id: <id>` appended, as nats-server's `genHeader` does (an
/// empty id still gets its line: nats-server sends one to a request that carried no group).
fn with_pin_header(headers: Option<Bytes>, pin_id: &str) -> Bytes {
    let mut block = BytesMut::with_capacity(headers.as_ref().map_or(10, |h| h.len()) + 40);
    match headers.filter(|headers| headers.len() > 2) {
        Some(headers) => block.put_slice(&headers[..headers.len() - 2]),
        None => block.put_slice(b"NATS/1.0\r\n"),
    }
    block.put_slice(jetstream_api::status::headers::PIN_ID.as_bytes());
    block.put_slice(b": ");
    block.put_slice(pin_id.as_bytes());
    block.put_slice(b"\r\n\r\n");
    block.freeze()
}

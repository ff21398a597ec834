//! The consumer's task: one loop that takes events (acks, pull requests, flow-control replies,
//! stop), wakes on new stream messages and on its timers (ack deadlines, request expiry,
//! heartbeats, state flush, inactivity), and delivers.
//!
//! Delivery reads from the stream's store under its lock in batches (redeliveries first, then
//! new messages from the consumer's cursor), then publishes outside the lock.

use super::pull::{self, Admission, WaitQueue};
use super::{apply_retention, needs_ack, Consumer, Event};
use crate::stream::Stream;
use crate::transport::{Message, Transport};
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::advisory::{
    self, Advisory, ConsumerAckMetric, DeliveryExceeded, DeliveryTerminated,
};
use jetstream_api::{
    status, AckKind, AckPolicy, AckSubject, AckSubjectPrefix, ConsumerConfig, DeliverPolicy,
    NextRequest, ReplayPolicy,
};
use nats_store::{ConsumerStore, PendingDelivery, StoredMessage};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Most messages read under one store lock.
const LOAD_BATCH: usize = 256;
/// Most events handled before delivering again.
const EVENT_BATCH: usize = 4096;
/// How often dirty consumer state is written.
const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Push flow control: ask for a reply after this many unconfirmed bytes, stall at twice it.
const FLOW_CONTROL_BYTES: u64 = 512 * 1024;
/// How often an unbound push consumer checks for a subscriber on its deliver subject.
const UNBOUND_POLL: Duration = Duration::from_millis(50);
/// How long the loop sleeps when no timer is due.
const IDLE: Duration = Duration::from_secs(3600);

pub(super) fn spawn(
    consumer: Arc<Consumer>,
    stream: Arc<Stream>,
    transport: Arc<dyn Transport>,
    store: Box<dyn ConsumerStore>,
    receiver: mpsc::UnboundedReceiver<Event>,
    subscriptions: Vec<u64>,
) {
    let config = consumer.config();
    let now = Instant::now();
    let mut task = Task {
        ack_prefix: AckSubjectPrefix::v1(&stream.name, &consumer.name),
        filters: filters_of(&config),
        config,
        consumer,
        stream,
        transport,
        store,
        subscriptions,
        waiting: WaitQueue::default(),
        redeliver: BTreeSet::new(),
        deadlines: BTreeSet::new(),
        deadline_of: HashMap::new(),
        last_per_subject: VecDeque::new(),
        dirty: false,
        next_flush: now + FLUSH_INTERVAL,
        last_activity: now,
        last_delivery: now,
        flow_control_bytes: 0,
        flow_control_outstanding: None,
        flow_control_counter: 0,
        deleting: false,
        stream_gone: false,
        send_not_before: None,
        replay_last: None,
    };
    task.restore_timers();
    task.prepare_last_per_subject();
    tokio::spawn(task.run(receiver));
}

fn filters_of(config: &ConsumerConfig) -> Vec<String> {
    config
        .filters()
        .iter()
        .filter(|filter| !filter.is_empty() && **filter != ">")
        .map(|filter| filter.to_string())
        .collect()
}

struct Task {
    consumer: Arc<Consumer>,
    stream: Arc<Stream>,
    transport: Arc<dyn Transport>,
    store: Box<dyn ConsumerStore>,
    config: ConsumerConfig,
    filters: Vec<String>,
    ack_prefix: AckSubjectPrefix,
    subscriptions: Vec<u64>,
    waiting: WaitQueue,
    /// Stream sequences due for redelivery now, oldest first.
    redeliver: BTreeSet<u64>,
    /// Ack deadlines of pending messages.
    deadlines: BTreeSet<(Instant, u64)>,
    deadline_of: HashMap<u64, Instant>,
    /// `last_per_subject`: the sequences still to deliver before the cursor resumes.
    last_per_subject: VecDeque<u64>,
    dirty: bool,
    next_flush: Instant,
    last_activity: Instant,
    last_delivery: Instant,
    flow_control_bytes: u64,
    /// (reply subject, bytes it confirms)
    flow_control_outstanding: Option<(String, u64)>,
    flow_control_counter: u64,
    deleting: bool,
    stream_gone: bool,
    /// Pacing (replay original, rate limit): nothing is sent before this.
    send_not_before: Option<Instant>,
    /// Replay original: (store timestamp, send time) of the last new message sent.
    replay_last: Option<(i64, Instant)>,
}

/// A message read for delivery and how many times it will have been delivered.
struct Candidate {
    message: StoredMessage,
    delivery_count: u64,
    pending_after: u64,
    /// Taken from the `last_per_subject` list (goes back there when not delivered).
    from_skip_list: bool,
}

impl Task {
    async fn run(mut self, mut receiver: mpsc::UnboundedReceiver<Event>) {
        let mut last_sequence = self.stream.last_sequence.subscribe();
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                event = receiver.recv() => {
                    let Some(event) = event else { break };
                    if self.handle(event) {
                        return;
                    }
                    for _ in 0..EVENT_BATCH {
                        match receiver.try_recv() {
                            Ok(event) => {
                                if self.handle(event) {
                                    return;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
                // Only a consumer that could deliver listens for new messages: 10k idle pull
                // consumers must not all wake on every publish.
                changed = last_sequence.changed(), if !self.stream_gone && self.can_deliver() => {
                    if changed.is_err() {
                        self.stream_gone = true;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    self.on_timers();
                }
            }
            self.deliver();
            if self.dirty && Instant::now() >= self.next_flush {
                self.flush();
            }
        }
        self.shutdown(false);
    }

    fn next_deadline(&self) -> Instant {
        let now = Instant::now();
        let mut deadline = now + IDLE;
        if let Some((first, _)) = self.deadlines.first() {
            deadline = deadline.min(*first);
        }
        if let Some(next) = self.waiting.next_deadline() {
            deadline = deadline.min(next);
        }
        if self.dirty {
            deadline = deadline.min(self.next_flush);
        }
        if let Some(heartbeat) = self.push_heartbeat() {
            deadline = deadline.min(self.last_delivery + heartbeat);
        }
        if let Some(threshold) = self.inactive_threshold() {
            deadline = deadline.min(self.last_activity + threshold);
        }
        if let Some(until) = self.pause_remaining() {
            deadline = deadline.min(now + until);
        }
        if let Some(at) = self.send_not_before {
            deadline = deadline.min(at);
        }
        if !self.config.deliver_subject.is_empty() && !self.consumer.state.lock().push_bound {
            // Routing does not announce new subscribers: look again soon.
            deadline = deadline.min(now + UNBOUND_POLL);
        }
        deadline
    }

    /// Whether new stream messages could go out now (a waiting request, or a bound push
    /// consumer); otherwise the task ignores stream wake-ups.
    fn can_deliver(&self) -> bool {
        if self.config.deliver_subject.is_empty() {
            self.waiting.len() > 0
        } else {
            self.consumer.state.lock().push_bound
        }
    }

    fn push_heartbeat(&self) -> Option<Duration> {
        (!self.config.deliver_subject.is_empty() && self.config.idle_heartbeat.0 > 0)
            .then(|| Duration::from_nanos(self.config.idle_heartbeat.0 as u64))
    }

    fn inactive_threshold(&self) -> Option<Duration> {
        (self.config.inactive_threshold.0 > 0 && !self.deleting)
            .then(|| Duration::from_nanos(self.config.inactive_threshold.0 as u64))
    }

    fn pause_remaining(&self) -> Option<Duration> {
        let until = self.config.pause_until.as_ref()?.unix_nanos();
        let remaining = until.saturating_sub(crate::time_format::now_nanos());
        (remaining > 0).then(|| Duration::from_nanos(remaining as u64))
    }

    fn ack_wait_for(&self, delivery_count: u64) -> Duration {
        let backoff = &self.config.backoff;
        let nanos = if backoff.is_empty() {
            self.config.ack_wait.0
        } else {
            let index = (delivery_count.saturating_sub(1) as usize).min(backoff.len() - 1);
            backoff[index].0
        };
        Duration::from_nanos(nanos.max(1) as u64)
    }

    /// Recovered pending messages get their ack deadline from their delivery time.
    fn restore_timers(&mut self) {
        if !needs_ack(&self.config) {
            return;
        }
        let pending: Vec<(u64, PendingDelivery, u64)> = {
            let shared = self.consumer.state.lock();
            shared
                .state
                .pending
                .iter()
                .map(|(seq, pending)| {
                    let count = shared.state.redelivered.get(seq).copied().unwrap_or(0) + 1;
                    (*seq, *pending, count)
                })
                .collect()
        };
        let now = Instant::now();
        let now_nanos = crate::time_format::now_nanos();
        for (seq, pending, count) in pending {
            let wait = self.ack_wait_for(count);
            let elapsed = Duration::from_nanos((now_nanos - pending.timestamp).max(0) as u64);
            self.set_deadline(seq, now + wait.saturating_sub(elapsed));
        }
    }

    /// `last_per_subject` on a new consumer: the newest message of every matching subject.
    fn prepare_last_per_subject(&mut self) {
        if self.config.deliver_policy != DeliverPolicy::LastPerSubject {
            return;
        }
        let delivered = self.consumer.state.lock().state.delivered;
        if delivered.consumer_seq > 0 {
            return;
        }
        let store = self.stream.store.lock();
        let filters: Vec<&str> = if self.filters.is_empty() {
            vec![">"]
        } else {
            self.filters.iter().map(String::as_str).collect()
        };
        let mut seqs = Vec::new();
        for filter in filters {
            for subject_state in store.subjects_state(filter).values() {
                seqs.push(subject_state.last_seq);
            }
        }
        seqs.sort_unstable();
        seqs.dedup();
        self.last_per_subject = seqs.into();
    }

    fn set_deadline(&mut self, seq: u64, at: Instant) {
        if let Some(old) = self.deadline_of.insert(seq, at) {
            self.deadlines.remove(&(old, seq));
        }
        self.deadlines.insert((at, seq));
    }

    fn clear_deadline(&mut self, seq: u64) {
        if let Some(old) = self.deadline_of.remove(&seq) {
            self.deadlines.remove(&(old, seq));
        }
    }

    /// One event; true when the task must end.
    fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Ack {
                subject,
                reply,
                payload,
            } => {
                self.last_activity = Instant::now();
                self.process_ack(&subject, reply, &payload);
            }
            Event::Next { reply, payload } => {
                self.last_activity = Instant::now();
                self.process_next(reply, NextRequest::parse(&payload));
            }
            Event::FlowControlReply { subject } => {
                if let Some((reply, bytes)) = &self.flow_control_outstanding {
                    if subject.as_ref() == reply.as_bytes() {
                        self.flow_control_bytes = self.flow_control_bytes.saturating_sub(*bytes);
                        self.flow_control_outstanding = None;
                    }
                }
            }
            Event::ConfigUpdated => {
                self.config = self.consumer.config();
                self.filters = filters_of(&self.config);
                super::save_config(&mut *self.store, &self.config, self.consumer.created)
                    .unwrap_or_else(|error| {
                        tracing::error!(consumer = %self.consumer.name, %error, "saving consumer config failed")
                    });
            }
            Event::Stop { delete, done } => {
                self.shutdown(delete);
                let _ = done.send(());
                return true;
            }
        }
        false
    }

    fn shutdown(&mut self, delete: bool) {
        for id in std::mem::take(&mut self.subscriptions) {
            self.transport.unsubscribe(id);
        }
        if delete {
            for request in std::mem::take(&mut self.waiting.requests) {
                self.send_status(request.reply, status::CONSUMER_DELETED.to_vec());
            }
            if let Err(error) = self.store.delete() {
                tracing::error!(consumer = %self.consumer.name, %error, "deleting consumer state failed");
            }
        } else {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let state = self.consumer.state.lock().state.clone();
        let result = self.store.set_state(state).and_then(|_| self.store.flush());
        if let Err(error) = result {
            tracing::error!(consumer = %self.consumer.name, %error, "writing consumer state failed");
        }
        self.dirty = false;
        self.next_flush = Instant::now() + FLUSH_INTERVAL;
    }

    fn send_status(&self, subject: Bytes, headers: Vec<u8>) {
        self.transport.publish(Message {
            subject,
            reply: None,
            headers: Some(Bytes::from(headers)),
            payload: Bytes::new(),
        });
    }

    fn process_next(&mut self, reply: Bytes, request: Result<NextRequest, String>) {
        let now = Instant::now();
        let mut request = match pull::admit(&self.config, reply.clone(), request, now) {
            Admission::Refuse(body) => return self.send_status(reply, body),
            Admission::Queue(request) => request,
        };
        let max_waiting = self.config.max_waiting.max(1) as usize;
        if self.waiting.len() >= max_waiting {
            let mut expired = Vec::new();
            self.waiting.expire(now, &mut expired);
            for (subject, body) in expired {
                self.send_status(subject, body);
            }
        }
        if request.no_wait {
            let available = self.available() + self.redeliver.len() as u64;
            if available == 0 && request.expires.is_none() {
                return self.send_status(reply, status::NO_MESSAGES.to_vec());
            }
            if available > 0 && (available as i64) < self.waiting.batch_pending() {
                return self.send_status(reply, status::REQUESTS_PENDING.to_vec());
            }
        }
        if self.waiting.len() >= max_waiting {
            return self.send_status(reply, status::EXCEEDED_MAX_WAITING.to_vec());
        }
        request.delivered = 0;
        self.waiting.requests.push_back(request);
        self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
    }

    /// Messages the cursor has not reached yet.
    fn available(&self) -> u64 {
        let next = self.consumer.state.lock().state.delivered.stream_seq + 1;
        self.last_per_subject.len() as u64 + super::num_pending(&self.stream, &self.config, next)
    }

    fn process_ack(&mut self, subject: &[u8], reply: Option<Bytes>, payload: &[u8]) {
        let Ok(subject) = std::str::from_utf8(subject) else {
            return;
        };
        let Ok(ack) = AckSubject::parse(subject) else {
            return;
        };
        let seq = ack.stream_sequence;
        let reply = reply.filter(|reply| !reply.is_empty());
        match AckKind::parse(payload) {
            AckKind::Ack => self.acknowledge(seq, ack.consumer_sequence),
            AckKind::Next { request } => {
                self.acknowledge(seq, ack.consumer_sequence);
                if let Some(reply) = reply {
                    self.process_next(reply, request);
                }
                return;
            }
            AckKind::Nak { delay } => {
                if self.is_pending(seq) {
                    match delay.filter(|delay| delay.0 > 0) {
                        Some(delay) => self.set_deadline(
                            seq,
                            Instant::now() + Duration::from_nanos(delay.0 as u64),
                        ),
                        None => {
                            self.clear_deadline(seq);
                            self.redeliver.insert(seq);
                        }
                    }
                }
            }
            AckKind::Progress => {
                if self.is_pending(seq) {
                    let count = ack.delivered.max(1);
                    let at = Instant::now() + self.ack_wait_for(count);
                    self.set_deadline(seq, at);
                }
            }
            AckKind::Term { reason } => {
                if self.is_pending(seq) {
                    self.acknowledge(seq, ack.consumer_sequence);
                    self.advise_terminated(seq, ack.consumer_sequence, ack.delivered, reason);
                }
            }
            AckKind::Unknown => {}
        }
        if let Some(reply) = reply {
            self.transport.publish(Message {
                subject: reply,
                reply: None,
                headers: None,
                payload: Bytes::new(),
            });
        }
    }

    fn is_pending(&self, seq: u64) -> bool {
        self.consumer.state.lock().state.pending.contains_key(&seq)
    }

    /// An ack of stream sequence `seq`: floors move as nats-server moves them.
    fn acknowledge(&mut self, seq: u64, consumer_seq: u64) {
        let mut acked: Vec<u64> = Vec::new();
        let mut sample = None;
        {
            let mut shared = self.consumer.state.lock();
            let state = &mut shared.state;
            match self.config.ack_policy {
                AckPolicy::None => return,
                AckPolicy::All => {
                    let covered: Vec<u64> = state.pending.range(..=seq).map(|(s, _)| *s).collect();
                    if covered.is_empty() {
                        return;
                    }
                    for covered_seq in &covered {
                        state.pending.remove(covered_seq);
                        state.redelivered.remove(covered_seq);
                    }
                    acked = covered;
                    if state.pending.is_empty() {
                        state.ack_floor = state.delivered;
                    } else {
                        state.ack_floor.consumer_seq = consumer_seq;
                        state.ack_floor.stream_seq = seq;
                    }
                }
                _ => {
                    let Some(pending) = state.pending.remove(&seq) else {
                        return;
                    };
                    let deliveries = state.redelivered.remove(&seq).unwrap_or(0) + 1;
                    sample = Some((pending, deliveries));
                    if state.pending.is_empty() {
                        state.ack_floor = state.delivered;
                    } else if pending.consumer_seq == state.ack_floor.consumer_seq + 1 {
                        state.ack_floor.consumer_seq = pending.consumer_seq;
                        state.ack_floor.stream_seq = seq;
                        if let Some((next_seq, next)) = state.pending.range(seq + 1..).next() {
                            if next.consumer_seq > 0 {
                                state.ack_floor.consumer_seq = next.consumer_seq - 1;
                                state.ack_floor.stream_seq = next_seq - 1;
                            }
                        }
                    }
                    acked.push(seq);
                }
            }
            shared.last_ack_active = Some(crate::time_format::now_nanos());
        }
        self.dirty = true;
        if let Some((pending, deliveries)) = sample {
            self.sample_ack(seq, consumer_seq, pending, deliveries);
        }
        for seq in acked {
            self.clear_deadline(seq);
            self.redeliver.remove(&seq);
            apply_retention(&self.stream, seq, None);
        }
    }

    fn on_timers(&mut self) {
        let now = Instant::now();
        while let Some(&(at, seq)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.remove(&(at, seq));
            self.deadline_of.remove(&seq);
            if self.is_pending(seq) {
                self.redeliver.insert(seq);
            }
        }
        let mut statuses = Vec::new();
        self.waiting.expire(now, &mut statuses);
        for (subject, body) in statuses {
            self.send_status(subject, body);
        }
        let (last_consumer, last_stream) = {
            let state = &self.consumer.state.lock().state;
            (state.delivered.consumer_seq, state.delivered.stream_seq)
        };
        for reply in self.waiting.due_heartbeats(now) {
            self.send_status(
                reply,
                status::idle_heartbeat(last_consumer, last_stream, None),
            );
        }
        self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
        if let Some(heartbeat) = self.push_heartbeat() {
            if now >= self.last_delivery + heartbeat {
                let stalled = self
                    .flow_control_outstanding
                    .as_ref()
                    .map(|(reply, _)| reply.as_str());
                let body = status::idle_heartbeat(last_consumer, last_stream, stalled);
                self.send_status(Bytes::from(self.config.deliver_subject.clone()), body);
                self.last_delivery = now;
            }
        }
        if let Some(threshold) = self.inactive_threshold() {
            if self.is_active() {
                self.last_activity = now;
            } else if now >= self.last_activity + threshold {
                self.deleting = true;
                let stream = self.stream.clone();
                let name = self.consumer.name.clone();
                tokio::spawn(async move {
                    super::stop_consumer(&stream, &name, true).await;
                });
            }
        }
    }

    fn is_active(&self) -> bool {
        if self.config.deliver_subject.is_empty() {
            self.waiting.len() > 0
        } else {
            self.transport.has_interest(&self.config.deliver_subject)
        }
    }

    /// Deliver as much as the requests, acks pending and flow control allow.
    fn deliver(&mut self) {
        if self.pause_remaining().is_some() || self.deleting {
            return;
        }
        let push = !self.config.deliver_subject.is_empty();
        if push {
            let bound = self.transport.has_interest(&self.config.deliver_subject);
            self.consumer.state.lock().push_bound = bound;
            if !bound {
                return;
            }
        }
        let paced =
            self.config.replay_policy == ReplayPolicy::Original || self.config.rate_limit > 0;
        loop {
            let now = Instant::now();
            if self.send_not_before.is_some_and(|at| now < at) {
                return;
            }
            self.send_not_before = None;
            let limit = if push {
                if self.config.flow_control && self.flow_control_bytes >= 2 * FLOW_CONTROL_BYTES {
                    return;
                }
                LOAD_BATCH
            } else {
                match self.waiting.requests.front() {
                    Some(front) => (front.remaining.max(1) as usize).min(LOAD_BATCH),
                    None => return,
                }
            };
            let limit = if paced { 1 } else { limit };
            let (candidates, end_of_stream) = self.load(limit);
            let loaded = candidates.len();
            let mut unsent = candidates.into_iter();
            while let Some(candidate) = unsent.next() {
                if let Some(due) = self.replay_due(&candidate, now) {
                    self.send_not_before = Some(due);
                    self.put_back(std::iter::once(candidate).chain(unsent));
                    return;
                }
                if !self.send(&candidate, push) {
                    self.put_back(std::iter::once(candidate).chain(unsent));
                    break;
                }
                self.pace_after(&candidate, now);
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

    /// `replay_policy: original`: a new message waits until as much time has passed since the
    /// previous delivery as passed between the two stores.
    fn replay_due(&self, candidate: &Candidate, now: Instant) -> Option<Instant> {
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
    fn pace_after(&mut self, candidate: &Candidate, now: Instant) {
        if self.config.replay_policy == ReplayPolicy::Original && candidate.delivery_count == 1 {
            self.replay_last = Some((candidate.message.timestamp, now));
        }
        if self.config.rate_limit > 0 {
            let message = &candidate.message;
            let bits =
                8 * (message.subject.len() + message.headers.len() + message.payload.len()) as u64;
            let wait = Duration::from_secs_f64(bits as f64 / self.config.rate_limit as f64);
            self.send_not_before = Some(now + wait);
        }
    }

    /// Loaded but not delivered: redeliveries go back to the queue; the cursor never moved.
    fn put_back(&mut self, rest: impl Iterator<Item = Candidate>) {
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
    fn load(&mut self, limit: usize) -> (Vec<Candidate>, bool) {
        let ack = needs_ack(&self.config);
        let max_deliver = self.config.max_deliver;
        let mut shared = self.consumer.state.lock();
        let mut room = if ack && self.config.max_ack_pending > 0 {
            (self.config.max_ack_pending as usize).saturating_sub(shared.state.pending.len())
        } else {
            usize::MAX
        };
        let mut cursor = shared.state.delivered.stream_seq + 1;
        let mut out = Vec::new();
        let mut exceeded = Vec::new();
        let mut gone = Vec::new();
        let mut end_of_stream = false;
        let mut new_messages = 0usize;
        let mut store = self.stream.store.lock();
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
                    Ok(Some(message)) => Some(message),
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
            shared.state.pending.remove(seq);
        }
        for seq in &gone {
            shared.state.pending.remove(seq);
            shared.state.redelivered.remove(seq);
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

    /// Deliver one message; false when no request can take it (the caller puts it back).
    fn send(&mut self, candidate: &Candidate, push: bool) -> bool {
        let message = &candidate.message;
        let (headers, payload) = self.render(message);
        let size = (message.subject.len() + headers.as_ref().map_or(0, |h| h.len()) + payload.len())
            as i64;
        let target = if push {
            Bytes::from(self.config.deliver_subject.clone())
        } else {
            loop {
                let now = Instant::now();
                let Some(front) = self.waiting.requests.front_mut() else {
                    return false;
                };
                if front.expires.is_some_and(|expires| expires <= now) {
                    let mut statuses = Vec::new();
                    self.waiting.expire(now, &mut statuses);
                    for (subject, body) in statuses {
                        self.send_status(subject, body);
                    }
                    continue;
                }
                if front.remaining_bytes > 0 && size > front.remaining_bytes {
                    {
                        let body = status::message_size_exceeds_max_bytes(
                            front.remaining,
                            front.remaining_bytes,
                        );
                        let reply = front.reply.clone();
                        self.waiting.requests.pop_front();
                        self.send_status(reply, body);
                        continue;
                    }
                }
                break front.reply.clone();
            }
        };
        let now_nanos = crate::time_format::now_nanos();
        let consumer_seq = {
            let mut shared = self.consumer.state.lock();
            let state = &mut shared.state;
            let consumer_seq = state.delivered.consumer_seq + 1;
            state.delivered.consumer_seq = consumer_seq;
            if candidate.delivery_count == 1 {
                state.delivered.stream_seq = state.delivered.stream_seq.max(message.seq);
            }
            if needs_ack(&self.config) {
                // A redelivery keeps the first delivery's consumer sequence (the ack floor is
                // computed from it, as nats-server does) and takes the new delivery time.
                let pending = state.pending.entry(message.seq).or_insert(PendingDelivery {
                    consumer_seq,
                    timestamp: now_nanos,
                });
                pending.timestamp = now_nanos;
                if candidate.delivery_count > 1 {
                    state
                        .redelivered
                        .insert(message.seq, candidate.delivery_count - 1);
                }
            } else {
                state.ack_floor = state.delivered;
            }
            shared.last_delivered_active = Some(now_nanos);
            consumer_seq
        };
        self.dirty = true;
        if needs_ack(&self.config) {
            let at = Instant::now() + self.ack_wait_for(candidate.delivery_count);
            self.set_deadline(message.seq, at);
        }
        let reply = self.ack_prefix.reply(
            candidate.delivery_count,
            message.seq,
            consumer_seq,
            message.timestamp,
            candidate.pending_after,
        );
        self.transport.publish(Message {
            subject: target,
            reply: Some(Bytes::from(reply)),
            headers,
            payload,
        });
        self.last_delivery = Instant::now();
        if push {
            self.after_push_delivery(size as u64);
        } else if let Some(front) = self.waiting.requests.front_mut() {
            front.remaining -= 1;
            front.delivered += 1;
            if front.remaining_bytes > 0 {
                front.remaining_bytes -= size;
                if front.remaining_bytes <= 0 {
                    front.remaining_bytes = 0;
                    front.remaining = 0;
                }
            }
            if front.remaining <= 0 {
                self.waiting.requests.pop_front();
            }
        }
        true
    }

    /// Push flow control: after enough unconfirmed bytes, ask the client to confirm.
    fn after_push_delivery(&mut self, size: u64) {
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
    fn render(&self, message: &StoredMessage) -> (Option<Bytes>, Bytes) {
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

    fn domain(&self) -> String {
        String::new()
    }

    fn advise_max_deliveries(&self, seq: u64, deliveries: u64) {
        let subject = advisory::max_deliveries_subject(&self.stream.name, &self.consumer.name);
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::advisories::next_id(),
            jetstream_api::Timestamp::now(),
            DeliveryExceeded {
                stream: self.stream.name.clone(),
                consumer: self.consumer.name.clone(),
                stream_sequence: seq,
                deliveries,
                domain: self.domain(),
            },
        );
        self.publish_advisory(subject, &body);
    }

    fn advise_terminated(
        &self,
        seq: u64,
        consumer_seq: u64,
        deliveries: u64,
        reason: Option<String>,
    ) {
        let subject = advisory::message_terminated_subject(&self.stream.name, &self.consumer.name);
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::advisories::next_id(),
            jetstream_api::Timestamp::now(),
            DeliveryTerminated {
                stream: self.stream.name.clone(),
                consumer: self.consumer.name.clone(),
                consumer_sequence: consumer_seq,
                stream_sequence: seq,
                deliveries,
                reason: reason.unwrap_or_default(),
                domain: self.domain(),
            },
        );
        self.publish_advisory(subject, &body);
    }

    /// `sample_freq`: an ack metric for that share of acks.
    fn sample_ack(&self, seq: u64, consumer_seq: u64, pending: PendingDelivery, deliveries: u64) {
        let percent = self
            .config
            .sample_frequency
            .trim_end_matches('%')
            .parse::<u64>()
            .unwrap_or(0);
        if percent == 0 {
            return;
        }
        let now = crate::time_format::now_nanos();
        let roll = (now as u64 ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % 100;
        if roll >= percent {
            return;
        }
        let subject = advisory::consumer_ack_metric_subject(&self.stream.name, &self.consumer.name);
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::advisories::next_id(),
            jetstream_api::Timestamp::now(),
            ConsumerAckMetric {
                stream: self.stream.name.clone(),
                consumer: self.consumer.name.clone(),
                consumer_sequence: consumer_seq,
                stream_sequence: seq,
                ack_time: jetstream_api::Nanos(now.saturating_sub(pending.timestamp)),
                deliveries,
                domain: self.domain(),
            },
        );
        self.publish_advisory(subject, &body);
    }

    fn publish_advisory<T: serde::Serialize>(&self, subject: String, body: &T) {
        self.transport.publish(Message {
            subject: Bytes::from(subject),
            reply: None,
            headers: None,
            payload: Bytes::from(jetstream_api::json::encode_response(body)),
        });
    }
}

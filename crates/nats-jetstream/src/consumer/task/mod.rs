//! The consumer's task: one loop that takes events (acks, pull requests, flow-control replies,
//! stop), wakes on new stream messages and on its timers (ack deadlines, request expiry,
//! heartbeats, state flush, inactivity), and delivers.
//!
//! Delivery reads from the stream's store under its lock in batches (redeliveries first, then
//! new messages from the consumer's cursor), then publishes outside the lock.

pub(crate) mod ack_subject;
mod acks;
mod delivery;
mod priority;
mod reset;

use super::pull::{self, Admission, WaitQueue};
use super::{needs_ack, Consumer, Event};
use crate::stream::Stream;
use crate::transport::{Message, Transport};
use bytes::Bytes;
use jetstream_api::{status, AckSubjectPrefix, ConsumerConfig, DeliverPolicy, NextRequest};
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
/// How often dirty consumer state is written (acks without a reply included): nats-server's
/// consumer store writes at most about ten times a second per consumer under load, so we do
/// too. Acks with a reply are written before their answer instead (`confirm_acks`).
const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// Push flow control: ask for a reply after this many unconfirmed bytes, stall at twice it.
const FLOW_CONTROL_BYTES: u64 = 512 * 1024;
/// The change list keeps its allocation across flushes up to this many entries.
const CHANGED_KEEP_CAPACITY: usize = 1 << 16;
/// How long the loop sleeps when no timer is due.
const IDLE: Duration = Duration::from_secs(3600);
/// A replicated consumer whose leader lease ran out looks again this often (the lease comes
/// back with the quorum's next word, or the leadership goes and the consumer stops).
const LEASE_RETRY: Duration = Duration::from_millis(20);

pub(super) fn spawn(
    consumer: Arc<Consumer>,
    stream: Arc<Stream>,
    siblings: std::sync::Weak<super::Consumers>,
    transport: Arc<dyn Transport>,
    store: Box<dyn ConsumerStore>,
    receiver: mpsc::UnboundedReceiver<Event>,
) {
    let config = consumer.config();
    let now = Instant::now();
    let mut task = Task {
        ack_prefix: AckSubjectPrefix::v1(&stream.name, &consumer.name),
        deliver_subject: Bytes::from(config.deliver_subject.clone()),
        interest_checked: None,
        filters: filters_of(&config),
        config,
        consumer,
        stream,
        siblings,
        transport,
        store,
        waiting: WaitQueue::default(),
        redeliver: BTreeSet::new(),
        deadlines: BTreeSet::new(),
        deadline_of: HashMap::new(),
        last_per_subject: VecDeque::new(),
        dirty: false,
        ack_replies: Vec::new(),
        next_flush: now + FLUSH_INTERVAL,
        last_activity: now,
        last_delivery: now,
        flow_control_bytes: 0,
        flow_control_outstanding: None,
        flow_control_counter: 0,
        deleting: false,
        stream_gone: false,
        events_at: (now, crate::time_format::now_nanos()),
        send_not_before: None,
        lease_retry: None,
        replay_last: None,
        interest_watch: None,
        push_bound: false,
        pin: None,
    };
    task.watch_deliver_subject();
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
    /// The consumer set this consumer belongs to (it removes itself when inactive).
    siblings: std::sync::Weak<super::Consumers>,
    transport: Arc<dyn Transport>,
    store: Box<dyn ConsumerStore>,
    config: ConsumerConfig,
    filters: Vec<String>,
    ack_prefix: AckSubjectPrefix,
    /// `config.deliver_subject`, ready to route each push delivery by.
    deliver_subject: Bytes,
    /// The reply subject of the pull request whose requester `deliver` found still there for
    /// the current batch (compared by address: the same request, not an equal inbox).
    interest_checked: Option<Bytes>,
    waiting: WaitQueue,
    /// Stream sequences due for redelivery now, oldest first.
    redeliver: BTreeSet<u64>,
    /// Ack deadlines of pending messages.
    deadlines: BTreeSet<(Instant, u64)>,
    deadline_of: HashMap<u64, Instant>,
    /// `last_per_subject`: the sequences still to deliver before the cursor resumes.
    last_per_subject: VecDeque<u64>,
    dirty: bool,
    /// Reply subjects of acks handled in the current run of events, answered after the
    /// state they changed is written.
    ack_replies: Vec<Bytes>,
    next_flush: Instant,
    last_activity: Instant,
    last_delivery: Instant,
    flow_control_bytes: u64,
    /// (reply subject, bytes it confirms)
    flow_control_outstanding: Option<(String, u64)>,
    flow_control_counter: u64,
    deleting: bool,
    stream_gone: bool,
    /// When the current run of queued events was taken up (monotonic, unix nanos): the
    /// activity time of every ack in it, one clock reading for up to EVENT_BATCH acks.
    events_at: (Instant, i64),
    /// Pacing (replay original, rate limit): nothing is sent before this.
    send_not_before: Option<Instant>,
    /// A replicated consumer held its deliveries (its leader lease ran out): look again then.
    lease_retry: Option<Instant>,
    /// Replay original: (store timestamp, send time) of the last new message sent.
    replay_last: Option<(i64, Instant)>,
    /// Push: the watch on the deliver subject (routing wakes the task when a subscriber comes
    /// or goes; nothing polls) and whether a subscriber is there.
    interest_watch: Option<(u64, String)>,
    push_bound: bool,
    /// `pinned_client` consumers: the pinned request's id and its expiry.
    pin: Option<priority::Pin>,
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
        // A push consumer created with its subscriber already there starts at once.
        self.deliver();
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                event = receiver.recv() => {
                    let Some(event) = event else { break };
                    self.events_at = (Instant::now(), crate::time_format::now_nanos());
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
                    self.confirm_acks();
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
            // A push consumer with a subscriber is active: its countdown starts when the last
            // subscriber leaves, so a bound one sleeps without wake-ups.
            if self.config.deliver_subject.is_empty() || !self.push_bound {
                deadline = deadline.min(self.last_activity + threshold);
            }
        }
        if let Some(until) = self.pause_remaining() {
            deadline = deadline.min(now + until);
        }
        if let Some(at) = self.send_not_before {
            deadline = deadline.min(at);
        }
        if let Some(at) = self.lease_retry {
            deadline = deadline.min(at);
        }
        if let Some(pin) = &self.pin {
            deadline = deadline.min(pin.expires);
        }
        deadline
    }

    /// Whether new stream messages could go out now (a waiting request, or a bound push
    /// consumer); otherwise the task ignores stream wake-ups.
    fn can_deliver(&self) -> bool {
        if self.config.deliver_subject.is_empty() {
            self.waiting.len() > 0
        } else {
            self.push_bound
        }
    }

    /// Push consumers: (re)register the interest watch on the deliver subject, then look.
    fn watch_deliver_subject(&mut self) {
        let subject = &self.config.deliver_subject;
        if self
            .interest_watch
            .as_ref()
            .is_some_and(|(_, watched)| watched == subject)
        {
            return;
        }
        if let Some((id, _)) = self.interest_watch.take() {
            self.transport.unwatch_interest(id);
        }
        if !subject.is_empty() {
            let events = self.consumer.events.clone();
            let id = self.transport.watch_interest(
                subject,
                Arc::new(move || {
                    let _ = events.send(Event::InterestChanged);
                }),
            );
            self.interest_watch = Some((id, subject.clone()));
        }
        self.refresh_push_bound();
    }

    /// Whether a subscriber is on the deliver subject; losing the last one starts the
    /// inactivity countdown.
    fn refresh_push_bound(&mut self) {
        let bound = !self.config.deliver_subject.is_empty()
            && self.transport.has_interest(&self.config.deliver_subject);
        if self.push_bound && !bound {
            self.last_activity = Instant::now();
        }
        self.push_bound = bound;
        self.consumer.state.lock().push_bound = bound;
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
        let mut store = self.stream.store.read();
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

    /// One event; true when the task must end. Counted as handled once its effects are made
    /// (`events.rs`: CONSUMER.INFO reads the shared state directly when nothing is pending).
    fn handle(&mut self, event: Event) -> bool {
        let end = self.handle_event(event);
        self.consumer.events.handled();
        end
    }

    fn handle_event(&mut self, event: Event) -> bool {
        match event {
            Event::Ack {
                subject,
                reply,
                payload,
            } => {
                self.last_activity = self.events_at.0;
                self.process_ack(&subject, reply, &payload);
            }
            Event::Next {
                reply,
                payload,
                level_met,
            } => {
                // As nats-server: a push consumer's 409 first, then the level's 412, before
                // the request counts as activity.
                if !level_met && self.config.deliver_subject.is_empty() {
                    self.send_status(reply, pull::REQUIRED_API_LEVEL.to_vec());
                    return false;
                }
                self.last_activity = Instant::now();
                let json_body = pull::is_json_body(&payload);
                self.process_next(reply, NextRequest::parse(&payload), json_body);
            }
            Event::FlowControlReply { subject } => {
                if let Some((reply, bytes)) = &self.flow_control_outstanding {
                    if subject.as_ref() == reply.as_bytes() {
                        self.flow_control_bytes = self.flow_control_bytes.saturating_sub(*bytes);
                        self.flow_control_outstanding = None;
                    }
                }
            }
            Event::ConfigUpdated { saved } => {
                let was_durable = !self.config.durable_name.is_empty();
                self.config = self.consumer.config();
                if !was_durable && !self.config.durable_name.is_empty() {
                    self.persist();
                }
                self.filters = filters_of(&self.config);
                self.deliver_subject = Bytes::from(self.config.deliver_subject.clone());
                self.watch_deliver_subject();
                let entry = super::ConsumerEntry::Config {
                    config: Box::new(self.config.clone()),
                    created: self.consumer.created,
                };
                self.consumer.state.lock().apply(&entry);
                super::save_config(&mut *self.store, &self.config, self.consumer.created)
                    .unwrap_or_else(|error| {
                        tracing::error!(consumer = %self.consumer.name, %error, "saving consumer config failed")
                    });
                let _ = saved.send(self.store.pending_creation());
            }
            Event::InterestChanged => self.refresh_push_bound(),
            Event::Unpin { group, done } => {
                self.unpin(&group, Some("admin"));
                let _ = done.send(());
            }
            Event::Reset { sequence, done } => {
                let _ = done.send(self.reset(sequence));
            }
            Event::Info { done } => {
                let _ = done.send(self.consumer.info(&self.stream));
            }
            Event::Stop { delete, done } => {
                self.shutdown(delete);
                let _ = done.send(());
                return true;
            }
            Event::LeadershipLost { done } => {
                self.lose_leadership();
                let _ = done.send(());
                return true;
            }
        }
        false
    }

    /// The task's part of a stop (`stop_consumer` has dropped the subscriptions).
    fn shutdown(&mut self, delete: bool) {
        if let Some((id, _)) = self.interest_watch.take() {
            self.transport.unwatch_interest(id);
        }
        if delete {
            for request in std::mem::take(&mut self.waiting.requests) {
                self.send_status(request.reply, status::CONSUMER_DELETED.to_vec());
            }
            if let Err(error) = self.store.delete() {
                tracing::error!(consumer = %self.consumer.name, %error, "deleting consumer state failed");
            }
        } else {
            // The server is shutting down: nats-server tells each waiting pull request, with
            // what was left of it, so a client knows to pull again once it has reconnected
            // rather than wait for the request to expire.
            for request in std::mem::take(&mut self.waiting.requests) {
                let body = status::server_shutdown(request.remaining, request.remaining_bytes);
                self.send_status(request.reply, body);
            }
            self.flush();
            // Frames left to the sync threads are synced before the task ends.
            if let Err(error) = self.store.flush() {
                tracing::error!(consumer = %self.consumer.name, %error, "syncing consumer state failed");
            }
        }
        self.confirm_acks();
    }

    /// The stream's leadership went elsewhere: no more subscriptions here, and every waiting
    /// pull request hears `409 Leadership Change` (nats-server's `checkPendingRequests`), so
    /// its client asks again and reaches the new leader. Nothing is written: the state the next
    /// leader starts from is the committed one.
    fn lose_leadership(&mut self) {
        for id in std::mem::take(&mut *self.consumer.subscriptions.lock()) {
            self.transport.unsubscribe(id);
        }
        if let Some((id, _)) = self.interest_watch.take() {
            self.transport.unwatch_interest(id);
        }
        for request in std::mem::take(&mut self.waiting.requests) {
            self.send_status(request.reply, status::LEADERSHIP_CHANGE.to_vec());
        }
        self.ack_replies.clear();
    }

    /// An ephemeral consumer made durable (a durable create of its name): its state moves
    /// from memory to the stream's consumer store, as a new durable's would be, so it survives
    /// a restart with its position and acks. The config is saved by the caller.
    fn persist(&mut self) {
        let opened = super::open_store(
            &self.stream,
            &self.config,
            &self.consumer.name,
            self.consumer.created,
        )
        .and_then(|mut store| {
            // Rare (an ephemeral made durable): its new files are synced here, inline.
            if let Some(creation) = store.pending_creation() {
                creation.run()?;
            }
            let state = self.consumer.state.lock().state.clone();
            store.set_state(state)?;
            store.flush()?;
            Ok(store)
        });
        match opened {
            Ok(store) => {
                *self.consumer.removal.lock() = store.removal();
                self.store = store;
            }
            Err(error) => {
                tracing::error!(consumer = %self.consumer.name, %error, "persisting consumer failed")
            }
        }
    }

    /// Hand the store what changed since the last flush; see [`Task::write_state`].
    fn flush(&mut self) {
        self.write_state(Vec::new());
    }

    /// Hand the store what changed since the last flush (O(changes), under the state lock so
    /// no change slips between the copy and the clear), let it write, and publish `replies`
    /// (empty answers to confirmed acks) once that write, and every earlier one, is as durable
    /// as the stream's sync policy promises: at once after the write, or with
    /// `sync_interval: always` from the store's sync thread after the fsync, so this task
    /// never waits on the disk. A failed write or sync sends no reply (logged).
    fn write_state(&mut self, replies: Vec<Bytes>) {
        let mut entries = Vec::new();
        let staged = if self.dirty || self.consumer.replication.is_some() {
            let mut shared = self.consumer.state.lock();
            let staged = if self.dirty {
                self.store.update_state(&shared.state, &shared.changed)
            } else {
                Ok(())
            };
            if shared.changed.capacity() > CHANGED_KEEP_CAPACITY {
                shared.changed = Vec::new();
            } else {
                shared.changed.clear();
            }
            if let Some(log) = &mut shared.log {
                entries = std::mem::take(log);
            }
            staged
        } else {
            Ok(())
        };
        if let Some(proposals) = &self.consumer.replication {
            // Replicated: the stream's log, not this store, makes the state durable; the
            // replies go once the proposal carrying what they confirm has committed.
            if !entries.is_empty() || !replies.is_empty() {
                proposals.send(entries, replies);
            }
            if let Err(error) = staged.and_then(|_| self.store.flush()) {
                tracing::error!(consumer = %self.consumer.name, %error, "writing consumer state failed");
            }
            self.dirty = false;
            self.next_flush = Instant::now() + FLUSH_INTERVAL;
            return;
        }
        let transport = self.transport.clone();
        let name = self.consumer.name.clone();
        let on_durable: nats_store::DurableCallback = Box::new(move |durable| match durable {
            Ok(()) => super::confirm(&*transport, replies),
            Err(error) => {
                tracing::error!(consumer = %name, %error, "syncing consumer state failed");
            }
        });
        let result = staged.and_then(|_| self.store.flush_then(on_durable));
        if let Err(error) = &result {
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

    fn process_next(
        &mut self,
        reply: Bytes,
        request: Result<NextRequest, String>,
        json_body: bool,
    ) {
        let now = Instant::now();
        let mut request = match pull::admit(&self.config, reply.clone(), request, json_body, now) {
            Admission::Refuse(body) => return self.send_status(reply, body),
            Admission::Queue(request) => request,
        };
        if self.config.priority_policy != jetstream_api::PriorityPolicy::None {
            let held = request
                .priority_group
                .as_ref()
                .map(|group| group.id.as_str());
            match (&self.pin, held) {
                (Some(pin), Some(held)) if held == pin.id => self.refresh_pin(),
                (Some(_), Some(held)) if !held.is_empty() => {
                    return self.send_status(reply, status::PIN_ID_MISMATCH.to_vec());
                }
                _ => {}
            }
        }
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
            // A client with heartbeats waits for their absence instead of re-asking in a
            // hot loop, so nats-server does not answer it.
            if request.heartbeat.is_none() {
                self.send_status(reply, status::EXCEEDED_MAX_WAITING.to_vec());
            }
            return;
        }
        request.delivered = 0;
        self.waiting.add(request, self.config.priority_policy);
        self.consumer.state.lock().num_waiting = self.waiting.len() as u64;
    }

    /// Messages the cursor has not reached yet.
    fn available(&self) -> u64 {
        let next = self.consumer.state.lock().state.delivered.stream_seq + 1;
        self.last_per_subject.len() as u64 + super::num_pending(&self.stream, &self.config, next)
    }
    fn on_timers(&mut self) {
        let now = Instant::now();
        self.expire_pin(now);
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
                let siblings = self.siblings.clone();
                let name = self.consumer.name.clone();
                tokio::spawn(async move {
                    if let Some(siblings) = siblings.upgrade() {
                        super::stop_consumer(&stream, &siblings, &name, true).await;
                    }
                });
            }
        }
    }

    fn is_active(&self) -> bool {
        if self.config.deliver_subject.is_empty() {
            self.waiting.len() > 0
        } else {
            self.push_bound
        }
    }
}

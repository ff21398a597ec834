//! The stream's ingest task: drains the command queue in batches and is the only writer of
//! the store. For a batch of publishes it runs every check (sealed, expected headers, duplicate
//! window, rollups, sizes, account resources, interest), stores each message, flushes ONCE
//! (group commit: with `sync_interval: always` that flush is the fsync), and only then sends the
//! PubAcks, so no client hears "stored" before the store is as durable as the policy promises.
//!
//! It is a tokio task fed by an unbounded channel (the publisher's handler only enqueues): woken
//! on the same runtime as the connection tasks it is much cheaper to reach than an OS thread
//! (measured: js_pub_sync p50 25us against 48us with a dedicated thread). Store calls here are
//! short buffered writes; with `sync_interval: always` the flush (an fsync) runs under
//! `block_in_place` so it never stalls the runtime's other tasks.

use super::dedupe::DuplicateWindow;
use super::headers::{self, MessageTtl, PublishHeaders};
use super::{Stream, StreamCommand};
use crate::resources::Usage;
use crate::transport::{Message, Transport};
use bytes::{BufMut, Bytes, BytesMut};
use jetstream_api::{errors, ApiError, RetentionPolicy, StorageType, StreamConfig};
use nats_store::{StoreError, StreamStore, StreamStoreConfig, TTL_NEVER};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver as Receiver;

/// Upper bound of commands handled under one store lock / one flush.
const MAX_BATCH: usize = 4096;
/// How long the task waits when no message is due for expiry.
const IDLE_WAIT: Duration = Duration::from_secs(60);
/// The shortest sleep between expiry passes.
const MINIMUM_EXPIRY_WAIT: Duration = Duration::from_millis(5);
/// nats-server refuses header blocks larger than this.
const MAX_HEADER_SIZE: usize = u16::MAX as usize;

/// What the ingest task needs from the engine.
#[derive(Clone)]
pub(crate) struct IngestContext {
    pub transport: Arc<dyn Transport>,
    /// `sync_interval: always`: every flush is an fsync.
    pub sync_always: bool,
    pub domain: Option<String>,
    pub usage: Arc<Usage>,
}

pub(crate) fn spawn(
    stream: Arc<Stream>,
    receiver: Receiver<StreamCommand>,
    context: IngestContext,
) -> Result<(), std::io::Error> {
    let config = stream.config();
    let mut ingest = Ingest {
        ack_prefix: ack_prefix(&config.name, context.domain.as_deref()),
        config,
        stream,
        context,
        window: DuplicateWindow::default(),
        last_msg_id: String::new(),
        pending_acks: Vec::new(),
        counted_bytes: 0,
        dirty: false,
        markers: Default::default(),
    };
    ingest.recover();
    tokio::spawn(async move { ingest.run(receiver).await });
    Ok(())
}

/// `{"stream":"NAME",("domain":"D",)"seq":` as nats-server precomputes it.
fn ack_prefix(name: &str, domain: Option<&str>) -> Vec<u8> {
    let quoted = jetstream_api::json::encode_response(name);
    let mut prefix = b"{\"stream\":".to_vec();
    prefix.extend_from_slice(&quoted);
    if let Some(domain) = domain.filter(|domain| !domain.is_empty()) {
        prefix.extend_from_slice(b",\"domain\":");
        prefix.extend_from_slice(&jetstream_api::json::encode_response(domain));
    }
    prefix.extend_from_slice(b",\"seq\":");
    prefix
}

/// The limits part of a stream config, as the store enforces it.
pub(crate) fn store_config(config: &StreamConfig) -> StreamStoreConfig {
    StreamStoreConfig {
        name: config.name.clone(),
        max_msgs: config.max_msgs,
        max_bytes: config.max_bytes,
        max_age: Duration::from_nanos(config.max_age.0.max(0) as u64),
        max_msgs_per_subject: config.max_msgs_per_subject,
        max_msg_size: config.max_msg_size,
        discard: match config.discard {
            jetstream_api::DiscardPolicy::New => nats_store::DiscardPolicy::New,
            jetstream_api::DiscardPolicy::Old => nats_store::DiscardPolicy::Old,
        },
        discard_new_per_subject: config.discard_new_per_subject,
        allow_msg_ttl: config.allow_msg_ttl,
    }
}

struct Ingest {
    stream: Arc<Stream>,
    context: IngestContext,
    config: StreamConfig,
    window: DuplicateWindow,
    last_msg_id: String,
    ack_prefix: Vec<u8>,
    pending_acks: Vec<(Bytes, Bytes)>,
    /// Bytes of this stream last added to the account usage.
    counted_bytes: i64,
    /// Stored since the last flush.
    dirty: bool,
    /// Sequences of the subject delete markers this task wrote (a marker expiring must not
    /// leave another marker behind).
    markers: std::collections::HashSet<u64>,
}

/// The result of one publish: stored, duplicate, or refused with an API error.
enum Outcome {
    Stored(u64),
    /// Stored on a counter stream: the sequence and the subject's new total.
    Counted(u64, String),
    Duplicate(u64),
    Refused(ApiError),
    /// Not answered at all (nats-server's behaviour for I/O failures).
    Dropped,
}

impl Ingest {
    /// Rebuild the duplicate window and the last message id from the store (restart).
    fn recover(&mut self) {
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.lock();
        self.update_usage(&**store);
        let window = self.config.duplicate_window.0;
        if window <= 0 {
            return;
        }
        let state = store.state();
        if state.msgs == 0 {
            return;
        }
        let now = crate::time_format::now_nanos();
        let mut seq = store.seq_for_time(now - window);
        while seq <= state.last_seq {
            let Ok(Some(message)) = store.load_next(">", seq) else {
                break;
            };
            let mut msg_id = String::new();
            if !message.headers.is_empty() {
                if let Some(id) = PublishHeaders::parse(&message.headers).msg_id {
                    self.window.insert(id, message.seq, message.timestamp);
                    msg_id = id.to_string();
                }
            }
            if message.seq == state.last_seq {
                self.last_msg_id = msg_id;
            }
            seq = message.seq + 1;
        }
    }

    async fn run(mut self, mut receiver: Receiver<StreamCommand>) {
        let mut batch: Vec<StreamCommand> = Vec::with_capacity(256);
        loop {
            let wait = self.time_to_next_expiry();
            match tokio::time::timeout(wait, receiver.recv()).await {
                Ok(Some(command)) => batch.push(command),
                Ok(None) => break,
                Err(_) => {
                    self.expire_due();
                    continue;
                }
            }
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(command) => batch.push(command),
                    Err(_) => break,
                }
            }
            if self.process(&mut batch) {
                return;
            }
        }
        // Every sender is gone without a Stop: close the store so its tail is durable.
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.lock();
        if let Err(error) = store.close() {
            tracing::error!(stream = %self.config.name, %error, "closing stream store failed");
        }
    }

    fn time_to_next_expiry(&self) -> Duration {
        let next = self.stream.store.lock().next_expiry();
        match next {
            Some(due) => {
                let now = crate::time_format::now_nanos();
                // Never a busy loop, even if the store keeps reporting an overdue expiry.
                Duration::from_nanos(due.saturating_sub(now).max(0) as u64)
                    .clamp(MINIMUM_EXPIRY_WAIT, IDLE_WAIT)
            }
            None => IDLE_WAIT,
        }
    }

    fn expire_due(&mut self) {
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.lock();
        self.expire(&mut **store, crate::time_format::now_nanos());
        self.commit(&mut **store);
    }

    /// Remove what max_age and per-message TTLs say is due, leaving subject delete markers where
    /// the stream asks for them.
    fn expire(&mut self, store: &mut dyn StreamStore, now: i64) {
        if store.next_expiry().is_none_or(|due| due > now) {
            return;
        }
        let removed = match store.expire(now) {
            Ok(removed) => removed,
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
                go_duration_seconds(marker_seconds)
            );
            let ttl = Some(Duration::from_secs(marker_seconds as u64));
            match store.store_msg(&message.subject, header.as_bytes(), &[], ttl) {
                Ok((seq, _)) => {
                    self.markers.insert(seq);
                }
                Err(error) => {
                    tracing::error!(stream = %self.config.name, %error, "placing a subject delete marker failed")
                }
            }
        }
    }

    /// Handle one batch; true when the task must end (Stop).
    fn process(&mut self, batch: &mut Vec<StreamCommand>) -> bool {
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.lock();
        let now = crate::time_format::now_nanos();
        self.window.expire(now, self.config.duplicate_window.0);
        self.expire(&mut **store, now);
        let mut stop = false;
        for command in batch.drain(..) {
            match command {
                StreamCommand::Publish(message) => {
                    self.stream.backlog.release(
                        message.payload.len()
                            + message.headers.as_ref().map_or(0, |headers| headers.len()),
                    );
                    let reply = message.reply.clone().filter(|reply| !reply.is_empty());
                    let outcome = self.publish(&mut **store, &message);
                    if let Some(reply) = reply {
                        if !self.config.no_ack {
                            if let Some(ack) = self.ack_for(outcome) {
                                self.pending_acks.push((reply, ack));
                            }
                        }
                    }
                }
                other => {
                    // Everything before this command is made durable and acknowledged first.
                    self.commit(&mut **store);
                    stop = self.execute(&mut **store, other);
                    if stop {
                        break;
                    }
                }
            }
        }
        if !stop {
            self.commit(&mut **store);
        }
        drop(store);
        self.send_acks();
        stop
    }

    /// One flush for everything stored since the last one, then account usage and the
    /// consumers' wake-up.
    fn commit(&mut self, store: &mut dyn StreamStore) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let sync_always = self.context.sync_always;
        let flushed = if sync_always && multi_thread_runtime() {
            // An fsync must not stall the runtime's other tasks.
            tokio::task::block_in_place(|| store.flush())
        } else {
            store.flush()
        };
        if let Err(error) = flushed {
            // The batch is not as durable as promised: no PubAck may claim otherwise.
            tracing::error!(stream = %self.config.name, %error, "flushing stream store failed");
            self.pending_acks.clear();
            return;
        }
        self.update_usage(store);
        let last = store.state().last_seq;
        self.stream.last_sequence.send_if_modified(|current| {
            let changed = *current != last;
            *current = last;
            changed
        });
    }

    fn send_acks(&mut self) {
        for (reply, payload) in self.pending_acks.drain(..) {
            self.context.transport.publish(Message {
                subject: reply,
                reply: None,
                headers: None,
                payload,
            });
        }
    }

    fn update_usage(&mut self, store: &dyn StreamStore) {
        let bytes = store.state().bytes as i64;
        let delta = bytes - self.counted_bytes;
        if delta != 0 {
            self.context.usage.add(self.config.storage, delta);
            self.counted_bytes = bytes;
        }
    }

    fn ack_for(&self, outcome: Outcome) -> Option<Bytes> {
        let mut ack = BytesMut::with_capacity(self.ack_prefix.len() + 40);
        match outcome {
            Outcome::Stored(seq) => {
                ack.put_slice(&self.ack_prefix);
                ack.put_slice(seq.to_string().as_bytes());
                ack.put_u8(b'}');
            }
            Outcome::Counted(seq, total) => {
                ack.put_slice(&self.ack_prefix);
                ack.put_slice(seq.to_string().as_bytes());
                ack.put_slice(format!(",\"val\":\"{total}\"}}").as_bytes());
            }
            Outcome::Duplicate(seq) => {
                ack.put_slice(&self.ack_prefix);
                ack.put_slice(seq.to_string().as_bytes());
                // nats-server writes this one by hand, with the space.
                ack.put_slice(b",\"duplicate\": true}");
            }
            Outcome::Refused(error) => {
                let response = jetstream_api::PubAck::error(self.config.name.clone(), error);
                ack.put_slice(&jetstream_api::json::encode_response(&response));
            }
            Outcome::Dropped => return None,
        }
        Some(ack.freeze())
    }

    /// nats-server's `processJetStreamMsg` for one message, in its order of checks.
    fn publish(&mut self, store: &mut dyn StreamStore, message: &Message) -> Outcome {
        let Ok(subject) = std::str::from_utf8(&message.subject) else {
            return Outcome::Dropped;
        };
        // The stream's input transform applies before anything else looks at the subject.
        let transformed = self
            .config
            .subject_transform
            .as_ref()
            .and_then(|transform| {
                crate::subject::transform(&transform.source, &transform.destination, subject)
            });
        let subject = transformed.as_deref().unwrap_or(subject);
        if self.config.sealed {
            return Outcome::Refused(errors::STREAM_SEALED.to_error());
        }
        let header_block: &[u8] = message.headers.as_deref().unwrap_or(&[]);
        let publish_headers = if header_block.is_empty() {
            PublishHeaders::default()
        } else {
            PublishHeaders::parse(header_block)
        };
        let increment = match super::counter::check_increment(
            &publish_headers,
            &message.payload,
            self.config.allow_msg_counter,
        ) {
            Ok(increment) => increment,
            Err(error) => return Outcome::Refused(error),
        };
        if let Err(error) = self.check_headers(store, subject, &publish_headers) {
            return error;
        }
        if self.config.allow_msg_counter && increment.is_none() {
            return Outcome::Refused(errors::MESSAGE_INCR_MISSING.to_error());
        }
        let counted = match increment {
            Some(increment) => match super::counter::next_total(store, subject, increment) {
                Ok(counted) => Some(counted),
                Err(error) => return Outcome::Refused(error),
            },
            None => None,
        };
        let payload = match &counted {
            Some((_, body)) => &body[..],
            None => &message.payload[..],
        };
        let max_size = self.config.max_msg_size;
        if max_size >= 0 {
            let max_size = max_size as usize;
            if header_block.len() > max_size || payload.len() > max_size - header_block.len() {
                return Outcome::Refused(errors::STREAM_MESSAGE_EXCEEDS_MAXIMUM.to_error());
            }
        }
        if header_block.len() > MAX_HEADER_SIZE {
            return Outcome::Refused(errors::STREAM_HEADER_EXCEEDS_MAXIMUM.to_error());
        }
        if self.context.usage.exceeded(self.config.storage) {
            return Outcome::Refused(errors::INSUFFICIENT_RESOURCES.to_error());
        }
        let msg_id = publish_headers.msg_id;
        let rollup = publish_headers.rollup;
        if self.config.retention == RetentionPolicy::Interest
            && !self.stream.interest.wants(subject)
        {
            return self.skip_without_interest(store, msg_id, rollup, subject);
        }
        let ttl = match publish_headers.ttl.map(headers::parse_ttl) {
            None | Some(Ok(MessageTtl::None)) => None,
            Some(Ok(MessageTtl::Never)) => Some(TTL_NEVER),
            Some(Ok(MessageTtl::Seconds(seconds))) => {
                let minimum = (self.config.subject_delete_marker_ttl.0 / 1_000_000_000) as u64;
                let seconds = if minimum > 0 && self.config.max_msgs_per_subject != 1 {
                    seconds.max(minimum)
                } else {
                    seconds
                };
                Some(Duration::from_secs(seconds))
            }
            Some(Err(())) => return Outcome::Refused(errors::MESSAGE_TTL_INVALID.to_error()),
        };
        let stored = match store.store_msg(subject, header_block, payload, ttl) {
            // A rollup may pass a discard-new-per-subject limit: it is about to purge the very
            // messages that hold the subject at its limit (nats-server lets it through).
            Err(StoreError::MaxMessagesPerSubject) if rollup.is_some() => {
                let filter = if rollup == Some("all") { "" } else { subject };
                store
                    .purge_ex(filter, 0, 0)
                    .and_then(|_| store.store_msg(subject, header_block, payload, ttl))
            }
            other => other,
        };
        let (seq, timestamp) = match stored {
            Ok(stored) => stored,
            Err(error) => return self.store_failure(error),
        };
        self.dirty = true;
        self.last_msg_id = msg_id.unwrap_or_default().to_string();
        if let Some(id) = msg_id {
            self.window.insert(id, seq, timestamp);
        }
        if let Some(rollup) = rollup {
            self.apply_rollup(store, subject, rollup, 1);
        }
        self.republish(store, subject, header_block, payload, seq, timestamp);
        match counted {
            Some((total, _)) => Outcome::Counted(seq, total),
            None => Outcome::Stored(seq),
        }
    }

    /// The header checks, each answering with nats-server's error.
    fn check_headers(
        &self,
        store: &mut dyn StreamStore,
        subject: &str,
        publish_headers: &PublishHeaders<'_>,
    ) -> Result<(), Outcome> {
        let refuse = |error: ApiError| Err(Outcome::Refused(error));
        if let Some(expected) = publish_headers.expected_stream {
            if expected != self.config.name {
                return refuse(errors::STREAM_NOT_MATCH.to_error());
            }
        }
        if let Some(ttl) = publish_headers.ttl {
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
        if publish_headers.schedule.is_some() && !self.config.allow_msg_schedules {
            return refuse(errors::MESSAGE_SCHEDULES_DISABLED.to_error());
        }
        if publish_headers.stream_source.is_some() {
            return refuse(errors::MESSAGE_SOURCE_HDR_NOT_ALLOWED.to_error());
        }
        if let Some(id) = publish_headers.msg_id {
            if self.config.mirror.is_none() {
                if let Some(seq) = self.window.get(id) {
                    return Err(Outcome::Duplicate(seq));
                }
            }
        }
        if let Some(expected) = publish_headers.expected_last_msg_id {
            if expected != self.last_msg_id {
                return refuse(errors::STREAM_WRONG_LAST_MSG_ID.with(&[("id", &self.last_msg_id)]));
            }
        }
        if let Some(rollup) = publish_headers.rollup {
            if !self.config.allow_rollup || self.config.deny_purge {
                return refuse(errors::STREAM_ROLLUP_FAILED.with_err("rollup not permitted"));
            }
            if rollup != "sub" && rollup != "all" {
                return refuse(
                    errors::STREAM_ROLLUP_FAILED
                        .with_err(format!("rollup value invalid: {rollup:?}")),
                );
            }
        }
        Ok(())
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
        if let Err(error) = store.skip_msgs(seq, 1) {
            return self.store_failure(error);
        }
        self.dirty = true;
        self.last_msg_id = msg_id.unwrap_or_default().to_string();
        if let Some(id) = msg_id {
            self.window.insert(id, seq, crate::time_format::now_nanos());
        }
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
        let filter = match rollup {
            "sub" => subject,
            "all" => "",
            _ => return,
        };
        if let Err(error) = store.purge_ex(filter, 0, keep) {
            tracing::error!(stream = %self.config.name, %error, "rollup purge failed");
        }
    }

    fn store_failure(&self, error: StoreError) -> Outcome {
        match error {
            StoreError::MaxMessages
            | StoreError::MaxBytes
            | StoreError::MaxMessagesPerSubject
            | StoreError::MaxMessageSize => {
                Outcome::Refused(errors::STREAM_STORE_FAILED.with_err(error))
            }
            other => {
                tracing::error!(stream = %self.config.name, error = %other, "storing a message failed");
                Outcome::Dropped
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
        if !crate::subject::matches(&republish.source, subject) {
            return;
        }
        let Some(destination) =
            crate::subject::transform(&republish.source, &republish.destination, subject)
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

    /// Origin messages for a mirror: same sequence and time; sequences the origin no longer
    /// has become deleted ones here.
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
                if let Err(error) = store.skip_msgs(last + 1, message.seq - last - 1) {
                    tracing::error!(stream = %self.config.name, %error, "mirror gap failed");
                    return;
                }
            }
            if let Err(error) = store.store_raw(
                message.seq,
                message.timestamp,
                &message.subject,
                &message.headers,
                &message.payload,
                None,
            ) {
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
    fn execute(&mut self, store: &mut dyn StreamStore, command: StreamCommand) -> bool {
        self.dirty = true;
        match command {
            StreamCommand::Publish(_) => false,
            StreamCommand::Purge {
                filter,
                up_to_seq,
                keep,
                reply,
            } => {
                let result = store
                    .purge_ex(&filter, up_to_seq, keep)
                    .map_err(|error| errors::STREAM_GENERAL.with_err(error));
                self.commit(store);
                let _ = reply.send(result);
                false
            }
            StreamCommand::DeleteMessage { seq, erase, reply } => {
                let result = if erase {
                    store.erase(seq)
                } else {
                    store.remove(seq)
                };
                let result =
                    result.map_err(|error| errors::STREAM_MSG_DELETE_FAILED.with_err(error));
                self.commit(store);
                let _ = reply.send(result);
                false
            }
            StreamCommand::Mirror(messages) => {
                self.store_mirrored(store, messages);
                false
            }
            StreamCommand::Remove { seq } => {
                if let Err(error) = store.remove(seq) {
                    tracing::debug!(stream = %self.config.name, seq, %error, "retention removal failed");
                }
                false
            }
            StreamCommand::UpdateConfig { config, reply } => {
                let result = store
                    .update_config(store_config(&config))
                    .map_err(|error| errors::STREAM_UPDATE.with_err(error));
                if result.is_ok() {
                    self.config = *config;
                    self.ack_prefix = ack_prefix(&self.config.name, self.context.domain.as_deref());
                }
                self.commit(store);
                let _ = reply.send(result);
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
                    self.context
                        .usage
                        .add(self.config.storage, -self.counted_bytes);
                    self.counted_bytes = 0;
                }
                let _ = reply.send(());
                true
            }
        }
    }
}

/// Go's `time.Duration.String()` for whole seconds: `5s`, `1m0s`, `1h0m0s`.
fn go_duration_seconds(seconds: i64) -> String {
    let hours = seconds / 3600;
    let minutes = (seconds % 3600) / 60;
    let rest = seconds % 60;
    if hours > 0 {
        format!("{hours}h{minutes}m{rest}s")
    } else if minutes > 0 {
        format!("{minutes}m{rest}s")
    } else {
        format!("{rest}s")
    }
}

impl Usage {
    pub(crate) fn exceeded(&self, storage: StorageType) -> bool {
        match storage {
            StorageType::Memory => self.memory() > self.max_memory,
            StorageType::File => self.storage() > self.max_store,
        }
    }
}

fn multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

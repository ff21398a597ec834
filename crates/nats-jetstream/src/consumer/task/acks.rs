//! Ack handling (`+ACK`, `-NAK`, `+WPI`, `+NXT`, `+TERM`), ack floors as nats-server moves
//! them, ack sampling and the per-message advisories.

use super::Task;
use crate::consumer::{ConsumerApplied, ConsumerEntry};
use crate::transport::Message;
use bytes::Bytes;
use jetstream_api::advisory::{
    self, Advisory, ConsumerAckMetric, DeliveryExceeded, DeliveryTerminated,
};
use jetstream_api::{AckKind, AckPolicy, AckSubject};
use nats_store::PendingDelivery;
use std::time::Duration;
use tokio::time::Instant;

impl Task {
    pub(super) fn process_ack(&mut self, subject: &[u8], reply: Option<Bytes>, payload: &[u8]) {
        let prefix = self.ack_prefix.as_str().as_bytes();
        let ack = match super::ack_subject::parse_own_v1(subject, prefix) {
            Some(numbers) => numbers,
            None => {
                let Some(ack) = std::str::from_utf8(subject)
                    .ok()
                    .and_then(|subject| AckSubject::parse(subject).ok())
                else {
                    return;
                };
                super::ack_subject::AckNumbers {
                    delivered: ack.delivered,
                    stream_sequence: ack.stream_sequence,
                    consumer_sequence: ack.consumer_sequence,
                }
            }
        };
        let seq = ack.stream_sequence;
        let reply = reply.filter(|reply| !reply.is_empty());
        match AckKind::parse(payload) {
            AckKind::Ack => {
                if !self.acknowledge(seq, ack.consumer_sequence) {
                    // Above this consumer's delivery pointer (a delivery by another leader
                    // that this state does not hold): nothing applied and, as nats-server,
                    // no answer, so a client never sees an ack confirmed that the state
                    // does not keep. The message comes again; its next ack counts.
                    return;
                }
            }
            AckKind::Next { request } => {
                let _ = self.acknowledge(seq, ack.consumer_sequence);
                if let Some(reply) = reply {
                    // The pull request follows `+NXT ` in the ack body.
                    let body = payload.get(4..).unwrap_or_default();
                    self.process_next(reply, request, super::pull::is_json_body(body));
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
                    let _ = self.acknowledge(seq, ack.consumer_sequence);
                    self.advise_terminated(seq, ack.consumer_sequence, ack.delivered, reason);
                }
            }
            AckKind::Unknown => {}
        }
        if let Some(reply) = reply {
            // Answered once what the ack changed is written: see `confirm_acks`.
            self.ack_replies.push(reply);
        }
    }

    /// Answer the acks queued since the last call (AckSync, double ack): one write of the
    /// state covering all of them first (fsynced with `sync_interval: always`, on the store's
    /// sync threads), then every reply, so an ack the client saw confirmed survives a kill -9.
    /// Acks without a reply cost nothing here; they reach the store with the next periodic
    /// flush. A failed write confirms nothing: the client's ack request times out and it can
    /// ack again.
    pub(super) fn confirm_acks(&mut self) {
        if self.ack_replies.is_empty() {
            return;
        }
        let replies = std::mem::take(&mut self.ack_replies);
        self.write_state(replies);
    }

    pub(super) fn is_pending(&self, seq: u64) -> bool {
        self.consumer.state.lock().state.pending.contains_key(&seq)
    }

    /// An ack of stream sequence `seq`: an [`ConsumerEntry::Acked`] applied to the state;
    /// timers, the ack sample and the stream's retention follow from what it acknowledged.
    /// False (nothing applied) for an ack above the delivery pointer, as nats-server's
    /// `processAckMsg`: an ack-all there would otherwise take every pending message with it.
    pub(super) fn acknowledge(&mut self, seq: u64, consumer_seq: u64) -> bool {
        if self.config.ack_policy == AckPolicy::None {
            return true;
        }
        if seq > self.consumer.state.lock().state.delivered.stream_seq {
            return false;
        }
        let entry = ConsumerEntry::Acked {
            stream_seq: seq,
            consumer_seq,
            all: self.config.ack_policy == AckPolicy::All,
        };
        let (sequences, sample) = {
            let mut shared = self.consumer.state.lock();
            match shared.apply(&entry) {
                ConsumerApplied::Acked { sequences, sample } => {
                    shared.last_ack_active = Some(self.events_at.1);
                    (sequences, sample)
                }
                _ => return true,
            }
        };
        self.dirty = true;
        if let Some((pending, deliveries)) = sample {
            self.sample_ack(seq, consumer_seq, pending, deliveries);
        }
        for seq in sequences {
            self.clear_deadline(seq);
            self.redeliver.remove(&seq);
            self.stream.acked(seq);
        }
        true
    }

    /// The advisories' `domain` (empty, and so left out, without one).
    pub(super) fn domain(&self) -> String {
        self.consumer.domain.clone().unwrap_or_default()
    }

    pub(super) fn advise_max_deliveries(&self, seq: u64, deliveries: u64) {
        let subject = advisory::max_deliveries_subject(&self.stream.name, &self.consumer.name);
        if !self.transport.has_interest(&subject) {
            return;
        }
        let body = Advisory::new(
            crate::nuid::next_id(),
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

    pub(super) fn advise_terminated(
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
            crate::nuid::next_id(),
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
    pub(super) fn sample_ack(
        &self,
        seq: u64,
        consumer_seq: u64,
        pending: PendingDelivery,
        deliveries: u64,
    ) {
        if self.config.sample_frequency.is_empty() {
            return;
        }
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
            crate::nuid::next_id(),
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

    pub(super) fn publish_advisory<T: serde::Serialize>(&self, subject: String, body: &T) {
        self.transport.publish(Message {
            subject: Bytes::from(subject),
            reply: None,
            headers: None,
            payload: Bytes::from(jetstream_api::json::encode_response(body)),
        });
    }
}

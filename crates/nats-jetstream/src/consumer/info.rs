//! `CONSUMER.INFO`: how the answer is built, from a running consumer ([`Consumer::info`],
//! [`Consumer::info_in_order`]) or from a replicated consumer that runs on another server
//! ([`Consumer::committed_info`]), with the config as answers echo it
//! ([`config_for_response`]); and the count of messages still to deliver ([`num_pending`]),
//! which the consumer task uses too.

use super::{replicated, Consumer, Event};
use crate::stream::Stream;
use jetstream_api::{
    ConsumerConfig, ConsumerInfo, DeliverPolicy, Nanos, PriorityGroupState, SequenceInfo, Timestamp,
};
use tokio::sync::oneshot;

impl Consumer {
    /// `CONSUMER.INFO` in order with the consumer's queue (see [`Event::Info`]): directly when
    /// the task has handled every event queued so far (`events.rs`), else by the task after
    /// them; a consumer whose task has ended answers directly.
    pub(crate) async fn info_in_order(&self, stream: &Stream) -> ConsumerInfo {
        if self.events.all_handled() {
            return self.info(stream);
        }
        let (done, answer) = oneshot::channel();
        if self.send(Event::Info { done }) {
            if let Ok(info) = answer.await {
                return info;
            }
        }
        self.info(stream)
    }

    /// `CONSUMER.INFO` as nats-server builds it.
    pub(crate) fn info(&self, stream: &Stream) -> ConsumerInfo {
        let config = self.config();
        let first_seq = stream.store.state().first_seq;
        let parts = {
            let mut shared = self.state.lock();
            shared.skip_removed(first_seq);
            let state = &shared.state;
            InfoParts {
                stream_name: self.stream_name.clone(),
                name: self.name.clone(),
                created: self.created,
                config,
                name_generated: self.name_generated(),
                delivered: SequenceInfo {
                    consumer_sequence: state.delivered.consumer_seq,
                    stream_sequence: state.delivered.stream_seq,
                    last_active: shared.last_delivered_active.map(Timestamp::from_unix_nanos),
                },
                ack_floor: SequenceInfo {
                    consumer_sequence: state.ack_floor.consumer_seq,
                    stream_sequence: state.ack_floor.stream_seq,
                    last_active: shared.last_ack_active.map(Timestamp::from_unix_nanos),
                },
                num_ack_pending: state.pending.len() as u64,
                num_redelivered: state.redelivered.len() as u64,
                num_waiting: shared.num_waiting,
                push_bound: shared.push_bound,
                pinned: shared.pinned.clone(),
            }
        };
        assemble_info(stream, parts)
    }

    /// CONSUMER.INFO of a replicated consumer that does not run here (a follower of its
    /// stream), from its committed config and state: nothing waiting, no client bound, no pin
    /// (what only the running consumer knows), no last-active times.
    pub(crate) fn committed_info(
        stream: &Stream,
        name: &str,
        committed: &replicated::Committed,
    ) -> ConsumerInfo {
        let state = &committed.state;
        let sequences = |pair: &nats_store::SequencePair| SequenceInfo {
            consumer_sequence: pair.consumer_seq,
            stream_sequence: pair.stream_seq,
            last_active: None,
        };
        assemble_info(
            stream,
            InfoParts {
                stream_name: stream.name.clone(),
                name: name.to_string(),
                created: committed.created,
                config: committed.config.clone(),
                name_generated: false,
                delivered: sequences(&state.delivered),
                ack_floor: sequences(&state.ack_floor),
                num_ack_pending: state.pending.len() as u64,
                num_redelivered: state.redelivered.len() as u64,
                num_waiting: 0,
                push_bound: false,
                pinned: None,
            },
        )
    }
}

/// What CONSUMER.INFO is built from, read from a running consumer or a committed one.
struct InfoParts {
    stream_name: String,
    name: String,
    created: i64,
    config: ConsumerConfig,
    /// An ephemeral named by this server: its name is left out of the config shown.
    name_generated: bool,
    delivered: SequenceInfo,
    ack_floor: SequenceInfo,
    num_ack_pending: u64,
    num_redelivered: u64,
    num_waiting: u64,
    push_bound: bool,
    pinned: Option<(String, i64)>,
}

/// `CONSUMER.INFO` as nats-server builds it, from `parts` and the stream's state.
fn assemble_info(stream: &Stream, parts: InfoParts) -> ConsumerInfo {
    let config = parts.config;
    let num_pending = num_pending(stream, &config, parts.delivered.stream_sequence + 1);
    let now = crate::time_format::now_nanos();
    let pause_remaining = config
        .pause_until
        .as_ref()
        .map(|until| until.unix_nanos().saturating_sub(now))
        .filter(|remaining| *remaining > 0);
    ConsumerInfo {
        stream_name: parts.stream_name,
        name: parts.name,
        created: Timestamp::from_unix_nanos(parts.created),
        config: Some({
            let mut shown = config_for_response(&config);
            if parts.name_generated {
                shown.name.clear();
            }
            shown
        }),
        delivered: parts.delivered,
        ack_floor: parts.ack_floor,
        num_ack_pending: parts.num_ack_pending,
        num_redelivered: parts.num_redelivered,
        num_waiting: parts.num_waiting,
        num_pending,
        cluster: None,
        push_bound: parts.push_bound && !config.deliver_subject.is_empty(),
        paused: pause_remaining.is_some(),
        pause_remaining: Nanos(pause_remaining.unwrap_or(0)),
        timestamp: Timestamp::now(),
        // One pin per consumer, reported under its first group, as nats-server does.
        priority_groups: config
            .priority_groups
            .first()
            .map(|group| {
                let (id, at) = parts.pinned.unwrap_or_default();
                vec![PriorityGroupState {
                    group: group.clone(),
                    pinned_client_id: id,
                    pinned_time: if at == 0 {
                        Timestamp::default()
                    } else {
                        Timestamp::from_unix_nanos(at)
                    },
                }]
            })
            .unwrap_or_default(),
    }
}

/// Messages at or after `start_seq` the consumer would still deliver, from the store's index.
pub(crate) fn num_pending(stream: &Stream, config: &ConsumerConfig, start_seq: u64) -> u64 {
    let filters: Vec<String> = config.filters().iter().map(|f| f.to_string()).collect();
    let store = stream.store.read();
    let last_per_subject = config.deliver_policy == DeliverPolicy::LastPerSubject;
    if filters.is_empty() {
        store.num_pending(">", start_seq, last_per_subject)
    } else {
        store.num_pending_matching(&filters, start_seq, last_per_subject)
    }
}

/// The config as nats-server echoes it: with the response-only metadata keys.
fn config_for_response(config: &ConsumerConfig) -> ConsumerConfig {
    let mut out = config.clone();
    out.metadata = jetstream_api::metadata::with_dynamic(&config.metadata);
    out
}

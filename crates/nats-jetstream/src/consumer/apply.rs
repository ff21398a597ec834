//! The consumer's apply seam: every change of a consumer's persisted state is a
//! [`ConsumerEntry`] applied by [`apply`], and by nothing else.
//!
//! The consumer's task decides (which message goes to whom, under which consumer sequence, at
//! what time; which ack counts; when a message ran out of deliveries); `apply` moves the
//! delivered and ack-floor pairs and the pending and redelivered tables exactly as nats-server
//! does, with no clock and no look at the stream, so two replicas applying the same entries in
//! order hold the same state. A NAK or a progress ack only moves a redelivery timer, which is
//! the leader's business and not persisted state: neither makes an entry. A TERM is an ack.
//!
//! Who calls it: the consumer task (`task/acks.rs`, `task/delivery.rs`, `task/reset.rs`,
//! `task/mod.rs`) and `Shared::skip_removed`. What it must not know: the stream, routing, the
//! API.

use jetstream_api::ConsumerConfig;
use nats_store::{ConsumerState, PendingDelivery, SequencePair};
use serde::{Deserialize, Serialize};

/// One change of a consumer's state, as decided by its task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum ConsumerEntry {
    /// Stream message `stream_seq` went out as delivery `delivery_count` under consumer
    /// sequence `consumer_seq` at `timestamp`; `ack` when the consumer takes acks.
    Delivered {
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
        ack: bool,
    },
    /// An ack (or a TERM) of `stream_seq`, delivered as `consumer_seq`; with `all`, every
    /// pending message up to it (`ack_policy: all`).
    Acked {
        stream_seq: u64,
        consumer_seq: u64,
        all: bool,
    },
    /// `stream_seq` ran out of deliveries (`max_deliver`): no longer pending, its count kept.
    Exhausted { stream_seq: u64 },
    /// `stream_seq` is no longer in the stream: forgotten.
    Gone { stream_seq: u64 },
    /// The stream's first sequence moved to `first_seq` (purge, limits): what lies below goes.
    FirstMoved { first_seq: u64 },
    /// `CONSUMER.RESET` (and a new consumer's start): everything before `stream_seq` counts
    /// as delivered and acknowledged, nothing is pending.
    Reset { stream_seq: u64 },
    /// A new configuration (persisted with the consumer's creation time).
    Config {
        config: Box<ConsumerConfig>,
        created: i64,
    },
}

/// A consumer's state as the seam changes it: the persisted state and the list of the stream
/// sequences whose pending or redelivered entry changed since the last flush.
pub(crate) struct ConsumerReplica<'a> {
    pub state: &'a mut ConsumerState,
    pub changed: &'a mut Vec<u64>,
}

/// What applying an entry did, for the task's bookkeeping (timers, advisories, retention).
#[derive(Debug, Default, PartialEq)]
pub(crate) enum ConsumerApplied {
    /// Nothing the task needs to know.
    #[default]
    Done,
    /// An ack: the sequences it acknowledged, and for an explicit ack of a pending message the
    /// pending delivery and its number of deliveries (for ack sampling).
    Acked {
        sequences: Vec<u64>,
        sample: Option<(PendingDelivery, u64)>,
    },
    /// FirstMoved: whether anything changed.
    Moved(bool),
}

/// Apply one entry. Deterministic: the outcome depends only on the state and the entry.
/// `Config` changes none of the delivery state: it is ordered with the others here and the
/// task then persists it to the consumer's store (`save_config`).
pub(crate) fn apply(replica: ConsumerReplica<'_>, entry: &ConsumerEntry) -> ConsumerApplied {
    let ConsumerReplica { state, changed } = replica;
    match entry {
        ConsumerEntry::Delivered {
            consumer_seq,
            stream_seq,
            delivery_count,
            timestamp,
            ack,
        } => {
            state.delivered.consumer_seq = *consumer_seq;
            if *delivery_count == 1 {
                state.delivered.stream_seq = state.delivered.stream_seq.max(*stream_seq);
            }
            if *ack {
                // A redelivery keeps the first delivery's consumer sequence (the ack floor is
                // computed from it, as nats-server does) and takes the new delivery time.
                let pending = state.pending.entry(*stream_seq).or_insert(PendingDelivery {
                    consumer_seq: *consumer_seq,
                    timestamp: *timestamp,
                });
                pending.timestamp = *timestamp;
                if *delivery_count > 1 {
                    state.redelivered.insert(*stream_seq, delivery_count - 1);
                }
                changed.push(*stream_seq);
            } else {
                state.ack_floor = state.delivered;
            }
            ConsumerApplied::Done
        }
        ConsumerEntry::Acked {
            stream_seq,
            consumer_seq,
            all: true,
        } => {
            let covered: Vec<u64> = state
                .pending
                .range(..=*stream_seq)
                .map(|(seq, _)| *seq)
                .collect();
            if covered.is_empty() {
                return ConsumerApplied::Done;
            }
            for seq in &covered {
                state.pending.remove(seq);
                state.redelivered.remove(seq);
            }
            changed.extend_from_slice(&covered);
            if state.pending.is_empty() {
                state.ack_floor = state.delivered;
            } else {
                state.ack_floor.consumer_seq = *consumer_seq;
                state.ack_floor.stream_seq = *stream_seq;
            }
            ConsumerApplied::Acked {
                sequences: covered,
                sample: None,
            }
        }
        ConsumerEntry::Acked {
            stream_seq,
            all: false,
            ..
        } => {
            let seq = *stream_seq;
            let Some(pending) = state.pending.remove(&seq) else {
                return ConsumerApplied::Done;
            };
            let deliveries = state.redelivered.remove(&seq).unwrap_or(0) + 1;
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
            changed.push(seq);
            ConsumerApplied::Acked {
                sequences: vec![seq],
                sample: Some((pending, deliveries)),
            }
        }
        ConsumerEntry::Exhausted { stream_seq } => {
            state.pending.remove(stream_seq);
            changed.push(*stream_seq);
            ConsumerApplied::Done
        }
        ConsumerEntry::Gone { stream_seq } => {
            state.pending.remove(stream_seq);
            state.redelivered.remove(stream_seq);
            changed.push(*stream_seq);
            ConsumerApplied::Done
        }
        ConsumerEntry::FirstMoved { first_seq } => {
            ConsumerApplied::Moved(skip_removed(state, changed, *first_seq))
        }
        ConsumerEntry::Reset { stream_seq } => {
            let start = SequencePair {
                consumer_seq: 0,
                stream_seq: *stream_seq,
            };
            *state = ConsumerState {
                delivered: start,
                ack_floor: start,
                ..Default::default()
            };
            // The whole state is written at once after a reset: nothing is left to pass on.
            changed.clear();
            ConsumerApplied::Done
        }
        ConsumerEntry::Config { .. } => ConsumerApplied::Done,
    }
}

/// Messages below the stream's first sequence are gone (purge, limits): the consumer moves
/// past them as nats-server's consumer purge does. True when something changed.
fn skip_removed(state: &mut ConsumerState, changed: &mut Vec<u64>, first_seq: u64) -> bool {
    let floor = first_seq.saturating_sub(1);
    if floor == 0 || state.ack_floor.stream_seq >= floor {
        return false;
    }
    state.delivered.stream_seq = state.delivered.stream_seq.max(floor);
    state.ack_floor.stream_seq = floor;
    let start = changed.len();
    changed.extend(state.pending.range(..=floor).map(|(seq, _)| *seq));
    for seq in &changed[start..] {
        if let Some(pending) = state.pending.remove(seq) {
            state.ack_floor.consumer_seq = state.ack_floor.consumer_seq.max(pending.consumer_seq);
        }
        state.redelivered.remove(seq);
    }
    if state.pending.is_empty() {
        state.ack_floor = state.delivered;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consumer's life as its task records it: deliveries, a redelivery, acks out of order,
    /// a message out of deliveries, one gone from the stream, a purge below, an ack-all.
    fn recorded() -> Vec<ConsumerEntry> {
        let delivered = |consumer_seq, stream_seq, delivery_count| ConsumerEntry::Delivered {
            consumer_seq,
            stream_seq,
            delivery_count,
            timestamp: 1_000 + consumer_seq as i64,
            ack: true,
        };
        vec![
            ConsumerEntry::Reset { stream_seq: 0 },
            delivered(1, 1, 1),
            delivered(2, 2, 1),
            delivered(3, 4, 1),
            delivered(4, 5, 1),
            ConsumerEntry::Acked {
                stream_seq: 2,
                consumer_seq: 2,
                all: false,
            },
            ConsumerEntry::Acked {
                stream_seq: 1,
                consumer_seq: 1,
                all: false,
            },
            delivered(5, 4, 2),
            ConsumerEntry::Exhausted { stream_seq: 4 },
            ConsumerEntry::Gone { stream_seq: 5 },
            delivered(6, 7, 1),
            delivered(7, 8, 1),
            ConsumerEntry::FirstMoved { first_seq: 7 },
            delivered(8, 9, 1),
            ConsumerEntry::Acked {
                stream_seq: 8,
                consumer_seq: 7,
                all: true,
            },
        ]
    }

    fn replay(entries: &[ConsumerEntry]) -> (ConsumerState, Vec<ConsumerApplied>) {
        let mut state = ConsumerState::default();
        let mut changed = Vec::new();
        let outcomes = entries
            .iter()
            .map(|entry| {
                apply(
                    ConsumerReplica {
                        state: &mut state,
                        changed: &mut changed,
                    },
                    entry,
                )
            })
            .collect();
        (state, outcomes)
    }

    #[test]
    fn two_replicas_of_one_recording_hold_the_same_state() {
        let entries = recorded();
        let through_log: Vec<ConsumerEntry> = entries
            .iter()
            .map(|entry| {
                let bytes = serde_json::to_vec(entry).expect("serializes");
                serde_json::from_slice(&bytes).expect("decodes")
            })
            .collect();
        let (first, first_outcomes) = replay(&entries);
        let (second, second_outcomes) = replay(&through_log);
        assert_eq!(first, second);
        assert_eq!(first_outcomes, second_outcomes);
    }

    #[test]
    fn floors_move_as_nats_server_moves_them() {
        let entries = recorded();
        // After the acks of 2 and then 1 the floor runs up to just before the next pending
        // delivery (consumer 3, stream 4): consumer 2, stream 3.
        let (state, _) = replay(&entries[..7]);
        assert_eq!(
            state.ack_floor,
            SequencePair {
                consumer_seq: 2,
                stream_seq: 3
            }
        );
        assert_eq!(state.pending.keys().copied().collect::<Vec<_>>(), [4, 5]);
        // The redelivery of 4 keeps its first consumer sequence and counts one redelivery;
        // out of deliveries it leaves pending and keeps the count.
        let (state, _) = replay(&entries[..9]);
        assert!(!state.pending.contains_key(&4));
        assert_eq!(state.redelivered.get(&4), Some(&1));
        // The purge below 7 moves the floor; the ack-all of 8 takes 7 and 8, leaves 9.
        let (state, outcomes) = replay(&entries);
        assert_eq!(state.ack_floor.stream_seq, 8);
        assert_eq!(state.pending.keys().copied().collect::<Vec<_>>(), [9]);
        assert_eq!(state.delivered.stream_seq, 9);
        assert_eq!(
            outcomes.last(),
            Some(&ConsumerApplied::Acked {
                sequences: vec![7, 8],
                sample: None
            })
        );
    }
}

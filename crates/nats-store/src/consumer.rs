//! Consumer state: the data type, its update rules (shared by both consumer stores), its compact
//! binary encoding (used by the file consumer store), and the in-memory consumer store.

use std::collections::BTreeMap;

use crate::error::StoreError;
use crate::traits::ConsumerStore;

/// A (consumer sequence, stream sequence) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SequencePair {
    /// Consumer (delivery) sequence.
    pub consumer_seq: u64,
    /// Stream sequence.
    pub stream_seq: u64,
}

/// A delivered but not yet acknowledged message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingDelivery {
    /// Consumer sequence of its latest delivery.
    pub consumer_seq: u64,
    /// Time of its latest delivery, nanos since epoch.
    pub timestamp: i64,
}

/// Everything a consumer persists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerState {
    /// Highest delivered pair.
    pub delivered: SequencePair,
    /// Everything at or below this pair is acknowledged.
    pub ack_floor: SequencePair,
    /// Stream sequence -> pending delivery.
    pub pending: BTreeMap<u64, PendingDelivery>,
    /// Stream sequence -> number of redeliveries (delivery count - 1).
    pub redelivered: BTreeMap<u64, u64>,
}

impl ConsumerState {
    /// Apply a delivery (see [`ConsumerStore::update_delivered`]).
    pub fn apply_delivered(
        &mut self,
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
    ) {
        if consumer_seq <= self.ack_floor.consumer_seq && self.ack_floor.consumer_seq > 0 {
            return;
        }
        if stream_seq <= self.delivered.stream_seq {
            if let Some(pending) = self.pending.get_mut(&stream_seq) {
                pending.consumer_seq = consumer_seq;
                pending.timestamp = timestamp;
            } else if delivery_count <= 1 {
                self.pending.insert(
                    stream_seq,
                    PendingDelivery {
                        consumer_seq,
                        timestamp,
                    },
                );
            }
        } else {
            self.pending.insert(
                stream_seq,
                PendingDelivery {
                    consumer_seq,
                    timestamp,
                },
            );
        }
        self.delivered.consumer_seq = self.delivered.consumer_seq.max(consumer_seq);
        self.delivered.stream_seq = self.delivered.stream_seq.max(stream_seq);
        if delivery_count > 1 {
            self.redelivered.insert(stream_seq, delivery_count - 1);
        }
    }

    /// Apply an ack (see [`ConsumerStore::update_acks`]).
    pub fn apply_ack(&mut self, consumer_seq: u64, stream_seq: u64) {
        self.pending.remove(&stream_seq);
        self.redelivered.remove(&stream_seq);
        if self.pending.is_empty() {
            self.ack_floor = self.delivered;
        } else if consumer_seq == self.ack_floor.consumer_seq + 1 {
            self.ack_floor = SequencePair {
                consumer_seq,
                stream_seq,
            };
            // The floor can move up to just below the oldest message still pending.
            if let Some((&oldest_stream_seq, oldest)) = self.pending.iter().next() {
                if oldest.consumer_seq > 0 && oldest_stream_seq > stream_seq {
                    self.ack_floor = SequencePair {
                        consumer_seq: oldest.consumer_seq - 1,
                        stream_seq: oldest_stream_seq - 1,
                    };
                }
            }
        }
    }

    /// Take `other`'s floors and, for each of `sequences`, its pending and redelivered entries
    /// (present or absent): `other`'s state for everything the caller says changed.
    pub fn copy_changes(&mut self, other: &ConsumerState, sequences: &[u64]) {
        self.delivered = other.delivered;
        self.ack_floor = other.ack_floor;
        for &seq in sequences {
            match other.pending.get(&seq) {
                Some(pending) => {
                    self.pending.insert(seq, *pending);
                }
                None => {
                    self.pending.remove(&seq);
                }
            }
            match other.redelivered.get(&seq) {
                Some(count) => {
                    self.redelivered.insert(seq, *count);
                }
                None => {
                    self.redelivered.remove(&seq);
                }
            }
        }
    }

    /// Push to `out` every stream sequence whose pending or redelivered entry differs between
    /// `self` and `other` (one merge walk over both, no allocation beyond `out`).
    pub fn changed_sequences(&self, other: &ConsumerState, out: &mut Vec<u64>) {
        changed_keys(&self.pending, &other.pending, out);
        changed_keys(&self.redelivered, &other.redelivered, out);
    }

    /// Pending plus redelivered entries: what the encoded size grows with.
    pub fn entry_count(&self) -> usize {
        self.pending.len() + self.redelivered.len()
    }

    /// Compact binary encoding (little endian, versioned).
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(48 + self.pending.len() * 24 + self.redelivered.len() * 16);
        out.push(1u8);
        for value in [
            self.delivered.consumer_seq,
            self.delivered.stream_seq,
            self.ack_floor.consumer_seq,
            self.ack_floor.stream_seq,
            self.pending.len() as u64,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        for (stream_seq, pending) in &self.pending {
            out.extend_from_slice(&stream_seq.to_le_bytes());
            out.extend_from_slice(&pending.consumer_seq.to_le_bytes());
            out.extend_from_slice(&pending.timestamp.to_le_bytes());
        }
        out.extend_from_slice(&(self.redelivered.len() as u64).to_le_bytes());
        for (stream_seq, count) in &self.redelivered {
            out.extend_from_slice(&stream_seq.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        out
    }

    /// Decode [`ConsumerState::encode`] output.
    pub fn decode(bytes: &[u8]) -> Result<ConsumerState, StoreError> {
        let mut reader = Reader { bytes, position: 0 };
        if reader.take(1)?.first() != Some(&1) {
            return Err(StoreError::Corrupt("unknown consumer state version".into()));
        }
        let mut state = ConsumerState {
            delivered: SequencePair {
                consumer_seq: reader.u64()?,
                stream_seq: reader.u64()?,
            },
            ack_floor: SequencePair {
                consumer_seq: reader.u64()?,
                stream_seq: reader.u64()?,
            },
            ..ConsumerState::default()
        };
        let pending_count = reader.u64()?;
        for _ in 0..pending_count {
            let stream_seq = reader.u64()?;
            let consumer_seq = reader.u64()?;
            let timestamp = reader.u64()? as i64;
            state.pending.insert(
                stream_seq,
                PendingDelivery {
                    consumer_seq,
                    timestamp,
                },
            );
        }
        let redelivered_count = reader.u64()?;
        for _ in 0..redelivered_count {
            let stream_seq = reader.u64()?;
            let count = reader.u64()?;
            state.redelivered.insert(stream_seq, count);
        }
        Ok(state)
    }
}

fn changed_keys<V: PartialEq>(
    left: &BTreeMap<u64, V>,
    right: &BTreeMap<u64, V>,
    out: &mut Vec<u64>,
) {
    let mut left_entries = left.iter().peekable();
    let mut right_entries = right.iter().peekable();
    loop {
        match (left_entries.peek(), right_entries.peek()) {
            (None, None) => return,
            (Some((key, _)), None) => {
                out.push(**key);
                left_entries.next();
            }
            (None, Some((key, _))) => {
                out.push(**key);
                right_entries.next();
            }
            (Some((left_key, left_value)), Some((right_key, right_value))) => {
                match left_key.cmp(right_key) {
                    std::cmp::Ordering::Less => {
                        out.push(**left_key);
                        left_entries.next();
                    }
                    std::cmp::Ordering::Greater => {
                        out.push(**right_key);
                        right_entries.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if left_value != right_value {
                            out.push(**left_key);
                        }
                        left_entries.next();
                        right_entries.next();
                    }
                }
            }
        }
    }
}

/// Bounds-checked little-endian reader used by the decoders of this crate.
pub(crate) struct Reader<'a> {
    pub bytes: &'a [u8],
    pub position: usize,
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, count: usize) -> Result<&'a [u8], StoreError> {
        let end = self
            .position
            .checked_add(count)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| StoreError::Corrupt("truncated data".into()))?;
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    pub fn u64(&mut self) -> Result<u64, StoreError> {
        let mut buffer = [0u8; 8];
        buffer.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(buffer))
    }

    pub fn u32(&mut self) -> Result<u32, StoreError> {
        let mut buffer = [0u8; 4];
        buffer.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(buffer))
    }
}

/// A consumer store that keeps its state in memory only. Clones share one state, so a memory
/// stream can hand the same consumer's store out again (as a file stream reopens its files).
#[derive(Debug, Default, Clone)]
pub struct MemConsumerStore {
    shared: std::sync::Arc<parking_lot::Mutex<MemConsumer>>,
}

#[derive(Debug, Default)]
struct MemConsumer {
    config: Vec<u8>,
    state: ConsumerState,
    deleted: bool,
}

impl MemConsumerStore {
    /// An empty consumer store.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `delete` was called on any handle.
    pub fn is_deleted(&self) -> bool {
        self.shared.lock().deleted
    }
}

impl ConsumerStore for MemConsumerStore {
    fn set_config(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.shared.lock().config = blob.to_vec();
        Ok(())
    }

    fn config(&self) -> Vec<u8> {
        self.shared.lock().config.clone()
    }

    fn update_delivered(
        &mut self,
        consumer_seq: u64,
        stream_seq: u64,
        delivery_count: u64,
        timestamp: i64,
    ) -> Result<(), StoreError> {
        self.shared.lock().state.apply_delivered(
            consumer_seq,
            stream_seq,
            delivery_count,
            timestamp,
        );
        Ok(())
    }

    fn update_acks(&mut self, consumer_seq: u64, stream_seq: u64) -> Result<(), StoreError> {
        self.shared.lock().state.apply_ack(consumer_seq, stream_seq);
        Ok(())
    }

    fn set_state(&mut self, state: ConsumerState) -> Result<(), StoreError> {
        self.shared.lock().state = state;
        Ok(())
    }

    fn update_state(&mut self, state: &ConsumerState, changed: &[u64]) -> Result<(), StoreError> {
        self.shared.lock().state.copy_changes(state, changed);
        Ok(())
    }

    fn state(&self) -> ConsumerState {
        self.shared.lock().state.clone()
    }

    fn delivered(&self) -> SequencePair {
        self.shared.lock().state.delivered
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        let mut consumer = self.shared.lock();
        consumer.state = ConsumerState::default();
        consumer.config.clear();
        consumer.deleted = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_floor_moves_over_contiguous_acks() {
        let mut state = ConsumerState::default();
        for seq in 1..=3 {
            state.apply_delivered(seq, seq * 10, 1, 5);
        }
        state.apply_ack(2, 20);
        assert_eq!(state.ack_floor, SequencePair::default());
        state.apply_ack(1, 10);
        assert_eq!(
            state.ack_floor,
            SequencePair {
                consumer_seq: 2,
                stream_seq: 29
            }
        );
        state.apply_ack(3, 30);
        assert_eq!(state.ack_floor, state.delivered);
        let encoded = state.encode();
        assert_eq!(ConsumerState::decode(&encoded).unwrap(), state);
    }

    #[test]
    fn changed_sequences_and_copy_changes_agree() {
        let mut old = ConsumerState::default();
        for seq in 1..=6 {
            old.apply_delivered(seq, seq, 1, 5);
        }
        old.apply_delivered(7, 2, 2, 9);
        let mut new = old.clone();
        new.apply_ack(1, 1);
        new.apply_delivered(8, 4, 2, 11);
        new.apply_delivered(9, 7, 1, 12);
        let mut changed = Vec::new();
        old.changed_sequences(&new, &mut changed);
        changed.sort_unstable();
        changed.dedup();
        assert_eq!(changed, vec![1, 4, 7]);
        let mut copy = old.clone();
        copy.copy_changes(&new, &changed);
        assert_eq!(copy, new);
    }
}

//! MemStore: the engine with a backend that keeps message bytes in memory, dense by sequence.
//!
//! Messages live in a deque indexed by `seq - base` (holes for deleted or skipped sequences);
//! when holes dominate (many deletes in the middle, a big sequence jump) the table falls back to
//! a sparse map and returns to the dense form once holes are rare again. Headers and payload of
//! one message share one allocation. Only the engine calls this; it knows nothing of subjects.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::config::StreamStoreConfig;
use crate::consumer::MemConsumerStore;
use crate::engine::{Backend, MessageRecord, Store, TtlIndex};
use crate::error::StoreError;
use crate::index::{MessageIndex, Slot};
use crate::traits::ConsumerStore;
use crate::types::StoredMessage;

/// A stream store kept entirely in memory.
pub type MemStore = Store<MemBackend>;

/// Below this many slots holes are never worth a change of layout.
const DENSE_MINIMUM_SLOTS: usize = 1024;

/// Headers followed by payload, in one allocation.
#[derive(Debug, Clone)]
struct Entry {
    data: Bytes,
    headers_len: u32,
}

impl Entry {
    fn new(headers: &[u8], payload: &[u8]) -> Result<Entry, StoreError> {
        let headers_len = u32::try_from(headers.len()).map_err(|_| StoreError::MaxMessageSize)?;
        let mut data = Vec::with_capacity(headers.len() + payload.len());
        data.extend_from_slice(headers);
        data.extend_from_slice(payload);
        Ok(Entry {
            data: Bytes::from(data),
            headers_len,
        })
    }

    fn headers(&self) -> Bytes {
        self.data.slice(..self.headers_len as usize)
    }

    fn payload(&self) -> Bytes {
        self.data.slice(self.headers_len as usize..)
    }
}

/// The message table: dense while holes are few, sparse otherwise.
#[derive(Debug)]
enum Table {
    /// `slots[i]` holds sequence `base + i`; no leading or trailing hole is kept.
    Dense {
        base: u64,
        slots: VecDeque<Option<Entry>>,
        live: usize,
    },
    Sparse(BTreeMap<u64, Entry>),
}

impl Default for Table {
    fn default() -> Self {
        Table::Dense {
            base: 0,
            slots: VecDeque::new(),
            live: 0,
        }
    }
}

/// Whether `live` messages spread over `span` sequences are too holey for the dense form.
fn too_sparse(span: u64, live: usize) -> bool {
    span > DENSE_MINIMUM_SLOTS as u64 && span > 2 * live as u64
}

/// Whether a sparse table may go dense again (hysteresis against flapping between forms).
fn dense_enough(span: u64, live: usize) -> bool {
    span <= DENSE_MINIMUM_SLOTS as u64 || span.saturating_mul(3) <= 4 * live as u64
}

impl Table {
    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            Table::Dense { live, .. } => *live,
            Table::Sparse(map) => map.len(),
        }
    }

    fn get(&self, seq: u64) -> Option<&Entry> {
        match self {
            Table::Dense { base, slots, .. } => {
                let offset = usize::try_from(seq.checked_sub(*base)?).ok()?;
                slots.get(offset)?.as_ref()
            }
            Table::Sparse(map) => map.get(&seq),
        }
    }

    fn insert(&mut self, seq: u64, entry: Entry) {
        if let Table::Dense { base, slots, live } = self {
            if *live == 0 {
                slots.clear();
                *base = seq;
            }
            let end = *base + slots.len() as u64;
            let low = (*base).min(seq);
            let high = end.max(seq + 1);
            if !too_sparse(high - low, *live + 1) {
                for _ in seq..*base {
                    slots.push_front(None);
                }
                *base = low;
                for _ in end..=seq {
                    slots.push_back(None);
                }
                // Offsets fit: the span was just checked against the live count.
                let slot = &mut slots[(seq - *base) as usize];
                if slot.is_none() {
                    *live += 1;
                }
                *slot = Some(entry);
                return;
            }
            self.make_sparse();
        }
        if let Table::Sparse(map) = self {
            map.insert(seq, entry);
        }
    }

    fn remove(&mut self, seq: u64) {
        match self {
            Table::Dense { base, slots, live } => {
                let Some(offset) = seq
                    .checked_sub(*base)
                    .and_then(|offset| usize::try_from(offset).ok())
                else {
                    return;
                };
                if let Some(slot) = slots.get_mut(offset) {
                    if slot.take().is_some() {
                        *live -= 1;
                    }
                }
                Self::trim(base, slots);
                if too_sparse(slots.len() as u64, *live) {
                    self.make_sparse();
                }
            }
            Table::Sparse(map) => {
                map.remove(&seq);
                self.maybe_dense();
            }
        }
    }

    /// Drops every sequence below `first_seq`.
    fn floor(&mut self, first_seq: u64) {
        match self {
            Table::Dense { base, slots, live } => {
                let below = first_seq.saturating_sub(*base);
                if below >= slots.len() as u64 {
                    slots.clear();
                    *live = 0;
                } else {
                    for _ in 0..below {
                        if let Some(Some(_)) = slots.pop_front() {
                            *live -= 1;
                        }
                    }
                    *base += below;
                    Self::trim(base, slots);
                }
            }
            Table::Sparse(map) => {
                *map = map.split_off(&first_seq);
                self.maybe_dense();
            }
        }
    }

    /// Drops leading and trailing holes so the deque spans only live messages.
    fn trim(base: &mut u64, slots: &mut VecDeque<Option<Entry>>) {
        while let Some(None) = slots.front() {
            slots.pop_front();
            *base += 1;
        }
        while let Some(None) = slots.back() {
            slots.pop_back();
        }
        if slots.capacity() > DENSE_MINIMUM_SLOTS && slots.capacity() > 4 * slots.len() {
            slots.shrink_to(2 * slots.len());
        }
    }

    fn make_sparse(&mut self) {
        if let Table::Dense { base, slots, .. } = self {
            let first = *base;
            let map = std::mem::take(slots)
                .into_iter()
                .zip(first..)
                .filter_map(|(slot, seq)| slot.map(|entry| (seq, entry)))
                .collect();
            *self = Table::Sparse(map);
        }
    }

    fn maybe_dense(&mut self) {
        let Table::Sparse(map) = self else {
            return;
        };
        let (Some((&first, _)), Some((&last, _))) = (map.first_key_value(), map.last_key_value())
        else {
            *self = Table::default();
            return;
        };
        if !dense_enough(last - first + 1, map.len()) {
            return;
        }
        let mut slots = VecDeque::with_capacity((last - first + 1) as usize);
        for (seq, entry) in std::mem::take(map) {
            while first + (slots.len() as u64) < seq {
                slots.push_back(None);
            }
            slots.push_back(Some(entry));
        }
        let live = slots.iter().filter(|slot| slot.is_some()).count();
        *self = Table::Dense {
            base: first,
            slots,
            live,
        };
    }
}

/// Message bytes of a [`MemStore`].
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MemBackend {
    messages: Table,
    metadata: Vec<u8>,
    consumers: BTreeMap<String, MemConsumerStore>,
}

impl Store<MemBackend> {
    /// An empty in-memory store.
    pub fn new(config: StreamStoreConfig) -> MemStore {
        Store::from_parts(
            config,
            MessageIndex::new(1),
            TtlIndex::default(),
            MemBackend::default(),
        )
    }
}

impl Backend for MemBackend {
    fn message_size(&self, subject_len: usize, headers_len: usize, payload_len: usize) -> u64 {
        // nats-server memStoreMsgSize.
        (subject_len + headers_len + payload_len + 16) as u64
    }

    fn append(&mut self, record: &MessageRecord<'_>) -> Result<(u32, u32), StoreError> {
        let entry = Entry::new(record.headers, record.payload)?;
        self.messages.insert(record.seq, entry);
        Ok((0, 0))
    }

    fn append_skip(&mut self, _seq: u64, _count: u64) -> Result<(), StoreError> {
        Ok(())
    }

    fn read(&mut self, seq: u64, slot: &Slot, subject: &str) -> Result<StoredMessage, StoreError> {
        let entry = self.messages.get(seq).ok_or(StoreError::NotFound)?;
        Ok(StoredMessage {
            subject: subject.to_string(),
            headers: entry.headers(),
            payload: entry.payload(),
            seq,
            timestamp: slot.timestamp,
        })
    }

    fn removed(&mut self, seq: u64, _slot: &Slot, _erase: bool) -> Result<(), StoreError> {
        self.messages.remove(seq);
        Ok(())
    }

    fn floor(&mut self, first_seq: u64, _index: &MessageIndex) -> Result<(), StoreError> {
        self.messages.floor(first_seq);
        Ok(())
    }

    fn flush(
        &mut self,
        _index: &mut MessageIndex,
        _ttls: &TtlIndex,
        _force_sync: bool,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    fn close(&mut self, _index: &MessageIndex, _ttls: &TtlIndex) -> Result<(), StoreError> {
        Ok(())
    }

    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.metadata = blob.to_vec();
        Ok(())
    }

    fn metadata(&self) -> &[u8] {
        &self.metadata
    }

    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.consumers.retain(|_, consumer| !consumer.is_deleted());
        let consumer = self.consumers.entry(name.to_string()).or_default();
        Ok(Box::new(consumer.clone()))
    }

    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .consumers
            .iter()
            .filter(|(_, consumer)| !consumer.is_deleted())
            .map(|(name, _)| name.clone())
            .collect())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.messages = Table::default();
        self.consumers.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64) -> Entry {
        Entry::new(
            format!("h{seq}").as_bytes(),
            format!("payload {seq}").as_bytes(),
        )
        .expect("entry")
    }

    fn payload_of(table: &Table, seq: u64) -> Option<Bytes> {
        table.get(seq).map(Entry::payload)
    }

    fn is_dense(table: &Table) -> bool {
        matches!(table, Table::Dense { .. })
    }

    #[test]
    fn one_slot_is_small_and_holds_headers_and_payload_apart() {
        assert!(std::mem::size_of::<Option<Entry>>() <= 40);
        let entry = Entry::new(b"NATS/1.0\r\n\r\n", b"body").expect("entry");
        assert_eq!(&entry.headers()[..], b"NATS/1.0\r\n\r\n");
        assert_eq!(&entry.payload()[..], b"body");
        let bare = Entry::new(b"", b"only").expect("entry");
        assert!(bare.headers().is_empty());
        assert_eq!(&bare.payload()[..], b"only");
    }

    #[test]
    fn dense_table_follows_appends_removals_gaps_and_floor() {
        let mut table = Table::default();
        for seq in 1..=10 {
            table.insert(seq, entry(seq));
        }
        assert_eq!(table.len(), 10);
        table.remove(5);
        table.remove(1);
        assert_eq!(payload_of(&table, 5), None);
        assert_eq!(payload_of(&table, 1), None);
        assert_eq!(payload_of(&table, 6).as_deref(), Some(&b"payload 6"[..]));
        assert_eq!(
            table.get(2).map(Entry::headers).as_deref(),
            Some(&b"h2"[..])
        );
        // Skipped sequences (skip_msgs, mirrors) leave holes.
        table.insert(20, entry(20));
        assert_eq!(payload_of(&table, 15), None);
        assert_eq!(payload_of(&table, 20).as_deref(), Some(&b"payload 20"[..]));
        assert_eq!(table.len(), 9);
        table.floor(7);
        assert_eq!(table.len(), 5);
        assert_eq!(payload_of(&table, 6), None);
        assert_eq!(payload_of(&table, 7).as_deref(), Some(&b"payload 7"[..]));
        table.floor(100);
        assert_eq!(table.len(), 0);
        // An empty table starts again at whatever sequence comes next (compact beyond last).
        table.insert(1000, entry(1000));
        assert_eq!(
            payload_of(&table, 1000).as_deref(),
            Some(&b"payload 1000"[..])
        );
        assert_eq!(payload_of(&table, 999), None);
        assert!(is_dense(&table));
    }

    #[test]
    fn holes_switch_to_sparse_and_back_without_losing_messages() {
        let mut table = Table::default();
        let count = 4 * DENSE_MINIMUM_SLOTS as u64;
        for seq in 1..=count {
            table.insert(seq, entry(seq));
        }
        // Delete every odd sequence but the first: more than half become holes.
        for seq in (3..=count).step_by(2) {
            table.remove(seq);
        }
        for seq in [4, 6, 8] {
            table.remove(seq);
        }
        assert!(!is_dense(&table));
        assert_eq!(payload_of(&table, 1).as_deref(), Some(&b"payload 1"[..]));
        assert_eq!(payload_of(&table, 4), None);
        assert_eq!(payload_of(&table, 10).as_deref(), Some(&b"payload 10"[..]));
        // Dropping the holey part makes it dense again.
        table.floor(count - 10);
        for seq in count + 1..=count + 100 {
            table.insert(seq, entry(seq));
        }
        table.floor(count + 1);
        assert!(is_dense(&table));
        assert_eq!(table.len(), 100);
        for seq in count + 1..=count + 100 {
            assert_eq!(
                table.get(seq).map(Entry::payload),
                Some(entry(seq).payload())
            );
        }
    }

    #[test]
    fn a_huge_sequence_jump_does_not_allocate_the_gap() {
        let mut table = Table::default();
        for seq in 1..=10 {
            table.insert(seq, entry(seq));
        }
        table.insert(1 << 40, entry(1 << 40));
        assert!(!is_dense(&table));
        assert_eq!(table.len(), 11);
        assert_eq!(payload_of(&table, 3).as_deref(), Some(&b"payload 3"[..]));
        table.floor(11);
        assert!(is_dense(&table));
        assert_eq!(table.len(), 1);
        let next = (1 << 40) + 1;
        table.insert(next, entry(next));
        assert_eq!(payload_of(&table, next), Some(entry(next).payload()));
        table.remove(1 << 40);
        table.remove(next);
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn table_agrees_with_a_plain_map_under_mixed_operations() {
        let mut table = Table::default();
        let mut model = BTreeMap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next_random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut next_seq = 1u64;
        let mut floor = 1u64;
        let mut sparse_seen = 0;
        for _ in 0..20_000 {
            match next_random() % 10 {
                0..=4 => {
                    table.insert(next_seq, entry(next_seq));
                    model.insert(next_seq, ());
                    next_seq += 1;
                }
                5 => next_seq += next_random() % 600,
                6..=8 if next_seq > floor => {
                    let seq = floor + next_random() % (next_seq - floor);
                    table.remove(seq);
                    model.remove(&seq);
                }
                _ => {
                    floor += next_random() % 64;
                    table.floor(floor);
                    model = model.split_off(&floor);
                }
            }
            assert_eq!(table.len(), model.len());
            sparse_seen += usize::from(!is_dense(&table));
        }
        assert!(sparse_seen > 0, "the sparse form was never exercised");
        for seq in 0..next_seq + 10 {
            let expected = model.contains_key(&seq).then(|| entry(seq).payload());
            assert_eq!(payload_of(&table, seq), expected, "seq {seq}");
        }
    }
}

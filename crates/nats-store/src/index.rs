//! The in-memory index both stores share: one slot per sequence from the first live one to the last,
//! and a subject table (first/last/count per subject) interned to compact ids.
//!
//!
//! Memory: a slot is 24 bytes per sequence; a subject costs one 48-byte subject-tree node (its
//! counters and text reference), its text in an arena (`text_arena.rs`) and one hash entry (9
//! bytes before load slack) in the tree's table, which also serves lookups by subject
//! (`subject_table.rs`, `subject_tree.rs`).
//! `examples/index_figures.rs` counts it with the allocator.

mod subject_table;
pub(crate) mod text_arena;

use std::collections::VecDeque;

pub use subject_table::{SubjectEntry, SubjectTable};

use crate::filter::{is_full_wildcard, is_literal, subject_matches_filter};
use crate::subject_tree::SubjectCounters;

/// Sequences a wildcard `next_matching` scans before consulting the subject table.
const SHORT_SCAN: u64 = 4096;

/// How many subject-tree visits one sequence of a tail walk costs (measured with
/// `examples/wildcard_figures.rs`): `num_pending` walks the tail instead of the matching subjects
/// only when the tail is that much shorter than the subject table.
const TAIL_WALK_COST: u64 = 16;

/// Subject id marking a deleted (or skipped) sequence.
pub(crate) const DELETED: u32 = u32::MAX;

/// What the index knows about one sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Store timestamp, nanos since epoch.
    pub timestamp: i64,
    /// Backend-specific position (FileStore: byte offset in the block).
    pub location: u32,
    /// Bytes accounted to the stream for this message.
    pub size: u32,
    /// Subject id, or `DELETED` (`u32::MAX`).
    pub subject_id: u32,
    /// Backend-specific record length (FileStore: bytes on disk).
    pub record_len: u32,
}

impl Slot {
    /// A placeholder for a sequence that never held a message; keeps timestamps ordered.
    pub fn deleted(timestamp: i64) -> Slot {
        Slot {
            timestamp,
            location: 0,
            size: 0,
            subject_id: DELETED,
            record_len: 0,
        }
    }

    pub fn is_live(&self) -> bool {
        self.subject_id != DELETED
    }
}

/// Decides per subject id whether it matches a set of filters, memoised.
pub(crate) struct FilterMatcher<'a> {
    filters: &'a [String],
    all: bool,
    memo: hashbrown::HashMap<u32, bool>,
}

impl<'a> FilterMatcher<'a> {
    pub fn new(filters: &'a [String]) -> Self {
        let all = filters.is_empty() || filters.iter().any(|f| is_full_wildcard(f));
        FilterMatcher {
            filters,
            all,
            memo: hashbrown::HashMap::new(),
        }
    }

    pub fn matches(&mut self, subjects: &SubjectTable, id: u32) -> bool {
        if self.all {
            return true;
        }
        let filters = self.filters;
        *self.memo.entry(id).or_insert_with(|| {
            let subject = subjects.entry(id).subject;
            filters.iter().any(|f| subject_matches_filter(subject, f))
        })
    }
}

/// Sequence-ordered message index.
#[derive(Debug)]
pub struct MessageIndex {
    /// Sequence of `slots[0]`; the first live sequence when any message is live.
    base_seq: u64,
    slots: VecDeque<Slot>,
    last_seq: u64,
    last_timestamp: i64,
    msgs: u64,
    bytes: u64,
    pub(crate) subjects: SubjectTable,
}

impl MessageIndex {
    /// An empty index whose next sequence is `first_seq`.
    pub fn new(first_seq: u64) -> Self {
        let first_seq = first_seq.max(1);
        MessageIndex {
            base_seq: first_seq,
            slots: VecDeque::new(),
            last_seq: first_seq - 1,
            last_timestamp: 0,
            msgs: 0,
            bytes: 0,
            subjects: SubjectTable::default(),
        }
    }

    pub fn msgs(&self) -> u64 {
        self.msgs
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp
    }
    pub fn set_last_timestamp(&mut self, timestamp: i64) {
        self.last_timestamp = timestamp;
    }
    /// First live sequence, or last + 1 when empty.
    pub fn first_seq(&self) -> u64 {
        if self.msgs == 0 {
            self.last_seq + 1
        } else {
            self.base_seq
        }
    }
    /// Text of a live subject id.
    pub fn subject_text(&self, id: u32) -> &str {
        self.subjects.entry(id).subject
    }
    /// The subject table (for figures and tests outside the crate).
    pub fn subject_table(&self) -> &SubjectTable {
        &self.subjects
    }
    pub fn slot_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    /// The live slot of `seq`.
    pub fn get(&self, seq: u64) -> Option<&Slot> {
        let offset = seq.checked_sub(self.base_seq)?;
        self.slots
            .get(usize::try_from(offset).ok()?)
            .filter(|slot| slot.is_live())
    }

    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Slot> {
        let offset = seq.checked_sub(self.base_seq)?;
        self.slots
            .get_mut(usize::try_from(offset).ok()?)
            .filter(|slot| slot.is_live())
    }

    /// Room for `additional` more sequences.
    pub fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }

    /// Append `seq` (> last) with `subject`; sequences in between become deleted.
    pub fn push(&mut self, seq: u64, mut slot: Slot, subject: &str) {
        debug_assert!(seq > self.last_seq);
        self.extend_deleted_to(seq - 1);
        slot.subject_id = self.subjects.add(subject, seq);
        self.slots.push_back(slot);
        self.last_seq = seq;
        self.last_timestamp = slot.timestamp;
        self.msgs += 1;
        self.bytes += u64::from(slot.size);
    }

    /// Make every sequence up to `seq` exist (as deleted when new).
    pub fn extend_deleted_to(&mut self, seq: u64) {
        if seq <= self.last_seq {
            return;
        }
        if self.msgs == 0 {
            // Nothing live: no need to materialise deleted slots.
            self.slots.clear();
            self.base_seq = seq + 1;
        } else {
            for _ in self.last_seq..seq {
                self.slots.push_back(Slot::deleted(self.last_timestamp));
            }
        }
        self.last_seq = seq;
    }

    /// Remove `seq`; returns its slot and subject id when it was live.
    pub fn remove(&mut self, seq: u64) -> Option<Slot> {
        let offset = usize::try_from(seq.checked_sub(self.base_seq)?).ok()?;
        let slot = *self.slots.get(offset).filter(|slot| slot.is_live())?;
        self.slots[offset].subject_id = DELETED;
        self.msgs -= 1;
        self.bytes -= u64::from(slot.size);
        self.forget_subject_seq(slot.subject_id, seq);
        self.trim_front();
        Some(slot)
    }

    fn forget_subject_seq(&mut self, id: u32, seq: u64) {
        let entry = self.subjects.record_mut(id);
        entry.count -= 1;
        if entry.count == 0 {
            self.subjects.release(id);
            return;
        }
        if entry.count == 1 {
            if seq == entry.first {
                entry.first = entry.last;
            } else if seq == entry.last {
                entry.last = entry.first;
            }
            return;
        }
        let (first, last) = (entry.first, entry.last);
        if seq == first {
            let next = self.scan_forward(seq + 1, last, id).unwrap_or(last);
            self.subjects.record_mut(id).first = next;
        } else if seq == last {
            let previous = self.scan_backward(seq - 1, first, id).unwrap_or(first);
            self.subjects.record_mut(id).last = previous;
        }
    }

    fn scan_forward(&self, from: u64, to: u64, id: u32) -> Option<u64> {
        (from.max(self.base_seq)..=to)
            .find(|seq| self.slot_at(*seq).is_some_and(|slot| slot.subject_id == id))
    }

    fn scan_backward(&self, from: u64, to: u64, id: u32) -> Option<u64> {
        (to.max(self.base_seq)..=from)
            .rev()
            .find(|seq| self.slot_at(*seq).is_some_and(|slot| slot.subject_id == id))
    }

    fn slot_at(&self, seq: u64) -> Option<&Slot> {
        self.slots
            .get(usize::try_from(seq.checked_sub(self.base_seq)?).ok()?)
    }

    fn trim_front(&mut self) {
        if self.msgs == 0 {
            self.slots.clear();
            self.base_seq = self.last_seq + 1;
            return;
        }
        while self.slots.front().is_some_and(|slot| !slot.is_live()) {
            self.slots.pop_front();
            self.base_seq += 1;
        }
        if self.slots.capacity() > 64 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to(self.slots.len() * 2);
        }
    }

    /// Drop everything; the next sequence stays last + 1 unless `first_seq` is beyond it.
    pub fn reset(&mut self, first_seq: u64) {
        let last_seq = self.last_seq.max(first_seq.saturating_sub(1));
        let last_timestamp = self.last_timestamp;
        *self = MessageIndex::new(last_seq + 1);
        self.last_timestamp = last_timestamp;
    }

    /// Live sequences in `[from, to]`, ascending.
    pub fn live_range(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, &Slot)> + '_ {
        let start = from.max(self.base_seq);
        let end = to.min(self.last_seq);
        (start..=end).filter_map(move |seq| self.get(seq).map(|slot| (seq, slot)))
    }

    /// First live sequence >= `start` matching `filters`.
    pub fn next_matching(&self, filters: &[String], start: u64) -> Option<u64> {
        let start = start.max(self.base_seq);
        if filters.len() == 1 && is_literal(&filters[0]) {
            let id = self.subjects.lookup(&filters[0])?;
            let entry = self.subjects.counters(id);
            if start > entry.last {
                return None;
            }
            return self.scan_forward(start.max(entry.first), entry.last, id);
        }
        let mut matcher = FilterMatcher::new(filters);
        if !matcher.all {
            // A consumer walking forward usually finds its next match close by: try a short scan
            // before paying for a pass over the subject table.
            let probe_end = start.saturating_add(SHORT_SCAN).min(self.last_seq);
            if let Some(found) = (start..=probe_end).find(|seq| {
                self.get(*seq)
                    .is_some_and(|slot| matcher.matches(&self.subjects, slot.subject_id))
            }) {
                return Some(found);
            }
            if probe_end >= self.last_seq {
                return None;
            }
            let start = probe_end + 1;
            // Bound the rest of the scan by the matching subjects' first/last, visited in the
            // subject tree without collecting them.
            let mut lowest = u64::MAX;
            let mut highest = 0;
            let mut bound = |_: u32, entry: &SubjectCounters| {
                if entry.last >= start {
                    lowest = lowest.min(entry.first.max(start));
                    highest = highest.max(entry.last);
                }
            };
            for filter in filters {
                if is_literal(filter) {
                    if let Some(id) = self.subjects.lookup(filter) {
                        bound(id, self.subjects.counters(id));
                    }
                } else {
                    self.subjects.visit_matching(filter, &mut bound);
                }
            }
            if lowest > highest {
                return None;
            }
            return (lowest..=highest).find(|seq| {
                self.get(*seq)
                    .is_some_and(|slot| matcher.matches(&self.subjects, slot.subject_id))
            });
        }
        (start..=self.last_seq).find(|seq| self.get(*seq).is_some())
    }

    /// Last live sequence <= `start` matching `filter`.
    pub fn prev_matching(&self, filter: &str, start: u64) -> Option<u64> {
        let start = start.min(self.last_seq);
        if start < self.base_seq {
            return None;
        }
        if is_literal(filter) {
            let id = self.subjects.lookup(filter)?;
            let entry = self.subjects.counters(id);
            if start >= entry.last {
                return Some(entry.last);
            }
            if start < entry.first {
                return None;
            }
            return self.scan_backward(start, entry.first, id);
        }
        let filters = [filter.to_string()];
        let mut matcher = FilterMatcher::new(&filters);
        (self.base_seq..=start).rev().find(|seq| {
            self.get(*seq)
                .is_some_and(|slot| matcher.matches(&self.subjects, slot.subject_id))
        })
    }

    /// Newest live sequence matching `filter`.
    pub fn last_matching(&self, filter: &str) -> Option<u64> {
        if is_full_wildcard(filter) {
            return self.prev_matching(">", self.last_seq);
        }
        if is_literal(filter) {
            return self
                .subjects
                .lookup(filter)
                .map(|id| self.subjects.counters(id).last);
        }
        // Walk the matching subjects without collecting them (a `*` may match millions).
        let mut newest = None;
        self.subjects.visit_matching(filter, |_, counters| {
            newest = newest.max(Some(counters.last));
        });
        newest
    }

    /// See `StreamStore::num_pending_matching`.
    pub fn num_pending(&self, filters: &[String], start: u64, last_per_subject: bool) -> u64 {
        let start = start.max(1);
        let all = filters.is_empty() || filters.iter().any(|f| is_full_wildcard(f));
        let literal = filters.len() == 1 && is_literal(&filters[0]);
        if !all && !literal && !last_per_subject && start <= self.last_seq {
            // A consumer close to the tail: walking the few remaining sequences is cheaper than
            // matching the whole subject table.
            let from = start.max(self.base_seq);
            if from > self.last_seq {
                return 0;
            }
            let remaining = self.last_seq - from + 1;
            // A tail sequence costs a memoised match (a hash probe, the first time a filter
            // match); a subject a tree-node visit, roughly a sixteenth of that.
            if remaining.saturating_mul(TAIL_WALK_COST) < self.subjects.len() as u64 {
                let mut matcher = FilterMatcher::new(filters);
                return self
                    .live_range(start, self.last_seq)
                    .filter(|(_, slot)| matcher.matches(&self.subjects, slot.subject_id))
                    .count() as u64;
            }
        }
        if !all && filters.len() == 1 {
            // One filter matches each subject once: count while walking, no id list to sort.
            let mut total = 0;
            let mut partial: Vec<u32> = Vec::new();
            let mut count = |id: u32, entry: &SubjectCounters| {
                if last_per_subject {
                    total += u64::from(entry.last >= start);
                } else if start <= entry.first {
                    total += entry.count;
                } else if start <= entry.last {
                    partial.push(id);
                }
            };
            if is_literal(&filters[0]) {
                if let Some(id) = self.subjects.lookup(&filters[0]) {
                    count(id, self.subjects.counters(id));
                }
            } else {
                self.subjects.visit_matching(&filters[0], count);
            }
            return total + self.count_partial(start, partial);
        }
        let mut ids: Vec<u32> = if all {
            Vec::new()
        } else {
            filters
                .iter()
                .flat_map(|f| self.subjects.matching(f))
                .collect()
        };
        ids.sort_unstable();
        ids.dedup();
        if last_per_subject {
            if all {
                return self
                    .subjects
                    .live_records()
                    .filter(|record| record.last >= start)
                    .count() as u64;
            }
            return ids
                .iter()
                .filter(|id| self.subjects.counters(**id).last >= start)
                .count() as u64;
        }
        if all {
            if start <= self.base_seq {
                return self.msgs;
            }
            if start > self.last_seq {
                return 0;
            }
            let span = self.last_seq - self.base_seq + 1;
            if span == self.msgs {
                // No holes: nothing to count.
                return self.last_seq - start + 1;
            }
            // Count whichever side of `start` is shorter.
            let before = start - self.base_seq;
            let after = self.last_seq - start + 1;
            if before < after {
                return self.msgs - self.live_range(self.base_seq, start - 1).count() as u64;
            }
            return self.live_range(start, self.last_seq).count() as u64;
        }
        let mut total = 0;
        let mut partial: Vec<u32> = Vec::new();
        for id in ids {
            let entry = self.subjects.counters(id);
            if start <= entry.first {
                total += entry.count;
            } else if start <= entry.last {
                partial.push(id);
            }
        }
        total + self.count_partial(start, partial)
    }

    /// Messages at or after `start` on `partial`'s subjects, each of which has messages on both
    /// sides of `start`.
    fn count_partial(&self, start: u64, partial: Vec<u32>) -> u64 {
        let mut total = 0;
        match partial.len() {
            0 => {}
            1 => {
                let id = partial[0];
                let entry = self.subjects.counters(id);
                let before = start - entry.first;
                let after = entry.last - start + 1;
                if before < after {
                    let seen = self
                        .live_range(entry.first, start - 1)
                        .filter(|(_, slot)| slot.subject_id == id)
                        .count() as u64;
                    total += entry.count - seen;
                } else {
                    total += self
                        .live_range(start, entry.last)
                        .filter(|(_, slot)| slot.subject_id == id)
                        .count() as u64;
                }
            }
            _ => {
                let highest = partial
                    .iter()
                    .map(|id| self.subjects.counters(*id).last)
                    .max()
                    .unwrap_or(0);
                let set: hashbrown::HashSet<u32> = partial.into_iter().collect();
                total += self
                    .live_range(start, highest)
                    .filter(|(_, slot)| set.contains(&slot.subject_id))
                    .count() as u64;
            }
        }
        total
    }

    /// Deleted sequences between first and last.
    pub fn deleted(&self) -> Vec<u64> {
        if self.msgs == 0 {
            return Vec::new();
        }
        (self.base_seq..=self.last_seq)
            .filter(|seq| self.get(*seq).is_none())
            .collect()
    }

    /// Slots of live messages, for snapshots and compaction.
    pub fn live_slots(&self) -> impl Iterator<Item = (u64, &Slot)> + '_ {
        self.live_range(self.base_seq, self.last_seq)
    }

    /// First live sequence whose timestamp >= `timestamp` (timestamps are non-decreasing).
    pub fn seq_for_time(&self, timestamp: i64) -> u64 {
        // Removed slots keep their timestamp, so the whole deque stays ordered by time.
        let position = self
            .slots
            .partition_point(|slot| slot.timestamp < timestamp);
        let mut seq = self.base_seq + position as u64;
        while seq <= self.last_seq && self.get(seq).is_none() {
            seq += 1;
        }
        seq.min(self.last_seq + 1)
    }
}

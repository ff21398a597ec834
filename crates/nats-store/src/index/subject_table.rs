//! Subject text <-> compact id, with first/last/count per subject.
//!
//! Who uses it: `MessageIndex` (one per store) interns every stored subject here; the engine reads
//! counters through `entry` and looks subjects up for limits, purges and listings. It knows
//! nothing of sequences beyond the three counters.
//!
//! Memory per subject: a 32-byte record (three counters and a packed text reference), the text
//! itself in the arena (`text_arena.rs`, no per-subject allocation) and the subject tree's node
//! and hash entry (`subject_tree.rs`). There is no separate hash table: the tree's table, keyed
//! by prefix text, finds a whole subject too, since a subject is the prefix ending at its last
//! token.

use crate::filter::{is_full_wildcard, is_literal};
use crate::index::text_arena::{TextArena, TextRef};
use crate::subject_tree::SubjectTree;

/// One subject's counters, as the engine reads them.
#[derive(Debug, Clone, Copy)]
pub struct SubjectEntry<'a> {
    pub subject: &'a str,
    pub first: u64,
    pub last: u64,
    pub count: u64,
}

/// What the table keeps per subject id; `count == 0` marks a free id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SubjectRecord {
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) count: u64,
    text: TextRef,
}

/// Records and their texts: what the subject tree reads to compare prefixes.
#[derive(Debug, Default)]
pub(crate) struct SubjectTexts {
    records: Vec<SubjectRecord>,
    arena: TextArena,
}

impl SubjectTexts {
    pub(crate) fn text(&self, id: u32) -> &str {
        self.arena.get(self.records[id as usize].text)
    }

    pub(crate) fn text_len(&self, id: u32) -> usize {
        self.records[id as usize].text.len()
    }

    /// Rewrite the live texts into a fresh arena, dropping the holes released ones left.
    fn compact(&mut self) {
        let mut fresh = TextArena::default();
        for record in self.records.iter_mut().filter(|record| record.count > 0) {
            record.text = fresh.push(self.arena.get(record.text));
        }
        self.arena = fresh;
    }
}

/// Interned subjects with their counters, and the token tree over them.
#[derive(Debug, Default)]
pub struct SubjectTable {
    texts: SubjectTexts,
    free_ids: Vec<u32>,
    live: usize,
    /// Id of the subject `add` saw last: a stream often gets runs of one subject, and comparing
    /// its text is cheaper than hashing it. Checked by text, so a released or reused id is harmless.
    last_added: u32,
    /// Token tree over the live subjects: finds a subject by text and the subjects matching a
    /// wildcard. Kept in step from the first subject on (a new subject pays one insert; a
    /// repeated one pays a lookup), so no wildcard query ever builds it over the whole table:
    /// creating a wildcard-filtered consumer on a stream of a million subjects must not stall its
    /// stream (issue 5).
    tree: SubjectTree,
}

/// Below this many ids a table that empties keeps its allocations (a work queue that drains and
/// refills must not reallocate per message); above it, an empty table gives its memory back.
const KEEP_WHEN_EMPTY: usize = 64;

impl SubjectTable {
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub fn lookup(&self, subject: &str) -> Option<u32> {
        let (_, node) = self.tree.locate(&self.texts, subject);
        node.and_then(|node| self.tree.subject_at(&self.texts, node))
    }

    /// Counters and text of a live subject id.
    pub fn entry(&self, id: u32) -> SubjectEntry<'_> {
        let record = &self.texts.records[id as usize];
        SubjectEntry {
            subject: self.texts.arena.get(record.text),
            first: record.first,
            last: record.last,
            count: record.count,
        }
    }

    pub(crate) fn record_mut(&mut self, id: u32) -> &mut SubjectRecord {
        &mut self.texts.records[id as usize]
    }

    /// Records of the live subjects.
    pub(crate) fn live_records(&self) -> impl Iterator<Item = &SubjectRecord> + '_ {
        self.texts.records.iter().filter(|record| record.count > 0)
    }

    fn count_seq(record: &mut SubjectRecord, seq: u64) {
        record.first = record.first.min(seq);
        record.last = record.last.max(seq);
        record.count += 1;
    }

    /// Count one more message `seq` on `subject`, creating the entry when needed.
    pub fn add(&mut self, subject: &str, seq: u64) -> u32 {
        let recent = self.last_added;
        if self
            .texts
            .records
            .get(recent as usize)
            .is_some_and(|record| record.count > 0)
            && self.texts.text(recent) == subject
        {
            Self::count_seq(&mut self.texts.records[recent as usize], seq);
            return recent;
        }
        let (hash, node) = self.tree.locate(&self.texts, subject);
        if let Some(id) = node.and_then(|node| self.tree.subject_at(&self.texts, node)) {
            self.last_added = id;
            Self::count_seq(&mut self.texts.records[id as usize], seq);
            return id;
        }
        let record = SubjectRecord {
            first: seq,
            last: seq,
            count: 1,
            text: self.texts.arena.push(subject),
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.texts.records[id as usize] = record;
                id
            }
            None => {
                self.texts.records.push(record);
                (self.texts.records.len() - 1) as u32
            }
        };
        self.tree.insert(&self.texts, id, hash, node);
        self.live += 1;
        self.last_added = id;
        id
    }

    /// Forget `id`, whose count just reached zero.
    pub(crate) fn release(&mut self, id: u32) {
        self.tree.remove(&self.texts, id);
        self.live -= 1;
        if self.live == 0 && self.texts.records.len() > KEEP_WHEN_EMPTY {
            self.clear();
            return;
        }
        let record = &mut self.texts.records[id as usize];
        let text = std::mem::replace(&mut record.text, TextRef::EMPTY);
        self.texts.arena.release(text);
        self.free_ids.push(id);
        if self.texts.arena.wants_compaction() {
            self.texts.compact();
        }
    }

    /// Ids of live subjects matching `filter`.
    pub fn matching(&self, filter: &str) -> Vec<u32> {
        if is_literal(filter) {
            return self.lookup(filter).into_iter().collect();
        }
        if is_full_wildcard(filter) {
            return self
                .texts
                .records
                .iter()
                .enumerate()
                .filter(|(_, record)| record.count > 0)
                .map(|(id, _)| id as u32)
                .collect();
        }
        let mut found = Vec::new();
        self.tree
            .visit_matching(&self.texts, filter, |id| found.push(id));
        found
    }

    /// Call `visit` with each live subject id matching the wildcard `filter`, without collecting
    /// them first (a `*` may match millions).
    pub(crate) fn visit_matching(&self, filter: &str, visit: impl FnMut(u32)) {
        self.tree.visit_matching(&self.texts, filter, visit);
    }

    pub fn clear(&mut self) {
        *self = SubjectTable::default();
    }

    /// Heap bytes used: records, texts, free ids and the tree (nodes and its hash table).
    pub fn heap_bytes(&self) -> usize {
        self.texts.records.capacity() * std::mem::size_of::<SubjectRecord>()
            + self.texts.arena.heap_bytes()
            + self.free_ids.capacity() * 4
            + self.tree.heap_bytes()
    }
}

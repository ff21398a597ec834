//! Subject text <-> compact id, with first/last/count per subject.
//!
//! Who uses it: `MessageIndex` (one per store) interns every stored subject here; the engine reads
//! counters through `entry` and looks subjects up for limits, purges and listings. It knows
//! nothing of sequences beyond the three counters.
//!
//! The subjects live in the subject tree (`subject_tree.rs`): a subject id is the id of the tree
//! node where the subject ends, which holds its counters and its text (in an arena), and the
//! tree's hash table, keyed by prefix text, is also the lookup by subject. Per subject that is one
//! 48-byte node, one hash entry and the text: no second table, no allocation per subject.

use crate::filter::{is_full_wildcard, is_literal};
use crate::subject_tree::{SubjectCounters, SubjectTree};

/// One subject's counters, as the engine reads them.
#[derive(Debug, Clone, Copy)]
pub struct SubjectEntry<'a> {
    pub subject: &'a str,
    pub first: u64,
    pub last: u64,
    pub count: u64,
}

/// Interned subjects with their counters.
#[derive(Debug, Default)]
pub struct SubjectTable {
    /// Kept in step from the first subject on (a new subject pays one insert; a repeated one
    /// pays a lookup), so no wildcard query ever builds it over the whole table: creating a
    /// wildcard-filtered consumer on a stream of a million subjects must not stall its stream
    /// (issue 5).
    tree: SubjectTree,
    /// Id of the subject `add` saw last: a stream often gets runs of one subject, and comparing
    /// its text is cheaper than hashing it. Checked by text, so a released or reused id is harmless.
    last_added: u32,
}

impl SubjectTable {
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.len() == 0
    }

    pub fn lookup(&self, subject: &str) -> Option<u32> {
        self.tree.lookup(subject)
    }

    /// Counters and text of a live subject id.
    pub fn entry(&self, id: u32) -> SubjectEntry<'_> {
        let counters = self.tree.counters(id);
        SubjectEntry {
            subject: self.tree.text(id),
            first: counters.first,
            last: counters.last,
            count: counters.count,
        }
    }

    /// Counters of a live subject id, without its text.
    pub(crate) fn counters(&self, id: u32) -> &SubjectCounters {
        self.tree.counters(id)
    }

    pub(crate) fn record_mut(&mut self, id: u32) -> &mut SubjectCounters {
        self.tree.counters_mut(id)
    }

    /// Counters of the live subjects.
    pub(crate) fn live_records(&self) -> impl Iterator<Item = &SubjectCounters> + '_ {
        self.tree.live_counters()
    }

    /// Count one more message `seq` on `subject`, creating the entry when needed.
    pub fn add(&mut self, subject: &str, seq: u64) -> u32 {
        let recent = self.last_added;
        let id = if self.tree.is_subject_text(recent, subject) {
            recent
        } else {
            let (hash, node) = self.tree.locate(subject);
            match node.filter(|node| self.tree.is_subject(*node)) {
                Some(id) => id,
                None => {
                    let id = self.tree.insert(subject, hash, node, seq);
                    self.last_added = id;
                    return id;
                }
            }
        };
        self.last_added = id;
        let counters = self.tree.counters_mut(id);
        counters.first = counters.first.min(seq);
        counters.last = counters.last.max(seq);
        counters.count += 1;
        id
    }

    /// Forget `id`, whose count just reached zero.
    pub(crate) fn release(&mut self, id: u32) {
        self.tree.remove(id);
    }

    /// Ids of live subjects matching `filter`.
    pub fn matching(&self, filter: &str) -> Vec<u32> {
        if is_literal(filter) {
            return self.lookup(filter).into_iter().collect();
        }
        if is_full_wildcard(filter) {
            return self.tree.subject_ids().collect();
        }
        let mut found = Vec::new();
        self.tree.visit_matching(filter, |id, _| found.push(id));
        found
    }

    /// Call `visit` with each live subject id (and its counters) matching the wildcard `filter`,
    /// without collecting them first (a `*` may match millions).
    pub(crate) fn visit_matching(&self, filter: &str, visit: impl FnMut(u32, &SubjectCounters)) {
        self.tree.visit_matching(filter, visit);
    }

    pub fn clear(&mut self) {
        *self = SubjectTable::default();
    }

    /// Heap bytes used: the tree's nodes (with the counters), texts, hash table and buffers.
    pub fn heap_bytes(&self) -> usize {
        self.tree.heap_bytes()
    }
}

//! The subjects of a stream as a token trie whose terminal nodes are the subjects themselves:
//! a literal subject is found with one hash probe, and a wildcard filter (`orders.*.new`,
//! `orders.eu.>`) visits only the branches it can match instead of every subject.
//!
//! Who uses it: `index::SubjectTable` (the subject ids the per-sequence slots name are node ids
//! here) adds and releases subjects and reads their counters. It knows nothing of sequences
//! beyond first/last/count per subject.
//!
//! One hash table serves lookups and the tree: every node is keyed by its prefix text (the
//! subject up to the end of the node's token: `orders`, `orders.eu`, `orders.eu.new`), which
//! names it uniquely; a whole subject is the prefix ending at its last token. So a lookup by
//! subject hashes the subject once and lands on the node that holds its counters and text, and a
//! wildcard's literal token hashes the parent's prefix plus the token.
//!
//! Memory: one 48-byte node per distinct prefix (for most streams, one per subject plus a few
//! shared ones), one 8-byte hash entry (9 with hashbrown's control byte, before load slack) and
//! the subject's text in the arena (`index/text_arena.rs`). Prefix text is not stored again: a
//! node holds the text of one live subject at or below it (its `sample`, its own text when a
//! subject ends there) and the prefix's length.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::index::text_arena::{TextArena, TextRef};

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

/// Below this many nodes a tree that empties keeps its allocations (a work queue that drains and
/// refills must not reallocate per message); above it, an empty tree gives its memory back.
const KEEP_WHEN_EMPTY: usize = 64;

/// A subject's messages; `count == 0` on a node where no subject ends.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SubjectCounters {
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) count: u64,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    counters: SubjectCounters,
    /// Text of a live subject at or below this node; its own text when a subject ends here.
    sample: TextRef,
    first_child: u32,
    next_sibling: u32,
    previous_sibling: u32,
    /// Length of the node's prefix: the sample's bytes up to the end of this token.
    end: u16,
}

impl Node {
    const EMPTY: Node = Node {
        counters: SubjectCounters {
            first: 0,
            last: 0,
            count: 0,
        },
        sample: TextRef::EMPTY,
        first_child: NONE,
        next_sibling: NONE,
        previous_sibling: NONE,
        end: 0,
    };
}

/// Nodes per page. A page is 48 KiB: small next to a store with that many subjects, and large
/// enough that the page list stays in cache.
const PAGE_BITS: u32 = 10;
const PAGE: usize = 1 << PAGE_BITS;

/// The nodes, in fixed-size pages instead of one vector: a vector that doubles holds up to twice
/// the memory it uses (a million subjects would sit in room for two) and copies everything as
/// it grows; pages waste at most the unused part of the last one. Only the first page grows
/// like a vector, so a stream with a handful of subjects stays small.
#[derive(Debug, Default)]
struct NodePages {
    pages: Vec<Vec<Node>>,
    len: usize,
}

impl NodePages {
    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, node: Node) {
        if self.pages.last().is_none_or(|page| page.len() == PAGE) {
            let capacity = if self.pages.is_empty() { 4 } else { PAGE };
            self.pages.push(Vec::with_capacity(capacity));
        }
        if let Some(page) = self.pages.last_mut() {
            page.push(node);
            self.len += 1;
        }
    }

    fn get(&self, index: usize) -> Option<&Node> {
        self.pages.get(index >> PAGE_BITS)?.get(index & (PAGE - 1))
    }

    fn iter(&self) -> impl Iterator<Item = &Node> + '_ {
        self.pages.iter().flatten()
    }

    fn heap_bytes(&self) -> usize {
        self.pages
            .iter()
            .map(|page| page.capacity() * std::mem::size_of::<Node>())
            .sum::<usize>()
            + self.pages.capacity() * std::mem::size_of::<Vec<Node>>()
    }
}

impl std::ops::Index<usize> for NodePages {
    type Output = Node;

    fn index(&self, index: usize) -> &Node {
        &self.pages[index >> PAGE_BITS][index & (PAGE - 1)]
    }
}

impl std::ops::IndexMut<usize> for NodePages {
    fn index_mut(&mut self, index: usize) -> &mut Node {
        &mut self.pages[index >> PAGE_BITS][index & (PAGE - 1)]
    }
}

/// Nodes, subject texts, and every node but the root keyed by its prefix text: entries are
/// `(node, hash)`. The 32-bit hash is kept so growing the table never reads text (a random
/// access per node), and a probe touches text only on a full hash match.
#[derive(Debug, Default)]
pub(crate) struct SubjectTree {
    nodes: NodePages,
    free_nodes: Vec<u32>,
    prefixes: HashTable<(u32, u32)>,
    hasher: DefaultHashBuilder,
    texts: TextArena,
    live: usize,
    /// Missing prefixes of the subject being inserted, `(end, hash)`, deepest first.
    pending: Vec<(u16, u32)>,
    /// The path of the subject being removed, `(parent, node, hash)`, root side first.
    path: Vec<(u32, u32, u32)>,
}

/// Token ends of a subject: the offset of every '.', then its length.
fn token_ends(subject: &[u8]) -> impl Iterator<Item = usize> + '_ {
    subject
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'.')
        .map(|(offset, _)| offset)
        .chain(std::iter::once(subject.len()))
}

impl SubjectTree {
    /// Live subjects.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// 32 bits of hash, spread so both hashbrown's bucket bits (low) and tag bits (high) use it.
    fn hash_text(&self, text: &[u8]) -> u32 {
        let full = self.hasher.hash_one(text);
        (full ^ (full >> 32)) as u32
    }

    fn table_hash(hash: u32) -> u64 {
        (u64::from(hash) << 32) | u64::from(hash)
    }

    fn prefix(&self, node: u32) -> &[u8] {
        let value = &self.nodes[node as usize];
        self.texts
            .bytes(value.sample)
            .get(..usize::from(value.end))
            .unwrap_or(&[])
    }

    fn find(&self, text: &[u8], hash: u32) -> Option<u32> {
        self.prefixes
            .find(Self::table_hash(hash), |(node, stored)| {
                *stored == hash && self.prefix(*node) == text
            })
            .map(|(node, _)| *node)
    }

    fn is_terminal(&self, node: u32) -> bool {
        self.nodes[node as usize].counters.count > 0
    }

    /// The hash of `subject` and its node, when one exists (a subject or a prefix of others).
    pub(crate) fn locate(&self, subject: &str) -> (u32, Option<u32>) {
        let hash = self.hash_text(subject.as_bytes());
        (hash, self.find(subject.as_bytes(), hash))
    }

    /// The live subject id of `subject`.
    pub(crate) fn lookup(&self, subject: &str) -> Option<u32> {
        let (_, node) = self.locate(subject);
        node.filter(|node| self.is_terminal(*node))
    }

    /// True when `id` is the live subject `subject` (a cheap check before hashing).
    pub(crate) fn is_subject_text(&self, id: u32, subject: &str) -> bool {
        self.is_subject(id) && self.prefix(id) == subject.as_bytes()
    }

    /// True when `id` is a live subject.
    pub(crate) fn is_subject(&self, id: u32) -> bool {
        self.nodes
            .get(id as usize)
            .is_some_and(|node| node.counters.count > 0)
    }

    /// Text of subject `id` (or of the prefix a node stands for).
    pub(crate) fn text(&self, id: u32) -> &str {
        let value = &self.nodes[id as usize];
        self.texts
            .get(value.sample)
            .get(..usize::from(value.end))
            .unwrap_or("")
    }

    pub(crate) fn counters(&self, id: u32) -> &SubjectCounters {
        &self.nodes[id as usize].counters
    }

    pub(crate) fn counters_mut(&mut self, id: u32) -> &mut SubjectCounters {
        &mut self.nodes[id as usize].counters
    }

    /// Ids of the live subjects, in id order.
    pub(crate) fn subject_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.counters.count > 0)
            .map(|(id, _)| id as u32)
    }

    /// Counters of the live subjects.
    pub(crate) fn live_counters(&self) -> impl Iterator<Item = &SubjectCounters> + '_ {
        self.nodes
            .iter()
            .map(|node| &node.counters)
            .filter(|counters| counters.count > 0)
    }

    /// Add the new subject `subject` with one message `seq`; `hash` and `existing` are what
    /// `locate` said about it (an existing node is one other subjects pass through). Returns its id.
    pub(crate) fn insert(
        &mut self,
        subject: &str,
        hash: u32,
        existing: Option<u32>,
        seq: u64,
    ) -> u32 {
        if self.nodes.is_empty() {
            self.nodes.push(Node::EMPTY);
        }
        let text = self.texts.push(subject);
        let counters = SubjectCounters {
            first: seq,
            last: seq,
            count: 1,
        };
        self.live += 1;
        if let Some(node) = existing {
            // The subject ends where others pass through: that node becomes terminal, with its
            // own text as sample.
            let value = &mut self.nodes[node as usize];
            value.sample = text;
            value.counters = counters;
            return node;
        }
        let subject = subject.as_bytes();
        // Subjects are at most u16::MAX bytes (checked on store), so every end fits.
        self.pending.clear();
        self.pending.push((subject.len() as u16, hash));
        // Walk up to the deepest prefix that exists: most new subjects differ in their last token
        // only, so this usually costs one more probe.
        let mut parent = ROOT;
        let mut cut = subject.len();
        while let Some(dot) = subject[..cut].iter().rposition(|byte| *byte == b'.') {
            let prefix = &subject[..dot];
            let prefix_hash = self.hash_text(prefix);
            if let Some(node) = self.find(prefix, prefix_hash) {
                parent = node;
                break;
            }
            self.pending.push((dot as u16, prefix_hash));
            cut = dot;
        }
        while let Some((end, prefix_hash)) = self.pending.pop() {
            parent = self.add_child(parent, text, end, prefix_hash);
        }
        self.nodes[parent as usize].counters = counters;
        parent
    }

    fn add_child(&mut self, parent: u32, sample: TextRef, end: u16, hash: u32) -> u32 {
        let first = self.nodes[parent as usize].first_child;
        let value = Node {
            sample,
            end,
            next_sibling: first,
            ..Node::EMPTY
        };
        let node = match self.free_nodes.pop() {
            Some(node) => {
                self.nodes[node as usize] = value;
                node
            }
            None => {
                self.nodes.push(value);
                (self.nodes.len() - 1) as u32
            }
        };
        if first != NONE {
            self.nodes[first as usize].previous_sibling = node;
        }
        self.nodes[parent as usize].first_child = node;
        self.prefixes
            .insert_unique(Self::table_hash(hash), (node, hash), |(_, stored)| {
                Self::table_hash(*stored)
            });
        node
    }

    /// Forget subject `id`, whose count just reached zero: drop the nodes only it used, repoint
    /// samples that referred to its text, release the text.
    pub(crate) fn remove(&mut self, id: u32) {
        let Some(value) = self.nodes.get(id as usize).copied() else {
            return;
        };
        let text = value.sample;
        self.live -= 1;
        if self.live == 0 && self.nodes.len() > KEEP_WHEN_EMPTY {
            *self = SubjectTree::default();
            return;
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut parent = ROOT;
        let subject = self.texts.bytes(text);
        for end in token_ends(subject) {
            let prefix = &subject[..end];
            let hash = self.hash_text(prefix);
            let Some(node) = self.find(prefix, hash) else {
                // Not in the tree (cannot happen for a live subject): change nothing.
                break;
            };
            path.push((parent, node, hash));
            parent = node;
        }
        if parent == id {
            for &(parent, node, hash) in path.iter().rev() {
                let value = self.nodes[node as usize];
                if value.sample != text {
                    // Another subject ends here or keeps this branch sampled; above it, samples
                    // may still be `id`'s text, so keep walking.
                    continue;
                }
                if value.first_child == NONE {
                    self.unlink(parent, node, hash);
                } else {
                    let child = self.nodes[value.first_child as usize];
                    self.nodes[node as usize].sample = child.sample;
                }
            }
        }
        self.path = path;
        self.texts.release(text);
        if self.texts.wants_compaction() {
            self.compact_texts();
        }
    }

    fn unlink(&mut self, parent: u32, node: u32, hash: u32) {
        let value = self.nodes[node as usize];
        if value.previous_sibling == NONE {
            self.nodes[parent as usize].first_child = value.next_sibling;
        } else {
            self.nodes[value.previous_sibling as usize].next_sibling = value.next_sibling;
        }
        if value.next_sibling != NONE {
            self.nodes[value.next_sibling as usize].previous_sibling = value.previous_sibling;
        }
        if let Ok(found) = self
            .prefixes
            .find_entry(Self::table_hash(hash), |(other, _)| *other == node)
        {
            found.remove();
        }
        self.nodes[node as usize] = Node::EMPTY;
        self.free_nodes.push(node);
    }

    /// Rewrite the live texts into a fresh arena, dropping the holes released ones left. Children
    /// first, so an inner node can take its first child's new sample.
    fn compact_texts(&mut self) {
        let mut fresh = TextArena::default();
        let mut stack: Vec<(u32, bool)> = vec![(ROOT, false)];
        while let Some((node, children_done)) = stack.pop() {
            if !children_done {
                stack.push((node, true));
                self.for_each_child(node, |child, _| stack.push((child, false)));
                continue;
            }
            if node == ROOT {
                continue;
            }
            let value = self.nodes[node as usize];
            let sample = if value.counters.count > 0 {
                fresh.push(self.text(node))
            } else if value.first_child != NONE {
                self.nodes[value.first_child as usize].sample
            } else {
                TextRef::EMPTY
            };
            self.nodes[node as usize].sample = sample;
        }
        self.texts = fresh;
    }

    fn for_each_child(&self, node: u32, mut visit: impl FnMut(u32, &Node)) {
        let mut child = self.nodes[node as usize].first_child;
        while child != NONE {
            let value = &self.nodes[child as usize];
            visit(child, value);
            child = value.next_sibling;
        }
    }

    /// The child of `node` whose token is `token`: one probe for the parent's prefix plus it.
    fn find_child(&self, node: u32, token: &str, buffer: &mut Vec<u8>) -> Option<u32> {
        buffer.clear();
        if node != ROOT {
            buffer.extend_from_slice(self.prefix(node));
            buffer.push(b'.');
        }
        buffer.extend_from_slice(token.as_bytes());
        self.find(buffer, self.hash_text(buffer))
    }

    /// Call `visit` with the id and counters of each subject matching `filter` (wildcards `*` and
    /// a trailing `>`); only the branches the filter can match are walked.
    pub(crate) fn visit_matching(
        &self,
        filter: &str,
        mut visit: impl FnMut(u32, &SubjectCounters),
    ) {
        if self.nodes.is_empty() || filter.is_empty() {
            return;
        }
        let filter_tokens: Vec<&str> = filter.split('.').collect();
        let mut stack: Vec<(u32, usize)> = vec![(ROOT, 0)];
        let mut buffer = Vec::new();
        while let Some((node, depth)) = stack.pop() {
            let Some(token) = filter_tokens.get(depth) else {
                let value = &self.nodes[node as usize];
                if value.counters.count > 0 {
                    visit(node, &value.counters);
                }
                continue;
            };
            let last = depth + 1 == filter_tokens.len();
            match *token {
                ">" => self.for_each_child(node, |child, _| self.visit_subtree(child, &mut visit)),
                // The filter's last token: its matches are the terminal children themselves, so
                // visit them here instead of pushing each one (a `s.*` may have millions).
                "*" if last => self.for_each_child(node, |child, value| {
                    if value.counters.count > 0 {
                        visit(child, &value.counters);
                    }
                }),
                "*" => self.for_each_child(node, |child, _| stack.push((child, depth + 1))),
                literal => {
                    if let Some(child) = self.find_child(node, literal, &mut buffer) {
                        stack.push((child, depth + 1));
                    }
                }
            }
        }
    }

    fn visit_subtree(&self, node: u32, visit: &mut impl FnMut(u32, &SubjectCounters)) {
        let mut stack = vec![node];
        while let Some(node) = stack.pop() {
            let value = &self.nodes[node as usize];
            if value.counters.count > 0 {
                visit(node, &value.counters);
            }
            self.for_each_child(node, |child, _| stack.push(child));
        }
    }

    /// Heap bytes used (for the memory figure): nodes, texts, the whole hash table allocation,
    /// buffers.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes()
            + self.prefixes.allocation_size()
            + self.texts.heap_bytes()
            + self.free_nodes.capacity() * 4
            + self.pending.capacity() * std::mem::size_of::<(u16, u32)>()
            + self.path.capacity() * std::mem::size_of::<(u32, u32, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::filter::subject_matches_filter;
    use crate::index::{MessageIndex, Slot};

    /// Subjects that share prefixes, end inside each other ("a", "a.b", "a.b.c") and have empty
    /// tokens, so nodes are terminal and internal at once and samples move on removal.
    const SUBJECTS: &[&str] = &[
        "a",
        "a.b",
        "a.b.c",
        "a.c",
        "a.b.d",
        "b.b.c",
        "b",
        "a..c",
        "a.b.c.d.e",
        "c.a.b",
        "b.a",
        "ab",
        "a.bc",
        "*x",
        "x.y",
    ];
    const FILTERS: &[&str] = &[
        "*",
        "a.*",
        "*.b",
        "a.>",
        "*.*.c",
        "a.b.>",
        "*.>",
        "a.*.c",
        "a..c",
        "*.*",
        "a.*.>",
        ">.c",
        "b.*.c",
        "*.b.*",
        "x.*",
        "q.>",
        "a.b",
        "*.*.*.*.*",
        "a.>.d",
    ];

    fn brute(live: &[(u64, usize)], filter: &str) -> Vec<String> {
        let mut subjects: Vec<String> = live
            .iter()
            .map(|(_, subject)| SUBJECTS[*subject].to_string())
            .filter(|subject| subject_matches_filter(subject, filter))
            .collect();
        subjects.sort();
        subjects.dedup();
        subjects
    }

    /// The texts of the subjects the table says match `filter`, sorted.
    fn matched_texts(index: &MessageIndex, filter: &str) -> Vec<String> {
        let mut found: Vec<String> = index
            .subjects
            .matching(filter)
            .into_iter()
            .map(|id| index.subject_text(id).to_string())
            .collect();
        found.sort();
        found
    }

    fn subject(n: u64) -> String {
        match n % 3 {
            0 => format!("kv.bucket.key{n}"),
            1 => format!("orders.{}.created.{n}", n % 7),
            _ => format!("s{n}"),
        }
    }

    /// Enough subjects come and go that the text arena compacts (several times) and the table
    /// empties completely (and gives its memory back); every lookup and wildcard stays exact.
    #[test]
    fn lookups_survive_text_compaction_and_emptying() {
        let mut index = MessageIndex::new(1);
        let slot = Slot {
            timestamp: 0,
            location: 0,
            size: 1,
            subject_id: 0,
            record_len: 0,
        };
        let check = |index: &MessageIndex, live: &[u64]| {
            for n in live {
                let id = index.subjects.lookup(&subject(*n)).expect("live subject");
                assert_eq!(index.subject_text(id), subject(*n));
            }
            for filter in [
                "kv.bucket.*",
                "orders.*.created.>",
                "*",
                "orders.3.>",
                "kv.*.key3",
            ] {
                let found = matched_texts(index, filter);
                let mut expected: Vec<String> = live
                    .iter()
                    .map(|n| subject(*n))
                    .filter(|text| subject_matches_filter(text, filter))
                    .collect();
                expected.sort();
                assert_eq!(found, expected, "filter {filter}");
            }
        };
        for round in 0..2u64 {
            let base = round * 10_000;
            for n in 0..3000 {
                index.push(base + n + 1, slot, &subject(base + n));
            }
            // Remove in an order that leaves holes all over the arena.
            let mut live: Vec<u64> = (0..3000).map(|n| base + n).collect();
            for step in 0..2900 {
                let position = (step * 7919) % live.len();
                let n = live.remove(position);
                assert!(index.remove(n + 1).is_some());
                if step % 500 == 0 {
                    check(&index, &live);
                }
            }
            check(&index, &live);
            assert!(index.subjects.lookup(&subject(base + 3000)).is_none());
            for n in live {
                assert!(index.remove(n + 1).is_some());
            }
            assert_eq!(index.subjects.len(), 0);
            assert!(
                index.subjects.heap_bytes() < 1024,
                "emptied table keeps its memory"
            );
            check(&index, &[]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn wildcard_matching_equals_the_plain_matcher(
            ops in proptest::collection::vec((any::<bool>(), 0..SUBJECTS.len(), 0..8usize), 1..80)
        ) {
            let mut index = MessageIndex::new(1);
            let mut live: Vec<(u64, usize)> = Vec::new();
            let mut seq = 0;
            for (add, subject, pick) in ops {
                if add || live.is_empty() {
                    seq += 1;
                    let slot = Slot { timestamp: 0, location: 0, size: 1, subject_id: 0, record_len: 0 };
                    index.push(seq, slot, SUBJECTS[subject]);
                    live.push((seq, subject));
                } else {
                    let (removed, _) = live.remove(pick % live.len());
                    index.remove(removed);
                }
                for filter in FILTERS {
                    prop_assert_eq!(matched_texts(&index, filter), brute(&live, filter), "filter {}", filter);
                }
            }
        }
    }
}

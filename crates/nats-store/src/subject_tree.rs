//! A token trie over the subject table, so a wildcard filter (`orders.*.new`, `orders.eu.>`)
//! visits only the branches it can match instead of every subject.
//!
//! Who uses it: `index::SubjectTable` keeps one in step with its entries from the first subject on
//! and asks it for the ids matching a wildcard filter. It knows subjects only as text owned by the table's entries.
//!
//! Memory: one 20-byte node per distinct token path (for most streams, one per subject) plus one
//! 8-byte hash entry. Token text is not stored again: a node points at one live subject below it
//! (its `sample`) and at the token's byte range inside that subject. A node is terminal (a subject
//! ends there) exactly when its sample subject ends at the node's token.

use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::index::SubjectEntry;

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

#[derive(Debug, Clone, Copy)]
struct Node {
    first_child: u32,
    next_sibling: u32,
    previous_sibling: u32,
    /// A live subject at or below this node; the terminal subject when one ends here.
    sample: u32,
    /// The token's byte range inside the sample subject.
    offset: u16,
    len: u16,
}

impl Node {
    const EMPTY: Node = Node {
        first_child: NONE,
        next_sibling: NONE,
        previous_sibling: NONE,
        sample: NONE,
        offset: 0,
        len: 0,
    };
}

/// Children of every node, keyed by (parent, token); entries are `(child, parent, hash)`. The
/// 32-bit hash is kept so growing the table never reads token text (a random access per child),
/// and a lookup touches text only on a full hash match.
#[derive(Debug, Default)]
pub(crate) struct SubjectTree {
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    children: HashTable<(u32, u32, u32)>,
    hasher: DefaultHashBuilder,
}

/// Tokens of a subject with their byte offsets. A plain byte scan: `str::split` costs several
/// hundred instructions per subject here, which every new subject (and every subject on open) pays.
fn tokens(subject: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = subject.as_bytes();
    let mut start = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut end = start;
        while end < bytes.len() && bytes[end] != b'.' {
            end += 1;
        }
        let token_start = start;
        done = end == bytes.len();
        start = end + 1;
        // Cut at an ASCII '.', so always on a character boundary.
        Some((token_start, subject.get(token_start..end).unwrap_or("")))
    })
}

impl SubjectTree {
    fn ensure_root(&mut self) {
        if self.nodes.is_empty() {
            self.nodes.push(Node::EMPTY);
        }
    }

    /// 32 bits of hash, spread so both hashbrown's bucket bits (low) and tag bits (high) use it.
    fn child_hash(hasher: &DefaultHashBuilder, parent: u32, token: &str) -> u32 {
        let mut state = hasher.build_hasher();
        parent.hash(&mut state);
        token.hash(&mut state);
        let full = state.finish();
        (full ^ (full >> 32)) as u32
    }

    fn table_hash(hash: u32) -> u64 {
        (u64::from(hash) << 32) | u64::from(hash)
    }

    fn token_of<'e>(&self, entries: &'e [SubjectEntry], node: u32) -> &'e str {
        let node = &self.nodes[node as usize];
        let start = usize::from(node.offset);
        entries[node.sample as usize]
            .subject
            .get(start..start + usize::from(node.len))
            .unwrap_or("")
    }

    fn is_terminal(&self, entries: &[SubjectEntry], node: u32) -> bool {
        let value = &self.nodes[node as usize];
        node != ROOT
            && value.sample != NONE
            && entries[value.sample as usize].subject.len()
                == usize::from(value.offset) + usize::from(value.len)
    }

    fn find_child(&self, entries: &[SubjectEntry], parent: u32, token: &str) -> Option<u32> {
        self.find_child_hashed(
            entries,
            parent,
            token,
            Self::child_hash(&self.hasher, parent, token),
        )
    }

    fn find_child_hashed(
        &self,
        entries: &[SubjectEntry],
        parent: u32,
        token: &str,
        hash: u32,
    ) -> Option<u32> {
        self.children
            .find(
                Self::table_hash(hash),
                |(child, stored_parent, stored_hash)| {
                    *stored_hash == hash
                        && *stored_parent == parent
                        && self.token_of(entries, *child) == token
                },
            )
            .map(|(child, _, _)| *child)
    }

    /// Add subject `id`, whose text is already in `entries[id]`.
    pub(crate) fn insert(&mut self, entries: &[SubjectEntry], id: u32) {
        self.ensure_root();
        let subject = &*entries[id as usize].subject;
        let mut parent = ROOT;
        for (offset, token) in tokens(subject) {
            // Subjects are at most u16::MAX bytes (checked on store), so both fit.
            let (offset16, len16) = (offset as u16, token.len() as u16);
            let hash = Self::child_hash(&self.hasher, parent, token);
            let node = match self.find_child_hashed(entries, parent, token, hash) {
                Some(node) => node,
                None => self.add_child(parent, id, offset16, len16, hash),
            };
            if offset + token.len() == subject.len() {
                // The subject ends here: the node's sample becomes it (marks the node terminal).
                let value = &mut self.nodes[node as usize];
                value.sample = id;
                value.offset = offset16;
                value.len = len16;
            }
            parent = node;
        }
    }

    fn add_child(&mut self, parent: u32, sample: u32, offset: u16, len: u16, hash: u32) -> u32 {
        let first = self.nodes[parent as usize].first_child;
        let value = Node {
            first_child: NONE,
            next_sibling: first,
            previous_sibling: NONE,
            sample,
            offset,
            len,
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
        self.children.insert_unique(
            Self::table_hash(hash),
            (node, parent, hash),
            |(_, _, stored_hash)| Self::table_hash(*stored_hash),
        );
        node
    }

    /// Forget subject `id` (its text still in `entries[id]`): drop the nodes only it used and
    /// repoint samples that referred to it.
    pub(crate) fn remove(&mut self, entries: &[SubjectEntry], id: u32) {
        if self.nodes.is_empty() {
            return;
        }
        let subject = &*entries[id as usize].subject;
        let mut path: Vec<(u32, u32, &str)> = Vec::new();
        let mut parent = ROOT;
        for (_, token) in tokens(subject) {
            let Some(node) = self.find_child(entries, parent, token) else {
                return;
            };
            path.push((parent, node, token));
            parent = node;
        }
        for &(parent, node, token) in path.iter().rev() {
            let value = self.nodes[node as usize];
            if value.sample != id {
                // Another subject ends here or keeps this branch sampled; above it, samples may
                // still name `id`, so keep walking.
                continue;
            }
            if value.first_child == NONE {
                self.unlink(parent, node, token);
            } else {
                let child = self.nodes[value.first_child as usize];
                let value = &mut self.nodes[node as usize];
                value.sample = child.sample;
            }
        }
    }

    fn unlink(&mut self, parent: u32, node: u32, token: &str) {
        let value = self.nodes[node as usize];
        if value.previous_sibling == NONE {
            self.nodes[parent as usize].first_child = value.next_sibling;
        } else {
            self.nodes[value.previous_sibling as usize].next_sibling = value.next_sibling;
        }
        if value.next_sibling != NONE {
            self.nodes[value.next_sibling as usize].previous_sibling = value.previous_sibling;
        }
        let hash = Self::table_hash(Self::child_hash(&self.hasher, parent, token));
        if let Ok(found) = self
            .children
            .find_entry(hash, |(child, _, _)| *child == node)
        {
            found.remove();
        }
        self.nodes[node as usize] = Node::EMPTY;
        self.free_nodes.push(node);
    }

    fn for_each_child(&self, node: u32, mut visit: impl FnMut(u32)) {
        let mut child = self.nodes[node as usize].first_child;
        while child != NONE {
            visit(child);
            child = self.nodes[child as usize].next_sibling;
        }
    }

    /// Call `visit` with the id of each subject matching `filter` (wildcards `*` and a trailing
    /// `>`); only the branches the filter can match are walked.
    pub(crate) fn visit_matching(
        &self,
        entries: &[SubjectEntry],
        filter: &str,
        mut visit: impl FnMut(u32),
    ) {
        if self.nodes.is_empty() || filter.is_empty() {
            return;
        }
        let filter_tokens: Vec<&str> = filter.split('.').collect();
        let mut stack: Vec<(u32, usize)> = vec![(ROOT, 0)];
        while let Some((node, depth)) = stack.pop() {
            let Some(token) = filter_tokens.get(depth) else {
                if self.is_terminal(entries, node) {
                    visit(self.nodes[node as usize].sample);
                }
                continue;
            };
            let last = depth + 1 == filter_tokens.len();
            match *token {
                ">" => self
                    .for_each_child(node, |child| self.visit_subtree(entries, child, &mut visit)),
                // The filter's last token: its matches are the terminal children themselves, so
                // visit them here instead of pushing each one (a `s.*` may have millions).
                "*" if last => self.for_each_child(node, |child| {
                    if self.is_terminal(entries, child) {
                        visit(self.nodes[child as usize].sample);
                    }
                }),
                "*" => self.for_each_child(node, |child| stack.push((child, depth + 1))),
                literal => {
                    if let Some(child) = self.find_child(entries, node, literal) {
                        stack.push((child, depth + 1));
                    }
                }
            }
        }
    }

    fn visit_subtree(&self, entries: &[SubjectEntry], node: u32, visit: &mut impl FnMut(u32)) {
        let mut stack = vec![node];
        while let Some(node) = stack.pop() {
            if self.is_terminal(entries, node) {
                visit(self.nodes[node as usize].sample);
            }
            self.for_each_child(node, |child| stack.push(child));
        }
    }

    /// Heap bytes used (for the memory figure).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.children.capacity() * (std::mem::size_of::<(u32, u32, u32)>() + 1)
            + self.free_nodes.capacity() * 4
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
                    let mut found: Vec<String> = index
                        .subjects
                        .matching(filter)
                        .into_iter()
                        .map(|id| index.subject_text(id).to_string())
                        .collect();
                    found.sort();
                    prop_assert_eq!(found, brute(&live, filter), "filter {}", filter);
                }
            }
        }
    }
}

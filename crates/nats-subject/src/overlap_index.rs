//! [`OverlapIndex`]: a token trie of numbered filters that answers "which stored filters
//! overlap this one" (the [`subjects_overlap`](crate::subjects_overlap) relation) without
//! comparing every pair. Stream configs use it: a stream may list 100k subjects, and checking
//! them pairwise (and against every other stream's) is quadratic.
//!
//! A query walks only the branches the filter can meet: a literal token follows its own child
//! and the `*` child, `*` follows every child, and a `>` on either side takes a whole subtree.

use crate::grammar::{tokenize, FULL_WILDCARD, SINGLE_WILDCARD};
use std::collections::HashMap;

#[derive(Default)]
struct Node {
    children: HashMap<Box<str>, usize>,
    /// The numbers of the filters whose last token is this node.
    ends: Vec<usize>,
}

/// Numbered filters in a token trie. Any text is accepted (invalid subjects are tokenized the
/// same way `subjects_overlap` tokenizes them, so the answers agree with it).
pub struct OverlapIndex {
    nodes: Vec<Node>,
}

impl Default for OverlapIndex {
    fn default() -> Self {
        OverlapIndex {
            nodes: vec![Node::default()],
        }
    }
}

impl OverlapIndex {
    /// An index of `filters`, each numbered by its position.
    pub fn new<'a>(filters: impl IntoIterator<Item = &'a str>) -> Self {
        let mut index = OverlapIndex::default();
        for (number, filter) in filters.into_iter().enumerate() {
            index.insert(filter, number);
        }
        index
    }

    /// Store `filter` under `number` (numbers may repeat).
    pub fn insert(&mut self, filter: &str, number: usize) {
        let mut node = 0;
        for token in tokenize(filter) {
            node = match self.nodes[node].children.get(token) {
                Some(&child) => child,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(Node::default());
                    self.nodes[node].children.insert(token.into(), child);
                    child
                }
            };
        }
        self.nodes[node].ends.push(number);
    }

    /// The smallest number above `after` of a stored filter that overlaps `filter`.
    pub fn first_overlap_after(&self, filter: &str, after: usize) -> Option<usize> {
        let tokens: Vec<&str> = tokenize(filter).collect();
        let mut best = None;
        self.visit(0, &tokens, &mut |number| {
            if number > after && best.is_none_or(|found| number < found) {
                best = Some(number);
            }
        });
        best
    }

    /// Whether any stored filter overlaps `filter`.
    pub fn overlaps_any(&self, filter: &str) -> bool {
        let tokens: Vec<&str> = tokenize(filter).collect();
        let mut found = false;
        self.visit(0, &tokens, &mut |_| found = true);
        found
    }

    /// Report every stored filter that overlaps the query `tokens` below `node`.
    fn visit(&self, node: usize, tokens: &[&str], report: &mut dyn FnMut(usize)) {
        let here = &self.nodes[node];
        let Some((&token, rest)) = tokens.split_first() else {
            here.ends.iter().for_each(|&number| report(number));
            return;
        };
        if token == FULL_WILDCARD {
            for &child in here.children.values() {
                self.report_subtree(child, report);
            }
            return;
        }
        if let Some(&child) = here.children.get(FULL_WILDCARD) {
            self.report_subtree(child, report);
        }
        if token == SINGLE_WILDCARD {
            for (child_token, &child) in &here.children {
                if &**child_token != FULL_WILDCARD {
                    self.visit(child, rest, report);
                }
            }
            return;
        }
        if let Some(&child) = here.children.get(token) {
            self.visit(child, rest, report);
        }
        if let Some(&child) = here.children.get(SINGLE_WILDCARD) {
            self.visit(child, rest, report);
        }
    }

    fn report_subtree(&self, node: usize, report: &mut dyn FnMut(usize)) {
        let mut pending = vec![node];
        while let Some(node) = pending.pop() {
            let here = &self.nodes[node];
            here.ends.iter().for_each(|&number| report(number));
            pending.extend(here.children.values().copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subjects_overlap;

    const FILTERS: &[&str] = &[
        "a", "a.b", "a.*", "a.>", "*.b", "*", ">", "a.b.c", "a.*.c", "*.*.*", "b.>", "a.>.c",
        "a..b", "a b", "x.y", "a.b.>", "*.>", "a.b",
    ];

    #[test]
    fn agrees_with_pairwise_overlap() {
        let index = OverlapIndex::new(FILTERS.iter().copied());
        for (query_number, query) in FILTERS.iter().enumerate() {
            let expected = FILTERS
                .iter()
                .enumerate()
                .skip(query_number + 1)
                .find(|(_, other)| subjects_overlap(query, other))
                .map(|(number, _)| number);
            assert_eq!(
                index.first_overlap_after(query, query_number),
                expected,
                "{query}"
            );
        }
        for query in ["q", "a.b", "c.d.e.f", "*.*", "x.>", "a b"] {
            let expected = FILTERS.iter().any(|other| subjects_overlap(query, other));
            assert_eq!(index.overlaps_any(query), expected, "{query}");
        }
    }

    #[test]
    fn literals_meet_only_their_equals() {
        let index = OverlapIndex::new(["s.1", "s.2", "s.3"]);
        assert_eq!(index.first_overlap_after("s.2", 0), Some(1));
        assert_eq!(index.first_overlap_after("s.2", 1), None);
        assert!(!index.overlaps_any("s.4"));
        assert!(index.overlaps_any("s.*"));
        assert!(!index.overlaps_any("s"));
    }
}

//! [`SubjectIndex`]: the subjects of every registered stream in one [`OverlapIndex`], so the
//! overlap check of a create or update costs the candidate's own subjects, not a scan of every
//! stream. Owned by the registry and changed with it (insert at create and recovery, replace at
//! a subjects update, remove at delete); knows nothing of streams but their names and subjects.
//!
//! An entry is numbered; replacing or removing a stream's subjects only marks its number stale
//! (the trie cannot drop filters), and the trie is rebuilt from the live entries once the stale
//! ones outnumber them.

use nats_subject::OverlapIndex;
use std::collections::HashMap;

/// Stale entries tolerated before a rebuild is worth it.
const REBUILD_FLOOR: usize = 256;

#[derive(Default)]
pub(crate) struct SubjectIndex {
    index: OverlapIndex,
    /// Entry `number - 1`: the stream and subjects inserted under `number`; `None` once stale.
    entries: Vec<Option<(String, Vec<String>)>>,
    /// The live number of each stream that has subjects.
    numbers: HashMap<String, usize>,
    stale: usize,
}

impl SubjectIndex {
    /// Record `subjects` as `stream`'s (replacing what it had).
    pub(crate) fn set(&mut self, stream: &str, subjects: &[String]) {
        self.remove(stream);
        if subjects.is_empty() {
            return;
        }
        self.entries
            .push(Some((stream.to_string(), subjects.to_vec())));
        // Numbers start at 1, so "above 0" finds every entry.
        let number = self.entries.len();
        for subject in subjects {
            self.index.insert(subject, number);
        }
        self.numbers.insert(stream.to_string(), number);
    }

    pub(crate) fn remove(&mut self, stream: &str) {
        let Some(number) = self.numbers.remove(stream) else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(number - 1) {
            *entry = None;
        }
        self.stale += 1;
        if self.stale > REBUILD_FLOOR && self.stale > self.numbers.len() {
            self.rebuild();
        }
    }

    /// Whether any of `subjects` overlaps a subject of a stream other than `stream`.
    pub(crate) fn overlaps_other(&self, stream: &str, subjects: &[String]) -> bool {
        subjects.iter().any(|subject| {
            let mut after = 0;
            while let Some(number) = self.index.first_overlap_after(subject, after) {
                if let Some(Some((owner, _))) = self.entries.get(number - 1) {
                    if owner != stream {
                        return true;
                    }
                }
                after = number;
            }
            false
        })
    }

    fn rebuild(&mut self) {
        let live: Vec<(String, Vec<String>)> = std::mem::take(&mut self.entries)
            .into_iter()
            .flatten()
            .collect();
        *self = SubjectIndex::default();
        for (stream, subjects) in live {
            self.set(&stream, &subjects);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(list: &[&str]) -> Vec<String> {
        list.iter().map(|subject| subject.to_string()).collect()
    }

    #[test]
    fn overlaps_only_other_live_streams() {
        let mut index = SubjectIndex::default();
        index.set("A", &subjects(&["orders.>"]));
        index.set("B", &subjects(&["events.*", "audit"]));
        assert!(index.overlaps_other("C", &subjects(&["orders.new"])));
        assert!(index.overlaps_other("C", &subjects(&["x", "events.created"])));
        assert!(index.overlaps_other("C", &subjects(&[">"])));
        assert!(!index.overlaps_other("A", &subjects(&["orders.new"])));
        assert!(!index.overlaps_other("C", &subjects(&["events.a.b", "auditing"])));
        index.set("A", &subjects(&["shipments.>"]));
        assert!(!index.overlaps_other("C", &subjects(&["orders.new"])));
        assert!(index.overlaps_other("C", &subjects(&["shipments.1"])));
        index.remove("B");
        assert!(!index.overlaps_other("C", &subjects(&["audit"])));
    }

    #[test]
    fn rebuilds_keep_the_live_streams() {
        let mut index = SubjectIndex::default();
        for round in 0..3 {
            for number in 0..400 {
                index.set(
                    &format!("S{number}"),
                    &subjects(&[&format!("s{number}.{round}.>")]),
                );
            }
        }
        for number in 0..200 {
            index.remove(&format!("S{number}"));
        }
        assert!(index.entries.len() < 1200, "stale entries were dropped");
        assert!(!index.overlaps_other("X", &subjects(&["s5.2.a"])));
        assert!(index.overlaps_other("X", &subjects(&["s205.2.a"])));
        assert!(!index.overlaps_other("X", &subjects(&["s205.1.a"])));
        assert!(!index.overlaps_other("S205", &subjects(&["s205.2.a"])));
    }
}

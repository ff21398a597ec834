//! The sublist's shared match cache: literal subject -> match result, and how many cached
//! subjects start with each (hashed) first token.
//!
//! An insert or remove of a wildcard filter must drop every cached subject the filter matches.
//! That was a scan of the whole cache (up to 1,024 subjects, a prefix compare each) on every
//! such change: a JetStream stream subscribes `<name>.>` when it is created and unsubscribes it
//! when it is deleted, so creating or deleting 2,000 streams scanned a cache full of
//! `$JS.API...` and reply subjects 2,000 times, none of which a stream's filter matches (15 % of
//! the admin thread in `perf`). A subject matched by a filter whose first token is literal has
//! that first token, so when the count of its slot is zero nothing cached can match and the scan
//! is skipped ([`MatchCache::may_hold_first_token`]). A filter starting with a wildcard, or a
//! slot shared with other first tokens, still scans.

use std::hash::Hasher;

use crate::hasher::{TokenHasher, TokenMap};

/// Slots of the first-token counts (a power of two).
const FIRST_TOKEN_SLOTS: usize = 256;

pub(crate) struct MatchCache<V> {
    entries: TokenMap<Box<str>, V>,
    /// Cached subjects per slot of their first token's hash; made at the first insert, so a
    /// sublist that never caches anything (an idle account) does not carry it.
    first_tokens: Option<Box<[u32; FIRST_TOKEN_SLOTS]>>,
}

impl<V> Default for MatchCache<V> {
    fn default() -> Self {
        MatchCache {
            entries: TokenMap::default(),
            first_tokens: None,
        }
    }
}

/// The slot of a subject's (or a filter's literal) first token.
fn slot(subject: &str) -> usize {
    let first = subject.split_once('.').map_or(subject, |(first, _)| first);
    let mut hasher = TokenHasher::default();
    hasher.write(first.as_bytes());
    // The high bits: the multiplicative hasher's low bits depend on the first bytes only.
    (hasher.finish() >> 56) as usize & (FIRST_TOKEN_SLOTS - 1)
}

impl<V> MatchCache<V> {
    pub(crate) fn get(&self, subject: &str) -> Option<&V> {
        self.entries.get(subject)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values()
    }

    fn count(&mut self, slot: usize, added: bool) {
        let counts = self
            .first_tokens
            .get_or_insert_with(|| Box::new([0; FIRST_TOKEN_SLOTS]));
        let count = &mut counts[slot];
        *count = if added {
            count.saturating_add(1)
        } else {
            count.saturating_sub(1)
        };
    }

    pub(crate) fn insert(&mut self, subject: Box<str>, value: V) {
        let slot = slot(&subject);
        if self.entries.insert(subject, value).is_none() {
            self.count(slot, true);
        }
    }

    pub(crate) fn remove(&mut self, subject: &str) {
        if self.entries.remove(subject).is_some() {
            self.count(slot(subject), false);
        }
    }

    /// Keeps the entries `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let Some(counts) = self.first_tokens.as_mut() else {
            return;
        };
        self.entries.retain(|subject, _| {
            let kept = keep(subject);
            if !kept {
                let count = &mut counts[slot(subject)];
                *count = count.saturating_sub(1);
            }
            kept
        });
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        if let Some(counts) = self.first_tokens.as_mut() {
            counts.fill(0);
        }
    }

    /// False only when no cached subject's first token is `filter`'s first token (which must
    /// be literal): then nothing cached can match `filter`.
    pub(crate) fn may_hold_first_token(&self, filter: &str) -> bool {
        self.first_tokens
            .as_ref()
            .is_some_and(|counts| counts[slot(filter)] > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_inserts_removes_retains_and_clears() {
        let mut cache = MatchCache::default();
        assert!(!cache.may_hold_first_token("orders.>"));
        cache.insert(Box::from("orders.new"), 1);
        cache.insert(Box::from("orders.new"), 2);
        cache.insert(Box::from("orders.old"), 3);
        cache.insert(Box::from("$JS.API.INFO"), 4);
        assert!(cache.may_hold_first_token("orders.>"));
        cache.remove("orders.new");
        cache.remove("orders.new");
        assert!(cache.may_hold_first_token("orders.*"));
        cache.retain(|subject| !subject.starts_with("orders."));
        assert!(!cache.may_hold_first_token("orders.>"));
        assert!(cache.may_hold_first_token("$JS.>"));
        assert_eq!(cache.len(), 1);
        cache.clear();
        assert!(!cache.may_hold_first_token("$JS.>"));
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn similar_first_tokens_spread_over_slots() {
        let slots: std::collections::HashSet<usize> = (0..2000)
            .map(|index| slot(&format!("S{index}.>")))
            .collect();
        assert!(slots.len() > FIRST_TOKEN_SLOTS / 2, "{} slots", slots.len());
    }
}

//! A per-task match cache in front of a shared [`Sublist`], validated by the sublist's generation.
//!
//! A connection task that publishes keeps one of these (as nats-server keeps a per-client cache):
//! a hit costs one atomic load and a map lookup, takes no lock and touches no shared reference
//! count. Any insert or remove anywhere bumps the sublist generation and empties every local cache
//! on its next use, so a local cache never returns a stale result.

use std::sync::Arc;

use crate::hasher::TokenMap;
use crate::sublist::{MatchResult, Sublist};

/// Default number of subjects a local cache keeps.
pub const DEFAULT_LOCAL_CACHE_CAPACITY: usize = 256;

/// See the module documentation.
pub struct LocalMatchCache<T> {
    generation: u64,
    capacity: usize,
    entries: TokenMap<Box<str>, Arc<MatchResult<T>>>,
    empty: Arc<MatchResult<T>>,
}

impl<T> Default for LocalMatchCache<T> {
    fn default() -> Self {
        LocalMatchCache::new(DEFAULT_LOCAL_CACHE_CAPACITY)
    }
}

impl<T> std::fmt::Debug for LocalMatchCache<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LocalMatchCache")
            .field("generation", &self.generation)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl<T> LocalMatchCache<T> {
    /// A cache keeping at most `capacity` subjects (0 disables it: every call asks the sublist).
    pub fn new(capacity: usize) -> Self {
        LocalMatchCache {
            generation: u64::MAX,
            capacity,
            entries: TokenMap::default(),
            empty: Arc::new(MatchResult::default()),
        }
    }

    /// Number of cached subjects.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T> LocalMatchCache<T>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    /// The same answer as `sublist.matches(subject)`, from the local cache when still valid.
    pub fn matches(&mut self, sublist: &Sublist<T>, subject: &str) -> &Arc<MatchResult<T>> {
        // Read before asking the sublist: a result fetched now is at least as new as this
        // generation, so keeping it under this generation can never serve a stale answer.
        let generation = sublist.generation();
        if generation != self.generation {
            self.entries.clear();
            self.generation = generation;
        }
        if !self.entries.contains_key(subject) {
            let result = sublist.matches(subject);
            if self.entries.len() >= self.capacity {
                if self.capacity == 0 {
                    self.entries.clear();
                } else {
                    let sweep = (self.capacity / 4).max(1);
                    let mut dropped = 0;
                    self.entries.retain(|_, _| {
                        dropped += 1;
                        dropped > sweep
                    });
                }
            }
            self.entries.insert(Box::from(subject), result);
        }
        // Always present after the insert above; the fallback only avoids a panic path.
        self.entries.get(subject).unwrap_or(&self.empty)
    }
}

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
    /// The sublist the results are from (a connection may move to another account's).
    sublist: u64,
    generation: u64,
    capacity: usize,
    /// Subject → position in `results`; two collections so a hit is one map lookup.
    index: TokenMap<Box<str>, usize>,
    results: Vec<Arc<MatchResult<T>>>,
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
            .field("entries", &self.results.len())
            .finish()
    }
}

impl<T> LocalMatchCache<T> {
    /// A cache keeping at most `capacity` subjects (at least the last one asked for).
    pub fn new(capacity: usize) -> Self {
        LocalMatchCache {
            sublist: u64::MAX,
            generation: u64::MAX,
            capacity,
            index: TokenMap::default(),
            results: Vec::new(),
        }
    }

    /// Number of cached subjects.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    fn clear(&mut self) {
        self.index.clear();
        self.results.clear();
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
        if generation != self.generation || sublist.id() != self.sublist {
            self.clear();
            self.generation = generation;
            self.sublist = sublist.id();
        }
        if let Some(&position) = self.index.get(subject) {
            return &self.results[position];
        }
        let result = sublist.matches(subject);
        // Full: start over rather than track ages; a publisher's working set refills it at once.
        if self.results.len() >= self.capacity {
            self.clear();
        }
        self.index.insert(Box::from(subject), self.results.len());
        self.results.push(result);
        &self.results[self.results.len() - 1]
    }
}

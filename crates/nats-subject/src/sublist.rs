//! The subscription trie with its bounded match cache.
//!
//! Locking: the trie sits behind one `RwLock`, the cache behind another. Lock order is always
//! trie, then cache. A cache hit takes only the cache read lock and clones an `Arc` (no allocation).
//! A miss computes the result under the trie read lock, remembering the generation it saw, and
//! stores it only if no insert or remove happened since: writers bump the generation while holding
//! the cache write lock, after dropping the cache entries their change affects. So a stale result
//! never enters the cache.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::SubjectError;
use crate::grammar::{
    is_literal, is_valid_queue_name, is_valid_subject, literal_prefix, subject_matches_filter,
    tokenize, FULL_WILDCARD, SINGLE_WILDCARD,
};
use crate::hasher::{TokenHasher, TokenMap};
use crate::match_cache::MatchCache;

/// nats-server's slCacheMax: how many literal subjects keep a cached result.
pub const DEFAULT_CACHE_CAPACITY: usize = 1024;
/// How many entries are dropped at once when the cache is full (nats-server's slCacheSweep).
const CACHE_SWEEP: usize = 256;
/// Slots of the admission filter in front of a full cache (a power of two).
const DOORKEEPER_SLOTS: usize = 4096;

/// Everything subscribed to a literal subject: plain subscribers, and queue groups by name (a
/// message goes to every plain subscriber and one member of each group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchResult<T> {
    pub plain: Vec<T>,
    pub queues: Vec<(Arc<str>, Vec<T>)>,
}

impl<T> Default for MatchResult<T> {
    fn default() -> Self {
        MatchResult {
            plain: Vec::new(),
            queues: Vec::new(),
        }
    }
}

impl<T> MatchResult<T> {
    /// True when nobody is interested.
    pub fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.queues.is_empty()
    }

    /// Plain subscribers plus queue members.
    pub fn len(&self) -> usize {
        self.plain.len()
            + self
                .queues
                .iter()
                .map(|(_, members)| members.len())
                .sum::<usize>()
    }
}

/// Counters as nats-server reports them in /subsz.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SublistStats {
    pub num_subscriptions: u64,
    pub num_cache: u64,
    pub num_inserts: u64,
    pub num_removes: u64,
    pub num_matches: u64,
    /// Cache hits divided by matches, 0.0 before any match.
    pub cache_hit_rate: f64,
    /// Largest number of receivers among cached results.
    pub max_fanout: u64,
    /// Average number of receivers among cached results.
    pub avg_fanout: f64,
}

struct QueueGroup<T> {
    name: Arc<str>,
    members: Vec<T>,
}

struct Node<T> {
    next: Option<Box<Level<T>>>,
    plain: Vec<T>,
    queues: Vec<QueueGroup<T>>,
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Node {
            next: None,
            plain: Vec::new(),
            queues: Vec::new(),
        }
    }
}

impl<T> Node<T> {
    fn is_empty(&self) -> bool {
        self.plain.is_empty()
            && self.queues.is_empty()
            && self.next.as_ref().is_none_or(|level| level.is_empty())
    }
}

struct Level<T> {
    literals: TokenMap<Box<str>, Node<T>>,
    single_wildcard: Option<Box<Node<T>>>,
    full_wildcard: Option<Box<Node<T>>>,
}

impl<T> Default for Level<T> {
    fn default() -> Self {
        Level {
            literals: TokenMap::default(),
            single_wildcard: None,
            full_wildcard: None,
        }
    }
}

impl<T> Level<T> {
    fn is_empty(&self) -> bool {
        self.literals.is_empty() && self.single_wildcard.is_none() && self.full_wildcard.is_none()
    }

    fn node_mut(&mut self, token: &str) -> &mut Node<T> {
        if token == FULL_WILDCARD {
            self.full_wildcard.get_or_insert_with(Box::default)
        } else if token == SINGLE_WILDCARD {
            self.single_wildcard.get_or_insert_with(Box::default)
        } else {
            self.literals.entry(Box::from(token)).or_default()
        }
    }

    fn existing_node_mut(&mut self, token: &str) -> Option<&mut Node<T>> {
        if token == FULL_WILDCARD {
            self.full_wildcard.as_deref_mut()
        } else if token == SINGLE_WILDCARD {
            self.single_wildcard.as_deref_mut()
        } else {
            self.literals.get_mut(token)
        }
    }

    fn prune(&mut self, token: &str) {
        if token == FULL_WILDCARD {
            if self
                .full_wildcard
                .as_ref()
                .is_some_and(|node| node.is_empty())
            {
                self.full_wildcard = None;
            }
        } else if token == SINGLE_WILDCARD {
            if self
                .single_wildcard
                .as_ref()
                .is_some_and(|node| node.is_empty())
            {
                self.single_wildcard = None;
            }
        } else if self.literals.get(token).is_some_and(Node::is_empty) {
            self.literals.remove(token);
        }
    }
}

struct Trie<T> {
    root: Level<T>,
}

type Cache<T> = MatchCache<Arc<MatchResult<T>>>;

/// A subject → subscribers index with `*`/`>` wildcards and queue groups, shared as
/// `Arc<Sublist<T>>` by every connection task.
pub struct Sublist<T> {
    /// Unique in the process: a [`crate::LocalMatchCache`] knows which sublist its results are from.
    id: u64,
    trie: RwLock<Trie<T>>,
    cache: RwLock<Cache<T>>,
    cache_capacity: usize,
    generation: AtomicU64,
    count: AtomicUsize,
    inserts: AtomicU64,
    removes: AtomicU64,
    matches: AtomicU64,
    cache_hits: AtomicU64,
    empty: Arc<MatchResult<T>>,
    /// Hashes of subjects that missed while the cache was full (see `admitted`).
    /// Made at the first admission check (a full cache): an account that never fills its
    /// cache does not carry its 32 KiB (10,000 idle accounts would carry 320 MB).
    doorkeeper: std::sync::OnceLock<Box<[AtomicU64]>>,
}

impl<T> Default for Sublist<T>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    fn default() -> Self {
        Sublist::new()
    }
}

impl<T> std::fmt::Debug for Sublist<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Sublist")
            .field("count", &self.count.load(Ordering::Relaxed))
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Sublist<T>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    pub fn new() -> Self {
        Sublist::with_cache_capacity(DEFAULT_CACHE_CAPACITY)
    }

    /// A sublist whose cache keeps at most `cache_capacity` subjects (0 disables the cache).
    pub fn with_cache_capacity(cache_capacity: usize) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Sublist {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            trie: RwLock::new(Trie {
                root: Level::default(),
            }),
            cache: RwLock::new(Cache::default()),
            cache_capacity,
            generation: AtomicU64::new(0),
            count: AtomicUsize::new(0),
            inserts: AtomicU64::new(0),
            removes: AtomicU64::new(0),
            matches: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            empty: Arc::new(MatchResult::default()),
            doorkeeper: std::sync::OnceLock::new(),
        }
    }

    /// Adds `value` under `subject` (wildcards allowed), in queue group `queue` if given.
    pub fn insert(&self, subject: &str, queue: Option<&str>, value: T) -> Result<(), SubjectError> {
        if !is_valid_subject(subject) {
            return Err(SubjectError::InvalidSubject(subject.to_owned()));
        }
        if let Some(queue) = queue {
            if !is_valid_queue_name(queue) {
                return Err(SubjectError::InvalidQueueName(queue.to_owned()));
            }
        }
        let mut trie = self.trie.write();
        let mut level = &mut trie.root;
        let mut tokens = tokenize(subject).peekable();
        let node = loop {
            let Some(token) = tokens.next() else {
                return Err(SubjectError::InvalidSubject(subject.to_owned()));
            };
            let node = level.node_mut(token);
            if tokens.peek().is_none() {
                break node;
            }
            level = node.next.get_or_insert_with(Box::default);
        };
        match queue {
            None => node.plain.push(value),
            Some(queue) => match node.queues.iter_mut().find(|group| &*group.name == queue) {
                Some(group) => group.members.push(value),
                None => node.queues.push(QueueGroup {
                    name: Arc::from(queue),
                    members: vec![value],
                }),
            },
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.inserts.fetch_add(1, Ordering::Relaxed);
        self.invalidate(subject);
        drop(trie);
        Ok(())
    }

    /// Removes one `value` registered under exactly `subject` and `queue`. False when absent.
    pub fn remove(&self, subject: &str, queue: Option<&str>, value: &T) -> bool {
        if !is_valid_subject(subject) {
            return false;
        }
        let tokens: Vec<&str> = tokenize(subject).collect();
        let mut trie = self.trie.write();
        let removed = remove_from_level(&mut trie.root, &tokens, queue, value);
        if removed {
            self.count.fetch_sub(1, Ordering::Relaxed);
            self.removes.fetch_add(1, Ordering::Relaxed);
            self.invalidate(subject);
        }
        drop(trie);
        removed
    }

    /// Everything interested in the literal `subject`. Cached: a repeated subject costs one read
    /// lock and an `Arc` clone. A subject with an empty token matches nothing.
    pub fn matches(&self, subject: &str) -> Arc<MatchResult<T>> {
        self.matches.fetch_add(1, Ordering::Relaxed);
        if let Some(result) = self.cache.read().get(subject) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Arc::clone(result);
        }
        let mut inline_tokens = [""; INLINE_TOKENS];
        let mut overflow_tokens = Vec::new();
        let tokens = split_tokens(subject, &mut inline_tokens, &mut overflow_tokens);
        if tokens.iter().any(|token| token.is_empty()) {
            return Arc::clone(&self.empty);
        }
        let (result, generation) = {
            let trie = self.trie.read();
            let generation = self.generation.load(Ordering::Acquire);
            let mut result = MatchResult::default();
            collect_matches(&trie.root, tokens, &mut result);
            (Arc::new(result), generation)
        };
        if self.cache_capacity > 0 {
            let mut cache = self.cache.write();
            if self.generation.load(Ordering::Acquire) == generation
                && (cache.len() < self.cache_capacity || self.admitted(subject))
            {
                if cache.len() >= self.cache_capacity {
                    // Drop a batch at once (arbitrary entries, as nats-server's sweep), without
                    // allocating.
                    let mut dropped = 0;
                    cache.retain(|_| {
                        dropped += 1;
                        dropped > CACHE_SWEEP
                    });
                }
                cache.insert(Box::from(subject), Arc::clone(&result));
            }
        }
        result
    }

    /// Whether a subject missed before (recently enough to still be in the doorkeeper): only then
    /// may it displace entries of a full cache. Unique subjects such as reply inboxes (one per
    /// JetStream PubAck) then pass straight through instead of churning the cache with an
    /// insert, an allocation and a sweep each.
    fn admitted(&self, subject: &str) -> bool {
        let mut hasher = TokenHasher::default();
        hasher.write(subject.as_bytes());
        // Never 0, so an empty slot does not admit anything.
        let hash = hasher.finish() | 1;
        let doorkeeper = self
            .doorkeeper
            .get_or_init(|| (0..DOORKEEPER_SLOTS).map(|_| AtomicU64::new(0)).collect());
        let slot = &doorkeeper[(hash as usize) & (DOORKEEPER_SLOTS - 1)];
        slot.swap(hash, Ordering::Relaxed) == hash
    }

    /// True when anyone is subscribed to something matching the literal `subject`.
    pub fn has_interest(&self, subject: &str) -> bool {
        !self.matches(subject).is_empty()
    }

    /// The number of stored subscriptions.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// This sublist's identity, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A counter that changes on every insert and remove.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every stored subscription as (subject, queue, value).
    pub fn subscriptions(&self) -> Vec<(String, Option<Arc<str>>, T)> {
        let trie = self.trie.read();
        let mut out = Vec::with_capacity(self.count());
        let mut prefix = String::new();
        collect_all(&trie.root, &mut prefix, &mut out);
        out
    }

    /// Drops every cached result.
    pub fn clear_cache(&self) {
        let mut cache = self.cache.write();
        cache.clear();
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Counters and cache figures for /subsz.
    pub fn stats(&self) -> SublistStats {
        let cache = self.cache.read();
        let mut max_fanout = 0u64;
        let mut total_fanout = 0u64;
        for result in cache.values() {
            let fanout = result.len() as u64;
            max_fanout = max_fanout.max(fanout);
            total_fanout += fanout;
        }
        let num_cache = cache.len() as u64;
        drop(cache);
        let matches = self.matches.load(Ordering::Relaxed);
        let hits = self.cache_hits.load(Ordering::Relaxed);
        SublistStats {
            num_subscriptions: self.count() as u64,
            num_cache,
            num_inserts: self.inserts.load(Ordering::Relaxed),
            num_removes: self.removes.load(Ordering::Relaxed),
            num_matches: matches,
            cache_hit_rate: if matches == 0 {
                0.0
            } else {
                hits as f64 / matches as f64
            },
            max_fanout,
            avg_fanout: if num_cache == 0 {
                0.0
            } else {
                total_fanout as f64 / num_cache as f64
            },
        }
    }

    /// Drops the cached results a change to `filter` affects and bumps the generation. Called with
    /// the trie write lock held.
    fn invalidate(&self, filter: &str) {
        let mut cache = self.cache.write();
        if is_literal(filter) {
            cache.remove(filter);
        } else {
            // Most cached subjects differ from the filter within its literal start; when its
            // first token is literal and no cached subject has it, none can match.
            let prefix = literal_prefix(filter);
            if prefix.is_empty() || cache.may_hold_first_token(prefix) {
                cache.retain(|subject| {
                    !(subject.starts_with(prefix) && subject_matches_filter(subject, filter))
                });
            }
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// Subjects with at most this many tokens are matched without allocating a token list.
const INLINE_TOKENS: usize = 16;

fn split_tokens<'a, 'b>(
    subject: &'a str,
    inline: &'b mut [&'a str; INLINE_TOKENS],
    overflow: &'b mut Vec<&'a str>,
) -> &'b [&'a str] {
    let mut count = 0;
    for token in tokenize(subject) {
        if count < INLINE_TOKENS {
            inline[count] = token;
            count += 1;
        } else {
            if overflow.is_empty() {
                overflow.extend_from_slice(&inline[..]);
            }
            overflow.push(token);
        }
    }
    if overflow.is_empty() {
        &inline[..count]
    } else {
        &overflow[..]
    }
}

fn add_node<T: Clone>(node: &Node<T>, result: &mut MatchResult<T>) {
    result.plain.extend(node.plain.iter().cloned());
    for group in &node.queues {
        match result
            .queues
            .iter_mut()
            .find(|(name, _)| Arc::ptr_eq(name, &group.name) || **name == *group.name)
        {
            Some((_, members)) => members.extend(group.members.iter().cloned()),
            None => result
                .queues
                .push((Arc::clone(&group.name), group.members.clone())),
        }
    }
}

fn collect_matches<T: Clone>(level: &Level<T>, tokens: &[&str], result: &mut MatchResult<T>) {
    let Some((token, rest)) = tokens.split_first() else {
        return;
    };
    if let Some(node) = &level.full_wildcard {
        add_node(node, result);
    }
    if let Some(node) = &level.single_wildcard {
        descend(node, rest, result);
    }
    if let Some(node) = level.literals.get(*token) {
        descend(node, rest, result);
    }
}

fn descend<T: Clone>(node: &Node<T>, rest: &[&str], result: &mut MatchResult<T>) {
    if rest.is_empty() {
        add_node(node, result);
    } else if let Some(next) = &node.next {
        collect_matches(next, rest, result);
    }
}

fn remove_from_level<T: PartialEq>(
    level: &mut Level<T>,
    tokens: &[&str],
    queue: Option<&str>,
    value: &T,
) -> bool {
    let Some((token, rest)) = tokens.split_first() else {
        return false;
    };
    let Some(node) = level.existing_node_mut(token) else {
        return false;
    };
    let removed = if rest.is_empty() {
        remove_from_node(node, queue, value)
    } else {
        match node.next.as_deref_mut() {
            Some(next) => {
                let removed = remove_from_level(next, rest, queue, value);
                if next.is_empty() {
                    node.next = None;
                }
                removed
            }
            None => false,
        }
    };
    if removed {
        level.prune(token);
    }
    removed
}

fn remove_from_node<T: PartialEq>(node: &mut Node<T>, queue: Option<&str>, value: &T) -> bool {
    match queue {
        None => match node.plain.iter().position(|member| member == value) {
            Some(position) => {
                node.plain.swap_remove(position);
                true
            }
            None => false,
        },
        Some(queue) => {
            let Some(group_index) = node.queues.iter().position(|group| &*group.name == queue)
            else {
                return false;
            };
            let group = &mut node.queues[group_index];
            let Some(position) = group.members.iter().position(|member| member == value) else {
                return false;
            };
            group.members.swap_remove(position);
            if group.members.is_empty() {
                node.queues.swap_remove(group_index);
            }
            true
        }
    }
}

fn collect_all<T: Clone>(
    level: &Level<T>,
    prefix: &mut String,
    out: &mut Vec<(String, Option<Arc<str>>, T)>,
) {
    let literal_nodes = level.literals.iter().map(|(token, node)| (&**token, node));
    let wildcard_nodes = level
        .single_wildcard
        .as_deref()
        .map(|node| (SINGLE_WILDCARD, node))
        .into_iter()
        .chain(
            level
                .full_wildcard
                .as_deref()
                .map(|node| (FULL_WILDCARD, node)),
        );
    for (token, node) in literal_nodes.chain(wildcard_nodes) {
        let previous_len = prefix.len();
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(token);
        for value in &node.plain {
            out.push((prefix.clone(), None, value.clone()));
        }
        for group in &node.queues {
            for value in &group.members {
                out.push((prefix.clone(), Some(Arc::clone(&group.name)), value.clone()));
            }
        }
        if let Some(next) = &node.next {
            collect_all(next, prefix, out);
        }
        prefix.truncate(previous_len);
    }
}

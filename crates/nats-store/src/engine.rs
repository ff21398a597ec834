//! The store engine shared by MemStore and FileStore: limits, purges, expiry, filters and counters
//! live here once, on top of the [`MessageIndex`]; a [`Backend`] only keeps record bytes.
//!
//! Not a public API: the type is exported only through the `MemStore` / `FileStore` aliases.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::{DiscardPolicy, StreamStoreConfig};
use crate::error::StoreError;
use crate::filter::is_full_wildcard;
use crate::index::{MessageIndex, Slot};
use crate::traits::{ConsumerStore, DurableCallback, StreamStore};
use crate::types::{RemovedMessage, StoredMessage, StreamState, SubjectState, TTL_NEVER};

/// TTL encoding used in records: no TTL.
pub(crate) const TTL_NONE_NANOS: i64 = 0;
/// TTL encoding used in records: never expire.
pub(crate) const TTL_NEVER_NANOS: i64 = -1;

/// A message about to be appended.
pub struct MessageRecord<'a> {
    /// Its sequence.
    pub seq: u64,
    /// Its timestamp.
    pub timestamp: i64,
    /// Subject text.
    pub subject: &'a str,
    /// Header block.
    pub headers: &'a [u8],
    /// Payload.
    pub payload: &'a [u8],
    /// 0: none, -1: never, >0: nanoseconds.
    pub ttl_nanos: i64,
    /// How the body is to be kept (FileStore).
    pub compression: crate::config::Compression,
}

/// Where record bytes live. Implemented by the memory and file backends.
#[doc(hidden)]
pub trait Backend: Send {
    /// Bytes accounted to the stream for one message (nats-server's per-store formula).
    fn message_size(&self, subject_len: usize, headers_len: usize, payload_len: usize) -> u64;
    /// Keep a record; returns `(location, record_len)` for the index slot.
    fn append(&mut self, record: &MessageRecord<'_>) -> Result<(u32, u32), StoreError>;
    /// Persist that `count` sequences from `seq` were used without messages.
    fn append_skip(&mut self, seq: u64, count: u64) -> Result<(), StoreError>;
    /// Read a live message back.
    fn read(&mut self, seq: u64, slot: &Slot, subject: &str) -> Result<StoredMessage, StoreError>;
    /// A message left the index (already removed there).
    fn removed(&mut self, seq: u64, slot: &Slot, erase: bool) -> Result<(), StoreError>;
    /// Every sequence below `first_seq` left the index.
    fn floor(&mut self, first_seq: u64, index: &MessageIndex) -> Result<(), StoreError>;
    /// Write buffered records; fsync when `force_sync` or the policy says so; run maintenance.
    fn flush(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
        force_sync: bool,
    ) -> Result<(), StoreError>;
    /// `flush` (never forcing a sync), with the durability wait handed to `on_durable`.
    fn flush_then(
        &mut self,
        index: &mut MessageIndex,
        ttls: &TtlIndex,
        on_durable: DurableCallback,
    ) -> Result<(), StoreError> {
        self.flush(index, ttls, false)?;
        on_durable(Ok(()));
        Ok(())
    }
    /// Clean shutdown (snapshot).
    fn close(&mut self, index: &MessageIndex, ttls: &TtlIndex) -> Result<(), StoreError>;
    /// Persist the owner's blob.
    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError>;
    /// The owner's blob.
    fn metadata(&self) -> &[u8];
    /// A deferred creation not yet durable (see [`crate::StreamStore::pending_creation`]).
    fn pending_creation(&self) -> Option<std::sync::Arc<crate::CreationSync>> {
        None
    }
    /// Create or open a consumer store.
    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError>;
    /// Existing consumer stores.
    fn consumer_names(&self) -> Result<Vec<String>, StoreError>;
    /// Remove everything.
    fn delete(&mut self) -> Result<(), StoreError>;
}

/// Messages with a TTL, by deadline, and messages exempt from max_age.
#[derive(Debug, Default)]
pub struct TtlIndex {
    deadlines: BTreeSet<(i64, u64)>,
    by_seq: HashMap<u64, i64>,
    never: HashSet<u64>,
    ttl_of: HashMap<u64, i64>,
}

impl TtlIndex {
    pub(crate) fn add(&mut self, seq: u64, timestamp: i64, ttl_nanos: i64) {
        if ttl_nanos == TTL_NEVER_NANOS {
            self.never.insert(seq);
            self.ttl_of.insert(seq, ttl_nanos);
        } else if ttl_nanos > 0 {
            let deadline = timestamp.saturating_add(ttl_nanos);
            self.deadlines.insert((deadline, seq));
            self.by_seq.insert(seq, deadline);
            self.ttl_of.insert(seq, ttl_nanos);
        }
    }

    pub(crate) fn forget(&mut self, seq: u64) {
        if let Some(deadline) = self.by_seq.remove(&seq) {
            self.deadlines.remove(&(deadline, seq));
        }
        self.never.remove(&seq);
        self.ttl_of.remove(&seq);
    }

    pub(crate) fn forget_below(&mut self, floor: u64) {
        let gone: Vec<u64> = self
            .ttl_of
            .keys()
            .copied()
            .filter(|seq| *seq < floor)
            .collect();
        for seq in gone {
            self.forget(seq);
        }
    }

    /// The TTL a message was stored with (record encoding).
    pub(crate) fn ttl_nanos(&self, seq: u64) -> i64 {
        // Most streams have no TTLs: skip hashing the sequence (once per message per index file).
        if self.ttl_of.is_empty() {
            return TTL_NONE_NANOS;
        }
        self.ttl_of.get(&seq).copied().unwrap_or(TTL_NONE_NANOS)
    }

    fn clear(&mut self) {
        *self = TtlIndex::default();
    }
}

pub(crate) fn ttl_to_nanos(ttl: Option<Duration>) -> i64 {
    match ttl {
        None => TTL_NONE_NANOS,
        Some(ttl) if ttl == TTL_NEVER => TTL_NEVER_NANOS,
        Some(ttl) => i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX).max(1),
    }
}

// `i64::from` keeps platforms with a 32-bit time_t/long compiling; on 64-bit it is a no-op.
#[allow(clippy::useless_conversion)]
pub(crate) fn now_nanos() -> i64 {
    // Read per stored message: clock_gettime directly skips SystemTime's Duration arithmetic.
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } == 0 {
        return i64::from(now.tv_sec)
            .saturating_mul(1_000_000_000)
            .saturating_add(i64::from(now.tv_nsec))
            .max(0);
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A stream store: index + limits + a backend.
pub struct Store<B: Backend> {
    pub(crate) config: StreamStoreConfig,
    pub(crate) index: MessageIndex,
    pub(crate) ttls: TtlIndex,
    pub(crate) backend: B,
    pub(crate) closed: bool,
}

impl<B: Backend> Store<B> {
    pub(crate) fn from_parts(
        config: StreamStoreConfig,
        index: MessageIndex,
        ttls: TtlIndex,
        backend: B,
    ) -> Self {
        Store {
            config,
            index,
            ttls,
            backend,
            closed: false,
        }
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.closed {
            return Err(StoreError::Closed);
        }
        Ok(())
    }

    /// Heap bytes of the subject index (for the memory figure).
    pub fn subject_index_bytes(&self) -> usize {
        self.index.subjects.heap_bytes()
    }

    /// Heap bytes of the per-sequence index.
    pub fn sequence_index_bytes(&self) -> usize {
        self.index.slot_bytes()
    }

    fn append_checked(
        &mut self,
        seq: u64,
        timestamp: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        if subject.is_empty() || subject.len() > usize::from(u16::MAX) {
            return Err(StoreError::InvalidSubject);
        }
        if self.config.max_msg_size >= 0
            && headers.len() + payload.len() > self.config.max_msg_size as usize
        {
            return Err(StoreError::MaxMessageSize);
        }
        let size = self
            .backend
            .message_size(subject.len(), headers.len(), payload.len());
        let size32 = u32::try_from(size).map_err(|_| StoreError::MaxMessageSize)?;
        let per_subject_max = self.config.max_msgs_per_subject;
        let at_subject_limit =
            per_subject_max > 0
                && self.index.subjects.lookup(subject).is_some_and(|id| {
                    self.index.subjects.entry(id).count >= per_subject_max as u64
                });
        if self.config.discard == DiscardPolicy::New {
            if self.config.discard_new_per_subject && at_subject_limit {
                return Err(StoreError::MaxMessagesPerSubject);
            }
            if self.config.max_msgs > 0
                && self.index.msgs() >= self.config.max_msgs as u64
                && !at_subject_limit
            {
                return Err(StoreError::MaxMessages);
            }
            if self.config.max_bytes > 0 && self.index.bytes() + size > self.config.max_bytes as u64
            {
                // At the subject maximum the message replaces the subject's oldest one, which
                // makes room only when it is at least as large (as nats-server decides).
                let replaced_size = if at_subject_limit {
                    self.index
                        .subjects
                        .lookup(subject)
                        .and_then(|id| self.index.get(self.index.subjects.entry(id).first))
                        .map(|slot| u64::from(slot.size))
                } else {
                    None
                };
                if replaced_size.is_none_or(|replaced| replaced < size) {
                    return Err(StoreError::MaxBytes);
                }
            }
        }
        let ttl_nanos = if self.config.allow_msg_ttl {
            ttl_to_nanos(ttl)
        } else {
            TTL_NONE_NANOS
        };
        let (location, record_len) = self.backend.append(&MessageRecord {
            seq,
            timestamp,
            subject,
            headers,
            payload,
            ttl_nanos,
            compression: self.config.compression,
        })?;
        self.index.push(
            seq,
            Slot {
                timestamp,
                location,
                size: size32,
                subject_id: 0,
                record_len,
            },
            subject,
        );
        // Most messages have no TTL and most streams no count or byte limit: skip the calls.
        if ttl_nanos != TTL_NONE_NANOS {
            self.ttls.add(seq, timestamp, ttl_nanos);
        }
        if at_subject_limit || per_subject_max > 0 {
            self.enforce_subject_limit(subject)?;
        }
        if self.config.max_msgs > 0 || self.config.max_bytes > 0 {
            self.enforce_stream_limits()?;
        }
        Ok(())
    }

    fn enforce_subject_limit(&mut self, subject: &str) -> Result<(), StoreError> {
        let max = self.config.max_msgs_per_subject;
        if max <= 0 {
            return Ok(());
        }
        while let Some(id) = self.index.subjects.lookup(subject) {
            let entry = self.index.subjects.entry(id);
            if entry.count <= max as u64 {
                break;
            }
            let oldest = entry.first;
            self.remove_internal(oldest, false)?;
        }
        Ok(())
    }

    fn enforce_stream_limits(&mut self) -> Result<(), StoreError> {
        if self.config.max_msgs > 0 {
            while self.index.msgs() > self.config.max_msgs as u64 {
                let first = self.index.first_seq();
                self.remove_internal(first, false)?;
            }
        }
        if self.config.max_bytes > 0 {
            while self.index.bytes() > self.config.max_bytes as u64 && self.index.msgs() > 0 {
                let first = self.index.first_seq();
                self.remove_internal(first, false)?;
            }
        }
        Ok(())
    }

    fn remove_internal(&mut self, seq: u64, erase: bool) -> Result<bool, StoreError> {
        let Some(slot) = self.index.remove(seq) else {
            return Ok(false);
        };
        self.ttls.forget(seq);
        self.backend.removed(seq, &slot, erase)?;
        Ok(true)
    }

    fn load_slot(&mut self, seq: u64) -> Result<StoredMessage, StoreError> {
        let slot = *self.index.get(seq).ok_or(StoreError::NotFound)?;
        let subject = &self.index.subjects.entry(slot.subject_id).subject;
        self.backend.read(seq, &slot, subject)
    }

    fn load_optional(&mut self, seq: Option<u64>) -> Result<Option<StoredMessage>, StoreError> {
        match seq {
            Some(seq) => self.load_slot(seq).map(Some),
            None => Ok(None),
        }
    }

    fn purge_all_to(&mut self, floor: u64) -> Result<u64, StoreError> {
        let removed = self.index.msgs();
        self.index.reset(floor);
        self.ttls.clear();
        self.backend.floor(self.index.first_seq(), &self.index)?;
        Ok(removed)
    }
}

impl<B: Backend> StreamStore for Store<B> {
    fn config(&self) -> &StreamStoreConfig {
        &self.config
    }

    fn update_config(&mut self, config: StreamStoreConfig) -> Result<(), StoreError> {
        self.check_open()?;
        self.config = config;
        if self.config.max_msgs_per_subject > 0 {
            let max = self.config.max_msgs_per_subject as u64;
            let over: Vec<String> = self
                .index
                .subjects
                .matching(">")
                .into_iter()
                .map(|id| self.index.subjects.entry(id))
                .filter(|entry| entry.count > max)
                .map(|entry| entry.subject.to_string())
                .collect();
            for subject in over {
                self.enforce_subject_limit(&subject)?;
            }
        }
        self.enforce_stream_limits()
    }

    fn store_msg(
        &mut self,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(u64, i64), StoreError> {
        self.check_open()?;
        let seq = self.index.last_seq() + 1;
        // Timestamps never go backwards, so time lookups can binary-search.
        let timestamp = now_nanos().max(self.index.last_timestamp());
        self.append_checked(seq, timestamp, subject, headers, payload, ttl)?;
        Ok((seq, timestamp))
    }

    fn store_raw(
        &mut self,
        seq: u64,
        timestamp: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        self.check_open()?;
        let expected = self.index.last_seq() + 1;
        if seq < expected {
            return Err(StoreError::SequenceMismatch { expected, got: seq });
        }
        self.append_checked(seq, timestamp, subject, headers, payload, ttl)
    }

    fn skip_msgs(&mut self, seq: u64, count: u64) -> Result<(), StoreError> {
        self.check_open()?;
        let expected = self.index.last_seq() + 1;
        if seq < expected {
            return Err(StoreError::SequenceMismatch { expected, got: seq });
        }
        if count == 0 {
            return Ok(());
        }
        let last = seq
            .checked_add(count - 1)
            .ok_or(StoreError::SequenceMismatch { expected, got: seq })?;
        self.backend.append_skip(seq, count)?;
        self.index.extend_deleted_to(last);
        Ok(())
    }

    fn flush(&mut self) -> Result<u64, StoreError> {
        self.check_open()?;
        self.backend.flush(&mut self.index, &self.ttls, false)?;
        Ok(self.index.last_seq())
    }

    fn flush_then(&mut self, on_durable: DurableCallback) -> Result<u64, StoreError> {
        self.check_open()?;
        self.backend
            .flush_then(&mut self.index, &self.ttls, on_durable)?;
        Ok(self.index.last_seq())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        self.check_open()?;
        self.backend.flush(&mut self.index, &self.ttls, true)
    }

    fn load(&mut self, seq: u64) -> Result<StoredMessage, StoreError> {
        self.check_open()?;
        self.load_slot(seq)
    }

    fn message_ttl(&mut self, seq: u64) -> Option<Duration> {
        match self.ttls.ttl_nanos(seq) {
            TTL_NEVER_NANOS => Some(TTL_NEVER),
            nanos if nanos > 0 => Some(Duration::from_nanos(nanos.unsigned_abs())),
            _ => None,
        }
    }

    fn load_next(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.check_open()?;
        let filters = [filter.to_string()];
        let seq = self.index.next_matching(&filters, start_seq);
        self.load_optional(seq)
    }

    fn load_next_matching(
        &mut self,
        filters: &[String],
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.check_open()?;
        let seq = self.index.next_matching(filters, start_seq);
        self.load_optional(seq)
    }

    fn load_last(&mut self, filter: &str) -> Result<Option<StoredMessage>, StoreError> {
        self.check_open()?;
        let seq = self.index.last_matching(filter);
        self.load_optional(seq)
    }

    fn load_prev(
        &mut self,
        filter: &str,
        start_seq: u64,
    ) -> Result<Option<StoredMessage>, StoreError> {
        self.check_open()?;
        let seq = self.index.prev_matching(filter, start_seq);
        self.load_optional(seq)
    }

    fn remove(&mut self, seq: u64) -> Result<bool, StoreError> {
        self.check_open()?;
        self.remove_internal(seq, false)
    }

    fn erase(&mut self, seq: u64) -> Result<bool, StoreError> {
        self.check_open()?;
        self.remove_internal(seq, true)
    }

    fn purge(&mut self) -> Result<u64, StoreError> {
        self.check_open()?;
        let floor = self.index.last_seq() + 1;
        self.purge_all_to(floor)
    }

    fn purge_ex(&mut self, filter: &str, up_to_seq: u64, keep: u64) -> Result<u64, StoreError> {
        self.check_open()?;
        if is_full_wildcard(filter) && keep == 0 {
            if up_to_seq == 0 {
                return self.purge();
            }
            return self.compact(up_to_seq);
        }
        let filters = [filter.to_string()];
        let matching = self.index.num_pending(&filters, 0, false);
        let mut budget = if keep > 0 {
            if keep >= matching {
                return Ok(0);
            }
            matching - keep
        } else {
            matching
        };
        let bound = if up_to_seq > 0 {
            up_to_seq - 1
        } else {
            self.index.last_seq()
        };
        let mut purged = 0;
        let mut seq = self.index.first_seq();
        while budget > 0 {
            let Some(next) = self.index.next_matching(&filters, seq) else {
                break;
            };
            if next > bound {
                break;
            }
            if self.remove_internal(next, false)? {
                purged += 1;
                budget -= 1;
            }
            seq = next + 1;
        }
        Ok(purged)
    }

    fn compact(&mut self, seq: u64) -> Result<u64, StoreError> {
        self.check_open()?;
        if seq <= self.index.first_seq() {
            return Ok(0);
        }
        if seq > self.index.last_seq() {
            return self.purge_all_to(seq);
        }
        let doomed: Vec<u64> = self
            .index
            .live_range(0, seq - 1)
            .map(|(seq, _)| seq)
            .collect();
        for doomed_seq in &doomed {
            self.index.remove(*doomed_seq);
        }
        self.ttls.forget_below(seq);
        self.backend.floor(seq, &self.index)?;
        Ok(doomed.len() as u64)
    }

    fn state(&self) -> StreamState {
        let msgs = self.index.msgs();
        let last_seq = self.index.last_seq();
        // nats-server reports 0/0 for a stream that never held a sequence.
        let first_seq = if last_seq == 0 {
            0
        } else {
            self.index.first_seq()
        };
        StreamState {
            msgs,
            bytes: self.index.bytes(),
            first_seq,
            first_timestamp: self
                .index
                .get(first_seq)
                .map(|slot| slot.timestamp)
                .unwrap_or(0),
            last_seq,
            last_timestamp: self.index.last_timestamp(),
            num_deleted: if msgs == 0 {
                0
            } else {
                last_seq - first_seq + 1 - msgs
            },
            num_subjects: self.index.subjects.len() as u64,
        }
    }

    fn deleted_seqs(&self) -> Vec<u64> {
        self.index.deleted()
    }

    fn subjects_state(&self, filter: &str) -> BTreeMap<String, SubjectState> {
        self.index
            .subjects
            .matching(filter)
            .into_iter()
            .map(|id| {
                let entry = self.index.subjects.entry(id);
                (
                    entry.subject.to_string(),
                    SubjectState {
                        msgs: entry.count,
                        first_seq: entry.first,
                        last_seq: entry.last,
                    },
                )
            })
            .collect()
    }

    fn num_pending(&self, filter: &str, start_seq: u64, last_per_subject: bool) -> u64 {
        self.index
            .num_pending(&[filter.to_string()], start_seq, last_per_subject)
    }

    fn num_pending_matching(
        &self,
        filters: &[String],
        start_seq: u64,
        last_per_subject: bool,
    ) -> u64 {
        self.index.num_pending(filters, start_seq, last_per_subject)
    }

    fn seq_for_time(&self, timestamp: i64) -> u64 {
        self.index.seq_for_time(timestamp)
    }

    fn expire(&mut self, now: i64) -> Result<Vec<RemovedMessage>, StoreError> {
        self.check_open()?;
        let mut expired: Vec<(u64, bool)> = Vec::new();
        while let Some(&(deadline, seq)) = self.ttls.deadlines.first() {
            if deadline > now {
                break;
            }
            self.ttls.forget(seq);
            expired.push((seq, true));
        }
        if !self.config.max_age.is_zero() {
            let max_age = i64::try_from(self.config.max_age.as_nanos()).unwrap_or(i64::MAX);
            let cutoff = now.saturating_sub(max_age);
            for (seq, slot) in self.index.live_slots() {
                if slot.timestamp > cutoff {
                    break;
                }
                if !self.ttls.never.contains(&seq) {
                    expired.push((seq, false));
                }
            }
        }
        expired.sort_unstable();
        expired.dedup_by_key(|(seq, _)| *seq);
        let mut removed = Vec::with_capacity(expired.len());
        for (seq, by_ttl) in expired {
            let Some(slot) = self.index.get(seq).copied() else {
                continue;
            };
            let subject = self
                .index
                .subjects
                .entry(slot.subject_id)
                .subject
                .to_string();
            if self.remove_internal(seq, false)? {
                removed.push(RemovedMessage {
                    seq,
                    subject,
                    by_ttl,
                });
            }
        }
        Ok(removed)
    }

    fn next_expiry(&self) -> Option<i64> {
        let by_ttl = self.ttls.deadlines.first().map(|(deadline, _)| *deadline);
        let by_age = if self.config.max_age.is_zero() {
            None
        } else {
            let max_age = i64::try_from(self.config.max_age.as_nanos()).unwrap_or(i64::MAX);
            self.index
                .live_slots()
                .find(|(seq, _)| !self.ttls.never.contains(seq))
                .map(|(_, slot)| slot.timestamp.saturating_add(max_age))
        };
        match (by_ttl, by_age) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn set_metadata(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.check_open()?;
        self.backend.set_metadata(blob)
    }

    fn metadata(&self) -> &[u8] {
        self.backend.metadata()
    }

    fn pending_creation(&self) -> Option<std::sync::Arc<crate::CreationSync>> {
        self.backend.pending_creation()
    }

    fn consumer_store(&mut self, name: &str) -> Result<Box<dyn ConsumerStore>, StoreError> {
        self.check_open()?;
        self.backend.consumer_store(name)
    }

    fn consumer_names(&self) -> Result<Vec<String>, StoreError> {
        self.backend.consumer_names()
    }

    fn close(&mut self) -> Result<(), StoreError> {
        if self.closed {
            return Ok(());
        }
        self.backend.flush(&mut self.index, &self.ttls, true)?;
        self.backend.close(&self.index, &self.ttls)?;
        self.closed = true;
        Ok(())
    }

    fn delete(&mut self) -> Result<(), StoreError> {
        self.closed = true;
        self.backend.delete()
    }
}

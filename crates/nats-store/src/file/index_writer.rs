//! Writing a sealed block's index file off the stream's thread: when a block seals, `file/mod.rs`
//! copies what the index file needs out of the message index (a [`SealedIndex`]: a plain copy of
//! the slots and the text of each distinct subject, ~10x cheaper than encoding) and hands the
//! encoding, the fsync of the block and the write of `<id>.idx` to a sync pool thread
//! (`durability.rs`). The order is the one an inline seal had: the block's data is durable before
//! an index describing it exists, so an index never describes bytes a power loss could take back.
//!
//! The block keeps the job's handle; whatever needs the block durable, rewrites or deletes it
//! (interval sync, close, compaction, removal) waits for the job first, and every flush collects
//! the result of a finished job, so a failed fsync is reported, never lost.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use hashbrown::HashMap;
use parking_lot::{Condvar, Mutex};

use crate::engine::TtlIndex;
use crate::error::StoreError;
use crate::index::MessageIndex;

use super::block::Block;
use super::block_index::{compress_block_index, encode_block_index, IndexedMessage};
use super::durability::run_in_background;
use super::write_atomic;

/// One live message of a sealed block, as copied out of the message index.
struct SealedMessage {
    seq: u64,
    timestamp: i64,
    ttl_nanos: i64,
    location: u32,
    record_len: u32,
    size: u32,
    subject_id: u32,
}

/// What a block's index file says, detached from the message index so another thread can encode it.
pub(crate) struct SealedIndex {
    covered_len: u64,
    first_seq: u64,
    last_seq: u64,
    messages: Vec<SealedMessage>,
    subjects: HashMap<u32, Box<str>>,
}

impl SealedIndex {
    /// Copy what the index file of `block`, as it is on disk now, says.
    pub fn capture(block: &Block, index: &MessageIndex, ttls: &TtlIndex) -> SealedIndex {
        let (covered_len, first_seq, last_seq) =
            (block.written_len, block.first_seq, block.last_seq);
        let span = usize::try_from(last_seq.saturating_sub(first_seq) + 1).unwrap_or(0);
        let mut messages = Vec::with_capacity(span.min(1 << 20));
        let mut subjects: HashMap<u32, Box<str>> = HashMap::new();
        let mut previous_subject = None;
        for (seq, slot) in index.live_range(first_seq, last_seq) {
            // Runs of one subject are common: only a change of id costs a hash lookup.
            if previous_subject != Some(slot.subject_id) {
                subjects
                    .entry(slot.subject_id)
                    .or_insert_with(|| index.subject_text(slot.subject_id).into());
                previous_subject = Some(slot.subject_id);
            }
            messages.push(SealedMessage {
                seq,
                timestamp: slot.timestamp,
                ttl_nanos: ttls.ttl_nanos(seq),
                location: slot.location,
                record_len: slot.record_len,
                size: slot.size,
                subject_id: slot.subject_id,
            });
        }
        SealedIndex {
            covered_len,
            first_seq,
            last_seq,
            messages,
            subjects,
        }
    }

    /// The index file's bytes (compressed: `block_index.rs`).
    pub fn encode(&self) -> Vec<u8> {
        let index = encode_block_index(
            self.covered_len,
            self.first_seq,
            self.last_seq,
            self.messages.iter().map(|message| IndexedMessage {
                seq: message.seq,
                timestamp: message.timestamp,
                ttl_nanos: message.ttl_nanos,
                location: message.location,
                record_len: message.record_len,
                size: message.size,
                subject: self
                    .subjects
                    .get(&message.subject_id)
                    .map_or("", |text| text),
            }),
        );
        compress_block_index(&index)
    }
}

/// A background index write; its result is taken once (later takers see `Ok`).
pub(crate) struct IndexJob {
    outcome: Mutex<Outcome>,
    done: Condvar,
    /// The job fsyncs the block's data: until it finishes, the block is not known durable.
    pub syncs_data: bool,
}

#[derive(Default)]
struct Outcome {
    finished: bool,
    result: Option<Result<(), StoreError>>,
}

impl std::fmt::Debug for IndexJob {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("IndexJob")
    }
}

impl IndexJob {
    /// Queue: fsync `data` (when given), then encode `sealed` and write it to `index_path`
    /// atomically.
    pub fn start(
        data: Option<(Arc<File>, PathBuf)>,
        index_path: PathBuf,
        sealed: SealedIndex,
    ) -> Arc<IndexJob> {
        let job = Arc::new(IndexJob {
            outcome: Mutex::new(Outcome::default()),
            done: Condvar::new(),
            syncs_data: data.is_some(),
        });
        let worker = job.clone();
        run_in_background(Box::new(move || {
            let result = data
                .map_or(Ok(()), |(file, path)| {
                    file.sync_data().map_err(StoreError::io(path))
                })
                .and_then(|()| write_atomic(&index_path, &sealed.encode(), false));
            *worker.outcome.lock() = Outcome {
                finished: true,
                result: Some(result),
            };
            worker.done.notify_all();
        }));
        job
    }

    /// The result once the job has finished, without waiting.
    pub fn try_finish(&self) -> Option<Result<(), StoreError>> {
        let mut outcome = self.outcome.lock();
        outcome
            .finished
            .then(|| outcome.result.take().unwrap_or(Ok(())))
    }

    /// Wait for the job and take its result.
    pub fn finish(&self) -> Result<(), StoreError> {
        let mut outcome = self.outcome.lock();
        while !outcome.finished {
            self.done.wait(&mut outcome);
        }
        outcome.result.take().unwrap_or(Ok(()))
    }
}

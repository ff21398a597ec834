//! Work-queue and interest retention, decided by the stream from the acks its consumers send
//! ([`StreamCommand::Acked`](super::super::StreamCommand::Acked)). A work-queue message goes
//! at its ack. An interest message goes once no registered consumer needs it: the ingest task
//! notes the acked sequence and its subject while it holds the store, then asks the consumers
//! after the batch with the store unlocked (a consumer's state lock is taken before a store
//! lock, never after) and removes what nobody needs under the lock again.

use super::super::apply::StreamEntry;
use super::Ingest;
use jetstream_api::RetentionPolicy;
use nats_store::StreamStore;

/// Interest decisions waiting for the end of the batch.
#[derive(Default)]
pub(super) struct Pending {
    /// Acked messages of an interest stream, with their subjects.
    acked: Vec<(u64, String)>,
    /// A consumer left or reset: every stored message is checked again.
    pub interest_released: bool,
}

/// nats-server's bound for the re-check after a consumer leaves: a longer stream is left alone.
const MAX_RECHECK: u64 = 1_000_000;

impl Ingest {
    /// A consumer acknowledged `seq` (the store is locked by the batch).
    pub(super) fn acked(&mut self, store: &mut dyn StreamStore, seq: u64) {
        match self.config.retention {
            RetentionPolicy::Limits => {}
            RetentionPolicy::WorkQueue => self.remove_for_retention(store, seq),
            RetentionPolicy::Interest => {
                if let Ok(message) = store.load(seq) {
                    self.retention.acked.push((seq, message.subject));
                }
            }
        }
    }

    fn remove_for_retention(&mut self, store: &mut dyn StreamStore, seq: u64) {
        self.dirty = true;
        if let Err(error) = self.apply(store, &StreamEntry::Remove { seq }) {
            tracing::debug!(stream = %self.config.name, seq, %error, "retention removal failed");
        }
    }

    /// After a batch, with the store unlocked: remove the interest messages nobody needs.
    pub(super) fn settle_retention(&mut self) {
        if self.retention.acked.is_empty() && !self.retention.interest_released {
            return;
        }
        let acked = std::mem::take(&mut self.retention.acked);
        let recheck_all = std::mem::take(&mut self.retention.interest_released);
        if self.config.retention != RetentionPolicy::Interest {
            return;
        }
        let interest = &self.stream.interest;
        let mut unneeded: Vec<u64> = acked
            .into_iter()
            .filter(|(seq, subject)| !interest.needed(*seq, subject))
            .map(|(seq, _)| seq)
            .collect();
        if recheck_all {
            let state = self.stream.store.raw_state();
            if state.last_seq > 0 && state.last_seq - state.first_seq <= MAX_RECHECK {
                super::scan_stored(&self.stream, state.first_seq, state.last_seq, |message| {
                    if !interest.needed(message.seq, &message.subject) {
                        unneeded.push(message.seq);
                    }
                });
            }
        }
        if unneeded.is_empty() {
            return;
        }
        let store_handle = self.stream.store.clone();
        let mut store = store_handle.write();
        for seq in unneeded {
            self.remove_for_retention(&mut **store, seq);
        }
        self.commit(&mut **store);
    }
}

//! `CONSUMER.RESET`: move a consumer back (or forward) to a stream sequence, forgetting what it
//! has delivered and what is pending, as nats-server's `resetStartingSeq` does.

use super::Task;
use crate::consumer::ConsumerEntry;
use jetstream_api::{errors, ApiError, ConsumerInfo, DeliverPolicy};

impl Task {
    /// Reset to `requested` (0: just past the ack floor). Which targets a consumer accepts
    /// depends on its deliver policy: any for `all`, not below the configured start for
    /// `by_start_sequence` / `by_start_time`, none but the ack floor for the others.
    pub(super) fn reset(&mut self, requested: u64) -> Result<(ConsumerInfo, u64), ApiError> {
        let invalid = |reason: &str| errors::CONSUMER_INVALID_RESET.with_err(reason);
        let ack_floor = self.consumer.state.lock().state.ack_floor.stream_seq;
        let sequence = if requested == 0 {
            ack_floor + 1
        } else {
            match self.config.deliver_policy {
                DeliverPolicy::All => requested,
                DeliverPolicy::ByStartSequence => {
                    if requested < self.config.opt_start_seq {
                        return Err(invalid("below start seq"));
                    }
                    requested
                }
                DeliverPolicy::ByStartTime => {
                    let time = self
                        .config
                        .opt_start_time
                        .as_ref()
                        .map_or(0, |time| time.unix_nanos());
                    if requested < self.stream.store.read().seq_for_time(time) {
                        return Err(invalid("below start time"));
                    }
                    requested
                }
                _ => return Err(invalid("not allowed")),
            }
        }
        .max(1);
        let state = {
            let mut shared = self.consumer.state.lock();
            // The whole state goes to the store below: nothing is left to pass on.
            shared.apply(&ConsumerEntry::Reset {
                stream_seq: sequence - 1,
            });
            shared.last_delivered_active = None;
            shared.last_ack_active = None;
            shared.state.clone()
        };
        self.redeliver.clear();
        self.deadlines.clear();
        self.deadline_of.clear();
        self.last_per_subject.clear();
        let written = self.store.set_state(state).and_then(|_| self.store.flush());
        if let Err(error) = written {
            tracing::error!(consumer = %self.consumer.name, %error, "writing reset consumer state failed");
        }
        self.dirty = false;
        // Messages only this consumer held back may have lost their last interest.
        self.stream.release_interest();
        Ok((self.consumer.info(&self.stream), sequence))
    }
}

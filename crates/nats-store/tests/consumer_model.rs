//! Model test: random deliver / redeliver / ack / nak / flush / snapshot / restart sequences applied
//! to a FileConsumerStore and to a plain model (the caller's state, and a copy of it taken at each
//! flush). The store must always show the caller's state, and after a restart exactly the state of
//! the last flush, whichever way the changes were handed over.

use nats_store::{ConsumerState, ConsumerStore, FileConsumerStore};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Operation {
    /// Deliver this many new messages.
    Deliver(u8),
    /// Redeliver the pending message at this position (modulo the pending count): a timeout or a nak.
    Redeliver(u8),
    /// Ack the pending message at this position.
    Ack(u8),
    /// Ack everything pending up to this position (the caller acks one by one).
    AckRange(u8),
    Flush,
    Snapshot,
    /// Drop the store without flushing and open it again.
    Restart,
}

#[derive(Debug, Clone, Copy)]
enum Handover {
    WholeState,
    ChangedOnly,
    PerEvent,
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        4 => (1u8..8).prop_map(Operation::Deliver),
        2 => any::<u8>().prop_map(Operation::Redeliver),
        4 => any::<u8>().prop_map(Operation::Ack),
        1 => any::<u8>().prop_map(Operation::AckRange),
        3 => Just(Operation::Flush),
        1 => Just(Operation::Snapshot),
        1 => Just(Operation::Restart),
    ]
}

fn handover() -> impl Strategy<Value = Handover> {
    prop_oneof![
        Just(Handover::WholeState),
        Just(Handover::ChangedOnly),
        Just(Handover::PerEvent)
    ]
}

struct Run {
    dir: tempfile::TempDir,
    store: FileConsumerStore,
    sync: bool,
    /// The caller's state.
    live: ConsumerState,
    /// The state at the last flush: what a restart must give back.
    flushed: ConsumerState,
    changed: Vec<u64>,
    handover: Handover,
    clock: i64,
}

impl Run {
    fn deliver(&mut self, stream_seq: u64, count: u64) {
        self.clock += 1;
        let consumer_seq = self.live.delivered.consumer_seq + 1;
        self.live
            .apply_delivered(consumer_seq, stream_seq, count, self.clock);
        if let Handover::PerEvent = self.handover {
            self.store
                .update_delivered(consumer_seq, stream_seq, count, self.clock)
                .unwrap();
        }
        self.changed.push(stream_seq);
    }

    fn ack(&mut self, position: u8) {
        let Some((&seq, pending)) = self
            .live
            .pending
            .iter()
            .nth(position as usize % self.live.pending.len().max(1))
        else {
            return;
        };
        let consumer_seq = pending.consumer_seq;
        self.live.apply_ack(consumer_seq, seq);
        if let Handover::PerEvent = self.handover {
            self.store.update_acks(consumer_seq, seq).unwrap();
        }
        self.changed.push(seq);
    }

    fn hand_over(&mut self) {
        match self.handover {
            Handover::WholeState => self.store.set_state(self.live.clone()).unwrap(),
            Handover::ChangedOnly => self.store.update_state(&self.live, &self.changed).unwrap(),
            Handover::PerEvent => {}
        }
        self.changed.clear();
    }

    fn apply(&mut self, operation: &Operation) {
        match operation {
            Operation::Deliver(count) => {
                for _ in 0..*count {
                    let seq = self.live.delivered.stream_seq + 1;
                    self.deliver(seq, 1);
                }
            }
            Operation::Redeliver(position) => {
                if let Some(&seq) = self
                    .live
                    .pending
                    .keys()
                    .nth(*position as usize % self.live.pending.len().max(1))
                {
                    let count = self.live.redelivered.get(&seq).copied().unwrap_or(0) + 2;
                    self.deliver(seq, count);
                }
            }
            Operation::Ack(position) => self.ack(*position),
            Operation::AckRange(position) => {
                for _ in 0..=*position as usize % 5 {
                    self.ack(0);
                }
            }
            Operation::Flush => {
                self.hand_over();
                self.store.flush().unwrap();
                self.flushed = self.live.clone();
            }
            Operation::Snapshot => {
                self.hand_over();
                self.store.write_snapshot().unwrap();
                self.flushed = self.live.clone();
            }
            Operation::Restart => {
                self.store = FileConsumerStore::open(self.dir.path(), "c", self.sync).unwrap();
                assert!(self.store.recovery_problems().is_empty());
                assert_eq!(
                    self.store.state(),
                    self.flushed,
                    "restart lost or invented state"
                );
                // The caller starts over from what was persisted.
                self.live = self.flushed.clone();
                self.changed.clear();
            }
        }
        if !matches!(operation, Operation::Restart) {
            if let Handover::PerEvent = self.handover {
                assert_eq!(self.store.state(), self.live);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn file_consumer_store_matches_the_model(
        operations in proptest::collection::vec(operation(), 1..80),
        handover in handover(),
        sync in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = FileConsumerStore::open(dir.path(), "c", sync).unwrap();
        let mut run = Run {
            dir,
            store,
            sync,
            live: ConsumerState::default(),
            flushed: ConsumerState::default(),
            changed: Vec::new(),
            handover,
            clock: 0,
        };
        for operation in &operations {
            run.apply(operation);
        }
        run.apply(&Operation::Flush);
        run.apply(&Operation::Restart);
    }
}

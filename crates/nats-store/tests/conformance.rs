//! One behaviour suite run against every store implementation (MemStore and FileStore).
//! Each check takes a factory so the file store can also be closed and reopened where relevant.

use std::time::Duration;

use nats_store::{DiscardPolicy, StoreError, StreamStore, StreamStoreConfig, TTL_NEVER};

mod common;
use common::{Factory, FileFactory, MemFactory};

fn unlimited() -> StreamStoreConfig {
    StreamStoreConfig {
        name: "TEST".into(),
        ..StreamStoreConfig::default()
    }
}

fn store_n(store: &mut dyn StreamStore, subject: &str, count: usize) -> Vec<u64> {
    (0..count)
        .map(|index| {
            store
                .store_msg(subject, b"", format!("m{index}").as_bytes(), None)
                .unwrap()
                .0
        })
        .collect()
}

fn sequences_and_load<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    let fresh = store.state();
    assert_eq!((fresh.msgs, fresh.first_seq, fresh.last_seq), (0, 0, 0));
    let (seq, timestamp) = store
        .store_msg("foo", b"NATS/1.0\r\nA: b\r\n\r\n", b"hello", None)
        .unwrap();
    assert_eq!(seq, 1);
    assert!(timestamp > 0);
    let (seq2, timestamp2) = store.store_msg("bar", b"", b"world", None).unwrap();
    assert_eq!(seq2, 2);
    assert!(timestamp2 >= timestamp);
    assert_eq!(store.flush().unwrap(), 2);
    let message = store.load(1).unwrap();
    assert_eq!(message.subject, "foo");
    assert_eq!(&message.headers[..], b"NATS/1.0\r\nA: b\r\n\r\n");
    assert_eq!(&message.payload[..], b"hello");
    assert_eq!(message.seq, 1);
    assert_eq!(message.timestamp, timestamp);
    assert!(matches!(store.load(3), Err(StoreError::NotFound)));
    assert!(matches!(store.load(0), Err(StoreError::NotFound)));
    let state = store.state();
    assert_eq!(state.msgs, 2);
    assert_eq!(state.first_seq, 1);
    assert_eq!(state.last_seq, 2);
    assert_eq!(state.first_timestamp, timestamp);
    assert_eq!(state.last_timestamp, timestamp2);
    assert_eq!(state.num_subjects, 2);
    assert!(state.bytes > 0);
    assert!(matches!(
        store.store_msg("", b"", b"x", None),
        Err(StoreError::InvalidSubject)
    ));
}

fn remove_and_state<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    store_n(store.as_mut(), "a", 5);
    assert!(store.remove(3).unwrap());
    assert!(!store.remove(3).unwrap());
    assert!(!store.remove(99).unwrap());
    let state = store.state();
    assert_eq!(
        (
            state.msgs,
            state.first_seq,
            state.last_seq,
            state.num_deleted
        ),
        (4, 1, 5, 1)
    );
    assert_eq!(store.deleted_seqs(), vec![3]);
    assert!(store.remove(1).unwrap());
    assert!(store.erase(2).unwrap());
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.num_deleted), (2, 4, 0));
    assert!(matches!(store.load(2), Err(StoreError::NotFound)));
    store.remove(4).unwrap();
    store.remove(5).unwrap();
    let state = store.state();
    assert_eq!(
        (state.msgs, state.first_seq, state.last_seq, state.bytes),
        (0, 6, 5, 0)
    );
    assert_eq!(state.first_timestamp, 0);
    assert_eq!(store.store_msg("a", b"", b"x", None).unwrap().0, 6);
}

fn load_next_and_last<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    for subject in ["a.1", "b.1", "a.2", "b.2", "a.1", "c"] {
        store
            .store_msg(subject, b"", subject.as_bytes(), None)
            .unwrap();
    }
    let next = |store: &mut Box<dyn StreamStore>, filter: &str, start: u64| {
        store.load_next(filter, start).unwrap().map(|m| m.seq)
    };
    assert_eq!(next(&mut store, "a.*", 1), Some(1));
    assert_eq!(next(&mut store, "a.*", 2), Some(3));
    assert_eq!(next(&mut store, "a.1", 2), Some(5));
    assert_eq!(next(&mut store, "b.>", 5), None);
    assert_eq!(next(&mut store, ">", 6), Some(6));
    assert_eq!(next(&mut store, "", 4), Some(4));
    assert_eq!(next(&mut store, "zzz", 1), None);
    let filters = vec!["c".to_string(), "b.2".to_string()];
    assert_eq!(
        store
            .load_next_matching(&filters, 1)
            .unwrap()
            .map(|m| m.seq),
        Some(4)
    );
    assert_eq!(
        store
            .load_next_matching(&filters, 5)
            .unwrap()
            .map(|m| m.seq),
        Some(6)
    );
    assert_eq!(
        store.load_next_matching(&[], 3).unwrap().map(|m| m.seq),
        Some(3)
    );
    assert_eq!(store.load_last("a.1").unwrap().map(|m| m.seq), Some(5));
    assert_eq!(store.load_last("b.*").unwrap().map(|m| m.seq), Some(4));
    assert_eq!(store.load_last(">").unwrap().map(|m| m.seq), Some(6));
    assert_eq!(store.load_last("nope").unwrap(), None);
    assert_eq!(store.load_prev("a.*", 4).unwrap().map(|m| m.seq), Some(3));
    assert_eq!(store.load_prev("c", 5).unwrap(), None);
    store.remove(5).unwrap();
    assert_eq!(store.load_last("a.1").unwrap().map(|m| m.seq), Some(1));
    assert_eq!(next(&mut store, "a.1", 2), None);
}

fn purge_variants<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    for index in 0..10 {
        let subject = if index % 2 == 0 { "even" } else { "odd" };
        store.store_msg(subject, b"", b"x", None).unwrap();
    }
    // Keep the 2 newest "even" (seqs 7 and 9).
    assert_eq!(store.purge_ex("even", 0, 2).unwrap(), 3);
    assert_eq!(store.subjects_state("even")["even"].msgs, 2);
    assert_eq!(store.subjects_state("even")["even"].first_seq, 7);
    // "odd" below sequence 6: 2 and 4.
    assert_eq!(store.purge_ex("odd", 6, 0).unwrap(), 2);
    assert_eq!(store.state().msgs, 5);
    assert_eq!(store.state().first_seq, 6);
    // Everything below 8.
    assert_eq!(store.purge_ex("", 8, 0).unwrap(), 2);
    assert_eq!(store.state().first_seq, 8);
    assert_eq!(store.purge().unwrap(), 3);
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (0, 11, 10));
    assert_eq!(store.store_msg("x", b"", b"", None).unwrap().0, 11);
    // Compact beyond the end moves first.
    assert_eq!(store.compact(100).unwrap(), 1);
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (0, 100, 99));
    assert_eq!(store.store_msg("x", b"", b"", None).unwrap().0, 100);
    // Keep with full wildcard.
    store_n(store.as_mut(), "y", 4);
    assert_eq!(store.purge_ex(">", 0, 2).unwrap(), 3);
    assert_eq!(store.state().first_seq, 103);
    assert_eq!(store.compact(104).unwrap(), 1);
    assert_eq!(store.compact(50).unwrap(), 0);
}

fn limits_discard_old<F: Factory>(factory: &F) {
    let config = StreamStoreConfig {
        max_msgs: 3,
        ..unlimited()
    };
    let mut store = factory.create(config);
    store_n(store.as_mut(), "a", 5);
    let state = store.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (3, 3, 5));

    let mut store = factory.create(StreamStoreConfig {
        max_msgs_per_subject: 2,
        ..unlimited()
    });
    for subject in ["k1", "k2", "k1", "k1", "k2", "k1"] {
        store.store_msg(subject, b"", b"v", None).unwrap();
    }
    let subjects = store.subjects_state(">");
    assert_eq!(subjects["k1"].msgs, 2);
    assert_eq!(subjects["k1"].first_seq, 4);
    assert_eq!(subjects["k1"].last_seq, 6);
    assert_eq!(subjects["k2"].msgs, 2);
    assert_eq!(store.state().msgs, 4);

    let mut store = factory.create(unlimited());
    store_n(store.as_mut(), "a", 3);
    let one = store.state().bytes / 3;
    store
        .update_config(StreamStoreConfig {
            max_bytes: (one * 2) as i64,
            ..unlimited()
        })
        .unwrap();
    assert_eq!(store.state().msgs, 2);
    store_n(store.as_mut(), "a", 2);
    assert_eq!(store.state().msgs, 2);
    assert_eq!(store.state().first_seq, 4);
    store
        .update_config(StreamStoreConfig {
            max_msgs_per_subject: 1,
            ..unlimited()
        })
        .unwrap();
    assert_eq!(store.state().msgs, 1);
}

fn limits_discard_new<F: Factory>(factory: &F) {
    let mut store = factory.create(StreamStoreConfig {
        max_msgs: 2,
        discard: DiscardPolicy::New,
        ..unlimited()
    });
    store_n(store.as_mut(), "a", 2);
    assert!(matches!(
        store.store_msg("a", b"", b"x", None),
        Err(StoreError::MaxMessages)
    ));
    assert_eq!(store.state().last_seq, 2);

    let mut store = factory.create(StreamStoreConfig {
        max_bytes: 100,
        discard: DiscardPolicy::New,
        ..unlimited()
    });
    store.store_msg("a", b"", &[0u8; 40], None).unwrap();
    assert!(matches!(
        store.store_msg("a", b"", &[0u8; 40], None),
        Err(StoreError::MaxBytes)
    ));

    let mut store = factory.create(StreamStoreConfig {
        max_msgs_per_subject: 1,
        discard: DiscardPolicy::New,
        discard_new_per_subject: true,
        ..unlimited()
    });
    store.store_msg("a", b"", b"1", None).unwrap();
    store.store_msg("b", b"", b"1", None).unwrap();
    assert!(matches!(
        store.store_msg("a", b"", b"2", None),
        Err(StoreError::MaxMessagesPerSubject)
    ));

    let mut store = factory.create(StreamStoreConfig {
        max_msg_size: 4,
        ..unlimited()
    });
    assert!(matches!(
        store.store_msg("a", b"", b"12345", None),
        Err(StoreError::MaxMessageSize)
    ));
    store.store_msg("a", b"", b"1234", None).unwrap();
}

fn counts_and_pending<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    for index in 0..100u64 {
        let subject = format!("orders.{}.{}", index % 3, index % 5);
        store.store_msg(&subject, b"", b"x", None).unwrap();
    }
    let subjects = store.subjects_state("orders.1.*");
    assert_eq!(subjects.len(), 5);
    assert_eq!(subjects.values().map(|s| s.msgs).sum::<u64>(), 33);
    let brute = |store: &mut Box<dyn StreamStore>, filter: &str, start: u64| {
        let mut count = 0;
        let mut seq = start;
        while let Some(message) = store.load_next(filter, seq).unwrap() {
            count += 1;
            seq = message.seq + 1;
        }
        count
    };
    for filter in [">", "orders.1.*", "orders.*.4", "orders.2.2", "none"] {
        for start in [0, 1, 2, 50, 99, 100, 101] {
            let expected = brute(&mut store, filter, start);
            assert_eq!(
                store.num_pending(filter, start, false),
                expected,
                "{filter} {start}"
            );
        }
    }
    store.remove(50).unwrap();
    store.remove(51).unwrap();
    assert_eq!(store.num_pending(">", 40, false), 59);
    let filters = vec!["orders.1.*".to_string(), "orders.*.1".to_string()];
    let mut expected = 0;
    for seq in 30..=100 {
        if let Ok(message) = store.load(seq) {
            let parts: Vec<&str> = message.subject.split('.').collect();
            if parts[1] == "1" || parts[2] == "1" {
                expected += 1;
            }
        }
    }
    assert_eq!(store.num_pending_matching(&filters, 30, false), expected);
    // Last per subject: every one of the 15 subjects has a message at or after 86.
    assert_eq!(store.num_pending(">", 86, true), 15);
    assert_eq!(store.num_pending(">", 100, true), 1);
    assert_eq!(store.state().num_subjects, 15);
}

fn skip_and_raw<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    store.store_raw(1, 1000, "m", b"", b"1", None).unwrap();
    store.skip_msgs(2, 3).unwrap();
    assert!(matches!(
        store.store_raw(3, 2000, "m", b"", b"x", None),
        Err(StoreError::SequenceMismatch {
            expected: 5,
            got: 3
        })
    ));
    store.store_raw(5, 2000, "m", b"", b"5", None).unwrap();
    let state = store.state();
    assert_eq!(
        (
            state.msgs,
            state.first_seq,
            state.last_seq,
            state.num_deleted
        ),
        (2, 1, 5, 3)
    );
    assert_eq!(store.load(5).unwrap().timestamp, 2000);
    assert_eq!(store.seq_for_time(1500), 5);
    assert_eq!(store.seq_for_time(0), 1);
    assert_eq!(store.seq_for_time(5000), 6);
    let mut empty = factory.create(unlimited());
    empty.skip_msgs(1, 10).unwrap();
    let state = empty.state();
    assert_eq!((state.msgs, state.first_seq, state.last_seq), (0, 11, 10));
    assert_eq!(empty.store_msg("a", b"", b"", None).unwrap().0, 11);
}

fn max_age_and_ttl<F: Factory>(factory: &F) {
    let second = 1_000_000_000i64;
    let mut store = factory.create(StreamStoreConfig {
        max_age: Duration::from_secs(10),
        allow_msg_ttl: true,
        ..unlimited()
    });
    store
        .store_raw(1, 100 * second, "a", b"", b"", None)
        .unwrap();
    store
        .store_raw(2, 101 * second, "b", b"", b"", Some(TTL_NEVER))
        .unwrap();
    store
        .store_raw(3, 102 * second, "c", b"", b"", Some(Duration::from_secs(2)))
        .unwrap();
    store
        .store_raw(4, 103 * second, "d", b"", b"", None)
        .unwrap();
    assert_eq!(store.next_expiry(), Some(104 * second));
    let removed = store.expire(104 * second).unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!((removed[0].seq, removed[0].by_ttl), (3, true));
    assert_eq!(store.next_expiry(), Some(110 * second));
    let removed = store.expire(113 * second).unwrap();
    let seqs: Vec<u64> = removed.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![1, 4]);
    assert_eq!(removed[0].subject, "a");
    assert!(!removed[0].by_ttl);
    assert_eq!(store.state().msgs, 1);
    assert_eq!(store.next_expiry(), None);
    assert!(store.expire(1000 * second).unwrap().is_empty());
    assert_eq!(store.load(2).unwrap().subject, "b");

    // TTLs are ignored unless allowed.
    let mut store = factory.create(unlimited());
    store
        .store_raw(1, second, "a", b"", b"", Some(Duration::from_secs(1)))
        .unwrap();
    assert_eq!(store.next_expiry(), None);
    assert!(store.expire(100 * second).unwrap().is_empty());
}

fn metadata_and_consumers<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    store.set_metadata(b"{\"name\":\"TEST\"}").unwrap();
    assert_eq!(store.metadata(), b"{\"name\":\"TEST\"}");
    let mut consumer = store.consumer_store("c1").unwrap();
    consumer.set_config(b"cfg").unwrap();
    consumer.update_delivered(1, 10, 1, 5).unwrap();
    consumer.update_delivered(2, 11, 1, 6).unwrap();
    consumer.update_delivered(3, 10, 2, 7).unwrap();
    consumer.update_acks(2, 11).unwrap();
    consumer.flush().unwrap();
    let state = consumer.state();
    assert_eq!(state.delivered.consumer_seq, 3);
    assert_eq!(state.delivered.stream_seq, 11);
    assert_eq!(state.pending.len(), 1);
    assert_eq!(state.pending[&10].consumer_seq, 3);
    assert_eq!(state.redelivered[&10], 1);
    assert_eq!(consumer.config(), b"cfg");
    assert_eq!(store.consumer_names().unwrap(), vec!["c1".to_string()]);
    drop(consumer);
    let mut again = store.consumer_store("c1").unwrap();
    assert_eq!(
        again.state(),
        state,
        "a consumer store hands back its state"
    );
    again.delete().unwrap();
    assert!(store.consumer_names().unwrap().is_empty());
}

fn closed_store_rejects<F: Factory>(factory: &F) {
    let mut store = factory.create(unlimited());
    store.store_msg("a", b"", b"", None).unwrap();
    store.close().unwrap();
    assert!(matches!(
        store.store_msg("a", b"", b"", None),
        Err(StoreError::Closed)
    ));
    assert!(matches!(store.load(1), Err(StoreError::Closed)));
}

macro_rules! conformance {
    ($module:ident, $factory:expr) => {
        mod $module {
            use super::*;
            #[test]
            fn sequences_and_load() {
                super::sequences_and_load(&$factory);
            }
            #[test]
            fn remove_and_state() {
                super::remove_and_state(&$factory);
            }
            #[test]
            fn load_next_and_last() {
                super::load_next_and_last(&$factory);
            }
            #[test]
            fn purge_variants() {
                super::purge_variants(&$factory);
            }
            #[test]
            fn limits_discard_old() {
                super::limits_discard_old(&$factory);
            }
            #[test]
            fn limits_discard_new() {
                super::limits_discard_new(&$factory);
            }
            #[test]
            fn counts_and_pending() {
                super::counts_and_pending(&$factory);
            }
            #[test]
            fn skip_and_raw() {
                super::skip_and_raw(&$factory);
            }
            #[test]
            fn max_age_and_ttl() {
                super::max_age_and_ttl(&$factory);
            }
            #[test]
            fn metadata_and_consumers() {
                super::metadata_and_consumers(&$factory);
            }
            #[test]
            fn closed_store_rejects() {
                super::closed_store_rejects(&$factory);
            }
        }
    };
}

conformance!(mem, MemFactory);
conformance!(file, FileFactory::new());
conformance!(file_reopened, FileFactory::reopening());
conformance!(file_compressed, FileFactory::compressed());

//! The apply seam's promise: the entries a stream applied, recorded while clients publish,
//! delete, purge, roll up and reconfigure, replayed in order on fresh stores (memory and
//! file) give the same messages, sequences, timestamps and counters as the stream's own store;
//! a consumer's recorded entries rebuild its delivery and ack state.

use crate::stream::apply::{apply, StreamEntry};
use crate::stream::{storage, Stream};
use crate::tests::fixture;
use crate::Transport;
use jetstream_api::StreamConfig;
use nats_store::{StoredMessage, StreamState, StreamStore};
use serde_json::json;
use std::sync::Arc;

/// Every live message and the counters, to compare stores by: `next(seq)` loads the first
/// message at or after `seq`.
fn collect(
    state: StreamState,
    mut next: impl FnMut(u64) -> Option<StoredMessage>,
) -> (StreamState, Vec<StoredMessage>) {
    let mut messages = Vec::new();
    let mut seq = state.first_seq.max(1);
    while let Some(message) = next(seq) {
        seq = message.seq + 1;
        messages.push(message);
    }
    (state, messages)
}

fn contents_of(store: &mut dyn StreamStore) -> (StreamState, Vec<StoredMessage>) {
    let state = store.state();
    collect(state, |seq| store.load_next(">", seq).ok().flatten())
}

pub(crate) fn contents_of_stream(stream: &Stream) -> (StreamState, Vec<StoredMessage>) {
    let mut store = stream.store.read();
    let state = store.state();
    collect(state, |seq| store.load_next(">", seq).ok().flatten())
}

/// The recorded entries, through their serialized form (what a log would store).
fn recorded(stream: &Arc<Stream>) -> Vec<StreamEntry<'static>> {
    stream
        .applied
        .lock()
        .iter()
        .map(|entry| {
            let bytes = serde_json::to_vec(entry).expect("entry serializes");
            let decoded: StreamEntry<'_> = serde_json::from_slice(&bytes).expect("entry decodes");
            decoded.into_owned()
        })
        .collect()
}

fn replay(store: &mut dyn StreamStore, entries: &[StreamEntry<'_>]) {
    for entry in entries {
        // An entry that failed for the leader was never recorded; every recorded one applies.
        apply(store, entry).expect("a recorded entry applies");
    }
}

#[tokio::test]
async fn recorded_entries_rebuild_the_stream_on_fresh_memory_and_file_stores() {
    let fixture = fixture().await;
    let created = fixture
        .create(json!({
            "name": "REPLICA", "subjects": ["rep.>"], "storage": "file",
            "max_msgs_per_subject": 3, "allow_rollup_hdrs": true, "allow_msg_ttl": true,
            "duplicate_window": 60_000_000_000i64,
        }))
        .await;
    let initial: StreamConfig =
        serde_json::from_value(created["config"].clone()).expect("created config");
    for index in 0..14 {
        let subject = format!("rep.{}", index % 4);
        fixture.publish(&subject, None, &format!("m{index}")).await;
    }
    let with_id = "NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n";
    fixture.publish("rep.id", Some(with_id), "first").await;
    assert!(fixture
        .publish("rep.id", Some(with_id), "again")
        .await
        .contains("duplicate"));
    let with_ttl = "NATS/1.0\r\nNats-TTL: 1h\r\n\r\n";
    fixture.publish("rep.ttl", Some(with_ttl), "lives").await;
    let rollup = "NATS/1.0\r\nNats-Rollup: sub\r\n\r\n";
    fixture.publish("rep.1", Some(rollup), "rolled").await;
    let deleted = fixture
        .request(
            "$JS.API.STREAM.MSG.DELETE.REPLICA",
            r#"{"seq":3,"no_erase":true}"#,
        )
        .await;
    assert_eq!(deleted["success"], true, "{deleted}");
    let erased = fixture
        .request("$JS.API.STREAM.MSG.DELETE.REPLICA", r#"{"seq":4}"#)
        .await;
    assert_eq!(erased["success"], true, "{erased}");
    let purged = fixture
        .request("$JS.API.STREAM.PURGE.REPLICA", r#"{"filter":"rep.2"}"#)
        .await;
    assert_eq!(purged["success"], true, "{purged}");
    let mut tightened = initial.clone();
    tightened.max_msgs = 5;
    let updated = fixture
        .request(
            "$JS.API.STREAM.UPDATE.REPLICA",
            &serde_json::to_string(&tightened).expect("config"),
        )
        .await;
    assert!(updated.get("error").is_none(), "{updated}");
    for index in 0..3 {
        fixture
            .publish("rep.tail", None, &format!("t{index}"))
            .await;
    }

    let stream = fixture.jetstream.engine.accounts.load()[0]
        .registry
        .get("REPLICA")
        .expect("stream");
    let entries = recorded(&stream);
    assert!(
        entries
            .iter()
            .any(|entry| matches!(entry, StreamEntry::Purge { .. }))
            && entries
                .iter()
                .any(|entry| matches!(entry, StreamEntry::Config { .. }))
            && entries
                .iter()
                .any(|entry| matches!(entry, StreamEntry::Erase { .. }))
            && entries
                .iter()
                .any(|entry| matches!(entry, StreamEntry::Remove { .. })),
        "the scenario records every kind it exercises: {entries:?}"
    );
    let original = contents_of_stream(&stream);
    assert_eq!(original.0.msgs, 5, "max_msgs 5 after the update");

    let mut memory_config = initial.clone();
    memory_config.storage = jetstream_api::StorageType::Memory;
    let mut memory = storage::open_store(
        std::path::Path::new("/nonexistent"),
        &memory_config,
        crate::SyncPolicy::default(),
    )
    .expect("memory store");
    let directory = tempfile::tempdir().expect("tempdir");
    let mut file = storage::open_store(directory.path(), &initial, crate::SyncPolicy::default())
        .expect("file store");
    let second_directory = tempfile::tempdir().expect("tempdir");
    let mut second_file = storage::open_store(
        second_directory.path(),
        &initial,
        crate::SyncPolicy::default(),
    )
    .expect("second file store");
    replay(&mut *memory, &entries);
    replay(&mut *file, &entries);
    replay(&mut *second_file, &entries);
    assert_eq!(contents_of(&mut *file), original, "file replica");
    assert_eq!(
        contents_of(&mut *second_file),
        original,
        "second file replica"
    );
    // A memory store counts bytes without the file records' framing; all else is equal.
    let (mut memory_state, memory_messages) = contents_of(&mut *memory);
    memory_state.bytes = original.0.bytes;
    assert_eq!((memory_state, memory_messages), original, "memory replica");
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn a_consumers_recorded_entries_rebuild_its_state() {
    use crate::consumer::{ConsumerEntry, ConsumerReplica};
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "WORK", "subjects": ["work.>"], "storage": "file"}))
        .await;
    for index in 0..6 {
        fixture.publish("work.a", None, &format!("w{index}")).await;
    }
    let created = fixture
        .request(
            "$JS.API.CONSUMER.DURABLE.CREATE.WORK.PULLER",
            r#"{"stream_name":"WORK","config":{"durable_name":"PULLER","ack_policy":"explicit"}}"#,
        )
        .await;
    assert!(created.get("error").is_none(), "{created}");
    let inbox = "_INBOX.replica.pull";
    let mut deliveries = fixture.router.channel(inbox);
    fixture.router.publish(crate::Message {
        subject: bytes::Bytes::from_static(b"$JS.API.CONSUMER.MSG.NEXT.WORK.PULLER"),
        reply: Some(bytes::Bytes::from_static(inbox.as_bytes())),
        headers: None,
        payload: bytes::Bytes::from_static(br#"{"batch":4}"#),
    });
    let mut replies = Vec::new();
    while replies.len() < 4 {
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), deliveries.recv())
            .await
            .expect("delivery in time")
            .expect("delivery");
        replies.push(message.reply.expect("ack subject"));
    }
    // Acks out of order, and a TERM.
    for (reply, body) in [
        (&replies[1], "+ACK"),
        (&replies[0], "+ACK"),
        (&replies[3], "+TERM"),
    ] {
        fixture.router.publish(crate::Message {
            subject: reply.clone(),
            reply: None,
            headers: None,
            payload: bytes::Bytes::from_static(body.as_bytes()),
        });
    }
    // CONSUMER.INFO is answered after every ack queued before it.
    let info = fixture
        .request("$JS.API.CONSUMER.INFO.WORK.PULLER", "")
        .await;
    assert_eq!(info["num_ack_pending"], 1, "{info}");

    let engine = &fixture.jetstream.engine;
    let registry = &engine.accounts.load()[0].registry;
    let stream = registry.get("WORK").expect("stream");
    let consumer = registry.consumers(&stream).get("PULLER").expect("consumer");
    let (live, entries) = {
        let shared = consumer.state.lock();
        (shared.state.clone(), shared.applied.clone())
    };
    assert!(
        entries
            .iter()
            .filter(|entry| matches!(entry, ConsumerEntry::Acked { .. }))
            .count()
            == 3,
        "{entries:?}"
    );
    let mut replica = nats_store::ConsumerState::default();
    let mut changed = Vec::new();
    for entry in &entries {
        let bytes = serde_json::to_vec(entry).expect("serializes");
        let decoded: ConsumerEntry = serde_json::from_slice(&bytes).expect("decodes");
        crate::consumer::apply::apply(
            ConsumerReplica {
                state: &mut replica,
                changed: &mut changed,
            },
            &decoded,
        );
    }
    assert_eq!(replica, live);
    fixture.jetstream.shutdown().await;
}

/// Figures, not a check: the R1 publish path in one process (file stream, default sync, the
/// test router as core routing), to see that replication's hooks did not slow it. Run with
/// `cargo test --release -p nats-jetstream --lib replica_tests::measure -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement"]
async fn measure_r1_publish_throughput_and_latency() {
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "R1", "subjects": ["r1.>"], "storage": "file"}))
        .await;
    let payload = bytes::Bytes::from(vec![b'x'; 128]);
    let (total, window) = (200_000, 1_000);
    let mut replies = fixture.router.channel("_INBOX.r1.*");
    let started = std::time::Instant::now();
    for chunk in 0..total / window {
        for index in 0..window {
            fixture.router.publish(crate::Message {
                subject: bytes::Bytes::from_static(b"r1.a"),
                reply: Some(bytes::Bytes::from(format!(
                    "_INBOX.r1.{}",
                    chunk * window + index
                ))),
                headers: None,
                payload: payload.clone(),
            });
        }
        for _ in 0..window {
            replies.recv().await.expect("ack");
        }
    }
    let elapsed = started.elapsed();
    let mut latencies = Vec::new();
    let mut sync_replies = fixture.router.channel("_INBOX.r1sync");
    for _ in 0..20_000 {
        let sent = std::time::Instant::now();
        fixture.router.publish(crate::Message {
            subject: bytes::Bytes::from_static(b"r1.b"),
            reply: Some(bytes::Bytes::from_static(b"_INBOX.r1sync")),
            headers: None,
            payload: payload.clone(),
        });
        sync_replies.recv().await.expect("ack");
        latencies.push(sent.elapsed());
    }
    latencies.sort();
    eprintln!(
        "R1 file, 128 B: windows of {window}: {:.0} msgs/s; one at a time: p50 {:?} p99 {:?}",
        total as f64 / elapsed.as_secs_f64(),
        latencies[latencies.len() / 2],
        latencies[latencies.len() * 99 / 100]
    );
    fixture.jetstream.shutdown().await;
}

//! A replicated stream's leader that refuses publishes because its log cannot take them (10077)
//! withdraws the stream's subscriptions before the refusal leaves (issue 15): on a server, the
//! withdrawal (`RS-`) then reaches the publisher's server ahead of the refusal, and the publish
//! sent on the refusal is not routed here to be dropped. A leader that goes on leading (a sole
//! voter) takes its subscriptions again.

use super::harness::{ingest_context, stream_config};
use crate::stream::replication::{ReplicaMachine, ReplicationError, Replicator, SubmitFuture};
use crate::test_transport::TestRouter;
use crate::{Message, Transport};
use bytes::Bytes;
use jetstream_api::StorageType;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

const BOUND: Duration = Duration::from_secs(10);

/// A sole voter whose log is full: it leads (one leadership throughout), refuses every
/// proposal for want of space, and a rebuild empties the replica without changing the
/// leadership.
struct FullLog {
    leadership: watch::Sender<Option<u64>>,
    machine: OnceLock<ReplicaMachine>,
    rebuilds: AtomicUsize,
}

impl Replicator for FullLog {
    fn submit(&self, _batch: Bytes, _term: Option<u64>) -> SubmitFuture {
        Box::pin(async {
            Err(ReplicationError::NoSpace(
                "failed to store message: no space left on device".into(),
            ))
        })
    }

    fn leadership(&self) -> watch::Receiver<Option<u64>> {
        self.leadership.subscribe()
    }

    fn rebuilt(&self) {
        self.rebuilds.fetch_add(1, Ordering::SeqCst);
        // As the server's rebuild does, on a task of its own (a sole voter's group restarts
        // with the same leader: here the leadership does not even change).
        if let Some(machine) = self.machine.get().cloned() {
            tokio::spawn(async move { machine.reset().expect("replica reset") });
        }
    }

    fn lease(&self) -> Arc<dyn crate::Lease> {
        Arc::new(crate::NoLease)
    }
}

/// Waits (bounded) until `condition` holds.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {BOUND:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_leader_withdraws_its_subscriptions_before_the_refusal_and_takes_them_again() {
    let directory = tempfile::tempdir().expect("tempdir");
    let router = TestRouter::new();
    let replicator = Arc::new(FullLog {
        leadership: watch::channel(Some(1)).0,
        machine: OnceLock::new(),
        rebuilds: AtomicUsize::new(0),
    });
    let (stream, machine) = crate::stream::Stream::start_replicated(
        stream_config(StorageType::File),
        1,
        &directory.path().join("store"),
        crate::SyncPolicy::default(),
        ingest_context(router.clone()),
        replicator.clone(),
    )
    .expect("stream starts");
    let _ = replicator.machine.set(machine);
    until("the leader subscribes", || router.has_interest("orders.1")).await;

    // Each answer, with whether the stream's subject had a subscriber when it was sent (the
    // test router delivers on the sender's thread).
    let answers: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let seen = answers.clone();
    let weak = Arc::downgrade(&router);
    router.subscribe(
        "_INBOX.refused.*",
        None,
        Arc::new(move |message: Message| {
            let subscribed = weak
                .upgrade()
                .is_some_and(|router| router.has_interest("orders.1"));
            let text = String::from_utf8_lossy(&message.payload).to_string();
            seen.lock().push((text, subscribed));
        }),
    );
    for round in 0..2 {
        router.publish(Message {
            subject: Bytes::from_static(b"orders.1"),
            reply: Some(Bytes::from(format!("_INBOX.refused.{round}"))),
            headers: None,
            payload: Bytes::from(format!("m{round}")),
        });
        until("the refusal", || answers.lock().len() > round).await;
        let (answer, subscribed) = answers.lock()[round].clone();
        assert!(answer.contains("10077"), "round {round}: {answer}");
        assert!(
            !subscribed,
            "round {round}: the refusal left while the stream still subscribed: {answer}"
        );
        // Still the leader (the same leadership): it subscribes again by itself.
        until("the subscription back", || router.has_interest("orders.1")).await;
    }
    assert!(replicator.rebuilds.load(Ordering::SeqCst) >= 2);
    stream.stop(false).await;
}

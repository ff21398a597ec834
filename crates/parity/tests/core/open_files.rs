//! Open files per file stream (issue 21): a file stream must hold no more descriptors than
//! nats-server's once it is idle (nats-server holds one each), or a user with many streams or
//! KV buckets runs out of descriptors long before nats-server would (ours held three: 6,658
//! streams under a limit of 20,000). Counted in `/proc/PID/fd` of the server. Passes against
//! nats-server too.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use test_harness::waits::await_some;
use test_harness::TestServer;

/// File streams created (each with one message; every tenth with a durable consumer).
const STREAMS: usize = 100;
/// Descriptors beyond one per stream the server may open meanwhile (a connection, a thread's).
const SLACK: usize = 10;

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .count()
}

async fn publish(js: &jetstream::Context, subject: String, payload: &'static [u8]) -> u64 {
    js.publish(subject, payload.into())
        .await
        .expect("publish")
        .await
        .expect("PubAck")
        .sequence
}

#[tokio::test]
async fn an_idle_file_stream_holds_at_most_one_descriptor_and_is_written_again_after() {
    let mut server = TestServer::jetstream();
    let pid = server.pid().expect("pid");
    let client = async_nats::connect(server.url()).await.expect("connect");
    let js = jetstream::new(client);
    let create = |name: String, subject: String| {
        let js = js.clone();
        async move {
            js.create_stream(stream::Config {
                name,
                subjects: vec![subject],
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .expect("create stream")
        }
    };
    // The engine, its threads and the client's connection exist before counting.
    create("FDS_BASE".into(), "fds.base".into()).await;
    publish(&js, "fds.base".into(), b"base").await;
    let before = descriptors(pid);

    // Eight at a time, as a client creating many would.
    futures::stream::iter(0..STREAMS)
        .for_each_concurrent(8, |i| {
            let (create, js) = (&create, &js);
            async move {
                let stream = create(format!("FDS_{i}"), format!("fds.{i}")).await;
                assert_eq!(publish(js, format!("fds.{i}"), b"one").await, 1);
                if i % 10 == 0 {
                    stream
                        .create_consumer(consumer::pull::Config {
                            durable_name: Some(format!("C{i}")),
                            ..Default::default()
                        })
                        .await
                        .expect("durable consumer");
                }
            }
        })
        .await;
    let bound = before + STREAMS + SLACK;
    let settled = await_some(
        "the server's descriptors to settle at one per idle file stream",
        Duration::from_secs(30),
        || {
            let now = descriptors(pid);
            (now <= bound).then_some(now)
        },
    );
    assert!(settled <= bound, "{settled} descriptors, bound {bound}");

    // Written and read again after its files were idle, and kept across a kill -9.
    for i in (0..STREAMS).step_by(10) {
        assert_eq!(publish(&js, format!("fds.{i}"), b"two").await, 2);
    }
    server.kill9();
    server.restart();
    let client = async_nats::connect(server.url()).await.expect("reconnect");
    let js = jetstream::new(client);
    for i in (0..STREAMS).step_by(10) {
        let stream = js
            .get_stream(format!("FDS_{i}"))
            .await
            .expect("stream after restart");
        let info = stream.cached_info();
        assert_eq!(
            (info.state.messages, info.state.last_sequence),
            (2, 2),
            "FDS_{i}"
        );
        let first = stream.get_raw_message(1).await.expect("message 1");
        let second = stream.get_raw_message(2).await.expect("message 2");
        assert_eq!(
            (&first.payload[..], &second.payload[..]),
            (&b"one"[..], &b"two"[..])
        );
    }
}

/// The lock that keeps a second opener out of a stream directory now lives on the descriptor the
/// store keeps anyway (`seq.hwm`'s): a second server started on the same store directory still
/// leaves the stream to the first (logged, not recovered), and gets it once the first is gone.
/// Ours only: nats-server takes no lock and opens the same files from both processes.
#[tokio::test]
async fn a_second_server_on_the_same_store_leaves_a_held_stream_alone() {
    if test_harness::is_reference() {
        return;
    }
    let mut first = TestServer::jetstream();
    let js = jetstream::new(async_nats::connect(first.url()).await.expect("connect"));
    js.create_stream(stream::Config {
        name: "HELD".into(),
        subjects: vec!["held".into()],
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .expect("create stream");
    assert_eq!(publish(&js, "held".into(), b"one").await, 1);

    let mut second = TestServer::start(test_harness::ServerOptions {
        jetstream: true,
        store_dir: first.store_dir.clone(),
        ..Default::default()
    });
    await_some(
        "the second server to log the held stream",
        Duration::from_secs(10),
        || {
            let log = second.log();
            (log.contains("stream=HELD") && log.contains("locked by another open store"))
                .then_some(())
        },
    );
    let other = jetstream::new(async_nats::connect(second.url()).await.expect("connect"));
    assert!(
        other.get_stream("HELD").await.is_err(),
        "the second server must not open a stream directory the first holds"
    );
    // The first carries on undisturbed.
    assert_eq!(publish(&js, "held".into(), b"two").await, 2);

    // Gone (its store directory stays with it): the second server takes the stream at start.
    first.kill9();
    second.restart();
    let other = jetstream::new(async_nats::connect(second.url()).await.expect("connect"));
    let stream = other.get_stream("HELD").await.expect("stream once free");
    assert_eq!(stream.cached_info().state.messages, 2);
}

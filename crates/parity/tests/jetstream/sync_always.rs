//! `sync_interval: always`: a PubAck is sent only after the fsync that covers the message, while
//! the server goes on storing the next publishes (pipelined group commit). SIGKILLed in the
//! middle of a stream of async publishes, the server must come back with every acknowledged
//! message, same sequence and bytes, and continue the sequence.

use async_nats::jetstream::{self, stream};
use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_harness::client::connect;
use test_harness::{ServerOptions, TestServer};

const WINDOW: usize = 64;

fn payload(index: u64) -> Vec<u8> {
    format!("always-{index}-{}", "y".repeat((index % 90) as usize)).into_bytes()
}

fn always_server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        config: Some("jetstream { sync_interval: always }\n".into()),
        ..Default::default()
    })
}

/// Publish with up to WINDOW acks outstanding until the connection fails, recording every
/// acknowledged (sequence, publish index).
async fn publish_until_failure(context: jetstream::Context, acked: Arc<Mutex<Vec<(u64, u64)>>>) {
    let mut pending = std::collections::VecDeque::new();
    let mut index = 0u64;
    loop {
        if pending.len() >= WINDOW {
            let Some((sent, ack)) = pending.pop_front() else {
                return;
            };
            let ack: jetstream::context::PublishAckFuture = ack;
            match tokio::time::timeout(Duration::from_secs(5), ack.into_future()).await {
                Ok(Ok(ack)) => acked.lock().unwrap().push((ack.sequence, sent)),
                _ => return,
            }
        }
        let published = tokio::time::timeout(
            Duration::from_secs(5),
            context.publish(format!("always.{}", index % 5), payload(index).into()),
        )
        .await;
        match published {
            Ok(Ok(ack)) => pending.push_back((index, ack)),
            _ => return,
        }
        index += 1;
    }
}

#[tokio::test]
async fn acked_messages_survive_sigkill_with_sync_always() {
    let mut server = always_server();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    context
        .create_stream(stream::Config {
            name: "ALWAYS".into(),
            subjects: vec!["always.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let publisher = tokio::spawn(publish_until_failure(context, acked.clone()));
    // Kill while publishes and fsyncs are in flight.
    tokio::time::timeout(Duration::from_secs(20), async {
        while acked.lock().unwrap().len() < 1500 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("1500 acks within 20 s");
    server.kill9();
    tokio::time::timeout(Duration::from_secs(15), publisher)
        .await
        .expect("publisher ends after the kill")
        .expect("publisher task");
    drop(client);
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 1500);

    server.restart();
    let client = connect(&server).await;
    let context = jetstream::new(client);
    let mut stream = context.get_stream("ALWAYS").await.expect("stream back");
    let last_sequence = stream.info().await.expect("info").state.last_sequence;
    let highest = acked.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
    assert!(
        last_sequence >= highest,
        "last sequence {last_sequence} below the highest acknowledged {highest}"
    );
    for (seq, index) in &acked {
        let message = stream
            .get_raw_message(*seq)
            .await
            .unwrap_or_else(|error| panic!("acknowledged sequence {seq} missing: {error}"));
        assert_eq!(message.payload, payload(*index), "sequence {seq}");
    }
    let next = context
        .publish("always.next", "after".into())
        .await
        .expect("publish after restart")
        .await
        .expect("ack after restart");
    assert_eq!(next.sequence, last_sequence + 1);
}

#[tokio::test]
async fn async_publishes_are_acknowledged_in_order_with_sync_always() {
    let server = always_server();
    let client = connect(&server).await;
    let context = jetstream::new(client);
    context
        .create_stream(stream::Config {
            name: "ORDERED".into(),
            subjects: vec!["ordered.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let mut acks = Vec::new();
    for index in 0..2000u64 {
        acks.push(
            context
                .publish(format!("ordered.{}", index % 3), payload(index).into())
                .await
                .expect("publish"),
        );
    }
    for (index, ack) in acks.into_iter().enumerate() {
        let ack = tokio::time::timeout(Duration::from_secs(10), ack.into_future())
            .await
            .expect("ack in time")
            .expect("ack");
        assert_eq!(ack.sequence, index as u64 + 1);
    }
}

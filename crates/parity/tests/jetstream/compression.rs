//! Stream `compression: "s2"` is applied by the file store: messages take less disk, read back
//! byte for byte (MSG.GET and consumers), across a graceful restart and a SIGKILL.

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use std::time::Duration;
use test_harness::client::connect;
use test_harness::TestServer;

const MESSAGES: u64 = 200;

fn body(index: u64) -> Vec<u8> {
    format!(
        "{{\"order\":{index},\"lines\":[{}]}}",
        "\"widget-42\",".repeat(80)
    )
    .into_bytes()
}

async fn create_and_fill(
    context: &jetstream::Context,
    name: &str,
    compression: stream::Compression,
) {
    context
        .create_stream(stream::Config {
            name: name.into(),
            subjects: vec![format!("{}.>", name.to_lowercase())],
            compression: Some(compression),
            ..Default::default()
        })
        .await
        .expect("create stream");
    let mut acks = Vec::new();
    for index in 0..MESSAGES {
        acks.push(
            context
                .publish(
                    format!("{}.{}", name.to_lowercase(), index % 3),
                    body(index).into(),
                )
                .await
                .expect("publish"),
        );
    }
    for ack in acks {
        ack.await.expect("ack");
    }
}

async fn check(context: &jetstream::Context) {
    let stream = context.get_stream("PACKED").await.expect("stream");
    for seq in [1u64, 77, MESSAGES] {
        let message = stream.get_raw_message(seq).await.expect("get");
        assert_eq!(message.payload, body(seq - 1), "sequence {seq}");
    }
    let consumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: None,
            ..Default::default()
        })
        .await
        .expect("consumer");
    let mut messages = consumer
        .fetch()
        .max_messages(MESSAGES as usize)
        .messages()
        .await
        .expect("fetch");
    let mut seen = 0u64;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), messages.next())
        .await
        .expect("message in time")
    {
        let message = message.expect("message");
        assert_eq!(&message.payload[..], &body(seen)[..]);
        seen += 1;
    }
    assert_eq!(seen, MESSAGES);
}

#[tokio::test]
async fn s2_streams_take_less_disk_and_read_back_across_restarts() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client);
    create_and_fill(&context, "PACKED", stream::Compression::S2).await;
    create_and_fill(&context, "PLAIN", stream::Compression::None).await;
    let info = context
        .get_stream("PACKED")
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    assert_eq!(info.config.compression, Some(stream::Compression::S2));
    check(&context).await;

    if !test_harness::is_reference() {
        let streams = server
            .store_dir
            .clone()
            .expect("store dir")
            .join("jetstream/$G/streams");
        let packed = test_harness::waits::bytes_under(&streams.join("PACKED"));
        let plain = test_harness::waits::bytes_under(&streams.join("PLAIN"));
        assert!(packed * 3 < plain, "PACKED {packed} bytes, PLAIN {plain}");
    }

    server.restart();
    let context = jetstream::new(connect(&server).await);
    check(&context).await;
    server.kill9();
    server.restart();
    let context = jetstream::new(connect(&server).await);
    check(&context).await;
}

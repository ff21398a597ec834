//! Streams survive restarts: a graceful stop and a SIGKILL. Every message that got a PubAck is
//! there afterwards with the same sequence and bytes, configs come back, and the duplicate window
//! still rejects ids seen before the restart.

use async_nats::jetstream::{self, stream};
use serde_json::json;
use test_harness::client::{api, connect, publish_raw};
use test_harness::TestServer;

const MESSAGES: usize = 300;

fn payload(index: usize) -> String {
    format!("message-{index}-{}", "x".repeat(index % 50))
}

async fn fill(server: &TestServer) -> Vec<u64> {
    let client = connect(server).await;
    let context = jetstream::new(client.clone());
    context
        .create_stream(stream::Config {
            name: "DURABLE".into(),
            subjects: vec!["durable.>".into()],
            max_messages_per_subject: 1000,
            ..Default::default()
        })
        .await
        .expect("create");
    context
        .create_stream(stream::Config {
            name: "VOLATILE".into(),
            subjects: vec!["volatile.>".into()],
            storage: stream::StorageType::Memory,
            ..Default::default()
        })
        .await
        .expect("create memory stream");
    // Async publishes: many in flight at once, so the server batches them.
    let mut pending = Vec::new();
    for index in 0..MESSAGES {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("id-{index}").as_str());
        pending.push(
            context
                .publish_with_headers(
                    format!("durable.{}", index % 7),
                    headers,
                    payload(index).into(),
                )
                .await
                .expect("publish"),
        );
    }
    let mut sequences = Vec::new();
    for ack in pending {
        sequences.push(ack.await.expect("ack").sequence);
    }
    sequences
}

async fn verify(server: &TestServer, sequences: &[u64]) {
    let client = connect(server).await;
    let info = api(&client, "$JS.API.STREAM.INFO.DURABLE", "").await;
    assert_eq!(info["state"]["messages"], MESSAGES as u64, "{info}");
    assert_eq!(info["config"]["max_msgs_per_subject"], 1000);
    for (index, seq) in sequences.iter().enumerate() {
        let got = api(
            &client,
            "$JS.API.STREAM.MSG.GET.DURABLE",
            &json!({ "seq": seq }).to_string(),
        )
        .await;
        let message = &got["message"];
        assert_eq!(message["subject"], format!("durable.{}", index % 7));
        let data = message["data"].as_str().expect("data");
        assert_eq!(decode_base64(data), payload(index).into_bytes());
    }
    // The duplicate window survived.
    assert_eq!(
        publish_raw(&client, "durable.0", &[("Nats-Msg-Id", "id-3")], "again").await,
        format!(
            r#"{{"stream":"DURABLE","seq":{},"duplicate": true}}"#,
            sequences[3]
        )
    );
    // Memory streams come back empty (only their existence is not kept either: as nats-server).
    let names = api(&client, "$JS.API.STREAM.NAMES", "").await;
    assert_eq!(names["streams"], json!(["DURABLE"]));
}

fn decode_base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in text.bytes().filter(|byte| *byte != b'=') {
        let value = ALPHABET.iter().position(|c| *c == byte).expect("base64") as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    out
}

#[tokio::test]
async fn streams_survive_graceful_restart() {
    let mut server = TestServer::jetstream();
    let sequences = fill(&server).await;
    server.restart();
    verify(&server, &sequences).await;
}

#[tokio::test]
async fn acked_messages_survive_sigkill() {
    let mut server = TestServer::jetstream();
    let sequences = fill(&server).await;
    server.kill9();
    server.restart();
    verify(&server, &sequences).await;
}

/// The state of file stream `name`: (messages, last sequence), or None when it does not exist.
async fn stream_state(context: &jetstream::Context, name: &str) -> Option<(u64, u64)> {
    let mut stream = context.get_stream(name).await.ok()?;
    let info = stream.info().await.ok()?;
    Some((info.state.messages, info.state.last_sequence))
}

/// File streams created right after others were deleted (ours builds them from the deleted
/// stores' directories, `nats-store/src/file/spares.rs`), some under the deleted names: each
/// starts empty, and after a kill -9 each is there with exactly its acknowledged message; after
/// the restart deletions and creations go on the same way (spares left by the killed process
/// are taken over).
#[tokio::test]
async fn streams_created_after_deletions_survive_sigkill_empty_of_the_old_data() {
    let mut server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let file_stream = |name: String| {
        let context = context.clone();
        async move {
            context
                .create_stream(stream::Config {
                    subjects: vec![format!("{name}.>")],
                    name,
                    ..Default::default()
                })
                .await
                .expect("create");
        }
    };
    const STREAMS: usize = 12;
    for round in 0..2 {
        let context = jetstream::new(connect(&server).await);
        for index in 0..STREAMS {
            let name = format!("OLD{index}");
            file_stream(name.clone()).await;
            for value in 0..3 {
                context
                    .publish(format!("{name}.{value}"), "old".into())
                    .await
                    .expect("publish")
                    .await
                    .expect("ack old");
            }
        }
        for index in 0..STREAMS {
            context
                .delete_stream(format!("OLD{index}"))
                .await
                .expect("delete");
        }
        // Ours: wait until the deleted stores are spares, so the creations take them; then
        // create again, half under new names, half under the deleted ones.
        if !test_harness::is_reference() {
            let streams = server
                .store_dir
                .clone()
                .expect("store dir")
                .join("jetstream/$G/streams");
            test_harness::waits::await_some(
                "the deleted stores made spares",
                std::time::Duration::from_secs(20),
                || {
                    let spares = std::fs::read_dir(&streams)
                        .map(|entries| {
                            entries
                                .flatten()
                                .filter(|entry| {
                                    entry.file_name().to_string_lossy().contains(".spare.")
                                })
                                .count()
                        })
                        .unwrap_or(0);
                    (spares >= STREAMS).then_some(())
                },
            );
        }
        let names: Vec<String> = (0..STREAMS)
            .map(|index| {
                if index % 2 == 0 {
                    format!("OLD{index}")
                } else {
                    format!("NEW{round}_{index}")
                }
            })
            .collect();
        for name in &names {
            file_stream(name.clone()).await;
            assert_eq!(
                stream_state(&context, name).await,
                Some((0, 0)),
                "{name} starts empty"
            );
            let ack = context
                .publish(format!("{name}.k"), name.clone().into())
                .await
                .expect("publish")
                .await
                .expect("ack new");
            assert_eq!(ack.sequence, 1, "{name}: the first sequence");
        }
        server.kill9();
        server.restart();
        let context = jetstream::new(connect(&server).await);
        for name in &names {
            assert_eq!(
                stream_state(&context, name).await,
                Some((1, 1)),
                "{name} after kill -9"
            );
            let message = context
                .get_stream(name)
                .await
                .expect("stream")
                .get_raw_message(1)
                .await
                .expect("message 1");
            assert_eq!(message.payload, name.as_bytes(), "{name}'s message");
        }
        for name in names.iter().filter(|name| name.starts_with("OLD")) {
            context
                .delete_stream(name)
                .await
                .expect("delete for the next round");
        }
    }
}

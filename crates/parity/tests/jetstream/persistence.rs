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

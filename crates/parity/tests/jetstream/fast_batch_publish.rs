//! Fast batch publish (`allow_batched`): the batch in the reply subject
//! (`<prefix>.<id>.<flow>.<gap mode>.<seq>.<op>.$FI`), flow-control acks every N stored
//! messages, gap reports, per-message errors and the commit's PubAck with `batch` and `count`,
//! as nats-server 2.15.1 sends them. Runs against ours or the real nats-server
//! (`NATS_SERVER_BIN`).

use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;
use test_harness::client::{api, connect, create_stream, TIMEOUT};
use test_harness::TestServer;

/// A connection with a subscription on every fast batch reply it sends.
struct Publisher {
    client: async_nats::Client,
    replies: async_nats::Subscriber,
}

impl Publisher {
    async fn new(server: &TestServer) -> Publisher {
        let client = connect(server).await;
        let replies = client.subscribe("_FB.>").await.expect("subscribe");
        client.flush().await.expect("flush");
        Publisher { client, replies }
    }

    /// One batch message; `op` 0 start, 1 append, 2 commit, 3 end-of-batch commit, 4 ping.
    async fn send(&self, subject: &str, batch: &str, seq: u64, op: u8, headers: &[(&str, &str)]) {
        self.send_with(
            subject,
            &format!("_FB.{batch}.10.fail.{seq}.{op}.$FI"),
            headers,
        )
        .await;
    }

    async fn send_with(&self, subject: &str, reply: &str, headers: &[(&str, &str)]) {
        let mut map = async_nats::HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, *value);
        }
        self.client
            .publish_with_reply_and_headers(
                subject.to_string(),
                reply.to_string(),
                map,
                Bytes::from_static(b"x"),
            )
            .await
            .expect("publish");
    }

    /// The next `count` replies, in order.
    async fn replies(&mut self, count: usize) -> Vec<String> {
        let mut replies = Vec::with_capacity(count);
        for _ in 0..count {
            let reply = tokio::time::timeout(TIMEOUT, self.replies.next())
                .await
                .expect("a reply in time")
                .expect("subscription open");
            replies.push(String::from_utf8_lossy(&reply.payload).to_string());
        }
        replies
    }
}

fn ack(seq: u64, messages: u16) -> String {
    format!(r#"{{"type":"ack","seq":{seq},"msgs":{messages}}}"#)
}

fn pub_ack(seq: u64, batch: &str, count: u64) -> String {
    format!(r#"{{"stream":"F","seq":{seq},"batch":"{batch}","count":{count}}}"#)
}

fn refusal(err_code: u32, description: &str, stream: &str) -> String {
    format!(
        r#"{{"error":{{"code":400,"err_code":{err_code},"description":"{description}"}},"stream":"{stream}","seq":0}}"#
    )
}

async fn fast_stream(client: &async_nats::Client) {
    create_stream(
        client,
        json!({"name": "F", "subjects": ["f.>"], "allow_batched": true}),
    )
    .await;
}

#[tokio::test]
async fn a_fast_batch_stores_as_it_goes_and_acks_every_n() {
    let server = TestServer::jetstream();
    let mut publisher = Publisher::new(&server).await;
    fast_stream(&publisher.client).await;
    for seq in 1..=24 {
        publisher
            .send("f.a", "b", seq, if seq == 1 { 0 } else { 1 }, &[])
            .await;
    }
    // The first message answers with the flow settings, then one ack per 10 stored.
    assert_eq!(
        publisher.replies(3).await,
        vec![ack(0, 10), ack(10, 10), ack(20, 10)]
    );
    publisher.send("f.a", "b", 25, 2, &[]).await;
    assert_eq!(publisher.replies(1).await, vec![pub_ack(25, "b", 25)]);
    // An end-of-batch commit is not stored; a one-message batch commits at once.
    publisher.send("f.a", "e", 1, 0, &[]).await;
    publisher.send("f.a", "e", 2, 1, &[]).await;
    publisher.send("f.a", "e", 3, 3, &[]).await;
    publisher.send("f.a", "s", 1, 2, &[]).await;
    assert_eq!(
        publisher.replies(3).await,
        vec![ack(0, 10), pub_ack(27, "e", 2), pub_ack(28, "s", 1)]
    );
    let info = api(&publisher.client, "$JS.API.STREAM.INFO.F", "").await;
    assert_eq!(info["state"]["messages"], 28);
}

#[tokio::test]
async fn gaps_end_or_skip_and_pings_resend_the_flow() {
    let server = TestServer::jetstream();
    let mut publisher = Publisher::new(&server).await;
    fast_stream(&publisher.client).await;
    // Gap-fail: the batch commits what it stored before the gap and is gone.
    publisher.send("f.a", "g", 1, 0, &[]).await;
    publisher.send("f.a", "g", 2, 1, &[]).await;
    publisher.send("f.a", "g", 4, 1, &[]).await;
    publisher.send("f.a", "g", 5, 1, &[]).await;
    assert_eq!(
        publisher.replies(4).await,
        vec![
            ack(0, 10),
            r#"{"type":"gap","last_seq":3,"seq":4}"#.to_string(),
            pub_ack(2, "g", 2),
            refusal(10208, "batch publish ID unknown", "F"),
        ]
    );
    // Gap-ok: reported, and the batch carries on.
    for (seq, op) in [(1, 0), (3, 1), (4, 2)] {
        publisher
            .send_with("f.a", &format!("_FB.h.10.ok.{seq}.{op}.$FI"), &[])
            .await;
    }
    assert_eq!(
        publisher.replies(3).await,
        vec![
            ack(0, 10),
            r#"{"type":"gap","last_seq":2,"seq":3}"#.to_string(),
            pub_ack(5, "h", 4),
        ]
    );
    // A ping resends the last flow ack; one from ahead of the batch reports the gap.
    publisher.send("f.a", "p", 1, 0, &[]).await;
    publisher.send("f.a", "p", 1, 4, &[]).await;
    publisher.send("f.a", "p", 3, 4, &[]).await;
    assert_eq!(
        publisher.replies(4).await,
        vec![
            ack(0, 10),
            ack(0, 10),
            r#"{"type":"gap","last_seq":2,"seq":4}"#.to_string(),
            pub_ack(6, "p", 1),
        ]
    );
}

#[tokio::test]
async fn refusals_and_per_message_errors() {
    let server = TestServer::jetstream();
    let mut publisher = Publisher::new(&server).await;
    fast_stream(&publisher.client).await;
    create_stream(&publisher.client, json!({"name": "N", "subjects": ["n.>"]})).await;
    publisher.send("n.a", "d", 1, 0, &[]).await;
    // Streams answer in their own order: one stream at a time.
    assert_eq!(
        publisher.replies(1).await,
        vec![refusal(10205, "batch publish is disabled", "N")]
    );
    publisher.send_with("f.a", "_FB.bad.$FI", &[]).await;
    publisher.send("f.a", "u", 2, 1, &[]).await;
    publisher.send("f.a", &"x".repeat(65), 1, 0, &[]).await;
    assert_eq!(
        publisher.replies(3).await,
        vec![
            refusal(10206, "batch publish pattern is invalid", "F"),
            refusal(10208, "batch publish ID unknown", "F"),
            refusal(10207, "batch publish ID is invalid", "F"),
        ]
    );
    let wrong_stream = [("Nats-Expected-Stream", "other")];
    // Refused as the first message: answered as a plain publish, the batch is gone.
    publisher.send("f.a", "x1", 1, 0, &wrong_stream).await;
    assert_eq!(
        publisher.replies(2).await,
        vec![
            ack(0, 10),
            refusal(10060, "expected stream does not match", "F")
        ]
    );
    // Refused later: reported, and the batch commits what it stored.
    publisher.send("f.a", "x2", 1, 0, &[]).await;
    publisher.send("f.a", "x2", 2, 1, &wrong_stream).await;
    assert_eq!(
        publisher.replies(3).await,
        vec![
            ack(0, 10),
            r#"{"type":"err","seq":2,"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}"#.to_string(),
            pub_ack(1, "x2", 1),
        ]
    );
}

#[tokio::test]
async fn batches_sharing_a_stream_ramp_up_their_acks() {
    let server = TestServer::jetstream();
    let mut publisher = Publisher::new(&server).await;
    fast_stream(&publisher.client).await;
    for seq in 1..40 {
        let op = if seq == 1 { 0 } else { 1 };
        for batch in ["one", "two"] {
            publisher
                .send_with("f.a", &format!("_FB.{batch}.100.fail.{seq}.{op}.$FI"), &[])
                .await;
        }
    }
    // The first batch alone gets its 100; the second starts at 1 and doubles per ack.
    assert_eq!(
        publisher.replies(7).await,
        vec![
            ack(0, 100),
            ack(0, 1),
            ack(1, 2),
            ack(3, 4),
            ack(7, 8),
            ack(15, 16),
            ack(31, 32)
        ]
    );
}

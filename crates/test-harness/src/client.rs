//! Client-side helpers for the JetStream black-box tests, over async-nats: connect, raw
//! `$JS.API` requests, publishes with headers, stream setup and reads of stored messages.
//! Every wait is bounded by [`TIMEOUT`].

use crate::TestServer;
use serde_json::Value;
use std::time::Duration;

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Wait until the server processed everything `client` sent so far (async-nats' `flush` only
/// writes): a message to the client's own inbox comes back after it.
pub async fn barrier(client: &async_nats::Client) {
    use futures::StreamExt;
    let inbox = client.new_inbox();
    let mut echo = client.subscribe(inbox.clone()).await.expect("subscribe");
    client.publish(inbox, "".into()).await.expect("publish");
    tokio::time::timeout(TIMEOUT, echo.next())
        .await
        .expect("barrier in time")
        .expect("barrier echo");
}

/// Wait until the server processed everything `client` sent so far: a request the server
/// answers itself (`$SYS.REQ.USER.INFO`), on the same connection, comes back after it. Unlike
/// [`barrier`] it needs no subscribe permission on an inbox.
pub async fn settle(client: &async_nats::Client) {
    tokio::time::timeout(TIMEOUT, client.request("$SYS.REQ.USER.INFO", "".into()))
        .await
        .expect("settle in time")
        .expect("USER.INFO answered");
}

pub async fn connect(server: &TestServer) -> async_nats::Client {
    tokio::time::timeout(TIMEOUT, async_nats::connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// A raw `$JS.API` request, answer parsed as JSON.
pub async fn api(client: &async_nats::Client, subject: &str, body: &str) -> Value {
    let reply = tokio::time::timeout(
        TIMEOUT,
        client.request(subject.to_string(), body.to_string().into()),
    )
    .await
    .expect("reply in time")
    .expect("request");
    serde_json::from_slice(&reply.payload).expect("json reply")
}

/// Publish with headers and a reply; returns the raw PubAck text.
pub async fn publish_raw(
    client: &async_nats::Client,
    subject: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut map = async_nats::HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, *value);
    }
    let reply = tokio::time::timeout(
        TIMEOUT,
        client.request_with_headers(subject.to_string(), map, body.to_string().into()),
    )
    .await
    .expect("ack in time")
    .expect("ack");
    String::from_utf8(reply.payload.to_vec()).expect("utf8 ack")
}

/// Stream `S` on `s.>` holding `count` messages `s.<i>` = `m<i>`, each PubAck awaited.
pub async fn stream_s(client: &async_nats::Client, count: usize) {
    let created = api(
        client,
        "$JS.API.STREAM.CREATE.S",
        &serde_json::json!({"name": "S", "subjects": ["s.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let context = async_nats::jetstream::new(client.clone());
    for index in 0..count {
        context
            .publish(format!("s.{index}"), format!("m{index}").into())
            .await
            .expect("publish")
            .await
            .expect("puback");
    }
}

/// `STREAM.CREATE` with the config's own name; panics on an error reply.
pub async fn create_stream(client: &async_nats::Client, config: Value) {
    let name = config["name"].as_str().expect("stream name").to_string();
    let response = api(
        client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        &config.to_string(),
    )
    .await;
    assert!(response.get("error").is_none(), "{response}");
}

/// The stored headers of one message, as name -> value.
pub async fn stored_headers(
    client: &async_nats::Client,
    stream: &str,
    seq: u64,
) -> Vec<(String, String)> {
    let context = async_nats::jetstream::new(client.clone());
    let stream = context.get_stream(stream).await.expect("stream");
    let message = stream.get_raw_message(seq).await.expect("message");
    let mut headers: Vec<(String, String)> = message
        .headers
        .iter()
        .flat_map(|(name, values)| {
            values
                .iter()
                .map(move |value| (name.to_string(), value.to_string()))
        })
        .collect();
    headers.sort();
    headers
}

pub fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = expected
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    pairs.sort();
    pairs
}

/// Wait (bounded) for `count` messages on `subject` of `stream`: (sequence, body) each.
pub async fn wait_for_messages(
    client: &async_nats::Client,
    stream: &str,
    subject: &str,
    count: usize,
) -> Vec<(u64, String)> {
    let context = async_nats::jetstream::new(client.clone());
    let stream = context.get_stream(stream).await.expect("stream");
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::Config {
            filter_subject: subject.to_string(),
            ..Default::default()
        })
        .await
        .expect("consumer");
    let mut messages = consumer.messages().await.expect("messages");
    let mut found = Vec::new();
    while found.len() < count {
        let message = tokio::time::timeout(
            Duration::from_secs(8),
            futures::StreamExt::next(&mut messages),
        )
        .await
        .expect("a message in time")
        .expect("stream open")
        .expect("message");
        let seq = message.info().expect("info").stream_sequence;
        found.push((seq, String::from_utf8_lossy(&message.payload).to_string()));
    }
    found
}

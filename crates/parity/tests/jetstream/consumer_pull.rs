//! Pull consumers as clients use them: async-nats fetch/batch/messages, acks of every kind,
//! ack_wait redelivery, max_deliver, max_ack_pending, and the exact status replies of MSG.NEXT.
//! Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

async fn stream_with(client: &async_nats::Client, name: &str, subjects: &[&str], count: usize) {
    let response = api(
        client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        &json!({"name": name, "subjects": subjects}).to_string(),
    )
    .await;
    assert!(response.get("error").is_none(), "{response}");
    let context = jetstream::new(client.clone());
    for index in 0..count {
        let subject = subjects[0].replace(['>', '*'], "x");
        context
            .publish(subject, format!("m{index}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

async fn info(client: &async_nats::Client, stream: &str, consumer: &str) -> Value {
    api(
        client,
        &format!("$JS.API.CONSUMER.INFO.{stream}.{consumer}"),
        "",
    )
    .await
}

/// Poll CONSUMER.INFO until `check` holds (bounded).
async fn wait_info(
    client: &async_nats::Client,
    stream: &str,
    consumer: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let current = info(client, stream, consumer).await;
        if check(&current) {
            return current;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition never held: {current}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn fetch_ack_and_info_counters() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "P", &["p.>"], 10).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("P").await.unwrap();
    let consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("D".into()),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = consumer.fetch().max_messages(4).messages().await.unwrap();
    let mut seen = Vec::new();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        let message = message.unwrap();
        seen.push(String::from_utf8(message.payload.to_vec()).unwrap());
        let meta = message.info().unwrap();
        assert_eq!(meta.pending, 10 - seen.len() as u64);
        assert_eq!(meta.delivered, 1);
        message.ack().await.unwrap();
    }
    assert_eq!(seen, ["m0", "m1", "m2", "m3"]);
    let current = wait_info(&client, "P", "D", |info| {
        info["ack_floor"]["stream_seq"] == 4
    })
    .await;
    assert_eq!(current["delivered"]["consumer_seq"], 4);
    assert_eq!(current["delivered"]["stream_seq"], 4);
    assert_eq!(current["num_pending"], 6);
    assert_eq!(current["num_ack_pending"], 0);
    assert_eq!(current["num_waiting"], 0);
    assert_eq!(current["config"]["name"], "D");
    assert_eq!(current["config"]["ack_wait"], 30_000_000_000u64);
    assert_eq!(current["config"]["max_ack_pending"], 1000);
    assert_eq!(current["config"]["max_waiting"], 512);

    // batch() waits for messages; messages() streams continuously.
    let mut batch = consumer
        .batch()
        .max_messages(3)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .unwrap();
    let mut count = 0;
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        message.unwrap().ack().await.unwrap();
        count += 1;
    }
    assert_eq!(count, 3);
    let mut messages = consumer.messages().await.unwrap();
    for expected in 7..=9 {
        let message = timeout(TIMEOUT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(message.payload, format!("m{expected}"));
        message.double_ack().await.unwrap();
    }
    let current = info(&client, "P", "D").await;
    assert_eq!(current["ack_floor"]["stream_seq"], 10);
    assert_eq!(current["num_pending"], 0);
}

/// An ack body sent as a request, so the server has processed it when this returns.
async fn ack_sync(client: &async_nats::Client, message: &jetstream::Message, body: &str) {
    let reply = message.reply.clone().expect("ack subject");
    timeout(TIMEOUT, client.request(reply, body.to_string().into()))
        .await
        .expect("ack reply in time")
        .expect("ack reply");
}

#[tokio::test]
async fn nak_term_progress_and_ack_wait_redelivery() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "R", &["r.>"], 3).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("R").await.unwrap();
    let consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("D".into()),
            ack_wait: Duration::from_millis(300),
            max_deliver: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    // One message per pull request, so nothing is buffered in the client.
    macro_rules! next {
        () => {{
            let mut batch = consumer
                .batch()
                .max_messages(1)
                .expires(Duration::from_secs(3))
                .messages()
                .await
                .unwrap();
            timeout(TIMEOUT, batch.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
        }};
    }
    let first = next!();
    assert_eq!(first.payload, "m0");
    ack_sync(&client, &first, "-NAK").await;
    let second = next!();
    // The NAKed message comes back before the next new one.
    assert_eq!(second.payload, "m0");
    assert_eq!(second.info().unwrap().delivered, 2);
    ack_sync(&client, &second, "+TERM").await;
    let third = next!();
    assert_eq!(third.payload, "m1");
    ack_sync(&client, &third, "+WPI").await;
    // Not acked: after ack_wait it is redelivered.
    let again = next!();
    assert_eq!(again.payload, "m2");
    let again = next!();
    assert_eq!(again.payload, "m1");
    assert_eq!(again.info().unwrap().delivered, 2);
    let current = info(&client, "R", "D").await;
    assert_eq!(current["num_redelivered"], 1, "{current}");
    assert_eq!(current["num_ack_pending"], 2, "{current}");
    ack_sync(&client, &again, "+ACK").await;
    // m2 is never acked: delivered 3 times (max_deliver) and then dropped from pending.
    let mut deliveries = vec![];
    loop {
        let message = next!();
        assert_eq!(message.payload, "m2");
        deliveries.push(message.info().unwrap().delivered);
        if deliveries.last() == Some(&3) {
            break;
        }
    }
    assert_eq!(deliveries, [2, 3]);
    // The next attempt to redeliver finds max_deliver reached: nothing comes, pending clears.
    let mut batch = consumer
        .batch()
        .max_messages(1)
        .expires(Duration::from_millis(800))
        .messages()
        .await
        .unwrap();
    assert!(timeout(TIMEOUT, batch.next()).await.unwrap().is_none());
    let current = wait_info(&client, "R", "D", |info| info["num_ack_pending"] == 0).await;
    // nats-server keeps the redelivery count and does not move the ack floor over it.
    assert_eq!(current["num_redelivered"], 1, "{current}");
    assert_eq!(current["ack_floor"]["stream_seq"], 2, "{current}");
    assert_eq!(current["delivered"]["stream_seq"], 3);
}

/// A raw MSG.NEXT: the status header of the first reply (empty when it is a message).
async fn next_status(client: &async_nats::Client, subject: &str, body: &str) -> String {
    let inbox = client.new_inbox();
    let mut subscription = client.subscribe(inbox.clone()).await.unwrap();
    client
        .publish_with_reply(subject.to_string(), inbox, body.to_string().into())
        .await
        .unwrap();
    let message = timeout(TIMEOUT, subscription.next())
        .await
        .unwrap()
        .unwrap();
    match (&message.status, &message.description, &message.headers) {
        (Some(status), description, headers) => {
            let mut text = format!(
                "{} {}",
                status.as_u16(),
                description.clone().unwrap_or_default()
            );
            if let Some(headers) = headers {
                let mut pairs: Vec<String> = headers
                    .iter()
                    .map(|(name, values)| {
                        format!(
                            "{}={}",
                            name,
                            values.first().map(|v| v.as_str()).unwrap_or("")
                        )
                    })
                    .collect();
                pairs.sort();
                for pair in pairs {
                    text.push(' ');
                    text.push_str(&pair);
                }
            }
            text
        }
        _ => String::new(),
    }
}

#[tokio::test]
async fn pull_request_statuses() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "S", &["s.>"], 0).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.D",
        r#"{"stream_name":"S","config":{"durable_name":"D","ack_policy":"explicit","max_batch":5,"max_expires":2000000000,"max_bytes":1000}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let next = "$JS.API.CONSUMER.MSG.NEXT.S.D";
    assert_eq!(
        next_status(&client, next, r#"{"batch":1,"no_wait":true}"#).await,
        "404 No Messages"
    );
    assert_eq!(
        next_status(&client, next, r#"{"batch":6}"#).await,
        "409 Exceeded MaxRequestBatch of 5"
    );
    assert_eq!(
        next_status(&client, next, r#"{"batch":1,"expires":3000000000}"#).await,
        "409 Exceeded MaxRequestExpires of 2s"
    );
    assert_eq!(
        next_status(&client, next, r#"{"batch":1,"max_bytes":2000}"#).await,
        "409 Exceeded MaxRequestMaxBytes of 1000"
    );
    assert_eq!(
        next_status(&client, next, r#"{"batch":2,"expires":200000000}"#).await,
        "408 Request Timeout Nats-Pending-Bytes=0 Nats-Pending-Messages=2"
    );
    assert!(next_status(&client, next, r#"{"batch":"x"}"#)
        .await
        .starts_with("400 Bad Request - json: cannot unmarshal string into Go "));
    // A heartbeat comes before the timeout.
    assert_eq!(
        next_status(
            &client,
            next,
            r#"{"batch":1,"expires":1000000000,"idle_heartbeat":200000000}"#
        )
        .await,
        "100 Idle Heartbeat Nats-Last-Consumer=0 Nats-Last-Stream=0"
    );
}

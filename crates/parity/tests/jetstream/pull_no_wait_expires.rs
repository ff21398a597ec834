//! A pull request with both `no_wait` and `expires` (issue 17 item 6; nats-py's
//! `fetch(n, timeout=...)` sends exactly this): on an empty consumer it is a one-shot wait, held
//! until `expires` and then answered `408 Request Timeout` with the pending counts; when it got
//! messages, the end of the stream answers `404 No Messages` at once, as a plain `no_wait` does.
//! Passes on nats-server 2.15.1.

use futures::StreamExt;
use std::time::{Duration, Instant};
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

const NEXT: &str = "$JS.API.CONSUMER.MSG.NEXT.S.C";
const EXPIRES: Duration = Duration::from_millis(700);

/// Everything the request gets up to and including its status: (subjects of messages, status
/// line with the headers sorted, time until the status).
async fn pull(client: &async_nats::Client, body: &str) -> (Vec<String>, String, Duration) {
    let inbox = client.new_inbox();
    let mut subscription = client.subscribe(inbox.clone()).await.unwrap();
    let started = Instant::now();
    client
        .publish_with_reply(NEXT, inbox, body.to_string().into())
        .await
        .unwrap();
    let mut subjects = Vec::new();
    loop {
        let message = timeout(TIMEOUT, subscription.next())
            .await
            .expect("status in time")
            .expect("subscription open");
        let Some(status) = message.status else {
            subjects.push(message.subject.to_string());
            continue;
        };
        let mut text = format!(
            "{} {}",
            status.as_u16(),
            message.description.unwrap_or_default()
        );
        let mut pairs: Vec<String> = message
            .headers
            .iter()
            .flat_map(|headers| headers.iter())
            .map(|(name, values)| {
                format!(
                    "{name}={}",
                    values.first().map(|v| v.as_str()).unwrap_or("")
                )
            })
            .collect();
        pairs.sort();
        for pair in pairs {
            text.push(' ');
            text.push_str(&pair);
        }
        return (subjects, text, started.elapsed());
    }
}

#[tokio::test]
async fn no_wait_with_expires_waits_on_an_empty_consumer() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 0).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.C",
        r#"{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let body = format!(
        r#"{{"batch":5,"no_wait":true,"expires":{}}}"#,
        EXPIRES.as_nanos()
    );

    let (messages, status, waited) = pull(&client, &body).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert_eq!(
        status,
        "408 Request Timeout Nats-Pending-Bytes=0 Nats-Pending-Messages=5"
    );
    assert!(
        waited >= EXPIRES - Duration::from_millis(50),
        "answered after {waited:?}, before expires"
    );

    // With messages: they come, then the end of the stream ends the request at once.
    let context = async_nats::jetstream::new(client.clone());
    for _ in 0..2 {
        context
            .publish("s.a", "x".into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let (messages, status, waited) = pull(&client, &body).await;
    assert_eq!(messages, ["s.a", "s.a"]);
    assert_eq!(status, "404 No Messages");
    assert!(waited < EXPIRES, "answered after {waited:?}");

    // Without expires an empty consumer answers at once.
    let (messages, status, _) = pull(&client, r#"{"batch":5,"no_wait":true}"#).await;
    assert!(messages.is_empty(), "{messages:?}");
    assert_eq!(status, "404 No Messages");
}

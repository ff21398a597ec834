//! The server through a real client library (async-nats): pub/sub, queue groups,
//! request/reply, headers, no-responders, auth and permissions. Passes against the real
//! nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test core clients::`).

use futures::StreamExt;
use std::time::Duration;
use test_harness::client::barrier;
use test_harness::client::connect;
use test_harness::{ServerOptions, TestServer};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn publish_and_subscribe() {
    let server = TestServer::core();
    let subscriber_client = connect(&server).await;
    let publisher = connect(&server).await;
    let mut subscription = subscriber_client.subscribe("greet.*").await.unwrap();
    barrier(&subscriber_client).await;
    for index in 0..100 {
        publisher
            .publish(format!("greet.{index}"), format!("hello {index}").into())
            .await
            .unwrap();
    }
    publisher.flush().await.unwrap();
    for index in 0..100 {
        let message = timeout(WAIT, subscription.next()).await.unwrap().unwrap();
        assert_eq!(message.subject.as_str(), format!("greet.{index}"));
        assert_eq!(&message.payload[..], format!("hello {index}").as_bytes());
    }
}

#[tokio::test]
async fn queue_group_delivers_each_message_once() {
    let server = TestServer::core();
    let client = connect(&server).await;
    let mut members = Vec::new();
    for _ in 0..3 {
        members.push(
            client
                .queue_subscribe("work", "workers".into())
                .await
                .unwrap(),
        );
    }
    let mut plain = client.subscribe("work").await.unwrap();
    barrier(&client).await;
    let total = 300;
    for index in 0..total {
        client
            .publish("work", format!("{index}").into())
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    for _ in 0..total {
        timeout(WAIT, plain.next()).await.unwrap().unwrap();
    }
    let mut received = 0;
    let mut per_member = Vec::new();
    for member in members.iter_mut() {
        let mut count = 0;
        while let Ok(Some(_)) = timeout(Duration::from_millis(300), member.next()).await {
            count += 1;
        }
        per_member.push(count);
        received += count;
    }
    assert_eq!(received, total, "each message exactly once: {per_member:?}");
    assert!(
        per_member.iter().all(|count| *count > 0),
        "spread over members: {per_member:?}"
    );
}

#[tokio::test]
async fn request_reply() {
    let server = TestServer::core();
    let responder = connect(&server).await;
    let requester = connect(&server).await;
    let mut service = responder.subscribe("echo").await.unwrap();
    barrier(&responder).await;
    tokio::spawn(async move {
        while let Some(request) = service.next().await {
            if let Some(reply) = request.reply {
                let mut answer = b"re: ".to_vec();
                answer.extend_from_slice(&request.payload);
                responder.publish(reply, answer.into()).await.unwrap();
            }
        }
    });
    for index in 0..20 {
        let answer = timeout(WAIT, requester.request("echo", format!("{index}").into()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&answer.payload[..], format!("re: {index}").as_bytes());
    }
}

#[tokio::test]
async fn no_responders_fails_a_request_fast() {
    let server = TestServer::core();
    let client = connect(&server).await;
    let error = timeout(WAIT, client.request("nobody.listens", "x".into()))
        .await
        .expect("answered before the timeout")
        .expect_err("no responders");
    assert_eq!(
        error.kind(),
        async_nats::client::RequestErrorKind::NoResponders
    );
}

#[tokio::test]
async fn headers_round_trip() {
    let server = TestServer::core();
    let client = connect(&server).await;
    let mut subscription = client.subscribe("with.headers").await.unwrap();
    barrier(&client).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("X-Trace", "abc");
    headers.append("X-Multi", "one");
    headers.append("X-Multi", "two");
    client
        .publish_with_headers("with.headers", headers, "body".into())
        .await
        .unwrap();
    let message = timeout(WAIT, subscription.next()).await.unwrap().unwrap();
    let received = message.headers.expect("headers");
    assert_eq!(received.get("X-Trace").map(|v| v.as_str()), Some("abc"));
    let multi: Vec<_> = received
        .get_all("X-Multi")
        .map(|value| value.as_str().to_string())
        .collect();
    assert_eq!(multi, ["one", "two"]);
    assert_eq!(&message.payload[..], b"body");
}

#[tokio::test]
async fn user_and_password() {
    let server = TestServer::with_config("authorization {\n  user: alice\n  password: secret\n}\n");
    let good = timeout(
        WAIT,
        async_nats::ConnectOptions::with_user_and_password("alice".into(), "secret".into())
            .connect(server.url()),
    )
    .await
    .unwrap();
    assert!(good.is_ok());
    let bad = timeout(
        WAIT,
        async_nats::ConnectOptions::with_user_and_password("alice".into(), "wrong".into())
            .retry_on_initial_connect()
            .max_reconnects(Some(1))
            .connect(server.url()),
    )
    .await;
    // Either the connect fails or the client never gets a working connection.
    if let Ok(Ok(client)) = bad {
        assert!(
            timeout(Duration::from_millis(500), client.flush())
                .await
                .is_err()
                || client.connection_state() != async_nats::connection::State::Connected
        );
    }
}

#[tokio::test]
async fn token_auth() {
    let server = TestServer::start(ServerOptions {
        args: vec!["--auth".into(), "s3cret".into()],
        ..Default::default()
    });
    let client = timeout(
        WAIT,
        async_nats::ConnectOptions::with_token("s3cret".into()).connect(server.url()),
    )
    .await
    .unwrap()
    .unwrap();
    client.flush().await.unwrap();
    let refused = timeout(WAIT, async_nats::connect(server.url()))
        .await
        .unwrap();
    assert!(refused.is_err(), "no token: refused");
}

#[tokio::test]
async fn publish_permission_violation_is_reported_and_connection_survives() {
    let server = TestServer::with_config(
        r#"
authorization {
  users = [
    { user: limited, password: pw, permissions: { publish: { allow: ["allowed.>", "_INBOX.>"] }, subscribe: ["allowed.>", "_INBOX.>"] } }
  ]
}
"#,
    );
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel();
    let client = timeout(
        WAIT,
        async_nats::ConnectOptions::with_user_and_password("limited".into(), "pw".into())
            .event_callback(move |event| {
                let errors_tx = errors_tx.clone();
                async move {
                    if let async_nats::Event::ServerError(error) = event {
                        let _ = errors_tx.send(error.to_string());
                    }
                }
            })
            .connect(server.url()),
    )
    .await
    .unwrap()
    .unwrap();
    let mut subscription = client.subscribe("allowed.one").await.unwrap();
    client.publish("forbidden", "x".into()).await.unwrap();
    client.publish("allowed.one", "ok".into()).await.unwrap();
    client.flush().await.unwrap();
    let message = timeout(WAIT, subscription.next()).await.unwrap().unwrap();
    assert_eq!(&message.payload[..], b"ok");
    let error = timeout(WAIT, errors_rx.recv()).await.unwrap().unwrap();
    assert!(
        error.contains("Permissions Violation for Publish to \"forbidden\""),
        "{error}"
    );
}

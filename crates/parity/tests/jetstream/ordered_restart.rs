//! An ordered consumer across a server restart (issue 19 item 4): the client's ordered consumer
//! reads a stream, the server is stopped and started again on the same port and store (its
//! ephemeral consumer is gone), the client reconnects, and messages published after the
//! restart must reach the ordered consumer again, in order and without gaps: async-nats' push
//! and pull ordered consumers. The same across a stream deleted and created again under its
//! name (issue 19's client-library sweep). Passes on nats-server 2.15.1.
//!
//! What a client learns at the restart: a pull request still waiting when the server shuts down
//! is answered `409 Server Shutdown` with what was left of it, as nats-server does.

use async_nats::jetstream::{self, consumer};
use futures::{Stream, StreamExt};
use std::time::Duration;
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;

/// Long enough for the client to notice the lost consumer (missed heartbeats: async-nats waits
/// two idle-heartbeat intervals, 5 s each for ordered push, 2 x 15 s for pull) and re-create it.
const RECOVERY: Duration = Duration::from_secs(60);

async fn client(server: &TestServer) -> async_nats::Client {
    async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(2))
        .reconnect_delay_callback(|_| Duration::from_millis(100))
        .connect(server.url())
        .await
        .expect("connect")
}

async fn setup(server: &TestServer) -> (async_nats::Client, jetstream::stream::Stream) {
    let client = client(server).await;
    let context = jetstream::new(client.clone());
    let stream = context
        .create_stream(jetstream::stream::Config {
            name: "ORDERED".into(),
            subjects: vec!["ordered.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    (client, stream)
}

/// Publish `payload` until its PubAck comes (the server may still be starting).
async fn publish(context: &jetstream::Context, payload: String) {
    let deadline = tokio::time::Instant::now() + RECOVERY;
    loop {
        let sent = async {
            context
                .publish("ordered.x", payload.clone().into())
                .await?
                .await
                .map_err(async_nats::Error::from)
        };
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), sent).await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "publish never acked"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The next message's payload, skipping the errors an ordered consumer reports while it
/// re-creates its consumer.
async fn next_payload<S, E>(messages: &mut S) -> String
where
    S: Stream<Item = Result<jetstream::Message, E>> + Unpin,
    E: std::fmt::Debug,
{
    let deadline = tokio::time::Instant::now() + RECOVERY;
    loop {
        let next = tokio::time::timeout_at(deadline, messages.next())
            .await
            .expect("the ordered consumer received nothing after the restart")
            .expect("the ordered consumer ended");
        match next {
            Ok(message) => return String::from_utf8_lossy(&message.payload).into_owned(),
            Err(error) => println!("ordered consumer reported {error:?}"),
        }
    }
}

/// What happens to the stream between the messages read before and after.
enum Interruption<'a> {
    /// The server restarts on its store: the ephemeral consumer is gone, the stream stays.
    Restart(&'a mut TestServer),
    /// The stream is deleted and created again under its name: its sequences start at 1 again,
    /// and the ordered consumer re-creates its consumer from the stream sequence after the last
    /// one it saw, so the new stream's first three messages are skipped (on nats-server too).
    RecreateStream,
}

async fn interrupt_and_continue<S, E>(
    interruption: Interruption<'_>,
    client: &async_nats::Client,
    mut messages: S,
) where
    S: Stream<Item = Result<jetstream::Message, E>> + Unpin,
    E: std::fmt::Debug,
{
    let context = jetstream::new(client.clone());
    for index in 0..3 {
        publish(&context, format!("before-{index}")).await;
    }
    for index in 0..3 {
        assert_eq!(next_payload(&mut messages).await, format!("before-{index}"));
    }
    let skipped = match interruption {
        Interruption::Restart(server) => {
            server.restart();
            0
        }
        Interruption::RecreateStream => {
            let mut stream = context.get_stream("ORDERED").await.expect("stream");
            let config = stream.info().await.expect("info").config.clone();
            assert!(
                context
                    .delete_stream("ORDERED")
                    .await
                    .expect("delete")
                    .success
            );
            context.create_stream(config).await.expect("created again");
            3
        }
    };
    for index in 0..6 {
        publish(&context, format!("after-{index}")).await;
    }
    for index in skipped..6 {
        assert_eq!(next_payload(&mut messages).await, format!("after-{index}"));
    }
}

/// Read the stream through an ordered consumer (push or pull) across `interruption`.
async fn ordered_across(push: bool, mut server: TestServer, recreate: bool) {
    let (client, stream) = setup(&server).await;
    let interruption = if recreate {
        Interruption::RecreateStream
    } else {
        Interruption::Restart(&mut server)
    };
    if push {
        let ordered = stream
            .create_consumer(consumer::push::OrderedConfig {
                deliver_subject: client.new_inbox(),
                ..Default::default()
            })
            .await
            .expect("ordered push consumer");
        let messages = ordered.messages().await.expect("messages");
        interrupt_and_continue(interruption, &client, messages).await;
    } else {
        let ordered = stream
            .create_consumer(consumer::pull::OrderedConfig::default())
            .await
            .expect("ordered pull consumer");
        let messages = ordered.messages().await.expect("messages");
        interrupt_and_continue(interruption, &client, messages).await;
    }
}

#[tokio::test]
async fn ordered_push_consumer_resumes_after_restart() {
    ordered_across(true, TestServer::jetstream(), false).await;
}

#[tokio::test]
async fn ordered_pull_consumer_resumes_after_restart() {
    ordered_across(false, TestServer::jetstream(), false).await;
}

/// Issue 19's client-library sweep: the stream deleted and created again under the client.
#[tokio::test]
async fn ordered_push_consumer_across_stream_recreate() {
    ordered_across(true, TestServer::jetstream(), true).await;
}

#[tokio::test]
async fn ordered_pull_consumer_across_stream_recreate() {
    ordered_across(false, TestServer::jetstream(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_pull_request_told_of_server_shutdown() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 0).await;
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.S.C",
        r#"{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish_with_reply(
            "$JS.API.CONSUMER.MSG.NEXT.S.C",
            inbox,
            r#"{"batch":5,"max_bytes":1000,"expires":60000000000}"#.into(),
        )
        .await
        .expect("pull request");
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while api(&client, "$JS.API.CONSUMER.INFO.S.C", "").await["num_waiting"] != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "request never queued"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let exit = tokio::task::block_in_place(|| server.stop());
    assert_eq!(exit, Some(0), "graceful exit");
    let status = tokio::time::timeout(TIMEOUT, replies.next())
        .await
        .expect("an answer before the connection closed")
        .expect("subscription open");
    assert_eq!(status.status.map(|code| code.as_u16()), Some(409));
    assert_eq!(status.description.as_deref(), Some("Server Shutdown"));
    let headers = status.headers.expect("pending counts");
    assert_eq!(
        headers
            .get("Nats-Pending-Messages")
            .map(|value| value.as_str()),
        Some("5")
    );
    assert_eq!(
        headers
            .get("Nats-Pending-Bytes")
            .map(|value| value.as_str()),
        Some("1000")
    );
}

//! async-nats's consumer API as its documentation shows it (issue 19's client-library sweep):
//! pull consumers through `fetch`, `batch` and the continuous `messages` stream with idle
//! heartbeats, the metadata a client reads from a message's ack subject, double acks, push
//! consumers bound to a deliver subject, pause and resume, listings, strict creation and updates.
//! Passes against the real nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_consumers::`).

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream, AckKind, Context};
use futures::{StreamExt, TryStreamExt};
use test_harness::client::connect;
use test_harness::TestServer;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

async fn stream_with(context: &Context, name: &str, subject: &str, count: usize) -> stream::Stream {
    let stream = context
        .create_stream(stream::Config {
            name: name.into(),
            subjects: vec![format!("{subject}.>")],
            ..Default::default()
        })
        .await
        .unwrap();
    publish(context, subject, 0..count).await;
    stream
}

async fn publish(context: &Context, subject: &str, range: std::ops::Range<usize>) {
    for index in range {
        context
            .publish(format!("{subject}.{index}"), format!("{index}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

fn payload(message: &jetstream::Message) -> String {
    String::from_utf8_lossy(&message.payload).into_owned()
}

#[tokio::test]
async fn pull_fetch_batch_and_message_metadata() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let stream = stream_with(&context, "PULLS", "pulls", 10).await;
    let mut pull = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("worker".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();

    let fetched: Vec<jetstream::Message> = pull
        .fetch()
        .max_messages(4)
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(fetched.len(), 4);
    for (index, message) in fetched.iter().enumerate() {
        let info = message.info().unwrap();
        assert_eq!(info.stream, "PULLS");
        assert_eq!(info.consumer, "worker");
        assert_eq!(info.stream_sequence, index as u64 + 1);
        assert_eq!(info.consumer_sequence, index as u64 + 1);
        assert_eq!(info.delivered, 1);
        assert_eq!(info.pending, 10 - index as u64 - 1);
        assert_eq!(payload(message), index.to_string());
        message.double_ack().await.unwrap();
    }

    let started = std::time::Instant::now();
    let batch: Vec<jetstream::Message> = pull
        .batch()
        .max_messages(20)
        .expires(Duration::from_millis(700))
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(batch.len(), 6, "the rest of the stream");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "a batch waits for its expiry: {:?}",
        started.elapsed()
    );

    // Nothing left: a fetch (no_wait) ends at once, empty.
    let started = std::time::Instant::now();
    let nothing: Vec<jetstream::Message> = pull
        .fetch()
        .max_messages(5)
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(nothing.is_empty());
    assert!(started.elapsed() < Duration::from_secs(2));

    batch[0].ack_with(AckKind::Nak(None)).await.unwrap();
    for message in &batch[1..] {
        message.ack().await.unwrap();
    }
    let redelivered: Vec<jetstream::Message> = pull
        .fetch()
        .max_messages(5)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(redelivered.len(), 1);
    let info = redelivered[0].info().unwrap();
    assert_eq!((info.stream_sequence, info.delivered), (5, 2));
    redelivered[0].double_ack().await.unwrap();

    let info = pull.info().await.unwrap();
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(info.num_pending, 0);
    assert_eq!(info.delivered.stream_sequence, 10);
    assert_eq!(info.ack_floor.stream_sequence, 10);
    assert_eq!(info.num_redelivered, 0);
}

#[tokio::test]
async fn pull_messages_stream_survives_idle_time_on_heartbeats() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let stream = stream_with(&context, "ENDLESS", "endless", 5).await;
    let pull = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("reader".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = pull
        .stream()
        .max_messages_per_batch(3)
        .expires(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(500))
        .messages()
        .await
        .unwrap();
    for index in 0..5 {
        let message = timeout(WAIT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(payload(&message), index.to_string());
        message.ack().await.unwrap();
    }
    // Idle for several heartbeats and more than one request's expiry: a missing heartbeat
    // would come out of the stream as an error.
    let idle = timeout(Duration::from_secs(3), messages.next()).await;
    assert!(idle.is_err(), "nothing while idle: {idle:?}");
    publish(&context, "endless", 5..8).await;
    for index in 5..8 {
        let message = timeout(WAIT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(payload(&message), index.to_string());
        message.ack().await.unwrap();
    }
}

#[tokio::test]
async fn push_consumer_on_a_deliver_subject() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client.clone());
    let stream = stream_with(&context, "PUSHES", "pushes", 5).await;
    let push = stream
        .create_consumer(consumer::push::Config {
            durable_name: Some("pusher".into()),
            deliver_subject: client.new_inbox(),
            ack_policy: consumer::AckPolicy::Explicit,
            filter_subject: "pushes.>".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = push.messages().await.unwrap();
    for index in 0..5 {
        let message = timeout(WAIT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(payload(&message), index.to_string());
        assert_eq!(message.info().unwrap().consumer, "pusher");
        message.ack().await.unwrap();
    }
    publish(&context, "pushes", 5..6).await;
    let message = timeout(WAIT, messages.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(payload(&message), "5");
    message.double_ack().await.unwrap();
    let info = push.get_info().await.unwrap();
    assert!(info.push_bound);
    assert_eq!(info.ack_floor.stream_sequence, 6);
}

#[tokio::test]
async fn pause_resume_list_update_and_delete() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let stream = stream_with(&context, "ADMIN", "admin", 3).await;
    for name in ["one", "two", "three"] {
        stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some(name.into()),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let until = time::OffsetDateTime::now_utc() + Duration::from_secs(3600);
    let paused = stream.pause_consumer("one", until).await.unwrap();
    assert!(paused.paused);
    assert_eq!(paused.pause_until.unix_timestamp(), until.unix_timestamp());
    assert!(paused.pause_remaining.unwrap() > Duration::from_secs(3500));
    let info = stream.consumer_info("one").await.unwrap();
    assert!(info.paused);
    assert!(info.pause_remaining.is_some());
    let pull: consumer::PullConsumer = stream.get_consumer("one").await.unwrap();
    let held: Vec<jetstream::Message> = pull
        .fetch()
        .max_messages(3)
        .expires(Duration::from_millis(500))
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(held.is_empty(), "a paused consumer delivers nothing");
    let resumed = stream.resume_consumer("one").await.unwrap();
    assert!(!resumed.paused);
    let delivered: Vec<jetstream::Message> = pull
        .fetch()
        .max_messages(3)
        .messages()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(delivered.len(), 3);

    let mut names: Vec<String> = stream.consumer_names().try_collect().await.unwrap();
    names.sort();
    assert_eq!(names, ["one", "three", "two"]);
    let infos: Vec<consumer::Info> = stream.consumers().try_collect().await.unwrap();
    assert_eq!(infos.len(), 3);

    let clash = stream
        .create_consumer_strict(consumer::pull::Config {
            durable_name: Some("two".into()),
            description: Some("changed".into()),
            ..Default::default()
        })
        .await;
    assert!(
        clash.is_err(),
        "strict create of an existing, different consumer"
    );
    let updated = stream
        .update_consumer(consumer::pull::Config {
            durable_name: Some("two".into()),
            description: Some("changed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        updated.cached_info().config.description.as_deref(),
        Some("changed")
    );
    let missing = stream
        .update_consumer(consumer::pull::Config {
            durable_name: Some("absent".into()),
            ..Default::default()
        })
        .await;
    assert!(missing.is_err(), "update of a consumer that does not exist");

    assert!(stream.delete_consumer("three").await.unwrap().success);
    let error = stream.consumer_info("three").await.unwrap_err();
    assert!(error.to_string().contains("consumer not found"), "{error}");
    let names: Vec<String> = stream.consumer_names().try_collect().await.unwrap();
    assert_eq!(names.len(), 2);
}

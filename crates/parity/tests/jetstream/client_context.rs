//! async-nats's JetStream context as its documentation shows it (issue 19's client-library
//! sweep): publish options (message id, expected stream / last sequence / last message id / last
//! subject sequence) and the error kinds the client makes of the server's answers, a context
//! with a JetStream domain,
//! account info, stream reads (raw and direct gets by sequence and by
//! subject, first / next / last), deletes and filtered purges, stream lookups by subject and
//! listings. Passes against the real nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_context::`).

use std::time::Duration;

use async_nats::jetstream::{
    self, context::PublishErrorKind, message::PublishMessage, stream, Context,
};
use futures::TryStreamExt;
use test_harness::client::connect;
use test_harness::{ServerOptions, TestServer};

async fn stream_on(context: &Context, name: &str, subjects: &[&str]) -> stream::Stream {
    context
        .create_stream(stream::Config {
            name: name.into(),
            subjects: subjects.iter().map(|subject| subject.to_string()).collect(),
            allow_direct: true,
            ..Default::default()
        })
        .await
        .unwrap()
}

async fn publish_kind(
    context: &Context,
    subject: &str,
    message: PublishMessage,
) -> Result<jetstream::publish::PublishAck, PublishErrorKind> {
    let future = context
        .send_publish(subject.to_string(), message)
        .await
        .map_err(|error| error.kind())?;
    future.await.map_err(|error| error.kind())
}

#[tokio::test]
async fn publish_options_and_their_error_kinds() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    stream_on(&context, "ORDERS", &["orders.>"]).await;

    let first = publish_kind(
        &context,
        "orders.new",
        PublishMessage::build()
            .payload("a".into())
            .message_id("id-1"),
    )
    .await
    .unwrap();
    assert_eq!(
        (first.stream.as_str(), first.sequence, first.duplicate),
        ("ORDERS", 1, false)
    );
    let again = publish_kind(
        &context,
        "orders.new",
        PublishMessage::build()
            .payload("a".into())
            .message_id("id-1"),
    )
    .await
    .unwrap();
    assert_eq!((again.sequence, again.duplicate), (1, true));

    let expectations: Vec<(PublishMessage, Result<u64, PublishErrorKind>)> = vec![
        (
            PublishMessage::build().expected_last_sequence(7),
            Err(PublishErrorKind::WrongLastSequence),
        ),
        (PublishMessage::build().expected_last_sequence(1), Ok(2)),
        (
            PublishMessage::build().expected_last_message_id("other"),
            Err(PublishErrorKind::WrongLastMessageId),
        ),
        (
            PublishMessage::build().expected_stream("ELSEWHERE"),
            Err(PublishErrorKind::Other),
        ),
        (PublishMessage::build().expected_stream("ORDERS"), Ok(3)),
        (
            PublishMessage::build().expected_last_subject_sequence(1),
            Err(PublishErrorKind::WrongLastSequence),
        ),
        (
            PublishMessage::build().expected_last_subject_sequence(3),
            Ok(4),
        ),
    ];
    for (index, (message, expected)) in expectations.into_iter().enumerate() {
        let outcome = publish_kind(&context, "orders.new", message.payload("x".into()))
            .await
            .map(|ack| ack.sequence);
        assert_eq!(outcome, expected, "expectation {index}");
    }
    let nowhere = publish_kind(
        &context,
        "unstored.subject",
        PublishMessage::build().payload("x".into()),
    )
    .await;
    assert_eq!(nowhere.unwrap_err(), PublishErrorKind::StreamNotFound);
}

#[tokio::test]
async fn domain_context_and_account_info() {
    let temp = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "jetstream {{ domain: hub, store_dir: {:?} }}\n",
            temp.path().join("store")
        )),
        ..Default::default()
    });
    let client = connect(&server).await;
    let context = jetstream::with_domain(client.clone(), "hub");
    stream_on(&context, "EVENTS", &["events.*"]).await;
    let ack = context
        .publish("events.one", "payload".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(
        (ack.stream.as_str(), ack.sequence, ack.domain.as_str()),
        ("EVENTS", 1, "hub")
    );
    // The plain context reaches the same JetStream.
    let plain = jetstream::new(client);
    let mut events = plain.get_stream("EVENTS").await.unwrap();
    assert_eq!(events.info().await.unwrap().state.messages, 1);

    let account = context.query_account().await.unwrap();
    assert_eq!(account.streams, 1);
    assert_eq!(account.consumers, 0);
    assert_eq!(account.domain.as_deref(), Some("hub"));
    assert!(account.memory == 0 && account.storage > 0, "{account:?}");
    assert_eq!(account.limits.max_streams, None);

    let missing = jetstream::with_domain(connect(&server).await, "spoke");
    let error = tokio::time::timeout(Duration::from_secs(10), missing.query_account())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        error.kind(),
        jetstream::context::AccountErrorKind::JetStreamUnavailable,
        "{error}"
    );
}

#[tokio::test]
async fn stream_reads_by_sequence_and_subject() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let stream = stream_on(&context, "READS", &["reads.>"]).await;
    for (subject, payload) in [
        ("reads.a", "a1"),
        ("reads.b", "b1"),
        ("reads.a", "a2"),
        ("reads.c", "c1"),
        ("reads.b", "b2"),
    ] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Origin", payload);
        context
            .publish_with_headers(subject, headers, payload.into())
            .await
            .unwrap()
            .await
            .unwrap();
    }

    let raw = stream.get_raw_message(3).await.unwrap();
    assert_eq!(
        (raw.subject.as_str(), &raw.payload[..], raw.sequence),
        ("reads.a", &b"a2"[..], 3)
    );
    assert_eq!(raw.headers.get("Origin").unwrap().as_str(), "a2");
    let direct = stream.direct_get(3).await.unwrap();
    assert_eq!(
        (direct.subject.as_str(), &direct.payload[..]),
        ("reads.a", &b"a2"[..])
    );
    assert_eq!(direct.headers.get("Origin").unwrap().as_str(), "a2");
    assert_eq!(raw.time, direct.time);

    let last = stream
        .get_last_raw_message_by_subject("reads.b")
        .await
        .unwrap();
    assert_eq!((last.sequence, &last.payload[..]), (5, &b"b2"[..]));
    let last = stream.direct_get_last_for_subject("reads.a").await.unwrap();
    assert_eq!((last.sequence, &last.payload[..]), (3, &b"a2"[..]));
    // (In async-nats 0.51 "first" takes the start sequence and "next" starts at the beginning.)
    let next = stream
        .get_first_raw_message_by_subject("reads.b", 3)
        .await
        .unwrap();
    assert_eq!(next.sequence, 5);
    let first = stream
        .get_next_raw_message_by_subject("reads.b")
        .await
        .unwrap();
    assert_eq!(first.sequence, 2);
    let next = stream
        .direct_get_next_for_subject("reads.*", Some(4))
        .await
        .unwrap();
    assert_eq!(next.sequence, 4);
    let first = stream
        .direct_get_first_for_subject("reads.c")
        .await
        .unwrap();
    assert_eq!(first.sequence, 4);

    assert!(stream.delete_message(4).await.unwrap());
    let gone = stream.get_raw_message(4).await.unwrap_err();
    assert_eq!(
        gone.kind(),
        jetstream::stream::RawMessageErrorKind::NoMessageFound,
        "{gone}"
    );
    let gone = stream.direct_get(4).await.unwrap_err();
    assert_eq!(
        gone.kind(),
        jetstream::stream::DirectGetErrorKind::NotFound,
        "{gone}"
    );
    let gone = stream
        .direct_get_last_for_subject("reads.c")
        .await
        .unwrap_err();
    assert_eq!(gone.kind(), jetstream::stream::DirectGetErrorKind::NotFound);

    let info = stream
        .info_with_subjects("reads.*")
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let mut subjects: Vec<(String, usize)> = info.into_iter().collect();
    subjects.sort();
    assert_eq!(
        subjects,
        [("reads.a".to_string(), 2), ("reads.b".to_string(), 2)]
    );

    let purged = stream.purge().filter("reads.a").keep(1).await.unwrap();
    assert_eq!(purged.purged, 1);
    let purged = stream.purge().filter("reads.b").await.unwrap();
    assert_eq!(purged.purged, 2);
    let mut stream = stream;
    let state = stream.info().await.unwrap().state.clone();
    assert_eq!(
        (state.messages, state.first_sequence, state.last_sequence),
        (1, 3, 5)
    );
}

#[tokio::test]
async fn stream_lookups_and_listings() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    for index in 0..3 {
        stream_on(
            &context,
            &format!("LIST{index}"),
            &[&format!("list.{index}.>")],
        )
        .await;
    }
    assert_eq!(
        context.stream_by_subject("list.1.x").await.unwrap(),
        "LIST1"
    );
    assert!(context.stream_by_subject("list.9.x").await.is_err());
    let mut names: Vec<String> = context.stream_names().try_collect().await.unwrap();
    names.sort();
    assert_eq!(names, ["LIST0", "LIST1", "LIST2"]);
    let infos: Vec<stream::Info> = context.streams().try_collect().await.unwrap();
    assert_eq!(infos.len(), 3);
    assert!(infos.iter().all(|info| info.config.allow_direct));

    let error = context.get_stream("MISSING").await.unwrap_err();
    match error.kind() {
        jetstream::context::GetStreamErrorKind::JetStream(inner) => {
            assert_eq!(inner.error_code(), jetstream::ErrorCode::STREAM_NOT_FOUND)
        }
        other => panic!("{other:?}: {error}"),
    }
    let clash = context
        .create_stream(stream::Config {
            name: "LIST0".into(),
            subjects: vec!["other.subject".into()],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        clash.to_string().contains("stream name already in use"),
        "{clash}"
    );
    let mut updated = context
        .get_stream("LIST2")
        .await
        .unwrap()
        .cached_info()
        .config
        .clone();
    updated.max_messages = 10;
    updated.description = Some("ten at most".into());
    let info = context.update_stream(updated).await.unwrap();
    assert_eq!(info.config.max_messages, 10);
    assert_eq!(info.config.description.as_deref(), Some("ten at most"));
    assert!(context.delete_stream("LIST2").await.unwrap().success);
    let names: Vec<String> = context.stream_names().try_collect().await.unwrap();
    assert_eq!(names.len(), 2);
}

//! async-nats's JetStream context with an API prefix (`jetstream::with_prefix`), as a client in
//! another account uses it (issue 19's client-library sweep): account B imports account A's
//! `$JS.API.>` under `JS.A.API.>`, and a B client creates, reads and deletes a stream of A
//! through the prefix, gets messages (stored and direct), fetches from a pull consumer and lists
//! streams; a plain B context
//! finds no JetStream of its own. Passes against the real nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_api_prefix::`).

use async_nats::jetstream::{self, consumer, stream};
use futures::TryStreamExt;
use test_harness::client::TIMEOUT;
use test_harness::{ServerOptions, TestServer};

const CONFIG: &str = r#"
accounts {
  A: {
    jetstream: enabled
    users: [{ user: a, password: a }]
    exports: [{ service: "$JS.API.>", response_type: stream }]
  }
  B: {
    users: [{ user: b, password: b }]
    imports: [{ service: { account: A, subject: "$JS.API.>" }, to: "JS.A.API.>" }]
  }
}
"#;

async fn connect_as(server: &TestServer, user: &str) -> async_nats::Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .connect(server.url())
        .await
        .expect("connect")
}

#[tokio::test]
async fn a_context_with_an_api_prefix_reaches_the_exporting_account() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(CONFIG.into()),
        ..Default::default()
    });
    let a = jetstream::new(connect_as(&server, "a").await);
    let b_client = connect_as(&server, "b").await;
    let b = jetstream::with_prefix(b_client.clone(), "JS.A.API");

    let created = b
        .create_stream(stream::Config {
            name: "SHARED".into(),
            subjects: vec!["shared.>".into()],
            allow_direct: true,
            ..Default::default()
        })
        .await
        .expect("create through the prefix");
    assert_eq!(created.cached_info().config.name, "SHARED");
    // The stream is A's: A's own context sees it and publishes into it.
    for index in 0..3 {
        a.publish(format!("shared.{index}"), format!("m{index}").into())
            .await
            .expect("publish")
            .await
            .expect("ack");
    }
    let mut shared = b
        .get_stream("SHARED")
        .await
        .expect("info through the prefix");
    assert_eq!(shared.info().await.expect("info").state.messages, 3);
    let stored = shared.get_raw_message(2).await.expect("message get");
    assert_eq!(stored.subject.as_str(), "shared.1");
    let direct = shared
        .direct_get_last_for_subject("shared.2")
        .await
        .expect("direct get through the prefix");
    assert_eq!(&direct.payload[..], b"m2");
    let names: Vec<String> = b.stream_names().try_collect().await.expect("names");
    assert_eq!(names, ["SHARED"]);
    let info = b
        .query_account()
        .await
        .expect("account info through the prefix");
    assert_eq!(info.streams, 1);
    // A pull consumer fetched through the prefix: the messages come back across the import.
    let puller = shared
        .create_consumer(consumer::pull::Config {
            durable_name: Some("PULLER".into()),
            ack_policy: consumer::AckPolicy::None,
            ..Default::default()
        })
        .await
        .expect("consumer through the prefix");
    let fetch = async {
        puller
            .fetch()
            .max_messages(3)
            .messages()
            .await
            .expect("fetch")
            .map_ok(|message| String::from_utf8_lossy(&message.payload).into_owned())
            .try_collect::<Vec<String>>()
            .await
            .expect("fetched")
    };
    let fetched = tokio::time::timeout(TIMEOUT, fetch)
        .await
        .expect("the fetched messages came back through the import");
    assert_eq!(fetched, ["m0", "m1", "m2"]);

    // Without the prefix, B has no JetStream of its own.
    let plain = jetstream::new(b_client);
    let refused = plain.query_account().await.expect_err("B has no JetStream");
    assert!(
        refused.to_string().contains("error code 10039"),
        "{refused}"
    );

    assert!(b.delete_stream("SHARED").await.expect("delete").success);
    assert!(a.get_stream("SHARED").await.is_err(), "deleted in A");
}

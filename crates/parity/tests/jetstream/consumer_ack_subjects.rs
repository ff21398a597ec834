//! Which `$JS.ACK` subjects a consumer answers, as nats-server 2.15.1: deliveries carry the v1
//! form (`$JS.ACK.<stream>.<consumer>` + 5 tokens), acks are taken in that form and in the v2
//! form (`$JS.ACK.<domain|_>.<account hash>.<stream>.<consumer>` + 5 or more tokens); other
//! shapes, another domain or account hash, and any ack to an ack-none consumer reach nobody.
//! Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use test_harness::client;

use serde_json::json;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::{ServerOptions, TestServer};

/// nats-server's 8-character hash of the global account name `$G`.
const ACCOUNT_HASH: &str = "szMpdrwD";

/// Stream `S` with `count` messages and consumers `C` (explicit ack) and `N` (ack none).
async fn setup(client: &async_nats::Client, count: usize) {
    client::stream_s(client, count).await;
    for (name, ack_policy) in [("C", "explicit"), ("N", "none")] {
        let created = api(
            client,
            &format!("$JS.API.CONSUMER.CREATE.S.{name}"),
            &json!({"stream_name": "S", "config": {"durable_name": name, "ack_policy": ack_policy}})
                .to_string(),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
}

/// Pull `count` messages from `C`; their reply subjects.
async fn pull(client: &async_nats::Client, count: usize) -> Vec<String> {
    let inbox = client.new_inbox();
    let mut subscription = client.subscribe(inbox.clone()).await.unwrap();
    client
        .publish_with_reply(
            "$JS.API.CONSUMER.MSG.NEXT.S.C",
            inbox,
            json!({"batch": count, "expires": 2_000_000_000u64})
                .to_string()
                .into(),
        )
        .await
        .unwrap();
    let mut replies = Vec::new();
    while replies.len() < count {
        let message = tokio::time::timeout(TIMEOUT, futures::StreamExt::next(&mut subscription))
            .await
            .expect("delivery in time")
            .expect("subscription open");
        replies.push(message.reply.expect("ack subject").to_string());
    }
    replies
}

/// `+ACK` as a request: true when the consumer confirmed it, false when nobody listens.
async fn ack(client: &async_nats::Client, subject: &str) -> bool {
    match tokio::time::timeout(TIMEOUT, client.request(subject.to_string(), "+ACK".into())).await {
        Ok(Ok(_)) => true,
        Ok(Err(error)) if error.kind() == async_nats::RequestErrorKind::NoResponders => false,
        other => panic!("{subject}: {other:?}"),
    }
}

async fn ack_floor_and_pending(client: &async_nats::Client) -> (u64, u64) {
    let info = api(client, "$JS.API.CONSUMER.INFO.S.C", "").await;
    (
        info["ack_floor"]["stream_seq"].as_u64().unwrap(),
        info["num_ack_pending"].as_u64().unwrap(),
    )
}

/// Every form against one server whose domain token is `domain`.
async fn check_forms(server: &TestServer, domain: &str) {
    let client = connect(server).await;
    setup(&client, 6).await;
    let replies = pull(&client, 6).await;
    // What is sent: the v1 form with the consumer's sequences.
    let tokens: Vec<&str> = replies[0].split('.').collect();
    assert_eq!(tokens.len(), 9, "{}", replies[0]);
    assert_eq!(tokens[..7], ["$JS", "ACK", "S", "C", "1", "1", "1"]);
    assert_eq!(tokens[8], "5", "pending after the first of six");

    let v2 = |rest: &str| format!("$JS.ACK.{domain}.{ACCOUNT_HASH}.S.C.{rest}");
    for (subject, accepted) in [
        (replies[0].clone(), true),
        (v2("1.2.2.0.0"), true),
        (v2("1.3.3.0.0.token"), true),
        (v2("1.4.4.0.0.a.b"), true),
        (v2("1.5.5.0"), false),
        (format!("$JS.ACK.{domain}.XXXXXXXX.S.C.1.5.5.0.0"), false),
        (format!("$JS.ACK.other.{ACCOUNT_HASH}.S.C.1.5.5.0.0"), false),
        ("$JS.ACK.S.C.1.5.5.0.0.token".to_string(), false),
        ("$JS.ACK.S.C.1.5.5.0".to_string(), false),
    ] {
        assert_eq!(ack(&client, &subject).await, accepted, "{subject}");
    }
    assert_eq!(ack_floor_and_pending(&client).await, (4, 2));
    // An ack-none consumer takes no acks at all.
    assert!(!ack(&client, "$JS.ACK.S.N.1.1.1.0.0").await);
    let v2_none = format!("$JS.ACK.{domain}.{ACCOUNT_HASH}.S.N.1.1.1.0.0");
    assert!(!ack(&client, &v2_none).await);
}

#[tokio::test]
async fn v1_and_v2_acks_without_a_domain() {
    let server = TestServer::jetstream();
    check_forms(&server, "_").await;
}

#[tokio::test]
async fn v2_acks_name_the_configured_domain() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some("jetstream { domain: hub }\n".into()),
        ..Default::default()
    });
    check_forms(&server, "hub").await;
    let client = connect(&server).await;
    let underscore = format!("$JS.ACK._.{ACCOUNT_HASH}.S.C.1.6.6.0.0");
    assert!(!ack(&client, &underscore).await);
}

#[tokio::test]
async fn v2_acks_after_a_restart() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    setup(&client, 2).await;
    let replies = pull(&client, 2).await;
    drop(client);
    server.restart();
    let client = connect(&server).await;
    assert!(ack(&client, &format!("$JS.ACK._.{ACCOUNT_HASH}.S.C.1.1.1.0.0")).await);
    assert!(ack(&client, &replies[1]).await);
    assert_eq!(ack_floor_and_pending(&client).await, (2, 0));
}

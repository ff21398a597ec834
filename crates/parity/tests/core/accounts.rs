//! Accounts from the config file are separate subject spaces: the same subject in two accounts
//! never meets (plain subscriptions, queue groups, request/reply and no-responders), users
//! outside any account live in `$G`, and `no_auth_user` puts anonymous clients in that user's
//! account. Passes against the real nats-server too (`NATS_SERVER_BIN`).

use futures::StreamExt;
use std::time::Duration;
use test_harness::client::settle;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);
/// How long a message that must not arrive is waited for.
const QUIET: Duration = Duration::from_millis(300);

const CONFIG: &str = r#"
accounts {
  A { users: [ { user: a1, password: a1 }, { user: a2, password: a2 } ] }
  B { users: [ { user: b1, password: b1 }, { user: b2, password: b2 } ] }
}
authorization { users: [ { user: g, password: g } ] }
no_auth_user: b2
"#;

async fn connect(server: &TestServer, user: Option<&str>) -> async_nats::Client {
    let options = match user {
        Some(user) => async_nats::ConnectOptions::with_user_and_password(user.into(), user.into()),
        None => async_nats::ConnectOptions::new(),
    };
    tokio::time::timeout(WAIT, options.connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect")
}

async fn next_payload(subscriber: &mut async_nats::Subscriber) -> String {
    let message = tokio::time::timeout(WAIT, subscriber.next())
        .await
        .expect("message in time")
        .expect("subscription open");
    String::from_utf8_lossy(&message.payload).into_owned()
}

async fn assert_quiet(subscriber: &mut async_nats::Subscriber) {
    if let Ok(Some(message)) = tokio::time::timeout(QUIET, subscriber.next()).await {
        panic!(
            "message leaked across accounts on {}: {:?}",
            message.subject, message.payload
        );
    }
}

#[tokio::test]
async fn the_same_subject_in_two_accounts_never_meets() {
    let server = TestServer::with_config(CONFIG);
    let a1 = connect(&server, Some("a1")).await;
    let a2 = connect(&server, Some("a2")).await;
    let b1 = connect(&server, Some("b1")).await;
    let global = connect(&server, Some("g")).await;
    let mut in_a = a2.subscribe("orders.>").await.unwrap();
    let mut in_b = b1.subscribe("orders.new").await.unwrap();
    let mut in_global = global.subscribe("*.new").await.unwrap();
    for client in [&a2, &b1, &global] {
        settle(client).await;
    }

    a1.publish("orders.new", "from A".into()).await.unwrap();
    a1.flush().await.unwrap();
    assert_eq!(next_payload(&mut in_a).await, "from A");

    b1.publish("orders.new", "from B".into()).await.unwrap();
    b1.flush().await.unwrap();
    assert_eq!(next_payload(&mut in_b).await, "from B");

    global.publish("orders.new", "from G".into()).await.unwrap();
    global.flush().await.unwrap();
    assert_eq!(next_payload(&mut in_global).await, "from G");

    assert_quiet(&mut in_a).await;
    assert_quiet(&mut in_b).await;
    assert_quiet(&mut in_global).await;
}

#[tokio::test]
async fn queue_groups_are_per_account() {
    let server = TestServer::with_config(CONFIG);
    let a1 = connect(&server, Some("a1")).await;
    let a2 = connect(&server, Some("a2")).await;
    let b1 = connect(&server, Some("b1")).await;
    let mut workers_a = a2.queue_subscribe("jobs", "workers".into()).await.unwrap();
    let mut workers_b = b1.queue_subscribe("jobs", "workers".into()).await.unwrap();
    settle(&a2).await;
    settle(&b1).await;

    // Each account's group gets every message of its own account, none of the other's.
    for index in 0..20 {
        a1.publish("jobs", format!("a{index}").into())
            .await
            .unwrap();
        b1.publish("jobs", format!("b{index}").into())
            .await
            .unwrap();
    }
    a1.flush().await.unwrap();
    b1.flush().await.unwrap();
    for index in 0..20 {
        assert_eq!(next_payload(&mut workers_a).await, format!("a{index}"));
        assert_eq!(next_payload(&mut workers_b).await, format!("b{index}"));
    }
    assert_quiet(&mut workers_a).await;
    assert_quiet(&mut workers_b).await;
}

#[tokio::test]
async fn requests_and_no_responders_are_per_account() {
    let server = TestServer::with_config(CONFIG);
    let a1 = connect(&server, Some("a1")).await;
    let a2 = connect(&server, Some("a2")).await;
    let b1 = connect(&server, Some("b1")).await;
    let mut service = a2.subscribe("service.time").await.unwrap();
    settle(&a2).await;
    let responder = tokio::spawn(async move {
        while let Some(request) = service.next().await {
            if let Some(reply) = request.reply {
                a2.publish(reply, "noon in A".into()).await.unwrap();
                a2.flush().await.unwrap();
            }
        }
    });

    let reply = tokio::time::timeout(WAIT, a1.request("service.time", "".into()))
        .await
        .expect("reply in time")
        .expect("a responder in A");
    assert_eq!(reply.payload, "noon in A");

    // B has no responder on the subject: no-responders at once, not A's service.
    let error = tokio::time::timeout(WAIT, b1.request("service.time", "".into()))
        .await
        .expect("answer in time")
        .expect_err("no responder in B");
    assert_eq!(
        error.kind(),
        async_nats::client::RequestErrorKind::NoResponders,
        "{error}"
    );
    responder.abort();
}

#[tokio::test]
async fn no_auth_user_puts_anonymous_clients_in_that_users_account() {
    let server = TestServer::with_config(CONFIG);
    let anonymous = connect(&server, None).await;
    let b1 = connect(&server, Some("b1")).await;
    let a1 = connect(&server, Some("a1")).await;
    let mut in_b = b1.subscribe("greeting").await.unwrap();
    let mut in_a = a1.subscribe("greeting").await.unwrap();
    settle(&b1).await;
    settle(&a1).await;

    anonymous
        .publish("greeting", "hello B".into())
        .await
        .unwrap();
    anonymous.flush().await.unwrap();
    assert_eq!(next_payload(&mut in_b).await, "hello B");
    assert_quiet(&mut in_a).await;

    let info = tokio::time::timeout(WAIT, anonymous.request("$SYS.REQ.USER.INFO", "".into()))
        .await
        .expect("reply in time")
        .expect("reply");
    let info: serde_json::Value = serde_json::from_slice(&info.payload).unwrap();
    assert_eq!(info["data"]["account"], "B", "{info}");
}

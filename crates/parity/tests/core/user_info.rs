//! `$SYS.REQ.USER.INFO`, answered in every account: the caller's user (name, nkey or empty),
//! account and configured permissions under a `server` object. Passes against the real
//! nats-server too (`NATS_SERVER_BIN`).

use std::time::Duration;
use test_harness::{RawClient, TestServer};

const WAIT: Duration = Duration::from_secs(10);

async fn user_info(options: async_nats::ConnectOptions, server: &TestServer) -> serde_json::Value {
    let client = tokio::time::timeout(WAIT, options.connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect");
    let reply = tokio::time::timeout(WAIT, client.request("$SYS.REQ.USER.INFO", "".into()))
        .await
        .expect("reply in time")
        .expect("reply");
    serde_json::from_slice(&reply.payload).expect("json reply")
}

fn assert_server_object(reply: &serde_json::Value) {
    let server = &reply["server"];
    assert!(
        server["id"].as_str().is_some_and(|id| id.len() == 56),
        "{reply}"
    );
    assert!(server["name"].is_string(), "{reply}");
    assert_eq!(server["ver"], "2.15.1", "{reply}");
    assert!(server["seq"].as_u64().is_some_and(|seq| seq > 0), "{reply}");
    assert!(server["time"].is_string(), "{reply}");
}

#[tokio::test]
async fn without_authentication_the_user_is_empty_in_the_global_account() {
    let server = TestServer::core();
    let reply = user_info(async_nats::ConnectOptions::new(), &server).await;
    assert_server_object(&reply);
    assert_eq!(
        reply["data"],
        serde_json::json!({"user": "", "account": "$G", "account_name": "$G"}),
        "{reply}"
    );
}

#[tokio::test]
async fn a_user_with_permissions_sees_them() {
    let server = TestServer::with_config(
        r#"
accounts { A { users: [ { user: a, password: a, permissions: {
  publish: { allow: ["foo", "$SYS.REQ.USER.INFO"], deny: "x.>" },
  subscribe: { allow: "_INBOX.>", deny: ["secret"] },
  allow_responses: true } } ] } }
authorization { users: [ { user: plain, password: plain } ] }
"#,
    );
    let reply = user_info(
        async_nats::ConnectOptions::with_user_and_password("a".into(), "a".into()),
        &server,
    )
    .await;
    assert_server_object(&reply);
    // nats-server lists the subjects of a permission in its map's (random) order.
    assert_eq!(
        with_sorted_lists(reply["data"].clone()),
        serde_json::json!({
            "user": "a", "account": "A", "account_name": "A",
            "permissions": {
                "publish": {"allow": ["$SYS.REQ.USER.INFO", "foo"], "deny": ["x.>"]},
                "subscribe": {"allow": ["_INBOX.>"], "deny": ["secret"]},
                "responses": {"max": 1, "ttl": 120_000_000_000u64}
            }
        }),
        "{reply}"
    );

    let reply = user_info(
        async_nats::ConnectOptions::with_user_and_password("plain".into(), "plain".into()),
        &server,
    )
    .await;
    assert_eq!(
        reply["data"],
        serde_json::json!({"user": "plain", "account": "$G", "account_name": "$G"}),
        "{reply}"
    );
}

#[tokio::test]
async fn an_nkey_user_is_named_by_its_public_key() {
    let key = nkeys::KeyPair::new_user();
    let server = TestServer::with_config(&format!(
        "authorization {{ users: [ {{ nkey: {} }} ] }}\n",
        key.public_key()
    ));
    let seed = key.seed().expect("seed");
    let reply = user_info(async_nats::ConnectOptions::with_nkey(seed), &server).await;
    assert_eq!(
        reply["data"],
        serde_json::json!({"user": key.public_key(), "account": "$G", "account_name": "$G"}),
        "{reply}"
    );
}

#[test]
fn the_request_needs_publish_permission() {
    let server = TestServer::with_config(
        "authorization { users: [ { user: a, password: a, permissions: { publish: \"foo\" } } ] }\n",
    );
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false,"user":"a","pass":"a"}"#);
    client.send("SUB _INBOX.reply 1\r\nPUB $SYS.REQ.USER.INFO _INBOX.reply 0\r\n\r\n");
    assert_eq!(
        client.ping_collect(),
        [
            "-ERR 'Permissions Violation for Publish to \"$SYS.REQ.USER.INFO\"'",
            "PONG"
        ]
    );
}

/// `value` with every array of strings sorted.
fn with_sorted_lists(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Array(items) => {
            let mut items: Vec<_> = items.into_iter().map(with_sorted_lists).collect();
            items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            serde_json::Value::Array(items)
        }
        serde_json::Value::Object(map) => map
            .into_iter()
            .map(|(key, value)| (key, with_sorted_lists(value)))
            .collect(),
        other => other,
    }
}

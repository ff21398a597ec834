//! The system account: `$SYS.REQ.SERVER.PING` (a STATSZ answer), `$SYS.REQ.SERVER.PING.<X>`
//! and `$SYS.REQ.SERVER.<id>.<X>` wrapping the monitoring JSON as `{"server", "data"}`, and the
//! `$SYS.ACCOUNT.<acc>.CONNECT` / `DISCONNECT` advisories. Only users of the system account
//! see any of it. Passes against the real nats-server too (`NATS_SERVER_BIN`).

use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);

const CONFIG: &str = r#"
server_name: system-test
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { users: [ { user: a, password: a } ] }
}
system_account: SYS
"#;

pub(crate) async fn connect(server: &TestServer, user: &str) -> async_nats::Client {
    tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
            .name(format!("{user}-probe"))
            .connect(server.url()),
    )
    .await
    .expect("connect in time")
    .expect("connect")
}

pub(crate) async fn request_json(client: &async_nats::Client, subject: &str, body: &str) -> Value {
    let reply = tokio::time::timeout(
        WAIT,
        client.request(subject.to_string(), body.to_string().into()),
    )
    .await
    .expect("reply in time")
    .unwrap_or_else(|e| panic!("{subject}: {e}"));
    serde_json::from_slice(&reply.payload).expect("json reply")
}

/// A server of `CONFIG` with the system user's client as its only connection. Another client
/// can join a fresh server in a full parallel run (two core tests saw a second connection, on
/// nats-server in the CI parity pass on 2299e54 and on ours under load; its origin is not known):
/// such a server is left for a new one (at most 3 tries).
async fn alone() -> (TestServer, async_nats::Client) {
    let mut tries = 0;
    loop {
        tries += 1;
        let server = TestServer::with_config(CONFIG);
        let system = connect(&server, "sys").await;
        let connz = request_json(&system, "$SYS.REQ.SERVER.PING.CONNZ", "").await;
        if connz["data"]["num_connections"] == 1 || tries == 3 {
            return (server, system);
        }
        eprintln!(
            "another client joined the server on port {}: a new one",
            server.port
        );
    }
}

fn assert_server_object(reply: &Value) {
    let server = &reply["server"];
    assert_eq!(server["name"], "system-test", "{reply}");
    assert!(
        server["id"].as_str().is_some_and(|id| id.len() == 56),
        "{reply}"
    );
    assert_eq!(server["ver"], "2.15.1", "{reply}");
    assert!(server["seq"].as_u64().is_some_and(|seq| seq > 0), "{reply}");
    assert!(server["time"].is_string(), "{reply}");
}

#[tokio::test]
async fn server_ping_answers_with_statsz() {
    let (_server, system) = alone().await;
    let reply = request_json(&system, "$SYS.REQ.SERVER.PING", "").await;
    assert_server_object(&reply);
    let statsz = &reply["statsz"];
    assert_eq!(statsz["connections"], 1, "{reply}");
    assert_eq!(statsz["active_servers"], 1, "{reply}");
    assert!(statsz["subscriptions"].as_u64().is_some(), "{reply}");
    assert!(statsz["start"].is_string(), "{reply}");
    assert!(statsz["sent"]["msgs"].is_u64(), "{reply}");
}

#[tokio::test]
async fn server_requests_wrap_the_monitoring_json() {
    let (_server, system) = alone().await;
    let varz = request_json(&system, "$SYS.REQ.SERVER.PING.VARZ", "").await;
    assert_server_object(&varz);
    let id = varz["server"]["id"].as_str().unwrap().to_string();
    assert_eq!(varz["data"]["server_id"], id.as_str(), "{varz}");
    assert_eq!(varz["data"]["system_account"], "SYS", "{varz}");

    let healthz = request_json(&system, &format!("$SYS.REQ.SERVER.{id}.HEALTHZ"), "").await;
    assert_eq!(
        healthz["data"],
        serde_json::json!({"status": "ok", "status_code": 200}),
        "{healthz}"
    );

    // CONNZ takes the endpoint's options in the request body.
    let connz = request_json(&system, "$SYS.REQ.SERVER.PING.CONNZ", r#"{"limit": 1}"#).await;
    assert_server_object(&connz);
    assert_eq!(connz["data"]["limit"], 1, "{connz}");
    assert_eq!(connz["data"]["num_connections"], 1, "{connz}");

    let subsz = request_json(&system, &format!("$SYS.REQ.SERVER.{id}.SUBSZ"), "").await;
    assert!(subsz["data"]["num_subscriptions"].is_u64(), "{subsz}");
    let jsz = request_json(&system, "$SYS.REQ.SERVER.PING.JSZ", "").await;
    assert_eq!(jsz["data"]["server_id"], id.as_str(), "{jsz}");

    // A filter naming another server: nobody answers (the request's own 2 s timeout ends it;
    // with the client's default, 10 s, it raced this test's 10 s bound and lost once).
    let filtered = tokio::time::timeout(
        WAIT,
        system.send_request(
            "$SYS.REQ.SERVER.PING.VARZ",
            async_nats::Request::new()
                .payload(r#"{"server_name": "not-this-one"}"#.into())
                .timeout(Some(Duration::from_secs(2))),
        ),
    )
    .await
    .expect("the request's own timeout first");
    assert!(filtered.is_err(), "a filtered-out server answered");
}

#[tokio::test]
async fn other_accounts_do_not_reach_the_system_requests() {
    let server = TestServer::with_config(CONFIG);
    let user = connect(&server, "a").await;
    let error = tokio::time::timeout(WAIT, user.request("$SYS.REQ.SERVER.PING", "".into()))
        .await
        .expect("answer in time")
        .expect_err("no responder in account A");
    assert_eq!(
        error.kind(),
        async_nats::client::RequestErrorKind::NoResponders,
        "{error}"
    );
}

#[tokio::test]
async fn connect_and_disconnect_advisories() {
    let server = TestServer::with_config(CONFIG);
    let system = connect(&server, "sys").await;
    let mut connects = system.subscribe("$SYS.ACCOUNT.A.CONNECT").await.unwrap();
    let mut disconnects = system.subscribe("$SYS.ACCOUNT.A.DISCONNECT").await.unwrap();
    // async-nats' flush only writes: a round trip on the same connection makes sure the server
    // has the subscriptions before the user connects.
    request_json(&system, "$SYS.REQ.USER.INFO", "").await;

    let user = connect(&server, "a").await;
    user.publish("greeting", "hi".into()).await.unwrap();
    user.flush().await.unwrap();
    let message = tokio::time::timeout(WAIT, connects.next())
        .await
        .expect("connect advisory in time")
        .unwrap();
    let event: Value = serde_json::from_slice(&message.payload).unwrap();
    assert_eq!(
        event["type"], "io.nats.server.advisory.v1.client_connect",
        "{event}"
    );
    assert_server_object(&event);
    assert_eq!(event["client"]["acc"], "A", "{event}");
    assert_eq!(event["client"]["user"], "a", "{event}");
    assert_eq!(event["client"]["name"], "a-probe", "{event}");
    assert_eq!(event["client"]["kind"], "Client", "{event}");

    drop(user);
    let message = tokio::time::timeout(WAIT, disconnects.next())
        .await
        .expect("disconnect advisory in time")
        .unwrap();
    let event: Value = serde_json::from_slice(&message.payload).unwrap();
    assert_eq!(
        event["type"], "io.nats.server.advisory.v1.client_disconnect",
        "{event}"
    );
    assert_eq!(event["client"]["acc"], "A", "{event}");
    assert_eq!(event["sent"]["msgs"], 1, "{event}");
    assert_eq!(event["reason"], "Client Closed", "{event}");
}

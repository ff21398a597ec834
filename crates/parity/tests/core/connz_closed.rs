//! Closed connections in `/connz` (`state=closed` and `state=all`, `sort=stop` and
//! `sort=reason`, `cid`, `subs`, `auth`), the `max_closed_clients` bound, websocket clients
//! among them, and the `$SYS` CONNZ requests with a `state`. nats-server saves a closed
//! connection on its own goroutine, so each step waits (bounded) until the entry is listed.
//! The harness's readiness probe is a closed connection too (saved at some point after the
//! server is up): the tests look for their own cids and compare totals with the lists.
//! Passes against nats-server too (`NATS_SERVER_BIN`).

use super::system_account::{connect, request_json};
use serde_json::Value;
use std::time::{Duration, Instant};
use test_harness::monitoring::{get_json, get_response};
use test_harness::{free_port, RawClient, ServerOptions, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn monitored(config: &str) -> TestServer {
    TestServer::start(ServerOptions {
        monitoring: true,
        config: Some(config.to_string()),
        ..Default::default()
    })
}

/// `/connz` at `path` once `done` holds for it (bounded by [`WAIT`]).
fn connz_until(server: &TestServer, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let connz = get_json(server, path);
        if done(&connz) {
            return connz;
        }
        assert!(Instant::now() < deadline, "{path} never settled: {connz}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn closed_total(server: &TestServer) -> u64 {
    get_json(server, "/connz?state=closed")["total"]
        .as_u64()
        .unwrap_or(0)
}

/// Wait until the connection `cid` is listed as closed.
fn await_closed(server: &TestServer, cid: u64) -> Value {
    connz_until(server, "/connz?state=closed", |connz| {
        cids(connz).contains(&cid)
    })
}

fn client_id(client: &RawClient) -> u64 {
    let info: Value = serde_json::from_str(&client.info).expect("INFO json");
    info["client_id"].as_u64().expect("client_id")
}

fn cids(connz: &Value) -> Vec<u64> {
    connz["connections"]
        .as_array()
        .map(|list| list.iter().filter_map(|c| c["cid"].as_u64()).collect())
        .unwrap_or_default()
}

/// The listed cids among `ours`, in the listed order.
fn our_cids(connz: &Value, ours: &[u64]) -> Vec<u64> {
    cids(connz)
        .into_iter()
        .filter(|cid| ours.contains(cid))
        .collect()
}

/// The listed entry of `cid`.
fn entry(connz: &Value, cid: u64) -> Value {
    connz["connections"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["cid"] == cid))
        .cloned()
        .unwrap_or_else(|| panic!("cid {cid} not listed: {connz}"))
}

const USERS: &str = r#"
authorization { users: [ { user: bob, password: pw } ] }
"#;

#[test]
fn closed_connections_keep_their_reason_counters_and_subscriptions() {
    let server = monitored(USERS);
    let connect = r#"{"verbose":false,"name":"first","lang":"rust","version":"1.0","user":"bob","pass":"pw"}"#;

    let mut first = RawClient::connect_with(&server, connect);
    let first_cid = client_id(&first);
    first.send("SUB foo 1\r\nSUB bar q 2\r\nPUB foo 2\r\nhi\r\n");
    let lines = first.ping_collect();
    assert!(lines.iter().any(|line| line == "MSG foo 1 2"), "{lines:?}");
    drop(first);
    await_closed(&server, first_cid);

    let mut violator = RawClient::connect_with(&server, connect);
    let violator_cid = client_id(&violator);
    violator.send("FOO\r\n");
    violator
        .read_to_close()
        .expect("closed after the violation");
    await_closed(&server, violator_cid);

    let mut stranger = RawClient::connect(&server);
    let stranger_cid = client_id(&stranger);
    stranger.send(r#"CONNECT {"verbose":false,"user":"bob","pass":"wrong"}"#);
    stranger.send("\r\nPING\r\n");
    stranger.read_to_close().expect("closed after the failure");
    await_closed(&server, stranger_cid);

    let open_client = RawClient::connect_with(&server, connect);
    let open_cid = client_id(&open_client);

    let ours = [first_cid, violator_cid, stranger_cid, open_cid];
    let connz = get_json(&server, "/connz?state=closed");
    assert_eq!(
        our_cids(&connz, &ours),
        [first_cid, violator_cid, stranger_cid]
    );
    let closed = cids(&connz).len();
    assert_eq!(connz["total"], closed);
    let first = entry(&connz, first_cid);
    assert_eq!(first["reason"], "Client Closed", "{first}");
    assert_eq!(entry(&connz, violator_cid)["reason"], "Protocol Violation");
    assert_eq!(
        entry(&connz, stranger_cid)["reason"],
        "Authentication Failure"
    );
    assert!(first["stop"].is_string(), "{first}");
    assert!(first["stop"].as_str() >= first["start"].as_str(), "{first}");
    assert_eq!(first["kind"], "Client");
    assert_eq!(first["type"], "nats");
    assert_eq!(first["name"], "first");
    assert_eq!(first["lang"], "rust");
    assert_eq!(first["subscriptions"], 2);
    assert_eq!(first["in_msgs"], 1);
    assert_eq!(first["in_bytes"], 2);
    assert_eq!(first["out_msgs"], 1);
    assert_eq!(first["out_bytes"], 2);
    assert!(first.get("subscriptions_list").is_none(), "{first}");
    assert!(first.get("authorized_user").is_none(), "{first}");

    let connz = get_json(&server, "/connz?state=closed&subs=1");
    let mut subjects: Vec<String> = entry(&connz, first_cid)["subscriptions_list"]
        .as_array()
        .expect("subscriptions_list")
        .iter()
        .filter_map(|subject| subject.as_str().map(str::to_string))
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["bar", "foo"]);

    let connz = get_json(&server, "/connz?state=closed&subs=detail&auth=1");
    let first = entry(&connz, first_cid);
    assert_eq!(first["authorized_user"], "bob", "{first}");
    // A closed connection of `$G` carries no name tag.
    assert!(first.get("name_tag").is_none(), "{first}");
    let details = first["subscriptions_list_detail"]
        .as_array()
        .expect("details");
    let bar = details
        .iter()
        .find(|detail| detail["subject"] == "bar")
        .expect("bar");
    assert_eq!(bar["qgroup"], "q");
    assert_eq!(bar["sid"], "2");
    assert_eq!(bar["account"], "$G");
    assert_eq!(bar["cid"], first_cid);
    // A refused login keeps the user its CONNECT named.
    assert_eq!(entry(&connz, stranger_cid)["authorized_user"], "bob");

    // Open, closed and all.
    let connz = get_json(&server, "/connz");
    assert_eq!(cids(&connz), [open_cid]);
    let connz = get_json(&server, "/connz?state=all");
    assert_eq!(connz["total"], closed + 1);
    assert_eq!(our_cids(&connz, &ours), ours);
    let open = entry(&connz, open_cid);
    assert!(open.get("reason").is_none(), "{open}");
    assert!(open.get("stop").is_none(), "{open}");

    // The most recent stop first; reasons in alphabetical order.
    let connz = get_json(&server, "/connz?state=closed&sort=stop");
    assert_eq!(
        our_cids(&connz, &ours),
        [stranger_cid, violator_cid, first_cid]
    );
    let connz = get_json(&server, "/connz?state=closed&sort=reason");
    assert_eq!(
        our_cids(&connz, &ours),
        [stranger_cid, first_cid, violator_cid]
    );
    let response = get_response(&server, "/connz?state=all&sort=reason");
    assert_eq!(response.status, 400);
    assert_eq!(
        response.body,
        "sort by reason only valid on closed connections"
    );

    // One connection by cid: `limit` becomes 1; `total` counts the state's connections.
    let connz = get_json(&server, &format!("/connz?state=closed&cid={violator_cid}"));
    assert_eq!(cids(&connz), [violator_cid]);
    assert_eq!(connz["limit"], 1);
    assert_eq!(connz["total"], closed);
    let connz = get_json(&server, &format!("/connz?cid={violator_cid}"));
    assert_eq!(cids(&connz), Vec::<u64>::new());
    assert_eq!(connz["limit"], 1);

    // Pages over the closed ones.
    let connz = get_json(
        &server,
        &format!("/connz?state=closed&offset={}&limit=1", closed - 2),
    );
    assert_eq!(cids(&connz), [violator_cid]);
    drop(open_client);
}

#[test]
fn max_closed_clients_keeps_the_most_recent() {
    let server = monitored("max_closed_clients: 2\n");
    let mut closed = Vec::new();
    for round in 1..=3 {
        let client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
        closed.push(client_id(&client));
        drop(client);
        // The ring holds at most two: wait for this close by its cid.
        let cid = closed[closed.len() - 1];
        connz_until(&server, "/connz?state=closed", |connz| {
            cids(connz).contains(&cid)
        });
        assert!(closed_total(&server) <= 2, "round {round}");
    }
    let connz = get_json(&server, "/connz?state=closed");
    assert_eq!(cids(&connz), closed[1..]);
    assert_eq!(connz["total"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn websocket_connections_are_kept_as_websocket() {
    let port = free_port();
    let server = monitored(&format!(
        "websocket {{\n  listen: \"127.0.0.1:{port}\"\n  no_tls: true\n}}\n"
    ));
    super::websocket::wait_for_port(port);
    let client = tokio::time::timeout(WAIT, async_nats::connect(format!("ws://127.0.0.1:{port}")))
        .await
        .expect("connect in time")
        .expect("connect");
    let subscription = client.subscribe("ws.topic").await.expect("subscribe");
    client.flush().await.expect("flush");
    let connz = tokio::task::block_in_place(|| get_json(&server, "/connz"));
    assert_eq!(connz["connections"][0]["type"], "websocket", "{connz}");
    let cid = cids(&connz)[0];
    drop(subscription);
    drop(client);
    let connz = tokio::task::block_in_place(|| await_closed(&server, cid));
    let last = entry(&connz, cid);
    assert_eq!(last["type"], "websocket", "{last}");
    assert_eq!(last["reason"], "Client Closed", "{last}");
}

const SYSTEM: &str = r#"
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { users: [ { user: a, password: a } ] }
}
system_account: SYS
"#;

#[tokio::test(flavor = "multi_thread")]
async fn system_connz_requests_filter_by_state() {
    let server = monitored(SYSTEM);
    let system = connect(&server, "sys").await;
    // A raw client, so its subscription is still there when it goes.
    let mut user = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"user":"a","pass":"a","lang":"raw"}"#,
    );
    let user_cid = client_id(&user);
    user.send("SUB a.topic 1\r\n");
    user.ping_collect();
    drop(user);
    tokio::task::block_in_place(|| await_closed(&server, user_cid));

    // `state` is a number in the request: 0 open, 1 closed, 2 all.
    let closed = request_json(&system, "$SYS.REQ.SERVER.PING.CONNZ", r#"{"state":1}"#).await;
    let data = &closed["data"];
    assert!(cids(data).contains(&user_cid), "{closed}");
    assert_eq!(entry(data, user_cid)["reason"], "Client Closed");
    let open = request_json(&system, "$SYS.REQ.SERVER.PING.CONNZ", r#"{"state":0}"#).await;
    assert!(!cids(&open["data"]).contains(&user_cid), "{open}");
    let all = request_json(&system, "$SYS.REQ.SERVER.PING.CONNZ", r#"{"state":2}"#).await;
    assert!(cids(&all["data"]).contains(&user_cid), "{all}");
    assert!(cids(&all["data"]).len() > cids(data).len(), "{all}");

    let account = request_json(
        &system,
        "$SYS.REQ.ACCOUNT.A.CONNZ",
        r#"{"state":1,"subscriptions":true}"#,
    )
    .await;
    let data = &account["data"];
    assert_eq!(cids(data), [user_cid], "{account}");
    assert_eq!(
        entry(data, user_cid)["subscriptions_list"],
        serde_json::json!(["a.topic"])
    );
    let other = request_json(&system, "$SYS.REQ.ACCOUNT.SYS.CONNZ", r#"{"state":1}"#).await;
    assert_eq!(other["data"]["total"], 0, "{other}");
}

/// A `state` number nats-server's `ConnState` does not name (not 0-2) selects neither open nor
/// closed connections: an empty page, not an error.
#[tokio::test(flavor = "multi_thread")]
async fn system_connz_with_an_unknown_state_is_empty() {
    let server = monitored(SYSTEM);
    let system = connect(&server, "sys").await;
    let _user = RawClient::connect_with(&server, r#"{"verbose":false,"user":"a","pass":"a"}"#);
    for (subject, state) in [
        ("$SYS.REQ.SERVER.PING.CONNZ", 3),
        ("$SYS.REQ.SERVER.PING.CONNZ", -1),
        ("$SYS.REQ.ACCOUNT.A.CONNZ", 7),
    ] {
        let body = format!(r#"{{"state":{state}}}"#);
        let answer = request_json(&system, subject, &body).await;
        let data = &answer["data"];
        assert!(data["error"].is_null(), "{subject} {body}: {answer}");
        assert_eq!(
            data["connections"],
            serde_json::json!([]),
            "{subject} {body}: {answer}"
        );
        assert_eq!(data["num_connections"], 0, "{subject} {body}: {answer}");
        assert_eq!(data["total"], 0, "{subject} {body}: {answer}");
        assert_eq!(data["server_id"], answer["server"]["id"], "{answer}");
    }
    // The query form names its states: a number there is refused, as before.
    let refused = tokio::task::block_in_place(|| get_response(&server, "/connz?state=3"));
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.body, "Error decoding state for 3");
}

/// Without authorization `authorized_user` is the user CONNECT named (`[REDACTED]` for a
/// token), and the `user` filter finds it.
#[test]
fn authorized_user_is_the_connect_user_without_authorization() {
    let server = monitored("");
    let named = RawClient::connect_with(&server, r#"{"verbose":false,"user":"bob","pass":"x"}"#);
    let token = RawClient::connect_with(&server, r#"{"verbose":false,"auth_token":"secret"}"#);
    let connz = get_json(&server, "/connz?auth=1");
    assert_eq!(entry(&connz, client_id(&named))["authorized_user"], "bob");
    assert_eq!(
        entry(&connz, client_id(&token))["authorized_user"],
        "[REDACTED]"
    );
    let connz = get_json(&server, "/connz?user=bob");
    assert_eq!(cids(&connz), [client_id(&named)]);
}

/// A connection refused over `max_connections` is kept, with nats-server's reason.
#[test]
fn a_refused_connection_is_kept_with_its_reason() {
    let server = monitored("max_connections: 1\n");
    // The harness's readiness probe may still hold the one place.
    connz_until(&server, "/connz", |connz| connz["total"] == 0);
    let _open = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    let mut refused = RawClient::connect(&server);
    let refused_cid = client_id(&refused);
    let rest = refused.read_to_close().expect("closed after the refusal");
    assert!(rest.contains("maximum connections exceeded"), "{rest}");
    let connz = await_closed(&server, refused_cid);
    assert_eq!(
        entry(&connz, refused_cid)["reason"],
        "Maximum Connections Exceeded"
    );
}

//! Config reload of `accounts { }` and `mappings { }`, as nats-server's `reloadAuthorization`:
//! accounts are updated in place (exports, imports and mappings reach existing connections; a
//! removed stream import stops delivering, one added again reaches existing subscriptions),
//! new accounts admit their users, and a connection whose user was removed or moved to another
//! account is closed without an error (it reconnects into its new account). The same tests
//! pass against nats-server.

use super::reload::{await_log, rewrite_and_hangup};
use test_harness::{RawClient, ServerOptions, TestServer};

const BEFORE: &str = r#"
accounts {
  A { users [{user: a, password: a}, {user: m, password: m}], exports [{stream: "s.>"}] }
  B { users [{user: b, password: b}, {user: r, password: r}], imports [{stream: {account: A, subject: "s.>"}}] }
}
"#;

/// m moves to B, r is removed, B's import is dropped, A maps `x` to `y`, C is new.
const MOVED: &str = r#"
accounts {
  A { users [{user: a, password: a}], exports [{stream: "s.>"}], mappings { x: y } }
  B { users [{user: b, password: b}, {user: m, password: m}] }
  C { users [{user: c, password: c}] }
}
"#;

/// B imports again; C is removed.
const IMPORTED_AGAIN: &str = r#"
accounts {
  A { users [{user: a, password: a}], exports [{stream: "s.>"}], mappings { x: y } }
  B { users [{user: b, password: b}, {user: m, password: m}], imports [{stream: {account: A, subject: "s.>"}}] }
}
"#;

const LOADED: &str = "Reloaded server configuration";

fn connect_as(server: &TestServer, user: &str) -> RawClient {
    RawClient::connect_with(
        server,
        &format!(r#"{{"verbose":false,"user":"{user}","pass":"{user}"}}"#),
    )
}

/// Lines up to the PONG of a PING, without the server's own PINGs.
fn settle(client: &mut RawClient) -> Vec<String> {
    let mut lines = client.ping_collect();
    lines.retain(|line| line != "PING");
    lines
}

/// Closed by the server without an `-ERR` (nats-server's `ClientClosed`).
fn closed_quietly(client: &mut RawClient, who: &str) {
    let rest = client
        .read_to_close()
        .unwrap_or_else(|| panic!("{who} is still connected"));
    assert!(!rest.contains("-ERR"), "{who} saw {rest:?}");
}

#[test]
fn accounts_reload_moves_users_and_follows_imports_and_mappings() {
    let server = TestServer::start(ServerOptions {
        config: Some(BEFORE.into()),
        ..Default::default()
    });
    let mut a = connect_as(&server, "a");
    let mut m = connect_as(&server, "m");
    let mut b = connect_as(&server, "b");
    let mut r = connect_as(&server, "r");
    b.send("SUB s.> 1\r\n");
    assert_eq!(settle(&mut b), ["PONG"]);
    a.send("SUB y 9\r\nPUB s.1 2\r\nhi\r\n");
    assert_eq!(settle(&mut a), ["PONG"]);
    assert_eq!(settle(&mut b), ["MSG s.1 1 2", "hi", "PONG"]);

    rewrite_and_hangup(&server, MOVED);
    await_log(&server, "Reloaded: accounts", 1);
    await_log(&server, LOADED, 1);
    closed_quietly(&mut m, "m (moved to B)");
    closed_quietly(&mut r, "r (removed)");
    // b stays; its import is gone, so A's stream no longer reaches it. A's new mapping
    // applies to a's existing connection.
    assert_eq!(settle(&mut b), ["PONG"]);
    a.send("PUB s.2 2\r\nhi\r\nPUB x 2\r\nyo\r\n");
    assert_eq!(settle(&mut a), ["MSG y 9 2", "yo", "PONG"]);
    assert_eq!(settle(&mut b), ["PONG"]);
    // The new account admits its user; m reconnects into B.
    let mut c = connect_as(&server, "c");
    let mut m = connect_as(&server, "m");
    m.send("SUB t 3\r\n");
    assert_eq!(settle(&mut m), ["PONG"]);
    b.send("PUB t 2\r\nto\r\n");
    assert_eq!(settle(&mut b), ["PONG"]);
    assert_eq!(settle(&mut m), ["MSG t 3 2", "to", "PONG"]);

    rewrite_and_hangup(&server, IMPORTED_AGAIN);
    await_log(&server, LOADED, 2);
    closed_quietly(&mut c, "c (account removed)");
    // The import is back: b's existing subscription receives A's stream again.
    assert_eq!(settle(&mut b), ["PONG"]);
    a.send("PUB s.3 2\r\nhi\r\n");
    assert_eq!(settle(&mut a), ["PONG"]);
    assert_eq!(settle(&mut b), ["MSG s.3 1 2", "hi", "PONG"]);
    let mut refused = RawClient::connect(&server);
    refused.send("CONNECT {\"verbose\":false,\"user\":\"c\",\"pass\":\"c\"}\r\nPING\r\n");
    assert_eq!(
        refused.read_line().as_deref(),
        Some("-ERR 'Authorization Violation'")
    );
}

#[test]
fn top_level_mappings_reload_for_existing_connections() {
    let server = TestServer::with_config("max_payload: 1048576\n");
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.send("SUB x 1\r\nSUB y 2\r\nSUB z 3\r\n");
    assert_eq!(settle(&mut client), ["PONG"]);

    rewrite_and_hangup(&server, "max_payload: 1048576\nmappings { x: y }\n");
    await_log(&server, LOADED, 1);
    assert_eq!(settle(&mut client), ["PONG"]);
    client.send("PUB x 2\r\nhi\r\n");
    assert_eq!(settle(&mut client), ["MSG y 2 2", "hi", "PONG"]);

    rewrite_and_hangup(&server, "max_payload: 1048576\nmappings { x: z }\n");
    await_log(&server, LOADED, 2);
    assert_eq!(settle(&mut client), ["PONG"]);
    client.send("PUB x 2\r\nhi\r\n");
    assert_eq!(settle(&mut client), ["MSG z 3 2", "hi", "PONG"]);

    // nats-server keeps the global account's mappings when the reloaded file has none left
    // (its reload only touches `$G` when the file still configures it); rnats drops them
    // (docs/parity.md, "signals").
    if test_harness::is_reference() {
        return;
    }
    rewrite_and_hangup(&server, "max_payload: 1048576\n");
    await_log(&server, LOADED, 3);
    assert_eq!(settle(&mut client), ["PONG"]);
    client.send("PUB x 2\r\nhi\r\n");
    assert_eq!(settle(&mut client), ["MSG x 1 2", "hi", "PONG"]);
}

/// `$JS.API.<what>` asked by `client`: the reply's JSON.
pub(super) fn js_request(client: &mut RawClient, what: &str, body: &str) -> serde_json::Value {
    client.send(&format!(
        "SUB _INBOX.js 77\r\nUNSUB 77 1\r\nPUB $JS.API.{what} _INBOX.js {}\r\n{body}\r\n",
        body.len()
    ));
    let (head, payload) = next_message(client).expect("a reply");
    assert!(head.starts_with("MSG _INBOX.js 77 "), "{head}");
    serde_json::from_slice(&payload).expect("json reply")
}

/// The next MSG/HMSG line (the server's PINGs skipped) and its payload; `None` when nothing
/// comes within the client's timeout.
pub(super) fn next_message(client: &mut RawClient) -> Option<(String, Vec<u8>)> {
    let head = loop {
        let line = client.read_line()?;
        if line != "PING" {
            break line;
        }
    };
    let size: usize = head
        .rsplit(' ')
        .next()
        .and_then(|size| size.parse().ok())
        .expect("size");
    let payload = client.read_payload(size).expect("payload");
    Some((head, payload))
}

/// Wait (bounded) until the stream `KEPT` is served again (while rnats reopens the account's
/// streams its `$JS.API` may briefly have no responder).
fn await_kept_stream(client: &mut RawClient) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        client.send(
            "SUB _INBOX.kept 79\r\nUNSUB 79 1\r\nPUB $JS.API.STREAM.NAMES _INBOX.kept 0\r\n\r\n",
        );
        let (head, payload) = next_message(client).expect("a reply");
        let names: Option<serde_json::Value> = head
            .starts_with("MSG ")
            .then(|| serde_json::from_slice(&payload).expect("json reply"));
        if names
            .as_ref()
            .is_some_and(|names| names["streams"] == serde_json::json!(["KEPT"]))
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{head} {}",
            String::from_utf8_lossy(&payload)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Accounts A (JetStream) and B (JetStream when `b_has_jetstream`); `extra`: more of the
/// `jetstream { }` block.
pub(super) fn jetstream_accounts(
    store: &std::path::Path,
    extra: &str,
    b_has_jetstream: bool,
) -> String {
    let b = if b_has_jetstream {
        ", jetstream: enabled"
    } else {
        ""
    };
    format!(
        "jetstream {{ store_dir: {:?}{extra} }}\naccounts {{\n  A {{ users [{{user: a, password: a}}], jetstream: enabled }}\n  B {{ users [{{user: b, password: b}}]{b} }}\n}}\n",
        store.display().to_string()
    )
}

#[test]
fn an_accounts_jetstream_follows_the_reloaded_file() {
    let store = tempfile::tempdir().expect("store dir");
    let server = TestServer::with_config(&jetstream_accounts(store.path(), "", false));
    let mut b = connect_as(&server, "b");
    let refused = js_request(&mut b, "INFO", "");
    assert_eq!(refused["error"]["err_code"], 10039, "{refused}");

    rewrite_and_hangup(&server, &jetstream_accounts(store.path(), "", true));
    await_log(&server, LOADED, 1);
    let served = js_request(&mut b, "INFO", "");
    assert!(served.get("error").is_none(), "{served}");
    let created = js_request(
        &mut b,
        "STREAM.CREATE.KEPT",
        r#"{"name":"KEPT","subjects":["kept"],"storage":"file"}"#,
    );
    assert!(created.get("error").is_none(), "{created}");

    rewrite_and_hangup(&server, &jetstream_accounts(store.path(), "", false));
    await_log(&server, LOADED, 2);
    let refused = js_request(&mut b, "INFO", "");
    assert_eq!(refused["error"]["err_code"], 10039, "{refused}");

    // Enabled again: the stream's files were kept and it is served again.
    rewrite_and_hangup(&server, &jetstream_accounts(store.path(), "", true));
    await_log(&server, LOADED, 3);
    await_kept_stream(&mut b);
}

/// Whether `$JS.API.INFO` is answered with account info (`false`: refused with 10039, a
/// no-responders status, or, as nats-server once JetStream is off, no answer in a second).
pub(super) fn jetstream_answers(client: &mut RawClient) -> bool {
    client.send("SUB _INBOX.on 78\r\nUNSUB 78 1\r\nPUB $JS.API.INFO _INBOX.on 0\r\n\r\n");
    client.timeout = std::time::Duration::from_secs(1);
    let reply = next_message(client);
    client.timeout = std::time::Duration::from_secs(5);
    let Some((head, payload)) = reply else {
        client.send("UNSUB 78\r\n");
        return false;
    };
    if head.starts_with("HMSG ") {
        let text = String::from_utf8_lossy(&payload);
        assert!(text.starts_with("NATS/1.0 503"), "{head} {text}");
        return false;
    }
    let reply: serde_json::Value = serde_json::from_slice(&payload).expect("json reply");
    match reply.get("error") {
        None => true,
        Some(error) => {
            assert_eq!(error["err_code"], 10039, "{reply}");
            false
        }
    }
}

#[test]
fn jetstream_turned_off_and_on_by_reload_keeps_its_streams() {
    let store = tempfile::tempdir().expect("store dir");
    let on = format!(
        "jetstream {{ store_dir: {:?}, max_mem: 64M }}\n",
        store.path().display().to_string()
    );
    let server = TestServer::with_config(&on);
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"headers":true,"no_responders":true}"#,
    );
    let created = js_request(
        &mut client,
        "STREAM.CREATE.KEPT",
        r#"{"name":"KEPT","subjects":["kept"],"storage":"file"}"#,
    );
    assert!(created.get("error").is_none(), "{created}");

    // While on: a lower limit and another directory are refused in nats-server's words.
    rewrite_and_hangup(&server, &on.replace("64M", "32M"));
    await_log(
        &server,
        "config reload not supported for decreasing jetstream max memory and store",
        1,
    );
    rewrite_and_hangup(
        &server,
        &format!(
            "jetstream {{ store_dir: {:?}, max_mem: 64M }}\n",
            "/tmp/elsewhere"
        ),
    );
    await_log(
        &server,
        "config reload not supported for jetstream storage directory",
        1,
    );
    assert!(jetstream_answers(&mut client));

    rewrite_and_hangup(&server, "max_payload: 1048576\n");
    await_log(&server, "Reloaded: JetStream", 1);
    await_log(&server, LOADED, 1);
    assert!(!jetstream_answers(&mut client));

    rewrite_and_hangup(&server, &on);
    await_log(&server, LOADED, 2);
    await_kept_stream(&mut client);
}

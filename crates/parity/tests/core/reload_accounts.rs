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

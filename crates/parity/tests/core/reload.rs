//! Config reload on SIGHUP, as nats-server's `Reload`: the file is read again; a change it
//! cannot apply (or a file that does not parse) is refused whole with its words in the log
//! and the running configuration stays; authorization changes reach existing connections
//! (credentials no longer accepted: `Authorization Violation` and closed; subscriptions the
//! new permissions deny: removed with a `-ERR`); `/varz` `config_load_time` moves. The same
//! tests pass against nats-server.

use std::time::{Duration, Instant};
use test_harness::monitoring::get_json;
use test_harness::{path_in, RawClient, ServerOptions, TestServer};

const USERS: &str = r#"
authorization {
  users = [
    {user: a, password: p1, permissions: {publish: "foo", subscribe: ["foo", "bar"]}}
    {user: b, password: q1}
  ]
}
"#;

pub(super) fn rewrite_and_hangup(server: &TestServer, config: &str) {
    std::fs::write(path_in(server, "server.conf"), config).expect("rewrite config");
    let pid = server.pid().expect("pid");
    // SAFETY: kill only sends a signal to the child this test started.
    let sent = unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) };
    assert_eq!(sent, 0, "SIGHUP");
}

/// Wait (bounded) until the log holds `needle` `count` times.
pub(super) fn await_log(server: &TestServer, needle: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = server.log();
        if log.matches(needle).count() >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn connect_as(server: &TestServer, user: &str, password: &str) -> RawClient {
    RawClient::connect_with(
        server,
        &format!(r#"{{"verbose":false,"user":"{user}","pass":"{password}"}}"#),
    )
}

/// A CONNECT with these credentials: `None` when accepted, else the `-ERR` line.
fn refusal_for(server: &TestServer, user: &str, password: &str) -> Option<String> {
    let mut client = RawClient::connect(server);
    client.send(&format!(
        "CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{password}\"}}\r\nPING\r\n"
    ));
    let line = client.read_line().expect("an answer to CONNECT");
    (line != "PONG").then_some(line)
}

fn config_load_time(server: &TestServer) -> String {
    get_json(server, "/varz")["config_load_time"]
        .as_str()
        .expect("config_load_time")
        .to_string()
}

#[test]
fn changed_password_and_permissions_reach_existing_connections() {
    let server = TestServer::start(ServerOptions {
        config: Some(USERS.into()),
        monitoring: true,
        ..Default::default()
    });
    let loaded_at_start = config_load_time(&server);
    let mut first = connect_as(&server, "a", "p1");
    first.send("SUB foo 1\r\nSUB bar 2\r\n");
    assert_eq!(first.ping_collect(), ["PONG"]);
    let mut second = connect_as(&server, "b", "q1");
    second.send("SUB foo 1\r\n");
    assert_eq!(second.ping_collect(), ["PONG"]);

    let changed = USERS
        .replace(r#"["foo", "bar"]"#, r#"["foo"]"#)
        .replace("q1", "q2");
    rewrite_and_hangup(&server, &changed);

    // b's password is gone: told and closed.
    let rest = second.read_to_close().expect("b is closed");
    assert!(
        rest.contains("-ERR 'Authorization Violation'"),
        "b saw {rest:?}"
    );
    // a stays, without the subscription its permissions no longer allow.
    first.expect_line(r#"-ERR 'Permissions Violation for Subscription to "bar" (sid "2")'"#);
    first.send("PUB foo 2\r\nhi\r\n");
    assert_eq!(first.ping_collect(), ["MSG foo 1 2", "hi", "PONG"]);
    first.send("PUB bar 2\r\nhi\r\n");
    assert_eq!(
        first.ping_collect(),
        [
            r#"-ERR 'Permissions Violation for Publish to "bar"'"#,
            "PONG"
        ]
    );

    // New connections use the new passwords.
    assert_eq!(
        refusal_for(&server, "b", "q1").as_deref(),
        Some("-ERR 'Authorization Violation'")
    );
    assert_eq!(refusal_for(&server, "b", "q2"), None);
    assert_ne!(config_load_time(&server), loaded_at_start);
}

#[test]
fn refused_and_unreadable_reloads_keep_the_running_configuration() {
    let config = format!("server_name: one\n{USERS}");
    let server = TestServer::with_config(&config);
    let failed = "Failed to reload server configuration: ";

    let renamed = config
        .replace("server_name: one", "server_name: two")
        .replace("q1", "q2");
    rewrite_and_hangup(&server, &renamed);
    await_log(
        &server,
        "Failed to reload server configuration: config reload not supported for ServerName: old=one, new=two",
        1,
    );
    assert_eq!(
        refusal_for(&server, "b", "q1"),
        None,
        "the old password stays"
    );
    assert!(refusal_for(&server, "b", "q2").is_some());

    rewrite_and_hangup(&server, &format!("{config}\nbad {{{{{{\n"));
    await_log(&server, failed, 2);
    assert_eq!(
        refusal_for(&server, "b", "q1"),
        None,
        "still running as before"
    );
}

#[test]
fn logging_and_limits_reload_for_new_connections() {
    let server = TestServer::with_config("debug: false\nmax_payload: 1048576\n");
    rewrite_and_hangup(&server, "debug: true\nmax_payload: 2048\n");
    await_log(&server, "Reloaded: debug = true", 1);
    await_log(&server, "Reloaded: max_payload = 2048", 1);
    await_log(&server, "Reloaded server configuration", 1);

    let client = RawClient::connect(&server);
    assert!(
        client.info.contains(r#""max_payload":2048"#),
        "INFO {}",
        client.info
    );
    await_log(&server, "Client connection created", 1);
    assert!(server.log().contains("[DBG]"));
}

#[test]
fn system_account_reload_request_answers_with_the_outcome() {
    let config = "accounts { SYS { users [{user: sys, password: s}] } }\nsystem_account: SYS\n";
    let server = TestServer::with_config(config);
    let mut client = connect_as(&server, "sys", "s");
    let info: serde_json::Value = serde_json::from_str(&client.info).expect("INFO json");
    let id = info["server_id"].as_str().expect("server_id").to_string();
    let mut request = |number: usize| -> serde_json::Value {
        client.send(&format!(
            "SUB _INBOX.{number} {number}\r\nPUB $SYS.REQ.SERVER.{id}.RELOAD _INBOX.{number} 0\r\n\r\n"
        ));
        let head = client.read_line().expect("MSG line");
        assert!(
            head.starts_with(&format!("MSG _INBOX.{number} {number} ")),
            "{head}"
        );
        let body = client.read_line().expect("payload");
        serde_json::from_str(&body).expect("reply json")
    };
    let accepted = request(1);
    assert_eq!(accepted["server"]["id"], id.as_str());
    assert!(accepted.get("error").is_none(), "{accepted}");
    await_log(&server, "Reloaded server configuration", 1);

    std::fs::write(
        path_in(&server, "server.conf"),
        format!("server_name: x\n{config}"),
    )
    .expect("rewrite config");
    let refused = request(2);
    assert_eq!(refused["error"]["code"], 500);
    assert_eq!(
        refused["error"]["description"],
        "config reload not supported for ServerName: old=, new=x"
    );
}

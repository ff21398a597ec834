//! `nats stream add` in a pseudo-terminal: the remaining questions are asked in natscli's
//! order, and pressing Enter at each accepts natscli's defaults.

mod common;

use std::process::Command;

use test_harness::TestServer;

#[test]
fn stream_add_asks_in_natscli_order_and_enter_takes_defaults() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(test_harness::cli_binary());
    command.args([
        "-s",
        &server.url(),
        "stream",
        "add",
        "ORDERS",
        "--subjects",
        "orders.>",
        "--storage",
        "file",
        "--retention",
        "limits",
    ]);
    common::isolate(&mut command, home.path());
    command.env("TERM", "xterm");
    let mut session = rexpect::session::spawn_command(command, Some(15_000)).expect("spawn in pty");
    let prompts = [
        "Replication",
        "Discard Policy",
        "Stream Messages Limit",
        "Per Subject Messages Limit",
        "Total Stream Size",
        "Message TTL",
        "Max Message Size",
        "Duplicate tracking time window",
        "Allow message Roll-ups",
        "Allow message deletion",
        "Allow purging subjects or the entire stream",
    ];
    for prompt in prompts {
        session
            .exp_string(prompt)
            .unwrap_or_else(|e| panic!("prompt {prompt:?} not shown: {e}"));
        session.send("\r").expect("send enter");
        session.flush().expect("flush");
    }
    session
        .exp_string("Stream ORDERS was created")
        .expect("stream created");
    let rest = session.exp_eof().expect("exits");
    assert!(rest.contains("Duplicate Window: 2m0s"), "{rest}");
    assert!(rest.contains("Allows Msg Delete: true"), "{rest}");
    assert!(rest.contains("Allows Purge: true"), "{rest}");
    assert!(rest.contains("Allows Rollups: false"), "{rest}");
    assert!(rest.contains("Maximum Messages: unlimited"), "{rest}");

    let info = common::nats(
        &server,
        home.path(),
        &["stream", "info", "ORDERS", "--json"],
    );
    info.ok();
    let value: serde_json::Value = serde_json::from_str(&info.stdout).expect("json");
    assert_eq!(value["config"]["discard"], "old");
    assert_eq!(value["config"]["num_replicas"], 1);
}

#[test]
fn consumer_add_asks_in_natscli_order() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    common::add_stream(&server, home.path(), "ORDERS", "orders.>");
    let mut command = Command::new(test_harness::cli_binary());
    command.args(["-s", &server.url(), "consumer", "add", "ORDERS"]);
    common::isolate(&mut command, home.path());
    command.env("TERM", "xterm");
    let mut session = rexpect::session::spawn_command(command, Some(15_000)).expect("spawn in pty");
    let answers = [
        ("Consumer name", "PROC\r"),
        ("Delivery target (empty for Pull Consumers)", "\r"),
        (
            "Start policy (all, new, last, subject, 1h, msg sequence)",
            "\r",
        ),
        ("Acknowledgment policy", "\r"),
        ("Replay policy", "\r"),
        ("Filter Stream by subjects (blank for all)", "\r"),
        ("Maximum Allowed Deliveries", "\r"),
        ("Maximum Acknowledgments Pending", "\r"),
        ("Deliver headers only without bodies", "\r"),
        ("Add a Retry Backoff Policy", "\r"),
    ];
    for (prompt, answer) in answers {
        session
            .exp_string(prompt)
            .unwrap_or_else(|e| panic!("prompt {prompt:?} not shown: {e}"));
        session.send(answer).expect("send answer");
        session.flush().expect("flush");
    }
    session
        .exp_string("Information for Consumer ORDERS > PROC")
        .expect("consumer created");
    let rest = session.exp_eof().expect("exits");
    assert!(rest.contains("Pull Mode: true"), "{rest}");
    assert!(rest.contains("Ack Policy: Explicit"), "{rest}");
    assert!(rest.contains("Deliver Policy: All"), "{rest}");
}

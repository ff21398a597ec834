//! `nats stream add` in a pseudo-terminal: the remaining questions are asked in natscli's
//! order, and pressing Enter at each accepts natscli's defaults.

use test_harness::cli;

use test_harness::TestServer;

#[test]
fn stream_add_asks_in_natscli_order_and_enter_takes_defaults() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let mut session = cli::spawn_in_terminal(
        &server,
        home.path(),
        &[
            "stream",
            "add",
            "ORDERS",
            "--subjects",
            "orders.>",
            "--storage",
            "file",
            "--retention",
            "limits",
        ],
    );
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
    let answers: Vec<(&str, &str)> = prompts.iter().map(|prompt| (*prompt, "")).collect();
    cli::answer_prompts(&mut session, &answers);
    session
        .exp_string("Stream ORDERS was created")
        .expect("stream created");
    let rest = session.exp_eof().expect("exits");
    assert!(rest.contains("Duplicate Window: 2m0s"), "{rest}");
    assert!(rest.contains("Allows Msg Delete: true"), "{rest}");
    assert!(rest.contains("Allows Purge: true"), "{rest}");
    assert!(rest.contains("Allows Rollups: false"), "{rest}");
    assert!(rest.contains("Maximum Messages: unlimited"), "{rest}");

    let info = cli::nats(
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
    cli::add_stream(&server, home.path(), "ORDERS", "orders.>");
    let mut session = cli::spawn_in_terminal(&server, home.path(), &["consumer", "add", "ORDERS"]);
    cli::answer_prompts(
        &mut session,
        &[
            ("Consumer name", "PROC"),
            ("Delivery target (empty for Pull Consumers)", ""),
            (
                "Start policy (all, new, last, subject, 1h, msg sequence)",
                "",
            ),
            ("Acknowledgment policy", ""),
            ("Replay policy", ""),
            ("Filter Stream by subjects (blank for all)", ""),
            ("Maximum Allowed Deliveries", ""),
            ("Maximum Acknowledgments Pending", ""),
            ("Deliver headers only without bodies", ""),
            ("Add a Retry Backoff Policy", ""),
        ],
    );
    session
        .exp_string("Information for Consumer ORDERS > PROC")
        .expect("consumer created");
    let rest = session.exp_eof().expect("exits");
    assert!(rest.contains("Pull Mode: true"), "{rest}");
    assert!(rest.contains("Ack Policy: Explicit"), "{rest}");
    assert!(rest.contains("Deliver Policy: All"), "{rest}");
}

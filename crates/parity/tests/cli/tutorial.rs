//! The seed tutorial, command for command, against a JetStream server: stream add,
//! pub, stream view, stream info, stream report; plus the usual errors of those commands.

use test_harness::cli;

use test_harness::cli::{field, has_line_with, nats};
use test_harness::TestServer;

#[test]
fn tutorial_commands_verbatim() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();

    let add = nats(
        &server,
        home,
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
    add.ok();
    assert!(
        add.stdout.contains("Stream ORDERS was created"),
        "{}",
        add.stdout
    );
    assert_eq!(field(&add.stdout, "Subjects"), Some("orders.>"));
    assert_eq!(field(&add.stdout, "Messages"), Some("0"));

    let publish = nats(&server, home, &["pub", "orders.created", "pesanan-1"]);
    publish.ok();
    assert!(
        publish
            .stderr
            .contains("Published 9 bytes to \"orders.created\""),
        "{}",
        publish.stderr
    );

    let view = nats(&server, home, &["stream", "view", "ORDERS"]);
    view.ok();
    assert!(
        has_line_with(&view.stdout, &["[1] Subject: orders.created Received: "]),
        "{}",
        view.stdout
    );
    assert!(
        view.stdout.lines().any(|l| l == "pesanan-1"),
        "{}",
        view.stdout
    );
    assert!(
        view.stderr.contains("Reached apparent end of data"),
        "{}",
        view.stderr
    );

    let info = nats(&server, home, &["stream", "info", "ORDERS"]);
    info.ok();
    let text = &info.stdout;
    assert!(
        text.starts_with("Information for Stream ORDERS created "),
        "{text}"
    );
    assert_eq!(field(text, "Subjects"), Some("orders.>"));
    assert_eq!(field(text, "Replicas"), Some("1"));
    assert_eq!(field(text, "Storage"), Some("File"));
    assert_eq!(field(text, "Retention"), Some("Limits"));
    assert_eq!(field(text, "Discard Policy"), Some("Old"));
    assert_eq!(field(text, "Duplicate Window"), Some("2m0s"));
    assert_eq!(field(text, "Maximum Messages"), Some("unlimited"));
    assert_eq!(field(text, "Messages"), Some("1"));
    assert!(
        field(text, "Bytes").is_some_and(|b| b.ends_with(" B")),
        "{text}"
    );
    assert!(
        field(text, "First Sequence").is_some_and(|v| v.starts_with("1 @ ")),
        "{text}"
    );
    assert!(
        field(text, "Last Sequence").is_some_and(|v| v.starts_with("1 @ ")),
        "{text}"
    );
    assert_eq!(field(text, "Active Consumers"), Some("0"));
    for section in ["Options:", "Limits:", "State:"] {
        assert!(
            text.lines().any(|l| l == section),
            "missing {section} in {text}"
        );
    }

    let report = nats(&server, home, &["stream", "report"]);
    report.ok();
    let text = &report.stdout;
    assert!(text.starts_with("Obtaining Stream stats"), "{text}");
    assert!(has_line_with(text, &["Stream Report"]), "{text}");
    assert!(
        has_line_with(
            text,
            &["│ Stream │ Storage │ Placement │ Consumers │ Messages │ Bytes │ Lost │ Deleted │"]
        ),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("│ ORDERS "))
        .unwrap_or_else(|| panic!("no ORDERS row in {text}"));
    let cells: Vec<&str> = row.split('│').map(str::trim).collect();
    assert_eq!(&cells[1..3], &["ORDERS", "File"], "{row}");
    assert_eq!(cells[4], "0", "consumers in {row}");
    assert_eq!(cells[5], "1", "messages in {row}");
    assert_eq!(cells[7], "0", "lost in {row}");
}

#[test]
fn stream_add_with_defaults_accepts_every_default() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let add = nats(
        &server,
        home.path(),
        &[
            "stream",
            "add",
            "EVENTS",
            "--subjects",
            "events.*",
            "--defaults",
            "--json",
        ],
    );
    add.ok();
    let info: serde_json::Value = serde_json::from_str(&add.stdout).expect("json stream info");
    let config = &info["config"];
    assert_eq!(config["name"], "EVENTS");
    assert_eq!(config["subjects"], serde_json::json!(["events.*"]));
    assert_eq!(config["storage"], "file");
    assert_eq!(config["retention"], "limits");
    assert_eq!(config["discard"], "old");
    assert_eq!(config["num_replicas"], 1);
    assert_eq!(config["max_msgs"], -1);
    assert_eq!(config["max_bytes"], -1);
    assert_eq!(config["max_msgs_per_subject"], -1);
    assert_eq!(config["duplicate_window"], 120_000_000_000i64);
    assert_eq!(config["allow_rollup_hdrs"], false);
    assert_eq!(config["deny_delete"], false);
    assert_eq!(config["deny_purge"], false);
}

#[test]
fn missing_stream_is_a_one_line_error() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    for args in [
        vec!["stream", "info", "NOPE"],
        vec!["stream", "view", "NOPE"],
        vec!["stream", "purge", "NOPE", "-f"],
        vec!["stream", "rm", "NOPE", "-f"],
    ] {
        let run = nats(&server, home.path(), &args);
        assert_ne!(run.status, 0, "{args:?} should fail");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(lines[0].starts_with("nats: error: "), "{}", run.stderr);
        assert!(lines[0].contains("stream not found"), "{}", run.stderr);
    }
}

#[test]
fn stream_report_without_streams() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let report = nats(&server, home.path(), &["stream", "report"]);
    report.ok();
    assert!(
        report.stdout.contains("No Streams defined"),
        "{}",
        report.stdout
    );
    let names = nats(&server, home.path(), &["stream", "ls", "--names"]);
    names.ok();
    assert_eq!(names.stdout, "");
    let table = nats(&server, home.path(), &["stream", "ls"]);
    table.ok();
    assert!(
        table.stdout.contains("No Streams defined"),
        "{}",
        table.stdout
    );
}

#[test]
fn unreachable_server_fails_fast_with_one_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let command =
        cli::unreachable_server_command(home.path(), &["--timeout", "2s", "stream", "ls"]);
    let run = cli::run(command);
    assert_ne!(run.status, 0);
    assert!(run.stderr.starts_with("nats: error: "), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn stream_config_file_round_trip() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let file = home.path().join("orders.json");
    let file_text = file.display().to_string();
    nats(
        &server,
        home.path(),
        &[
            "stream",
            "add",
            "ORDERS",
            "--subjects",
            "orders.>",
            "--max-msgs",
            "10",
            "--defaults",
            "--output",
            &file_text,
        ],
    )
    .ok();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("saved config")).expect("json");
    assert_eq!(saved["name"], "ORDERS");
    assert_eq!(saved["max_msgs"], 10);
    let listed = nats(&server, home.path(), &["stream", "ls", "--names"]);
    assert_eq!(
        listed.stdout.trim(),
        "",
        "--output must not create the stream"
    );

    let created = nats(
        &server,
        home.path(),
        &["stream", "add", "COPY", "--config", &file_text],
    );
    created.ok();
    assert!(
        created.stdout.contains("Stream COPY was created"),
        "{}",
        created.stdout
    );
    assert_eq!(field(&created.stdout, "Maximum Messages"), Some("10"));
    assert_eq!(field(&created.stdout, "Subjects"), Some("orders.>"));
}

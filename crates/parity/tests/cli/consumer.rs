//! `nats consumer ...` and the rest of `nats stream ...` on a stream with messages:
//! consumer add/info/ls/next/report/rm, stream get/subjects/purge/copy/edit/rm/ls.

use test_harness::cli;

use test_harness::cli::{field, has_line_with, nats};
use test_harness::TestServer;

#[test]
fn consumer_lifecycle() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::add_stream(&server, home, "ORDERS", "orders.>");
    for body in ["one", "two"] {
        nats(&server, home, &["pub", "orders.new", body]).ok();
    }

    let add = nats(
        &server,
        home,
        &["consumer", "add", "ORDERS", "PROC", "--pull", "--defaults"],
    );
    add.ok();
    assert!(
        add.stdout
            .starts_with("Information for Consumer ORDERS > PROC created "),
        "{}",
        add.stdout
    );
    assert_eq!(field(&add.stdout, "Pull Mode"), Some("true"));
    assert_eq!(field(&add.stdout, "Ack Policy"), Some("Explicit"));
    assert_eq!(field(&add.stdout, "Deliver Policy"), Some("All"));
    assert_eq!(field(&add.stdout, "Unprocessed Messages"), Some("2"));

    let next = nats(&server, home, &["consumer", "next", "ORDERS", "PROC"]);
    next.ok();
    assert!(
        has_line_with(
            &next.stdout,
            &["subj: orders.new / tries: 1 / cons seq: 1 / str seq: 1 / pending: 1"]
        ),
        "{}",
        next.stdout
    );
    assert!(next.stdout.lines().any(|l| l == "one"), "{}", next.stdout);
    assert!(
        next.stdout.contains("Acknowledged message"),
        "{}",
        next.stdout
    );

    let info = nats(&server, home, &["consumer", "info", "ORDERS", "PROC"]);
    info.ok();
    assert_eq!(field(&info.stdout, "Unprocessed Messages"), Some("1"));
    assert!(
        field(&info.stdout, "Last Delivered Message")
            .is_some_and(|v| v.starts_with("Consumer sequence: 1 Stream sequence: 1")),
        "{}",
        info.stdout
    );

    let json = nats(
        &server,
        home,
        &["consumer", "info", "ORDERS", "PROC", "--json"],
    );
    json.ok();
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(value["stream_name"], "ORDERS");
    assert_eq!(value["config"]["durable_name"], "PROC");
    assert_eq!(value["num_pending"], 1);

    let ls = nats(&server, home, &["consumer", "ls", "ORDERS"]);
    ls.ok();
    assert!(
        ls.stdout.lines().any(|l| l.starts_with("│ PROC ")),
        "{}",
        ls.stdout
    );
    let names = nats(&server, home, &["consumer", "ls", "ORDERS", "--names"]);
    assert_eq!(names.stdout.trim(), "PROC");

    let report = nats(&server, home, &["consumer", "report", "ORDERS"]);
    report.ok();
    assert!(
        report
            .stdout
            .contains("Consumer report for ORDERS with 1 consumers"),
        "{}",
        report.stdout
    );
    let row = report
        .stdout
        .lines()
        .find(|l| l.starts_with("│ PROC "))
        .expect("row");
    let cells: Vec<&str> = row.split('│').map(str::trim).collect();
    assert_eq!(&cells[1..4], &["PROC", "Pull", "Explicit"], "{row}");

    let stream_info = nats(&server, home, &["stream", "info", "ORDERS"]);
    assert_eq!(field(&stream_info.stdout, "Active Consumers"), Some("1"));

    nats(&server, home, &["consumer", "rm", "ORDERS", "PROC", "-f"]).ok();
    let gone = nats(&server, home, &["consumer", "info", "ORDERS", "PROC"]);
    assert_ne!(gone.status, 0);
    assert!(gone.stderr.starts_with("nats: error: "), "{}", gone.stderr);
    assert!(
        gone.stderr.contains("consumer not found"),
        "{}",
        gone.stderr
    );

    let ordered = nats(
        &server,
        home,
        &["sub", "--stream", "ORDERS", "--count", "2"],
    );
    ordered.ok();
    assert!(
        ordered.stdout.contains(
            "[#1] Received JetStream message: stream: ORDERS seq: 1 / pending: 1 / subject: orders.new / time: "
        ),
        "{}",
        ordered.stdout
    );
    assert!(
        ordered.stdout.lines().any(|l| l == "two"),
        "{}",
        ordered.stdout
    );
}

#[test]
fn consumer_on_missing_stream_fails() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let run = nats(
        &server,
        home.path(),
        &["consumer", "add", "NOPE", "C", "--pull", "--defaults"],
    );
    assert_ne!(run.status, 0);
    assert!(run.stderr.starts_with("nats: error: "), "{}", run.stderr);
    assert!(run.stderr.contains("stream not found"), "{}", run.stderr);
}

#[test]
fn stream_get_subjects_purge_copy_edit_and_remove() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::add_stream(&server, home, "ORDERS", "orders.*");
    nats(&server, home, &["pub", "orders.a", "first"]).ok();
    nats(
        &server,
        home,
        &["pub", "orders.b", "second", "-H", "Kind:test"],
    )
    .ok();
    nats(&server, home, &["pub", "orders.a", "third"]).ok();

    let get = nats(&server, home, &["stream", "get", "ORDERS", "2"]);
    get.ok();
    assert!(
        get.stdout.starts_with("Item: ORDERS#2 received "),
        "{}",
        get.stdout
    );
    assert!(get.stdout.contains("on Subject orders.b"), "{}", get.stdout);
    assert!(get.stdout.contains("  Kind: test"), "{}", get.stdout);
    assert!(get.stdout.lines().any(|l| l == "second"), "{}", get.stdout);
    let last = nats(
        &server,
        home,
        &["stream", "get", "ORDERS", "--last-for", "orders.a"],
    );
    assert!(last.stdout.lines().any(|l| l == "third"), "{}", last.stdout);

    let view = nats(
        &server,
        home,
        &["stream", "view", "ORDERS", "--subject", "orders.b"],
    );
    view.ok();
    assert!(
        view.stdout.contains("[2] Subject: orders.b"),
        "{}",
        view.stdout
    );
    assert!(view.stdout.contains("  Kind: test"), "{}", view.stdout);
    assert!(!view.stdout.contains("first"), "{}", view.stdout);

    let subjects = nats(&server, home, &["stream", "subjects", "ORDERS"]);
    subjects.ok();
    assert!(
        subjects.stdout.contains("2 Subjects in stream ORDERS"),
        "{}",
        subjects.stdout
    );
    assert!(
        has_line_with(&subjects.stdout, &["orders.a", "2"]),
        "{}",
        subjects.stdout
    );

    let purge = nats(
        &server,
        home,
        &["stream", "purge", "ORDERS", "-f", "--subject", "orders.a"],
    );
    purge.ok();
    assert!(
        purge.stdout.starts_with("Purged 2 messages from ORDERS"),
        "{}",
        purge.stdout
    );
    assert_eq!(field(&purge.stdout, "Messages"), Some("1"));

    let copy = nats(
        &server,
        home,
        &[
            "stream",
            "copy",
            "ORDERS",
            "ARCHIVE",
            "--subjects",
            "archive.>",
        ],
    );
    copy.ok();
    assert!(
        copy.stdout.contains("Stream ARCHIVE was created"),
        "{}",
        copy.stdout
    );

    let edit = nats(
        &server,
        home,
        &[
            "stream",
            "edit",
            "ARCHIVE",
            "--description",
            "old orders",
            "-f",
        ],
    );
    edit.ok();
    assert!(
        edit.stdout.contains("Stream ARCHIVE was updated"),
        "{}",
        edit.stdout
    );
    assert_eq!(field(&edit.stdout, "Description"), Some("old orders"));

    let ls = nats(&server, home, &["stream", "ls", "--names"]);
    assert_eq!(
        ls.stdout.lines().collect::<Vec<_>>(),
        vec!["ARCHIVE", "ORDERS"]
    );
    let table = nats(&server, home, &["stream", "ls"]);
    assert!(
        table.stdout.lines().any(|l| l.starts_with("│ ARCHIVE ")),
        "{}",
        table.stdout
    );

    nats(&server, home, &["stream", "rm", "ARCHIVE", "-f"]).ok();
    let ls = nats(&server, home, &["stream", "ls", "--names"]);
    assert_eq!(ls.stdout.trim(), "ORDERS");

    let no_force = nats(&server, home, &["stream", "rm", "ORDERS"]);
    assert_ne!(
        no_force.status, 0,
        "deleting without -f and without a terminal must not proceed"
    );
    assert!(no_force.stderr.contains("terminal"), "{}", no_force.stderr);
}

#[test]
fn consumer_edit_shows_differences() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::add_stream(&server, home, "JOBS", "jobs.>");
    nats(
        &server,
        home,
        &["consumer", "add", "JOBS", "WORKER", "--pull", "--defaults"],
    )
    .ok();

    let dry = nats(
        &server,
        home,
        &[
            "consumer",
            "edit",
            "JOBS",
            "WORKER",
            "--max-deliver",
            "5",
            "--dry-run",
        ],
    );
    assert_ne!(dry.status, 0);
    assert!(
        dry.stdout.starts_with("Differences (-old +new):\n"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.lines().any(|l| l == "-  max_deliver: -1")
            && dry.stdout.lines().any(|l| l == "+  max_deliver: 5"),
        "{}",
        dry.stdout
    );
    let unchanged = nats(&server, home, &["consumer", "info", "JOBS", "WORKER"]);
    assert_eq!(field(&unchanged.stdout, "Maximum Deliveries"), None);

    let edit = nats(
        &server,
        home,
        &[
            "consumer",
            "edit",
            "JOBS",
            "WORKER",
            "--max-deliver",
            "5",
            "-f",
        ],
    );
    edit.ok();
    assert!(edit.stdout.contains("+  max_deliver: 5"), "{}", edit.stdout);
    assert_eq!(field(&edit.stdout, "Maximum Deliveries"), Some("5"));

    let same = nats(
        &server,
        home,
        &[
            "consumer",
            "edit",
            "JOBS",
            "WORKER",
            "--max-deliver",
            "5",
            "-f",
        ],
    );
    same.ok();
    assert_eq!(same.stdout.trim(), "No difference in configuration");
}

//! `nats stream add --mirror/--source` (a name, a JSON StreamSource, or natscli's questions in a
//! pseudo-terminal) and the Replication rows and Mirror/Source Information sections of
//! `nats stream info`.

use test_harness::cli;

use std::time::{Duration, Instant};

use test_harness::cli::{add_stream, field, nats};
use test_harness::TestServer;

/// `stream info <stream> --json`, polled until `ready` holds (at most 10 s).
fn wait_for_info(
    server: &TestServer,
    home: &std::path::Path,
    stream: &str,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = nats(server, home, &["stream", "info", stream, "--json"]);
        info.ok();
        let value: serde_json::Value = serde_json::from_str(&info.stdout).expect("json");
        if ready(&value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{stream} never became ready: {value}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn messages(value: &serde_json::Value) -> u64 {
    value["state"]["messages"].as_u64().unwrap_or(0)
}

#[test]
fn mirror_by_name_and_by_json_and_its_information() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    add_stream(&server, home, "ORDERS", "orders.>");
    nats(
        &server,
        home,
        &["pub", "orders.new", "order", "--count", "3", "--jetstream"],
    )
    .ok();

    let add = nats(
        &server,
        home,
        &[
            "stream",
            "add",
            "BACKUP",
            "--mirror",
            "ORDERS",
            "--defaults",
        ],
    );
    add.ok();
    assert_eq!(
        field(&add.stdout, "Mirror"),
        Some("ORDERS"),
        "{}",
        add.stdout
    );
    assert_eq!(field(&add.stdout, "Subjects"), None, "{}", add.stdout);
    let json = wait_for_info(&server, home, "BACKUP", |info| messages(info) == 3);
    assert_eq!(json["config"]["mirror"]["name"], "ORDERS");
    assert_eq!(json["mirror"]["name"], "ORDERS");

    let info = nats(&server, home, &["stream", "info", "BACKUP"]);
    info.ok();
    assert!(
        info.stdout.contains("Mirror Information"),
        "{}",
        info.stdout
    );
    assert_eq!(field(&info.stdout, "Stream Name"), Some("ORDERS"));
    assert_eq!(field(&info.stdout, "Lag"), Some("0"));
    assert_ne!(field(&info.stdout, "Last Seen"), Some("never"));

    let report = nats(&server, home, &["stream", "report"]);
    report.ok();
    assert!(
        report.stdout.contains("Replication Report"),
        "{}",
        report.stdout
    );
    assert!(
        cli::has_line_with(&report.stdout, &["│ BACKUP ", "│ Mirror ", "│ ORDERS "]),
        "{}",
        report.stdout
    );

    let late = nats(
        &server,
        home,
        &[
            "stream",
            "add",
            "LATE",
            "--mirror",
            r#"{"name":"ORDERS","opt_start_seq":2}"#,
            "--defaults",
        ],
    );
    late.ok();
    assert_eq!(field(&late.stdout, "Mirror"), Some("ORDERS, Start Seq: 2"));
    wait_for_info(&server, home, "LATE", |info| messages(info) == 2);

    let nameless = nats(
        &server,
        home,
        &["stream", "add", "BAD", "--mirror", r#"{"opt_start_seq":2}"#],
    );
    assert_ne!(nameless.status, 0);
    assert!(
        nameless.stderr.contains("invalid mirror: name is required"),
        "{}",
        nameless.stderr
    );

    let dry_run = nats(
        &server,
        home,
        &["stream", "edit", "BACKUP", "--no-mirror", "--dry-run"],
    );
    assert!(
        dry_run.stdout.contains(r#"-  mirror: {"name":"ORDERS"}"#),
        "{}",
        dry_run.stdout
    );
}

/// Answers natscli's mirror questions in a terminal: start at sequence 2, only `orders.new`.
#[test]
fn mirror_questions_in_natscli_order() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    add_stream(&server, home.path(), "ORDERS", "orders.>");
    for subject in ["orders.new", "orders.old", "orders.new"] {
        nats(
            &server,
            home.path(),
            &["pub", subject, "order", "--jetstream"],
        )
        .ok();
    }
    let mut session = cli::spawn_in_terminal(
        &server,
        home.path(),
        &[
            "stream",
            "add",
            "BACKUP",
            "--mirror",
            "ORDERS",
            "--storage",
            "file",
            "--replicas",
            "1",
            "--retention",
            "limits",
            "--discard",
            "old",
            "--max-msgs=-1",
            "--max-bytes=-1",
            "--max-age=-1",
            "--max-msg-size=-1",
            "--no-allow-rollup",
            "--no-deny-delete",
            "--no-deny-purge",
        ],
    );
    cli::answer_prompts(
        &mut session,
        &[
            ("Configure a custom durable consumer", "n"),
            ("Adjust mirror start", "y"),
            ("Mirror Start Sequence", "2"),
            ("Adjust mirror filter and transform", "y"),
            (
                "Filter mirror by subject (hit enter to finish)",
                "orders.new",
            ),
            ("Subject transform destination", ""),
            ("Filter mirror by subject (hit enter to finish)", ""),
            ("Import mirror from a different JetStream domain", "n"),
            ("Import mirror from a different account", "n"),
        ],
    );
    session
        .exp_string("Stream BACKUP was created")
        .expect("stream created");
    session.exp_eof().expect("exits");

    // Sequence 1 is before the start and sequence 2 is filtered out: only sequence 3 stays.
    let json = wait_for_info(&server, home.path(), "BACKUP", |info| messages(info) == 1);
    let mirror = &json["config"]["mirror"];
    assert_eq!(mirror["opt_start_seq"], 2, "{json}");
    assert_eq!(
        mirror["subject_transforms"],
        serde_json::json!([{"src": "orders.new", "dest": ""}]),
        "{json}"
    );
    let info = nats(&server, home.path(), &["stream", "info", "BACKUP"]);
    assert_eq!(
        field(&info.stdout, "Subject Filter and Transform"),
        Some("orders.new untransformed"),
        "{}",
        info.stdout
    );
}

#[test]
fn sources_aggregate_and_their_information() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    add_stream(&server, home, "ORDERS", "orders.>");
    add_stream(&server, home, "RETURNS", "returns.>");
    nats(&server, home, &["pub", "orders.new", "o", "--jetstream"]).ok();
    for subject in ["returns.new", "returns.old"] {
        nats(&server, home, &["pub", subject, "r", "--jetstream"]).ok();
    }
    let add = nats(
        &server,
        home,
        &[
            "stream",
            "add",
            "ALL",
            "--source",
            "ORDERS",
            "--source",
            r#"{"name":"RETURNS","filter_subject":"returns.new"}"#,
            "--defaults",
        ],
    );
    add.ok();
    assert_eq!(
        field(&add.stdout, "Sources"),
        Some("ORDERS"),
        "{}",
        add.stdout
    );
    assert!(
        add.stdout.lines().any(|line| line.trim() == "RETURNS"),
        "{}",
        add.stdout
    );
    let json = wait_for_info(&server, home, "ALL", |info| messages(info) == 2);
    assert_eq!(json["sources"].as_array().map(Vec::len), Some(2), "{json}");

    let info = nats(&server, home, &["stream", "info", "ALL"]);
    info.ok();
    assert!(
        info.stdout.contains("Source Information"),
        "{}",
        info.stdout
    );
    assert!(
        info.stdout
            .lines()
            .any(|line| line.trim() == "Subject Filter: returns.new"),
        "{}",
        info.stdout
    );
    let names: Vec<&str> = info
        .stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Stream Name: "))
        .collect();
    assert_eq!(names.len(), 2, "{}", info.stdout);
    assert!(names.contains(&"ORDERS") && names.contains(&"RETURNS"));
}

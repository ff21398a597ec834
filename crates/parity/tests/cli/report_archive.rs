//! `nats server report connections|accounts|health|jetstream --archive FILE`: the report read
//! from an audit archive in
//! the format natscli's `nats audit gather` writes (jsm.go's `audit/archive`: a ZIP with
//! `capture/misc/manifest.json` mapping each file to its tags, one server's
//! `$SYS.REQ.ACCOUNT.<account>.CONNZ` answer per `account_connections` page, its HEALTHZ and JSZ
//! answers per `health` and `jetstream_info` page). The archive is
//! made here by Python's `zipfile` from the answers of the server under test (ours, or
//! nats-server with `NATS_SERVER_BIN`), then read by our CLI with no server to reach.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Map, Value};
use test_harness::{cli, ServerOptions, TestServer};

const CONFIG: &str = r#"
server_name: archived
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { jetstream: enabled, users: [ { user: a, password: a } ] }
  B { users: [ { user: b, password: b } ] }
}
system_account: SYS
"#;

/// A client of `server` as `user` (whose password is its name), named `name`, flushed.
pub(crate) async fn connect(server: &TestServer, user: &str, name: &str) -> async_nats::Client {
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
            .name(name)
            .connect(server.url()),
    )
    .await
    .expect("connect in time")
    .expect("connect");
    client.flush().await.expect("flush");
    client
}

/// The server's answer to `subject` (`$SYS.REQ.ACCOUNT.<account>.CONNZ`, ...HEALTHZ), as
/// `nats audit gather` asks it.
async fn ask(system: &async_nats::Client, subject: String) -> Value {
    let reply = tokio::time::timeout(Duration::from_secs(10), system.request(subject, "".into()))
        .await
        .expect("answer in time")
        .expect("answer");
    serde_json::from_slice(&reply.payload).expect("answer JSON")
}

/// A ZIP at `path` holding `files` (name → JSON) and their `manifest` (name → tags), written by
/// Python's `zipfile` with Deflate, as Go's `archive/zip` writes an audit archive.
fn write_archive(path: &Path, files: &Map<String, Value>, manifest: &Map<String, Value>) {
    const SCRIPT: &str = r#"
import json, sys, zipfile
spec = json.load(sys.stdin)
with zipfile.ZipFile(spec["path"], "w", zipfile.ZIP_DEFLATED) as archive:
    for name, content in spec["files"].items():
        archive.writestr(name, json.dumps(content, indent=2))
    archive.writestr("capture/misc/manifest.json", json.dumps(spec["manifest"]))
"#;
    let spec = json!({"path": path, "files": files, "manifest": manifest});
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(spec.to_string().as_bytes())
        .expect("write the archive's spec");
    let status = child.wait().expect("python3");
    assert!(status.success(), "python3 could not write {path:?}");
}

/// `nats server report connections --archive <archive> <args>` with no server to reach.
fn report(home: &Path, archive: &Path, args: &[&str]) -> cli::Run {
    report_of("connections", home, archive, args)
}

/// `nats server report <kind> --archive <archive> <args>` with no server to reach.
fn report_of(kind: &str, home: &Path, archive: &Path, args: &[&str]) -> cli::Run {
    let mut command = Command::new(test_harness::cli_binary());
    cli::isolate(&mut command, home);
    let archive = archive.to_str().expect("archive path");
    command
        .args(["-s", "nats://127.0.0.1:1", "server", "report", kind])
        .args(["--archive", archive])
        .args(args);
    cli::run(command)
}

/// The entries of a successful `--json` report run with `args`.
pub(crate) fn entries(run: &cli::Run, args: &[&str]) -> Vec<Value> {
    assert_eq!(run.status, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    let entries: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", run.stdout));
    match entries {
        Value::Array(entries) => entries,
        _ => panic!("{}", run.stdout),
    }
}

/// The report's `--json` connections as `name/account`, sorted.
fn connections(home: &Path, archive: &Path, args: &[&str]) -> Vec<String> {
    let run = report(home, archive, &[&["--json"], args].concat());
    let text = |entry: &Value, key: &str| entry[key].as_str().unwrap_or_default().to_string();
    let mut names: Vec<String> = entries(&run, args)
        .iter()
        .map(|entry| format!("{}/{}", text(entry, "name"), text(entry, "account")))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn connections_report_reads_an_audit_archive() {
    let server = TestServer::start(ServerOptions {
        config: Some(CONFIG.to_string()),
        jetstream: true,
        ..Default::default()
    });
    let a = connect(&server, "a", "in-a").await;
    async_nats::jetstream::new(a.clone())
        .create_stream(async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let _b = connect(&server, "b", "in-b").await;
    let system = connect(&server, "sys", "gatherer").await;

    let mut files = Map::new();
    let mut manifest = Map::new();
    for account in ["A", "B"] {
        let answer = ask(&system, format!("$SYS.REQ.ACCOUNT.{account}.CONNZ")).await;
        let server_name = answer["server"]["name"].as_str().expect("server name");
        let name = format!(
            "capture/accounts/{account}/servers/unclustered__{server_name}/account_connections/0001.json"
        );
        let tags = json!([
            {"Name": "account", "Value": account},
            {"Name": "cluster", "Value": "unclustered"},
            {"Name": "server", "Value": server_name},
            {"Name": "artifact_type", "Value": "account_connections"},
        ]);
        files.insert(name.clone(), answer);
        manifest.insert(name, tags);
    }
    for (endpoint, kind) in [("HEALTHZ", "health"), ("JSZ", "jetstream_info")] {
        let answer = ask(&system, format!("$SYS.REQ.SERVER.PING.{endpoint}")).await;
        let server_name = answer["server"]["name"].as_str().expect("server name");
        let name = format!("capture/clusters/unclustered/{server_name}/{kind}/0001.json");
        let tags = json!([
            {"Name": "cluster", "Value": "unclustered"},
            {"Name": "server", "Value": server_name},
            {"Name": "artifact_type", "Value": kind},
        ]);
        files.insert(name.clone(), answer);
        manifest.insert(name, tags);
    }
    let metadata = "capture/misc/audit_gather_metadata.json";
    files.insert(
        metadata.into(),
        json!({"capture_timestamp": "2026-12-04T12:00:00Z", "connected_server_name": "archived"}),
    );
    manifest.insert(
        metadata.into(),
        json!([{"Name": "special", "Value": "audit_gather_metadata"}]),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    let archive = dir.path().join("audit.zip");
    write_archive(&archive, &files, &manifest);
    drop(server);

    // Every account's connections, with no server running; then --filter over them.
    assert_eq!(
        connections(home, &archive, &[]),
        ["in-a/A", "in-b/B"],
        "the archive's connections"
    );
    assert_eq!(
        connections(
            home,
            &archive,
            &[
                "--filter",
                "Conn.Account == 'B' && Conn.Start.Year() >= 2024"
            ]
        ),
        ["in-b/B"]
    );
    let table = report(home, &archive, &[]);
    assert_eq!(table.status, 0, "{}{}", table.stdout, table.stderr);
    assert!(
        cli::has_line_with(&table.stdout, &["in-a", "A"]),
        "{}",
        table.stdout
    );

    // What an archive cannot answer is refused, as natscli's.
    refused(
        &report(home, &archive, &["--account", "A"]),
        "unsupported option for archive connz: account",
    );
    refused(
        &report(home, &archive, &["--watch", "1"]),
        "--watch is not supported when using --archive",
    );

    // The accounts report: the same pages, by account.
    let accounts = report_of("accounts", home, &archive, &[]);
    assert_eq!(accounts.status, 0, "{}{}", accounts.stdout, accounts.stderr);
    assert!(
        accounts.stdout.contains("2 Accounts Overview")
            && cli::has_line_with(&accounts.stdout, &["│ A "])
            && cli::has_line_with(&accounts.stdout, &["│ B "]),
        "{}",
        accounts.stdout
    );
    refused(
        &report_of("accounts", home, &archive, &["A"]),
        "unsupported option for archive connz: account",
    );

    // The health report: each server's HEALTHZ page.
    let health = report_of("health", home, &archive, &[]);
    assert_eq!(health.status, 0, "{}{}", health.stdout, health.stderr);
    assert!(
        cli::has_line_with(&health.stdout, &["archived", "ok"]),
        "{}",
        health.stdout
    );
    refused(
        &report_of("health", home, &archive, &["--js-enabled"]),
        "unsupported option for archive healthz: js-enabled-only",
    );

    // The JetStream report: each server's JSZ page.
    let jetstream = report_of("jetstream", home, &archive, &["--json"]);
    let servers = entries(&jetstream, &["jetstream"]);
    assert_eq!(servers.len(), 1, "{}", jetstream.stdout);
    assert_eq!(servers[0]["server"]["name"], "archived");
    assert_eq!(servers[0]["data"]["streams"], 1, "{}", jetstream.stdout);
    let table = report_of("jetstream", home, &archive, &[]);
    assert_eq!(table.status, 0, "{}{}", table.stdout, table.stderr);
    assert!(
        cli::has_line_with(&table.stdout, &["archived"]),
        "{}",
        table.stdout
    );
    refused(
        &report_of("jetstream", home, &archive, &["--account", "A"]),
        "unsupported option for archive jsz: account",
    );

    // A manifest naming a file the ZIP lacks is a broken archive.
    let broken = dir.path().join("broken.zip");
    let mut listed = manifest.clone();
    listed.insert(
        "capture/accounts/A/servers/unclustered__gone/account_connections/0001.json".into(),
        json!([{"Name": "account", "Value": "A"}]),
    );
    write_archive(&broken, &files, &listed);
    refused(&report(home, &broken, &["--json"]), "missing");
}

/// The run failed saying `text`.
fn refused(run: &cli::Run, text: &str) {
    assert_ne!(run.status, 0, "{}", run.stdout);
    assert!(run.stderr.contains(text), "{}", run.stderr);
}

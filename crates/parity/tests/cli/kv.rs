//! `nats kv ...`: add, put, get, history, ls, del, purge, info.

use test_harness::cli;

use test_harness::cli::{field, nats};
use test_harness::TestServer;

#[test]
fn kv_bucket_lifecycle() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let add = nats(&server, home, &["kv", "add", "CONFIG", "--history", "5"]);
    add.ok();
    assert!(
        add.stdout
            .starts_with("Information for Key-Value Store Bucket CONFIG created "),
        "{}",
        add.stdout
    );
    assert_eq!(field(&add.stdout, "History Kept"), Some("5"));

    let put = nats(&server, home, &["kv", "put", "CONFIG", "color", "blue"]);
    put.ok();
    assert_eq!(put.stdout.trim(), "blue");
    nats(&server, home, &["kv", "put", "CONFIG", "color", "red"]).ok();

    let get = nats(&server, home, &["kv", "get", "CONFIG", "color"]);
    get.ok();
    assert!(
        get.stdout
            .starts_with("CONFIG > color revision: 2 created @ "),
        "{}",
        get.stdout
    );
    assert!(get.stdout.lines().any(|l| l == "red"), "{}", get.stdout);
    let raw = nats(&server, home, &["kv", "get", "CONFIG", "color", "--raw"]);
    assert_eq!(raw.stdout, "red");

    let history = nats(&server, home, &["kv", "history", "CONFIG", "color"]);
    history.ok();
    let rows: Vec<&str> = history
        .stdout
        .lines()
        .filter(|l| l.starts_with("│ color "))
        .collect();
    assert_eq!(rows.len(), 2, "{}", history.stdout);
    assert!(
        rows[0].contains("blue") && rows[1].contains("red"),
        "{}",
        history.stdout
    );

    let keys = nats(&server, home, &["kv", "ls", "CONFIG"]);
    assert_eq!(keys.stdout.trim(), "color");
    let buckets = nats(&server, home, &["kv", "ls"]);
    assert!(
        buckets.stdout.lines().any(|l| l.starts_with("│ CONFIG ")),
        "{}",
        buckets.stdout
    );

    nats(&server, home, &["kv", "del", "CONFIG", "color", "-f"]).ok();
    let deleted = nats(&server, home, &["kv", "get", "CONFIG", "color"]);
    assert_ne!(deleted.status, 0);
    assert!(
        deleted.stderr.contains("key not found"),
        "{}",
        deleted.stderr
    );

    let missing = nats(&server, home, &["kv", "get", "NOPE", "color"]);
    assert_ne!(missing.status, 0);
    assert!(
        missing.stderr.starts_with("nats: error: "),
        "{}",
        missing.stderr
    );

    nats(&server, home, &["kv", "del", "CONFIG", "-f"]).ok();
    let none = nats(&server, home, &["kv", "ls"]);
    assert!(
        none.stdout.contains("No Key-Value buckets found"),
        "{}",
        none.stdout
    );
}

#[test]
fn kv_create_and_update_check_revisions() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    nats(&server, home, &["kv", "add", "CAS"]).ok();

    let created = nats(&server, home, &["kv", "create", "CAS", "k", "one"]);
    created.ok();
    assert_eq!(created.stdout.trim(), "one");
    let again = nats(&server, home, &["kv", "create", "CAS", "k", "two"]);
    assert_ne!(again.status, 0);
    assert_eq!(
        again.stderr.trim(),
        "nats: error: nats: API error: code=400 err_code=10071 description=wrong last sequence: 1: key exists"
    );

    let stale = nats(&server, home, &["kv", "update", "CAS", "k", "three", "5"]);
    assert_ne!(stale.status, 0);
    assert_eq!(
        stale.stderr.trim(),
        "nats: error: nats: API error: code=400 err_code=10071 description=wrong last sequence: 1"
    );
    nats(&server, home, &["kv", "update", "CAS", "k", "three", "1"]).ok();
    let raw = nats(&server, home, &["kv", "get", "CAS", "k", "--raw"]);
    assert_eq!(raw.stdout, "three");

    // A deleted key counts as absent for create.
    nats(&server, home, &["kv", "del", "CAS", "k", "-f"]).ok();
    nats(&server, home, &["kv", "create", "CAS", "k", "four"]).ok();
    let get = nats(&server, home, &["kv", "get", "CAS", "k"]);
    assert!(
        get.stdout.starts_with("CAS > k revision: 4 created @ "),
        "{}",
        get.stdout
    );

    // Without a value argument the value comes from standard input; natscli echoes the
    // (empty) argument.
    let input = home.join("value.txt");
    std::fs::write(&input, "from stdin").expect("write");
    let piped = cli::run_with_stdin(
        cli::command(&server, home, &["kv", "put", "CAS", "piped"]),
        std::fs::File::open(&input).expect("open"),
    );
    piped.ok();
    assert_eq!(piped.stdout, "\n");
    let raw = nats(&server, home, &["kv", "get", "CAS", "piped", "--raw"]);
    assert_eq!(raw.stdout, "from stdin");

    let missing = nats(&server, home, &["kv", "create", "NOPE", "k", "v"]);
    assert_ne!(missing.status, 0);
    assert_eq!(missing.stderr.trim(), "nats: error: nats: bucket not found");
}

#[test]
fn kv_compact_drops_history_of_deleted_keys() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    nats(&server, home, &["kv", "add", "CMP", "--history", "10"]).ok();
    for (key, value) in [("gone", "1"), ("gone", "2"), ("kept", "1"), ("kept", "2")] {
        nats(&server, home, &["kv", "put", "CMP", key, value]).ok();
    }
    nats(&server, home, &["kv", "del", "CMP", "gone", "-f"]).ok();
    let messages = |home: &std::path::Path| {
        let info = nats(&server, home, &["stream", "info", "KV_CMP"]);
        info.ok();
        field(&info.stdout, "Messages").map(str::to_string)
    };
    assert_eq!(messages(home).as_deref(), Some("5"));

    let refused = nats(&server, home, &["kv", "compact", "CMP"]);
    assert_ne!(refused.status, 0);
    nats(&server, home, &["kv", "compact", "CMP", "-f"]).ok();
    // The recent delete marker stays; the deleted key's values go; the live key keeps its
    // history.
    assert_eq!(messages(home).as_deref(), Some("3"));
    let deleted = nats(&server, home, &["kv", "get", "CMP", "gone"]);
    assert!(
        deleted.stderr.contains("key not found"),
        "{}",
        deleted.stderr
    );
    let raw = nats(&server, home, &["kv", "get", "CMP", "kept", "--raw"]);
    assert_eq!(raw.stdout, "2");
}

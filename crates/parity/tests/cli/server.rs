//! `nats server check connection`, `account info`, `rtt` and a short `bench pub`.

use test_harness::cli;

use test_harness::cli::nats;
use test_harness::TestServer;

#[test]
fn server_check_connection_is_ok() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let run = nats(&server, home.path(), &["server", "check", "connection"]);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("OK Connection OK:connected to "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("| connect_time="), "{}", run.stdout);
    assert!(run.stdout.contains(" rtt="), "{}", run.stdout);
    assert!(run.stdout.contains(" request_time="), "{}", run.stdout);
}

#[test]
fn server_check_connection_critical_when_unreachable() {
    let home = tempfile::tempdir().expect("tempdir");
    let command = cli::unreachable_server_command(
        home.path(),
        &["--timeout", "1s", "server", "check", "connection"],
    );
    let run = cli::run(command);
    assert_eq!(run.status, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .starts_with("CRITICAL Connection Crit:connection failed"),
        "{}",
        run.stdout
    );
}

#[test]
fn account_info_and_rtt() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let info = nats(&server, home.path(), &["account", "info"]);
    info.ok();
    assert!(
        info.stdout.starts_with("Account Information"),
        "{}",
        info.stdout
    );
    assert_eq!(cli::field(&info.stdout, "Headers Supported"), Some("true"));
    let rtt = nats(&server, home.path(), &["rtt", "2"]);
    rtt.ok();
    assert!(
        rtt.stdout.contains(&format!("127.0.0.1:{}: ", server.port)),
        "{}",
        rtt.stdout
    );
}

#[test]
fn bench_pub_reports_a_rate() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let run = nats(
        &server,
        home.path(),
        &[
            "bench",
            "pub",
            "bench.test",
            "--msgs",
            "2000",
            "--size",
            "16",
        ],
    );
    run.ok();
    assert!(
        run.stderr
            .contains("Starting Core NATS publisher benchmark ["),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("NATS Core NATS publisher stats: "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(" msgs/sec ~ "), "{}", run.stdout);
}

#[test]
fn bench_jetstream_publish_and_fetch() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let publish = nats(
        &server,
        home.path(),
        &[
            "bench", "js", "pub", "async", "bench.js", "--msgs", "1000", "--batch", "100",
        ],
    );
    publish.ok();
    assert!(
        publish
            .stdout
            .contains("NATS JetStream asynchronous publisher stats: "),
        "{}",
        publish.stdout
    );
    let fetch = nats(
        &server,
        home.path(),
        &["bench", "js", "fetch", "--msgs", "1000", "--batch", "100"],
    );
    fetch.ok();
    assert!(
        fetch
            .stdout
            .contains("NATS JetStream durable consumer (fetch) stats: "),
        "{}",
        fetch.stdout
    );
    assert!(fetch.stdout.contains("P99"), "{}", fetch.stdout);
}

#[test]
fn server_check_stream_thresholds() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::add_stream(&server, home, "ORDERS", "orders.>");
    nats(&server, home, &["pub", "orders.new", "x", "--count", "3"]).ok();
    let ok = nats(
        &server,
        home,
        &[
            "server",
            "check",
            "stream",
            "--stream",
            "ORDERS",
            "--msgs-warn",
            "1",
        ],
    );
    assert_eq!(ok.status, 0, "{}", ok.stdout);
    assert_eq!(ok.stdout.trim(), "OK ORDERS OK:3 messages | messages=3;1");
    let critical = nats(
        &server,
        home,
        &[
            "server",
            "check",
            "stream",
            "--stream",
            "ORDERS",
            "--msgs-critical",
            "5",
        ],
    );
    assert_eq!(critical.status, 2, "{}", critical.stdout);
    assert!(
        critical
            .stdout
            .starts_with("CRITICAL ORDERS Crit:3 messages"),
        "{}",
        critical.stdout
    );
    let missing = nats(
        &server,
        home,
        &["server", "check", "stream", "--stream", "NOPE"],
    );
    assert_eq!(missing.status, 2);
    assert!(
        missing.stdout.contains("stream not found"),
        "{}",
        missing.stdout
    );
}

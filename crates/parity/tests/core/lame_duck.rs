//! Lame duck mode (`nats-server --signal ldm=<pid>`, SIGUSR2): the server stops accepting
//! clients, tells each client that negotiated protocol 1 with an INFO carrying `"ldm":true`,
//! waits `lame_duck_grace_period`, closes its clients and exits 0. The lame duck settings are
//! checked as nats-server checks them.

use std::net::TcpStream;
use std::time::{Duration, Instant};
use test_harness::{RawClient, TestServer};

const CONFIG: &str = "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n";

/// The next line that is an INFO with `"ldm":true`, skipping others; `None` if the connection
/// closes or stays silent for the client's timeout first.
fn next_ldm_info(client: &mut RawClient) -> Option<String> {
    loop {
        let line = client.read_line()?;
        if line.starts_with("INFO ") && line.contains("\"ldm\":true") {
            return Some(line);
        }
    }
}

/// `nats-server --signal ldm=<pid>`, which must exit 0 at once.
fn signal_lame_duck(server: &TestServer) {
    let pid = server.pid().expect("pid").to_string();
    let finished = crate::process::run(
        &["--signal", &format!("ldm={pid}")],
        Duration::from_secs(10),
    )
    .expect("--signal ldm exits at once");
    assert_eq!(finished.code, 0, "{}", finished.output());
}

#[test]
fn clients_hear_lame_duck_mode_then_are_closed_and_the_server_exits_0() {
    let mut server = TestServer::with_config(CONFIG);
    let mut modern = RawClient::connect(&server);
    modern.send("CONNECT {\"protocol\":1,\"verbose\":false}\r\n");
    modern.ping_collect();
    let mut legacy = RawClient::connect(&server);
    legacy.send("CONNECT {\"verbose\":false}\r\n");
    legacy.ping_collect();

    signal_lame_duck(&server);
    let signalled = Instant::now();

    modern.timeout = Duration::from_secs(10);
    let info = next_ldm_info(&mut modern)
        .unwrap_or_else(|| panic!("no INFO with ldm before the close; log:\n{}", server.log()));
    let json: serde_json::Value =
        serde_json::from_str(&info["INFO ".len()..]).expect("INFO is JSON");
    assert_eq!(json["ldm"], true, "{info}");
    assert_eq!(json["server_id"].as_str().map(str::len), Some(56), "{info}");

    // No new client is accepted once lame duck mode began.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting clients in lame duck mode"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The clients are closed after the grace period, not before.
    assert!(
        modern.read_to_close().is_some(),
        "client never closed; log:\n{}",
        server.log()
    );
    let closed_after = signalled.elapsed();
    assert!(
        closed_after >= Duration::from_millis(900),
        "closed {closed_after:?} after the signal, inside the 1 s grace period"
    );
    // A client of protocol 0 cannot take async INFO: it is only closed.
    legacy.timeout = Duration::from_secs(10);
    let rest = legacy.read_to_close().expect("legacy client never closed");
    assert!(!rest.contains("ldm"), "{rest}");

    assert_eq!(
        server.wait_exit(Duration::from_secs(15)),
        Some(0),
        "the server must exit 0 after lame duck mode; log:\n{}",
        server.log()
    );
    assert!(
        server
            .log()
            .contains("Entering lame duck mode, stop accepting new clients"),
        "{}",
        server.log()
    );
}

#[test]
fn without_clients_lame_duck_mode_exits_at_once() {
    let mut server = TestServer::with_config(CONFIG);
    signal_lame_duck(&server);
    // Nothing to close, so no grace period to wait out (the duration is 30 s).
    assert_eq!(
        server.wait_exit(Duration::from_secs(10)),
        Some(0),
        "{}",
        server.log()
    );
}

#[test]
fn lame_duck_settings_are_checked_as_nats_server_checks_them() {
    for (text, expected) in [
        (
            "lame_duck_duration: \"10s\"\n",
            "check.conf:1:0: invalid lame_duck_duration of 10s, minimum is 30 seconds\n",
        ),
        (
            "lame_duck_grace_period: \"-1s\"\n",
            "check.conf:1:0: invalid lame_duck_grace_period, needs to be positive\n",
        ),
        (
            "lame_duck_duration: \"abc\"\n",
            "check.conf:1:0: error parsing lame_duck_duration: time: invalid duration \"abc\"\n",
        ),
    ] {
        crate::config_lexer::assert_refused(text, expected);
    }
    crate::config_lexer::assert_valid(
        "lame_duck_duration: \"45s\"\nlame_duck_grace_period: \"5s\"\n",
        &[],
    );
}

#[test]
fn a_grace_period_as_long_as_the_duration_stops_the_start() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("ldm.conf");
    std::fs::write(
        &path,
        "port: -1\nlame_duck_duration: \"30s\"\nlame_duck_grace_period: \"30s\"\n",
    )
    .expect("write config");
    let finished = crate::process::run(
        &["-c", &path.display().to_string()],
        Duration::from_secs(10),
    )
    .expect("the server must refuse to start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert!(
        finished.stderr.contains(
            "lame duck grace period (30s) should be strictly lower than lame duck duration (30s)"
        ),
        "{}",
        finished.output()
    );
}

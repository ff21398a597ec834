//! `nats-server --signal <command>[=<pid|pid file>]` signals a running server and exits; it
//! never starts a second server. Errors are nats-server's words on stderr with exit status 1.

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use test_harness::{ServerOptions, TestServer};

/// Run the server binary with `args`; `None` when it did not exit within the bound (the
/// failure this suite guards against: a second server started).
fn run_binary(args: &[&str]) -> Option<(i32, String, String)> {
    crate::process::run(args, Duration::from_secs(10))
        .map(|finished| (finished.code, finished.stdout, finished.stderr))
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn quit_by_pid_file_stops_the_server_and_starts_none() {
    let directory = tempfile::tempdir().expect("tempdir");
    let pid_file = directory.path().join("server.pid");
    let server = TestServer::start(ServerOptions {
        args: vec!["-P".into(), pid_file.display().to_string()],
        ..Default::default()
    });
    wait_for_file(&pid_file);
    let argument = format!("quit={}", pid_file.display());
    let (code, stdout, stderr) = run_binary(&["--signal", &argument])
        .expect("--signal must exit at once, not start a server");
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        !stdout.contains("Starting") && !stderr.contains("Starting"),
        "a server started: {stdout}{stderr}"
    );
    // The running server got SIGINT and shut down.
    let deadline = Instant::now() + Duration::from_secs(15);
    while TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the signalled server still listens; log:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn term_by_pid_stops_the_server() {
    let server = TestServer::core();
    let pid = server.pid().expect("pid");
    let argument = format!("term={pid}");
    let (code, _, stderr) =
        run_binary(&["-sl", &argument]).expect("-sl must exit at once, not start a server");
    assert_eq!(code, 0, "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the signalled server still listens"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bad_signal_requests_are_refused_in_nats_servers_words() {
    let server = TestServer::core();
    let pid = server.pid().expect("pid");
    let unknown = format!("bogus={pid}");
    // A process that is gone: a child we started and reaped.
    let mut gone = Command::new("true").spawn().expect("spawn true");
    let gone_pid = gone.id();
    let _ = gone.wait();
    let dead = format!("reload={gone_pid}");
    let cases: [(&str, String); 4] = [
        ("reload=abc", "nats-server: invalid pid: abc\n".to_string()),
        (
            "reload=1=2=3",
            "nats-server: invalid signal parameters: [2 3]\n".to_string(),
        ),
        (
            &unknown,
            "nats-server: unknown signal \"bogus\"\n".to_string(),
        ),
        (
            &dead,
            format!("nats-server: \nsignal \"reload\" {gone_pid}: no such process\n"),
        ),
    ];
    for (argument, expected) in cases {
        let (code, _, stderr) = run_binary(&["--signal", argument])
            .unwrap_or_else(|| panic!("--signal {argument} must exit at once"));
        assert_eq!(code, 1, "--signal {argument}: {stderr}");
        assert_eq!(stderr, expected, "--signal {argument}");
    }
    // The running server was left alone.
    assert!(TcpStream::connect(("127.0.0.1", server.port)).is_ok());
}

//! Connection options against servers that require credentials: `--user/--password`,
//! `--token`, their environment variables, and the error line for wrong credentials.

use test_harness::cli;

use std::process::Command;

use test_harness::TestServer;

fn nats_env(
    server: &TestServer,
    home: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> cli::Run {
    let mut command = Command::new(test_harness::cli_binary());
    command.arg("-s").arg(server.url()).args(args);
    cli::isolate(&mut command, home);
    for (key, value) in env {
        command.env(key, value);
    }
    cli::run(command)
}

#[test]
fn user_and_password() {
    let server = TestServer::with_config("authorization { user: alice, password: s3cret }\n");
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::nats(
        &server,
        home,
        &["--user", "alice", "--password", "s3cret", "pub", "a.b", "x"],
    )
    .ok();
    nats_env(
        &server,
        home,
        &[("NATS_USER", "alice"), ("NATS_PASSWORD", "s3cret")],
        &["pub", "a.b", "x"],
    )
    .ok();

    let wrong = cli::nats(
        &server,
        home,
        &["--user", "alice", "--password", "nope", "pub", "a.b", "x"],
    );
    assert_ne!(wrong.status, 0);
    assert_eq!(
        wrong.stderr.trim(),
        "nats: error: nats: Authorization Violation"
    );
    let missing = cli::nats(&server, home, &["pub", "a.b", "x"]);
    assert_ne!(missing.status, 0);
    assert!(
        missing.stderr.starts_with("nats: error: "),
        "{}",
        missing.stderr
    );
}

#[test]
fn token() {
    let server = TestServer::with_config("authorization { token: t0ken }\n");
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    cli::nats(&server, home, &["--token", "t0ken", "pub", "a.b", "x"]).ok();
    // natscli: a --user without a password is a token.
    cli::nats(&server, home, &["--user", "t0ken", "pub", "a.b", "x"]).ok();
    nats_env(
        &server,
        home,
        &[("NATS_TOKEN", "t0ken")],
        &["pub", "a.b", "x"],
    )
    .ok();
    let wrong = cli::nats(&server, home, &["--token", "other", "pub", "a.b", "x"]);
    assert_ne!(wrong.status, 0);
    assert!(
        wrong.stderr.contains("Authorization Violation"),
        "{}",
        wrong.stderr
    );
}

/// `nats -s <url> args` with the URL as given (credentials written in it).
fn nats_url(url: &str, home: &std::path::Path, args: &[&str]) -> cli::Run {
    let mut command = Command::new(test_harness::cli_binary());
    command.arg("-s").arg(url).args(args);
    cli::isolate(&mut command, home);
    cli::run(command)
}

#[test]
fn credentials_in_the_server_url() {
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let server = TestServer::with_config("authorization { user: alice, password: \"s3c@ret\" }\n");
    let address = server.addr();
    nats_url(
        &format!("nats://alice:s3c%40ret@{address}"),
        home,
        &["pub", "a.b", "x"],
    )
    .ok();
    // The URL's user information wins over --user/--password, as in nats.go.
    nats_url(
        &format!("nats://alice:s3c%40ret@{address}"),
        home,
        &["--user", "alice", "--password", "nope", "pub", "a.b", "x"],
    )
    .ok();
    let wrong = nats_url(
        &format!("nats://alice:nope@{address}"),
        home,
        &["pub", "a.b", "x"],
    );
    assert_ne!(wrong.status, 0);
    assert_eq!(
        wrong.stderr.trim(),
        "nats: error: nats: Authorization Violation"
    );

    let server = TestServer::with_config("authorization { token: t0ken }\n");
    let address = server.addr();
    // A user without a password is a token.
    nats_url(
        &format!("nats://t0ken@{address}"),
        home,
        &["pub", "a.b", "x"],
    )
    .ok();
}

#[test]
fn timeout_flag_bounds_a_request() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    // A subscriber that never answers: the request must give up after --timeout.
    let mut silent =
        cli::Background::spawn(cli::command(&server, home, &["sub", "silent.service"]));
    silent.wait_for_stderr("Subscribing on silent.service");
    let started = std::time::Instant::now();
    let run = cli::nats(
        &server,
        home,
        &["--timeout", "500ms", "request", "silent.service", "x"],
    );
    let elapsed = started.elapsed();
    assert_ne!(run.status, 0);
    assert!(run.stderr.contains("nats: error: "), "{}", run.stderr);
    assert!(
        elapsed < std::time::Duration::from_secs(4),
        "took {elapsed:?}"
    );
}

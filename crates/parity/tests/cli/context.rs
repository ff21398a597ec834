//! Contexts stored where natscli keeps them (`$XDG_CONFIG_HOME/nats/context/*.json`,
//! `context.txt`), and connection options: a selected context supplies the server.

use test_harness::cli;

use std::process::Command;

use test_harness::TestServer;

fn nats_without_server(home: &std::path::Path, args: &[&str]) -> cli::Run {
    let mut command = Command::new(test_harness::cli_binary());
    command.args(args);
    cli::isolate(&mut command, home);
    cli::run(command)
}

#[test]
fn context_add_select_use_and_remove() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();

    let add = nats_without_server(
        home,
        &[
            "context",
            "add",
            "local",
            "--server",
            &server.url(),
            "--description",
            "test server",
        ],
    );
    add.ok();
    assert!(
        add.stdout
            .starts_with("NATS Configuration Context \"local\""),
        "{}",
        add.stdout
    );
    let saved =
        std::fs::read_to_string(home.join("nats/context/local.json")).expect("context file");
    let json: serde_json::Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(json["url"], server.url());
    assert_eq!(json["description"], "test server");

    nats_without_server(home, &["context", "select", "local"]).ok();
    assert_eq!(
        std::fs::read_to_string(home.join("nats/context.txt"))
            .expect("context.txt")
            .trim(),
        "local"
    );
    let ls = nats_without_server(home, &["context", "ls"]);
    assert!(
        ls.stdout.lines().any(|l| l.starts_with("│ local* ")),
        "{}",
        ls.stdout
    );
    let info = nats_without_server(home, &["context", "info"]);
    assert!(
        cli::field(&info.stdout, "Server URLs") == Some(server.url().as_str()),
        "{}",
        info.stdout
    );

    // No -s: the selected context supplies the server.
    let check = nats_without_server(home, &["server", "check", "connection"]);
    assert_eq!(check.status, 0, "{}{}", check.stdout, check.stderr);
    assert!(
        check.stdout.starts_with("OK Connection OK:connected to "),
        "{}",
        check.stdout
    );

    let refused = nats_without_server(home, &["context", "rm", "local"]);
    assert_ne!(
        refused.status, 0,
        "removing the selected context needs --force"
    );
    nats_without_server(home, &["context", "rm", "local", "-f"]).ok();
    assert!(!home.join("nats/context/local.json").exists());
    let empty = nats_without_server(home, &["context", "ls"]);
    assert!(
        empty.stdout.contains("No known contexts"),
        "{}",
        empty.stdout
    );
}

#[test]
fn nats_url_environment_and_unknown_context() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(test_harness::cli_binary());
    command.args(["rtt", "1"]);
    cli::isolate(&mut command, home.path());
    command.env("NATS_URL", server.url());
    let run = cli::run(command);
    run.ok();
    assert!(
        run.stdout.starts_with(&format!("{}:", server.url())),
        "{}",
        run.stdout
    );

    let unknown = nats_without_server(home.path(), &["--context", "missing", "rtt"]);
    assert_ne!(unknown.status, 0);
    assert!(
        unknown.stderr.contains("unknown context"),
        "{}",
        unknown.stderr
    );
}

//! `nats account info` in natscli's layout: the user, account and permissions from
//! `$SYS.REQ.USER.INFO` (when the server answers it), the connection rows, and the
//! JetStream usage with its per-tier limits as the server's `$JS.API.INFO` reports them.

use test_harness::cli;

use test_harness::{ServerOptions, TestServer};

/// Account A with JetStream limits and a user with deny-only permissions.
fn limited_server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(
            "accounts {\n  A {\n    jetstream { max_mem: 1M, max_file: 10M, max_streams: 5, \
             max_consumers: 7, max_bytes_required: true }\n    users: [ { user: a, password: a, \
             permissions: { publish: { deny: \"x.>\" }, subscribe: { deny: [\"secret.>\", \"hidden\"] } } } ]\n  }\n}\n"
                .to_string(),
        ),
        ..Default::default()
    })
}

fn user_flags() -> [&'static str; 4] {
    ["--user", "a", "--password", "a"]
}

fn run_as_a(server: &TestServer, home: &std::path::Path, args: &[&str]) -> cli::Run {
    let arguments: Vec<&str> = user_flags()
        .iter()
        .copied()
        .chain(args.iter().copied())
        .collect();
    cli::nats(server, home, &arguments)
}

#[test]
fn user_permissions_and_tier_limits() {
    let server = limited_server();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let info = run_as_a(&server, home, &["account", "info"]);
    let text = &info.ok().stdout;
    assert!(text.starts_with("Account Information\n\n"), "{text}");
    assert_eq!(cli::field(text, "Headers Supported"), Some("true"));
    assert_eq!(cli::field(text, "TLS Connection"), Some("no"));

    // The user rows and permissions come from $SYS.REQ.USER.INFO when the server has it.
    let user_info = run_as_a(&server, home, &["req", "$SYS.REQ.USER.INFO", ""]);
    if user_info.status == 0 {
        assert_eq!(cli::field(text, "User"), Some("a"), "{text}");
        assert_eq!(cli::field(text, "Account"), Some("A (A)"), "{text}");
        assert_eq!(cli::field(text, "System Account"), Some("false"));
        assert_eq!(cli::field(text, "Expires"), Some("never"));
        let permissions = text
            .split("Connection Permissions:\n\n")
            .nth(1)
            .expect("permissions section");
        let subscribe = permissions
            .split("   Subscribe:\n")
            .nth(1)
            .expect("subscribe permissions");
        assert!(
            permissions.starts_with("   Publish:\n  \n"),
            "{permissions}"
        );
        assert!(
            cli::has_line_with(permissions, &["Deny: x.>"]),
            "{permissions}"
        );
        // Sorted, the label on the first value only.
        let lines: Vec<&str> = subscribe.lines().skip(1).take(2).collect();
        assert!(lines[0].ends_with("Deny: hidden"), "{subscribe}");
        assert!(lines[1].trim() == "secret.>", "{subscribe}");
        assert_eq!(
            lines[0].find("hidden"),
            lines[1].find("secret.>"),
            "{subscribe}"
        );
    } else {
        assert_eq!(cli::field(text, "User"), None, "{text}");
        assert!(!text.contains("Connection Permissions"), "{text}");
    }

    // The tier shows the limits the server reports.
    let reply = run_as_a(&server, home, &["req", "$JS.API.INFO", ""]);
    let account: serde_json::Value = serde_json::from_str(reply.ok().stdout.trim()).expect("json");
    let limits = &account["limits"];
    assert!(
        text.contains("\nJetStream Account Information:\n\nAccount Usage:\n\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  Tier: Default:\n\n      Configuration Requirements:\n\n"),
        "{text}"
    );
    assert!(
        text.contains("\n      Stream Resource Usage Limits:\n\n"),
        "{text}"
    );
    let expected_streams = match limits["max_streams"].as_i64() {
        Some(-1) => "0 of Unlimited".to_string(),
        Some(maximum) => format!("0 of {maximum}"),
        None => panic!("no max_streams in {account}"),
    };
    let expected_consumers = match limits["max_consumers"].as_i64() {
        Some(-1) => "Unlimited".to_string(),
        Some(maximum) => format!("Maximum {maximum} per stream"),
        None => panic!("no max_consumers in {account}"),
    };
    let tier = text.split("Tier: Default:").nth(1).expect("tier");
    assert_eq!(cli::field(tier, "Streams"), Some(expected_streams.as_str()));
    assert_eq!(
        cli::field(tier, "Consumers"),
        Some(expected_consumers.as_str())
    );
    assert_eq!(
        cli::field(tier, "Stream Requires Max Bytes Set"),
        Some(limits["max_bytes_required"].to_string().as_str())
    );
    assert_eq!(
        cli::field(tier, "Consumer Maximum Ack Pending"),
        Some("Unlimited")
    );
    let memory = cli::field(tier, "Memory").expect("memory row");
    assert!(memory.starts_with("0 B of "), "{memory}");
}

#[test]
fn without_jetstream() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let info = cli::nats(&server, home.path(), &["account", "info"]);
    let text = &info.ok().stdout;
    assert!(
        text.ends_with("\n    JetStream is not supported in this account\n"),
        "{text}"
    );
    assert!(!text.contains("Account Usage"), "{text}");
}

//! `nats pub`, `sub`, `request` and `reply` against a plain server: templates, headers,
//! counts, the JetStream PubAck, and their usual errors.

use test_harness::cli;

use test_harness::cli::{command, nats, Background};
use test_harness::TestServer;

#[test]
fn pub_and_sub_with_templates_and_headers() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let mut subscriber = Background::spawn(command(
        &server,
        home.path(),
        &["sub", "greet.>", "--count", "3"],
    ));
    subscriber.wait_for_stderr("Subscribing on greet.>");

    let publish = nats(
        &server,
        home.path(),
        &[
            "pub",
            "greet.world",
            "hello {{Count}}",
            "--count",
            "2",
            "-H",
            "X-Trace:{{Count}}",
        ],
    );
    publish.ok();
    assert_eq!(
        publish
            .stderr
            .matches("Published 7 bytes to \"greet.world\"")
            .count(),
        2,
        "{}",
        publish.stderr
    );
    nats(
        &server,
        home.path(),
        &["pub", "greet.{{Count}}", "{{Random 10 10}}"],
    )
    .ok();

    let (status, output) = subscriber.finish();
    assert_eq!(status, 0, "{output}");
    assert!(
        output.contains("[#1] Received on \"greet.world\""),
        "{output}"
    );
    assert!(output.contains("X-Trace: 1"), "{output}");
    assert!(output.lines().any(|l| l == "hello 1"), "{output}");
    assert!(output.lines().any(|l| l == "hello 2"), "{output}");
    assert!(output.contains("[#3] Received on \"greet.1\""), "{output}");
    let random = output
        .lines()
        .skip_while(|l| !l.contains("[#3]"))
        .nth(1)
        .unwrap_or_default();
    assert_eq!(random.len(), 10, "{output}");
    assert!(
        random.chars().all(|c| c.is_ascii_alphanumeric()),
        "{output}"
    );
}

#[test]
fn request_reply_round_trip() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let mut replier = Background::spawn(command(
        &server,
        home.path(),
        &[
            "reply",
            "service.echo",
            "pong {{Count}}: {{Request}}",
            "--count",
            "1",
        ],
    ));
    // The replier prints nothing until it serves; ask until it answers (bounded).
    let mut answer = None;
    for _ in 0..50 {
        let run = nats(
            &server,
            home.path(),
            &["--timeout", "300ms", "request", "service.echo", "ping"],
        );
        if run.status == 0 {
            answer = Some(run);
            break;
        }
    }
    let answer = answer.expect("the replier never answered");
    assert!(
        answer
            .stderr
            .contains("Sending request on \"service.echo\""),
        "{}",
        answer.stderr
    );
    assert!(
        answer.stderr.contains("Received with rtt"),
        "{}",
        answer.stderr
    );
    assert!(
        answer.stdout.lines().any(|l| l == "pong 0: ping"),
        "{}",
        answer.stdout
    );
    replier.wait_for_stderr("Received on subject \"service.echo\"");
    let (status, _) = replier.finish();
    assert_eq!(status, 0);
}

#[test]
fn request_without_responders_fails() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let run = nats(&server, home.path(), &["request", "nobody.home", "x"]);
    assert_ne!(run.status, 0);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("nats: error: "), "{}", run.stderr);
    assert!(last.contains("no responders"), "{}", run.stderr);
}

#[test]
fn pub_jetstream_prints_the_puback() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    cli::add_stream(&server, home.path(), "ORDERS", "orders.>");
    let run = nats(
        &server,
        home.path(),
        &["pub", "orders.new", "one", "--jetstream"],
    );
    run.ok();
    assert!(
        run.stderr.contains("Stored in Stream: ORDERS Sequence: 1"),
        "{}",
        run.stderr
    );
    let failed = nats(&server, home.path(), &["pub", "nowhere", "x", "-J"]);
    assert_ne!(failed.status, 0);
    assert!(failed.stderr.contains("nats: error: "), "{}", failed.stderr);
}

#[test]
fn missing_subject_is_a_usage_error() {
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let run = nats(&server, home.path(), &["pub"]);
    assert_ne!(run.status, 0);
    assert!(run.stderr.starts_with("nats: error: "), "{}", run.stderr);
}

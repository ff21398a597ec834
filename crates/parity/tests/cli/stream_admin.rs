//! `nats stream find` and `nats stream seal`.

use test_harness::cli::{field, nats};
use test_harness::TestServer;

#[test]
fn find_filters_streams_and_seal_stops_changes() {
    let server = TestServer::jetstream();
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    for (name, subjects) in [("ALPHA", "alpha.*"), ("BETA", "beta.>")] {
        nats(
            &server,
            home,
            &["stream", "add", name, "--subjects", subjects, "--defaults"],
        )
        .ok();
    }
    // --jetstream waits for the stream's acknowledgement.
    nats(&server, home, &["pub", "alpha.one", "hello", "--jetstream"]).ok();

    let empty = nats(&server, home, &["stream", "find", "--empty", "-n"]);
    empty.ok();
    assert_eq!(empty.stdout.trim(), "BETA");
    let not_empty = nats(
        &server,
        home,
        &["stream", "find", "--empty", "--invert", "-n"],
    );
    assert_eq!(not_empty.stdout.trim(), "ALPHA");
    let by_subject = nats(
        &server,
        home,
        &["stream", "find", "--subject", "beta.>", "-n"],
    );
    assert_eq!(by_subject.stdout.trim(), "BETA");
    let table = nats(&server, home, &["stream", "find", "--subject", "alpha.>"]);
    table.ok();
    assert!(
        table.stdout.lines().any(|l| l.starts_with("│ ALPHA ")),
        "{}",
        table.stdout
    );
    assert!(!table.stdout.contains("BETA"), "{}", table.stdout);

    let sealed = nats(&server, home, &["stream", "seal", "ALPHA", "-f"]);
    sealed.ok();
    assert!(
        sealed
            .stdout
            .starts_with("Information for Stream ALPHA created "),
        "{}",
        sealed.stdout
    );
    assert_eq!(field(&sealed.stdout, "Sealed"), Some("true"));
    let purge = nats(&server, home, &["stream", "purge", "ALPHA", "-f"]);
    assert_ne!(purge.status, 0, "{}", purge.stdout);
    assert!(purge.stderr.contains("sealed"), "{}", purge.stderr);

    let missing = nats(&server, home, &["stream", "seal", "NOPE", "-f"]);
    assert_ne!(missing.status, 0);
    assert!(
        missing.stderr.starts_with("nats: error: "),
        "{}",
        missing.stderr
    );
}

//! Connecting to servers that need TLS or nkeys, as natscli does: `--tlsca`, `--tlscert` and
//! `--tlskey`, `--tlsfirst`, `tls://` URLs, `--nkey` seed files (bare and decorated), the
//! same settings saved in a context, and the errors when they are missing or wrong.
//! Certificates are made at run time by `test_harness::certificates`: a CA, a server
//! certificate for 127.0.0.1/localhost and a client certificate from the CA. Passes against the real
//! nats-server too (`NATS_SERVER_BIN`).

use test_harness::cli;

use std::path::{Path, PathBuf};
use std::process::Command;

use test_harness::certificates::TestCertificates;
use test_harness::{ServerOptions, TestServer};

fn server_with(config: String, jetstream: bool) -> TestServer {
    TestServer::start(ServerOptions {
        config: Some(config),
        jetstream,
        ..Default::default()
    })
}

/// `nats -s <url> args...` with the test's private config directory.
fn nats_at(url: &str, home: &Path, args: &[&str]) -> cli::Run {
    cli::run(command_at(url, home, args))
}

fn command_at(url: &str, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(test_harness::cli_binary());
    command.arg("-s").arg(url).args(args);
    cli::isolate(&mut command, home);
    command
}

/// `nats --context <name> pub a b`, with no server flag: the context says where and how.
fn publish_with_context(home: &Path, name: &str) {
    let mut command = Command::new(test_harness::cli_binary());
    command.args(["--context", name, "pub", "a", "b"]);
    cli::isolate(&mut command, home);
    cli::run(command).ok();
}

/// `sub <subject> --count 1` in the background, then `pub`, through the same extra flags;
/// the subscriber must print the message and exit.
fn publish_and_receive(url: &str, home: &Path, flags: &[&str]) {
    let subscribe: Vec<&str> = flags
        .iter()
        .copied()
        .chain(["sub", "secure.check", "--count", "1"])
        .collect();
    let mut subscriber = cli::Background::spawn(command_at(url, home, &subscribe));
    subscriber.wait_for_stderr("Subscribing on secure.check");
    let publish: Vec<&str> = flags
        .iter()
        .copied()
        .chain(["pub", "secure.check", "over tls"])
        .collect();
    nats_at(url, home, &publish).ok();
    let (status, stdout) = subscriber.finish();
    assert_eq!(status, 0, "{stdout}");
    assert!(stdout.contains("over tls"), "{stdout}");
}

#[test]
fn tls_server_with_the_ca_flag() {
    let certificates = TestCertificates::generate();
    let server = server_with(certificates.block(""), true);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let ca = certificates.path_text("ca.pem");
    let plain_url = server.url();
    let tls_url = format!("tls://127.0.0.1:{}", server.port);

    publish_and_receive(&plain_url, home, &["--tlsca", &ca]);
    publish_and_receive(&tls_url, home, &["--tlsca", &ca]);
    nats_at(
        &tls_url,
        home,
        &[
            "--tlsca",
            &ca,
            "stream",
            "add",
            "SECURE",
            "--subjects",
            "s.>",
            "--defaults",
        ],
    )
    .ok();
    let listing = nats_at(&tls_url, home, &["--tlsca", &ca, "stream", "ls", "--names"]);
    assert_eq!(listing.ok().stdout.trim(), "SECURE");
    let environment = cli::run({
        let mut command = command_at(&tls_url, home, &["stream", "ls", "--names"]);
        command.env("NATS_CA", &ca);
        command
    });
    assert_eq!(environment.ok().stdout.trim(), "SECURE");

    // Without the CA the server's certificate cannot be verified.
    let unverified = nats_at(&tls_url, home, &["pub", "a", "b"]);
    assert_ne!(unverified.status, 0);
    assert!(
        unverified.stderr.starts_with("nats: error: "),
        "{}",
        unverified.stderr
    );
    // natscli checks the files exist before connecting.
    let missing = nats_at(
        &tls_url,
        home,
        &["--tlsca", "/no/such/ca.pem", "pub", "a", "b"],
    );
    assert_ne!(missing.status, 0);
    assert!(
        missing
            .stderr
            .contains("path '/no/such/ca.pem' does not exist"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_ca_makes_tls_required_as_in_nats_go() {
    let certificates = TestCertificates::generate();
    let server = TestServer::core();
    let home = tempfile::tempdir().expect("tempdir");
    let ca = certificates.path_text("ca.pem");
    // nats.go's RootCAs sets Secure: a server without TLS is refused.
    let refused = nats_at(
        &server.url(),
        home.path(),
        &["--tlsca", &ca, "pub", "a", "b"],
    );
    assert_ne!(refused.status, 0, "{}", refused.stdout);
    assert_eq!(
        refused.stderr.trim(),
        "nats: error: nats: secure connection not available"
    );
}

#[test]
fn client_certificates_for_a_verifying_server() {
    let certificates = TestCertificates::generate();
    let server = server_with(certificates.block("  verify: true"), false);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let (ca, cert, key) = (
        certificates.path_text("ca.pem"),
        certificates.path_text("client-cert.pem"),
        certificates.path_text("client-key.pem"),
    );
    publish_and_receive(
        &server.url(),
        home,
        &["--tlsca", &ca, "--tlscert", &cert, "--tlskey", &key],
    );
    let without = nats_at(&server.url(), home, &["--tlsca", &ca, "pub", "a", "b"]);
    assert_ne!(without.status, 0, "{}", without.stdout);

    // The same settings from a context, as natscli saves them.
    nats_at(
        &server.url(),
        home,
        &[
            "--tlsca",
            &ca,
            "--tlscert",
            &cert,
            "--tlskey",
            &key,
            "context",
            "add",
            "secure",
        ],
    )
    .ok();
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.join("nats/context/secure.json")).expect("context file"),
    )
    .expect("context json");
    assert_eq!(saved["ca"], ca.as_str());
    assert_eq!(saved["cert"], cert.as_str());
    assert_eq!(saved["key"], key.as_str());
    publish_with_context(home, "secure");
    let info = nats_at(&server.url(), home, &["context", "info", "secure"]);
    assert!(
        cli::has_line_with(&info.ok().stdout, &["Certificate:", &cert, "(OK)"]),
        "{}",
        info.stdout
    );
}

#[test]
fn tls_first() {
    let certificates = TestCertificates::generate();
    // A fallback delay keeps plain greetings (the harness's readiness probe) working.
    let server = server_with(certificates.block("  handshake_first: \"300ms\""), false);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let ca = certificates.path_text("ca.pem");
    publish_and_receive(&server.url(), home, &["--tlsca", &ca, "--tlsfirst"]);
    nats_at(
        &server.url(),
        home,
        &["--tlsca", &ca, "--tls-first", "pub", "a", "b"],
    )
    .ok();

    let context = serde_json::json!({
        "url": format!("tls://127.0.0.1:{}", server.port),
        "ca": ca,
        "tls_first": true,
    });
    let directory = home.join("nats/context");
    std::fs::create_dir_all(&directory).expect("context dir");
    std::fs::write(directory.join("first.json"), context.to_string()).expect("write context");
    publish_with_context(home, "first");
    let info = nats_at(&server.url(), home, &["context", "info", "first"]);
    assert!(
        cli::has_line_with(&info.ok().stdout, &["TLS First:", "true"]),
        "{}",
        info.stdout
    );
}

fn nkey_server(public_key: &str) -> TestServer {
    server_with(
        format!("authorization {{ users: [ {{ nkey: {public_key} }} ] }}\n"),
        false,
    )
}

fn write_seed(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write seed");
    path
}

#[test]
fn nkey_seed_files() {
    let user = nkeys::KeyPair::new_user();
    let seed = user.seed().expect("seed");
    let server = nkey_server(&user.public_key());
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let bare = write_seed(home, "user.nk", &format!("{seed}\n"));
    let decorated = write_seed(
        home,
        "decorated.nk",
        &format!(
            "-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n\n\
             *************************************************************\n"
        ),
    );
    let bare = bare.display().to_string();
    publish_and_receive(&server.url(), home, &["--nkey", &bare]);
    nats_at(
        &server.url(),
        home,
        &["--nkey", &decorated.display().to_string(), "pub", "a", "b"],
    )
    .ok();
    let environment = cli::run({
        let mut command = command_at(&server.url(), home, &["pub", "a", "b"]);
        command.env("NATS_NKEY", &bare);
        command
    });
    environment.ok();

    // A context with the nkey, as natscli saves it.
    nats_at(
        &server.url(),
        home,
        &["--nkey", &bare, "context", "add", "keyed"],
    )
    .ok();
    publish_with_context(home, "keyed");

    // Another user's key signs the nonce: not authorized.
    let stranger = nkeys::KeyPair::new_user();
    let stranger_file = write_seed(home, "stranger.nk", &stranger.seed().expect("seed"));
    let refused = nats_at(
        &server.url(),
        home,
        &[
            "--nkey",
            &stranger_file.display().to_string(),
            "pub",
            "a",
            "b",
        ],
    );
    assert_ne!(refused.status, 0);
    assert_eq!(
        refused.stderr.trim(),
        "nats: error: nats: Authorization Violation"
    );
    // A file without a seed is an error before connecting.
    let empty = write_seed(home, "empty.nk", "nothing\n");
    let invalid = nats_at(
        &server.url(),
        home,
        &["--nkey", &empty.display().to_string(), "pub", "a", "b"],
    );
    assert_ne!(invalid.status, 0);
    assert!(invalid.stderr.contains("nkey"), "{}", invalid.stderr);
}

#[test]
fn nkey_over_tls() {
    let certificates = TestCertificates::generate();
    let user = nkeys::KeyPair::new_user();
    let server = server_with(
        format!(
            "{}authorization {{ users: [ {{ nkey: {} }} ] }}\n",
            certificates.block(""),
            user.public_key()
        ),
        false,
    );
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let seed = write_seed(home, "user.nk", &user.seed().expect("seed"));
    let ca = certificates.path_text("ca.pem");
    publish_and_receive(
        &server.url(),
        home,
        &["--tlsca", &ca, "--nkey", &seed.display().to_string()],
    );
}

/// natscli's TLS rows in `account info`: version and cipher suite, the name the client
/// asked for (none for an IP address) and the issuer of the server's certificate.
#[test]
fn account_info_describes_the_tls_session() {
    let certificates = TestCertificates::generate();
    let server = server_with(certificates.block("  verify: true"), false);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let flags = [
        "--tlsca",
        &certificates.path_text("ca.pem"),
        "--tlscert",
        &certificates.path_text("client-cert.pem"),
        "--tlskey",
        &certificates.path_text("client-key.pem"),
    ]
    .map(String::from);
    let arguments = |extra: &[&str]| -> Vec<String> {
        flags
            .iter()
            .cloned()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect()
    };
    let by_name = format!("tls://localhost:{}", server.port);
    let account_info = |url: &str| {
        let arguments = arguments(&["account", "info"]);
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        nats_at(url, home, &arguments)
    };
    let run = account_info(&by_name);
    let text = &run.ok().stdout;
    let version = cli::field(text, "TLS Version").expect("TLS Version row");
    assert!(
        version.starts_with("1.3 using TLS_") || version.starts_with("1.2 using TLS_"),
        "{text}"
    );
    assert_eq!(cli::field(text, "TLS Server Name"), Some("localhost"));
    assert_eq!(
        cli::field(text, "TLS Verified"),
        Some(format!("issuer CN={}", test_harness::certificates::CA_NAME).as_str())
    );
    assert_eq!(cli::field(text, "TLS Connection"), None, "{text}");

    let by_address = account_info(&server.url());
    let text = &by_address.ok().stdout;
    assert_eq!(cli::field(text, "TLS Server Name"), Some(""), "{text}");
}

//! TLS for client connections: INFO fields, the upgrade after INFO, client certificates with
//! `verify`, `handshake_first`, the `--tls*` flags, plain-text clients and config errors.
//! Certificates are generated at run time by `test_harness::certificates` (a CA, a server
//! certificate for 127.0.0.1/localhost, a client certificate from the CA and one from an
//! unknown CA).
//! Passes against the real nats-server too (`NATS_SERVER_BIN`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use test_harness::certificates::TestCertificates;
use test_harness::{free_port, server_binary, RawClient, ServerOptions, SpawnTied, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn start(config: String) -> TestServer {
    TestServer::start(ServerOptions {
        config: Some(config),
        ..Default::default()
    })
}

fn info_of(server: &TestServer) -> serde_json::Value {
    serde_json::from_str(&RawClient::connect(server).info).unwrap()
}

pub(super) async fn connect_tls(
    url: &str,
    certificates: &TestCertificates,
    client_certificate: Option<&str>,
) -> Result<async_nats::Client, String> {
    let mut options = async_nats::ConnectOptions::new()
        .require_tls(true)
        .add_root_certificates(certificates.ca());
    if let Some(name) = client_certificate {
        options = options.add_client_certificate(
            certificates.path(&format!("{name}-cert.pem")),
            certificates.path(&format!("{name}-key.pem")),
        );
    }
    match tokio::time::timeout(WAIT, options.connect(url)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

/// A message published on one TLS connection arrives on another. Published until it arrives
/// (bounded): a flush does not prove the subscription reached the server before the publish.
pub(super) async fn round_trip(publisher: &async_nats::Client, subscriber: &async_nats::Client) {
    use futures::StreamExt;
    let mut subscription = subscriber.subscribe("tls.check").await.unwrap();
    subscriber.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        publisher
            .publish("tls.check", "secret".into())
            .await
            .unwrap();
        publisher.flush().await.unwrap();
        match tokio::time::timeout(Duration::from_millis(200), subscription.next()).await {
            Ok(Some(message)) => {
                assert_eq!(&message.payload[..], b"secret");
                return;
            }
            Ok(None) => panic!("subscription ended"),
            Err(_) => assert!(tokio::time::Instant::now() < deadline, "nothing arrived"),
        }
    }
}

#[tokio::test]
async fn info_requires_tls_and_clients_upgrade_after_it() {
    let certificates = TestCertificates::generate();
    let server = start(certificates.block(""));
    let info = info_of(&server);
    assert_eq!(info["tls_required"], true);
    assert!(info.get("tls_verify").is_none(), "{info}");
    assert!(info.get("tls_available").is_none(), "{info}");
    let first = connect_tls(&server.url(), &certificates, None)
        .await
        .unwrap();
    let second = connect_tls(&server.url(), &certificates, None)
        .await
        .unwrap();
    round_trip(&first, &second).await;
}

#[tokio::test]
async fn verify_requires_a_client_certificate_from_the_ca() {
    let certificates = TestCertificates::generate();
    let server = start(certificates.block("  verify: true\n  timeout: 2"));
    let info = info_of(&server);
    assert_eq!(info["tls_required"], true);
    assert_eq!(info["tls_verify"], true);
    let first = connect_tls(&server.url(), &certificates, Some("client"))
        .await
        .unwrap();
    let second = connect_tls(&server.url(), &certificates, Some("client"))
        .await
        .unwrap();
    round_trip(&first, &second).await;
    assert!(connect_tls(&server.url(), &certificates, None)
        .await
        .is_err());
    assert!(connect_tls(&server.url(), &certificates, Some("stranger"))
        .await
        .is_err());
}

#[tokio::test]
async fn tls_and_passwords_together() {
    let certificates = TestCertificates::generate();
    let server = start(format!(
        "{}authorization {{ user: alice, password: wonderland }}\n",
        certificates.block("")
    ));
    let info = info_of(&server);
    assert_eq!(info["auth_required"], true);
    assert_eq!(info["tls_required"], true);
    let connected = tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::with_user_and_password("alice".into(), "wonderland".into())
            .require_tls(true)
            .add_root_certificates(certificates.ca())
            .connect(server.url()),
    )
    .await
    .unwrap();
    let client = connected.unwrap();
    client.flush().await.unwrap();
}

/// nats-server reads the client's first bytes as a TLS record: plain text is not one, and the
/// connection ends without a word (Go's TLS sends no alert for it).
#[test]
fn plain_text_client_is_closed_without_a_reply() {
    let certificates = TestCertificates::generate();
    let server = start(certificates.block(""));
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(""));
}

/// A client that says nothing after INFO is closed once the TLS timeout passes.
#[test]
fn silent_client_is_closed_after_the_tls_timeout() {
    let certificates = TestCertificates::generate();
    let server = start(certificates.block("  timeout: 0.5"));
    let mut client = RawClient::connect(&server);
    client.timeout = Duration::from_secs(5);
    let started = std::time::Instant::now();
    assert_eq!(client.read_to_close().as_deref(), Some(""));
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[test]
fn allow_non_tls_offers_tls_and_keeps_plain_clients() {
    let certificates = TestCertificates::generate();
    let server = start(format!("{}allow_non_tls: true\n", certificates.block("")));
    let mut client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["tls_available"], true);
    assert!(info.get("tls_required").is_none(), "{info}");
    client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
    client.expect_line("PONG");
}

/// `handshake_first`: no INFO in the clear; a `tls_first` client handshakes at once.
#[tokio::test]
async fn handshake_first_sends_info_only_after_the_handshake() {
    let certificates = TestCertificates::generate();
    let port = free_port();
    let config = certificates.path("first.conf");
    std::fs::write(
        &config,
        format!(
            "port: {port}\n{}",
            certificates.block("  handshake_first: true")
        ),
    )
    .unwrap();
    let mut child = Command::new(server_binary())
        .args(["-a", "127.0.0.1", "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_tied()
        .unwrap();
    let url = format!("tls://127.0.0.1:{port}");
    let options = || {
        async_nats::ConnectOptions::new()
            .tls_first()
            .add_root_certificates(certificates.ca())
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    let client = loop {
        match tokio::time::timeout(WAIT, options().connect(&url)).await {
            Ok(Ok(client)) => break client,
            _ if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => panic!("no tls_first connection: {:?}", other.map(|r| r.err())),
        }
    };
    let other = options().connect(&url).await.unwrap();
    round_trip(&client, &other).await;

    // A plain client hears nothing: the server waits for a ClientHello.
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buffer = [0u8; 16];
    let read = std::io::Read::read(&mut &stream, &mut buffer);
    assert!(
        matches!(&read, Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "{read:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn command_line_flags_turn_tls_on() {
    let certificates = TestCertificates::generate();
    let server = TestServer::start(ServerOptions {
        args: vec![
            "--tlscert".into(),
            certificates.path("server-cert.pem").display().to_string(),
            "--tlskey".into(),
            certificates.path("server-key.pem").display().to_string(),
            "--tlscacert".into(),
            certificates.ca().display().to_string(),
            "--tlsverify".into(),
        ],
        ..Default::default()
    });
    let info = info_of(&server);
    assert_eq!(info["tls_required"], true);
    assert_eq!(info["tls_verify"], true);
    connect_tls(&server.url(), &certificates, Some("client"))
        .await
        .unwrap();
}

/// Run the server expecting it to refuse to start; its stderr.
fn refused(arguments: &[&str]) -> String {
    let output = Command::new(server_binary())
        .args(["-a", "127.0.0.1", "-p", &free_port().to_string()])
        .args(arguments)
        .stdin(Stdio::null())
        .dies_with_this_thread()
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("server.conf");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn bad_tls_settings_stop_the_server_with_nats_server_messages() {
    let certificates = TestCertificates::generate();
    let cert = certificates.path("server-cert.pem").display().to_string();
    let key = certificates.path("server-key.pem").display().to_string();
    assert!(refused(&["--tls"]).contains("TLS Server certificate must be present and valid"));
    assert!(
        refused(&["--tlscert", &cert]).contains("TLS Server private key must be present and valid")
    );
    let missing = certificates.path("missing.pem").display().to_string();
    assert!(
        refused(&["--tlscert", &missing, "--tlskey", &key]).contains(&format!(
            "error parsing X509 certificate/key pair: open {missing}: no such file or directory"
        ))
    );
    let dir = certificates.dir.path();
    let config = write_config(dir, &format!("tls {{\n  cert_file: \"{cert}\"\n}}\n"));
    assert!(refused(&["-c", &config]).contains("missing 'key_file' in TLS configuration"));
    let config = write_config(
        dir,
        &format!("tls {{\n  cert_file: \"{cert}\"\n  key_file: \"{key}\"\n  foo: 1\n}}\n"),
    );
    assert!(refused(&["-c", &config]).contains("error parsing tls config, unknown field \"foo\""));
    let config = write_config(
        dir,
        &format!("tls {{\n  cert_file: \"{cert}\"\n  key_file: \"{key}\"\n  verify: 1\n}}\n"),
    );
    assert!(refused(&["-c", &config])
        .contains("error parsing tls config, expected 'verify' to be a boolean"));
}

/// `handshake_first` with a fallback delay: a client silent for that long gets INFO in the
/// clear and upgrades as usual; a `tls_first` client handshakes at once. /connz and /varz
/// show TLS.
#[tokio::test]
async fn handshake_first_with_fallback_serves_both_kinds_of_clients() {
    let certificates = TestCertificates::generate();
    let server = TestServer::start(ServerOptions {
        config: Some(certificates.block("  handshake_first: \"300ms\"")),
        monitoring: true,
        ..Default::default()
    });
    let info = info_of(&server);
    assert_eq!(info["tls_required"], true);
    let usual = connect_tls(&server.url(), &certificates, None)
        .await
        .unwrap();
    let first = tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::new()
            .tls_first()
            .add_root_certificates(certificates.ca())
            .connect(server.url()),
    )
    .await
    .unwrap()
    .unwrap();
    round_trip(&usual, &first).await;
    let connections = test_harness::monitoring::get_json(&server, "/connz")["connections"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(connections.len(), 2, "{connections:?}");
    for connection in &connections {
        assert!(
            connection["tls_version"]
                .as_str()
                .is_some_and(|version| version.starts_with("1.")),
            "{connection}"
        );
        assert!(
            connection["tls_cipher_suite"]
                .as_str()
                .is_some_and(|suite| suite.starts_with("TLS_")),
            "{connection}"
        );
    }
    let firsts = connections
        .iter()
        .filter(|connection| connection["tls_first"] == true)
        .count();
    assert_eq!(firsts, 1, "{connections:?}");
}

/// A client certificate from the test CA with the given subject (most general first) and
/// subject alternative names; written as `<name>-cert.pem` / `<name>-key.pem`.
/// A client certificate `<name>-cert.pem`/`<name>-key.pem` from the test CA, returned too.
pub(super) fn client_certificate(
    certificates: &TestCertificates,
    name: &str,
    subject: &[(rcgen::DnType, &str)],
    alternative_names: Vec<rcgen::SanType>,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for (kind, value) in subject {
        params.distinguished_name.push(kind.clone(), *value);
    }
    params.subject_alt_names = alternative_names;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = params
        .signed_by(&key, &certificates.ca, &certificates.ca_key)
        .unwrap();
    std::fs::write(
        certificates.path(&format!("{name}-cert.pem")),
        certificate.pem(),
    )
    .unwrap();
    std::fs::write(
        certificates.path(&format!("{name}-key.pem")),
        key.serialize_pem(),
    )
    .unwrap();
    (certificate, key)
}

/// `verify_and_map`: the client certificate names the user (e-mail, DNS name, or subject DN);
/// a certificate naming no user is an authorization violation.
#[tokio::test]
async fn verify_and_map_names_users_by_their_certificate() {
    use rcgen::{DnType, SanType};
    let certificates = TestCertificates::generate();
    client_certificate(
        &certificates,
        "alice",
        &[(DnType::CommonName, "alice")],
        vec![SanType::Rfc822Name("alice@example.com".try_into().unwrap())],
    );
    client_certificate(
        &certificates,
        "bob",
        &[
            (DnType::OrganizationName, "Acme"),
            (DnType::OrganizationalUnitName, "dev"),
            (DnType::CommonName, "bob"),
        ],
        Vec::new(),
    );
    client_certificate(
        &certificates,
        "carol",
        &[(DnType::CommonName, "carol")],
        vec![SanType::DnsName("carol.example".try_into().unwrap())],
    );
    client_certificate(
        &certificates,
        "dave",
        &[(DnType::CommonName, "dave")],
        Vec::new(),
    );
    let server = start(format!(
        "{}authorization {{ users: [ {{ user: \"alice@example.com\" }}, {{ user: \"CN=bob,OU=dev,O=Acme\" }}, {{ user: \"carol.example\", permissions: {{ publish: \"carol.>\" }} }} ] }}\n",
        certificates.block("  verify_and_map: true")
    ));
    let info = info_of(&server);
    assert_eq!(info["tls_verify"], true);
    assert_eq!(info["auth_required"], true);
    let alice = connect_tls(&server.url(), &certificates, Some("alice"))
        .await
        .unwrap();
    let bob = connect_tls(&server.url(), &certificates, Some("bob"))
        .await
        .unwrap();
    round_trip(&alice, &bob).await;
    connect_tls(&server.url(), &certificates, Some("carol"))
        .await
        .unwrap();
    let refused = connect_tls(&server.url(), &certificates, Some("dave")).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|error| error.to_lowercase().contains("authorization")),
        "{:?}",
        refused.map(|_| ())
    );
}

//! `/connz` `tls_peer_certs`: with `auth=1`, each certificate a verified TLS client presented
//! (its subject as Go prints a `pkix.Name`, the SHA-256 of its SubjectPublicKeyInfo and of the
//! whole certificate); left out without `auth`, and for closed connections; `wss` clients show
//! their TLS session as TLS clients do. Passes against nats-server too (`NATS_SERVER_BIN`).

use super::tls::{client_certificate, connect_tls};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
use test_harness::certificates::TestCertificates;
use test_harness::monitoring::get_json;
use test_harness::{ServerOptions, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn verified_client_certificates_are_shown_with_auth() {
    use rcgen::DnType;
    let certificates = TestCertificates::generate();
    // Certificate order differs from Go's canonical one (C, ST, L, O, OU, CN).
    let (certificate, key) = client_certificate(
        &certificates,
        "peer",
        &[
            (DnType::CommonName, "peer"),
            (DnType::CountryName, "DE"),
            (DnType::OrganizationName, "Acme"),
            (DnType::LocalityName, "Berlin"),
        ],
        Vec::new(),
    );
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        config: Some(certificates.block("  verify: true")),
        ..Default::default()
    });
    let client = connect_tls(&server.url(), &certificates, Some("peer"))
        .await
        .expect("connect with the certificate");
    client.flush().await.expect("flush");

    let shown = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + WAIT;
        loop {
            let connz = get_json(&server, "/connz?auth=1");
            let connection = connz["connections"]
                .as_array()
                .and_then(|list| list.iter().find(|c| c.get("tls_version").is_some()))
                .cloned();
            if let Some(connection) = connection {
                return connection;
            }
            assert!(Instant::now() < deadline, "no TLS connection: {connz}");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_eq!(
        shown["tls_peer_certs"],
        json!([{
            "subject": "CN=peer,O=Acme,L=Berlin,C=DE",
            "spki_sha256": hex_sha256(&key.public_key_der()),
            "cert_sha256": hex_sha256(certificate.der()),
        }]),
        "{shown}"
    );
    let cid = shown["cid"].as_u64().expect("cid");
    let plain = tokio::task::block_in_place(|| get_json(&server, &format!("/connz?cid={cid}")));
    let connection = &plain["connections"][0];
    assert!(connection["tls_version"].is_string(), "{plain}");
    assert!(connection.get("tls_peer_certs").is_none(), "{plain}");

    // Closed connections are saved without them.
    drop(client);
    let closed = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + WAIT;
        loop {
            let connz = get_json(&server, &format!("/connz?state=closed&auth=1&cid={cid}"));
            if let Some(connection) = connz["connections"].get(0).cloned() {
                return connection;
            }
            assert!(Instant::now() < deadline, "{cid} never closed: {connz}");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert!(closed["tls_version"].is_string(), "{closed}");
    assert!(closed.get("tls_peer_certs").is_none(), "{closed}");
}

/// A `wss` client shows its TLS session like a TLS client: version, cipher suite and, with
/// `auth=1`, the certificate it presented to the websocket listener's `verify`.
#[tokio::test(flavor = "multi_thread")]
async fn wss_connections_show_their_tls_session() {
    let certificates = TestCertificates::generate();
    let (certificate, _) = client_certificate(
        &certificates,
        "browser",
        &[(rcgen::DnType::CommonName, "browser")],
        Vec::new(),
    );
    let port = test_harness::free_port();
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        config: Some(format!(
            "websocket {{\n  listen: \"127.0.0.1:{port}\"\n  {}\n}}\n",
            certificates.block("  verify: true")
        )),
        ..Default::default()
    });
    super::websocket::wait_for_port(port);
    let client = tokio::time::timeout(
        WAIT,
        async_nats::ConnectOptions::new()
            .add_root_certificates(certificates.ca())
            .add_client_certificate(
                certificates.path("browser-cert.pem"),
                certificates.path("browser-key.pem"),
            )
            .connect(format!("wss://localhost:{port}")),
    )
    .await
    .expect("connect in time")
    .expect("connect over wss");
    client.flush().await.expect("flush");
    let connz = tokio::task::block_in_place(|| get_json(&server, "/connz?auth=1"));
    let connection = &connz["connections"][0];
    assert_eq!(connection["type"], "websocket", "{connz}");
    assert!(connection["tls_version"].is_string(), "{connz}");
    assert!(connection["tls_cipher_suite"].is_string(), "{connz}");
    assert_eq!(
        connection["tls_peer_certs"][0]["cert_sha256"],
        hex_sha256(certificate.der()),
        "{connz}"
    );
    assert_eq!(connection["tls_peer_certs"][0]["subject"], "CN=browser");
}

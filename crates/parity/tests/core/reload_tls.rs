//! Client TLS reloaded on SIGHUP, as nats-server's `tlsOption`: new certificate files (new
//! paths, or the same paths rotated on disk) serve the connections made after the reload,
//! connections made before keep theirs and go on working; the TLS timeout has its own notice;
//! a certificate that does not load refuses the whole reload and the running TLS stays. New
//! websocket certificates serve the `wss://` clients connecting after the reload. The same
//! tests pass against nats-server.

use super::reload::{await_log, rewrite_and_hangup};
use super::tls::{connect_tls, round_trip};
use test_harness::certificates::TestCertificates;
use test_harness::{path_in, ServerOptions, TestServer};

fn start(config: &str) -> TestServer {
    TestServer::start(ServerOptions {
        config: Some(config.to_string()),
        ..Default::default()
    })
}

/// Copy another set's server certificate, key and CA over this set's files.
fn rotate(into: &TestCertificates, from: &TestCertificates) {
    for name in ["server-cert.pem", "server-key.pem", "ca.pem"] {
        std::fs::copy(from.path(name), into.path(name)).expect("rotate certificate");
    }
}

#[tokio::test]
async fn new_certificates_serve_new_connections_and_old_ones_stay() {
    let first = TestCertificates::generate();
    let second = TestCertificates::generate();
    let server = start(&first.block(""));
    let before = connect_tls(&server.url(), &first, None)
        .await
        .expect("TLS with the first CA");

    // New paths: the second set.
    rewrite_and_hangup(&server, &second.block(""));
    await_log(&server, "Reloaded: tls = enabled", 1);
    await_log(&server, "Reloaded server configuration", 1);
    assert!(
        connect_tls(&server.url(), &first, None).await.is_err(),
        "the first CA still trusted after the reload"
    );
    let after = connect_tls(&server.url(), &second, None)
        .await
        .expect("TLS with the second CA");
    round_trip(&before, &after).await;
    round_trip(&after, &before).await;

    // The handshake timeout has its own notice (nats-server also repeats `tls = enabled`
    // whenever a `ca_file` is set: its reloaded CA pool never compares equal).
    rewrite_and_hangup(&server, &second.block("  timeout: 3"));
    await_log(&server, "Reloaded: tls timeout = 3", 1);
    await_log(&server, "Reloaded server configuration", 2);

    // The same paths with rotated contents (what a certificate renewal does).
    let notices = server.log().matches("Reloaded: tls = enabled").count();
    let third = TestCertificates::generate();
    rotate(&second, &third);
    rewrite_and_hangup(&server, &second.block("  timeout: 3"));
    await_log(&server, "Reloaded: tls = enabled", notices + 1);
    await_log(&server, "Reloaded server configuration", 3);
    let rotated = connect_tls(&server.url(), &third, None)
        .await
        .expect("TLS with the rotated CA");
    round_trip(&rotated, &before).await;
}

#[tokio::test]
async fn a_certificate_that_does_not_load_keeps_the_running_tls() {
    let certificates = TestCertificates::generate();
    let server = start(&certificates.block(""));
    let missing = path_in(&server, "missing-cert.pem");
    let broken = certificates.block("").replace(
        &certificates.path_text("server-cert.pem"),
        &missing.display().to_string(),
    );
    rewrite_and_hangup(&server, &broken);
    await_log(&server, "Failed to reload server configuration", 1);
    assert!(!server.log().contains("Reloaded: tls"));
    let client = connect_tls(&server.url(), &certificates, None)
        .await
        .expect("the running TLS still serves");
    round_trip(&client, &client).await;
}

/// A websocket client over `wss://` on `port` trusting `certificates`' CA: connected, or why
/// not.
async fn connect_wss(
    port: u16,
    certificates: &TestCertificates,
) -> Result<async_nats::Client, String> {
    tokio::time::timeout(
        super::websocket::WAIT,
        async_nats::ConnectOptions::new()
            .add_root_certificates(certificates.ca())
            .connect(format!("wss://localhost:{port}")),
    )
    .await
    .map_err(|_| "no connection in time".to_string())?
    .map_err(|error| error.to_string())
}

/// Websocket TLS reloaded as nats-server's `wsGetTLSConfig` reads it at each handshake: new
/// certificates serve the `wss://` clients that connect after the reload, and the websocket
/// clients connected before keep working.
#[tokio::test]
async fn new_websocket_certificates_serve_new_wss_clients() {
    let (first, second) = (TestCertificates::generate(), TestCertificates::generate());
    let port = test_harness::free_port();
    let config = |certificates: &TestCertificates| {
        format!(
            "websocket {{\n  listen: \"127.0.0.1:{port}\"\n  {}\n}}\n",
            certificates.block("")
        )
    };
    let server = start(&config(&first));
    super::websocket::wait_for_port(port);
    let before = connect_wss(port, &first)
        .await
        .expect("wss with the first CA");
    rewrite_and_hangup(&server, &config(&second));
    await_log(&server, "Reloaded server configuration", 1);
    assert!(
        !server.log().contains("config reload not supported"),
        "{}",
        server.log()
    );
    assert!(
        connect_wss(port, &first).await.is_err(),
        "the first CA still trusted after the reload"
    );
    let after = connect_wss(port, &second)
        .await
        .expect("wss with the second CA");
    round_trip(&before, &after).await;
    round_trip(&after, &before).await;
}

//! Start-up: the JetStream banner section and the default store location under the OS temp dir
//! (honouring TMPDIR) when no store_dir is given.

use test_harness::client;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::client::api;
use test_harness::{free_port, server_binary, SpawnTied, TestServer};

#[test]
fn banner_shows_the_jetstream_section() {
    let server = TestServer::jetstream();
    let store = server.store_dir.clone().expect("store dir");
    let deadline = Instant::now() + Duration::from_secs(10);
    // The banner is logged before the server accepts clients, but the log may be buffered.
    while !server.log().contains("API Level:") {
        assert!(Instant::now() < deadline, "no banner: {}", server.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = server.log();
    for expected in [
        "---------------- JETSTREAM ----------------".to_string(),
        "  Strict:          true".to_string(),
        "  Max Memory:      ".to_string(),
        "  Max Storage:     ".to_string(),
        format!(
            "  Store Directory: \"{}\"",
            store.join("jetstream").display()
        ),
        "  API Level:       5".to_string(),
        "-------------------------------------------".to_string(),
        "https://docs.nats.io/jetstream".to_string(),
    ] {
        assert!(log.contains(&expected), "missing {expected:?} in:\n{log}");
    }
}

/// Kills the server when the test ends, however it ends.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn default_store_lives_under_tmpdir() {
    let temp = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = ChildGuard(
        Command::new(server_binary())
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js"])
            .env("TMPDIR", temp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_tied()
            .expect("spawn server"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = tokio::time::timeout(
        client::TIMEOUT,
        async_nats::connect(format!("nats://127.0.0.1:{port}")),
    )
    .await
    .expect("connect in time")
    .unwrap_or_else(|error| panic!("connect to 127.0.0.1:{port}: {error}"));
    let created = api(&client, "$JS.API.STREAM.CREATE.TMP", r#"{"name":"TMP"}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    let stream_dir = temp.path().join("nats/jetstream/$G/streams/TMP");
    assert!(
        stream_dir.is_dir(),
        "no stream directory at {}",
        stream_dir.display()
    );
}

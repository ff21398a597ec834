//! nats-py's websocket transport against the server under test: runs
//! `websocket_nats_py.py` (pub/sub between a `ws://` and a TCP client, request/reply between
//! two websocket clients with headers both ways and no-responders, header messages published
//! over `ws://`, a JetStream publish over `ws://` with its PubAck). Skipped, with the
//! reason printed, where python3, nats-py or aiohttp (nats-py's websocket transport) is
//! missing; `.ci/run` installs them. Runs against nats-server too (`NATS_SERVER_BIN`).

use super::websocket::wait_for_port;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::{free_port, ServerOptions, TestServer};

/// Why the Python client cannot run here, if it cannot.
fn python_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import nats, aiohttp"])
        .output()
    {
        Err(error) => Some(format!("python3 not runnable: {error}")),
        Ok(output) if !output.status.success() => Some(format!(
            "nats-py or aiohttp not importable (pip install nats-py aiohttp): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// Kills the script if the test panics before it exits.
struct Script(std::process::Child);

impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn nats_py_over_websocket_publishes_subscribes_and_gets_pub_acks() {
    if let Some(reason) = python_missing() {
        println!("skipped: {reason}");
        return;
    }
    let websocket_port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "websocket {{ listen: \"127.0.0.1:{websocket_port}\", no_tls: true }}\n"
        )),
        jetstream: true,
        ..Default::default()
    });
    wait_for_port(websocket_port);
    let script = format!(
        "{}/tests/core/websocket_nats_py.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut child = Script(
        Command::new("python3")
            .arg(&script)
            .arg(format!("ws://127.0.0.1:{websocket_port}"))
            .arg(server.url())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start python3"),
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.0.try_wait().expect("poll python3").is_none() {
        assert!(
            Instant::now() < deadline,
            "websocket_nats_py.py did not finish in 90 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut output = String::new();
    if let Some(mut stdout) = child.0.stdout.take() {
        let _ = stdout.read_to_string(&mut output);
    }
    if let Some(mut stderr) = child.0.stderr.take() {
        let _ = stderr.read_to_string(&mut output);
    }
    let status = child.0.wait().expect("python3 status");
    assert!(status.success(), "websocket_nats_py.py failed:\n{output}");
}

//! Key-Value through nats-py (the Python client) against the server under test: runs
//! `key_value_nats_py.py`, which exercises put/get/update/create/delete/purge/history/keys/watch
//! and their errors (plus `sources_nats_py.py`: mirrors and sources configured through nats-py).
//! Skipped, with the reason printed, where python3 or nats-py is missing
//! (`pip install nats-py`). Runs against nats-server too (`NATS_SERVER_BIN`).

use std::process::Command;
use std::time::{Duration, Instant};
use test_harness::{ServerOptions, TestServer};

/// Why the Python client cannot run here, if it cannot.
fn python_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import nats, nats.js.kv"])
        .output()
    {
        Err(error) => Some(format!("python3 not runnable: {error}")),
        Ok(output) if !output.status.success() => Some(format!(
            "nats-py not importable (pip install nats-py): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// Run one of the Python scripts next to this file against a fresh server (the server's URL,
/// then `args`); fails with its output when the script does.
pub(crate) fn run_script(name: &str, args: &[&str]) {
    run_script_on(ServerOptions::default(), name, args)
}

/// [`run_script`] against a JetStream server started with `options` (`-js` added).
pub(crate) fn run_script_on(options: ServerOptions, name: &str, args: &[&str]) {
    if let Some(reason) = python_missing() {
        println!("skipped: {reason}");
        return;
    }
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        ..options
    });
    let script = format!("{}/tests/jetstream/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(server.url())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start python3");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("poll python3").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{name} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("python3 output");
    assert!(
        output.status.success(),
        "{name} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn key_value_through_nats_py() {
    run_script("key_value_nats_py.py", &[]);
}

/// Mirrors and sources configured through nats-py's stream config encoding.
#[test]
fn sources_and_mirrors_through_nats_py() {
    run_script("sources_nats_py.py", &[]);
}

//! Shared helpers for the CLI's end-to-end tests: run our `nats` binary against a test
//! server with a private config directory and a bounded wait.

#![allow(dead_code)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use test_harness::TestServer;

pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> &Run {
        assert_eq!(
            self.status, 0,
            "command failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A `nats` command with `-s <server>`, no inherited NATS_* settings and its own config dir
/// (so a developer's contexts never leak in).
pub fn command(server: &TestServer, config_dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(test_harness::cli_binary());
    command.arg("-s").arg(server.url()).args(args);
    isolate(&mut command, config_dir);
    command
}

pub fn isolate(command: &mut Command, config_dir: &Path) {
    for variable in [
        "NATS_URL",
        "NATS_USER",
        "NATS_PASSWORD",
        "NATS_TOKEN",
        "NATS_CREDS",
        "NATS_CONTEXT",
        "NATS_TIMEOUT",
    ] {
        command.env_remove(variable);
    }
    command.env("XDG_CONFIG_HOME", config_dir);
    command.env("HOME", config_dir);
}

/// Run to completion (at most 30 s) with standard input closed.
pub fn run(mut command: Command) -> Run {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn nats");
    let mut stdout_pipe = child.stdout.take().expect("stdout");
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let stdout_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout_pipe.read_to_string(&mut text);
        text
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nats did not finish within 30s: {command:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status: status.code().unwrap_or(-1),
        stdout: stdout_reader.join().unwrap_or_default(),
        stderr: stderr_reader.join().unwrap_or_default(),
    }
}

/// Run `nats -s <server> args...`.
pub fn nats(server: &TestServer, config_dir: &Path, args: &[&str]) -> Run {
    run(command(server, config_dir, args))
}

/// A line of `text` containing all of `needles`.
pub fn has_line_with(text: &str, needles: &[&str]) -> bool {
    text.lines()
        .any(|line| needles.iter().all(|needle| line.contains(needle)))
}

/// The value right of `label:` in a columns report, trimmed.
pub fn field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let trimmed = line.trim_start();
        trimmed
            .strip_prefix(label)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// A JetStream server, or `None` (test skipped, with a note) when the server under test is
/// ours and does not answer `$JS.API.INFO` yet. The reference server always runs the test.
pub fn jetstream_server() -> Option<TestServer> {
    let server = TestServer::jetstream();
    if test_harness::is_reference() || answers_jetstream_info(&server) {
        return Some(server);
    }
    eprintln!("skipping: the server under test does not answer $JS.API.INFO");
    None
}

fn answers_jetstream_info(server: &TestServer) -> bool {
    use std::io::{BufRead, BufReader, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(server.addr()) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    let probe = "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\nSUB _probe.reply 1\r\nPUB $JS.API.INFO _probe.reply 0\r\n\r\nPING\r\n";
    if stream.write_all(probe.as_bytes()).is_err() {
        return false;
    }
    let mut reader = BufReader::new(stream);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line.starts_with("MSG _probe.reply") => return true,
            Ok(_) if line.starts_with("HMSG _probe.reply") => return false,
            Ok(_) => {}
        }
    }
    false
}

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

/// A long-running `nats` process (sub, reply) whose standard error lines are read as they
/// come, so a test can wait for "Subscribing on ..." before publishing.
pub struct Background {
    pub child: std::process::Child,
    stderr_lines: std::sync::mpsc::Receiver<String>,
    stdout_reader: Option<std::thread::JoinHandle<String>>,
    pub stderr_seen: Vec<String>,
}

impl Background {
    pub fn spawn(mut command: Command) -> Background {
        use std::io::BufRead;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn nats");
        let stderr = child.stderr.take().expect("stderr");
        let mut stdout = child.stdout.take().expect("stdout");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdout_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        Background {
            child,
            stderr_lines: receiver,
            stdout_reader: Some(stdout_reader),
            stderr_seen: Vec::new(),
        }
    }

    /// Wait (at most 15 s) for a standard error line containing `needle`.
    pub fn wait_for_stderr(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.stderr_seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("no {needle:?} on stderr; saw {:?}", self.stderr_seen),
            }
        }
    }

    /// Wait (at most 15 s) for the process to exit; returns status and standard output.
    pub fn finish(mut self) -> (i32, String) {
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "background nats did not exit; stderr {:?}",
                    self.stderr_seen
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let stdout = self
            .stdout_reader
            .take()
            .map(|reader| reader.join().unwrap_or_default())
            .unwrap_or_default();
        (status.code().unwrap_or(-1), stdout)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JetStream server whose consumer deliveries carry the stored message's subject (what
/// every client library relies on), or `None` (test skipped, with a note) when the server
/// under test is ours and does not do that yet. The reference server always runs the test.
pub fn jetstream_server_with_consumers() -> Option<TestServer> {
    let server = jetstream_server()?;
    if test_harness::is_reference() || deliveries_keep_subject(&server) {
        return Some(server);
    }
    eprintln!(
        "skipping: consumer deliveries of the server under test do not carry the message subject"
    );
    None
}

fn deliveries_keep_subject(server: &TestServer) -> bool {
    use std::io::{BufRead, BufReader, Write};
    let Ok(stream) = std::net::TcpStream::connect(server.addr()) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    let Ok(mut writer) = stream.try_clone() else {
        return false;
    };
    let mut reader = BufReader::new(stream);
    let setup = "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\nSUB _probe.reply 1\r\nSUB _probe.deliver 2\r\n";
    if writer.write_all(setup.as_bytes()).is_err() {
        return false;
    }
    // Publish one frame and return the head line of the next MSG/HMSG that arrives.
    let mut exchange = |subject: &str, reply: &str, body: &str| -> Option<String> {
        let frame = format!("PUB {subject} {reply} {}\r\n{body}\r\n", body.len());
        writer.write_all(frame.as_bytes()).ok()?;
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut line = String::new();
        while Instant::now() < deadline {
            line.clear();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line.starts_with("MSG ") || line.starts_with("HMSG ") {
                let head = line.trim().to_string();
                let mut payload = String::new();
                reader.read_line(&mut payload).ok()?;
                return Some(head);
            }
        }
        None
    };
    let stream_config = r#"{"name":"CLIPROBE","subjects":["cliprobe.subject"],"storage":"memory"}"#;
    let consumer_config = r#"{"stream_name":"CLIPROBE","config":{"durable_name":"P","ack_policy":"none","deliver_policy":"all"}}"#;
    let steps = [
        (
            "$JS.API.STREAM.CREATE.CLIPROBE",
            "_probe.reply",
            stream_config,
        ),
        ("cliprobe.subject", "_probe.reply", "x"),
        (
            "$JS.API.CONSUMER.CREATE.CLIPROBE.P",
            "_probe.reply",
            consumer_config,
        ),
    ];
    for (subject, reply, body) in steps {
        if exchange(subject, reply, body).is_none() {
            return false;
        }
    }
    let delivery = exchange(
        "$JS.API.CONSUMER.MSG.NEXT.CLIPROBE.P",
        "_probe.deliver",
        r#"{"batch":1,"expires":1000000000}"#,
    );
    let _ = exchange("$JS.API.STREAM.DELETE.CLIPROBE", "_probe.reply", "");
    delivery.is_some_and(|head| {
        head.starts_with("MSG cliprobe.subject ") || head.starts_with("HMSG cliprobe.subject ")
    })
}

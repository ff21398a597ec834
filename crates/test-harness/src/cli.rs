//! Run our `nats` CLI against a test server the way a user does: a private config directory
//! (no developer's contexts or NATS_* settings leak in), a bounded wait, standard output and
//! error captured; long-running commands read line by line; prompts answered in a
//! pseudo-terminal.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::TestServer;

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
    let mut command = Command::new(crate::cli_binary());
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
        "NATS_NKEY",
        "NATS_JWT",
        "NATS_SEED",
        "NATS_CERT",
        "NATS_KEY",
        "NATS_CA",
        "NATS_CONTEXT",
        "NATS_TIMEOUT",
    ] {
        command.env_remove(variable);
    }
    command.env("XDG_CONFIG_HOME", config_dir);
    command.env("HOME", config_dir);
}

/// Run to completion (at most 30 s) with standard input closed.
pub fn run(command: Command) -> Run {
    run_with_stdin(command, Stdio::null())
}

/// Run to completion (at most 30 s) reading standard input from `stdin` (e.g. a file).
pub fn run_with_stdin(mut command: Command, stdin: impl Into<Stdio>) -> Run {
    command
        .stdin(stdin)
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

/// `stream add <name> --subjects <subjects> --defaults`, which must succeed.
pub fn add_stream(server: &TestServer, config_dir: &Path, name: &str, subjects: &str) {
    nats(
        server,
        config_dir,
        &["stream", "add", name, "--subjects", subjects, "--defaults"],
    )
    .ok();
}

/// A `nats` command pointed at a free port where no server listens.
pub fn unreachable_server_command(config_dir: &Path, args: &[&str]) -> Command {
    let port = crate::free_port();
    let mut command = Command::new(crate::cli_binary());
    command
        .arg("-s")
        .arg(format!("nats://127.0.0.1:{port}"))
        .args(args);
    isolate(&mut command, config_dir);
    command
}

/// `nats -s <server> <args>` in a pseudo-terminal, so it asks its questions; each expectation
/// waits at most 15 s.
pub fn spawn_in_terminal(
    server: &TestServer,
    config_dir: &Path,
    args: &[&str],
) -> rexpect::session::PtySession {
    let mut command = Command::new(crate::cli_binary());
    command.arg("-s").arg(server.url()).args(args);
    isolate(&mut command, config_dir);
    command.env("TERM", "xterm");
    rexpect::session::spawn_command(command, Some(15_000)).expect("spawn in pty")
}

/// Waits for each prompt in turn and types its answer followed by Enter.
pub fn answer_prompts(session: &mut rexpect::session::PtySession, answers: &[(&str, &str)]) {
    for (prompt, answer) in answers {
        session
            .exp_string(prompt)
            .unwrap_or_else(|e| panic!("prompt {prompt:?} not shown: {e}"));
        session.send(answer).expect("send answer");
        session.send("\r").expect("send enter");
        session.flush().expect("flush");
    }
}

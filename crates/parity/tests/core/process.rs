//! Running the server binary with arguments of a test's choosing (start-up failures, signal
//! commands, listeners the harness does not set up), bounded in time and killed on every
//! exit path.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::{server_binary, SpawnTied};

/// A server process; killed and reaped when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a process that exited printed.
pub struct Finished {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Start the server binary with `args`, output piped.
pub fn spawn(args: &[&str]) -> Running {
    let child = Command::new(server_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_tied()
        .expect("spawn the server binary");
    Running(child)
}

/// Run the server binary with `args` until it exits; `None` if it still runs after the bound
/// (it then is killed).
pub fn run(args: &[&str], bound: Duration) -> Option<Finished> {
    let mut running = spawn(args);
    let deadline = Instant::now() + bound;
    let status = loop {
        if let Ok(Some(status)) = running.0.try_wait() {
            break status;
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(pipe) = running.0.stdout.as_mut() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    if let Some(pipe) = running.0.stderr.as_mut() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    Some(Finished {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    })
}

/// The INFO line a server at `address` sends, once it answers (bounded wait).
pub fn info_line(address: SocketAddr) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut line = String::new();
            if BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("INFO ") {
                return Ok(line);
            }
        }
        if Instant::now() > deadline {
            return Err(format!("no INFO from {address}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

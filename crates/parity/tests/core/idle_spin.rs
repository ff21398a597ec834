//! A runtime worker watches for the next message a short while before it sleeps (on by default;
//! `RNATS_IDLE_SPIN_US`, `nats-server/src/idle_spin.rs`): the watch must end, so a server that
//! goes quiet after a burst of requests uses no CPU. Passes against nats-server too (which
//! ignores the variable; its scheduler spins on its own).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::waits::await_some;
use test_harness::{free_port, server_binary, RawClient, SpawnTied};

/// A server started with the default watch (or `RNATS_IDLE_SPIN_US` as given), killed when
/// dropped.
struct Watching {
    child: Child,
    address: String,
    log: std::path::PathBuf,
    _temp: tempfile::TempDir,
}

impl Watching {
    fn start(extra: &[&str]) -> Watching {
        Watching::start_with(extra, None)
    }

    fn start_with(extra: &[&str], spin_us: Option<&str>) -> Watching {
        let temp = tempfile::tempdir().expect("tempdir");
        let log = temp.path().join("server.log");
        let port = free_port();
        let file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(server_binary());
        command.env_remove("RNATS_IDLE_SPIN_US");
        if let Some(spin_us) = spin_us {
            command.env("RNATS_IDLE_SPIN_US", spin_us);
        }
        let child = command
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .args(extra)
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .stdin(Stdio::null())
            .spawn_tied()
            .expect("start the server");
        let server = Watching {
            child,
            address: format!("127.0.0.1:{port}"),
            log,
            _temp: temp,
        };
        await_some("the server listening", test_harness::START_TIMEOUT, || {
            std::net::TcpStream::connect(&server.address).ok()
        });
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn client(&self) -> RawClient {
        let mut client = RawClient::connect_addr(&self.address);
        client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
        client.read_until_line("PONG");
        client
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The fields after the command's closing parenthesis: state first, utime the 12th.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// The next MSG line, answering the server's PINGs on the way (nats-server pings a new client
/// early to measure its round trip).
fn next_msg(client: &mut RawClient) -> String {
    loop {
        let line = client.read_line().expect("a MSG line");
        if line == "PING" {
            client.send("PONG\r\n");
            continue;
        }
        return line;
    }
}

/// One round trip: the requester publishes, the responder answers, the requester reads it.
fn round_trip(requester: &mut RawClient, responder: &mut RawClient) {
    requester.send("PUB echo _INBOX.idle 4\r\nping\r\n");
    assert_eq!(next_msg(responder), "MSG echo 1 _INBOX.idle 4");
    assert_eq!(responder.read_payload(4).as_deref(), Some(&b"ping"[..]));
    responder.send("PUB _INBOX.idle 4\r\npong\r\n");
    assert_eq!(next_msg(requester), "MSG _INBOX.idle 1 4");
    assert_eq!(requester.read_payload(4).as_deref(), Some(&b"pong"[..]));
}

#[test]
fn a_server_gone_quiet_after_requests_uses_no_cpu() {
    let server = Watching::start(&[]);
    let mut responder = server.client();
    responder.send("SUB echo 1\r\nPING\r\n");
    responder.expect_line("PONG");
    let mut requester = server.client();
    requester.send("SUB _INBOX.idle 1\r\nPING\r\n");
    requester.expect_line("PONG");
    for _ in 0..2_000 {
        round_trip(&mut requester, &mut responder);
    }
    // Then nothing: over 3 s a worker left watching would burn a core (300 ticks at 100 Hz on an
    // idle machine, still tens at a load of 20 on 2 cores); a quiet server uses none.
    let started = Instant::now();
    let before = cpu_ticks(server.child.id());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(server.child.id()) - before;
    let elapsed = started.elapsed();
    assert!(
        used <= 6,
        "the quiet server used {used} ticks of CPU in {elapsed:?}"
    );
    // Still serving.
    round_trip(&mut requester, &mut responder);
}

#[test]
fn the_watch_finds_the_runtime_epoll() {
    if test_harness::is_reference() {
        // rnats' own start-up line.
        return;
    }
    // On by default.
    let server = Watching::start(&["-D"]);
    let line = idle_spin_line(&server);
    assert!(line.contains("idle spin: watching"), "{line}");
    // And 0 turns it off.
    let server = Watching::start_with(&["-D"], Some("0"));
    let line = idle_spin_line(&server);
    assert!(line.contains("idle spin off"), "{line}");
}

fn idle_spin_line(server: &Watching) -> String {
    await_some("the idle spin line", Duration::from_secs(10), || {
        server
            .log()
            .lines()
            .find(|line| line.contains("idle spin"))
            .map(str::to_owned)
    })
}

//! The binary as a process: flags, config errors, logging, pid and ports files, graceful
//! shutdown. Passes against nats-server too (where the wording is shared).

use std::process::Command;
use test_harness::waits::await_some;
use test_harness::{server_binary, RawClient, ServerOptions, SpawnTied, TestServer};

#[test]
fn version_flag() {
    let output = Command::new(server_binary())
        .arg("-v")
        .dies_with_this_thread()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(text.starts_with("nats-server: v2."), "{text}");
}

#[test]
fn help_flag_lists_single_dash_flags() {
    let output = Command::new(server_binary())
        .arg("-h")
        .dies_with_this_thread()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    for flag in [
        "-js, --jetstream",
        "-sd, --store_dir",
        "-DV",
        "-m, --http_port",
    ] {
        assert!(text.contains(flag), "help lacks {flag}: {text}");
    }
}

#[test]
fn unknown_flag_is_refused() {
    // nats-server prints the error and the usage and exits 0; we do the same.
    let output = Command::new(server_binary())
        .arg("--bogus")
        .dies_with_this_thread()
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("flag provided but not defined: -bogus"),
        "{text}"
    );
}

#[test]
fn bad_config_file_refuses_to_start_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.conf");
    std::fs::write(&path, "port: 4333\nfoo_bar: 1\n").unwrap();
    let output = Command::new(server_binary())
        .args(["-c", path.to_str().unwrap()])
        .dies_with_this_thread()
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("bad.conf:2:1: unknown field \"foo_bar\""),
        "{text}"
    );
}

#[test]
fn flags_override_the_config_file() {
    let port = test_harness::free_port();
    // The harness passes -p after -c's file says another port.
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "port: {}\nserver_name: from_file\n",
            test_harness::free_port()
        )),
        port: Some(port),
        args: vec!["-n".into(), "from_flag".into()],
        ..Default::default()
    });
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["port"], port);
    assert_eq!(info["server_name"], "from_flag");
}

#[test]
fn banner_pid_ports_file_and_graceful_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let pid_path = dir.path().join("server.pid");
    let mut server = TestServer::start(ServerOptions {
        monitoring: true,
        args: vec![
            "-P".into(),
            pid_path.display().to_string(),
            "--ports_file_dir".into(),
            dir.path().display().to_string(),
        ],
        ..Default::default()
    });
    let pid = server.pid().unwrap();
    // The client port may serve before the rest of start-up is done: nats-server writes the
    // ports file and logs "Server is ready" at the end of Start, after its accept loop began.
    let bound = std::time::Duration::from_secs(10);
    let written = await_some("pid file", bound, || {
        std::fs::read_to_string(&pid_path)
            .ok()
            .filter(|text| !text.trim().is_empty())
    });
    assert_eq!(written.trim(), pid.to_string());
    let ports: serde_json::Value = await_some("ports file", bound, || {
        let name = std::fs::read_dir(dir.path())
            .ok()?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().to_string())
            .find(|name| name.ends_with(&format!("_{pid}.ports")))?;
        // Whole once it parses (nats-server writes it in place, not renamed into place).
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).ok()?).ok()
    });
    assert_eq!(
        ports["nats"][0],
        format!("nats://127.0.0.1:{}", server.port)
    );
    assert_eq!(
        ports["monitoring"][0],
        format!("http://127.0.0.1:{}", server.monitor_port.unwrap())
    );
    let log = await_some("\"Server is ready\" in the log", bound, || {
        Some(server.log()).filter(|log| log.contains("[INF] Server is ready"))
    });
    assert!(log.contains("[INF] Starting nats-server"), "{log}");
    assert!(
        log.contains(&format!(
            "[INF] Listening for client connections on 127.0.0.1:{}",
            server.port
        )),
        "{log}"
    );
    let first = log.lines().next().unwrap();
    assert!(first.starts_with(&format!("[{pid}] ")), "{first}");
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    assert_eq!(server.stop(), Some(0));
    assert!(client.read_to_close().is_some(), "client connection closed");
    let log = server.log();
    assert!(log.contains("[INF] Trapped \"terminated\" signal"), "{log}");
    assert!(log.contains("[INF] Server Exiting.."), "{log}");
}

#[test]
fn log_file_and_debug_trace() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let mut server = TestServer::start(ServerOptions {
        args: vec!["-DV".into(), "-l".into(), log_path.display().to_string()],
        ..Default::default()
    });
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.send("SUB traced.subject 1\r\n");
    client.ping_collect();
    server.stop();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("[INF] Server is ready"), "{log}");
    assert!(log.contains("[DBG]"), "{log}");
    assert!(
        log.contains("[TRC]") && log.contains("SUB traced.subject 1"),
        "{log}"
    );
}

#[test]
fn sighup_does_not_stop_the_server() {
    let server = TestServer::core();
    let pid = server.pid().unwrap() as i32;
    // SAFETY: kill(2) on the pid of our own child process.
    unsafe {
        libc::kill(pid, libc::SIGHUP);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !server.log().contains("hangup") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    assert_eq!(client.ping_collect(), ["PONG"]);
}

/// The open-file soft limit is raised to the hard limit at start, as Go's runtime does for
/// nats-server (Go 1.19 and later): started from a shell whose soft limit is 256, the server
/// reports (about) its hard limit as its soft one and takes 400 connections.
#[test]
fn the_open_file_soft_limit_is_raised_to_the_hard_limit() {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    const SOFT: libc::rlim_t = 256;
    const CONNECTIONS: usize = 400;
    let mut own = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a struct we own.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut own) }, 0);
    if own.rlim_max < CONNECTIONS as libc::rlim_t + 64 {
        println!("skipped: the hard open-file limit is {}", own.rlim_max);
        return;
    }
    /// Kills the server on every exit path.
    struct Child(std::process::Child);
    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let port = test_harness::free_port();
    let mut command = Command::new(server_binary());
    command
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: getrlimit/setrlimit are async-signal-safe; only the child's limit changes.
    unsafe {
        command.pre_exec(|| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = SOFT;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = Child(command.spawn_tied().expect("spawn the server"));
    let address = format!("127.0.0.1:{port}");
    await_some(
        "the server's port",
        std::time::Duration::from_secs(30),
        || std::net::TcpStream::connect(&address).ok(),
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.0.id())).unwrap();
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap_or_default();
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |field: Option<&&str>| field.and_then(|text| text.parse::<libc::rlim_t>().ok());
    let (soft, hard) = (number(fields.get(3)), number(fields.get(4)));
    assert_eq!(hard, Some(own.rlim_max), "hard limit: {line}");
    // nats-server 2.15.1 (Go's runtime) reports one below the hard limit; ours the hard limit.
    assert!(
        soft.is_some_and(|soft| soft + 1 >= own.rlim_max),
        "soft limit not raised: {line}"
    );
    let mut clients: Vec<RawClient> = (0..CONNECTIONS)
        .map(|_| RawClient::connect_addr(&address))
        .collect();
    for client in &mut clients {
        client.send("CONNECT {\"verbose\":false}\r\n");
    }
    for (index, client) in clients.iter_mut().enumerate() {
        let lines = client.ping_collect();
        assert!(
            lines.iter().any(|line| line == "PONG"),
            "connection {index}: {lines:?}"
        );
    }
}

/// Ours grows its descriptor table once at start, to the open-file limit (at most 65,536
/// slots), while it has one thread: a storm of connections then never waits in the kernel's
/// table doublings (in a threaded process each waits for an RCU grace period, and the accept
/// queue overflowed meanwhile). Read as `FDSize` in /proc/PID/status, against the server's own
/// soft limit. Ours only: nats-server grows its table as descriptors are taken.
#[test]
fn the_descriptor_table_is_grown_at_start() {
    if test_harness::is_reference() {
        println!("skipped: ours only (nats-server grows its table as descriptors are taken)");
        return;
    }
    let server = TestServer::start(ServerOptions::default());
    let pid = server.pid().expect("the server's pid");
    let field = |file: &str, prefix: &str, index: usize| -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).expect(file);
        let line = text
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} in /proc/{pid}/{file}: {text}"));
        line.split_whitespace()
            .nth(index)
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("a number in {line:?}"))
    };
    let soft = field("limits", "Max open files", 3);
    let table = field("status", "FDSize:", 1);
    let wanted = soft.min(65_536);
    assert!(
        table >= wanted,
        "descriptor table {table} slots, open-file limit {soft}: expected at least {wanted}"
    );
}

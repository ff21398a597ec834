//! Servers die with the test process that started them, whichever thread started them
//! (`SpawnTied`): a test process killed without its destructors leaves no server behind, and a
//! server started from a thread that has ended keeps serving.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use test_harness::waits::await_some;
use test_harness::{RawClient, SpawnTied, TestServer};

/// Set in the child process run by [`a_killed_test_process_leaves_no_server_behind`].
const CHILD_VAR: &str = "TEST_HARNESS_SPAWN_TIED_CHILD";

const BOUND: Duration = Duration::from_secs(20);

/// The calling thread's kernel task id.
fn thread_id() -> i32 {
    // SAFETY: gettid(2) has no preconditions.
    unsafe { libc::gettid() }
}

/// Wait (bounded) until the thread with kernel task id `tid` of this process has fully exited:
/// its exit, which sends the death signals of the children it forked, is done once its
/// `/proc/self/task` entry is gone (a `join` returns a little earlier).
fn await_thread_gone(tid: i32) {
    let path = format!("/proc/self/task/{tid}");
    await_some("the thread to exit", BOUND, || {
        (!std::path::Path::new(&path).exists()).then_some(())
    });
}

/// True when process `pid` is gone: no `/proc` entry, or a zombie nobody reaped yet.
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Not a test on its own (ignored, so a plain run neither counts nor runs it): run by
/// [`a_killed_test_process_leaves_no_server_behind`] in a child process. Starts a server from a
/// thread that ends at once, says its pid and port, and waits (bounded) to be killed.
#[test]
#[ignore = "the child process of a_killed_test_process_leaves_no_server_behind"]
fn child_entry() {
    if std::env::var_os(CHILD_VAR).is_none() {
        println!(
            "child_entry runs only as the child of a_killed_test_process_leaves_no_server_behind"
        );
        return;
    }
    let (server, tid) = std::thread::spawn(|| (TestServer::core(), thread_id()))
        .join()
        .expect("the starting thread");
    await_thread_gone(tid);
    // On a line of its own: the test runner has printed the test's name without a line end.
    println!(
        "\nspawned-server {} {}",
        server.pid().expect("the server runs"),
        server.port
    );
    std::thread::sleep(BOUND * 3);
}

#[test]
fn a_killed_test_process_leaves_no_server_behind() {
    let exe = std::env::current_exe().expect("current_exe");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "child_entry",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn_tied()
        .expect("run the child test process");
    let stdout = child.stdout.take().expect("piped stdout");
    let (said, heard) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("spawned-server ") {
                let _ = said.send(rest.to_string());
            }
        }
    });
    let line = heard
        .recv_timeout(BOUND * 2)
        .expect("the child process says its server's pid and port");
    let (pid, port) = line.split_once(' ').expect("pid and port");
    let pid: u32 = pid.parse().expect("pid");
    let address = format!("127.0.0.1:{port}");

    // Started from a thread that has ended, the server still runs and serves.
    assert!(!process_gone(pid), "the server died with its thread");
    let mut client = RawClient::connect_addr(&address);
    client.send("CONNECT {\"verbose\":false}\r\n");
    assert_eq!(client.ping_collect(), ["PONG"]);
    drop(client);

    // kill -9 the test process: no destructor runs, and the server dies with it.
    child.kill().expect("kill -9 the child test process");
    child.wait().expect("reap the child test process");
    await_some("the server to die with its test process", BOUND, || {
        process_gone(pid).then_some(())
    });
    await_some("the server's port to close", BOUND, || {
        std::net::TcpStream::connect(&address)
            .is_err()
            .then_some(())
    });
}

/// The premise: a child tied to a thread (`dies_with_this_thread`, what every spawn did before
/// the spawner thread) is killed when that thread ends, which is why servers are forked from
/// the harness's long-lived spawner thread instead.
#[test]
fn a_child_tied_to_a_thread_dies_with_it() {
    let (mut child, tid) = std::thread::spawn(|| {
        let child = Command::new("sleep")
            .arg("60")
            .dies_with_this_thread()
            .spawn()
            .expect("spawn sleep");
        (child, thread_id())
    })
    .join()
    .expect("the spawning thread");
    await_thread_gone(tid);
    let status = await_some("sleep to be killed", BOUND, || {
        child.try_wait().expect("try_wait")
    });
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

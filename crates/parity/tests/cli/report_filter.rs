//! `nats server report` flags as natscli has them: `connections --filter EXPR` and
//! `--closed-reason REASON` (natscli's expr-lang filter over each connection, with
//! `Conn`/`conn` and `Server`/`server`), against a server with a system account: the
//! expression keeps the connections it is true for, the closed reason matches the lower-cased
//! reason of closed connections, both at once and an expression that does not compile are
//! refused; natscli's time filters (`Conn.Start`, `LastActivity`, `Stop` are Go times, compared
//! with `now()`, `duration()`, `date()` and their methods); and `--watch N`, the report repeated
//! until SIGTERM. The CLI is ours against both servers.

use std::time::{Duration, Instant};

use serde_json::Value;
use test_harness::{cli, TestServer};

const CONFIG: &str = r#"
server_name: filtered
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { users: [ { user: a, password: a } ] }
}
system_account: SYS
"#;

async fn client(server: &TestServer, name: &str) -> async_nats::Client {
    super::report_archive::connect(server, "a", name).await
}

/// The report's `--json` connections (`args` after `server report connections 1`), by name.
fn names(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Vec<String> {
    let run = report(server, home, args);
    let mut names: Vec<String> = super::report_archive::entries(&run, args)
        .iter()
        .map(|entry| entry["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

/// `nats server report <report> 1 <args>` as the system user.
fn report_args<'a>(report: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut arguments = vec![
        "--user",
        "sys",
        "--password",
        "sys",
        "server",
        "report",
        report,
        "1",
    ];
    arguments.extend_from_slice(args);
    arguments
}

fn report(server: &TestServer, home: &std::path::Path, args: &[&str]) -> cli::Run {
    cli::nats(server, home, &report_args("connections", args))
}

#[tokio::test]
async fn filter_and_closed_reason_select_connections() {
    let server = TestServer::with_config(CONFIG);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let busy = client(&server, "busy").await;
    for _ in 0..3 {
        busy.publish("x", "12345".into()).await.expect("publish");
    }
    busy.flush().await.expect("flush");
    let _idle = client(&server, "idle").await;
    let gone = client(&server, "gone").await;
    drop(gone);

    // The Go names and the JSON names, over the connection and its server.
    for (expression, expected) in [
        (
            "Conn.InMsgs > 2 && conn.account == 'A' && Server.Name == 'filtered'",
            "busy",
        ),
        ("conns.in_msgs == 0 && Conns.Name startsWith 'i'", "idle"),
        // A name that is no variable is nil (natscli's AllowUndefinedVariables).
        ("Nobody == nil && conn.name == 'idle'", "idle"),
    ] {
        let args = ["--account", "A", "--json", "--filter", expression];
        assert_eq!(names(&server, home, &args), [expected], "{expression}");
    }

    // The closed connection, once the server lists it (bounded): until then the report finds
    // no connection and says so.
    let closed_args = [
        "--account",
        "A",
        "--state",
        "closed",
        "--json",
        "--closed-reason",
        "client",
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while report(&server, home, &closed_args).status != 0 {
        assert!(Instant::now() < deadline, "no closed connection listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(names(&server, home, &closed_args), ["gone"]);
    let none = report(
        &server,
        home,
        &[
            "--account",
            "A",
            "--state",
            "closed",
            "--closed-reason",
            "stale",
        ],
    );
    assert_ne!(none.status, 0, "{}", none.stdout);
    assert!(
        none.stderr.contains("did not get results from any servers"),
        "{}",
        none.stderr
    );

    let both = report(&server, home, &["--filter", "true", "--closed-reason", "x"]);
    assert_ne!(both.status, 0, "{}", both.stdout);
    assert!(
        both.stderr.contains(
            "cannot filter for closed reason and use a filter expression at the same time"
        ),
        "{}",
        both.stderr
    );
    let broken = report(&server, home, &["--filter", "Conn.Cid =="]);
    assert_ne!(broken.status, 0, "{}", broken.stdout);
    assert!(
        broken.stderr.contains("Invalid expression"),
        "{}",
        broken.stderr
    );
}

/// The report's `--json` connections (`args` after `server report connections 1`), by name,
/// or none when the report finds no connection (it then fails saying so, as natscli's).
fn names_or_none(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Vec<String> {
    let run = report(server, home, args);
    if run.status != 0 && run.stderr.contains("did not get results from any servers") {
        return Vec::new();
    }
    names(server, home, args)
}

/// natscli's time filters: `Conn.Start`, `Conn.LastActivity` and `Conn.Stop` are Go times,
/// compared with each other, with `now()` and `duration()`, with a `date()` and through their
/// methods (`Before`, `After`, `Sub`, `Equal`, `IsZero`).
#[tokio::test]
async fn time_filters_compare_go_times() {
    let server = TestServer::with_config(CONFIG);
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let _early = client(&server, "early").await;
    let _late = client(&server, "late").await;

    // The server's own start time of `early`, as the report's JSON gives it.
    let run = report(&server, home, &["--account", "A", "--json"]);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    let entries: Value = serde_json::from_str(&run.stdout).expect("report JSON");
    let early_start = entries
        .as_array()
        .and_then(|entries| entries.iter().find(|entry| entry["name"] == "early"))
        .and_then(|entry| entry["start"].as_str())
        .unwrap_or_else(|| panic!("no start of early in {}", run.stdout))
        .to_string();

    for (expression, expected) in [
        (
            format!("Conn.Start.Equal(date('{early_start}'))"),
            &["early"][..],
        ),
        (format!("Conn.Start > date('{early_start}')"), &["late"]),
        (
            format!("Conn.Start.After(date('{early_start}')) || conn.start == '{early_start}'"),
            &["early", "late"],
        ),
        (
            "Conn.Start > now() - duration('1h') && Conn.Stop == nil".to_string(),
            &["early", "late"],
        ),
        (
            "Conn.LastActivity.Before(now().Add(duration('1m'))) && !Conn.Start.IsZero()"
                .to_string(),
            &["early", "late"],
        ),
        (
            "now().Sub(Conn.Start) < duration('1h') && Conn.Start.Year() >= 2024".to_string(),
            &["early", "late"],
        ),
        ("Conn.Start < now() - duration('1h')".to_string(), &[]),
    ] {
        let args = ["--account", "A", "--json", "--filter", &expression];
        assert_eq!(
            names_or_none(&server, home, &args),
            expected,
            "{expression}"
        );
    }

    // A closed connection's `Conn.Stop` is a time after its start.
    let gone = client(&server, "gone").await;
    drop(gone);
    let closed = [
        "--account",
        "A",
        "--state",
        "closed",
        "--json",
        "--filter",
        "Conn.Stop != nil && Conn.Stop.After(Conn.Start) && now() - Conn.Stop < duration('1m')",
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while names_or_none(&server, home, &closed).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the closed connection is not kept"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(names(&server, home, &closed), ["gone"]);
}

/// `--watch N`: the report now and again every N seconds, the screen cleared before each
/// table, until SIGTERM ends it with status 0 (natscli's watcher).
#[test]
fn watch_repeats_the_report_until_terminated() {
    let server = TestServer::with_config(CONFIG);
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = cli::command(
        &server,
        home.path(),
        &report_args("health", &["--watch", "1"]),
    );
    command.stdout(std::process::Stdio::piped());
    let mut child = command.spawn().expect("start nats");
    let mut stdout = child.stdout.take().expect("stdout");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = std::io::Read::read(&mut stdout, &mut buffer) {
                if read == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buffer[..read]).to_string();
                seen.lock().expect("lock").push_str(&text);
            }
        })
    };
    let reports = || seen.lock().expect("lock").matches("Health Report").count();
    let deadline = Instant::now() + Duration::from_secs(15);
    while reports() < 2 {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!(
                "fewer than 2 reports in 15 s: {}",
                seen.lock().expect("lock")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill only sends a signal to the child this test started.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll nats") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("nats --watch did not end on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().expect("reader");
    let text = seen.lock().expect("lock").clone();
    assert!(status.success(), "{status}: {text}");
    assert!(text.matches("\x1b[2J\x1b[H").count() >= 2, "{text:?}");
}

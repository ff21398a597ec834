//! `nats server report connections --filter EXPR` and `--closed-reason REASON` (natscli's
//! expr-lang filter over each connection, with `Conn`/`conn` and `Server`/`server`), against a
//! server with a system account: the expression keeps the connections it is true for, the
//! closed reason matches the lower-cased reason of closed connections, both at once and an
//! expression that does not compile are refused. The CLI is ours against both servers.

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
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        async_nats::ConnectOptions::with_user_and_password("a".into(), "a".into())
            .name(name)
            .connect(server.url()),
    )
    .await
    .expect("connect in time")
    .expect("connect");
    client.flush().await.expect("flush");
    client
}

/// The report's `--json` connections (`args` after `server report connections 1`), by name.
fn names(server: &TestServer, home: &std::path::Path, args: &[&str]) -> Vec<String> {
    let run = report(server, home, args);
    assert_eq!(run.status, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    let entries: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", run.stdout));
    let mut names: Vec<String> = entries
        .as_array()
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .iter()
        .map(|entry| entry["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

fn report(server: &TestServer, home: &std::path::Path, args: &[&str]) -> cli::Run {
    let mut arguments = vec![
        "--user",
        "sys",
        "--password",
        "sys",
        "server",
        "report",
        "connections",
        "1",
    ];
    arguments.extend_from_slice(args);
    cli::nats(server, home, &arguments)
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

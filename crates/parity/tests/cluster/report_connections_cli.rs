//! Our `nats server report connections`, `accounts` and `health` (issue 16) against a
//! three-node cluster with a system account, run as natscli runs them with a system user.
//! Account A has two clients on node 0 (one publishes three messages the other receives) and
//! one with two subscriptions on node 1; account B one client on node 2 that publishes two
//! messages nobody receives. The reports show each connection on its server with its figures,
//! natscli's sort, `--top` and totals row, the connections per server, the per-account sums,
//! one account's connections, `--subject`, `--json`, and every server healthy. The CLI is ours
//! against both servers.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use serde_json::Value;
use test_harness::cluster::{Cluster, ClusterOptions, Topology};

use crate::jetstream_elsewhere::cli;
use crate::meta::kind;
use crate::report_cli::{column, tables, Table};
use crate::support::PROPAGATION_TIMEOUT;

const CONFIG: &str = r#"
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { users: [ { user: a, password: a } ] }
  B { users: [ { user: b, password: b } ] }
}
system_account: SYS
authorization { users: [ { user: g, password: g } ] }
no_auth_user: g
"#;

const PAYLOAD: &str = "12345";

async fn client(cluster: &Cluster, node: usize, user: &str, name: &str) -> Client {
    let client = async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .name(name)
        .ignore_discovered_servers()
        .connect(cluster.url(node))
        .await
        .unwrap_or_else(|e| panic!("connect {name} to node {node}: {e}"));
    client.flush().await.expect("flush");
    client
}

/// Each data row of `table` as (column header -> cell).
fn cell<'a>(table: &'a Table, row: &'a [String], header: &str) -> &'a str {
    &row[column(table, header)]
}

const CONNECTION_HEADERS: [&str; 12] = [
    "CID",
    "Name",
    "Server",
    "Cluster",
    "IP",
    "Account",
    "Uptime",
    "In Msgs",
    "Out Msgs",
    "In Bytes",
    "Out Bytes",
    "Subs",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reports_connections_and_accounts_of_every_server() {
    let mut options = ClusterOptions::new(&[kind(), kind(), kind()], Topology::FullMesh);
    options.name = "conns".into();
    options.extra_config = CONFIG.into();
    let cluster = Cluster::start(options);
    let home = tempfile::tempdir().expect("tempdir");
    let names: Vec<String> = cluster.nodes().iter().map(|n| n.name.clone()).collect();
    let cluster_name = cluster.options.name.clone();

    // Account A: a0 (node 0) receives what a0p (node 0) publishes; a1 (node 1) holds two
    // subscriptions nothing matches. Account B: b2 (node 2) publishes to nobody.
    let a0 = client(&cluster, 0, "a", "a0").await;
    let mut received = a0.subscribe("ra.>").await.expect("subscribe");
    a0.flush().await.expect("flush");
    let a0p = client(&cluster, 0, "a", "a0p").await;
    for _ in 0..3 {
        a0p.publish("ra.x", PAYLOAD.into()).await.expect("publish");
    }
    a0p.flush().await.expect("flush");
    for n in 0..3 {
        tokio::time::timeout(Duration::from_secs(5), received.next())
            .await
            .unwrap_or_else(|_| panic!("a0 did not receive message {n}"));
    }
    let a1 = client(&cluster, 1, "a", "a1").await;
    let _own1 = a1.subscribe("ra.own1").await.expect("subscribe");
    let _own2 = a1.subscribe("ra.own2").await.expect("subscribe");
    a1.flush().await.expect("flush");
    let b2 = client(&cluster, 2, "b", "b2").await;
    let _y = b2.subscribe("rb.y").await.expect("subscribe");
    for _ in 0..2 {
        b2.publish("rb.x", PAYLOAD.into()).await.expect("publish");
    }
    b2.flush().await.expect("flush");
    let system = cluster.url(2).replacen("nats://", "nats://sys:sys@", 1);

    // connections --account A: sorted by subscriptions (ascending, natscli's default), every
    // figure, the totals row and the connections per server.
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "connections", "3", "--account", "A"],
    );
    assert!(ok, "nats server report connections --account A:\n{text}");
    let shown = tables(&text);
    assert_eq!(shown.len(), 2, "{text}");
    let (report, per_server) = (&shown[0], &shown[1]);
    assert_eq!(report.title, "Top 3 Connections out of 3 by subs", "{text}");
    assert_eq!(report.headers, CONNECTION_HEADERS, "{text}");
    let expected = [
        // name, node, in msgs, out msgs, in bytes, out bytes, subs
        ("a0p", 0, "3", "0", "15 B", "0 B", "0"),
        ("a0", 0, "0", "3", "0 B", "15 B", "1"),
        ("a1", 1, "0", "0", "0 B", "0 B", "2"),
    ];
    assert_eq!(report.rows.len(), expected.len(), "{text}");
    for (row, (name, node, in_msgs, out_msgs, in_bytes, out_bytes, subs)) in
        report.rows.iter().zip(expected)
    {
        let at = |header: &str| cell(report, row, header);
        assert_eq!(at("Name"), name, "{text}");
        assert_eq!(at("Server"), names[node], "{text}");
        assert_eq!(at("Cluster"), cluster_name, "{text}");
        assert_eq!(at("Account"), "A", "{text}");
        assert!(at("CID").parse::<u64>().is_ok(), "{text}");
        assert!(at("IP").starts_with("127.0.0.1:"), "{text}");
        assert!(!at("Uptime").is_empty(), "{text}");
        assert_eq!(
            [
                at("In Msgs"),
                at("Out Msgs"),
                at("In Bytes"),
                at("Out Bytes"),
                at("Subs")
            ],
            [in_msgs, out_msgs, in_bytes, out_bytes, subs],
            "{name}: {text}"
        );
    }
    assert_eq!(
        report.footer,
        [
            "",
            "Totals for 3 connections",
            "",
            "",
            "",
            "",
            "",
            "3",
            "3",
            "15 B",
            "15 B",
            "3"
        ],
        "{text}"
    );
    assert_eq!(per_server.title, "Connections per server", "{text}");
    assert_eq!(per_server.headers, ["Server", "Cluster", "Connections"]);
    let servers: Vec<[&str; 3]> = per_server
        .rows
        .iter()
        .map(|row| [row[0].as_str(), row[1].as_str(), row[2].as_str()])
        .collect();
    assert_eq!(
        servers,
        [
            [names[1].as_str(), cluster_name.as_str(), "1"],
            [names[0].as_str(), cluster_name.as_str(), "2"],
        ],
        "{text}"
    );

    // --sort in-msgs reversed, --top 1: the publisher alone, the totals still over all three.
    let (ok, text) = cli(
        &system,
        home.path(),
        &[
            "server",
            "report",
            "connections",
            "3",
            "--account",
            "A",
            "--sort",
            "in-msgs",
            "-R",
            "--top",
            "1",
        ],
    );
    assert!(ok, "--sort in-msgs -R --top 1:\n{text}");
    let report = &tables(&text)[0];
    assert_eq!(
        report.title, "Top 1 Connections out of 3 by in-msgs",
        "{text}"
    );
    assert_eq!(report.rows.len(), 1, "{text}");
    assert_eq!(cell(report, &report.rows[0], "Name"), "a0p", "{text}");
    assert_eq!(report.footer[1], "Totals for 3 connections", "{text}");

    // --subject: the connections of the account with a subscription colliding with it (either
    // way round, nats-server's SubjectsCollide); without --account the servers refuse it.
    for (account, subject, expected) in [
        ("A", "ra.own1", vec!["a0", "a1"]),
        ("A", "ra.*", vec!["a0", "a1"]),
        ("A", "ra.x.y", vec!["a0"]),
        ("B", "rb.y", vec!["b2"]),
    ] {
        let (ok, text) = cli(
            &system,
            home.path(),
            &[
                "server",
                "report",
                "connections",
                "3",
                "--account",
                account,
                "--subject",
                subject,
            ],
        );
        assert!(ok, "--subject {subject}:\n{text}");
        let report = &tables(&text)[0];
        let shown: Vec<&str> = report
            .rows
            .iter()
            .map(|row| cell(report, row, "Name"))
            .collect();
        assert_eq!(shown, expected, "--subject {subject}: {text}");
        // One connection: no totals row.
        assert_eq!(report.footer.is_empty(), expected.len() == 1, "{text}");
    }
    let (ok, text) = cli(
        &system,
        home.path(),
        &[
            "server",
            "report",
            "connections",
            "3",
            "--subject",
            "ra.own1",
        ],
    );
    assert!(!ok, "--subject without --account answered:\n{text}");
    assert!(
        text.contains(
            "invalid response received: filter by subject only valid with account filtering (500)"
        ),
        "{text}"
    );

    // --json: natscli's connection entries, each with its server.
    let (ok, text) = cli(
        &system,
        home.path(),
        &[
            "server",
            "report",
            "connections",
            "3",
            "--account",
            "B",
            "--json",
        ],
    );
    assert!(ok, "--account B --json:\n{text}");
    let entries: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("--json: {e}\n{text}"));
    let entries = entries.as_array().unwrap_or_else(|| panic!("{text}"));
    assert_eq!(entries.len(), 1, "{text}");
    let b = &entries[0];
    assert_eq!(b["name"], "b2", "{text}");
    assert_eq!(b["account"], "B", "{text}");
    assert_eq!(b["in_msgs"], 2, "{text}");
    assert_eq!(b["in_bytes"], 10, "{text}");
    assert_eq!(b["subscriptions"], 1, "{text}");
    assert_eq!(
        b["subscriptions_list"],
        serde_json::json!(["rb.y"]),
        "{text}"
    );
    assert_eq!(b["server"]["name"], names[2].as_str(), "{text}");
    assert_eq!(b["server"]["cluster"], cluster_name.as_str(), "{text}");

    // accounts: one row per account with the sums over every server. Its first argument is
    // the account, so it waits for the first server's `active_servers` answers, which a
    // nats-server counts once it heard each peer's STATSZ: asked again until A's three
    // connections show, bounded.
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    let text = loop {
        let (ok, text) = cli(&system, home.path(), &["server", "report", "accounts"]);
        assert!(ok, "nats server report accounts:\n{text}");
        let complete = tables(&text).first().is_some_and(|overview| {
            overview
                .rows
                .iter()
                .any(|row| row[0] == "A" && row[1] == "3")
        });
        if complete {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "nats server report accounts:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let overview = &tables(&text)[0];
    assert_eq!(
        overview.headers,
        [
            "Account",
            "Connections",
            "In Msgs",
            "Out Msgs",
            "In Bytes",
            "Out Bytes",
            "Subs"
        ],
        "{text}"
    );
    assert_eq!(
        overview.title,
        format!("{} Accounts Overview", overview.rows.len()),
        "{text}"
    );
    let row_of = |account: &str| -> Vec<String> {
        overview
            .rows
            .iter()
            .find(|row| row[0] == account)
            .unwrap_or_else(|| panic!("no row for {account}:\n{text}"))
            .clone()
    };
    assert_eq!(
        row_of("A"),
        ["A", "3", "3", "3", "15 B", "15 B", "3"],
        "{text}"
    );
    assert_eq!(
        row_of("B"),
        ["B", "1", "2", "0", "10 B", "0 B", "1"],
        "{text}"
    );

    // --top 1 (an empty account argument to give the server count): the account with the
    // most subscriptions (A; the report's own connection in SYS holds one).
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "accounts", "", "3", "--top", "1"],
    );
    assert!(ok, "accounts --top 1:\n{text}");
    let overview = &tables(&text)[0];
    assert_eq!(overview.title, "1 Accounts Overview", "{text}");
    assert_eq!(overview.rows.len(), 1, "{text}");
    assert_eq!(overview.rows[0][0], "A", "{text}");

    // One account: its connections' table, and as JSON its sums and servers.
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "accounts", "A", "3"],
    );
    assert!(ok, "accounts A:\n{text}");
    let report = &tables(&text)[0];
    assert_eq!(report.title, "Top 3 Connections out of 3 by subs", "{text}");
    let shown: Vec<&str> = report
        .rows
        .iter()
        .map(|row| cell(report, row, "Name"))
        .collect();
    assert_eq!(shown, ["a0p", "a0", "a1"], "{text}");
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "accounts", "A", "3", "--json"],
    );
    assert!(ok, "accounts A --json:\n{text}");
    let account: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("--json: {e}\n{text}"));
    assert_eq!(account["account"], "A", "{text}");
    assert_eq!(account["connections"], 3, "{text}");
    assert_eq!(account["in_msgs"], 3, "{text}");
    assert_eq!(account["out_msgs"], 3, "{text}");
    assert_eq!(account["in_bytes"], 15, "{text}");
    assert_eq!(account["subscriptions"], 3, "{text}");
    assert_eq!(
        account["connection_info"].as_array().map(Vec::len),
        Some(3),
        "{text}"
    );
    let mut servers: Vec<&str> = account["server"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|server| server["name"].as_str().unwrap_or(""))
        .collect();
    servers.sort();
    let mut expected = vec![names[0].as_str(), names[1].as_str()];
    expected.sort();
    assert_eq!(servers, expected, "{text}");

    // Without a server count natscli waits for the first server's `active_servers`, which a
    // nats-server counts once it heard each peer's STATSZ: asked again until all three
    // answered, bounded.
    let deadline = Instant::now() + PROPAGATION_TIMEOUT;
    loop {
        let (ok, text) = cli(
            &system,
            home.path(),
            &["server", "report", "connections", "--account", "A"],
        );
        assert!(ok, "connections without a count:\n{text}");
        let shown = tables(&text);
        if shown.first().map(|report| report.rows.len()) == Some(3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "connections without a count:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // health: every server ok, and the totals.
    let (ok, text) = cli(&system, home.path(), &["server", "report", "health", "3"]);
    assert!(ok, "nats server report health:\n{text}");
    let health = &tables(&text)[0];
    assert_eq!(health.title, "Health Report", "{text}");
    assert_eq!(
        health.headers,
        ["Server", "Cluster", "Domain", "Status", "Type", "Error"],
        "{text}"
    );
    let mut sorted = names.clone();
    sorted.sort();
    let shown: Vec<&str> = health.rows.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(shown, sorted, "{text}");
    for row in &health.rows {
        assert_eq!(row[1], cluster_name, "{text}");
        assert_eq!(row[3], "ok (200)", "{text}");
    }
    assert_eq!(health.footer[0], "3", "{text}");
    assert_eq!(health.footer[1], "1", "{text}");
    assert_eq!(health.footer[3], "ok: 3 / err: 0", "{text}");

    // As a user of account A: the servers answer CONNZ for the user's own account only (the
    // import of `$SYS.REQ.SERVER.PING.CONNZ` every account has), so the report shows A's
    // connections and its own.
    let as_a = cluster.url(0).replacen("nats://", "nats://a:a@", 1);
    let (ok, text) = cli(
        &as_a,
        home.path(),
        &["server", "report", "connections", "3"],
    );
    assert!(ok, "a report as a user of A:\n{text}");
    let report = &tables(&text)[0];
    let mut shown: Vec<&str> = report
        .rows
        .iter()
        .map(|row| cell(report, row, "Name"))
        .map(|name| {
            if name.starts_with("NATS CLI Version") {
                "(the report's own)"
            } else {
                name
            }
        })
        .collect();
    shown.sort();
    assert_eq!(shown, ["(the report's own)", "a0", "a0p", "a1"], "{text}");
    for row in &report.rows {
        assert_eq!(cell(report, row, "Account"), "A", "{text}");
    }
    assert_eq!(report.footer[1], "Totals for 4 connections", "{text}");
    drop((a0, a0p, a1, b2));
}

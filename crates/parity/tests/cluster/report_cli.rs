//! Our `nats server report jetstream` (issue 15) against a three-node cluster, run as natscli
//! runs it with a system user: the JetStream summary names every server once, with the R3
//! stream, its durable consumer and its messages on each and in the totals row, the meta
//! leader marked, and the meta group table lists the three peers, current and online, with
//! one leader; with `--leaders` the RAFT Leader Reports count the one stream and the one
//! consumer leadership; `nats server list` shows the three servers, their cluster and the totals. The
//! CLI is ours against both servers.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use crate::jetstream_elsewhere::cli;
use crate::membership::{nodes, r3_with_reader};
use crate::meta::ELECTION_BOUND;

/// A table's data rows and its footer (empty when it has none), each a list of trimmed cells.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub(crate) title: String,
    pub(crate) headers: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) footer: Vec<String>,
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('│').trim_end_matches('│');
    inner
        .split('│')
        .map(|cell| cell.trim().to_string())
        .collect()
}

/// The boxed tables of the output, in order: title, headers, rows, and footer (the row after a
/// second separator).
pub(crate) fn tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut current: Option<(Table, usize)> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('╭') {
            current = Some((Table::default(), 0));
        } else if line.starts_with('╰') {
            if let Some((table, _)) = current.take() {
                tables.push(table);
            }
        } else if let Some((table, separators)) = current.as_mut() {
            if line.starts_with('├') {
                *separators += 1;
            } else if line.starts_with('│') {
                let row = cells(line);
                // Title row (before the first separator): one cell spanning the table.
                match *separators {
                    0 => table.title = row.join(" "),
                    1 => table.headers = row,
                    2 => table.rows.push(row),
                    _ => table.footer = row,
                }
            }
        }
    }
    tables
}

/// The column of `header` in `table`.
pub(crate) fn column(table: &Table, header: &str) -> usize {
    table
        .headers
        .iter()
        .position(|h| h == header)
        .unwrap_or_else(|| panic!("no {header} column in {:?}", table.headers))
}

/// What is wrong with the report (`None`: every assertion holds).
fn check(text: &str, names: &[String], cluster: &str) -> Option<String> {
    let tables = tables(text);
    if tables.len() != 2 {
        return Some(format!("expected two tables, got {}", tables.len()));
    }
    let (summary, meta) = (&tables[0], &tables[1]);
    if summary.title != "JetStream Summary" {
        return Some(format!("summary title {:?}", summary.title));
    }
    let expected_headers = [
        "Server",
        "Cluster",
        "Streams",
        "Consumers",
        "Messages",
        "Bytes",
        "Memory",
        "File",
        "API Req",
        "Pending",
    ];
    if summary.headers != expected_headers {
        return Some(format!("summary headers {:?}", summary.headers));
    }
    let (streams, consumers, messages) = (
        column(summary, "Streams"),
        column(summary, "Consumers"),
        column(summary, "Messages"),
    );
    let mut shown: Vec<String> = summary
        .rows
        .iter()
        .map(|row| row[0].trim_end_matches('*').to_string())
        .collect();
    shown.sort();
    if shown != names {
        return Some(format!("servers {shown:?}, expected {names:?}"));
    }
    for row in &summary.rows {
        if row[1] != cluster || row[streams] != "1" || row[consumers] != "1" || row[messages] != "5"
        {
            return Some(format!(
                "row {row:?}: expected {cluster}, 1 stream, 1 consumer, 5 messages"
            ));
        }
    }
    let marked: Vec<&str> = summary
        .rows
        .iter()
        .filter(|row| row[0].ends_with('*'))
        .map(|row| row[0].trim_end_matches('*'))
        .collect();
    if marked.len() != 1 {
        return Some(format!("meta leaders marked: {marked:?}"));
    }
    let footer = &summary.footer;
    if footer.len() != expected_headers.len()
        || footer[streams] != "3"
        || footer[consumers] != "3"
        || footer[messages] != "15"
    {
        return Some(format!(
            "totals {footer:?}: expected 3 streams, 3 consumers, 15 messages"
        ));
    }
    if meta.title != format!("RAFT Meta Group Information - Lead cluster: {cluster}") {
        return Some(format!("meta title {:?}", meta.title));
    }
    let expected_headers = [
        "Connection Name",
        "ID",
        "Leader",
        "Current",
        "Online",
        "Active",
        "Lag",
    ];
    if meta.headers != expected_headers {
        return Some(format!("meta headers {:?}", meta.headers));
    }
    let peers: Vec<String> = meta.rows.iter().map(|row| row[0].clone()).collect();
    if peers != names {
        return Some(format!("meta peers {peers:?}, expected {names:?} (sorted)"));
    }
    for row in &meta.rows {
        if row[3] != "true" || row[4] != "true" || row[1].is_empty() {
            return Some(format!(
                "meta peer {row:?} not current and online with an id"
            ));
        }
    }
    let leaders: Vec<&str> = meta
        .rows
        .iter()
        .filter(|row| row[2] == "yes")
        .map(|row| row[0].as_str())
        .collect();
    if leaders != marked {
        return Some(format!(
            "meta table leaders {leaders:?}, summary marks {marked:?}"
        ));
    }
    None
}

/// What is wrong with the leader tables of `--leaders` (`None`: one stream and one consumer
/// leadership, on servers of the cluster).
fn check_leaders(text: &str, names: &[String]) -> Option<String> {
    let tables = tables(text);
    if tables.len() != 4 {
        return Some(format!("expected four tables, got {}", tables.len()));
    }
    for (table, title) in [
        (&tables[2], "Stream Leaders"),
        (&tables[3], "Consumer Leaders"),
    ] {
        if table.title != "RAFT Leader Report"
            || table.headers.get(2).map(String::as_str) != Some(title)
        {
            return Some(format!("{title}: {:?} {:?}", table.title, table.headers));
        }
        let mut led = 0;
        for row in &table.rows {
            if !names.contains(&row[0]) {
                return Some(format!("{title}: unknown server in {row:?}"));
            }
            led += row[2].parse::<u64>().unwrap_or(u64::MAX / 4);
        }
        if led != 1 {
            return Some(format!("{title}: {led} leaderships, expected 1"));
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reports_jetstream_of_every_server() {
    let (cluster, clients) = nodes(3).await;
    let home = tempfile::tempdir().expect("tempdir");
    let jetstream = async_nats::jetstream::new(clients[1].clone());
    r3_with_reader(
        &cluster,
        &clients[0],
        &jetstream,
        ("REPORT", "report"),
        5,
        2,
    )
    .await;
    let mut names: Vec<String> = cluster.nodes().iter().map(|n| n.name.clone()).collect();
    names.sort();
    let system = cluster.url(2).replacen("nats://", "nats://sys:sys@", 1);

    // Every replica holds the stream and the consumer a moment after their leaders do, and a
    // follower is current once it answered the meta leader: asked again until then, bounded.
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let (ok, text) = cli(
            &system,
            home.path(),
            &["server", "report", "jetstream", "3"],
        );
        assert!(ok, "nats server report jetstream:\n{text}");
        match check(&text, &names, &cluster.options.name) {
            None => break,
            Some(problem) => assert!(
                Instant::now() < deadline,
                "server report jetstream: {problem}\n{text}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // --leaders: the RAFT Leader Reports, one stream leader and one consumer leader among the
    // three servers (asked again while a leadership is between servers, bounded).
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let (ok, text) = cli(
            &system,
            home.path(),
            &["server", "report", "jetstream", "3", "--leaders"],
        );
        assert!(ok, "nats server report jetstream --leaders:\n{text}");
        match check_leaders(&text, &names) {
            None => break,
            Some(problem) => assert!(
                Instant::now() < deadline,
                "server report jetstream --leaders: {problem}\n{text}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // --host: natscli asks with exact_match, so a server's whole name picks it alone (a
    // filtered report shows no meta group) and a part of a name picks none.
    let one = &names[0];
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "jetstream", "--host", one],
    );
    assert!(ok, "nats server report jetstream --host {one}:\n{text}");
    let filtered = tables(&text);
    assert_eq!(filtered.len(), 1, "{text}");
    let rows: Vec<&str> = filtered[0]
        .rows
        .iter()
        .map(|row| row[0].trim_end_matches('*'))
        .collect();
    assert_eq!(rows, [one.as_str()], "{text}");
    let part = &one[..one.len() - 1];
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "jetstream", "--host", part],
    );
    assert!(!ok, "--host {part} (part of {one}) answered:\n{text}");
    assert!(text.contains("no results received"), "{text}");

    // --json: the three answers as received.
    let (ok, text) = cli(
        &system,
        home.path(),
        &["server", "report", "jetstream", "3", "--json"],
    );
    assert!(ok, "nats server report jetstream --json:\n{text}");
    let answers: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("--json: {e}\n{text}"));
    let mut servers: Vec<String> = answers
        .as_array()
        .into_iter()
        .flatten()
        .map(|answer| answer["server"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    servers.sort();
    assert_eq!(servers, names, "{text}");

    // server list: every server in the cluster, JetStream on, and the totals; then the cluster.
    let (ok, text) = cli(&system, home.path(), &["server", "list", "3"]);
    assert!(ok, "nats server list:\n{text}");
    let listed = tables(&text);
    assert_eq!(listed.len(), 2, "{text}");
    let (overview, clusters) = (&listed[0], &listed[1]);
    assert_eq!(overview.title, "Server Overview", "{text}");
    let (name, cluster_column, js) = (
        column(overview, "Name"),
        column(overview, "Cluster"),
        column(overview, "JS"),
    );
    let mut servers: Vec<String> = overview.rows.iter().map(|r| r[name].clone()).collect();
    servers.sort();
    assert_eq!(servers, names, "{text}");
    for row in &overview.rows {
        assert_eq!(row[cluster_column], cluster.options.name, "{text}");
        assert_eq!(row[js], "yes", "{text}");
    }
    // Totals: one cluster, three servers, three with JetStream.
    assert_eq!(overview.footer[cluster_column], "1", "{text}");
    assert_eq!(overview.footer[column(overview, "Host")], "3", "{text}");
    assert_eq!(overview.footer[js], "3", "{text}");
    assert_eq!(clusters.title, "Cluster Overview", "{text}");
    assert_eq!(clusters.rows.len(), 1, "{text}");
    assert_eq!(clusters.rows[0][0], cluster.options.name, "{text}");
    assert_eq!(
        clusters.rows[0][column(clusters, "Node Count")],
        "3",
        "{text}"
    );

    // Without the system user: no answers, natscli's error.
    let (ok, text) = cli(
        &cluster.url(0),
        home.path(),
        &["server", "report", "jetstream"],
    );
    assert!(!ok, "a report without system privileges:\n{text}");
    assert!(
        text.contains("ensure the account used has system privileges"),
        "{text}"
    );
}

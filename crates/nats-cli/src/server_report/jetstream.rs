//! `nats server report jetstream`: natscli's JetStream summary of every server, asked through
//! the system account (`$SYS.REQ.SERVER.PING.JSZ` with `raft`), then the meta group as its
//! leader sees it.

use std::cmp::Ordering;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::{comma, comma_u64, humanize_duration, ibytes};
use crate::output::table::Table;

use super::{compact_strings, gather, str_of, u64_of, EventFilter, FilterArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JetStreamSort {
    Name,
    Cluster,
    Streams,
    Consumers,
    Msgs,
    Mbytes,
    Bytes,
    Mem,
    File,
    Store,
    Api,
    Err,
}

#[derive(Args, Debug)]
pub struct JetStreamReportArgs {
    /// Limit the responses to a certain amount of servers
    pub limit: Option<usize>,
    /// Produce the report for a specific account
    #[arg(long)]
    pub account: Option<String>,
    /// Sort by a specific property
    #[arg(long, value_enum, default_value = "cluster")]
    pub sort: JetStreamSort,
    /// Compact server names (the default)
    #[arg(long, overrides_with = "no_compact")]
    pub compact: bool,
    /// Show full server names
    #[arg(long, overrides_with = "compact")]
    pub no_compact: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Read data from an archive file
    #[arg(long, value_name = "ARCHIVE")]
    pub archive: Option<String>,
    /// Show details about cluster leaders
    #[arg(long, short = 'l')]
    pub leaders: bool,
    /// Print the answers received, as JSON
    #[arg(long, short = 'j')]
    pub json: bool,
}

/// jsz options and event filter as natscli marshals them (nats-server's `JszEventOptions`).
#[derive(Serialize)]
struct JszRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    streams: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    consumer: bool,
    #[serde(skip_serializing_if = "is_zero")]
    limit: usize,
    raft: bool,
    #[serde(flatten)]
    filter: EventFilter<'a>,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// One server's row: the answer's figures, or its account's with `--account`.
struct Row {
    name: String,
    cluster: String,
    domain: String,
    streams: u64,
    consumers: u64,
    messages: u64,
    bytes: u64,
    memory: u64,
    store: u64,
    api: u64,
    pending: i64,
    meta_leader: bool,
    /// Streams and consumers led here (`None`: the answer names none).
    streams_led: Option<u64>,
    consumers_led: Option<u64>,
}

impl Row {
    fn of(answer: &Value, account: Option<&str>) -> Row {
        let server = &answer["server"];
        let data = &answer["data"];
        let name = str_of(&server["name"]).to_string();
        let details = data["account_details"].as_array().filter(|d| d.len() == 1);
        let (stats, streams, consumers, messages, bytes) = match (account, details) {
            (Some(_), Some(details)) => {
                let detail = &details[0];
                let streams = detail["stream_detail"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let consumers = streams
                    .iter()
                    .map(|stream| u64_of(&stream["state"]["consumer_count"]))
                    .sum();
                let messages = streams
                    .iter()
                    .map(|stream| u64_of(&stream["state"]["messages"]))
                    .sum();
                let bytes = u64_of(&detail["memory"]) + u64_of(&detail["storage"]);
                (detail, streams.len() as u64, consumers, messages, bytes)
            }
            _ => (
                data,
                u64_of(&data["streams"]),
                u64_of(&data["consumers"]),
                u64_of(&data["messages"]),
                u64_of(&data["bytes"]),
            ),
        };
        let meta = &data["meta_cluster"];
        let (streams_led, consumers_led) = match (account, details) {
            (Some(_), Some(details)) => {
                let streams = details[0]["stream_detail"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let led = |cluster: &Value| str_of(&cluster["leader"]) == name;
                let stream_count = streams.iter().filter(|s| led(&s["cluster"])).count();
                let consumer_count = streams
                    .iter()
                    .flat_map(|s| s["consumer_detail"].as_array().cloned().unwrap_or_default())
                    .filter(|c| led(&c["cluster"]))
                    .count();
                (
                    (stream_count > 0).then_some(stream_count as u64),
                    (consumer_count > 0).then_some(consumer_count as u64),
                )
            }
            _ => {
                let (streams, consumers) = (
                    u64_of(&data["streams_leader"]),
                    u64_of(&data["consumers_leader"]),
                );
                if streams > 0 || consumers > 0 {
                    (Some(streams), Some(consumers))
                } else {
                    (None, None)
                }
            }
        };
        Row {
            streams_led,
            consumers_led,
            meta_leader: !meta.is_null() && str_of(&meta["leader"]) == name,
            pending: meta["pending"].as_i64().unwrap_or(0),
            name,
            cluster: str_of(&server["cluster"]).to_string(),
            domain: str_of(&data["config"]["domain"]).to_string(),
            streams,
            consumers,
            messages,
            bytes,
            memory: u64_of(&stats["memory"]),
            store: u64_of(&stats["storage"]),
            api: u64_of(&stats["api"]["total"]),
        }
    }
}

fn compare(sort: JetStreamSort, a: &Row, b: &Row) -> Ordering {
    match sort {
        JetStreamSort::Name => a.name.cmp(&b.name),
        JetStreamSort::Streams => a.streams.cmp(&b.streams).then(a.name.cmp(&b.name)),
        JetStreamSort::Consumers => a.consumers.cmp(&b.consumers).then(a.name.cmp(&b.name)),
        JetStreamSort::Msgs => a.messages.cmp(&b.messages),
        JetStreamSort::Mbytes | JetStreamSort::Bytes => a.bytes.cmp(&b.bytes),
        JetStreamSort::Mem => a.memory.cmp(&b.memory),
        JetStreamSort::File | JetStreamSort::Store => a.store.cmp(&b.store),
        JetStreamSort::Api => a.api.cmp(&b.api),
        JetStreamSort::Cluster | JetStreamSort::Err => {
            a.cluster.cmp(&b.cluster).then(a.name.cmp(&b.name))
        }
    }
}

/// Every server's JSZ answer (with its Raft groups), asked as natscli asks it.
async fn gather_jsz(
    args: &JetStreamReportArgs,
    account: Option<&str>,
    options: &GlobalOptions,
) -> Result<Vec<Value>, CliError> {
    let (client, effective) = options.connect().await?;
    let request = JszRequest {
        account,
        streams: account.is_some(),
        consumer: account.is_some(),
        limit: if account.is_some() { 10000 } else { 0 },
        raft: true,
        filter: args.filter.event_filter(options),
    };
    let body = serde_json::to_vec_pretty(&request)?;
    let answers = gather(
        &client,
        "$SYS.REQ.SERVER.PING.JSZ",
        body.into(),
        args.limit.unwrap_or(0),
        effective.timeout,
    )
    .await?;
    Ok(answers.into_iter().map(|answer| answer.value).collect())
}

pub(super) async fn report_jetstream(
    args: &JetStreamReportArgs,
    reverse: bool,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let account = args.account.as_deref().filter(|a| !a.is_empty());
    let mut answers = match &args.archive {
        Some(path) => {
            let answers = super::archive::jsz(path, account.is_some(), &args.filter)?;
            if answers.is_empty() {
                return Err(CliError::message(format!(
                    "no JetStream data found in {path}"
                )));
            }
            answers
        }
        None => gather_jsz(args, account, options).await?,
    };
    answers.retain(|answer| !answer["data"].is_null());
    if answers.is_empty() {
        return Err(CliError::message(
            "no results received, ensure the account used has system privileges and appropriate permissions",
        ));
    }
    let mut rows: Vec<(Row, &Value)> = answers
        .iter()
        .map(|answer| (Row::of(answer, account), answer))
        .collect();
    rows.sort_by(|(a, _), (b, _)| {
        let order = compare(args.sort, a, b);
        if reverse {
            order.reverse()
        } else {
            order
        }
    });
    if args.json {
        let values: Vec<&Value> = rows.iter().map(|(_, value)| *value).collect();
        println!("{}", serde_json::to_string_pretty(&values)?);
        return Ok(());
    }
    let compact = args.compact || !args.no_compact;
    let names: Vec<String> = rows.iter().map(|(row, _)| row.name.clone()).collect();
    let shown = if compact {
        compact_strings(&names)
    } else {
        names
    };
    let render_domain = rows.iter().any(|(row, _)| !row.domain.is_empty());
    let mut table = match account {
        Some(account) => Table::new(format!("JetStream Summary for Account {account}")),
        None => Table::new("JetStream Summary"),
    };
    let mut headers = vec!["Server", "Cluster"];
    if render_domain {
        headers.push("Domain");
    }
    headers.extend([
        "Streams",
        "Consumers",
        "Messages",
        "Bytes",
        "Memory",
        "File",
        "API Req",
        "Pending",
    ]);
    // Pending is the one numeric column natscli hands go-pretty, which right-aligns it.
    table.align_right(headers.len() - 1);
    table.headers(headers);
    let mut totals = Row {
        name: String::new(),
        cluster: String::new(),
        domain: String::new(),
        streams: 0,
        consumers: 0,
        messages: 0,
        bytes: 0,
        memory: 0,
        store: 0,
        api: 0,
        pending: 0,
        meta_leader: false,
        streams_led: None,
        consumers_led: None,
    };
    let mut leaders: Vec<&Value> = Vec::new();
    let mut expected_size = 0;
    for ((row, value), name) in rows.iter().zip(&shown) {
        totals.streams += row.streams;
        totals.consumers += row.consumers;
        totals.messages += row.messages;
        totals.bytes += row.bytes;
        totals.memory += row.memory;
        totals.store += row.store;
        totals.api += row.api;
        totals.pending += row.pending;
        let meta = &value["data"]["meta_cluster"];
        if row.meta_leader {
            leaders.push(meta);
        }
        expected_size = expected_size.max(u64_of(&meta["cluster_size"]));
        let mark = if row.meta_leader { "*" } else { "" };
        let mut cells = vec![format!("{name}{mark}"), row.cluster.clone()];
        if render_domain {
            cells.push(row.domain.clone());
        }
        cells.extend(figures(row));
        table.row(cells);
    }
    let mut footer = vec![String::new(), String::new()];
    if render_domain {
        footer.push(String::new());
    }
    footer.extend(figures(&totals));
    table.footer(footer);
    println!("{}\n", table.render());

    let filter = &args.filter;
    let filtered = filter.host.is_some() || filter.cluster.is_some() || !filter.tags.is_empty();
    if filtered || expected_size == 0 {
        // natscli shows no meta group for a filtered report or a server without one.
    } else if leaders.is_empty() {
        println!();
        println!(
            "WARNING: No cluster meta leader found. The cluster expects {expected_size} nodes but only {} responded. JetStream operation requires at least {} up nodes.",
            rows.len(),
            expected_size / 2 + 1
        );
    } else {
        for (index, meta) in leaders.iter().enumerate() {
            if index >= 1 {
                println!();
            }
            println!("{}", meta_table(meta, compact).render());
        }
    }
    if args.leaders {
        println!();
        let led = |count: fn(&Row) -> Option<u64>| -> Vec<(String, String, u64)> {
            rows.iter()
                .filter_map(|(row, _)| {
                    count(row).map(|groups| (row.name.clone(), row.cluster.clone(), groups))
                })
                .collect()
        };
        let streams = led(|row| row.streams_led);
        let consumers = led(|row| row.consumers_led);
        if streams.is_empty() && consumers.is_empty() {
            println!("No JetStream asset leader data reported");
        } else {
            println!("{}\n", leader_table(streams, "Stream Leaders").render());
            println!("{}\n", leader_table(consumers, "Consumer Leaders").render());
        }
    }
    Ok(())
}

/// natscli's RAFT Leader Report: the servers leading assets by cluster (fewest first), each
/// with its share of its cluster's leaderships in tenths as stars.
fn leader_table(mut leaders: Vec<(String, String, u64)>, title: &str) -> Table {
    let mut per_cluster: std::collections::BTreeMap<String, u64> = Default::default();
    for (_, cluster, groups) in &leaders {
        *per_cluster.entry(cluster.clone()).or_default() += groups;
    }
    leaders.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    let mut table = Table::new("RAFT Leader Report");
    table.headers(["Server", "Cluster", title, "Distribution"]);
    let mut previous: Option<&str> = None;
    for (name, cluster, groups) in &leaders {
        if previous.is_some_and(|previous| previous != cluster) {
            table.separator();
        }
        previous = Some(cluster);
        let total = per_cluster.get(cluster).copied().unwrap_or(0);
        let stars = if *groups > 0 && total > 0 {
            ((*groups as f64 / total as f64 * 100.0) / 10.0)
                .round()
                .max(1.0) as usize
        } else {
            0
        };
        table.row([
            name.clone(),
            cluster.clone(),
            comma_u64(*groups),
            "*".repeat(stars),
        ]);
    }
    table
}

fn figures(row: &Row) -> [String; 8] {
    [
        comma_u64(row.streams),
        comma_u64(row.consumers),
        comma_u64(row.messages),
        ibytes(row.bytes),
        ibytes(row.memory),
        ibytes(row.store),
        comma_u64(row.api),
        row.pending.to_string(),
    ]
}

/// The meta group as its leader reports it, the leader added among its replicas, by name.
fn meta_table(meta: &Value, compact: bool) -> Table {
    struct Peer {
        name: String,
        id: String,
        leader: bool,
        current: bool,
        offline: bool,
        active: u64,
        lag: u64,
    }
    let leader = str_of(&meta["leader"]).to_string();
    let mut peers: Vec<Peer> = meta["replicas"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|replica| Peer {
            name: str_of(&replica["name"]).to_string(),
            id: str_of(&replica["peer"]).to_string(),
            leader: false,
            current: replica["current"].as_bool().unwrap_or(false),
            offline: replica["offline"].as_bool().unwrap_or(false),
            active: u64_of(&replica["active"]),
            lag: u64_of(&replica["lag"]),
        })
        .collect();
    peers.push(Peer {
        name: leader.clone(),
        id: str_of(&meta["peer"]).to_string(),
        leader: true,
        current: true,
        offline: false,
        active: 0,
        lag: 0,
    });
    peers.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<String> = peers.iter().map(|peer| peer.name.clone()).collect();
    let shown = if compact {
        compact_strings(&names)
    } else {
        names
    };
    let mut table = Table::new(format!(
        "RAFT Meta Group Information - Lead cluster: {}",
        str_of(&meta["name"])
    ));
    table.headers([
        "Connection Name",
        "ID",
        "Leader",
        "Current",
        "Online",
        "Active",
        "Lag",
    ]);
    for (peer, name) in peers.iter().zip(shown) {
        table.row([
            name,
            peer.id.clone(),
            if peer.leader { "yes" } else { "" }.to_string(),
            peer.current.to_string(),
            (!peer.offline).to_string(),
            humanize_duration(Duration::from_nanos(peer.active)),
            comma(i128::from(peer.lag)),
        ]);
    }
    table
}

//! `nats server list [expect]`: natscli's overview of every server from their
//! `$SYS.REQ.SERVER.PING` statsz answers (system account), with totals, then one row per
//! cluster.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::{comma, humanize_duration, ibytes};
use crate::output::table::Table;
use crate::server_report::{compact_strings, gather, str_of, u64_of, Answer};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListSort {
    Name,
    Cluster,
    #[value(alias = "conn")]
    Conns,
    #[value(alias = "sub")]
    Subs,
    #[value(alias = "route")]
    Routes,
    #[value(alias = "gws")]
    Gw,
    Mem,
    Cpu,
    Slow,
    Uptime,
    Rtt,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// How many servers to expect
    pub expect: Option<usize>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Sort servers by a specific key
    #[arg(long, value_enum, default_value = "rtt")]
    pub sort: ListSort,
    /// Reverse sort servers
    #[arg(long, short = 'R')]
    pub reverse: bool,
    /// Compact server names (the default)
    #[arg(long, overrides_with = "no_compact")]
    pub compact: bool,
    /// Show full server names and hosts
    #[arg(long, overrides_with = "compact")]
    pub no_compact: bool,
}

/// An RFC 3339 time of an answer.
fn time_of(value: &Value) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(value.as_str()?).ok()
}

fn count(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

/// The order natscli shows without `--reverse` (largest counts first, names and round trips
/// ascending).
fn compare(sort: ListSort, a: &Answer, b: &Answer) -> Ordering {
    let (server_a, server_b) = (&a.value["server"], &b.value["server"]);
    let (stats_a, stats_b) = (&a.value["statsz"], &b.value["statsz"]);
    let name = || str_of(&server_a["name"]).cmp(str_of(&server_b["name"]));
    let figure = |key: &str| u64_of(&stats_b[key]).cmp(&u64_of(&stats_a[key]));
    match sort {
        ListSort::Name => name(),
        ListSort::Conns => figure("connections"),
        ListSort::Subs => figure("subscriptions"),
        ListSort::Mem => figure("mem"),
        ListSort::Slow => figure("slow_consumers"),
        ListSort::Cpu => {
            let cpu = |stats: &Value| stats["cpu"].as_f64().unwrap_or(0.0);
            cpu(stats_b).total_cmp(&cpu(stats_a))
        }
        ListSort::Routes => count(&stats_b["routes"])
            .cmp(&count(&stats_a["routes"]))
            .then_with(name),
        ListSort::Gw => count(&stats_b["gateways"])
            .cmp(&count(&stats_a["gateways"]))
            .then_with(name),
        ListSort::Uptime => {
            let start = |stats: &Value| time_of(&stats["start"]);
            start(stats_a).cmp(&start(stats_b))
        }
        ListSort::Cluster => str_of(&server_a["cluster"])
            .cmp(str_of(&server_b["cluster"]))
            .then_with(|| name().reverse()),
        ListSort::Rtt => a.rtt.cmp(&b.rtt),
    }
}

#[derive(Default)]
struct ClusterSummary {
    nodes: usize,
    gateways_out: usize,
    gateways_in: u64,
    connections: u64,
    route_counts: Vec<usize>,
}

pub async fn run(args: &ListArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let mut answers = gather(
        &client,
        "$SYS.REQ.SERVER.PING",
        Bytes::new(),
        args.expect.unwrap_or(0),
        effective.timeout,
    )
    .await?;
    if answers.is_empty() {
        return Err(CliError::message(
            "no results received, ensure the account used has system privileges and appropriate permissions",
        ));
    }
    if args.json {
        let values: Vec<&Value> = answers.iter().map(|answer| &answer.value).collect();
        println!("{}", serde_json::to_string_pretty(&values)?);
        return Ok(());
    }
    answers.sort_by(|a, b| {
        let order = compare(args.sort, a, b);
        if args.reverse {
            order.reverse()
        } else {
            order
        }
    });

    let mut clusters: BTreeMap<String, ClusterSummary> = BTreeMap::new();
    let (mut connections, mut subscriptions, mut memory, mut slow, mut jetstream) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for answer in &answers {
        let (server, stats) = (&answer.value["server"], &answer.value["statsz"]);
        connections += u64_of(&stats["connections"]);
        subscriptions += u64_of(&stats["subscriptions"]);
        memory += u64_of(&stats["mem"]);
        slow += u64_of(&stats["slow_consumers"]);
        if server["jetstream"] == true {
            jetstream += 1;
        }
        let cluster = str_of(&server["cluster"]);
        if !cluster.is_empty() {
            let summary = clusters.entry(cluster.to_string()).or_default();
            summary.nodes += 1;
            summary.connections += u64_of(&stats["connections"]);
            summary.gateways_out += count(&stats["gateways"]);
            summary.route_counts.push(count(&stats["routes"]));
            summary.gateways_in += stats["gateways"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|gateway| u64_of(&gateway["inbound_connections"]))
                .sum::<u64>();
        }
    }

    let compact = args.compact || !args.no_compact;
    let field = |key: &str| -> Vec<String> {
        answers
            .iter()
            .map(|answer| str_of(&answer.value["server"][key]).to_string())
            .collect()
    };
    let (names, hosts) = if compact {
        (
            compact_strings(&field("name")),
            compact_strings(&field("host")),
        )
    } else {
        (field("name"), field("host"))
    };
    let first = &answers[0].value;
    let mut versions_ok = "";
    let mut gateways_ok = "";
    let routes_ok = if clusters.values().any(|summary| {
        summary
            .route_counts
            .iter()
            .any(|&routes| routes != summary.route_counts[0])
    }) {
        "X"
    } else {
        ""
    };

    let mut table = Table::new("Server Overview");
    table.headers([
        "Name", "Cluster", "Host", "Version", "JS", "Conns", "Subs", "Routes", "GWs", "Mem",
        "CPU %", "Cores", "Slow", "Uptime", "RTT",
    ]);
    // The numbers natscli hands go-pretty as numbers, which it right-aligns: routes,
    // gateways and cores.
    for column in [7, 8, 11] {
        table.align_right(column);
    }
    for ((answer, name), host) in answers.iter().zip(&names).zip(&hosts) {
        let (server, stats) = (&answer.value["server"], &answer.value["statsz"]);
        let js = if server["jetstream"] == true {
            match str_of(&server["domain"]) {
                "" => "yes".to_string(),
                domain => domain.to_string(),
            }
        } else {
            "no".to_string()
        };
        if server["ver"] != first["server"]["ver"] {
            versions_ok = "X";
        }
        if count(&stats["gateways"]) != count(&first["statsz"]["gateways"]) {
            gateways_ok = "X";
        }
        let table_slow = slow_cell(stats);
        let uptime = match (time_of(&server["time"]), time_of(&stats["start"])) {
            (Some(now), Some(start)) => (now - start).to_std().unwrap_or_default(),
            _ => Duration::ZERO,
        };
        let rtt = Duration::from_millis((answer.rtt.as_secs_f64() * 1000.0).round() as u64);
        table.row([
            name.clone(),
            str_of(&server["cluster"]).to_string(),
            host.clone(),
            str_of(&server["ver"]).to_string(),
            js,
            comma(u64_of(&stats["connections"])),
            comma(u64_of(&stats["subscriptions"])),
            count(&stats["routes"]).to_string(),
            count(&stats["gateways"]).to_string(),
            ibytes(u64_of(&stats["mem"])),
            format!("{:.0}", stats["cpu"].as_f64().unwrap_or(0.0)),
            u64_of(&stats["cores"]).to_string(),
            table_slow,
            humanize_duration(uptime),
            humanize_duration(rtt),
        ]);
    }
    table.footer([
        String::new(),
        clusters.len().to_string(),
        answers.len().to_string(),
        versions_ok.to_string(),
        jetstream.to_string(),
        comma(connections),
        comma(subscriptions),
        routes_ok.to_string(),
        gateways_ok.to_string(),
        ibytes(memory),
        String::new(),
        String::new(),
        comma(slow),
        String::new(),
        String::new(),
    ]);
    println!("{}", table.render());

    if !clusters.is_empty() {
        println!();
        let mut rows: Vec<(&String, &ClusterSummary)> = clusters.iter().collect();
        rows.sort_by_key(|(_, summary)| summary.connections);
        let mut table = Table::new("Cluster Overview");
        table.headers([
            "Cluster",
            "Node Count",
            "Outgoing Gateways",
            "Incoming Gateways",
            "Connections",
        ]);
        for column in 1..5 {
            table.align_right(column);
        }
        let (mut nodes, mut out, mut inbound, mut conns) = (0, 0, 0, 0);
        for (name, summary) in rows {
            nodes += summary.nodes;
            out += summary.gateways_out;
            inbound += summary.gateways_in;
            conns += summary.connections;
            table.row([
                name.clone(),
                summary.nodes.to_string(),
                summary.gateways_out.to_string(),
                summary.gateways_in.to_string(),
                summary.connections.to_string(),
            ]);
        }
        table.footer([
            String::new(),
            nodes.to_string(),
            out.to_string(),
            inbound.to_string(),
            conns.to_string(),
        ]);
        println!("{}", table.render());
    }
    Ok(())
}

/// The slow consumer count, with the kinds when other than clients had some.
fn slow_cell(stats: &Value) -> String {
    let total = comma(u64_of(&stats["slow_consumers"]));
    let detail = &stats["slow_consumer_stats"];
    let mut kinds = Vec::new();
    for (key, label) in [
        ("clients", "c"),
        ("routes", "r"),
        ("gateways", "g"),
        ("leafs", "l"),
    ] {
        let value = u64_of(&detail[key]);
        if value > 0 {
            kinds.push(format!("{label}: {}", comma(value)));
        }
    }
    if kinds.len() == 1 && u64_of(&detail["clients"]) > 0 {
        kinds.clear();
    }
    if kinds.is_empty() {
        total
    } else {
        format!("{total} ({})", kinds.join(" "))
    }
}

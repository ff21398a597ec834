//! clusterbench: 3-node cluster benchmarks of rnats beside a 3-node nats-server cluster
//! (issue 14). Starts each cluster itself (explicit binary paths, free 127.0.0.1 ports, full
//! mesh of explicit routes), alternates the two clusters round by round, and prints a markdown
//! table of the medians and the median of the per-round ratios ours/Go.
//!
//! The processes live in cluster.rs, the workloads in workloads.rs; this file runs the rounds
//! and prints the table.

mod cluster;
mod workloads;

use anyhow::{bail, Context, Result};
use cluster::Cluster;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str = "usage: clusterbench --ours PATH --ref PATH [--rounds N] [--subs N]
  --ours    our nats-server binary (e.g. target/release/nats-server)
  --ref     the real nats-server binary (explicit path)
  --rounds  rounds, each running every workload on both clusters (default 3)
  --subs    subscriptions of the spread-subscriptions workload (default 100000; 0 skips it)";

struct Options {
    ours: PathBuf,
    reference: PathBuf,
    rounds: usize,
    subscriptions: usize,
}

fn parse_options() -> Result<Options> {
    let mut arguments = std::env::args().skip(1);
    let mut ours = None;
    let mut reference = None;
    let mut rounds = 3;
    let mut subscriptions = 100_000;
    while let Some(argument) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .with_context(|| format!("{argument} needs a value"))
        };
        match argument.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--ref" => reference = Some(PathBuf::from(value()?)),
            "--rounds" => rounds = value()?.parse().context("--rounds")?,
            "--subs" => subscriptions = value()?.parse().context("--subs")?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    let (Some(ours), Some(reference)) = (ours, reference) else {
        bail!("--ours and --ref are required\n{USAGE}");
    };
    Ok(Options {
        ours,
        reference,
        rounds: rounds.max(1),
        subscriptions,
    })
}

/// One metric's samples: per server label, one value per round.
type Samples = BTreeMap<&'static str, BTreeMap<&'static str, Vec<f64>>>;

/// Metric name, unit, and whether higher is better (only for the reader: ratios are ours/Go).
const METRICS: &[(&str, &str, bool)] = &[
    ("pubsub across nodes (128 B)", "msgs/s", true),
    ("pubsub delivered share", "%", true),
    ("fan-out to 3 nodes (128 B)", "deliveries/s", true),
    ("fan-out delivered share", "%", true),
    ("server CPU per pubsub delivery", "us", false),
    ("server CPU per fan-out delivery", "us", false),
    ("request/reply node 1->2 p50", "us", false),
    ("request/reply node 1->2 p99", "us", false),
    ("subscriptions visible on peers", "ms", false),
    ("RSS node 1 after subscriptions", "MiB", false),
    ("RSS node 2 after subscriptions", "MiB", false),
    ("RSS node 3 after subscriptions", "MiB", false),
];

async fn run_round(
    label: &'static str,
    binary: &std::path::Path,
    options: &Options,
    work: &std::path::Path,
    samples: &mut Samples,
) -> Result<()> {
    let mut record = |metric: &'static str, value: f64| {
        samples
            .entry(metric)
            .or_default()
            .entry(label)
            .or_default()
            .push(value);
    };
    {
        let cluster = Cluster::start(label, binary, work).await?;
        let pubsub = workloads::throughput(&cluster, &[1]).await?;
        record(METRICS[0].0, pubsub.rate);
        record(METRICS[1].0, pubsub.delivered * 100.0);
        let fanout = workloads::throughput(&cluster, &[0, 1, 2]).await?;
        record(METRICS[2].0, fanout.rate);
        record(METRICS[3].0, fanout.delivered * 100.0);
        record(METRICS[4].0, pubsub.cpu_per_delivery * 1e6);
        record(METRICS[5].0, fanout.cpu_per_delivery * 1e6);
        let (p50, p99) = workloads::request_reply(&cluster, Duration::from_secs(3)).await?;
        record(METRICS[6].0, p50);
        record(METRICS[7].0, p99);
    }
    if options.subscriptions > 0 {
        // A fresh cluster, so the RSS is that of the subscriptions, not of the flows above.
        let cluster = Cluster::start(label, binary, work).await?;
        let result = workloads::subscriptions(&cluster, options.subscriptions).await?;
        record(METRICS[8].0, result.visible.as_secs_f64() * 1e3);
        for (node, rss) in result.rss.iter().enumerate() {
            if let Some(bytes) = rss {
                record(METRICS[9 + node].0, *bytes as f64 / (1024.0 * 1024.0));
            }
        }
    }
    Ok(())
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    })
}

fn format_value(value: Option<f64>) -> String {
    match value {
        None => "-".into(),
        Some(v) if v >= 1000.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

fn print_table(samples: &Samples, rounds: usize) {
    println!(
        "\n| workload | unit | better | rnats (median of {rounds}) | nats-server (median of {rounds}) | ours/Go (median of per-round ratios) |"
    );
    println!("|---|---|---|---:|---:|---:|");
    for &(metric, unit, higher) in METRICS {
        let Some(by_server) = samples.get(metric) else {
            continue;
        };
        let ours = by_server.get("rnats").cloned().unwrap_or_default();
        let reference = by_server.get("nats-server").cloned().unwrap_or_default();
        let ratios: Vec<f64> = ours
            .iter()
            .zip(reference.iter())
            .filter(|(_, r)| **r > 0.0)
            .map(|(o, r)| o / r)
            .collect();
        let ratio = median(&ratios).map_or("-".into(), |r| format!("{r:.2}"));
        println!(
            "| {metric} | {unit} | {} | {} | {} | {ratio} |",
            if higher { "higher" } else { "lower" },
            format_value(median(&ours)),
            format_value(median(&reference)),
        );
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = parse_options()?;
    for binary in [&options.ours, &options.reference] {
        if !binary.is_file() {
            bail!("no such binary: {binary:?}");
        }
    }
    let work = std::env::temp_dir().join(format!("clusterbench-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let mut samples = Samples::new();
    let mut outcome = Ok(());
    'rounds: for round in 1..=options.rounds {
        // Alternate which cluster goes first, so neither always runs on a warmer machine.
        let order: [(&'static str, &PathBuf); 2] = if round % 2 == 1 {
            [
                ("rnats", &options.ours),
                ("nats-server", &options.reference),
            ]
        } else {
            [
                ("nats-server", &options.reference),
                ("rnats", &options.ours),
            ]
        };
        for (label, binary) in order {
            eprintln!("round {round}/{}: {label}", options.rounds);
            if let Err(error) = run_round(label, binary, &options, &work, &mut samples).await {
                outcome = Err(error.context(format!("round {round}, {label}")));
                break 'rounds;
            }
        }
    }
    print_table(&samples, options.rounds);
    let _ = std::fs::remove_dir_all(&work);
    outcome
}

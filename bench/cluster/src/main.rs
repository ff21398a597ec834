//! clusterbench: 3-node cluster benchmarks of rnats beside a 3-node nats-server cluster
//! (issue 14). Starts each cluster itself (explicit binary paths, free 127.0.0.1 ports, full
//! mesh of explicit routes), alternates the two clusters round by round, and prints a markdown
//! table of the medians and the median of the per-round ratios ours/Go.
//!
//! The processes live in cluster.rs, the workloads in workloads.rs; this file runs the rounds
//! and prints the table.

mod cluster;
mod consumers;
mod jsapi;
mod raw;
mod replicas;
mod streams;
mod workloads;

use anyhow::{bail, Context, Result};
use cluster::Cluster;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str =
    "usage: clusterbench --ours PATH --ref PATH [--rounds N] [--subs N] [--suite core|consumers|streams]
                    [--client raw|async-nats] [--ahead N]
  --ours    our nats-server binary (e.g. target/release/nats-server)
  --ref     the real nats-server binary (explicit path)
  --rounds  rounds, each running every workload on both clusters (default 3)
  --subs    subscriptions of the spread-subscriptions workload (default 100000; 0 skips it)
  --suite   core: pub/sub, fan-out, request/reply, subscriptions (default);
            consumers: the replicated-consumer workloads of issue 20 (JetStream clusters);
            streams: issue 15's replicated-stream figures (failover, catch-up, R3 stream groups)
 core suite:
  --client  raw: the cheap blocking-socket client of raw.rs for pub/sub, fan-out and
            request/reply (default); async-nats: the async-nats client
  --ahead N raw client: the publisher waits while the slowest subscriber is more than N
            messages behind (default 100000; 0: only the PING/PONG fence bounds it)
 consumers suite:
  --preload N            messages (128 B) in the consumed stream (default 100000)
  --catchup-mb N         MiB of 1 KiB messages in the catch-up stream (default 128; 0 skips it)
  --catchup-consumers N  R3 durable consumers on the catch-up stream (default 100)
  --idle-consumers N     R3 durable consumers of the idle workload (default 2000; 0 skips it)
  --idle-window S        seconds the idle CPU is measured over (default 10)
  --current-timeout S    how long a restarted follower may take to be current (default 180)
 streams suite (also --catchup-mb, --idle-window, --current-timeout):
  --streams N,N,...      R3 stream counts of the group-scaling workload (default 500,2000; 0 skips it)
CLUSTERBENCH_KEEP=1 keeps the clusters' configs, logs and stores (printed path).";

#[derive(Clone, Copy, PartialEq)]
enum Suite {
    Core,
    Consumers,
    Streams,
}

#[derive(Clone, Copy, PartialEq)]
enum Client {
    Raw,
    AsyncNats,
}

struct Options {
    client: Client,
    ahead: u64,
    ours: PathBuf,
    reference: PathBuf,
    rounds: usize,
    subscriptions: usize,
    suite: Suite,
    preload: usize,
    catchup_mb: usize,
    catchup_consumers: usize,
    idle_consumers: usize,
    idle_window: u64,
    current_timeout: u64,
    streams: Vec<usize>,
}

fn parse_options() -> Result<Options> {
    let mut arguments = std::env::args().skip(1);
    let mut ours = None;
    let mut reference = None;
    let mut rounds = 3;
    let mut client = Client::Raw;
    let mut ahead = 100_000;
    let mut subscriptions = 100_000;
    let mut suite = Suite::Core;
    let mut preload = 100_000;
    let mut catchup_mb = 128;
    let mut catchup_consumers = 100;
    let mut idle_consumers = 2000;
    let mut idle_window = 10;
    let mut current_timeout = 180;
    let mut streams = vec![500, 2000];
    while let Some(argument) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .with_context(|| format!("{argument} needs a value"))
        };
        match argument.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--ref" => reference = Some(PathBuf::from(value()?)),
            "--client" => {
                client = match value()?.as_str() {
                    "raw" => Client::Raw,
                    "async-nats" => Client::AsyncNats,
                    other => bail!("--client raw|async-nats, not {other}"),
                }
            }
            "--ahead" => ahead = value()?.parse().context("--ahead")?,
            "--rounds" => rounds = value()?.parse().context("--rounds")?,
            "--subs" => subscriptions = value()?.parse().context("--subs")?,
            "--suite" => {
                suite = match value()?.as_str() {
                    "core" => Suite::Core,
                    "consumers" => Suite::Consumers,
                    "streams" => Suite::Streams,
                    other => bail!("unknown suite {other}\n{USAGE}"),
                }
            }
            "--preload" => preload = value()?.parse().context("--preload")?,
            "--catchup-mb" => catchup_mb = value()?.parse().context("--catchup-mb")?,
            "--catchup-consumers" => {
                catchup_consumers = value()?.parse().context("--catchup-consumers")?
            }
            "--idle-consumers" => idle_consumers = value()?.parse().context("--idle-consumers")?,
            "--idle-window" => idle_window = value()?.parse().context("--idle-window")?,
            "--current-timeout" => {
                current_timeout = value()?.parse().context("--current-timeout")?
            }
            "--streams" => {
                streams = value()?
                    .split(',')
                    .map(|count| count.trim().parse().context("--streams"))
                    .collect::<Result<Vec<usize>>>()?;
                streams.retain(|&count| count > 0);
            }
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
        client,
        ahead,
        ours,
        reference,
        rounds: rounds.max(1),
        subscriptions,
        suite,
        preload: preload.max(1),
        catchup_mb,
        catchup_consumers,
        idle_consumers,
        idle_window: idle_window.max(1),
        current_timeout: current_timeout.max(1),
        streams,
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
    ("bench client CPU per pubsub delivery", "us", false),
    ("bench client CPU per fan-out delivery", "us", false),
    ("request/reply node 1->2 p50", "us", false),
    ("request/reply node 1->2 p99", "us", false),
    ("subscriptions visible on peers", "ms", false),
    ("RSS node 1 after subscriptions", "MiB", false),
    ("RSS node 2 after subscriptions", "MiB", false),
    ("RSS node 3 after subscriptions", "MiB", false),
    (CONSUME_ACK, "msgs/s", true),
    (CONSUME_SYNC, "msgs/s", true),
    (CPU_ACK, "us", false),
    (CPU_SYNC, "us", false),
    (STEPDOWN_P50, "us", false),
    (STEPDOWN_P99, "us", false),
    (STEPDOWN_MAX, "us", false),
    (STEPDOWN_OK, "of 3", true),
    (STEPDOWN_ANSWER, "ms", false),
    (KILL_RESUME, "ms", false),
    (RESTART_CURRENT, "ms", false),
    (RESTART_HEALTHZ, "ms", false),
    (RESTART_RATE, "MiB/s", true),
    (WIPED_CURRENT, "ms", false),
    (WIPED_HEALTHZ, "ms", false),
    (WIPED_RATE, "MiB/s", true),
    (IDLE_CREATED, "consumers", true),
    (IDLE_CREATION, "s", false),
    (IDLE_CPU, "% of a core", false),
    (IDLE_RSS, "MiB", false),
    (STREAM_STEPDOWN_ANSWER, "ms", false),
    (STREAM_STEPDOWN_RESUME, "ms", false),
    (STREAM_KILL_RESUME, "ms", false),
    (GROUPS_500_CREATED, "streams", true),
    (GROUPS_500_CREATION, "s", false),
    (GROUPS_500_CPU, "% of a core", false),
    (GROUPS_500_RSS, "MiB", false),
    (GROUPS_2000_CREATED, "streams", true),
    (GROUPS_2000_CREATION, "s", false),
    (GROUPS_2000_CPU, "% of a core", false),
    (GROUPS_2000_RSS, "MiB", false),
    (GROUPS_5000_CREATED, "streams", true),
    (GROUPS_5000_CREATION, "s", false),
    (GROUPS_5000_CPU, "% of a core", false),
    (GROUPS_5000_RSS, "MiB", false),
];

const CONSUME_ACK: &str = "R3 pull consumer, explicit ack (128 B)";
const CONSUME_SYNC: &str = "R3 pull consumer, AckSync (128 B)";
const CPU_ACK: &str = "server CPU per consumed msg, explicit ack";
const CPU_SYNC: &str = "server CPU per consumed msg, AckSync";
const STEPDOWN_P50: &str = "pull latency during stepdowns p50";
const STEPDOWN_P99: &str = "pull latency during stepdowns p99";
const STEPDOWN_MAX: &str = "pull latency during stepdowns max";
const STEPDOWN_OK: &str = "stepdown requests answered ok";
const STEPDOWN_ANSWER: &str = "slowest stepdown answer";
const KILL_RESUME: &str = "consumption resumes after leader kill -9";
const RESTART_CURRENT: &str = "restarted follower current (STREAM.INFO)";
const RESTART_HEALTHZ: &str = "restarted follower /healthz ok";
const RESTART_RATE: &str = "restarted follower catch-up (missed bytes)";
const WIPED_CURRENT: &str = "wiped follower current (STREAM.INFO)";
const WIPED_HEALTHZ: &str = "wiped follower /healthz ok";
const WIPED_RATE: &str = "wiped follower catch-up";
const IDLE_CREATED: &str = "idle R3 durable consumers created";
const IDLE_CREATION: &str = "time to create them";
const IDLE_CPU: &str = "idle CPU, 3 nodes";
const IDLE_RSS: &str = "idle RSS, 3 nodes summed";
const STREAM_STEPDOWN_ANSWER: &str = "STREAM.LEADER.STEPDOWN answered";
const STREAM_STEPDOWN_RESUME: &str = "first PubAck after the stepdown request";
const STREAM_KILL_RESUME: &str = "first PubAck after the stream leader's kill -9";
/// The group-scaling rows, per stream count: created, creation time, idle CPU, RSS.
const GROUPS_500_CREATED: &str = "500 R3 streams: created";
const GROUPS_500_CREATION: &str = "500 R3 streams: time to create";
const GROUPS_500_CPU: &str = "500 R3 streams: idle CPU, 3 nodes";
const GROUPS_500_RSS: &str = "500 R3 streams: RSS, 3 nodes summed";
const GROUPS_2000_CREATED: &str = "2,000 R3 streams: created";
const GROUPS_2000_CREATION: &str = "2,000 R3 streams: time to create";
const GROUPS_2000_CPU: &str = "2,000 R3 streams: idle CPU, 3 nodes";
const GROUPS_2000_RSS: &str = "2,000 R3 streams: RSS, 3 nodes summed";
const GROUPS_5000_CREATED: &str = "5,000 R3 streams: created";
const GROUPS_5000_CREATION: &str = "5,000 R3 streams: time to create";
const GROUPS_5000_CPU: &str = "5,000 R3 streams: idle CPU, 3 nodes";
const GROUPS_5000_RSS: &str = "5,000 R3 streams: RSS, 3 nodes summed";

/// The group-scaling metric names of a stream count the table has rows for.
fn group_metrics(count: usize) -> Option<[&'static str; 4]> {
    match count {
        500 => Some([
            GROUPS_500_CREATED,
            GROUPS_500_CREATION,
            GROUPS_500_CPU,
            GROUPS_500_RSS,
        ]),
        2000 => Some([
            GROUPS_2000_CREATED,
            GROUPS_2000_CREATION,
            GROUPS_2000_CPU,
            GROUPS_2000_RSS,
        ]),
        5000 => Some([
            GROUPS_5000_CREATED,
            GROUPS_5000_CREATION,
            GROUPS_5000_CPU,
            GROUPS_5000_RSS,
        ]),
        _ => None,
    }
}

/// The replicated-stream figures of issue 15, each on a fresh JetStream cluster.
async fn run_stream_round(
    label: &'static str,
    binary: &std::path::Path,
    options: &Options,
    work: &std::path::Path,
    record: &mut dyn FnMut(&'static str, f64),
) -> Result<()> {
    {
        let mut cluster = Cluster::start(label, binary, work, true).await?;
        let failover = streams::failover(&mut cluster).await?;
        record(
            STREAM_STEPDOWN_ANSWER,
            failover.stepdown_answer.as_secs_f64() * 1e3,
        );
        record(
            STREAM_STEPDOWN_RESUME,
            failover.stepdown_resume.as_secs_f64() * 1e3,
        );
        record(STREAM_KILL_RESUME, failover.kill.as_secs_f64() * 1e3);
    }
    if options.catchup_mb > 0 {
        let mut cluster = Cluster::start(label, binary, work, true).await?;
        let catchup = replicas::catchup(
            &mut cluster,
            options.catchup_mb,
            0,
            Duration::from_secs(options.current_timeout),
        )
        .await?;
        record_catchup(label, &catchup, record);
    }
    for &count in &options.streams {
        let Some([created, creation, cpu, rss]) = group_metrics(count) else {
            bail!("--streams: the table has rows for 500, 2000 and 5000 only, not {count}");
        };
        let cluster = Cluster::start(label, binary, work, true).await?;
        let groups = streams::groups(
            &cluster,
            count,
            Duration::from_secs(1200),
            Duration::from_secs(options.idle_window),
        )
        .await?;
        record(created, groups.created as f64);
        record(creation, groups.creation.as_secs_f64());
        record(cpu, groups.cpu * 100.0);
        let bytes: u64 = groups.rss.iter().flatten().sum();
        record(rss, bytes as f64 / (1024.0 * 1024.0));
    }
    Ok(())
}

/// The catch-up rows of `replicas::catchup`'s figures; a bound that passed is said, not recorded.
fn record_catchup(
    label: &str,
    catchup: &replicas::Catchup,
    record: &mut dyn FnMut(&'static str, f64),
) {
    let millis = |time: Option<Duration>| time.map(|t| t.as_secs_f64() * 1e3);
    for (metric, value) in [
        (RESTART_CURRENT, millis(catchup.restart_current)),
        (RESTART_HEALTHZ, millis(catchup.restart_healthz)),
        (RESTART_RATE, catchup.restart_mb_per_s),
        (WIPED_CURRENT, millis(catchup.wiped_current)),
        (WIPED_HEALTHZ, millis(catchup.wiped_healthz)),
        (WIPED_RATE, catchup.wiped_mb_per_s),
    ] {
        match value {
            Some(value) => record(metric, value),
            None => eprintln!("  {label}: {metric}: not within the bound"),
        }
    }
}

/// The replicated-consumer workloads (issue 20), each on a fresh JetStream cluster.
async fn run_consumer_round(
    label: &'static str,
    binary: &std::path::Path,
    options: &Options,
    work: &std::path::Path,
    record: &mut dyn FnMut(&'static str, f64),
) -> Result<()> {
    {
        let mut cluster = Cluster::start(label, binary, work, true).await?;
        consumers::prepare(&cluster, options.preload, workloads::PAYLOAD).await?;
        let limit = Duration::from_secs(60);
        let ack = consumers::consume(&cluster, "ACK", options.preload, false, limit).await?;
        record(CONSUME_ACK, ack.rate);
        record(CPU_ACK, ack.cpu_per_message * 1e6);
        let sync = consumers::consume(&cluster, "SYNC", options.preload, true, limit).await?;
        record(CONSUME_SYNC, sync.rate);
        record(CPU_SYNC, sync.cpu_per_message * 1e6);
        let stepdowns = consumers::latency_during_stepdowns(&cluster).await?;
        eprintln!("  {label}: {} pulls during the stepdowns", stepdowns.pulls);
        record(STEPDOWN_P50, stepdowns.p50);
        record(STEPDOWN_P99, stepdowns.p99);
        record(STEPDOWN_MAX, stepdowns.max);
        record(STEPDOWN_OK, stepdowns.succeeded as f64);
        record(
            STEPDOWN_ANSWER,
            stepdowns.slowest_answer.as_secs_f64() * 1e3,
        );
        let resumed = consumers::resume_after_kill(&mut cluster).await?;
        record(KILL_RESUME, resumed.as_secs_f64() * 1e3);
    }
    if options.catchup_mb > 0 {
        let mut cluster = Cluster::start(label, binary, work, true).await?;
        let catchup = replicas::catchup(
            &mut cluster,
            options.catchup_mb,
            options.catchup_consumers,
            Duration::from_secs(options.current_timeout),
        )
        .await?;
        record_catchup(label, &catchup, record);
    }
    if options.idle_consumers > 0 {
        let cluster = Cluster::start(label, binary, work, true).await?;
        let idle = replicas::idle(
            &cluster,
            options.idle_consumers,
            Duration::from_secs(600),
            Duration::from_secs(options.idle_window),
        )
        .await?;
        record(IDLE_CREATED, idle.created as f64);
        record(IDLE_CREATION, idle.creation.as_secs_f64());
        record(IDLE_CPU, idle.cpu * 100.0);
        let rss: u64 = idle.rss.iter().flatten().sum();
        record(IDLE_RSS, rss as f64 / (1024.0 * 1024.0));
    }
    Ok(())
}

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
    match options.suite {
        Suite::Consumers => {
            return run_consumer_round(label, binary, options, work, &mut record).await
        }
        Suite::Streams => return run_stream_round(label, binary, options, work, &mut record).await,
        Suite::Core => {}
    }
    {
        let cluster = Cluster::start(label, binary, work, false).await?;
        let window = Duration::from_secs(3);
        let (pubsub, fanout, (p50, p99)) = match options.client {
            Client::AsyncNats => (
                workloads::throughput(&cluster, &[1]).await?,
                workloads::throughput(&cluster, &[0, 1, 2]).await?,
                workloads::request_reply(&cluster, window).await?,
            ),
            // Blocking clients on threads of their own; this worker thread waits for them.
            Client::Raw => tokio::task::block_in_place(|| -> Result<_> {
                let (idle, ahead) = (workloads::IDLE, options.ahead);
                Ok((
                    raw::throughput(&cluster, &[1], workloads::PUBLISH_WINDOW, idle, ahead)?,
                    raw::throughput(&cluster, &[0, 1, 2], workloads::PUBLISH_WINDOW, idle, ahead)?,
                    raw::request_reply(&cluster, window)?,
                ))
            })?,
        };
        record(METRICS[0].0, pubsub.rate);
        record(METRICS[1].0, pubsub.delivered * 100.0);
        record(METRICS[2].0, fanout.rate);
        record(METRICS[3].0, fanout.delivered * 100.0);
        record(METRICS[4].0, pubsub.cpu_per_delivery * 1e6);
        record(METRICS[5].0, fanout.cpu_per_delivery * 1e6);
        record(METRICS[6].0, pubsub.client_cpu_per_delivery * 1e6);
        record(METRICS[7].0, fanout.client_cpu_per_delivery * 1e6);
        record(METRICS[8].0, p50);
        record(METRICS[9].0, p99);
    }
    if options.subscriptions > 0 {
        // A fresh cluster, so the RSS is that of the subscriptions, not of the flows above.
        let cluster = Cluster::start(label, binary, work, false).await?;
        let result = workloads::subscriptions(&cluster, options.subscriptions).await?;
        record(METRICS[10].0, result.visible.as_secs_f64() * 1e3);
        for (node, rss) in result.rss.iter().enumerate() {
            if let Some(bytes) = rss {
                record(METRICS[11 + node].0, *bytes as f64 / (1024.0 * 1024.0));
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
        Some(v) if v < 10.0 => format!("{v:.2}"),
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
    if options.suite == Suite::Core {
        let client = match options.client {
            Client::Raw => format!("raw (--ahead {})", options.ahead),
            Client::AsyncNats => "async-nats".to_string(),
        };
        println!("\nclient of pub/sub, fan-out and request/reply: {client}");
    }
    print_table(&samples, options.rounds);
    if std::env::var_os("CLUSTERBENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        eprintln!("kept {work:?}");
    }
    outcome
}

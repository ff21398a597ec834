//! Connection-level commands: `server check connection` (natscli's Nagios-style check with
//! its exit codes), `server ping` (`$SYS.REQ.SERVER.PING`) and `rtt`; `server report` is in
//! `server_report/`, `server list` in `server_list.rs`, `server raft` in `server_raft.rs`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::api::JetStream;
use crate::error::CliError;
use crate::options::{connect_with, GlobalOptions};
use crate::output::format::{go_duration, parse_duration};

#[derive(Args, Debug)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub command: ServerCommand,
}

#[derive(Subcommand, Debug)]
pub enum ServerCommand {
    /// Health check for NATS servers
    Check {
        #[command(subcommand)]
        check: CheckCommand,
    },
    /// Manage JetStream Clustering
    #[command(alias = "r", alias = "jetstream")]
    Raft(crate::server_raft::RaftArgs),
    /// List known servers
    #[command(alias = "ls")]
    List(crate::server_list::ListArgs),
    /// Report on various server metrics
    #[command(alias = "rep")]
    Report(crate::server_report::ReportArgs),
    /// Ping all servers
    Ping {
        /// Stop after receiving this many responses
        expect: Option<u32>,
        /// Include the server ID in the output
        #[arg(long)]
        id: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum CheckCommand {
    /// Checks basic server connection
    #[command(alias = "conn")]
    Connection(ConnectionCheckArgs),
    /// Checks the health of a stream (message and subject counts)
    Stream(StreamCheckArgs),
}

#[derive(Args, Debug)]
pub struct StreamCheckArgs {
    /// The streams to check
    #[arg(long)]
    pub stream: String,
    /// Warn if there are fewer than this many messages in the stream
    #[arg(long, value_name = "MSGS")]
    pub msgs_warn: Option<u64>,
    /// Critical if there are fewer than this many messages in the stream
    #[arg(long, value_name = "MSGS")]
    pub msgs_critical: Option<u64>,
    /// Warning threshold for subjects in the stream
    #[arg(long, value_name = "SUBJECTS")]
    pub subjects_warn: Option<i64>,
    /// Critical threshold for subjects in the stream
    #[arg(long, value_name = "SUBJECTS")]
    pub subjects_critical: Option<i64>,
}

#[derive(Args, Debug)]
pub struct ConnectionCheckArgs {
    /// Warning threshold to allow for establishing connections
    #[arg(long, default_value = "500ms")]
    pub connect_warn: String,
    /// Critical threshold to allow for establishing connections
    #[arg(long, default_value = "1s")]
    pub connect_critical: String,
    /// Warning threshold to allow for server RTT
    #[arg(long, default_value = "500ms")]
    pub rtt_warn: String,
    /// Critical threshold to allow for server RTT
    #[arg(long, default_value = "1s")]
    pub rtt_critical: String,
    /// Warning threshold to allow for full round trip test
    #[arg(long, default_value = "500ms")]
    pub req_warn: String,
    /// Critical threshold to allow for full round trip test
    #[arg(long, default_value = "1s")]
    pub req_critical: String,
}

#[derive(Args, Debug)]
pub struct RttArgs {
    /// How many round trips to do when testing
    #[arg(default_value_t = 5)]
    pub iterations: u32,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

pub async fn run_server(args: &ServerArgs, options: &GlobalOptions) -> Result<(), CliError> {
    match &args.command {
        ServerCommand::Check {
            check: CheckCommand::Connection(check),
        } => check_connection(check, options).await,
        ServerCommand::Check {
            check: CheckCommand::Stream(check),
        } => check_stream(check, options).await,
        ServerCommand::Ping { expect, id } => ping(*expect, *id, options).await,
        ServerCommand::Raft(raft) => crate::server_raft::run(raft, options).await,
        ServerCommand::List(list) => crate::server_list::run(list, options).await,
        ServerCommand::Report(report) => crate::server_report::run(report, options).await,
    }
}

/// One monitoring measurement, rendered like jsm.go's PerfDataItem: seconds with four
/// decimals and an `s` unit, counts as whole numbers.
struct PerfData {
    name: &'static str,
    value: f64,
    warn: f64,
    critical: f64,
    seconds: bool,
}

impl PerfData {
    fn seconds(name: &'static str, value: f64, warn: f64, critical: f64) -> PerfData {
        PerfData {
            name,
            value,
            warn,
            critical,
            seconds: true,
        }
    }

    fn count(name: &'static str, value: f64, warn: f64, critical: f64) -> PerfData {
        PerfData {
            name,
            value,
            warn,
            critical,
            seconds: false,
        }
    }
}

impl std::fmt::Display for PerfData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let number = |value: f64| {
            if self.seconds {
                format!("{value:.4}")
            } else {
                format!("{value:.0}")
            }
        };
        write!(f, "{}={}", self.name, number(self.value))?;
        if self.seconds {
            write!(f, "s")?;
        }
        if self.warn != 0.0 {
            write!(f, ";{}", number(self.warn))?;
        } else if self.critical != 0.0 {
            write!(f, ";")?;
        }
        if self.critical != 0.0 {
            write!(f, ";{}", number(self.critical))?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct CheckResult {
    oks: Vec<String>,
    warnings: Vec<String>,
    criticals: Vec<String>,
    perf: Vec<PerfData>,
}

impl CheckResult {
    fn grade(
        &mut self,
        value: Duration,
        warn: Duration,
        critical: Duration,
        ok: String,
        failed: String,
    ) {
        if !critical.is_zero() && value >= critical {
            self.criticals.push(failed);
        } else if !warn.is_zero() && value >= warn {
            self.warnings.push(failed);
        } else {
            self.oks.push(ok);
        }
    }

    /// Print the Nagios line and exit with its status code (0 OK, 1 WARNING, 2 CRITICAL).
    fn finish(self, name: &str) -> ! {
        let (status, code) = if !self.criticals.is_empty() {
            ("CRITICAL", 2)
        } else if !self.warnings.is_empty() {
            ("WARNING", 1)
        } else {
            ("OK", 0)
        };
        let mut parts = vec![name.to_string()];
        parts.extend(self.criticals.iter().map(|c| format!("Crit:{c}")));
        parts.extend(self.warnings.iter().map(|w| format!("Warn:{w}")));
        parts.extend(self.oks.iter().map(|o| format!("OK:{o}")));
        if self.perf.is_empty() {
            println!("{status} {}", parts.join(" "));
        } else {
            let perf: Vec<String> = self.perf.iter().map(ToString::to_string).collect();
            println!("{status} {} | {}", parts.join(" "), perf.join(" "));
        }
        std::process::exit(code);
    }
}

async fn check_connection(
    args: &ConnectionCheckArgs,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let limits = [
        &args.connect_warn,
        &args.connect_critical,
        &args.rtt_warn,
        &args.rtt_critical,
        &args.req_warn,
        &args.req_critical,
    ]
    .iter()
    .map(|text| parse_duration(text))
    .collect::<Result<Vec<_>, _>>()?;
    let mut result = CheckResult::default();
    let effective = options.effective()?;
    let started = Instant::now();
    let client = match connect_with(&effective, options.connection_name.clone()).await {
        Ok(client) => client,
        Err(error) => {
            result.criticals.push(format!("connection failed: {error}"));
            result.finish("Connection");
        }
    };
    let connect_time = started.elapsed();
    result.perf.push(PerfData::seconds(
        "connect_time",
        connect_time.as_secs_f64(),
        limits[0].as_secs_f64(),
        limits[1].as_secs_f64(),
    ));
    let url = effective
        .url
        .split(',')
        .next()
        .unwrap_or_default()
        .to_string();
    result.grade(
        connect_time,
        limits[0],
        limits[1],
        format!("connected to {url} in {}", go_duration(connect_time)),
        format!(
            "connected to {url}, connect time exceeded {}",
            go_duration(limits[1])
        ),
    );
    let rtt_started = Instant::now();
    if let Err(error) = client.flush().await {
        result.criticals.push(format!("rtt failed: {error}"));
        result.finish("Connection");
    }
    let rtt = rtt_started.elapsed();
    result.perf.push(PerfData::seconds(
        "rtt",
        rtt.as_secs_f64(),
        limits[2].as_secs_f64(),
        limits[3].as_secs_f64(),
    ));
    result.grade(
        rtt,
        limits[2],
        limits[3],
        format!("rtt time {}", go_duration(rtt)),
        format!("rtt time exceeded {}", go_duration(limits[3])),
    );
    let body = crate::template::random_string(100, 100);
    let inbox = client.new_inbox();
    let mut subscriber = client.subscribe(inbox.clone()).await?;
    let request_started = Instant::now();
    client
        .publish(inbox.clone(), Bytes::from(body.clone()))
        .await?;
    match tokio::time::timeout(effective.timeout, subscriber.next()).await {
        Ok(Some(message)) => {
            let took = request_started.elapsed();
            result.perf.push(PerfData::seconds(
                "request_time",
                took.as_secs_f64(),
                limits[4].as_secs_f64(),
                limits[5].as_secs_f64(),
            ));
            if message.payload.as_ref() != body.as_bytes() {
                result
                    .criticals
                    .push("did not receive expected message".to_string());
            }
            result.grade(
                took,
                limits[4],
                limits[5],
                format!("round trip took {:.6}s", took.as_secs_f64()),
                format!("round trip request took {:.6}", took.as_secs_f64()),
            );
        }
        _ => result
            .criticals
            .push(format!("did not receive from {inbox}: nats: timeout")),
    }
    result.finish("Connection");
}

/// jsm.go's stream health check: message and subject thresholds (lower counts are worse
/// for messages; for subjects the direction follows which threshold is larger).
async fn check_stream(args: &StreamCheckArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let mut result = CheckResult::default();
    let name = args.stream.clone();
    let effective = options.effective()?;
    let client = match connect_with(&effective, options.connection_name.clone()).await {
        Ok(client) => client,
        Err(error) => {
            result
                .criticals
                .push(format!("could not load info: {error}"));
            result.finish(&name);
        }
    };
    let js = JetStream::new(client, &effective);
    let info = match js.stream_info(&name).await {
        Ok(info) => info,
        Err(error) => {
            result
                .criticals
                .push(format!("could not load info: {error}"));
            result.finish(&name);
        }
    };
    let warn = args.msgs_warn.unwrap_or(0);
    let critical = args.msgs_critical.unwrap_or(0);
    if warn > 0 || critical > 0 {
        let messages = info.state.messages;
        result.perf.push(PerfData::count(
            "messages",
            messages as f64,
            warn as f64,
            critical as f64,
        ));
        if critical > 0 && messages <= critical {
            result.criticals.push(format!("{messages} messages"));
        } else if warn > 0 && messages <= warn {
            result.warnings.push(format!("{messages} messages"));
        } else {
            result.oks.push(format!("{messages} messages"));
        }
    }
    let warn = args.subjects_warn.unwrap_or(0);
    let critical = args.subjects_critical.unwrap_or(0);
    if warn > 0 || critical > 0 {
        let subjects = i64::try_from(info.state.num_subjects).unwrap_or(i64::MAX);
        result.perf.push(PerfData::count(
            "subjects",
            subjects as f64,
            warn as f64,
            critical as f64,
        ));
        let ascending = warn < critical;
        let text = format!("{subjects} subjects");
        if (ascending && subjects >= critical) || (!ascending && subjects <= critical) {
            result.criticals.push(text);
        } else if (ascending && subjects >= warn) || (!ascending && subjects <= warn) {
            result.warnings.push(text);
        } else {
            result.oks.push(text);
        }
    }
    result.finish(&name);
}

async fn ping(expect: Option<u32>, show_id: bool, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await?;
    let started = Instant::now();
    client
        .publish_with_reply("$SYS.REQ.SERVER.PING", inbox, Bytes::new())
        .await?;
    client.flush().await?;
    let deadline = tokio::time::Instant::now() + effective.timeout;
    let mut times: Vec<f64> = Vec::new();
    let mut expected = expect.unwrap_or(0);
    loop {
        let message = match tokio::time::timeout_at(deadline, replies.next()).await {
            Ok(Some(message)) => message,
            _ => break,
        };
        if let Some(status) = message.status {
            println!(
                "{} status from $SYS.REQ.SERVER.PING, ensure a system account is used with appropriate permissions",
                status.as_u16()
            );
            return Err(CliError::message("no access to $SYS.REQ.SERVER.PING"));
        }
        let value: serde_json::Value = serde_json::from_slice(&message.payload)
            .map_err(|e| CliError::message(format!("Could not decode response: {e}")))?;
        let elapsed = started.elapsed();
        times.push(elapsed.as_millis() as f64);
        let name = value["server"]["name"].as_str().unwrap_or_default();
        let id = value["server"]["id"].as_str().unwrap_or_default();
        if show_id {
            println!("{id} {name:<60} rtt={}", go_duration(elapsed));
        } else {
            println!("{name:<60} rtt={}", go_duration(elapsed));
        }
        if expected == 0 && times.len() == 1 {
            expected = value["statsz"]["active_servers"].as_u64().unwrap_or(0) as u32;
        }
        if expected != 0 && times.len() as u32 >= expected {
            break;
        }
    }
    println!();
    println!("---- ping statistics ----");
    if times.is_empty() {
        println!("no responses received");
        return Ok(());
    }
    let max = times.iter().cloned().fold(f64::MIN, f64::max);
    let min = times.iter().cloned().fold(f64::MAX, f64::min);
    let average = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "{} replies max: {max:.2} min: {min:.2} avg: {average:.2}",
        times.len()
    );
    if expected != 0 && (times.len() as u32) < expected {
        println!("\nMissing {} server(s)", expected - times.len() as u32);
    }
    Ok(())
}

pub async fn rtt(args: &RttArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let effective = options.effective()?;
    let mut targets = Vec::new();
    for url in effective
        .url
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        let single = crate::options::Effective {
            url: url.to_string(),
            ..effective.clone()
        };
        let address = url
            .trim_start_matches("nats://")
            .trim_start_matches("tls://")
            .rsplit('@')
            .next()
            .unwrap_or(url)
            .to_string();
        let rtt = match connect_with(&single, options.connection_name.clone()).await {
            Ok(client) => {
                let mut total = Duration::ZERO;
                let iterations = args.iterations.max(1);
                let mut failed = false;
                for _ in 0..iterations {
                    let started = Instant::now();
                    if client.flush().await.is_err() {
                        failed = true;
                        break;
                    }
                    total += started.elapsed();
                }
                if failed {
                    None
                } else {
                    Some(total / iterations)
                }
            }
            Err(_) => None,
        };
        targets.push((url.to_string(), address, rtt));
    }
    if args.json {
        let value: Vec<serde_json::Value> = targets
            .iter()
            .map(|(url, address, rtt)| {
                serde_json::json!({
                    "url": url,
                    "results": [{
                        "address": address,
                        "rtt": rtt.map(|d| d.as_nanos() as u64).unwrap_or(0),
                        "url": url,
                    }]
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let indent = targets
        .iter()
        .map(|(_, address, _)| address.len() + 3)
        .max()
        .unwrap_or(3);
    for (url, address, rtt) in &targets {
        println!("{url}:\n");
        match rtt {
            Some(rtt) => println!(
                "{address:>indent$}: {}",
                crate::output::format::humanize_duration(*rtt)
            ),
            None => println!("{address:>indent$}: failed"),
        }
        println!();
    }
    Ok(())
}

//! `nats server report`: natscli's reports over the system account's
//! `$SYS.REQ.SERVER.PING.*` requests: `jetstream` (`jetstream.rs`), `connections` and
//! `accounts` (`connections.rs` with its `--filter` in `conn_filter.rs`, `accounts.rs`, both
//! from every server's CONNZ) and `health` (`health.rs`); each also reads an audit archive's
//! pages instead (`--archive`, `archive.rs`). Also the collection of `$SYS.REQ.SERVER.PING*`
//! answers that `server list` shares: every answer until the expected count, the timeout, or
//! (when no count is given) 300 ms without a new one, as jsm.go's `DoReq`.

mod accounts;
mod archive;
mod conn_filter;
mod connections;
mod health;
mod jetstream;

use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Args, Subcommand};
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::options::GlobalOptions;

pub use accounts::AccountsReportArgs;
pub use connections::ConnectionsReportArgs;
pub use health::HealthReportArgs;
pub use jetstream::JetStreamReportArgs;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Reverse sort
    #[arg(long, short = 'R', global = true)]
    pub reverse: bool,
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// Report on JetStream activity
    #[command(alias = "jsz", alias = "js")]
    Jetstream(JetStreamReportArgs),
    /// Report on connections
    #[command(alias = "conn", alias = "connz", alias = "conns")]
    Connections(ConnectionsReportArgs),
    /// Report on account activity
    #[command(alias = "acct")]
    Accounts(AccountsReportArgs),
    /// Report on Server health
    Health(HealthReportArgs),
}

/// One report, or with `--watch N` natscli's watcher: the report now and every N seconds,
/// the screen cleared before each table (not before `--json`), until SIGINT or SIGTERM ends
/// it without an error.
pub async fn run(args: &ReportArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (filter, json) = match &args.command {
        ReportCommand::Jetstream(report) => (&report.filter, report.json),
        ReportCommand::Connections(report) => (&report.filter, report.json),
        ReportCommand::Accounts(report) => (&report.filter, report.json),
        ReportCommand::Health(report) => (&report.filter, false),
    };
    let archive = match &args.command {
        ReportCommand::Connections(report) => &report.archive,
        ReportCommand::Health(report) => &report.archive,
        ReportCommand::Jetstream(report) => &report.archive,
        ReportCommand::Accounts(report) => &report.archive,
    }
    .is_some();
    if archive && filter.watch.is_some_and(|seconds| seconds > 0) {
        return Err(CliError::message(
            "--watch is not supported when using --archive",
        ));
    }
    let Some(every) = filter.watch.filter(|seconds| *seconds > 0) else {
        return run_once(args, options).await;
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut tick = tokio::time::interval(Duration::from_secs(every));
    // A report slower than the interval is followed by the next one, not by a burst.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
        }
        if !json {
            // natscli's ClearScreen (asciigraph's): clear, cursor home.
            print!("\x1b[2J\x1b[H");
        }
        run_once(args, options).await?;
    }
}

async fn run_once(args: &ReportArgs, options: &GlobalOptions) -> Result<(), CliError> {
    match &args.command {
        ReportCommand::Jetstream(jetstream) => {
            jetstream::report_jetstream(jetstream, args.reverse, options).await
        }
        ReportCommand::Connections(connections) => {
            connections::report_connections(connections, args.reverse, options).await
        }
        ReportCommand::Accounts(accounts) => {
            accounts::report_accounts(accounts, args.reverse, options).await
        }
        ReportCommand::Health(health) => health::report_health(health, args.reverse, options).await,
    }
}

/// One answer to a `$SYS.REQ.SERVER.PING*` request and when it came, since the request.
pub(crate) struct Answer {
    pub value: Value,
    pub rtt: Duration,
}

/// Sends `body` to `subject` and gathers the answers: `wait_for` of them when it is not zero,
/// else until 300 ms pass without one; never longer than `timeout`. A 503 (no responders)
/// means the user cannot reach the system account's subjects.
pub(crate) async fn gather(
    client: &async_nats::Client,
    subject: &str,
    body: Bytes,
    wait_for: usize,
    timeout: Duration,
) -> Result<Vec<Answer>, CliError> {
    const QUIET: Duration = Duration::from_millis(300);
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await?;
    let started = Instant::now();
    client
        .publish_with_reply(subject.to_string(), inbox, body)
        .await?;
    client.flush().await?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut answers = Vec::new();
    loop {
        let until = if wait_for == 0 {
            deadline.min(tokio::time::Instant::now() + QUIET)
        } else {
            deadline
        };
        let message = match tokio::time::timeout_at(until, replies.next()).await {
            Ok(Some(message)) => message,
            _ => break,
        };
        if message.status.map(|status| status.as_u16()) == Some(503) {
            return Err(CliError::message(
                "server request failed, ensure the account used has system privileges and appropriate permissions",
            ));
        }
        let value: Value = serde_json::from_slice(&message.payload)
            .map_err(|error| CliError::message(format!("Could not decode response: {error}")))?;
        answers.push(Answer {
            value,
            rtt: started.elapsed(),
        });
        if wait_for != 0 && answers.len() >= wait_for {
            break;
        }
    }
    Ok(answers)
}

/// natscli's CompactStrings: the dotted suffix every name shares (never the first part) is cut.
pub(crate) fn compact_strings(names: &[String]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names.iter().map(|name| name.split('.').collect()).collect();
    let Some(shortest) = parts.iter().map(Vec::len).min() else {
        return Vec::new();
    };
    let mut suffix = String::new();
    for index in (1..shortest).rev() {
        let part = parts[0][index];
        if parts.iter().all(|name| name[index] == part) {
            suffix = format!(".{part}{suffix}");
        } else {
            break;
        }
    }
    names
        .iter()
        .map(|name| name.strip_suffix(&suffix).unwrap_or(name).to_string())
        .collect()
}

/// A number of an answer, 0 when absent.
pub(crate) fn u64_of(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// A string of an answer, empty when absent.
pub(crate) fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The server filter natscli's reports send (nats-server's `EventFilterOptions`), flattened
/// into each request's options.
#[derive(Serialize, Default)]
pub(crate) struct EventFilter<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<&'a str>,
    pub exact_match: bool,
}

/// `--host`, `--cluster`, `--tags` and `--watch`, as every server report takes them.
#[derive(Args, Debug, Default)]
pub struct FilterArgs {
    /// Limit the report to a specific NATS server
    #[arg(long)]
    pub host: Option<String>,
    /// Limit the report to a specific Cluster
    #[arg(long)]
    pub cluster: Option<String>,
    /// Limit the report to nodes matching certain tags
    #[arg(long)]
    pub tags: Vec<String>,
    /// Display the results and update it every (WATCH) seconds
    #[arg(long)]
    pub watch: Option<u64>,
}

impl FilterArgs {
    pub(crate) fn event_filter<'a>(&'a self, options: &'a GlobalOptions) -> EventFilter<'a> {
        EventFilter {
            server_name: self.host.as_deref(),
            cluster: self.cluster.as_deref(),
            tags: &self.tags,
            domain: options.js_domain.as_deref().filter(|d| !d.is_empty()),
            exact_match: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn compacts_the_shared_domain_suffix_only() {
        let names = strings(&["n1.east.example.com", "n2.east.example.com"]);
        assert_eq!(compact_strings(&names), strings(&["n1", "n2"]));
        let names = strings(&["n1.east.example.com", "n2.west.example.com"]);
        assert_eq!(compact_strings(&names), strings(&["n1.east", "n2.west"]));
        let names = strings(&["a.x", "a.x"]);
        assert_eq!(compact_strings(&names), strings(&["a", "a"]));
        let names = strings(&["n1", "n2"]);
        assert_eq!(compact_strings(&names), names);
    }
}

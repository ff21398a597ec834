//! `nats consumer ...`: add (natscli's flags and questions, `--defaults`), edit, info,
//! state, ls, next (pull one message and acknowledge it), rm and report.

use std::time::Duration;

use bytes::Bytes;
use clap::{Args, Subcommand};

use crate::api::types::{ack_policy_name, replay_policy_name, ConsumerConfig, ConsumerInfo};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::columns::Columns;
use crate::output::format::{
    comma, comma_u64, go_duration, humanize_duration, humanize_nanos, ibytes, local_time_text,
    parse_duration, since,
};
use crate::output::is_interactive;
use crate::output::table::Table;
use crate::prompt;
use crate::stream::select_stream;

#[derive(Args, Debug)]
pub struct ConsumerArgs {
    /// Operate on all streams including system ones
    #[arg(long, short = 'a', global = true)]
    pub all: bool,
    #[command(subcommand)]
    pub command: ConsumerCommand,
}

#[derive(Subcommand, Debug)]
pub enum ConsumerCommand {
    /// Creates a new consumer
    #[command(alias = "create", alias = "new")]
    Add(AddArgs),
    /// Edits the configuration of a consumer
    #[command(alias = "update")]
    Edit(EditArgs),
    /// Consumer information
    #[command(alias = "nfo")]
    Info(InfoArgs),
    /// Consumer state
    State(InfoArgs),
    /// List known consumers
    #[command(alias = "list")]
    Ls(LsArgs),
    /// Retrieves messages from Pull consumers without interactive prompts
    Next(NextArgs),
    /// Removes a consumer
    #[command(alias = "delete", alias = "del")]
    Rm(RemoveArgs),
    /// Reports on consumer statistics
    Report(ReportArgs),
}

/// Flags shared by add and edit.
#[derive(Args, Debug, Default)]
pub struct ConsumerFlags {
    /// Acknowledgment policy (none, all, explicit)
    #[arg(long, value_parser = ["none", "all", "explicit"])]
    pub ack: Option<String>,
    /// Start policy (all, new, last, subject, 1h, msg sequence)
    #[arg(long, value_name = "POLICY")]
    pub deliver: Option<String>,
    /// Delivers push messages only to subscriptions matching this group
    #[arg(long, value_name = "GROUP")]
    pub deliver_group: Option<String>,
    /// Sets a contextual description for the consumer
    #[arg(long)]
    pub description: Option<String>,
    /// Create an ephemeral consumer
    #[arg(long)]
    pub ephemeral: bool,
    /// Filter Stream by subjects
    #[arg(long, value_name = "SUBJECTS")]
    pub filter: Vec<String>,
    /// Enable Push consumer flow control
    #[arg(long)]
    pub flow_control: bool,
    /// Enable idle Push consumer heartbeats (-1 disable)
    #[arg(long, allow_hyphen_values = true)]
    pub heartbeat: Option<String>,
    /// Deliver only headers and no bodies
    #[arg(long)]
    pub headers_only: bool,
    /// Maximum amount of times a message will be delivered
    #[arg(long, value_name = "TRIES", allow_hyphen_values = true)]
    pub max_deliver: Option<i64>,
    /// Maximum pending Acks before consumers are paused
    #[arg(long, allow_hyphen_values = true)]
    pub max_pending: Option<i64>,
    /// Maximum number of outstanding pulls allowed
    #[arg(long, value_name = "PULLS")]
    pub max_waiting: Option<i64>,
    /// Maximum size batch size for a pull request to accept
    #[arg(long, value_name = "BATCH_SIZE")]
    pub max_pull_batch: Option<i64>,
    /// Deliver messages in 'pull' mode
    #[arg(long)]
    pub pull: bool,
    /// Replay Policy (instant, original)
    #[arg(long, value_parser = ["instant", "original"])]
    pub replay: Option<String>,
    /// Push based delivery target subject
    #[arg(long, value_name = "SUBJECT")]
    pub target: Option<String>,
    /// Acknowledgment waiting time
    #[arg(long)]
    pub wait: Option<String>,
    /// How long to allow an ephemeral consumer to be idle before removing it
    #[arg(long, value_name = "THRESHOLD")]
    pub inactive_threshold: Option<String>,
    /// Force the consumer state to be stored in memory rather than inherit from the stream
    #[arg(long)]
    pub memory: bool,
    /// Sets a custom replica count rather than inherit from the stream
    #[arg(long)]
    pub replicas: Option<i64>,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Consumer name
    pub consumer: Option<String>,
    /// JSON file to read configuration from
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Accept default values for all prompts
    #[arg(long)]
    pub defaults: bool,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    #[command(flatten)]
    pub flags: ConsumerFlags,
}

#[derive(Args, Debug)]
pub struct EditArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Consumer name
    pub consumer: Option<String>,
    /// Force edit without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    #[command(flatten)]
    pub flags: ConsumerFlags,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Consumer name
    pub consumer: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Show just the consumer names
    #[arg(long, short = 'n')]
    pub names: bool,
}

#[derive(Args, Debug)]
pub struct NextArgs {
    /// Stream name
    pub stream: String,
    /// Consumer name
    pub consumer: String,
    /// Acknowledge received message (default true)
    #[arg(long, overrides_with = "no_ack")]
    pub ack: bool,
    /// Do not acknowledge received message
    #[arg(long)]
    pub no_ack: bool,
    /// Perform a Negative Acknowledgement on the message
    #[arg(long)]
    pub nak: bool,
    /// Terms the message
    #[arg(long)]
    pub term: bool,
    /// Show only the message
    #[arg(long, short = 'r')]
    pub raw: bool,
    /// Number of messages to try to fetch from the pull consumer
    #[arg(long, default_value_t = 1)]
    pub count: usize,
}

#[derive(Args, Debug)]
pub struct RemoveArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Consumer name
    pub consumer: Option<String>,
    /// Force removal without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Show un-formatted numbers
    #[arg(long, short = 'r')]
    pub raw: bool,
}

pub async fn run(args: &ConsumerArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await.context("setup failed")?;
    let js = JetStream::new(client, &effective);
    let all = args.all;
    let result = match &args.command {
        ConsumerCommand::Add(add) => add_consumer(&js, add, all).await,
        ConsumerCommand::Edit(edit) => edit_consumer(&js, edit, all).await,
        ConsumerCommand::Info(info) => show(&js, info, false, all).await,
        ConsumerCommand::State(info) => show(&js, info, true, all).await,
        ConsumerCommand::Ls(ls) => list(&js, ls, all).await,
        ConsumerCommand::Next(next) => next_messages(&js, next).await,
        ConsumerCommand::Rm(remove) => remove_consumer(&js, remove, all).await,
        ConsumerCommand::Report(report) => report_consumers(&js, report, all).await,
    };
    let _ = js.client.flush().await;
    result
}

/// The consumer to act on: the given one, or a choice on a terminal (natscli's selectConsumer).
async fn select_consumer(
    js: &JetStream,
    stream: &str,
    given: Option<&str>,
) -> Result<String, CliError> {
    let wrap = |error: CliError| CliError::Context {
        context: "could not select Consumer".to_string(),
        source: Box::new(error),
    };
    if let Some(name) = given.filter(|n| !n.is_empty()) {
        return Ok(name.to_string());
    }
    if !is_interactive() {
        return Err(wrap(CliError::message(
            "cannot pick a Consumer without a terminal and no Consumer name supplied",
        )));
    }
    let names = js.consumer_names(stream).await.map_err(wrap)?;
    if names.is_empty() {
        return Err(wrap(CliError::message(format!(
            "no Consumers are defined for Stream {stream}"
        ))));
    }
    prompt::select("Select a Consumer", &names, None).map_err(wrap)
}

struct Asker {
    accept_defaults: bool,
}

impl Asker {
    fn input(&self, text: &str, default: &str) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        prompt::input(text, default)
    }
    fn select(&self, text: &str, options: &[&str], default: &str) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        let owned: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        prompt::select(text, &owned, Some(default))
    }
    fn confirm(&self, text: &str, default: bool) -> Result<bool, CliError> {
        if self.accept_defaults {
            return Ok(default);
        }
        prompt::confirm(text, default)
    }
}

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| {
            v.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// natscli's start policies: all, new/next, last, subject/last_per_subject, a sequence, or
/// a duration ago.
fn apply_start_policy(config: &mut ConsumerConfig, policy: &str) -> Result<(), CliError> {
    match policy {
        "" => {}
        "all" => config.deliver_policy = "all".into(),
        "last" => config.deliver_policy = "last".into(),
        "new" | "next" => config.deliver_policy = "new".into(),
        "subject" | "last_per_subject" => config.deliver_policy = "last_per_subject".into(),
        text if text.chars().all(|c| c.is_ascii_digit()) => {
            config.deliver_policy = "by_start_sequence".into();
            config.opt_start_seq = text.parse().unwrap_or(0);
        }
        text => {
            let ago = parse_duration(text).context("could not parse starting delta")?;
            let start = chrono::Utc::now()
                - chrono::Duration::from_std(ago).unwrap_or_else(|_| chrono::Duration::zero());
            config.deliver_policy = "by_start_time".into();
            config.opt_start_time = Some(start.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
        }
    }
    Ok(())
}

/// natscli's consumer prepareConfig, question for question.
fn prepare_config(
    name: Option<&str>,
    accept_defaults: bool,
    flags: &ConsumerFlags,
) -> Result<ConsumerConfig, CliError> {
    let terminal = is_interactive();
    let asker = Asker {
        accept_defaults: accept_defaults || !terminal,
    };
    let mut config = ConsumerConfig {
        description: flags.description.clone().unwrap_or_default(),
        ..ConsumerConfig::default()
    };
    let mut name = name.unwrap_or_default().to_string();
    if name.is_empty() && !flags.ephemeral {
        if !terminal {
            return Err(CliError::message(
                "a consumer name is required when not running in a terminal",
            ));
        }
        name = prompt::input_required("Consumer name").context("could not request durable name")?;
    }
    if name.contains(['.', '*', '>']) {
        return Err(CliError::message(
            "durable name can not contain '.', '*', '>'",
        ));
    }
    if flags.ephemeral {
        config.name = name;
    } else {
        config.durable_name = name;
    }
    let mut target = flags.target.clone().unwrap_or_default();
    if !flags.pull && target.is_empty() && !asker.accept_defaults {
        target = prompt::input("Delivery target (empty for Pull Consumers)", "")
            .context("could not request delivery target")?;
    }
    config.deliver_subject = target.clone();
    let push = !target.is_empty();
    if push {
        config.deliver_group = match &flags.deliver_group {
            Some(group) => group.clone(),
            None => asker.input("Delivery Queue Group", "")?,
        };
    }
    let start = match &flags.deliver {
        Some(policy) => policy.clone(),
        None => asker.input(
            "Start policy (all, new, last, subject, 1h, msg sequence)",
            "all",
        )?,
    };
    apply_start_policy(&mut config, &start)?;
    let ack_default = if push { "none" } else { "explicit" };
    let ack = match &flags.ack {
        Some(ack) => ack.clone(),
        None => asker.select(
            "Acknowledgment policy",
            &["explicit", "all", "none"],
            ack_default,
        )?,
    };
    config.ack_policy = ack.clone();
    let replay = match &flags.replay {
        Some(replay) => replay.clone(),
        None => asker.select("Replay policy", &["instant", "original"], "instant")?,
    };
    config.replay_policy = replay;
    if let Some(wait) = &flags.wait {
        let wait = parse_duration(wait)?;
        if !wait.is_zero() {
            config.ack_wait = nanos(wait);
        }
    }
    let mut filters = split_list(&flags.filter);
    if filters.is_empty() && !asker.accept_defaults {
        let answer = prompt::input("Filter Stream by subjects (blank for all)", "")?;
        filters = split_list(&[answer]);
    }
    match filters.len() {
        0 => {}
        1 => config.filter_subject = filters[0].clone(),
        _ => config.filter_subjects = filters,
    }
    if config.filter_subject.is_empty()
        && config.filter_subjects.is_empty()
        && config.deliver_policy == "last_per_subject"
    {
        config.filter_subject = ">".into();
    }
    if ack != "none" {
        config.max_deliver = match flags.max_deliver {
            Some(value) => value,
            None => asker
                .input("Maximum Allowed Deliveries", "-1")?
                .parse()
                .map_err(|_| CliError::message("invalid number"))?,
        };
        let pending: i64 = match flags.max_pending {
            Some(value) => value,
            None => asker
                .input("Maximum Acknowledgments Pending", "0")?
                .parse()
                .map_err(|_| CliError::message("invalid number"))?,
        };
        config.max_ack_pending = pending.max(0);
    } else {
        config.max_deliver = -1;
    }
    if push {
        let heartbeat = match &flags.heartbeat {
            Some(text) => text.clone(),
            None => asker.input("Idle Heartbeat", "0s")?,
        };
        if heartbeat != "-1" {
            config.idle_heartbeat = nanos(parse_duration(&heartbeat)?);
        }
        config.flow_control =
            flags.flow_control || asker.confirm("Enable Flow Control, ie --flow-control", false)?;
    } else if flags.heartbeat.as_deref().is_some_and(|h| h != "-1") {
        return Err(CliError::message(
            "pull subscribers does not support idle heartbeats",
        ));
    }
    config.headers_only =
        flags.headers_only || asker.confirm("Deliver headers only without bodies", false)?;
    if ack != "none" && !asker.accept_defaults {
        // natscli offers a retry backoff here; we only support declining it.
        let _ = prompt::confirm("Add a Retry Backoff Policy", false)?;
    }
    if !push {
        config.max_waiting = flags.max_waiting.unwrap_or(0);
    }
    if let Some(batch) = flags.max_pull_batch {
        config.max_batch = batch;
    }
    if let Some(threshold) = &flags.inactive_threshold {
        config.inactive_threshold = nanos(parse_duration(threshold)?);
    }
    config.num_replicas = flags.replicas.unwrap_or(0);
    config.mem_storage = flags.memory;
    Ok(config)
}

async fn add_consumer(js: &JetStream, args: &AddArgs, show_all: bool) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)?;
            let value: serde_json::Value = serde_json::from_str(&text)?;
            let value = value.get("config").cloned().unwrap_or(value);
            let mut config: ConsumerConfig = serde_json::from_value(value)?;
            if let Some(name) = &args.consumer {
                config.durable_name = name.clone();
            }
            config
        }
        None => prepare_config(args.consumer.as_deref(), args.defaults, &args.flags)?,
    };
    let info = js
        .consumer_create(&stream, &config)
        .await
        .context("Consumer creation failed")?;
    print_info(&info, args.json, false)
}

async fn edit_consumer(js: &JetStream, args: &EditArgs, show_all: bool) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let name = select_consumer(js, &stream, args.consumer.as_deref()).await?;
    let info = js
        .consumer_info(&stream, &name)
        .await
        .context(&format!("could not load Consumer {stream} > {name}"))?;
    let mut config = info.config.clone();
    let flags = &args.flags;
    if let Some(description) = &flags.description {
        config.description = description.clone();
    }
    if let Some(wait) = &flags.wait {
        config.ack_wait = nanos(parse_duration(wait)?);
    }
    if let Some(value) = flags.max_deliver {
        config.max_deliver = value;
    }
    if let Some(value) = flags.max_pending {
        config.max_ack_pending = value;
    }
    if let Some(value) = flags.max_waiting {
        config.max_waiting = value;
    }
    if let Some(value) = flags.max_pull_batch {
        config.max_batch = value;
    }
    if !flags.filter.is_empty() {
        let filters = split_list(&flags.filter);
        config.filter_subject.clear();
        config.filter_subjects.clear();
        if filters.len() == 1 {
            config.filter_subject = filters[0].clone();
        } else {
            config.filter_subjects = filters;
        }
    }
    if flags.headers_only {
        config.headers_only = true;
    }
    if let Some(threshold) = &flags.inactive_threshold {
        config.inactive_threshold = nanos(parse_duration(threshold)?);
    }
    if config == info.config {
        println!("No difference in configuration");
        return Ok(());
    }
    if !args.force {
        let confirmed = prompt::confirm(&format!("Really edit Consumer {stream} > {name}"), false)
            .context("could not obtain confirmation")?;
        if !confirmed {
            return Ok(());
        }
    }
    let updated = js
        .consumer_create(&stream, &config)
        .await
        .context(&format!("could not edit Consumer {name}"))?;
    print_info(&updated, args.json, false)
}

async fn show(
    js: &JetStream,
    args: &InfoArgs,
    state_only: bool,
    show_all: bool,
) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let name = select_consumer(js, &stream, args.consumer.as_deref()).await?;
    let info = js
        .consumer_info(&stream, &name)
        .await
        .context(&format!("could not load Consumer {stream} > {name}"))?;
    print_info(&info, args.json, state_only)
}

fn print_info(info: &ConsumerInfo, json: bool, state_only: bool) -> Result<(), CliError> {
    if json {
        println!("{}", serde_json::to_string_pretty(info)?);
        return Ok(());
    }
    print!("{}", render_info(info, state_only));
    Ok(())
}

fn deliver_policy_text(config: &ConsumerConfig) -> String {
    match config.deliver_policy.as_str() {
        "all" => "All".to_string(),
        "last" => "Last".to_string(),
        "new" => "New".to_string(),
        "last_per_subject" => "Last Per Subject".to_string(),
        "by_start_time" => format!(
            "Since {}",
            config.opt_start_time.clone().unwrap_or_default()
        ),
        "by_start_sequence" => format!("From Sequence {}", config.opt_start_seq),
        other => other.to_string(),
    }
}

/// natscli's consumer info layout.
pub fn render_info(info: &ConsumerInfo, state_only: bool) -> String {
    let config = &info.config;
    let created = local_time_text(&info.created);
    let mut columns = if state_only {
        Columns::new(format!(
            "State for Consumer {} > {} created {created}",
            info.stream_name, info.name
        ))
    } else {
        Columns::new(format!(
            "Information for Consumer {} > {} created {created}",
            info.stream_name, info.name
        ))
    };
    let push = !config.deliver_subject.is_empty();
    if !state_only {
        columns.section("Configuration");
        columns.row_if_not_empty("Name", &config.name);
        columns.row_if(
            "Durable Name",
            &config.durable_name,
            !config.durable_name.is_empty() && config.durable_name != config.name,
        );
        columns.row_if_not_empty("Description", &config.description);
        if push {
            columns.row("Delivery Subject", &config.deliver_subject);
        } else {
            columns.row("Pull Mode", true);
        }
        if !config.filter_subject.is_empty() {
            columns.row("Filter Subject", &config.filter_subject);
        } else if !config.filter_subjects.is_empty() {
            columns.row("Filter Subjects", config.filter_subjects.join(", "));
        }
        columns.row("Deliver Policy", deliver_policy_text(config));
        columns.row_if(
            "Deliver Queue Group",
            &config.deliver_group,
            !config.deliver_group.is_empty() && push,
        );
        columns.row("Ack Policy", ack_policy_name(&config.ack_policy));
        columns.row_if(
            "Ack Wait",
            humanize_nanos(config.ack_wait),
            config.ack_policy != "none",
        );
        columns.row("Replay Policy", replay_policy_name(&config.replay_policy));
        columns.row_if(
            "Maximum Deliveries",
            comma(config.max_deliver),
            config.max_deliver != -1,
        );
        columns.row_if_not_empty("Sampling Rate", &config.sample_freq);
        columns.row_if(
            "Rate Limit",
            format!("{} / second", ibytes(config.rate_limit_bps / 8)),
            config.rate_limit_bps > 0,
        );
        columns.row_if(
            "Max Ack Pending",
            comma(config.max_ack_pending),
            config.max_ack_pending > 0,
        );
        columns.row_if(
            "Max Waiting Pulls",
            comma(config.max_waiting),
            config.max_waiting > 0,
        );
        columns.row_if(
            "Idle Heartbeat",
            humanize_nanos(config.idle_heartbeat),
            config.idle_heartbeat > 0,
        );
        columns.row_if("Flow Control", config.flow_control, push);
        columns.row_if("Headers Only", true, config.headers_only);
        columns.row_if(
            "Inactive Threshold",
            humanize_nanos(config.inactive_threshold),
            config.inactive_threshold > 0 && !push,
        );
        columns.row_if(
            "Max Pull Expire",
            humanize_nanos(config.max_expires),
            config.max_expires > 0,
        );
        columns.row_if(
            "Max Pull Batch",
            comma(config.max_batch),
            config.max_batch > 0,
        );
        columns.row_if(
            "Max Pull MaxBytes",
            comma(config.max_bytes),
            config.max_bytes > 0,
        );
        if !config.backoff.is_empty() {
            let steps: Vec<String> = config
                .backoff
                .iter()
                .map(|n| go_duration(Duration::from_nanos((*n).max(0) as u64)))
                .collect();
            columns.row("Backoff", steps.join(", "));
        }
        columns.row_if(
            "Replicas",
            comma(config.num_replicas),
            config.num_replicas > 0,
        );
        columns.row_if("Memory Storage", true, config.mem_storage);
        let metadata: Vec<(&String, &String)> = config
            .metadata
            .iter()
            .filter(|(k, _)| !k.starts_with("_nats"))
            .collect();
        if !metadata.is_empty() {
            columns.section("Metadata");
            for (key, value) in metadata {
                columns.row(key, value);
            }
        }
    }
    if let Some(cluster) = info.cluster.as_ref().filter(|c| !c.name.is_empty()) {
        columns.section("Cluster Information");
        columns.row("Name", &cluster.name);
        columns.row_if_not_empty("Raft Group", &cluster.raft_group);
        columns.row("Leader", &cluster.leader);
        for replica in &cluster.replicas {
            let seen = if replica.active == 0 || replica.active == i64::MAX {
                "not seen".to_string()
            } else {
                format!("seen {} ago", humanize_nanos(replica.active))
            };
            let state = if replica.current {
                "current"
            } else {
                "outdated"
            };
            columns.row("Replica", format!("{}, {state}, {seen}", replica.name));
        }
    }
    columns.section("State");
    let metadata = &config.metadata;
    if let Some(version) = metadata.get("_nats.ver") {
        columns.row("Host Version", version);
    }
    let level = metadata.get("_nats.level").cloned().unwrap_or_default();
    let required = metadata.get("_nats.req.level").cloned().unwrap_or_default();
    if !level.is_empty() || !required.is_empty() {
        let required = if required.is_empty() {
            "0".to_string()
        } else {
            required
        };
        columns.row(
            "Required API Level",
            format!("{required} hosted at level {level}"),
        );
    }
    let sequences = |label: &str, seq: &crate::api::types::SequenceInfo| match &seq.last_active {
        Some(last) => format!(
            "Consumer sequence: {} Stream sequence: {} {label}: {} ago",
            comma_u64(seq.consumer_seq),
            comma_u64(seq.stream_seq),
            humanize_duration(since(last))
        ),
        None => format!(
            "Consumer sequence: {} Stream sequence: {}",
            comma_u64(seq.consumer_seq),
            comma_u64(seq.stream_seq)
        ),
    };
    columns.row(
        "Last Delivered Message",
        sequences("Last delivery", &info.delivered),
    );
    if config.ack_policy != "none" {
        columns.row(
            "Acknowledgment Floor",
            sequences("Last Ack", &info.ack_floor),
        );
        if config.max_ack_pending > 0 {
            columns.row(
                "Outstanding Acks",
                format!(
                    "{} out of maximum {}",
                    comma(info.num_ack_pending),
                    comma(config.max_ack_pending)
                ),
            );
        } else {
            columns.row("Outstanding Acks", comma(info.num_ack_pending));
        }
        columns.row("Redelivered Messages", comma(info.num_redelivered));
    }
    columns.row("Unprocessed Messages", comma_u64(info.num_pending));
    if !push {
        if config.max_waiting > 0 {
            columns.row(
                "Waiting Pulls",
                format!(
                    "{} of maximum {}",
                    comma(info.num_waiting),
                    comma(config.max_waiting)
                ),
            );
        } else {
            columns.row(
                "Waiting Pulls",
                format!("{} of unlimited", comma(info.num_waiting)),
            );
        }
    } else if info.push_bound {
        if config.deliver_group.is_empty() {
            columns.row("Active Interest", "Active");
        } else {
            columns.row(
                "Active Interest",
                format!("Active using Queue Group {}", config.deliver_group),
            );
        }
    } else {
        columns.row("Active Interest", "No interest");
    }
    columns.render()
}

async fn list(js: &JetStream, args: &LsArgs, show_all: bool) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let names = js
        .consumer_names(&stream)
        .await
        .context("could not load Consumers")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&names)?);
        return Ok(());
    }
    if args.names {
        for name in &names {
            println!("{name}");
        }
        return Ok(());
    }
    if names.is_empty() {
        println!("No Consumers defined");
        return Ok(());
    }
    let consumers = js.consumer_list(&stream).await?;
    let mut table = Table::new("Consumers");
    table.headers([
        "Name",
        "Description",
        "Created",
        "Ack Pending",
        "Unprocessed",
        "Last Delivery",
    ]);
    table.align_right(3);
    table.align_right(4);
    for consumer in &consumers {
        let last = match &consumer.delivered.last_active {
            Some(last) => humanize_duration(since(last)),
            None => humanize_duration(since(crate::api::types::GO_ZERO_TIME)),
        };
        table.row([
            consumer.name.clone(),
            consumer.config.description.clone(),
            local_time_text(&consumer.created),
            consumer.num_ack_pending.to_string(),
            consumer.num_pending.to_string(),
            last,
        ]);
    }
    println!("{}\n", table.render());
    Ok(())
}

/// The metadata in a JetStream delivery's reply subject (`$JS.ACK...`).
struct Delivery {
    delivered: u64,
    stream_seq: u64,
    consumer_seq: u64,
    pending: u64,
}

fn parse_ack_subject(subject: &str) -> Option<Delivery> {
    let tokens: Vec<&str> = subject.split('.').collect();
    if tokens.len() < 2 || tokens[0] != "$JS" || tokens[1] != "ACK" {
        return None;
    }
    // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
    // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
    let numbers = match tokens.len() {
        9 => &tokens[4..9],
        11 | 12 => &tokens[6..11],
        _ => return None,
    };
    Some(Delivery {
        delivered: numbers[0].parse().ok()?,
        stream_seq: numbers[1].parse().ok()?,
        consumer_seq: numbers[2].parse().ok()?,
        pending: numbers[4].parse().ok()?,
    })
}

async fn next_messages(js: &JetStream, args: &NextArgs) -> Result<(), CliError> {
    let acknowledge = !args.no_ack && (!args.term || args.ack);
    if args.term && (args.ack || args.nak) {
        return Err(CliError::message(
            "can not both Acknowledge and Terminate message",
        ));
    }
    for _ in 0..args.count.max(1) {
        // Expire the pull just before our own wait ends so the server answers first.
        let expires = js.timeout.saturating_sub(Duration::from_millis(100));
        let body = serde_json::json!({"batch": 1, "expires": nanos(expires)});
        let subject = js.next_subject(&args.stream, &args.consumer);
        // A pull delivery carries the message's own subject, not the inbox, so the reply is
        // awaited on a dedicated subscription (natscli's old request style).
        let inbox = js.client.new_inbox();
        let mut replies = js.client.subscribe(inbox.clone()).await?;
        js.client
            .publish_with_reply(subject, inbox, Bytes::from(serde_json::to_vec(&body)?))
            .await?;
        js.client.flush().await?;
        let message =
            match tokio::time::timeout(js.timeout, futures::StreamExt::next(&mut replies)).await {
                Ok(Some(message)) => message,
                Ok(None) | Err(_) => {
                    return Err(CliError::Context {
                        context: "no message received".to_string(),
                        source: Box::new(CliError::Timeout),
                    })
                }
            };
        if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            js.consumer_info(&args.stream, &args.consumer)
                .await
                .context(&format!("could not load consumer {:?}", args.consumer))?;
            return Err(CliError::message(format!(
                "consumer {:?} is not a Pull consumer",
                args.consumer
            )));
        }
        if let Some(status) = message.status {
            let description = message.description.clone().unwrap_or_default();
            return Err(CliError::message(format!(
                "no message received: {} {description}",
                status.as_u16()
            )));
        }
        let reply = message
            .reply
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_default();
        if args.raw {
            println!("{}", String::from_utf8_lossy(&message.payload));
        } else {
            match parse_ack_subject(&reply) {
                Some(delivery) => println!(
                    "[{}] subj: {} / tries: {} / cons seq: {} / str seq: {} / pending: {}",
                    chrono::Local::now().format("%H:%M:%S"),
                    message.subject.as_str(),
                    delivery.delivered,
                    delivery.consumer_seq,
                    delivery.stream_seq,
                    comma_u64(delivery.pending)
                ),
                None if reply.is_empty() => {
                    println!("--- subject: {}", message.subject.as_str())
                }
                None => println!("--- subject: {} reply: {reply}", message.subject.as_str()),
            }
            if let Some(headers) = message.headers.as_ref().filter(|h| !h.is_empty()) {
                println!();
                println!("Headers:");
                println!();
                for (name, values) in headers.iter() {
                    for value in values {
                        println!("  {name}: {value}");
                    }
                }
                println!();
                println!("Data:");
                println!();
            }
            println!();
            println!("{}", String::from_utf8_lossy(&message.payload));
        }
        if args.term && !reply.is_empty() {
            js.client
                .publish(reply.clone(), Bytes::from_static(b"+TERM"))
                .await?;
            js.client.flush().await?;
            println!("\nTerminated message");
        }
        if (acknowledge || args.nak) && !reply.is_empty() {
            let body: &'static [u8] = if args.nak { b"-NAK" } else { b"+ACK" };
            js.client.publish(reply, Bytes::from_static(body)).await?;
            js.client.flush().await?;
            if !args.raw {
                let negative = if args.nak { "Negative " } else { "" };
                println!("\n{negative}Acknowledged message");
                println!();
            }
        }
    }
    Ok(())
}

async fn remove_consumer(
    js: &JetStream,
    args: &RemoveArgs,
    show_all: bool,
) -> Result<(), CliError> {
    if args.force {
        let (Some(stream), Some(consumer)) = (&args.stream, &args.consumer) else {
            return Err(CliError::message(
                "--force requires a stream and consumer name",
            ));
        };
        return js.consumer_delete(stream, consumer).await;
    }
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let name = select_consumer(js, &stream, args.consumer.as_deref()).await?;
    let confirmed = prompt::confirm(&format!("Really delete Consumer {stream} > {name}"), false)
        .context("could not obtain confirmation")?;
    if !confirmed {
        return Ok(());
    }
    js.consumer_delete(&stream, &name).await
}

async fn report_consumers(
    js: &JetStream,
    args: &ReportArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let info = js.stream_info(&stream).await?;
    let consumers = js.consumer_list(&stream).await?;
    let mut table = Table::new(format!(
        "Consumer report for {stream} with {} consumers",
        comma(info.state.consumer_count)
    ));
    table.headers([
        "Consumer",
        "Mode",
        "Ack Policy",
        "Ack Wait",
        "Ack Pending",
        "Redelivered",
        "Unprocessed",
        "Ack Floor",
        "API Level",
        "Cluster",
    ]);
    for consumer in &consumers {
        let config = &consumer.config;
        let mode = if config.deliver_subject.is_empty() {
            "Pull"
        } else {
            "Push"
        };
        let api_level = config
            .metadata
            .get("_nats.req.level")
            .cloned()
            .unwrap_or_else(|| "0".to_string());
        let cluster = consumer
            .cluster
            .as_ref()
            .map(|c| {
                let mut peers = Vec::new();
                if !c.leader.is_empty() {
                    peers.push(format!("{}*", c.leader));
                }
                peers.extend(c.replicas.iter().map(|r| r.name.clone()));
                peers.sort();
                peers.join(", ")
            })
            .unwrap_or_default();
        let unprocessed = if args.raw {
            consumer.num_pending.to_string()
        } else if consumer.num_pending > 0 {
            let percent = if info.state.messages > 0 {
                ((consumer.num_pending as f64 / info.state.messages as f64) * 100.0)
                    .floor()
                    .min(100.0)
            } else {
                100.0
            };
            format!("{} / {percent:.0}%", comma_u64(consumer.num_pending))
        } else {
            "0".to_string()
        };
        let (ack_wait, ack_pending, redelivered, floor) = if args.raw {
            (
                config.ack_wait.to_string(),
                consumer.num_ack_pending.to_string(),
                consumer.num_redelivered.to_string(),
                consumer.ack_floor.stream_seq.to_string(),
            )
        } else {
            (
                humanize_nanos(config.ack_wait),
                comma(consumer.num_ack_pending),
                comma(consumer.num_redelivered),
                comma_u64(consumer.ack_floor.stream_seq),
            )
        };
        table.row([
            consumer.name.clone(),
            mode.to_string(),
            ack_policy_name(&config.ack_policy).to_string(),
            ack_wait,
            ack_pending,
            redelivered,
            unprocessed,
            floor,
            api_level,
            cluster,
        ]);
    }
    println!("{}\n", table.render());
    Ok(())
}

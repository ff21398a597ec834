//! `nats consumer ...`: add (natscli's flags and questions, `--defaults`), edit, info,
//! state, ls, next (pull one message and acknowledge it), rm and report. `config` builds
//! ConsumerConfigs, `show` renders info/ls/report, `next` pulls. Talks to the server only
//! through [`crate::api::JetStream`].

mod cluster;
mod config;
mod next;
mod show;

use clap::{Args, Subcommand};

use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::is_interactive;
use crate::prompt;
use crate::stream::select_stream;

use config::{add_consumer, edit_consumer};
use next::next_messages;
use show::{list, report_consumers, show};

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
    /// Manages a clustered consumer
    #[command(alias = "c", subcommand)]
    Cluster(cluster::ClusterCommand),
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
    /// Only shows differences, do not edit the consumer
    #[arg(long)]
    pub dry_run: bool,
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
        ConsumerCommand::Cluster(command) => cluster::run(&js, command, all).await,
    };
    let _ = js.client.flush().await;
    result
}

/// The stream and consumer named (or chosen on a terminal) and the consumer's info.
async fn load_selected(
    js: &JetStream,
    stream: Option<&str>,
    consumer: Option<&str>,
    show_all: bool,
) -> Result<(String, String, jetstream_api::ConsumerInfo), CliError> {
    let stream = select_stream(js, stream, show_all)
        .await
        .context("could not select Stream")?;
    let name = select_consumer(js, &stream, consumer).await?;
    let info = js
        .consumer_info(&stream, &name)
        .await
        .context(&format!("could not load Consumer {stream} > {name}"))?;
    Ok((stream, name, info))
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

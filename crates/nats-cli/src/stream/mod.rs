//! `nats stream ...`: create, edit, inspect, page through, purge and remove streams, with
//! natscli's flags, prompts and layouts. `config` runs add/edit/copy with the StreamConfig
//! built from `flags` and `questions` (mirrors and sources in `sources`), `show` renders
//! info/state, `listing` ls/report/subjects, `messages` views, gets and purges.
//! Talks to the server only through [`crate::api::JetStream`].

mod admin;
mod cluster;
pub(crate) mod config;
pub(crate) mod flags;
mod listing;
mod messages;
mod questions;
mod show;
mod sources;

use clap::{Args, Subcommand};

use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::is_interactive;
use crate::prompt;

#[derive(Args, Debug)]
pub struct StreamArgs {
    /// When listing or selecting streams show all streams including system ones
    #[arg(long, short = 'a', global = true)]
    pub all: bool,
    #[command(subcommand)]
    pub command: StreamCommand,
}

#[derive(Subcommand, Debug)]
pub enum StreamCommand {
    /// Create a new stream
    #[command(alias = "create", alias = "new")]
    Add(flags::AddArgs),
    /// Edits an existing stream
    #[command(alias = "update")]
    Edit(flags::EditArgs),
    /// Creates a new stream based on the configuration of another, does not copy data
    #[command(alias = "cp")]
    Copy(flags::CopyArgs),
    /// Stream information
    #[command(alias = "nfo", alias = "i")]
    Info(show::InfoArgs),
    /// Stream state
    State(show::InfoArgs),
    /// List all known streams
    #[command(alias = "list", alias = "l")]
    Ls(listing::LsArgs),
    /// Reports on stream statistics
    Report(listing::ReportArgs),
    /// Query subjects held in a stream
    #[command(alias = "subj")]
    Subjects(listing::SubjectsArgs),
    /// View messages in a stream
    View(messages::ViewArgs),
    /// Retrieves a specific message from a Stream
    Get(messages::GetArgs),
    /// Securely removes an individual message from a stream
    Rmm(messages::RemoveMessageArgs),
    /// Bulk removes messages from a stream
    Purge(messages::PurgeArgs),
    /// Removes a stream
    #[command(alias = "delete", alias = "del")]
    Rm(messages::RemoveArgs),
    /// Seals a stream preventing further updates
    Seal(admin::SealArgs),
    /// Finds streams matching certain criteria
    Find(admin::FindArgs),
    /// Manages a clustered Stream
    #[command(alias = "c", subcommand)]
    Cluster(cluster::ClusterCommand),
}

pub async fn run(args: &StreamArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let connect = || async {
        let (client, effective) = options.connect().await.context("setup failed")?;
        Ok::<JetStream, CliError>(JetStream::new(client, &effective))
    };
    let js = connect().await?;
    let result = match &args.command {
        StreamCommand::Add(add) => config::add(&js, add).await,
        StreamCommand::Edit(edit) => config::edit(&js, edit, args.all).await,
        StreamCommand::Copy(copy) => config::copy(&js, copy, args.all).await,
        StreamCommand::Info(info) => show::info(&js, info, false, args.all).await,
        StreamCommand::State(info) => show::info(&js, info, true, args.all).await,
        StreamCommand::Ls(ls) => listing::ls(&js, ls, args.all).await,
        StreamCommand::Report(report) => listing::report(&js, report).await,
        StreamCommand::Subjects(subjects) => listing::subjects(&js, subjects, args.all).await,
        StreamCommand::View(view) => messages::view(&js, view, args.all).await,
        StreamCommand::Get(get) => messages::get(&js, get, args.all).await,
        StreamCommand::Rmm(remove) => messages::remove_message(&js, remove, args.all).await,
        StreamCommand::Purge(purge) => messages::purge(&js, purge, args.all).await,
        StreamCommand::Rm(remove) => messages::remove(&js, remove, args.all).await,
        StreamCommand::Seal(seal) => admin::seal(&js, seal, args.all).await,
        StreamCommand::Find(find) => admin::find(&js, find).await,
        StreamCommand::Cluster(command) => cluster::run(&js, command, args.all).await,
    };
    // Let queued publishes and acks reach the server before the process exits.
    let _ = js.client.flush().await;
    result
}

/// natscli's internal stream names (KV, object store, MQTT) hidden unless `--all`.
pub fn is_internal_stream(name: &str) -> bool {
    name.starts_with("KV_") || name.starts_with("OBJ_") || name.starts_with("$MQTT_")
}

/// The stream to act on: the given name if it exists; otherwise, on a terminal, a choice
/// from the known streams; without a terminal, an error (natscli's selectStream).
pub async fn select_stream(
    js: &JetStream,
    given: Option<&str>,
    show_all: bool,
) -> Result<String, CliError> {
    let wrap = |error: CliError| CliError::Context {
        context: "could not pick a Stream to operate on".to_string(),
        source: Box::new(error),
    };
    if let Some(name) = given.filter(|n| !n.is_empty()) {
        match js.stream_info(name).await {
            Ok(_) => return Ok(name.to_string()),
            Err(error) if error.api_err_code() == Some(crate::api::STREAM_NOT_FOUND) => {
                if !is_interactive() {
                    return Err(wrap(error));
                }
            }
            Err(error) => return Err(wrap(error)),
        }
    }
    if !is_interactive() {
        return Err(wrap(CliError::message(
            "cannot pick a Stream without a terminal and no Stream name supplied",
        )));
    }
    let names: Vec<String> = js
        .stream_names(None)
        .await
        .map_err(wrap)?
        .into_iter()
        .filter(|n| show_all || !is_internal_stream(n))
        .collect();
    if names.is_empty() {
        return Err(wrap(CliError::message("no Streams are defined")));
    }
    prompt::select("Select a Stream", &names, None).map_err(wrap)
}

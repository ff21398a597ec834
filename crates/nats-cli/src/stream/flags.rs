//! The command line of `stream add`, `stream edit` and `stream copy`: natscli's flags (shared
//! by all three) and the parsing of their values into jetstream-api's types. What the flags
//! leave open is asked in `questions`; `config` runs the commands.

use std::collections::BTreeMap;

use clap::Args;
use jetstream_api::{Compression, DiscardPolicy, RetentionPolicy, StorageType};

use crate::error::CliError;

/// The flags `stream add`, `edit` and `copy` share.
#[derive(Args, Debug, Default, Clone)]
pub struct CreateFlags {
    /// Subjects that are consumed by the stream
    #[arg(long, value_name = "SUBJECTS")]
    pub subjects: Vec<String>,
    /// Sets a contextual description for the stream
    #[arg(long)]
    pub description: Option<String>,
    /// Storage backend to use (file, memory)
    #[arg(long, value_parser = ["file", "f", "memory", "m"])]
    pub storage: Option<String>,
    /// Compression algorithm to use (file storage only)
    #[arg(long, value_parser = ["none", "s2"])]
    pub compression: Option<String>,
    /// When clustered, how many replicas of the data to create
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Place the stream on servers that has specific tags (pass multiple times)
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Place the stream on a specific cluster
    #[arg(long)]
    pub cluster: Option<String>,
    /// Acknowledge publishes (default true)
    #[arg(long, overrides_with = "no_ack")]
    pub ack: bool,
    /// Do not acknowledge publishes
    #[arg(long)]
    pub no_ack: bool,
    /// Defines a retention policy (limits, interest, work)
    #[arg(long, value_parser = ["limits", "interest", "workq", "work"])]
    pub retention: Option<String>,
    /// Defines the discard policy (new, old)
    #[arg(long, value_parser = ["new", "old"])]
    pub discard: Option<String>,
    /// Sets the 'new' discard policy and applies it to every subject in the stream
    #[arg(long)]
    pub discard_per_subject: bool,
    /// Sets the starting sequence
    #[arg(long)]
    pub first_sequence: Option<u64>,
    /// Maximum age of messages to keep
    #[arg(long)]
    pub max_age: Option<String>,
    /// Maximum bytes to keep
    #[arg(long, value_name = "BYTES")]
    pub max_bytes: Option<String>,
    /// Maximum number of consumers to allow
    #[arg(long, allow_hyphen_values = true)]
    pub max_consumers: Option<i64>,
    /// Maximum size any 1 message may be
    #[arg(long, value_name = "BYTES")]
    pub max_msg_size: Option<String>,
    /// Maximum amount of messages to keep
    #[arg(long, allow_hyphen_values = true)]
    pub max_msgs: Option<i64>,
    /// Maximum amount of messages to keep per subject
    #[arg(long, allow_hyphen_values = true)]
    pub max_msgs_per_subject: Option<i64>,
    /// Duration of the duplicate message tracking window
    #[arg(long)]
    pub dupe_window: Option<String>,
    /// Completely mirror another stream
    #[arg(long)]
    pub mirror: Option<String>,
    /// Source data from other streams, merging into this one
    #[arg(long = "source", value_name = "STREAM")]
    pub sources: Vec<String>,
    /// Allows roll-ups to be done by publishing messages with special headers
    #[arg(long, overrides_with = "no_allow_rollup")]
    pub allow_rollup: bool,
    #[arg(long, hide = true)]
    pub no_allow_rollup: bool,
    /// Deny messages from being deleted via the API
    #[arg(long, overrides_with = "no_deny_delete")]
    pub deny_delete: bool,
    #[arg(long, hide = true)]
    pub no_deny_delete: bool,
    /// Deny entire stream or subject purges via the API
    #[arg(long, overrides_with = "no_deny_purge")]
    pub deny_purge: bool,
    #[arg(long, hide = true)]
    pub no_deny_purge: bool,
    /// Allows fast, direct, access to stream data via the direct get API (default true)
    #[arg(long, overrides_with = "no_allow_direct")]
    pub allow_direct: bool,
    #[arg(long)]
    pub no_allow_direct: bool,
    /// Allows fast, direct, access to stream data via the direct get API on mirrors
    #[arg(long)]
    pub allow_mirror_direct: bool,
    /// Allows per-message TTL handling
    #[arg(long)]
    pub allow_msg_ttl: bool,
    /// Stream subject transform source
    #[arg(long, value_name = "SOURCE")]
    pub transform_source: Option<String>,
    /// Stream subject transform destination
    #[arg(long, value_name = "DEST")]
    pub transform_destination: Option<String>,
    /// Adds metadata to the stream (key=value)
    #[arg(long, value_name = "META")]
    pub metadata: Vec<String>,
    /// Republish messages to --republish-destination
    #[arg(long, value_name = "SOURCE")]
    pub republish_source: Option<String>,
    /// Republish destination for messages in --republish-source
    #[arg(long, value_name = "DEST")]
    pub republish_destination: Option<String>,
    /// Republish only message headers, no bodies
    #[arg(long)]
    pub republish_headers: bool,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

impl CreateFlags {
    fn flag_pair(set: bool, unset: bool) -> Option<bool> {
        match (set, unset) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            _ => None,
        }
    }
    pub(super) fn allow_rollup(&self) -> Option<bool> {
        Self::flag_pair(self.allow_rollup, self.no_allow_rollup)
    }
    pub(super) fn deny_delete(&self) -> Option<bool> {
        Self::flag_pair(self.deny_delete, self.no_deny_delete)
    }
    pub(super) fn deny_purge(&self) -> Option<bool> {
        Self::flag_pair(self.deny_purge, self.no_deny_purge)
    }
    pub(super) fn allow_direct(&self) -> Option<bool> {
        Self::flag_pair(self.allow_direct, self.no_allow_direct)
    }
    pub(super) fn metadata_map(&self) -> Result<BTreeMap<String, String>, CliError> {
        self.metadata
            .iter()
            .map(|entry| {
                entry
                    .split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        CliError::message(format!("invalid metadata {entry:?}, expected key=value"))
                    })
            })
            .collect()
    }
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// Stream name
    pub stream: Option<String>,
    /// JSON file to read configuration from
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Save configuration instead of creating
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Accept default values for all prompts
    #[arg(long)]
    pub defaults: bool,
    #[command(flatten)]
    pub flags: CreateFlags,
}

#[derive(Args, Debug)]
pub struct EditArgs {
    /// Stream to edit
    pub stream: Option<String>,
    /// JSON file to read configuration from
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Force edit without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
    /// Only shows differences, do not edit the stream
    #[arg(long)]
    pub dry_run: bool,
    /// Removes current mirror configuration
    #[arg(long)]
    pub no_mirror: bool,
    #[command(flatten)]
    pub flags: CreateFlags,
}

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// Source stream to copy
    pub source: String,
    /// New stream to create
    pub destination: String,
    #[command(flatten)]
    pub flags: CreateFlags,
}

/// natscli's subject list splitting: commas and white space separate subjects.
pub fn split_subjects(subjects: &[String]) -> Vec<String> {
    subjects
        .iter()
        .flat_map(|s| {
            s.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(super) fn storage_from(text: &str) -> Result<StorageType, CliError> {
    match text {
        "file" | "f" => Ok(StorageType::File),
        "memory" | "m" => Ok(StorageType::Memory),
        other => Err(CliError::message(format!("invalid storage type {other}"))),
    }
}

pub(super) fn retention_from(text: &str) -> Result<RetentionPolicy, CliError> {
    match text.to_ascii_lowercase().as_str() {
        "limits" => Ok(RetentionPolicy::Limits),
        "interest" => Ok(RetentionPolicy::Interest),
        "work queue" | "workq" | "work" | "workqueue" => Ok(RetentionPolicy::WorkQueue),
        other => Err(CliError::message(format!(
            "invalid retention policy {other}"
        ))),
    }
}

pub(super) fn discard_from(text: &str) -> Result<DiscardPolicy, CliError> {
    match text.to_ascii_lowercase().as_str() {
        "new" => Ok(DiscardPolicy::New),
        "old" => Ok(DiscardPolicy::Old),
        other => Err(CliError::message(format!("invalid discard policy {other}"))),
    }
}

/// `--compression none|s2` (clap only lets those two through).
pub(super) fn compression_from(text: &str) -> Result<Compression, CliError> {
    Compression::from_name(text)
        .ok_or_else(|| CliError::message(format!("invalid compression algorithm {text}")))
}

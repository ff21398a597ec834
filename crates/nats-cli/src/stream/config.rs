//! Building a StreamConfig for `stream add`, `stream edit` and `stream copy`: natscli's
//! flags, then its questions in its order with its defaults. `--defaults` answers them all
//! with the defaults; so does a session without a terminal (natscli would fail there; we
//! never wait on a pipe and never fail for a question that has a default).

use std::collections::BTreeMap;

use clap::Args;

use crate::api::types::{Placement, Republish, StreamConfig, StreamSource, SubjectTransform};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::{go_duration, parse_bytes, parse_duration};
use crate::output::is_interactive;
use crate::prompt;

use super::select_stream;
use super::show::print_stream_info;

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
    fn allow_rollup(&self) -> Option<bool> {
        Self::flag_pair(self.allow_rollup, self.no_allow_rollup)
    }
    fn deny_delete(&self) -> Option<bool> {
        Self::flag_pair(self.deny_delete, self.no_deny_delete)
    }
    fn deny_purge(&self) -> Option<bool> {
        Self::flag_pair(self.deny_purge, self.no_deny_purge)
    }
    fn allow_direct(&self) -> Option<bool> {
        Self::flag_pair(self.allow_direct, self.no_allow_direct)
    }
    fn metadata_map(&self) -> Result<BTreeMap<String, String>, CliError> {
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

fn storage_from(text: &str) -> Result<String, CliError> {
    match text {
        "file" | "f" => Ok("file".into()),
        "memory" | "m" => Ok("memory".into()),
        other => Err(CliError::message(format!("invalid storage type {other}"))),
    }
}

fn retention_from(text: &str) -> Result<String, CliError> {
    match text.to_ascii_lowercase().as_str() {
        "limits" => Ok("limits".into()),
        "interest" => Ok("interest".into()),
        "work queue" | "workq" | "work" | "workqueue" => Ok("workqueue".into()),
        other => Err(CliError::message(format!(
            "invalid retention policy {other}"
        ))),
    }
}

fn discard_from(text: &str) -> Result<String, CliError> {
    match text.to_ascii_lowercase().as_str() {
        "new" => Ok("new".into()),
        "old" => Ok("old".into()),
        other => Err(CliError::message(format!("invalid discard policy {other}"))),
    }
}

fn nanos(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

/// Load a config file: a StreamConfig, or a `stream info --json` document (its `config`).
fn load_config_file(path: &std::path::Path) -> Result<StreamConfig, CliError> {
    let text = std::fs::read_to_string(path)?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let config_value = match value.get("config") {
        Some(config) => config.clone(),
        None => value,
    };
    Ok(serde_json::from_value(config_value)?)
}

/// Ask, unless we may not (no terminal, or `--defaults`): then the default is the answer.
struct Asker {
    accept_defaults: bool,
}

impl Asker {
    fn input(&self, prompt_text: &str, default: &str) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        prompt::input(prompt_text, default).context("invalid input")
    }

    fn integer(&self, prompt_text: &str, default: &str) -> Result<i64, CliError> {
        let answer = self.input(prompt_text, default)?;
        answer
            .trim()
            .parse::<i64>()
            .map_err(|_| CliError::message(format!("invalid input: {answer:?} is not a number")))
    }

    fn bytes(&self, prompt_text: &str, default: &str) -> Result<i64, CliError> {
        let answer = self.input(prompt_text, default)?;
        if answer.trim() == "-1" {
            return Ok(-1);
        }
        parse_bytes(&answer).context("invalid input")
    }

    fn select(
        &self,
        prompt_text: &str,
        options: &[&str],
        default: &str,
    ) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        let owned: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        prompt::select(prompt_text, &owned, Some(default)).context("invalid input")
    }

    fn confirm(&self, prompt_text: &str, default: bool) -> Result<bool, CliError> {
        if self.accept_defaults {
            return Ok(default);
        }
        prompt::confirm(prompt_text, default).context("invalid input")
    }
}

/// natscli's prepareConfig: flags first, then the remaining questions in its order.
pub fn prepare_config(
    name: Option<&str>,
    config_file: Option<&std::path::Path>,
    accept_defaults: bool,
    flags: &CreateFlags,
    require_size: bool,
) -> Result<StreamConfig, CliError> {
    if let Some(path) = config_file {
        let mut config = load_config_file(path).context("invalid input")?;
        if let Some(name) = name {
            config.name = name.to_string();
        }
        if !flags.subjects.is_empty() {
            config.subjects = split_subjects(&flags.subjects);
        }
        if !flags.tags.is_empty() || flags.cluster.is_some() {
            let placement = config.placement.get_or_insert_with(Placement::default);
            if !flags.tags.is_empty() {
                placement.tags = flags.tags.clone();
            }
            if let Some(cluster) = &flags.cluster {
                placement.cluster = cluster.clone();
            }
        }
        if let Some(description) = &flags.description {
            config.description = description.clone();
        }
        if let Some(replicas) = flags.replicas.filter(|r| *r > 0) {
            config.num_replicas = replicas;
        }
        return Ok(config);
    }

    let terminal = is_interactive();
    // Without a terminal nothing can be asked: every question takes its default.
    let asker = Asker {
        accept_defaults: accept_defaults || !terminal,
    };

    let name = match name.filter(|n| !n.is_empty()) {
        Some(name) => name.to_string(),
        None if terminal => prompt::input_required("Stream Name").context("invalid input")?,
        None => {
            return Err(CliError::message(
                "a stream name is required when not running in a terminal",
            ))
        }
    };
    if name.is_empty() {
        return Err(CliError::message(
            "invalid input: a stream name is required",
        ));
    }

    let mut subjects = split_subjects(&flags.subjects);
    if flags.mirror.is_none() && flags.sources.is_empty() && subjects.is_empty() && terminal {
        let answer = prompt::input_required("Subjects").context("invalid input")?;
        subjects = split_subjects(&[answer]);
    }
    if flags.mirror.is_some() && !subjects.is_empty() {
        return Err(CliError::message(
            "mirrors cannot listen for messages on subjects",
        ));
    }

    let storage = match &flags.storage {
        Some(storage) => storage.clone(),
        None => asker.select("Storage", &["file", "memory"], "file")?,
    };
    let storage = storage_from(&storage)?;

    let replicas = match flags.replicas.filter(|r| *r != 0) {
        Some(replicas) => replicas,
        None => asker.integer("Replication", "1")?,
    };
    if replicas <= 0 {
        return Err(CliError::message("replicas should be >= 1"));
    }

    let retention = match &flags.retention {
        Some(retention) => retention.clone(),
        None => asker.select(
            "Retention Policy",
            &["Limits", "Interest", "Work Queue"],
            "Limits",
        )?,
    };
    let retention = retention_from(&retention)?;

    let discard = match &flags.discard {
        Some(discard) => discard.clone(),
        None => asker.select("Discard Policy", &["New", "Old"], "Old")?,
    };
    let discard = discard_from(&discard)?;

    let mut max_msgs = match flags.max_msgs.filter(|v| *v != 0) {
        Some(value) => value,
        None => asker.integer("Stream Messages Limit", "-1")?,
    };
    if max_msgs <= 0 {
        max_msgs = -1;
    }

    let mut max_msgs_per_subject = match flags.max_msgs_per_subject.filter(|v| *v != 0) {
        Some(value) => value,
        None if !subjects.is_empty() => asker.integer("Per Subject Messages Limit", "-1")?,
        None => -1,
    };
    if max_msgs_per_subject <= 0 {
        max_msgs_per_subject = -1;
    }

    let mut max_bytes = match &flags.max_bytes {
        Some(text) => parse_bytes(text)?,
        None => {
            let default = if require_size { "256MB" } else { "-1" };
            asker.bytes("Total Stream Size", default)?
        }
    };
    if max_bytes <= 0 {
        max_bytes = -1;
    }

    let max_age_text = match &flags.max_age {
        Some(text) => text.clone(),
        None => asker.input("Message TTL", "-1")?,
    };
    let max_age = if max_age_text.trim() == "-1" {
        std::time::Duration::ZERO
    } else {
        parse_duration(&max_age_text).context("invalid maximum age limit format")?
    };

    let mut max_msg_size = match &flags.max_msg_size {
        Some(text) => parse_bytes(text)?,
        None => asker.bytes("Max Message Size", "-1")?,
    };
    if max_msg_size == 0 {
        max_msg_size = -1;
    }
    if max_msg_size > i64::from(i32::MAX) {
        return Err(CliError::message(format!(
            "max value size {max_msg_size} is too big maximum is {}",
            i32::MAX
        )));
    }

    let mut duplicate_window = std::time::Duration::ZERO;
    match &flags.dupe_window {
        Some(text) => {
            duplicate_window = parse_duration(text).context("invalid duplicate window format")?
        }
        None if flags.mirror.is_none() => {
            let two_minutes = std::time::Duration::from_secs(120);
            let default = if !max_age.is_zero() && max_age < two_minutes {
                go_duration(max_age)
            } else {
                go_duration(two_minutes)
            };
            let answer = asker.input("Duplicate tracking time window", &default)?;
            duplicate_window =
                parse_duration(&answer).context("invalid duplicate window format")?;
        }
        None => {}
    }

    let allow_rollup = match flags.allow_rollup() {
        Some(value) => value,
        None => asker.confirm("Allow message Roll-ups", false)?,
    };
    let deny_delete = match flags.deny_delete() {
        Some(value) => value,
        None => !asker.confirm("Allow message deletion", true)?,
    };
    let deny_purge = match flags.deny_purge() {
        Some(value) => value,
        None => !asker.confirm("Allow purging subjects or the entire stream", true)?,
    };

    let mut config = StreamConfig {
        name,
        description: flags.description.clone().unwrap_or_default(),
        subjects,
        retention,
        max_consumers: flags.max_consumers.unwrap_or(-1),
        max_msgs_per_subject,
        max_msgs,
        max_bytes,
        max_age: nanos(max_age),
        max_msg_size: max_msg_size as i32,
        storage,
        discard,
        num_replicas: replicas,
        no_ack: flags.no_ack,
        duplicate_window: nanos(duplicate_window),
        compression: flags.compression.clone().unwrap_or_default(),
        allow_rollup_hdrs: allow_rollup,
        deny_delete,
        deny_purge,
        allow_direct: flags.allow_direct().unwrap_or(true),
        mirror_direct: flags.allow_mirror_direct,
        discard_new_per_subject: flags.discard_per_subject,
        first_seq: flags.first_sequence.unwrap_or(0),
        allow_msg_ttl: flags.allow_msg_ttl,
        metadata: flags.metadata_map()?,
        ..StreamConfig::default()
    };
    if flags.discard_per_subject {
        config.discard = "new".to_string();
    }
    if flags.cluster.is_some() || !flags.tags.is_empty() {
        config.placement = Some(Placement {
            cluster: flags.cluster.clone().unwrap_or_default(),
            tags: flags.tags.clone(),
            preferred: String::new(),
        });
    }
    if let Some(mirror) = &flags.mirror {
        config.mirror = Some(parse_source(mirror)?);
    }
    for source in &flags.sources {
        config.sources.push(parse_source(source)?);
    }
    apply_republish_and_transform(&mut config, flags)?;
    Ok(config)
}

fn parse_source(text: &str) -> Result<StreamSource, CliError> {
    let trimmed = text.trim();
    if trimmed.starts_with('{') && trimmed.ends_with('}') {
        return Ok(serde_json::from_str(trimmed)?);
    }
    Ok(StreamSource {
        name: trimmed.to_string(),
        ..StreamSource::default()
    })
}

fn apply_republish_and_transform(
    config: &mut StreamConfig,
    flags: &CreateFlags,
) -> Result<(), CliError> {
    match (&flags.republish_source, &flags.republish_destination) {
        (Some(source), Some(destination)) => {
            config.republish = Some(Republish {
                src: source.clone(),
                dest: destination.clone(),
                headers_only: flags.republish_headers,
            })
        }
        (None, None) => {}
        _ => {
            return Err(CliError::message(
                "must specify both --republish-source and --republish-destination",
            ))
        }
    }
    match (&flags.transform_source, &flags.transform_destination) {
        (Some(source), Some(destination)) => {
            config.subject_transform = Some(SubjectTransform {
                src: source.clone(),
                dest: destination.clone(),
            })
        }
        (None, None) => {}
        _ => {
            return Err(CliError::message(
                "must specify both --transform-source and --transform-destination",
            ))
        }
    }
    Ok(())
}

/// Apply only the flags given on the command line to an existing config (edit and copy).
fn edit_config(mut config: StreamConfig, flags: &CreateFlags) -> Result<StreamConfig, CliError> {
    if flags.no_ack {
        config.no_ack = true;
    } else if flags.ack {
        config.no_ack = false;
    }
    if let Some(discard) = &flags.discard {
        config.discard = discard_from(discard)?;
    }
    if !flags.subjects.is_empty() {
        config.subjects = split_subjects(&flags.subjects);
    }
    if let Some(storage) = &flags.storage {
        config.storage = storage_from(storage)?;
    }
    if let Some(retention) = &flags.retention {
        config.retention = retention_from(retention)?;
    }
    if let Some(text) = &flags.max_bytes {
        config.max_bytes = parse_bytes(text)?;
    }
    if let Some(value) = flags.max_msgs.filter(|v| *v != 0) {
        config.max_msgs = value;
    }
    if let Some(value) = flags.max_msgs_per_subject.filter(|v| *v != 0) {
        config.max_msgs_per_subject = value;
    }
    if let Some(text) = &flags.max_age {
        config.max_age = nanos(parse_duration(text).context("invalid maximum age limit format")?);
    }
    if let Some(text) = &flags.max_msg_size {
        config.max_msg_size = parse_bytes(text)?.clamp(-1, i64::from(i32::MAX)) as i32;
    }
    if let Some(value) = flags.max_consumers.filter(|v| *v != -1) {
        config.max_consumers = value;
    }
    if let Some(text) = &flags.dupe_window {
        config.duplicate_window = nanos(parse_duration(text).context("invalid duplicate window")?);
    }
    if let Some(value) = flags.replicas.filter(|v| *v != 0) {
        config.num_replicas = value;
    }
    if flags.cluster.is_some() || !flags.tags.is_empty() {
        let placement = config.placement.get_or_insert_with(Placement::default);
        if let Some(cluster) = &flags.cluster {
            placement.cluster = cluster.clone();
        }
        if !flags.tags.is_empty() {
            placement.tags = flags
                .tags
                .iter()
                .filter(|t| !t.is_empty())
                .cloned()
                .collect();
        }
    }
    if config
        .placement
        .as_ref()
        .is_some_and(|p| p.cluster.is_empty() && p.tags.is_empty())
    {
        config.placement = None;
    }
    if !flags.sources.is_empty() || flags.mirror.is_some() {
        return Err(CliError::message(
            "cannot edit mirrors, or sources using the CLI, use --config instead",
        ));
    }
    if let Some(description) = &flags.description {
        config.description = description.clone();
    }
    if let Some(value) = flags.allow_rollup() {
        config.allow_rollup_hdrs = value;
    }
    if let Some(value) = flags.deny_purge() {
        config.deny_purge = value;
    }
    if let Some(value) = flags.deny_delete() {
        config.deny_delete = value;
    }
    if let Some(value) = flags.allow_direct() {
        config.allow_direct = value;
    }
    if flags.allow_mirror_direct {
        config.mirror_direct = true;
    }
    if flags.allow_msg_ttl {
        config.allow_msg_ttl = true;
    }
    if flags.discard_per_subject {
        config.discard_new_per_subject = true;
    }
    if let Some(compression) = &flags.compression {
        config.compression = compression.clone();
    }
    if !flags.metadata.is_empty() {
        config.metadata = flags.metadata_map()?;
    }
    apply_republish_and_transform(&mut config, flags)?;
    Ok(config)
}

pub async fn add(js: &JetStream, args: &AddArgs) -> Result<(), CliError> {
    let require_size = js
        .account_info()
        .await
        .map(|info| info.limits.max_bytes_required)
        .unwrap_or(false);
    let config = prepare_config(
        args.stream.as_deref(),
        args.config.as_deref(),
        args.defaults,
        &args.flags,
        require_size,
    )?;
    if let Some(output) = &args.output {
        std::fs::write(output, serde_json::to_string_pretty(&config)?)?;
        return Ok(());
    }
    let info = js
        .stream_create(&config)
        .await
        .context("could not create Stream")?;
    if !args.flags.json {
        println!("Stream {} was created\n", config.name);
    }
    print_stream_info(&info, args.flags.json, false)?;
    Ok(())
}

/// A field-by-field difference of two configs as `-old +new` lines (stream and consumer
/// edit).
pub(crate) fn config_diff<T: serde::Serialize>(old: &T, new: &T) -> Result<Vec<String>, CliError> {
    let old_value = serde_json::to_value(old)?;
    let new_value = serde_json::to_value(new)?;
    let empty = serde_json::Map::new();
    let old_map = old_value.as_object().unwrap_or(&empty);
    let new_map = new_value.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = old_map.keys().chain(new_map.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines = Vec::new();
    for key in keys {
        let before = old_map.get(key);
        let after = new_map.get(key);
        if before != after {
            if let Some(before) = before {
                lines.push(format!("-  {key}: {before}"));
            }
            if let Some(after) = after {
                lines.push(format!("+  {key}: {after}"));
            }
        }
    }
    Ok(lines)
}

pub async fn edit(js: &JetStream, args: &EditArgs, show_all: bool) -> Result<(), CliError> {
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let info = js
        .stream_info(&name)
        .await
        .context(&format!("could not request Stream {name} configuration"))?;
    let current = info.config.clone();
    let updated = match &args.config {
        Some(path) => {
            let mut config = load_config_file(path)?;
            if config.name.is_empty() {
                config.name = name.clone();
            }
            config
        }
        None => edit_config(current.clone(), &args.flags).context(&format!(
            "could not create new configuration for Stream {name}"
        ))?,
    };
    let diff = config_diff(&current, &updated)?;
    if diff.is_empty() {
        if !args.dry_run {
            println!("No difference in configuration");
        }
        return Ok(());
    }
    println!("Differences (-old +new):");
    for line in &diff {
        println!("{line}");
    }
    if args.dry_run {
        return Err(CliError::message("dry run: configuration not changed"));
    }
    if !args.force {
        let confirmed = prompt::confirm(&format!("Really edit Stream {name}"), false)
            .context("could not obtain confirmation")?;
        if !confirmed {
            return Ok(());
        }
    }
    let info = js
        .stream_update(&updated)
        .await
        .context(&format!("could not edit Stream {name}"))?;
    if !args.flags.json {
        println!("Stream {name} was updated\n");
    }
    print_stream_info(&info, args.flags.json, false)
}

pub async fn copy(js: &JetStream, args: &CopyArgs, show_all: bool) -> Result<(), CliError> {
    if args.source == args.destination {
        return Err(CliError::message(
            "source and destination Stream names cannot be the same",
        ));
    }
    let name = select_stream(js, Some(&args.source), show_all).await?;
    let info = js
        .stream_info(&name)
        .await
        .context(&format!("could not request Stream {name} configuration"))?;
    let mut config =
        edit_config(info.config, &args.flags).context(&format!("could not copy Stream {name}"))?;
    config.name = args.destination.clone();
    let created = js
        .stream_create(&config)
        .await
        .context("could not create Stream")?;
    if !args.flags.json {
        println!("Stream {} was created\n", config.name);
    }
    print_stream_info(&created, args.flags.json, false)
}

//! `stream add`, `stream edit` and `stream copy`: a StreamConfig from a `--config` file, or
//! from the flags (`flags`) and natscli's questions (`questions`); edit and copy apply only the
//! flags given to the stream's current configuration and show the differences first.

use jetstream_api::{Nanos, Placement, StreamConfig};

use crate::api::jsm_json::{to_pretty, to_value, Shape, STREAM_CONFIG};
use crate::api::{load_config_file, JetStream};
use crate::error::{CliError, WithContext};
use crate::output::format::{parse_bytes, parse_duration};
use crate::prompt;

use super::flags::{
    compression_from, discard_from, retention_from, split_subjects, storage_from, AddArgs,
    CopyArgs, CreateFlags, EditArgs,
};
use super::questions::{apply_republish_and_transform, prepare_config};
use super::select_stream;
use super::show::print_stream_info;

/// Apply only the flags given on the command line to an existing config (edit and copy).
fn edit_config(
    mut config: StreamConfig,
    flags: &CreateFlags,
    remove_mirror: bool,
) -> Result<StreamConfig, CliError> {
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
        config.max_age =
            Nanos::from_std(parse_duration(text).context("invalid maximum age limit format")?);
    }
    if let Some(text) = &flags.max_msg_size {
        config.max_msg_size = parse_bytes(text)?.clamp(-1, i64::from(i32::MAX)) as i32;
    }
    if let Some(value) = flags.max_consumers.filter(|v| *v != -1) {
        config.max_consumers = value;
    }
    if let Some(text) = &flags.dupe_window {
        config.duplicate_window =
            Nanos::from_std(parse_duration(text).context("invalid duplicate window")?);
    }
    if let Some(value) = flags.replicas.filter(|v| *v != 0) {
        config.replicas = value;
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
        config.allow_rollup = value;
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
        config.compression = compression_from(compression)?;
    }
    if !flags.metadata.is_empty() {
        config.metadata = flags.metadata_map()?;
    }
    apply_republish_and_transform(&mut config, flags)?;
    if remove_mirror {
        config.mirror = None;
    }
    Ok(config)
}

pub async fn add(js: &JetStream, args: &AddArgs) -> Result<(), CliError> {
    let require_size = js
        .account_info()
        .await
        .map(|info| info.totals.limits.max_bytes_required)
        .unwrap_or(false);
    let config = prepare_config(
        args.stream.as_deref(),
        args.config.as_deref(),
        args.defaults,
        &args.flags,
        require_size,
    )?;
    if let Some(output) = &args.output {
        std::fs::write(output, to_pretty(&config, STREAM_CONFIG)?)?;
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
/// edit), over the fields natscli knows (`shape`).
pub(crate) fn config_diff<T: serde::Serialize>(
    old: &T,
    new: &T,
    shape: Shape,
) -> Result<Vec<String>, CliError> {
    let old_value = to_value(old, shape)?;
    let new_value = to_value(new, shape)?;
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

/// Prints the differences and asks (unless forced) whether to apply them; `false` when there
/// is nothing to do or the user declined. A dry run stops with natscli's error after printing.
pub(crate) fn confirm_differences(
    diff: &[String],
    dry_run: bool,
    force: bool,
    question: &str,
) -> Result<bool, CliError> {
    if diff.is_empty() {
        if !dry_run {
            println!("No difference in configuration");
        }
        return Ok(false);
    }
    println!("Differences (-old +new):");
    for line in diff {
        println!("{line}");
    }
    if dry_run {
        return Err(CliError::message("dry run: configuration not changed"));
    }
    if force {
        return Ok(true);
    }
    prompt::confirm(question, false).context("could not obtain confirmation")
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
            let mut config: StreamConfig = load_config_file(path)?;
            if config.name.is_empty() {
                config.name = name.clone();
            }
            config
        }
        None => edit_config(current.clone(), &args.flags, args.no_mirror).context(&format!(
            "could not create new configuration for Stream {name}"
        ))?,
    };
    let diff = config_diff(&current, &updated, STREAM_CONFIG)?;
    let question = format!("Really edit Stream {name}");
    if !confirm_differences(&diff, args.dry_run, args.force, &question)? {
        return Ok(());
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
    let mut config = edit_config(info.config, &args.flags, false)
        .context(&format!("could not copy Stream {name}"))?;
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

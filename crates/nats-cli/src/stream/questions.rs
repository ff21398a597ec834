//! natscli's questions for `stream add`, asked in its order with its defaults, for whatever the
//! flags left open. `--defaults` answers them all with the defaults; so does a session without
//! a terminal (natscli would fail there; we never wait on a pipe and never fail for a question
//! that has a default). Mirror and source questions live in `sources`.

use jetstream_api::{
    Compression, DiscardPolicy, Nanos, Placement, RePublish, StreamConfig, SubjectTransform,
};

use crate::api::load_config_file;
use crate::error::{CliError, WithContext};
use crate::output::format::{go_duration, parse_bytes, parse_duration};
use crate::output::is_interactive;
use crate::prompt::{self, Asker};

use super::flags::{
    compression_from, discard_from, retention_from, split_subjects, storage_from, CreateFlags,
};
use super::sources;

/// natscli's prepareConfig: flags first, then the remaining questions in its order.
pub fn prepare_config(
    name: Option<&str>,
    config_file: Option<&std::path::Path>,
    accept_defaults: bool,
    flags: &CreateFlags,
    require_size: bool,
) -> Result<StreamConfig, CliError> {
    if let Some(path) = config_file {
        let mut config: StreamConfig = load_config_file(path).context("invalid input")?;
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
            config.replicas = replicas;
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
        max_age: Nanos::from_std(max_age),
        max_msg_size: max_msg_size as i32,
        storage,
        discard,
        replicas,
        no_ack: flags.no_ack,
        duplicate_window: Nanos::from_std(duplicate_window),
        compression: match &flags.compression {
            Some(compression) => compression_from(compression)?,
            None => Compression::None,
        },
        allow_rollup,
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
        config.discard = DiscardPolicy::New;
    }
    if flags.cluster.is_some() || !flags.tags.is_empty() {
        config.placement = Some(Placement {
            cluster: flags.cluster.clone().unwrap_or_default(),
            tags: flags.tags.clone(),
            preferred: String::new(),
        });
    }
    if let Some(mirror) = &flags.mirror {
        config.mirror = Some(sources::mirror_from_flag(mirror, &asker)?);
    }
    for source in &flags.sources {
        config
            .sources
            .push(sources::source_from_flag(source, &asker)?);
    }
    apply_republish_and_transform(&mut config, flags)?;
    Ok(config)
}

pub(super) fn apply_republish_and_transform(
    config: &mut StreamConfig,
    flags: &CreateFlags,
) -> Result<(), CliError> {
    match (&flags.republish_source, &flags.republish_destination) {
        (Some(source), Some(destination)) => {
            config.republish = Some(RePublish {
                source: source.clone(),
                destination: destination.clone(),
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
                source: source.clone(),
                destination: destination.clone(),
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

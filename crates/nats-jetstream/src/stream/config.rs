//! Stream configuration rules: nats-server's `checkStreamCfg` (names, defaults, limits, subjects,
//! feature combinations) and `configUpdateCheck` (which updates are allowed). Pure functions over
//! `jetstream_api::StreamConfig`; the registry adds the checks that need other streams (subject
//! overlap) and account resources.

use crate::subject;
use jetstream_api::{
    errors, metadata, ApiError, DiscardPolicy, Nanos, RetentionPolicy, StreamConfig,
};

/// nats-server's `StreamDefaultDuplicatesWindow`.
pub(crate) const DEFAULT_DUPLICATE_WINDOW: Nanos = Nanos(120_000_000_000);
const MINIMUM_WINDOW: i64 = 100_000_000;

fn invalid(text: impl std::fmt::Display) -> ApiError {
    errors::STREAM_INVALID_CONFIG.with_err(text)
}

fn pedantic(text: impl std::fmt::Display) -> ApiError {
    errors::PEDANTIC.with_err(text)
}

/// nats-server's `isValidAssetName`: non-empty, no whitespace, none of `.`, `*`, `>`, path separators.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '.' | '*' | '>' | '/' | '\\'))
}

/// Defaults filled in and every standalone rule checked. `pedantic` refuses where the server
/// would otherwise adjust the config silently.
pub(crate) fn check_and_fill(
    config: &StreamConfig,
    pedantic_mode: bool,
) -> Result<StreamConfig, ApiError> {
    if !is_valid_name(&config.name) {
        return Err(invalid(
            "stream name is required and can not contain '.', '*', '>', '\\', '/'",
        ));
    }
    if config.name.len() > jetstream_api::MAX_NAME_LENGTH {
        return Err(invalid(format!(
            "stream name is too long, maximum allowed is {}",
            jetstream_api::MAX_NAME_LENGTH
        )));
    }
    if config.description.len() > jetstream_api::MAX_DESCRIPTION_LENGTH {
        return Err(invalid(format!(
            "stream description is too long, maximum allowed is {}",
            jetstream_api::MAX_DESCRIPTION_LENGTH
        )));
    }
    let metadata_length: usize = config.metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
    if metadata_length > jetstream_api::MAX_METADATA_LENGTH {
        return Err(invalid(format!(
            "stream metadata exceeds maximum size of {} bytes",
            jetstream_api::MAX_METADATA_LENGTH
        )));
    }
    let mut config = config.clone();
    if config.replicas == 0 {
        config.replicas = 1;
    }
    if config.replicas > 5 {
        return Err(invalid("maximum replicas is 5"));
    }
    if config.replicas < 0 {
        return Err(errors::REPLICAS_COUNT_CANNOT_BE_NEGATIVE.to_error());
    }
    let unlimited = |value: &mut i64, name: &str| -> Result<(), ApiError> {
        if *value == 0 || *value < -1 {
            if pedantic_mode && *value < -1 {
                return Err(pedantic(format!("{name} must be set to -1")));
            }
            *value = -1;
        }
        Ok(())
    };
    unlimited(&mut config.max_msgs, "max_msgs")?;
    unlimited(&mut config.max_msgs_per_subject, "max_msgs_per_subject")?;
    unlimited(&mut config.max_bytes, "max_bytes")?;
    let mut max_msg_size = config.max_msg_size as i64;
    unlimited(&mut max_msg_size, "max_msg_size")?;
    config.max_msg_size = max_msg_size as i32;
    unlimited(&mut config.max_consumers, "max_consumers")?;
    let max_age = config.max_age.0;
    if max_age < 0 {
        return Err(invalid("max age can not be negative"));
    }
    if max_age != 0 && max_age < MINIMUM_WINDOW {
        return Err(invalid("max age needs to be >= 100ms"));
    }
    if config.duplicate_window.0 == 0 && config.mirror.is_none() && config.sources.is_empty() {
        if max_age != 0 && max_age < DEFAULT_DUPLICATE_WINDOW.0 {
            if pedantic_mode {
                return Err(pedantic("duplicate window cannot be bigger than max age"));
            }
            config.duplicate_window = Nanos(max_age);
        } else {
            config.duplicate_window = DEFAULT_DUPLICATE_WINDOW;
        }
    }
    let window = config.duplicate_window.0;
    if window < 0 {
        return Err(invalid("duplicates window can not be negative"));
    }
    if max_age != 0 && window > max_age {
        return Err(invalid("duplicates window can not be larger then max age"));
    }
    if window > 0 && window < MINIMUM_WINDOW {
        return Err(invalid("duplicates window needs to be >= 100ms"));
    }
    if config.deny_purge && config.allow_rollup {
        return Err(invalid("roll-ups require the purge permission"));
    }
    if config.allow_msg_counter {
        if config.discard == DiscardPolicy::New {
            return Err(invalid("counter stream cannot use discard new"));
        }
        if config.allow_msg_ttl {
            return Err(invalid("counter stream cannot use message TTLs"));
        }
        if config.allow_msg_schedules {
            return Err(invalid("counter stream cannot use message schedules"));
        }
        if config.retention != RetentionPolicy::Limits {
            return Err(invalid("counter stream can only use limits retention"));
        }
    }
    if config.discard_new_per_subject {
        if config.discard != DiscardPolicy::New {
            return Err(invalid(
                "discard new per subject requires discard new policy to be set",
            ));
        }
        if config.max_msgs_per_subject <= 0 {
            return Err(invalid(
                "discard new per subject requires max msgs per subject > 0",
            ));
        }
    }
    if config.allow_msg_schedules {
        if config.discard == DiscardPolicy::New {
            return Err(invalid("message scheduling cannot use discard new"));
        }
        if !config.allow_rollup {
            if pedantic_mode {
                return Err(invalid(
                    "message scheduling cannot be set if roll-ups are disabled",
                ));
            }
            config.allow_rollup = true;
            config.deny_purge = false;
        }
    }
    let marker_ttl = config.subject_delete_marker_ttl.0;
    if marker_ttl > 0 {
        if marker_ttl < 1_000_000_000 {
            return Err(invalid(
                "subject delete marker TTL must be at least 1 second",
            ));
        }
        if !config.allow_msg_ttl {
            if pedantic_mode {
                return Err(invalid(
                    "subject delete marker cannot be set if message TTLs are disabled",
                ));
            }
            if config.allow_msg_counter {
                // nats-server turns TTLs on here after its counter checks, creates the stream,
                // and then refuses to recover it at its next start (`counter stream cannot use
                // message TTLs`): the stream is lost. Refused at create instead.
                return Err(invalid("counter stream cannot use message TTLs"));
            }
            config.allow_msg_ttl = true;
        }
        if !config.allow_rollup {
            if pedantic_mode {
                return Err(invalid(
                    "subject delete marker cannot be set if roll-ups are disabled",
                ));
            }
            config.allow_rollup = true;
            config.deny_purge = false;
        }
    } else if marker_ttl < 0 {
        return Err(invalid("subject delete marker TTL must not be negative"));
    }
    if config.persist_mode == jetstream_api::PersistMode::Async {
        if config.storage != jetstream_api::StorageType::File {
            return Err(invalid(
                "async persist mode is only supported on file storage",
            ));
        }
        if config.replicas > 1 {
            return Err(invalid(
                "async persist mode is not supported on replicated streams",
            ));
        }
        if config.allow_atomic_publish {
            return Err(invalid(
                "async persist mode is not supported with atomic batch publish",
            ));
        }
    }
    if let Some(mirror) = &config.mirror {
        if config.first_seq > 0 {
            return Err(errors::MIRROR_WITH_FIRST_SEQ.to_error());
        }
        if !config.subjects.is_empty() {
            return Err(errors::MIRROR_WITH_SUBJECTS.to_error());
        }
        if !config.sources.is_empty() {
            return Err(errors::MIRROR_WITH_SOURCES.to_error());
        }
        if config.allow_msg_counter {
            return Err(errors::MIRROR_WITH_COUNTERS.to_error());
        }
        if config.allow_atomic_publish {
            return Err(errors::MIRROR_WITH_ATOMIC_PUBLISH.to_error());
        }
        if config.allow_batch_publish {
            return Err(errors::MIRROR_WITH_BATCH_PUBLISH.to_error());
        }
        if config.allow_msg_schedules {
            return Err(errors::MIRROR_WITH_MSG_SCHEDULES.to_error());
        }
        if !is_valid_name(&mirror.name) && mirror.external.is_none() {
            return Err(errors::MIRROR_INVALID_STREAM_NAME.to_error());
        }
    }
    if !config.sources.is_empty() && config.allow_msg_schedules {
        return Err(errors::SOURCE_WITH_MSG_SCHEDULES.to_error());
    }
    let mut index_names = std::collections::HashSet::new();
    for source in &config.sources {
        check_source(source)?;
        if !index_names.insert(super::source_index_name(source)) {
            return Err(errors::SOURCE_DUPLICATE_DETECTED.to_error());
        }
    }
    let externals = config
        .mirror
        .iter()
        .chain(config.sources.iter())
        .filter_map(|source| source.external.as_ref());
    for external in externals {
        check_external(external)?;
    }
    check_subjects(&mut config)?;
    if let Some(republish) = &mut config.republish {
        if republish.source.is_empty() {
            if pedantic_mode {
                return Err(pedantic("republish source can not be empty"));
            }
            republish.source = ">".to_string();
        }
        if config
            .subjects
            .iter()
            .any(|stream_subject| subject::overlaps(&republish.destination, stream_subject))
        {
            return Err(invalid(
                "stream configuration for republish destination forms a cycle",
            ));
        }
        if !subject::is_valid_transform(&republish.source, &republish.destination) {
            return Err(invalid(format!(
                "stream configuration for republish with transform from '{}' to '{}' not valid",
                republish.source, republish.destination
            )));
        }
    }
    if let Some(transform) = &config.subject_transform {
        if !transform.source.is_empty() && !subject::is_valid_filter(&transform.source) {
            return Err(errors::STREAM_TRANSFORM_INVALID_SOURCE
                .with_err(format!("invalid subject {}", transform.source)));
        }
        if !subject::is_valid_transform(&transform.source, &transform.destination) {
            return Err(errors::STREAM_TRANSFORM_INVALID_DESTINATION
                .with_err("invalid mapping destination: invalid subject"));
        }
    }
    if config
        .placement
        .as_ref()
        .is_some_and(|placement| *placement == Default::default())
    {
        config.placement = None;
    }
    if config
        .placement
        .as_ref()
        .is_some_and(|placement| !placement.preferred.is_empty())
    {
        return Err(invalid("preferred server not permitted in placement"));
    }
    Ok(config)
}

/// nats-server's per-source checks (`checkStreamCfg`), in its order.
fn check_source(source: &jetstream_api::StreamSource) -> Result<(), ApiError> {
    if !is_valid_name(&source.name) {
        return Err(errors::SOURCE_INVALID_STREAM_NAME.to_error());
    }
    if !source.filter_subject.is_empty() && !source.subject_transforms.is_empty() {
        return Err(errors::SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED.to_error());
    }
    for transform in &source.subject_transforms {
        if !transform.source.is_empty() && !subject::is_valid_filter(&transform.source) {
            return Err(errors::SOURCE_INVALID_SUBJECT_FILTER
                .with_err(format!("invalid subject {}", transform.source)));
        }
        if !transform.destination.is_empty()
            && !subject::is_valid_transform(&transform.source, &transform.destination)
        {
            return Err(errors::SOURCE_INVALID_TRANSFORM_DESTINATION
                .with_err("invalid mapping destination: invalid subject"));
        }
    }
    for (outer, first) in source.subject_transforms.iter().enumerate() {
        for (inner, second) in source.subject_transforms.iter().enumerate() {
            let all = |filter: &str| {
                if filter.is_empty() {
                    ">".to_string()
                } else {
                    filter.to_string()
                }
            };
            if inner != outer && subject::is_subset(&all(&first.source), &all(&second.source)) {
                return Err(errors::SOURCE_OVERLAPPING_SUBJECT_FILTERS.to_error());
            }
        }
    }
    Ok(())
}

/// The prefixes of a mirror or source in another domain or account.
fn check_external(external: &jetstream_api::ExternalStream) -> Result<(), ApiError> {
    let publishable =
        |prefix: &str| subject::is_valid_filter(prefix) && !prefix.contains(['*', '>']);
    if !external.deliver_prefix.is_empty() && !publishable(&external.deliver_prefix) {
        return Err(errors::STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ
            .with(&[("prefix", &external.deliver_prefix)]));
    }
    if !external.api_prefix.is_empty() {
        if !publishable(&external.api_prefix) {
            return Err(invalid(format!(
                "stream external api prefix {:?} must be a valid subject without wildcards",
                external.api_prefix
            )));
        }
        if subject::overlaps(&external.api_prefix, "$JS.API") {
            return Err(errors::STREAM_EXTERNAL_API_OVERLAP
                .with(&[("prefix", &external.api_prefix), ("subject", &"$JS.API")]));
        }
    }
    Ok(())
}

fn check_subjects(config: &mut StreamConfig) -> Result<(), ApiError> {
    if config.subjects.is_empty() {
        if config.mirror.is_none() && config.sources.is_empty() {
            config.subjects.push(config.name.clone());
        }
        return Ok(());
    }
    if config.mirror.is_some() {
        return Err(errors::MIRROR_WITH_SUBJECTS.to_error());
    }
    // nats-server compares every pair; an index of the subjects finds the same first pair
    // without that (a config may list 100k subjects).
    let index_of_subjects =
        nats_subject::OverlapIndex::new(config.subjects.iter().map(String::as_str));
    let mut seen = std::collections::HashSet::with_capacity(config.subjects.len());
    for (index, stream_subject) in config.subjects.iter().enumerate() {
        if !subject::is_valid_filter(stream_subject) {
            return Err(invalid("invalid subject"));
        }
        if !seen.insert(stream_subject.as_str()) {
            return Err(invalid("duplicate subjects detected"));
        }
        if stream_subject == ">" {
            if !config.no_ack {
                return Err(invalid("capturing all subjects requires no-ack to be true"));
            }
            if config.replicas != 1 {
                return Err(invalid("capturing all subjects requires replicas of 1"));
            }
        }
        if !config.no_ack {
            for namespace in ["$JS.>", "$JSC.>", "$NRG.>"] {
                if subject::overlaps(stream_subject, namespace)
                    && !subject::is_subset(stream_subject, "$JS.EVENT.>")
                {
                    return Err(invalid(
                        "subjects that overlap with jetstream api require no-ack to be true",
                    ));
                }
            }
            if subject::overlaps(stream_subject, "$SYS.>")
                && !subject::is_subset(stream_subject, "$SYS.ACCOUNT.>")
            {
                return Err(invalid(
                    "subjects that overlap with system api require no-ack to be true",
                ));
            }
        }
        if let Some(other) = index_of_subjects.first_overlap_after(stream_subject, index) {
            let other = &config.subjects[other];
            return Err(invalid(format!(
                "subject {stream_subject:?} overlaps with {other:?}"
            )));
        }
    }
    Ok(())
}

/// nats-server's `configUpdateCheck`: the new config checked and filled, then compared with the
/// old one for changes a stream cannot take.
pub(crate) fn check_update(
    old: &StreamConfig,
    new: &StreamConfig,
    pedantic_mode: bool,
) -> Result<StreamConfig, ApiError> {
    let mut config = check_and_fill(new, pedantic_mode)?;
    if config.name != old.name {
        return Err(invalid("stream configuration name must match original"));
    }
    // Only a clustered stream has more than one replica; updating one keeps its count (the
    // clustered update refuses a change of count first).
    if config.replicas > 1 && old.replicas <= 1 {
        return Err(errors::STREAM_REPLICAS_NOT_SUPPORTED.to_error());
    }
    if config.storage != old.storage {
        return Err(invalid(
            "stream configuration update can not change storage type",
        ));
    }
    if config.retention != old.retention
        && (old.retention == RetentionPolicy::WorkQueue
            || config.retention == RetentionPolicy::WorkQueue)
    {
        return Err(invalid(
            "stream configuration update can not change retention policy to/from workqueue",
        ));
    }
    if !config.sealed && old.sealed {
        return Err(invalid(
            "stream configuration update can not unseal a sealed stream",
        ));
    }
    if !config.deny_delete && old.deny_delete {
        return Err(invalid(
            "stream configuration update can not cancel deny message deletes",
        ));
    }
    if !config.deny_purge && old.deny_purge {
        return Err(invalid(
            "stream configuration update can not cancel deny purge",
        ));
    }
    if config.mirror.is_some() && config.mirror != old.mirror {
        return Err(errors::STREAM_MIRROR_NOT_UPDATABLE.to_error());
    }
    if old.allow_msg_ttl && !config.allow_msg_ttl {
        return Err(invalid("message TTL status can not be disabled"));
    }
    if config.allow_msg_counter != old.allow_msg_counter {
        return Err(invalid(
            "stream configuration update can not change message counter setting",
        ));
    }
    if old.allow_msg_schedules && !config.allow_msg_schedules {
        return Err(invalid("message schedules can not be disabled"));
    }
    if old.persist_mode != config.persist_mode {
        return Err(invalid(
            "stream configuration update can not change persist mode",
        ));
    }
    if config.sealed {
        config.max_age = Nanos(0);
        config.discard = DiscardPolicy::New;
        config.deny_delete = true;
        config.deny_purge = true;
        config.allow_rollup = false;
    }
    Ok(config)
}

/// The metadata nats-server stores with the stream (`_nats.req.level`), dynamic keys removed.
pub(crate) fn with_static_metadata(mut config: StreamConfig) -> StreamConfig {
    metadata::set_static_stream_metadata(&mut config);
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> StreamConfig {
        StreamConfig {
            name: name.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_filled() {
        let config = check_and_fill(&named("ORDERS"), false).unwrap();
        assert_eq!(config.subjects, vec!["ORDERS".to_string()]);
        assert_eq!(config.max_msgs, -1);
        assert_eq!(config.max_bytes, -1);
        assert_eq!(config.max_msg_size, -1);
        assert_eq!(config.max_consumers, -1);
        assert_eq!(config.replicas, 1);
        assert_eq!(config.duplicate_window, DEFAULT_DUPLICATE_WINDOW);
    }

    #[test]
    fn duplicate_window_capped_by_max_age() {
        let mut config = named("S");
        config.max_age = Nanos(1_000_000_000);
        let filled = check_and_fill(&config, false).unwrap();
        assert_eq!(filled.duplicate_window, Nanos(1_000_000_000));
        config.duplicate_window = Nanos(2_000_000_000);
        let error = check_and_fill(&config, false).unwrap_err();
        assert_eq!(error.err_code, 10052);
    }

    /// Found by the api_request fuzz target: a counter stream with a subject delete marker TTL
    /// was accepted with TTLs turned on, then refused when checked again (what a restart does).
    #[test]
    fn a_counter_stream_with_delete_marker_ttl_is_refused_at_create() {
        let mut config = named("C");
        config.allow_msg_counter = true;
        config.subject_delete_marker_ttl = Nanos(5_000_000_000);
        let error = check_and_fill(&config, false).unwrap_err();
        assert_eq!(error.err_code, 10052);
        assert_eq!(error.description, "counter stream cannot use message TTLs");
        config.allow_msg_counter = false;
        let accepted = check_and_fill(&config, false).unwrap();
        assert!(check_and_fill(&accepted, false).is_ok());
    }

    #[test]
    fn bad_names_and_subjects() {
        assert!(check_and_fill(&named("a.b"), false).is_err());
        assert!(check_and_fill(&named(""), false).is_err());
        let mut config = named("S");
        config.subjects = vec!["a.>".into(), "a.b".into()];
        let error = check_and_fill(&config, false).unwrap_err();
        assert_eq!(error.description, "subject \"a.>\" overlaps with \"a.b\"");
        config.subjects = vec!["$JS.API.>".into()];
        assert!(check_and_fill(&config, false).is_err());
    }

    #[test]
    fn update_rules() {
        let old = check_and_fill(&named("S"), false).unwrap();
        let mut new = old.clone();
        new.storage = jetstream_api::StorageType::Memory;
        assert!(check_update(&old, &new, false).is_err());
        let mut new = old.clone();
        new.max_msgs = 10;
        assert_eq!(check_update(&old, &new, false).unwrap().max_msgs, 10);
        let mut new = old.clone();
        new.replicas = 3;
        assert_eq!(check_update(&old, &new, false).unwrap_err().err_code, 10074);
    }
}

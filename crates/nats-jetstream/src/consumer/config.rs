//! Consumer config validation as nats-server's `checkConsumerCfg` does it (its order of checks
//! and its errors), and the rules for which fields an update may change.

use jetstream_api::consumer_defaults::{apply_consumer_defaults, ConsumerDefaultLimits};
use jetstream_api::{
    errors, AckPolicy, ApiError, ConsumerConfig, DeliverPolicy, PriorityPolicy, ReplayPolicy,
    RetentionPolicy, StreamConfig,
};

/// nats-server's `JSMaxDescriptionLen`, `JSMaxMetadataLen` and `JSMaxNameLen`.
const MAX_DESCRIPTION_LENGTH: usize = 4 * 1024;
const MAX_METADATA_LENGTH: usize = 128 * 1024;
const MAX_NAME_LENGTH: usize = 255;

fn has_wildcard(subject: &str) -> bool {
    subject.split('.').any(|token| token == "*" || token == ">")
}

/// nats-server's `isValidAssetName` (plus NUL, which no file name may hold).
fn invalid_name(name: &str) -> bool {
    name.is_empty()
        || name.chars().any(|c| {
            matches!(
                c,
                '.' | '*' | '>' | '\\' | '/' | ' ' | '\t' | '\r' | '\n' | '\x0c' | '\0'
            )
        })
}

/// Defaults filled and the config checked against the stream and the account's
/// `max_ack_pending` (0 or negative: none); `Ok` is the config to store.
pub(crate) fn check_config(
    requested: &ConsumerConfig,
    stream: &StreamConfig,
    account_max_ack_pending: i64,
    pedantic: bool,
) -> Result<ConsumerConfig, ApiError> {
    let mut config = requested.clone();
    let limits = ConsumerDefaultLimits {
        account_max_ack_pending: account_max_ack_pending.max(0),
        ..ConsumerDefaultLimits::default()
    };
    apply_consumer_defaults(&mut config, stream, &limits, pedantic)?;
    if !config.name.is_empty() && invalid_name(&config.name) {
        return Err(errors::STREAM_INVALID_CONFIG
            .with_err("consumer name can not contain '.', '*', '>', '\\', '/'"));
    }
    if !config.durable_name.is_empty() && invalid_name(&config.durable_name) {
        return Err(errors::STREAM_INVALID_CONFIG
            .with_err("consumer durable name can not contain '.', '*', '>', '\\', '/'"));
    }
    if config.replicas > 1 && config.replicas > stream.replicas.max(1) {
        return Err(errors::CONSUMER_REPLICAS_EXCEEDS_STREAM.to_error());
    }
    if config.replicas < 0 {
        return Err(errors::REPLICAS_COUNT_CANNOT_BE_NEGATIVE.to_error());
    }
    if config.description.len() > MAX_DESCRIPTION_LENGTH {
        return Err(errors::CONSUMER_DESCRIPTION_TOO_LONG.with(&[("max", &MAX_DESCRIPTION_LENGTH)]));
    }
    let metadata_length: usize = config
        .metadata
        .iter()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if metadata_length > MAX_METADATA_LENGTH {
        return Err(errors::CONSUMER_METADATA_LENGTH.with(&[("limit", &MAX_METADATA_LENGTH)]));
    }
    let name = if config.name.is_empty() {
        &config.durable_name
    } else {
        &config.name
    };
    if name.len() > MAX_NAME_LENGTH {
        return Err(errors::CONSUMER_NAME_TOO_LONG.with(&[("max", &MAX_NAME_LENGTH)]));
    }
    if !config.durable_name.is_empty()
        && !config.name.is_empty()
        && config.name != config.durable_name
    {
        return Err(errors::CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH.to_error());
    }
    if config.backoff.iter().any(|value| value.0 < 0) {
        return Err(errors::CONSUMER_BACK_OFF_NEGATIVE.to_error());
    }
    if config.ack_wait.0 < 0 {
        return Err(errors::CONSUMER_ACK_WAIT_NEGATIVE.to_error());
    }
    if !config.backoff.is_empty()
        && config.max_deliver != -1
        && config.max_deliver <= config.backoff.len() as i64
    {
        return Err(errors::CONSUMER_MAX_DELIVER_BACKOFF.to_error());
    }
    check_policies(&config)?;
    check_delivery_mode(&config, stream)?;
    check_filters(&config)?;
    if !config.sample_frequency.is_empty() {
        let text = config.sample_frequency.trim_end_matches('%');
        match text.parse::<i64>() {
            Ok(value) if (0..=100).contains(&value) => {}
            _ => {
                return Err(errors::CONSUMER_INVALID_SAMPLING
                    .with_err(format!("failed to parse consumer sampling configuration: strconv.Atoi: parsing {:?}: invalid syntax", text)))
            }
        }
    }
    let stream_max_ack_pending = stream.consumer_limits.max_ack_pending;
    if stream_max_ack_pending > 0 && config.max_ack_pending > stream_max_ack_pending {
        return Err(
            errors::CONSUMER_MAX_PENDING_ACK_EXCESS.with(&[("limit", &stream_max_ack_pending)])
        );
    }
    if account_max_ack_pending > 0 && config.max_ack_pending > account_max_ack_pending {
        return Err(
            errors::CONSUMER_MAX_PENDING_ACK_EXCESS.with(&[("limit", &account_max_ack_pending)])
        );
    }
    let stream_inactive = stream.consumer_limits.inactive_threshold;
    if stream_inactive.0 > 0 && config.inactive_threshold > stream_inactive {
        return Err(errors::CONSUMER_INACTIVE_THRESHOLD_EXCESS
            .with(&[("limit", &stream_inactive.to_go_string())]));
    }
    check_priority_groups(&config)?;
    if stream.retention == RetentionPolicy::WorkQueue {
        if config.ack_policy != AckPolicy::Explicit {
            return Err(errors::CONSUMER_WQ_REQUIRES_EXPLICIT_ACK.to_error());
        }
        if config.deliver_policy != DeliverPolicy::All {
            return Err(errors::CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL.to_error());
        }
    }
    Ok(config)
}

fn check_policies(config: &ConsumerConfig) -> Result<(), ApiError> {
    let bad = |text: &str| Err(errors::CONSUMER_INVALID_POLICY.with_err(text));
    match config.deliver_policy {
        DeliverPolicy::All | DeliverPolicy::Last | DeliverPolicy::New => {
            if config.opt_start_seq > 0 {
                return bad(&format!(
                    "consumer option start sequence is not allowed for deliver policy \"{}\"",
                    deliver_policy_title(config.deliver_policy)
                ));
            }
            if config.opt_start_time.is_some() {
                return bad(&format!(
                    "consumer option start time is not allowed for deliver policy \"{}\"",
                    deliver_policy_title(config.deliver_policy)
                ));
            }
        }
        DeliverPolicy::LastPerSubject => {
            if config.opt_start_seq > 0 || config.opt_start_time.is_some() {
                return bad("consumer option start sequence or time is not allowed for deliver policy \"last_per_subject\"");
            }
            if config.filters().is_empty() {
                return bad("consumer delivery policy is deliver last per subject, but optional filter subject is not set");
            }
        }
        DeliverPolicy::ByStartSequence => {
            if config.opt_start_seq == 0 {
                return bad("consumer delivery policy is deliver by start sequence, but optional start sequence is not set");
            }
            if config.opt_start_time.is_some() {
                return bad("consumer delivery policy is deliver by start sequence, but optional start time is also set");
            }
        }
        DeliverPolicy::ByStartTime => {
            if config.opt_start_time.is_none() {
                return bad("consumer delivery policy is deliver by start time, but optional start time is not set");
            }
            if config.opt_start_seq > 0 {
                return bad("consumer delivery policy is deliver by start time, but optional start sequence is also set");
            }
        }
    }
    if config.replay_policy == ReplayPolicy::Original && config.deliver_subject.is_empty() {
        // Pull consumers may replay at original speed too; nothing to refuse here.
    }
    Ok(())
}

fn deliver_policy_title(policy: DeliverPolicy) -> &'static str {
    match policy {
        DeliverPolicy::All => "all",
        DeliverPolicy::Last => "last",
        DeliverPolicy::New => "new",
        DeliverPolicy::ByStartSequence => "by_start_sequence",
        DeliverPolicy::ByStartTime => "by_start_time",
        DeliverPolicy::LastPerSubject => "last_per_subject",
    }
}

fn check_delivery_mode(config: &ConsumerConfig, stream: &StreamConfig) -> Result<(), ApiError> {
    if config.deliver_subject.is_empty() {
        if config.flow_control {
            return Err(errors::CONSUMER_FC_REQUIRES_PUSH.to_error());
        }
        if config.idle_heartbeat.0 > 0 {
            return Err(errors::CONSUMER_HB_REQUIRES_PUSH.to_error());
        }
        if config.rate_limit > 0 {
            return Err(errors::CONSUMER_PULL_WITH_RATE_LIMIT.to_error());
        }
        if config.max_waiting < 0 {
            return Err(errors::CONSUMER_MAX_WAITING_NEGATIVE.to_error());
        }
        if config.max_request_batch < 0 {
            return Err(errors::CONSUMER_MAX_REQUEST_BATCH_NEGATIVE.to_error());
        }
        if config.max_request_expires.0 != 0 && config.max_request_expires.0 < 1_000_000 {
            return Err(errors::CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL.to_error());
        }
        if stream.retention == RetentionPolicy::WorkQueue && config.ack_policy == AckPolicy::None {
            return Err(errors::CONSUMER_PULL_REQUIRES_ACK.to_error());
        }
    } else {
        if config.max_waiting > 0 {
            return Err(errors::CONSUMER_PUSH_MAX_WAITING.to_error());
        }
        if config.max_request_batch > 0 {
            return Err(errors::CONSUMER_MAX_REQUEST_BATCH_NEGATIVE.to_error());
        }
        if has_wildcard(&config.deliver_subject) {
            return Err(errors::CONSUMER_DELIVER_TO_WILDCARDS.to_error());
        }
        if !crate::subject::is_valid_filter(&config.deliver_subject) {
            return Err(errors::CONSUMER_INVALID_DELIVER_SUBJECT.to_error());
        }
        if stream
            .subjects
            .iter()
            .any(|subject| crate::subject::matches(subject, &config.deliver_subject))
        {
            return Err(errors::CONSUMER_DELIVER_CYCLE.to_error());
        }
        // Push consumers only, as nats-server's checkConsumerCfg: a pull consumer with ack none
        // keeps an explicit max_ack_pending (which then limits nothing).
        if config.ack_policy == AckPolicy::None && config.max_ack_pending > 0 {
            return Err(errors::CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED.to_error());
        }
        if config.idle_heartbeat.0 > 0 && config.idle_heartbeat.0 < 100_000_000 {
            return Err(errors::CONSUMER_SMALL_HEARTBEAT.to_error());
        }
        if config.flow_control && config.idle_heartbeat.0 == 0 {
            return Err(errors::CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS.to_error());
        }
    }
    Ok(())
}

/// Priority groups (ADR-42): pull consumers only, at least one valid group name when a policy
/// is set, neither groups nor a pinned TTL without one.
fn check_priority_groups(config: &ConsumerConfig) -> Result<(), ApiError> {
    if config.priority_policy != PriorityPolicy::None {
        if !config.deliver_subject.is_empty() {
            return Err(errors::CONSUMER_PUSH_WITH_PRIORITY_GROUP.to_error());
        }
        if config.priority_groups.is_empty() {
            return Err(errors::CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP.to_error());
        }
        for group in &config.priority_groups {
            if group.is_empty() {
                return Err(errors::CONSUMER_EMPTY_GROUP_NAME.to_error());
            }
            if !jetstream_api::is_valid_priority_group_name(group) {
                return Err(errors::CONSUMER_INVALID_GROUP_NAME.to_error());
            }
        }
    } else {
        if !config.priority_groups.is_empty() {
            return Err(errors::CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE.to_error());
        }
        if config.pinned_ttl.0 > 0 {
            return Err(errors::CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE.to_error());
        }
    }
    Ok(())
}

fn check_filters(config: &ConsumerConfig) -> Result<(), ApiError> {
    if !config.filter_subject.is_empty() && !config.filter_subjects.is_empty() {
        return Err(errors::CONSUMER_DUPLICATE_FILTER_SUBJECTS.to_error());
    }
    let filters = config.filters();
    for (index, filter) in filters.iter().enumerate() {
        if filter.is_empty() && !config.filter_subjects.is_empty() {
            return Err(errors::CONSUMER_EMPTY_FILTER.to_error());
        }
        if !crate::subject::is_valid_filter(filter) {
            return Err(errors::CONSUMER_CREATE.with_err(
                "consumer filter subject is not a valid subset of the interest subjects",
            ));
        }
        for other in &filters[index + 1..] {
            if filter == other {
                return Err(errors::CONSUMER_DUPLICATE_FILTER_SUBJECTS.to_error());
            }
            if crate::subject::overlaps(filter, other) {
                return Err(errors::CONSUMER_OVERLAPPING_SUBJECT_FILTERS.to_error());
            }
        }
    }
    Ok(())
}

/// What an update may not change, with nats-server's texts (`updateConfig`).
pub(crate) fn check_update(old: &ConsumerConfig, new: &ConsumerConfig) -> Result<(), ApiError> {
    let refuse = |text: &str| Err(errors::CONSUMER_CREATE.with_err(text));
    if old.deliver_policy != new.deliver_policy {
        return refuse("deliver policy can not be updated");
    }
    if old.opt_start_seq != new.opt_start_seq {
        return refuse("start sequence can not be updated");
    }
    if old.opt_start_time != new.opt_start_time {
        return refuse("start time can not be updated");
    }
    if old.ack_policy != new.ack_policy {
        return refuse("ack policy can not be updated");
    }
    if old.replay_policy != new.replay_policy {
        return refuse("replay policy can not be updated");
    }
    if old.deliver_subject.is_empty() != new.deliver_subject.is_empty() {
        return if old.deliver_subject.is_empty() {
            refuse("can not update pull consumer to push based")
        } else {
            refuse("can not update push consumer to pull based")
        };
    }
    if old.max_waiting != new.max_waiting {
        return refuse("max waiting can not be updated");
    }
    if old.memory_storage != new.memory_storage {
        return refuse("memory storage can not be updated");
    }
    if old.flow_control != new.flow_control {
        return refuse("flow control can not be updated");
    }
    if old.idle_heartbeat != new.idle_heartbeat {
        return refuse("heart beats can not be updated");
    }
    Ok(())
}

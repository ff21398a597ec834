//! Building a ConsumerConfig for `consumer add` and `consumer edit`: natscli's flags, then
//! its questions in its order; `--defaults` (or no terminal) takes every default.

use std::time::Duration;

use jetstream_api::{AckPolicy, ConsumerConfig, DeliverPolicy, Nanos, ReplayPolicy, Timestamp};

use crate::api::jsm_json::CONSUMER_CONFIG;
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::parse_duration;
use crate::output::is_interactive;
use crate::prompt::{self, Asker};
use crate::stream::config::{config_diff, confirm_differences};
use crate::stream::flags::split_subjects;
use crate::stream::select_stream;

use super::show::print_info;
use super::{load_selected, AddArgs, ConsumerFlags, EditArgs};

fn nanos(duration: Duration) -> Nanos {
    Nanos::from_std(duration)
}

/// natscli's start policies: all, new/next, last, subject/last_per_subject, a sequence, or
/// a duration ago.
fn apply_start_policy(config: &mut ConsumerConfig, policy: &str) -> Result<(), CliError> {
    match policy {
        "" => {}
        "all" => config.deliver_policy = DeliverPolicy::All,
        "last" => config.deliver_policy = DeliverPolicy::Last,
        "new" | "next" => config.deliver_policy = DeliverPolicy::New,
        "subject" | "last_per_subject" => config.deliver_policy = DeliverPolicy::LastPerSubject,
        text if text.chars().all(|c| c.is_ascii_digit()) => {
            config.deliver_policy = DeliverPolicy::ByStartSequence;
            config.opt_start_seq = text.parse().unwrap_or(0);
        }
        text => {
            let ago = parse_duration(text).context("could not parse starting delta")?;
            let start = Timestamp::now()
                .unix_nanos()
                .saturating_sub(nanos(ago).as_nanos());
            config.deliver_policy = DeliverPolicy::ByStartTime;
            config.opt_start_time = Some(Timestamp::from_unix_nanos(start));
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
        ack_policy: AckPolicy::Explicit,
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
    config.ack_policy = AckPolicy::from_name(&ack)
        .ok_or_else(|| CliError::message(format!("invalid acknowledgment policy {ack:?}")))?;
    let replay = match &flags.replay {
        Some(replay) => replay.clone(),
        None => asker.select("Replay policy", &["instant", "original"], "instant")?,
    };
    config.replay_policy = ReplayPolicy::from_name(&replay)
        .ok_or_else(|| CliError::message(format!("invalid replay policy {replay:?}")))?;
    if let Some(wait) = &flags.wait {
        let wait = parse_duration(wait)?;
        if !wait.is_zero() {
            config.ack_wait = nanos(wait);
        }
    }
    let mut filters = split_subjects(&flags.filter);
    if filters.is_empty() && !asker.accept_defaults {
        let answer = prompt::input("Filter Stream by subjects (blank for all)", "")?;
        filters = split_subjects(&[answer]);
    }
    match filters.len() {
        0 => {}
        1 => config.filter_subject = filters[0].clone(),
        _ => config.filter_subjects = filters,
    }
    if config.filter_subject.is_empty()
        && config.filter_subjects.is_empty()
        && config.deliver_policy == DeliverPolicy::LastPerSubject
    {
        config.filter_subject = ">".into();
    }
    if config.ack_policy != AckPolicy::None {
        config.max_deliver = match flags.max_deliver {
            Some(value) => value,
            None => asker.integer("Maximum Allowed Deliveries", "-1")?,
        };
        let pending: i64 = match flags.max_pending {
            Some(value) => value,
            None => asker.integer("Maximum Acknowledgments Pending", "0")?,
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
    if config.ack_policy != AckPolicy::None && !asker.accept_defaults {
        // natscli offers a retry backoff here; we only support declining it.
        let _ = prompt::confirm("Add a Retry Backoff Policy", false)?;
    }
    if !push {
        config.max_waiting = flags.max_waiting.unwrap_or(0);
    }
    if let Some(batch) = flags.max_pull_batch {
        config.max_request_batch = batch;
    }
    if let Some(threshold) = &flags.inactive_threshold {
        config.inactive_threshold = nanos(parse_duration(threshold)?);
    }
    config.replicas = flags.replicas.unwrap_or(0);
    config.memory_storage = flags.memory;
    Ok(config)
}

pub(super) async fn add_consumer(
    js: &JetStream,
    args: &AddArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let config = match &args.config {
        Some(path) => {
            let mut config: ConsumerConfig = crate::api::load_config_file(path)?;
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

pub(super) async fn edit_consumer(
    js: &JetStream,
    args: &EditArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let (stream, name, info) = load_selected(
        js,
        args.stream.as_deref(),
        args.consumer.as_deref(),
        show_all,
    )
    .await?;
    let current = info.config.clone().unwrap_or_default();
    let mut config = current.clone();
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
        config.max_request_batch = value;
    }
    if !flags.filter.is_empty() {
        let filters = split_subjects(&flags.filter);
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
    let diff = config_diff(&current, &config, CONSUMER_CONFIG)?;
    let question = format!("Really edit Consumer {stream} > {name}");
    if !confirm_differences(&diff, args.dry_run, args.force, &question)? {
        return Ok(());
    }
    let updated = js
        .consumer_create(&stream, &config)
        .await
        .context(&format!("could not edit Consumer {name}"))?;
    print_info(&updated, args.json, false)
}

//! Building a ConsumerConfig for `consumer add` and `consumer edit`: natscli's flags, then
//! its questions in its order; `--defaults` (or no terminal) takes every default.

use std::time::Duration;

use crate::api::types::ConsumerConfig;
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::parse_duration;
use crate::output::is_interactive;
use crate::prompt;
use crate::stream::select_stream;

use super::show::print_info;
use super::{select_consumer, AddArgs, ConsumerFlags, EditArgs};

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

pub(super) async fn edit_consumer(
    js: &JetStream,
    args: &EditArgs,
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
    let diff = crate::stream::config::config_diff(&info.config, &config)?;
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

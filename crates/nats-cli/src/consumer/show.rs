//! Rendering consumers: natscli's `consumer info`/`state` columns, `consumer ls` and
//! `consumer report` tables.

use std::time::Duration;

use jetstream_api::{AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy};

use crate::api::jsm_json::{to_pretty, CONSUMER_INFO};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::columns::Columns;
use crate::output::format::{
    ack_policy_title, comma, comma_u64, go_duration, humanize_duration, humanize_nanos, ibytes,
    local_time_text, replay_policy_title, since,
};
use crate::output::table::Table;
use crate::stream::select_stream;

use super::{load_selected, InfoArgs, LsArgs, ReportArgs};

pub(super) async fn show(
    js: &JetStream,
    args: &InfoArgs,
    state_only: bool,
    show_all: bool,
) -> Result<(), CliError> {
    let (_, _, info) = load_selected(
        js,
        args.stream.as_deref(),
        args.consumer.as_deref(),
        show_all,
    )
    .await?;
    print_info(&info, args.json, state_only)
}

pub(super) fn print_info(
    info: &ConsumerInfo,
    json: bool,
    state_only: bool,
) -> Result<(), CliError> {
    if json {
        println!("{}", to_pretty(info, CONSUMER_INFO)?);
        return Ok(());
    }
    print!("{}", render_info(info, state_only));
    Ok(())
}

fn deliver_policy_text(config: &ConsumerConfig) -> String {
    match config.deliver_policy {
        DeliverPolicy::All => "All".to_string(),
        DeliverPolicy::Last => "Last".to_string(),
        DeliverPolicy::New => "New".to_string(),
        DeliverPolicy::LastPerSubject => "Last Per Subject".to_string(),
        DeliverPolicy::ByStartTime => format!(
            "Since {}",
            config
                .opt_start_time
                .map(|time| time.to_rfc3339())
                .unwrap_or_default()
        ),
        DeliverPolicy::ByStartSequence => format!("From Sequence {}", config.opt_start_seq),
    }
}

/// natscli's consumer info layout.
pub fn render_info(info: &ConsumerInfo, state_only: bool) -> String {
    let unset = ConsumerConfig::default();
    let config = info.config.as_ref().unwrap_or(&unset);
    let created = local_time_text(&info.created);
    let mut columns = if state_only {
        Columns::new(format!(
            "State for Consumer {} > {} created {created}",
            info.stream_name, info.name
        ))
    } else {
        Columns::new(format!(
            "Information for Consumer {} > {} created {created}",
            info.stream_name, info.name
        ))
    };
    let push = !config.deliver_subject.is_empty();
    if !state_only {
        columns.section("Configuration");
        columns.row_if_not_empty("Name", &config.name);
        columns.row_if(
            "Durable Name",
            &config.durable_name,
            !config.durable_name.is_empty() && config.durable_name != config.name,
        );
        columns.row_if_not_empty("Description", &config.description);
        if push {
            columns.row("Delivery Subject", &config.deliver_subject);
        } else {
            columns.row("Pull Mode", true);
        }
        if !config.filter_subject.is_empty() {
            columns.row("Filter Subject", &config.filter_subject);
        } else if !config.filter_subjects.is_empty() {
            columns.row("Filter Subjects", config.filter_subjects.join(", "));
        }
        columns.row("Deliver Policy", deliver_policy_text(config));
        columns.row_if(
            "Deliver Queue Group",
            &config.deliver_group,
            !config.deliver_group.is_empty() && push,
        );
        columns.row("Ack Policy", ack_policy_title(config.ack_policy));
        columns.row_if(
            "Ack Wait",
            humanize_nanos(config.ack_wait),
            config.ack_policy != AckPolicy::None,
        );
        columns.row("Replay Policy", replay_policy_title(config.replay_policy));
        columns.row_if(
            "Maximum Deliveries",
            comma(config.max_deliver),
            config.max_deliver != -1,
        );
        columns.row_if_not_empty("Sampling Rate", &config.sample_frequency);
        columns.row_if(
            "Rate Limit",
            format!("{} / second", ibytes(config.rate_limit / 8)),
            config.rate_limit > 0,
        );
        columns.row_if(
            "Max Ack Pending",
            comma(config.max_ack_pending),
            config.max_ack_pending > 0,
        );
        columns.row_if(
            "Max Waiting Pulls",
            comma(config.max_waiting),
            config.max_waiting > 0,
        );
        columns.row_if(
            "Idle Heartbeat",
            humanize_nanos(config.idle_heartbeat),
            config.idle_heartbeat.as_nanos() > 0,
        );
        columns.row_if("Flow Control", config.flow_control, push);
        columns.row_if("Headers Only", true, config.headers_only);
        columns.row_if(
            "Inactive Threshold",
            humanize_nanos(config.inactive_threshold),
            config.inactive_threshold.as_nanos() > 0 && !push,
        );
        columns.row_if(
            "Max Pull Expire",
            humanize_nanos(config.max_request_expires),
            config.max_request_expires.as_nanos() > 0,
        );
        columns.row_if(
            "Max Pull Batch",
            comma(config.max_request_batch),
            config.max_request_batch > 0,
        );
        columns.row_if(
            "Max Pull MaxBytes",
            comma(config.max_request_max_bytes),
            config.max_request_max_bytes > 0,
        );
        if !config.backoff.is_empty() {
            let steps: Vec<String> = config
                .backoff
                .iter()
                .map(|step| go_duration(step.to_std().unwrap_or(Duration::ZERO)))
                .collect();
            columns.row("Backoff", steps.join(", "));
        }
        columns.row_if("Replicas", comma(config.replicas), config.replicas > 0);
        columns.row_if("Memory Storage", true, config.memory_storage);
        columns.user_metadata(&config.metadata);
    }
    if let Some(cluster) = info.cluster.as_ref().filter(|c| !c.name.is_empty()) {
        columns.section("Cluster Information");
        columns.row("Name", &cluster.name);
        columns.row_if_not_empty("Raft Group", &cluster.raft_group);
        columns.row("Leader", &cluster.leader);
        for replica in &cluster.replicas {
            let seen = if replica.active.as_nanos() == 0 || replica.active.as_nanos() == i64::MAX {
                "not seen".to_string()
            } else {
                format!("seen {} ago", humanize_nanos(replica.active))
            };
            let state = if replica.current {
                "current"
            } else {
                "outdated"
            };
            columns.row("Replica", format!("{}, {state}, {seen}", replica.name));
        }
    }
    columns.section("State");
    columns.api_levels(&config.metadata);
    let sequences = |label: &str, seq: &jetstream_api::SequenceInfo| match &seq.last_active {
        Some(last) => format!(
            "Consumer sequence: {} Stream sequence: {} {label}: {} ago",
            comma_u64(seq.consumer_sequence),
            comma_u64(seq.stream_sequence),
            humanize_duration(since(last))
        ),
        None => format!(
            "Consumer sequence: {} Stream sequence: {}",
            comma_u64(seq.consumer_sequence),
            comma_u64(seq.stream_sequence)
        ),
    };
    columns.row(
        "Last Delivered Message",
        sequences("Last delivery", &info.delivered),
    );
    if config.ack_policy != AckPolicy::None {
        columns.row(
            "Acknowledgment Floor",
            sequences("Last Ack", &info.ack_floor),
        );
        if config.max_ack_pending > 0 {
            columns.row(
                "Outstanding Acks",
                format!(
                    "{} out of maximum {}",
                    comma(info.num_ack_pending),
                    comma(config.max_ack_pending)
                ),
            );
        } else {
            columns.row("Outstanding Acks", comma(info.num_ack_pending));
        }
        columns.row("Redelivered Messages", comma(info.num_redelivered));
    }
    columns.row("Unprocessed Messages", comma_u64(info.num_pending));
    if !push {
        if config.max_waiting > 0 {
            columns.row(
                "Waiting Pulls",
                format!(
                    "{} of maximum {}",
                    comma(info.num_waiting),
                    comma(config.max_waiting)
                ),
            );
        } else {
            columns.row(
                "Waiting Pulls",
                format!("{} of unlimited", comma(info.num_waiting)),
            );
        }
    } else if info.push_bound {
        if config.deliver_group.is_empty() {
            columns.row("Active Interest", "Active");
        } else {
            columns.row(
                "Active Interest",
                format!("Active using Queue Group {}", config.deliver_group),
            );
        }
    } else {
        columns.row("Active Interest", "No interest");
    }
    columns.render()
}

pub(super) async fn list(js: &JetStream, args: &LsArgs, show_all: bool) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let names = js
        .consumer_names(&stream)
        .await
        .context("could not load Consumers")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&names)?);
        return Ok(());
    }
    if args.names {
        for name in &names {
            println!("{name}");
        }
        return Ok(());
    }
    if names.is_empty() {
        println!("No Consumers defined");
        return Ok(());
    }
    let consumers = js.consumer_list(&stream).await?;
    let mut table = Table::new("Consumers");
    table.headers([
        "Name",
        "Description",
        "Created",
        "Ack Pending",
        "Unprocessed",
        "Last Delivery",
    ]);
    table.align_right(3);
    table.align_right(4);
    for consumer in &consumers {
        let last = match &consumer.delivered.last_active {
            Some(last) => humanize_duration(since(last)),
            None => "never".to_string(),
        };
        table.row([
            consumer.name.clone(),
            consumer
                .config
                .as_ref()
                .map(|config| config.description.clone())
                .unwrap_or_default(),
            local_time_text(&consumer.created),
            consumer.num_ack_pending.to_string(),
            consumer.num_pending.to_string(),
            last,
        ]);
    }
    println!("{}\n", table.render());
    Ok(())
}

/// The metadata in a JetStream delivery's reply subject (`$JS.ACK...`).
pub(super) async fn report_consumers(
    js: &JetStream,
    args: &ReportArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let stream = select_stream(js, args.stream.as_deref(), show_all)
        .await
        .context("could not select Stream")?;
    let info = js.stream_info(&stream).await?;
    let consumers = js.consumer_list(&stream).await?;
    let mut table = Table::new(format!(
        "Consumer report for {stream} with {} consumers",
        comma(info.state.consumer_count)
    ));
    table.headers([
        "Consumer",
        "Mode",
        "Ack Policy",
        "Ack Wait",
        "Ack Pending",
        "Redelivered",
        "Unprocessed",
        "Ack Floor",
        "API Level",
        "Cluster",
    ]);
    let unset = ConsumerConfig::default();
    for consumer in &consumers {
        let config = consumer.config.as_ref().unwrap_or(&unset);
        let mode = if config.deliver_subject.is_empty() {
            "Pull"
        } else {
            "Push"
        };
        let api_level = config
            .metadata
            .get("_nats.req.level")
            .cloned()
            .unwrap_or_else(|| "0".to_string());
        let cluster = consumer
            .cluster
            .as_ref()
            .map(|c| {
                let mut peers = Vec::new();
                if !c.leader.is_empty() {
                    peers.push(format!("{}*", c.leader));
                }
                peers.extend(c.replicas.iter().map(|r| r.name.clone()));
                peers.sort();
                peers.join(", ")
            })
            .unwrap_or_default();
        let unprocessed = if args.raw {
            consumer.num_pending.to_string()
        } else if consumer.num_pending > 0 {
            let percent = if info.state.messages > 0 {
                ((consumer.num_pending as f64 / info.state.messages as f64) * 100.0)
                    .floor()
                    .min(100.0)
            } else {
                100.0
            };
            format!("{} / {percent:.0}%", comma_u64(consumer.num_pending))
        } else {
            "0".to_string()
        };
        let (ack_wait, ack_pending, redelivered, floor) = if args.raw {
            (
                config.ack_wait.as_nanos().to_string(),
                consumer.num_ack_pending.to_string(),
                consumer.num_redelivered.to_string(),
                consumer.ack_floor.stream_sequence.to_string(),
            )
        } else {
            (
                humanize_nanos(config.ack_wait),
                comma(consumer.num_ack_pending),
                comma(consumer.num_redelivered),
                comma_u64(consumer.ack_floor.stream_sequence),
            )
        };
        table.row([
            consumer.name.clone(),
            mode.to_string(),
            ack_policy_title(config.ack_policy).to_string(),
            ack_wait,
            ack_pending,
            redelivered,
            unprocessed,
            floor,
            api_level,
            cluster,
        ]);
    }
    println!("{}\n", table.render());
    Ok(())
}

//! `stream info` and `stream state`: natscli's columns layout of a stream's configuration,
//! cluster, mirror and sources, and state (`--json` prints jsm.go's JSON instead).

use clap::Args;

use jetstream_api::{ClusterInfo, Compression, StreamConfig, StreamInfo};

use crate::api::jsm_json::{to_pretty, STREAM_INFO};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::columns::Columns;
use crate::output::format::{
    age_limit, comma, comma_u64, discard_title, humanize_duration, humanize_nanos, ibytes,
    ibytes_i64, local_time_text, parse_time, since,
};

use super::select_stream;
use super::sources::{render_source, render_source_info};

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Stream to retrieve information for
    pub stream: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Shows only the stream state
    #[arg(long)]
    pub state: bool,
    /// Do not select streams from a list
    #[arg(long)]
    pub no_select: bool,
}

pub async fn info(
    js: &JetStream,
    args: &InfoArgs,
    state_only: bool,
    show_all: bool,
) -> Result<(), CliError> {
    let name = if args.no_select {
        args.stream
            .clone()
            .ok_or_else(|| CliError::message("a stream name is required with --no-select"))?
    } else {
        select_stream(js, args.stream.as_deref(), show_all).await?
    };
    let info = js
        .stream_info(&name)
        .await
        .context("could not request Stream info")?;
    print_stream_info(&info, args.json, state_only || args.state)?;
    if !args.json {
        println!();
    }
    Ok(())
}

/// Print stream info as natscli does: JSON (`--json`) or the columns report.
pub fn print_stream_info(info: &StreamInfo, json: bool, state_only: bool) -> Result<(), CliError> {
    if json {
        println!("{}", to_pretty(info, STREAM_INFO)?);
        return Ok(());
    }
    print!("{}", render_stream_info(info, state_only));
    Ok(())
}

fn render_config(columns: &mut Columns, config: &StreamConfig) {
    columns.row_if_not_empty("Description", &config.description);
    columns.row_if(
        "Subjects",
        config.subjects.join(", "),
        !config.subjects.is_empty(),
    );
    columns.row("Replicas", comma(config.replicas));
    columns.row_if("Sealed", true, config.sealed);
    columns.row("Storage", config.storage.title());
    columns.row_if(
        "Compression",
        config.compression.as_str(),
        config.compression != Compression::None,
    );
    if config.first_seq > 0 {
        columns.row("First Sequence", comma_u64(config.first_seq));
    }
    if let Some(placement) = &config.placement {
        columns.row_if_not_empty("Placement Cluster", &placement.cluster);
        columns.row_if(
            "Placement Tags",
            placement.tags.join(", "),
            !placement.tags.is_empty(),
        );
    }

    columns.section("Options");
    if let Some(transform) = &config.subject_transform {
        if !transform.destination.is_empty() {
            let source = if transform.source.is_empty() {
                ">"
            } else {
                &transform.source
            };
            columns.row(
                "Subject Transform",
                format!("{source} to {}", transform.destination),
            );
        }
    }
    if let Some(republish) = &config.republish {
        let label = if republish.headers_only {
            "Republishing Headers"
        } else {
            "Republishing"
        };
        columns.row(
            label,
            format!("{} to {}", republish.source, republish.destination),
        );
    }
    columns.row("Retention", config.retention.title());
    columns.row("Acknowledgments", !config.no_ack);
    let discard = if config.discard_new_per_subject {
        "New Per Subject"
    } else {
        discard_title(config.discard)
    };
    columns.row("Discard Policy", discard);
    columns.row("Duplicate Window", humanize_nanos(config.duplicate_window));
    columns.row_if("Direct Get", true, config.allow_direct);
    columns.row_if("Mirror Direct Get", true, config.mirror_direct);
    columns.row("Allows Atomic Batch Publish", config.allow_atomic_publish);
    columns.row("Allows Fast Batch Publish", config.allow_batch_publish);
    columns.row("Allows Counters", config.allow_msg_counter);
    columns.row("Allows Msg Delete", !config.deny_delete);
    columns.row("Allows Per-Message TTL", config.allow_msg_ttl);
    columns.row("Allows Purge", !config.deny_purge);
    columns.row("Allows Schedules", config.allow_msg_schedules);
    if config.allow_msg_ttl && config.subject_delete_marker_ttl.as_nanos() > 0 {
        columns.row(
            "Subject Delete Markers TTL",
            humanize_nanos(config.subject_delete_marker_ttl),
        );
    }
    columns.row("Allows Rollups", config.allow_rollup);

    columns.section("Limits");
    let unlimited_or = |value: i64, render: &dyn Fn(i64) -> String| {
        if value == -1 {
            "unlimited".to_string()
        } else {
            render(value)
        }
    };
    columns.row(
        "Maximum Messages",
        unlimited_or(config.max_msgs, &|v| comma(v)),
    );
    columns.row(
        "Maximum Per Subject",
        if config.max_msgs_per_subject <= 0 {
            "unlimited".to_string()
        } else {
            comma(config.max_msgs_per_subject)
        },
    );
    columns.row("Maximum Bytes", unlimited_or(config.max_bytes, &ibytes_i64));
    columns.row("Maximum Age", age_limit(config.max_age));
    columns.row(
        "Maximum Message Size",
        unlimited_or(i64::from(config.max_msg_size), &ibytes_i64),
    );
    columns.row(
        "Maximum Consumers",
        unlimited_or(config.max_consumers, &|v| comma(v)),
    );
    columns.row_if(
        "Consumer Inactive Threshold",
        humanize_nanos(config.consumer_limits.inactive_threshold),
        config.consumer_limits.inactive_threshold.as_nanos() > 0,
    );
    columns.row_if(
        "Consumer Max Ack Pending",
        comma(config.consumer_limits.max_ack_pending),
        config.consumer_limits.max_ack_pending > 0,
    );

    columns.user_metadata(&config.metadata);

    if config.mirror.is_some() || !config.sources.is_empty() {
        columns.section("Replication");
    }
    if let Some(mirror) = &config.mirror {
        columns.row("Mirror", render_source(mirror));
    }
    let mut sources = config.sources.clone();
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    for (index, source) in sources.iter().enumerate() {
        columns.row(
            if index == 0 { "Sources" } else { "" },
            render_source(source),
        );
    }
    columns.line(&[]);
}

fn render_cluster_section(columns: &mut Columns, cluster: &ClusterInfo) {
    columns.section("Cluster Information");
    columns.row("Name", &cluster.name);
    columns.row_if_not_empty("Cluster Group", &cluster.raft_group);
    match &cluster.leader_since {
        Some(since_text) => columns.row(
            "Leader",
            format!(
                "{} ({})",
                cluster.leader,
                humanize_duration(since(since_text))
            ),
        ),
        None => columns.row("Leader", &cluster.leader),
    }
    for replica in &cluster.replicas {
        let mut state = vec![replica.name.clone()];
        state.push(
            if replica.current {
                "current"
            } else {
                "outdated"
            }
            .to_string(),
        );
        if replica.offline {
            state.push("OFFLINE".to_string());
        }
        if replica.active.as_nanos() > 0 && replica.active.as_nanos() < i64::MAX {
            state.push(format!("seen {} ago", humanize_nanos(replica.active)));
        } else {
            state.push("not seen".to_string());
        }
        match replica.lag {
            0 => {}
            1 => state.push("1 operation behind".to_string()),
            lag => state.push(format!("{} operations behind", comma_u64(lag))),
        }
        columns.row("Replica", state.join(", "));
    }
    columns.line(&[]);
}

/// natscli's `stream info` text: heading, configuration, cluster, sources, state.
pub fn render_stream_info(info: &StreamInfo, state_only: bool) -> String {
    let name = &info.config.name;
    let created = local_time_text(&info.created);
    let mut columns = if state_only {
        Columns::new(format!("State for Stream {name} created {created}"))
    } else {
        let mut columns = Columns::new(format!("Information for Stream {name} created {created}"));
        render_config(&mut columns, &info.config);
        columns
    };
    if let Some(cluster) = info.cluster.as_ref().filter(|c| !c.name.is_empty()) {
        render_cluster_section(&mut columns, cluster);
    }
    if let Some(mirror) = &info.mirror {
        columns.section("Mirror Information");
        render_source_info(&mut columns, mirror);
    }
    if !info.sources.is_empty() {
        columns.section("Source Information");
        for source in &info.sources {
            render_source_info(&mut columns, source);
            columns.line(&[]);
        }
    }

    columns.section("State");
    columns.api_levels(&info.config.metadata);
    let state = &info.state;
    columns.row("Messages", comma_u64(state.messages));
    columns.row("Bytes", ibytes(state.bytes));
    if let Some(lost) = state.lost.as_ref().filter(|l| !l.messages.is_empty()) {
        columns.row(
            "Lost Messages",
            format!(
                "{} ({})",
                comma(lost.messages.len() as i64),
                ibytes(lost.bytes)
            ),
        );
    }
    match parse_time(&state.first_time) {
        Some(_) => columns.row(
            "First Sequence",
            format!(
                "{} @ {}",
                comma_u64(state.first_seq),
                local_time_text(&state.first_time)
            ),
        ),
        None => columns.row("First Sequence", comma_u64(state.first_seq)),
    }
    match parse_time(&state.last_time) {
        Some(_) => columns.row(
            "Last Sequence",
            format!(
                "{} @ {}",
                comma_u64(state.last_seq),
                local_time_text(&state.last_time)
            ),
        ),
        None => columns.row("Last Sequence", comma_u64(state.last_seq)),
    }
    if !state.deleted.is_empty() {
        columns.row("Deleted Messages", comma(state.deleted.len() as i64));
    } else if state.num_deleted > 0 {
        columns.row("Deleted Messages", comma(state.num_deleted));
    }
    columns.row("Active Consumers", comma(state.consumer_count));
    if state.num_subjects > 0 {
        columns.row("Number of Subjects", comma(state.num_subjects));
    }
    if !info.alternates.is_empty() {
        let name_width = info
            .alternates
            .iter()
            .map(|a| a.name.len())
            .max()
            .unwrap_or(0);
        let cluster_width = info
            .alternates
            .iter()
            .map(|a| a.cluster.len())
            .max()
            .unwrap_or(0);
        for (index, alternate) in info.alternates.iter().enumerate() {
            let mut text = format!(
                "{:>name_width$}: Cluster: {:>cluster_width$}",
                alternate.name, alternate.cluster
            );
            if !alternate.domain.is_empty() {
                text.push_str(&format!(" Domain: {}", alternate.domain));
            }
            columns.row(if index == 0 { "Alternates" } else { "" }, text);
        }
    }
    columns.render()
}

//! Rendering streams: `stream info`/`state` (natscli's columns layout), `stream ls`,
//! `stream report` (its table) and `stream subjects`.

use clap::Args;

use jetstream_api::{ClusterInfo, Compression, StreamConfig, StreamInfo};

use crate::api::jsm_json::{to_pretty, STREAM_INFO};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::columns::Columns;
use crate::output::format::{
    age_limit, comma, comma_u64, discard_title, humanize_duration, humanize_nanos, humanize_since,
    ibytes, ibytes_i64, local_time_text, parse_time, since,
};
use crate::output::table::Table;

use super::sources::{render_source, render_source_info};
use super::{is_internal_stream, select_stream};

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

#[derive(Args, Debug)]
pub struct LsArgs {
    /// Limit the list to streams with matching subjects
    #[arg(long)]
    pub subject: Option<String>,
    /// Show just the stream names
    #[arg(long, short = 'n')]
    pub names: bool,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Limit the report to streams with matching subjects
    #[arg(long)]
    pub subject: Option<String>,
    /// Sort by number of Consumers
    #[arg(long, short = 'o')]
    pub consumers: bool,
    /// Sort by number of Messages
    #[arg(long, short = 'm')]
    pub messages: bool,
    /// Sort by stream name
    #[arg(long, short = 'n')]
    pub name: bool,
    /// Sort by Storage type
    #[arg(long, short = 't')]
    pub storage: bool,
    /// Show un-formatted numbers
    #[arg(long, short = 'r')]
    pub raw: bool,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct SubjectsArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Limit the subjects to those matching a filter
    #[arg(default_value = ">")]
    pub filter: String,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Adjusts the sorting order (name, messages)
    #[arg(long, default_value = "messages", value_parser = ["name", "subjects", "messages", "count"])]
    pub sort: String,
    /// Reverse sort
    #[arg(long, short = 'R')]
    pub reverse: bool,
    /// List only subject names
    #[arg(long)]
    pub names: bool,
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

/// natscli's renderCluster: leader marked `*`, outdated or offline replicas marked `!`.
fn render_cluster(cluster: &Option<ClusterInfo>) -> String {
    let Some(cluster) = cluster else {
        return String::new();
    };
    let mut peers = Vec::new();
    if !cluster.leader.is_empty() {
        peers.push(format!("{}*", cluster.leader));
    }
    for replica in &cluster.replicas {
        if replica.offline || !replica.current {
            peers.push(format!("{}!", replica.name));
        } else {
            peers.push(replica.name.clone());
        }
    }
    peers.sort();
    peers.join(", ")
}

pub async fn ls(js: &JetStream, args: &LsArgs, show_all: bool) -> Result<(), CliError> {
    if args.names {
        let names = js.stream_names(args.subject.as_deref()).await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&names)?);
        } else {
            for name in names {
                println!("{name}");
            }
        }
        return Ok(());
    }
    let (streams, missing) = js
        .stream_list(args.subject.as_deref())
        .await
        .context("could not list streams")?;
    let skipped = streams
        .iter()
        .any(|s| !show_all && is_internal_stream(&s.config.name));
    let mut streams: Vec<StreamInfo> = streams
        .into_iter()
        .filter(|s| show_all || !is_internal_stream(&s.config.name))
        .collect();
    if args.json {
        let names: Vec<&str> = streams.iter().map(|s| s.config.name.as_str()).collect();
        println!("{}", serde_json::to_string_pretty(&names)?);
        return Ok(());
    }
    if streams.is_empty() && missing.is_empty() {
        if skipped {
            println!("No Streams defined, pass -a to include system streams");
        } else {
            println!("No Streams defined");
        }
        return Ok(());
    }
    let title = match &args.subject {
        Some(subject) => format!("Streams matching {subject}"),
        None => "Streams".to_string(),
    };
    println!("{}\n", render_streams_table(&mut streams, title));
    render_missing(&missing);
    Ok(())
}

/// natscli's stream table (ls, find), smallest streams first.
pub fn render_streams_table(streams: &mut [StreamInfo], title: String) -> String {
    streams.sort_by_key(|s| s.state.bytes);
    let mut table = Table::new(title);
    table.headers([
        "Name",
        "Description",
        "Created",
        "Messages",
        "Size",
        "Last Message",
    ]);
    for stream in streams.iter() {
        let last = humanize_since(&stream.state.last_time);
        table.row([
            stream.config.name.clone(),
            stream.config.description.clone(),
            local_time_text(&stream.created),
            comma_u64(stream.state.messages),
            ibytes(stream.state.bytes),
            last,
        ]);
    }
    table.render()
}

fn render_missing(missing: &[String]) {
    if missing.is_empty() {
        return;
    }
    let mut sorted = missing.to_vec();
    sorted.sort();
    let mut table = Table::new("Inaccessible Streams");
    for group in sorted.chunks(4) {
        table.row(group.iter().cloned());
    }
    println!();
    println!("{}", table.render());
}

pub async fn report(js: &JetStream, args: &ReportArgs) -> Result<(), CliError> {
    if !args.json {
        print!("Obtaining Stream stats\n\n");
    }
    let (mut streams, missing) = js
        .stream_list(args.subject.as_deref())
        .await
        .context("could not list streams")?;
    if args.json {
        println!("{}", to_pretty(&streams, STREAM_INFO)?);
        return Ok(());
    }
    if streams.is_empty() && missing.is_empty() {
        println!("No Streams defined");
        return Ok(());
    }
    if args.consumers {
        streams.sort_by_key(|s| s.state.consumer_count);
    } else if args.messages {
        streams.sort_by_key(|s| s.state.messages);
    } else if args.name {
        streams.sort_by(|a, b| a.config.name.cmp(&b.config.name));
    } else if args.storage {
        streams.sort_by(|a, b| a.config.storage.title().cmp(b.config.storage.title()));
    } else {
        streams.sort_by_key(|s| s.state.bytes);
    }
    let mut table = Table::new("Stream Report");
    table.headers([
        "Stream",
        "Storage",
        "Placement",
        "Consumers",
        "Messages",
        "Bytes",
        "Lost",
        "Deleted",
        "API Level",
        "Replicas",
    ]);
    for stream in &streams {
        let state = &stream.state;
        let deleted = if state.deleted.is_empty() {
            state.num_deleted
        } else {
            state.deleted.len() as u64
        };
        let mut placement = String::new();
        if let Some(p) = &stream.config.placement {
            if !p.cluster.is_empty() {
                placement = format!("cluster: {} ", p.cluster);
            }
            if !p.tags.is_empty() {
                placement = format!("{placement}tags: {}", p.tags.join(", "));
            }
        }
        let lost = match state.lost.as_ref().filter(|l| !l.messages.is_empty()) {
            Some(lost) if args.raw => format!("{} ({})", lost.messages.len(), lost.bytes),
            Some(lost) => format!(
                "{} ({})",
                comma(lost.messages.len() as i64),
                ibytes(lost.bytes)
            ),
            None => "0".to_string(),
        };
        let api_level = stream
            .config
            .metadata
            .get("_nats.req.level")
            .cloned()
            .unwrap_or_else(|| "0".to_string());
        if args.raw {
            table.row([
                stream.config.name.clone(),
                stream.config.storage.title().to_string(),
                placement,
                state.consumer_count.to_string(),
                state.messages.to_string(),
                state.bytes.to_string(),
                lost,
                deleted.to_string(),
                api_level,
                render_cluster(&stream.cluster),
            ]);
        } else {
            table.row([
                stream.config.name.clone(),
                stream.config.storage.title().to_string(),
                placement,
                comma(state.consumer_count),
                comma_u64(state.messages),
                ibytes(state.bytes),
                lost,
                comma(deleted),
                api_level,
                render_cluster(&stream.cluster),
            ]);
        }
    }
    if args.raw {
        for column in [3, 4, 5, 7] {
            table.align_right(column);
        }
    }
    println!("{}\n", table.render());
    render_missing(&missing);
    Ok(())
}

pub async fn subjects(js: &JetStream, args: &SubjectsArgs, show_all: bool) -> Result<(), CliError> {
    let asked = args.stream.is_none();
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let info = js.stream_info_subjects(&name, &args.filter).await?;
    let subjects = info.state.subjects;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&subjects)?);
        return Ok(());
    }
    if asked {
        println!();
    }
    if subjects.is_empty() {
        println!("No subjects found matching {}", args.filter);
        return Ok(());
    }
    let mut names: Vec<&String> = subjects.keys().collect();
    let by_name = args.sort == "name" || args.sort == "subjects";
    names.sort_by(|a, b| {
        let ordering = if by_name {
            a.cmp(b)
        } else {
            subjects[*a].cmp(&subjects[*b]).then_with(|| a.cmp(b))
        };
        if args.reverse {
            ordering.reverse()
        } else {
            ordering
        }
    });
    if args.names {
        for name in names {
            println!("{name}");
        }
        return Ok(());
    }
    let longest = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let most = subjects.values().copied().max().unwrap_or(0);
    let count_width = comma_u64(most).len();
    let columns = if longest + count_width < 20 {
        3
    } else if longest + count_width < 30 {
        2
    } else {
        1
    };
    let mut table = Table::new(format!("{} Subjects in stream {name}", names.len()));
    let mut headers = Vec::new();
    for _ in 0..columns {
        headers.push("Subject");
        headers.push("Count");
    }
    table.headers(headers);
    let count_text = |count: u64| {
        if count == 0 {
            String::new()
        } else {
            comma_u64(count)
        }
    };
    for group in names.chunks(columns) {
        let mut row = Vec::new();
        for index in 0..columns {
            match group.get(index) {
                Some(subject) => {
                    row.push(subject.to_string());
                    row.push(count_text(subjects[*subject]));
                }
                None => {
                    row.push(String::new());
                    row.push(String::new());
                }
            }
        }
        table.row(row);
    }
    println!("{}\n", table.render());
    Ok(())
}

//! Listing streams: `stream ls`, `stream report` (natscli's tables) and `stream subjects`;
//! `stream find` shares the streams table.

use clap::Args;
use jetstream_api::{ClusterInfo, StreamInfo};

use crate::api::jsm_json::{to_pretty, STREAM_INFO};
use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::{
    comma, comma_u64, humanize_nanos, humanize_since, ibytes, local_time_text,
};
use crate::output::table::Table;

use super::{is_internal_stream, select_stream};

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
    if streams
        .iter()
        .any(|stream| stream.mirror.is_some() || !stream.sources.is_empty())
    {
        println!("{}\n", replication_table(&streams, args.raw));
    }
    render_missing(&missing);
    Ok(())
}

/// natscli's Replication Report: one row per mirror and per source of every stream.
fn replication_table(streams: &[StreamInfo], raw: bool) -> String {
    let mut table = Table::new("Replication Report");
    table.headers([
        "Stream",
        "Kind",
        "API Prefix",
        "Source Stream",
        "Filters and Transforms",
        "Active",
        "Lag",
        "Error",
    ]);
    for stream in streams {
        let origins = stream
            .mirror
            .iter()
            .map(|mirror| ("Mirror", mirror))
            .chain(stream.sources.iter().map(|source| ("Source", source)));
        for (kind, origin) in origins {
            let api_prefix = origin
                .external
                .as_ref()
                .map(|external| external.api_prefix.clone())
                .unwrap_or_default();
            // natscli lists a mirror's filters nowhere in this table, only a source's.
            let mut filters: Vec<String> = Vec::new();
            if kind == "Source" {
                filters = origin
                    .subject_transforms
                    .iter()
                    .map(|transform| format!("{} to {}", transform.source, transform.destination))
                    .collect();
                if filters.is_empty() && !origin.filter_subject.is_empty() {
                    filters.push(format!("{} untransformed", origin.filter_subject));
                }
            }
            let error = origin
                .error
                .as_ref()
                .map(|error| format!("{} ({})", error.description, error.err_code))
                .unwrap_or_default();
            let (active, lag) = if raw {
                (origin.active.as_nanos().to_string(), origin.lag.to_string())
            } else {
                (humanize_nanos(origin.active), comma_u64(origin.lag))
            };
            table.row([
                stream.config.name.clone(),
                kind.to_string(),
                api_prefix,
                origin.name.clone(),
                filters.join(", "),
                active,
                lag,
                error,
            ]);
        }
    }
    table.render()
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

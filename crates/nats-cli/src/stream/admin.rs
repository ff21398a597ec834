//! `nats stream seal` and `nats stream find`: sealing a stream (a config update that keeps
//! every other field exactly as the server reported it) and querying streams by state.

use std::time::Duration;

use clap::Args;
use serde_json::Value;

use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::output::format::{parse_duration, since};
use crate::prompt;
use jetstream_api::StreamInfo;

use super::listing::render_streams_table;
use super::select_stream;
use super::show::print_stream_info;

#[derive(Args, Debug)]
pub struct SealArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Force removal without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct FindArgs {
    /// Display streams with no messages
    #[arg(long)]
    pub empty: bool,
    /// Display streams with no new messages or consumer deliveries for a period
    #[arg(long)]
    pub idle: Option<String>,
    /// Display streams created longer ago than duration
    #[arg(long)]
    pub created: Option<String>,
    /// Display streams with fewer consumers than threshold
    #[arg(long)]
    pub consumers: Option<u64>,
    /// Filters streams by a subject wildcard match
    #[arg(long)]
    pub subject: Option<String>,
    /// Display that are sourced from other streams
    #[arg(long)]
    pub sourced: bool,
    /// Display that are mirrors of other streams
    #[arg(long)]
    pub mirrored: bool,
    /// Display streams with a specific number of replicas
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Invert the check - before becomes after, with becomes without
    #[arg(long)]
    pub invert: bool,
    /// Display only the names of streams found
    #[arg(long, short = 'n')]
    pub names: bool,
}

pub async fn seal(js: &JetStream, args: &SealArgs, show_all: bool) -> Result<(), CliError> {
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    if !args.force
        && !prompt::confirm(
            &format!("Really seal Stream {name}, sealed streams can not be unsealed or modified"),
            false,
        )?
    {
        return Ok(());
    }
    // Update with the configuration exactly as the server reports it, so fields this tool
    // does not model survive the round trip.
    let info = js
        .request_raw(&format!("STREAM.INFO.{name}"), bytes::Bytes::new())
        .await
        .context("could not seal Stream")?;
    let mut config = info.get("config").cloned().unwrap_or(Value::Null);
    let Some(fields) = config.as_object_mut() else {
        return Err(CliError::message(
            "could not seal Stream: the server sent no configuration",
        ));
    };
    fields.insert("sealed".to_string(), Value::Bool(true));
    js.request_raw(
        &format!("STREAM.UPDATE.{name}"),
        bytes::Bytes::from(serde_json::to_vec(&config)?),
    )
    .await
    .context("could not seal Stream")?;
    let info = js
        .stream_info(&name)
        .await
        .context("could not request Stream info")?;
    print_stream_info(&info, false, false)?;
    println!();
    Ok(())
}

pub async fn find(js: &JetStream, args: &FindArgs) -> Result<(), CliError> {
    let idle = args.idle.as_deref().map(parse_duration).transpose()?;
    let created = args.created.as_deref().map(parse_duration).transpose()?;
    let (streams, _) = js
        .stream_list(None)
        .await
        .context("could not list streams")?;
    let mut found: Vec<StreamInfo> = streams
        .into_iter()
        .filter(|stream| matches(stream, args, idle, created))
        .collect();
    if args.names {
        found.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        for stream in &found {
            println!("{}", stream.config.name);
        }
        return Ok(());
    }
    println!(
        "{}",
        render_streams_table(&mut found, "Streams".to_string())
    );
    Ok(())
}

/// Every requested check must hold; `--invert` turns each check around (as jsm.go does).
fn matches(
    stream: &StreamInfo,
    args: &FindArgs,
    idle: Option<Duration>,
    created: Option<Duration>,
) -> bool {
    let state = &stream.state;
    let config = &stream.config;
    let mut checks: Vec<bool> = Vec::new();
    if args.empty {
        checks.push(state.messages == 0);
    }
    if let Some(idle) = idle {
        checks.push(since(&state.last_time) > idle || state.last_seq == 0);
    }
    if let Some(created) = created {
        checks.push(since(&stream.created) > created);
    }
    if let Some(limit) = args.consumers {
        checks.push(state.consumer_count <= limit);
    }
    if let Some(filter) = &args.subject {
        checks.push(
            config
                .subjects
                .iter()
                .any(|subject| subject_is_subset(subject, filter)),
        );
    }
    if args.sourced {
        checks.push(!config.sources.is_empty());
    }
    if args.mirrored {
        checks.push(config.mirror.is_some());
    }
    if let Some(replicas) = args.replicas {
        checks.push(config.replicas == replicas);
    }
    checks.into_iter().all(|passed| passed != args.invert)
}

/// Whether every subject `subject` can hold is also matched by `filter`.
fn subject_is_subset(subject: &str, filter: &str) -> bool {
    let subject: Vec<&str> = subject.split('.').collect();
    let filter: Vec<&str> = filter.split('.').collect();
    for (index, wanted) in filter.iter().enumerate() {
        if *wanted == ">" {
            return index < subject.len();
        }
        let Some(token) = subject.get(index) else {
            return false;
        };
        match (*wanted, *token) {
            (_, ">") => return false,
            ("*", _) => {}
            (_, "*") => return false,
            (wanted, token) if wanted != token => return false,
            _ => {}
        }
    }
    subject.len() == filter.len()
}

#[cfg(test)]
mod tests {
    use super::subject_is_subset;

    #[test]
    fn subset_matching() {
        assert!(subject_is_subset("orders.new", "orders.*"));
        assert!(subject_is_subset("orders.*", "orders.>"));
        assert!(subject_is_subset("orders.a.b", "orders.>"));
        assert!(!subject_is_subset("orders.>", "orders.*"));
        assert!(!subject_is_subset("orders.*", "orders.new"));
        assert!(!subject_is_subset("orders", "orders.>"));
        assert!(!subject_is_subset("other.new", "orders.*"));
    }
}

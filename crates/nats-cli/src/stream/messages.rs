//! Reading and removing stream contents: `stream view` (pages with `$JS.API.STREAM.MSG.GET`
//! and `next_by_subj`, which every server answers whether or not direct get is enabled and
//! needs no consumer), `stream get`, `stream rmm`, `stream purge`, `stream rm`.

use std::time::Duration;

use clap::Args;

use crate::api::jsm_json::{to_pretty, STORED_MESSAGE};
use crate::api::{decode_base64, parse_header_block, JetStream};
use crate::error::{CliError, WithContext};
use crate::output::format::{
    go_time_string, humanize_duration, local_time_text, parse_duration, since,
};
use crate::output::{is_interactive, log_line};
use crate::prompt;
use jetstream_api::{MsgGetRequest, StoredMessage, StreamPurgeRequest};

use super::select_stream;
use super::show::print_stream_info;

#[derive(Args, Debug)]
pub struct ViewArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Page size <= 25
    #[arg(default_value_t = 10)]
    pub size: usize,
    /// Start at a specific message Sequence
    #[arg(long)]
    pub id: Option<u64>,
    /// Delivers messages received since a duration like 1d3h5m2s
    #[arg(long)]
    pub since: Option<String>,
    /// Show the raw data received
    #[arg(long)]
    pub raw: bool,
    /// Filter the stream using a subject
    #[arg(long)]
    pub subject: Option<String>,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Message Sequence to retrieve
    pub id: Option<u64>,
    /// Retrieves the message for a specific subject
    #[arg(long = "last-for", short = 'S', value_name = "SUBJECT")]
    pub last_for: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RemoveMessageArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Message Sequence to remove
    pub id: Option<u64>,
    /// Force removal without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct PurgeArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Produce JSON output
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Force removal without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
    /// Limits the purge to a specific subject
    #[arg(long, value_name = "SUBJECT")]
    pub subject: Option<String>,
    /// Purge up to but not including a specific message sequence
    #[arg(long, value_name = "SEQUENCE")]
    pub seq: Option<u64>,
    /// Keeps a certain number of messages after the purge
    #[arg(long, value_name = "MESSAGES")]
    pub keep: Option<u64>,
}

#[derive(Args, Debug)]
pub struct RemoveArgs {
    /// Stream name
    pub stream: Option<String>,
    /// Force removal without prompting
    #[arg(long, short = 'f')]
    pub force: bool,
}

/// The next stored message at or after `seq` on `filter`, or `None` at the end.
async fn next_message(
    js: &JetStream,
    stream: &str,
    seq: u64,
    filter: &str,
) -> Result<Option<StoredMessage>, CliError> {
    let request = MsgGetRequest {
        sequence: seq.max(1),
        next_by_subject: filter.to_string(),
        ..Default::default()
    };
    match js.message_get(stream, &request).await {
        Ok(message) => Ok(Some(message)),
        Err(error) if error.api_err_code() == Some(crate::api::NO_MESSAGE_FOUND) => Ok(None),
        Err(error) => Err(error),
    }
}

/// First sequence whose message is not older than `age`: a binary search over sequences.
async fn sequence_since(
    js: &JetStream,
    stream: &str,
    first: u64,
    last: u64,
    age: Duration,
) -> Result<u64, CliError> {
    let (mut low, mut high) = (first.max(1), last + 1);
    while low < high {
        let middle = low + (high - low) / 2;
        match next_message(js, stream, middle, ">").await? {
            Some(message) if since(&message.time) > age => low = message.sequence + 1,
            Some(_) => high = middle,
            None => high = middle,
        }
    }
    Ok(low)
}

/// The headers natscli hides because they describe the direct-get transport itself.
const TRANSPORT_HEADERS: [&str; 7] = [
    "Nats-Subject",
    "Nats-Stream",
    "Nats-Sequence",
    "Nats-Time-Stamp",
    "Nats-Num-Pending",
    "Nats-Last-Sequence",
    "Nats-UpTo-Sequnce",
];

fn print_body(data: &[u8]) {
    crate::output::print_message_body(data);
}

pub async fn view(js: &JetStream, args: &ViewArgs, show_all: bool) -> Result<(), CliError> {
    let mut page_size = args.size;
    if page_size > 25 {
        log_line("Page size is limited to 25, setting to 25...");
        page_size = 25;
    }
    let page_size = page_size.max(1);
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let info = js.stream_info(&name).await?;
    let filter = args.subject.clone().unwrap_or_else(|| ">".to_string());
    let mut sequence = match (&args.since, args.id) {
        (Some(text), _) => {
            let age = parse_duration(text)?;
            sequence_since(js, &name, info.state.first_seq, info.state.last_seq, age).await?
        }
        (None, Some(id)) => {
            if id < 1 {
                return Err(CliError::message("PagerStartId requires a sequence >= 1"));
            }
            id
        }
        (None, None) => info.state.first_seq.max(1),
    };
    let interactive = is_interactive();
    let mut shown_on_page = 0usize;
    loop {
        let Some(message) = next_message(js, &name, sequence, &filter).await? else {
            log_line("Reached apparent end of data");
            return Ok(());
        };
        sequence = message.sequence + 1;
        let data = decode_base64(&message.data_base64);
        if args.raw {
            println!("{}", String::from_utf8_lossy(&data));
        } else {
            println!(
                "[{}] Subject: {} Received: {}",
                message.sequence,
                message.subject,
                local_time_text(&message.time)
            );
            let headers = parse_header_block(&decode_base64(&message.headers_base64));
            let visible: Vec<&(String, String)> = headers
                .iter()
                .filter(|(key, _)| !TRANSPORT_HEADERS.contains(&key.as_str()))
                .collect();
            if !visible.is_empty() {
                println!();
                for (key, value) in visible {
                    println!("  {key}: {value}");
                }
            }
            print_body(&data);
        }
        shown_on_page += 1;
        if shown_on_page == page_size && interactive {
            shown_on_page = 0;
            // Peek so we do not ask for a next page that does not exist.
            if next_message(js, &name, sequence, &filter).await?.is_none() {
                log_line("Reached apparent end of data");
                return Ok(());
            }
            if !prompt::confirm("Next Page?", true)? {
                return Ok(());
            }
        }
    }
}

pub async fn get(js: &JetStream, args: &GetArgs, show_all: bool) -> Result<(), CliError> {
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let mut id = args.id;
    let mut last_for = args.last_for.clone();
    if id.is_none() && last_for.is_none() {
        let answer =
            prompt::input("Message Sequence to retrieve", "-1").context("invalid input")?;
        let number: i64 = answer
            .parse()
            .map_err(|_| CliError::message("invalid number"))?;
        if number == -1 {
            last_for = Some(
                prompt::input("Subject to retrieve last message for", "")
                    .context("invalid subject")?,
            );
        } else {
            id = Some(number.max(0) as u64);
        }
    }
    let request = match (id, &last_for) {
        (Some(seq), _) => MsgGetRequest {
            sequence: seq,
            ..Default::default()
        },
        (None, Some(subject)) => MsgGetRequest {
            last_by_subject: subject.clone(),
            ..Default::default()
        },
        (None, None) => return Err(CliError::message("no ID or subject specified")),
    };
    let message = js.message_get(&name, &request).await.context(&format!(
        "could not retrieve {name}#{}",
        id.map(|i| i as i64).unwrap_or(-1)
    ))?;
    if args.json {
        println!("{}", to_pretty(&message, STORED_MESSAGE)?);
        return Ok(());
    }
    println!(
        "Item: {name}#{} received {} ({}) on Subject {}\n",
        message.sequence,
        go_time_string(&message.time),
        humanize_duration(since(&message.time)),
        message.subject
    );
    let headers = parse_header_block(&decode_base64(&message.headers_base64));
    if !headers.is_empty() {
        println!("Headers:");
        for (key, value) in headers {
            println!("  {key}: {value}");
        }
        println!();
    }
    print_body(&decode_base64(&message.data_base64));
    Ok(())
}

pub async fn remove_message(
    js: &JetStream,
    args: &RemoveMessageArgs,
    show_all: bool,
) -> Result<(), CliError> {
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let id = match args.id {
        Some(id) => id,
        None => {
            let answer =
                prompt::input_required("Message Sequence to remove").context("invalid input")?;
            answer
                .parse::<u64>()
                .ok()
                .filter(|id| *id > 0)
                .ok_or_else(|| CliError::message("positive message ID required"))?
        }
    };
    if !args.force {
        let confirmed = prompt::confirm(
            &format!("Really remove message {id} from Stream {name}"),
            false,
        )
        .context("could not obtain confirmation")?;
        if !confirmed {
            return Ok(());
        }
    }
    js.message_delete(&name, id).await
}

pub async fn purge(js: &JetStream, args: &PurgeArgs, show_all: bool) -> Result<(), CliError> {
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    if !args.force {
        let confirmed = prompt::confirm(&format!("Really purge Stream {name}"), false)
            .context("could not obtain confirmation")?;
        if !confirmed {
            return Ok(());
        }
    }
    if args.seq.is_some_and(|s| s > 0) && args.keep.is_some_and(|k| k > 0) {
        return Err(CliError::message(
            "sequence and keep cannot be combined when purging",
        ));
    }
    let request = StreamPurgeRequest {
        filter: args.subject.clone().unwrap_or_default(),
        sequence: args.seq.unwrap_or(0),
        keep: args.keep.unwrap_or(0),
    };
    let purged = js
        .stream_purge(&name, &request)
        .await
        .context("could not purge Stream")?;
    println!("Purged {purged} messages from {name}\n");
    let info = js.stream_info(&name).await?;
    print_stream_info(&info, args.json, true)
}

pub async fn remove(js: &JetStream, args: &RemoveArgs, show_all: bool) -> Result<(), CliError> {
    if args.force {
        let name = args
            .stream
            .as_deref()
            .ok_or_else(|| CliError::message("--force requires a stream name"))?;
        return js
            .stream_delete(name)
            .await
            .context("could not remove Stream");
    }
    let name = select_stream(js, args.stream.as_deref(), show_all).await?;
    let confirmed = prompt::confirm(&format!("Really delete Stream {name}"), false)
        .context("could not obtain confirmation")?;
    if !confirmed {
        return Ok(());
    }
    js.stream_delete(&name)
        .await
        .context("could not remove Stream")
}

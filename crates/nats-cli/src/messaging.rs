//! Core messaging commands: `pub` (templates, `--count`, headers, `--jetstream` with its
//! PubAck), `sub` (core or, with `--stream`, an ordered JetStream consumer), `request` and
//! `reply`, printing what natscli prints.

use std::io::Read;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use bytes::Bytes;
use clap::Args;
use futures::StreamExt;

use crate::error::CliError;
use crate::options::GlobalOptions;
use crate::output::format::{comma_u64, go_duration, local_time, parse_duration};
use crate::output::{log_line, stdout_is_terminal};
use crate::template::{expand, expand_or_log};
use jetstream_api::PubAck;

#[derive(Args, Debug)]
pub struct PubArgs {
    /// Subject to publish to
    pub subject: String,
    /// Message body
    pub body: Option<String>,
    /// Sets a custom reply to subject
    #[arg(long, value_name = "SUBJECT")]
    pub reply: Option<String>,
    /// Adds headers to the message using K:V format
    #[arg(long, short = 'H', value_name = "K:V")]
    pub header: Vec<String>,
    /// Publish multiple messages
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Force reading from stdin
    #[arg(long)]
    pub force_stdin: bool,
    /// Publish messages to JetStream
    #[arg(long, short = 'J')]
    pub jetstream: bool,
    /// Show just the output received
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// When publishing multiple messages, sleep between publishes
    #[arg(long)]
    pub sleep: Option<String>,
    /// Enables template functions in the body and subject (does not affect headers)
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub templates: bool,
}

#[derive(Args, Debug)]
pub struct SubArgs {
    /// Subjects to subscribe to
    pub subjects: Vec<String>,
    /// Subscribe to a named queue group
    #[arg(long)]
    pub queue: Option<String>,
    /// Show the raw data received
    #[arg(long, short = 'r')]
    pub raw: bool,
    /// Quit after receiving this many messages
    #[arg(long)]
    pub count: Option<u64>,
    /// Do not render any data, shows only headers
    #[arg(long)]
    pub headers_only: bool,
    /// Prints only the messages' subjects
    #[arg(long)]
    pub subjects_only: bool,
    /// Subscribe to a specific stream (required JetStream)
    #[arg(long, value_name = "STREAM")]
    pub stream: Option<String>,
    /// Starts at a specific Stream sequence (requires JetStream)
    #[arg(long, value_name = "SEQUENCE")]
    pub start_sequence: Option<u64>,
    /// Delivers all messages found in the Stream (requires JetStream)
    #[arg(long)]
    pub all: bool,
    /// Delivers only future messages (requires JetStream)
    #[arg(long)]
    pub new: bool,
    /// Delivers the most recent and all future messages (requires JetStream)
    #[arg(long)]
    pub last: bool,
    /// Deliver the most recent messages for each subject in the Stream (requires JetStream)
    #[arg(long)]
    pub last_per_subject: bool,
    /// Stops consuming messages from JetStream once all messages were received
    #[arg(long, short = 'T')]
    pub terminate_at_end: bool,
    /// Unsubscribe after this amount of time without any traffic
    #[arg(long)]
    pub wait: Option<String>,
}

#[derive(Args, Debug)]
pub struct RequestArgs {
    /// Subject to send the request to
    pub subject: String,
    /// Message body
    pub body: Option<String>,
    /// Show just the output received
    #[arg(long, short = 'r')]
    pub raw: bool,
    /// Adds headers to the message using K:V format
    #[arg(long, short = 'H', value_name = "K:V")]
    pub header: Vec<String>,
    /// Publish multiple messages
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Wait for multiple replies from services. 0 waits until timeout
    #[arg(long, default_value_t = 1)]
    pub replies: usize,
    /// Maximum time between replies when waiting for more than one
    #[arg(long, default_value = "300ms")]
    pub reply_timeout: String,
    /// Enables template functions in the body and subject (does not affect headers)
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub templates: bool,
}

#[derive(Args, Debug)]
pub struct ReplyArgs {
    /// Subject to subscribe to
    pub subject: String,
    /// Reply body
    pub body: Option<String>,
    /// Echo back what is received
    #[arg(long)]
    pub echo: bool,
    /// Queue group name
    #[arg(long, short = 'q', default_value = "NATS-RPLY-22")]
    pub queue: String,
    /// Adds headers to the message using K:V format
    #[arg(long, short = 'H', value_name = "K:V")]
    pub header: Vec<String>,
    /// Quit after receiving this many messages
    #[arg(long)]
    pub count: Option<u64>,
}

/// Parse `K:V` header flags; values may use templates.
pub fn parse_headers(headers: &[String], count: usize) -> Result<HeaderMap, CliError> {
    let mut map = HeaderMap::new();
    for header in headers {
        let (key, value) = header
            .split_once(':')
            .ok_or_else(|| CliError::message(format!("invalid header {header:?}")))?;
        let value = expand(value.trim(), count, None).map_err(|e| {
            CliError::message(format!("failed to parse Header template for {key}: {e}"))
        })?;
        map.append(key.trim(), value.as_str());
    }
    Ok(map)
}

/// The body from the argument, or standard input when none was given and it is piped.
fn body_or_stdin(
    body: &Option<String>,
    force_stdin: bool,
    quiet: bool,
) -> Result<String, CliError> {
    use std::io::IsTerminal;
    match body {
        Some(body) => Ok(body.clone()),
        None if force_stdin || !std::io::stdin().is_terminal() => {
            if !quiet {
                log_line("Reading payload from STDIN");
            }
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            Ok(text)
        }
        None => Ok(String::new()),
    }
}

fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if total <= 20 || !stdout_is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{wide_bar} {pos}/{len} {per_sec} {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

pub async fn publish(args: &PubArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let body_template = body_or_stdin(&args.body, args.force_stdin, args.quiet)?;
    let count = args.count.max(1);
    let sleep = match &args.sleep {
        Some(text) => parse_duration(text)?,
        None => Duration::ZERO,
    };
    let bar = progress_bar(count as u64);
    for index in 1..=count {
        let started = Instant::now();
        let (body, subject) = if args.templates {
            (
                expand_or_log(&body_template, index, "body"),
                expand_or_log(&args.subject, index, "subject"),
            )
        } else {
            (body_template.clone(), args.subject.clone())
        };
        let headers = parse_headers(&args.header, index)?;
        let payload = Bytes::from(body.clone().into_bytes());
        if args.jetstream {
            if bar.is_none() && !args.quiet {
                log_line(&format!("Published {} bytes to {subject:?}", body.len()));
            }
            let request = async_nats::Request::new()
                .payload(payload)
                .headers(headers)
                .timeout(Some(effective.timeout));
            let response = client.send_request(subject.clone(), request).await?;
            let value: serde_json::Value = serde_json::from_slice(&response.payload)
                .map_err(|_| CliError::message("invalid PubAck response"))?;
            if let Some(error) = value.get("error") {
                let error: jetstream_api::ApiError =
                    serde_json::from_value(error.clone()).unwrap_or_default();
                return Err(CliError::Api {
                    code: error.code,
                    err_code: error.err_code,
                    description: error.description,
                });
            }
            let ack: PubAck = serde_json::from_value(value)?;
            if let Some(bar) = &bar {
                bar.inc(1);
            } else if !args.quiet {
                let mut line = format!(
                    "Stored in Stream: {} Sequence: {}",
                    ack.stream,
                    comma_u64(ack.sequence)
                );
                if !ack.domain.is_empty() {
                    line.push_str(&format!(" Domain: {:?}", ack.domain));
                }
                if ack.duplicate {
                    line.push_str(" Duplicate: true");
                }
                if !ack.value.is_empty() {
                    line.push_str(&format!(" Counter Value: {}", ack.value));
                }
                log_line(&line);
            }
            if count > 1 && !sleep.is_zero() {
                tokio::time::sleep(sleep.saturating_sub(started.elapsed())).await;
            }
        } else {
            match &args.reply {
                Some(reply) => {
                    client
                        .publish_with_reply_and_headers(
                            subject.clone(),
                            reply.clone(),
                            headers,
                            payload,
                        )
                        .await?
                }
                None => {
                    client
                        .publish_with_headers(subject.clone(), headers, payload)
                        .await?
                }
            }
            client.flush().await?;
            if count > 1 && !sleep.is_zero() {
                tokio::time::sleep(sleep).await;
            }
            match &bar {
                Some(bar) => bar.inc(1),
                None if !args.quiet => {
                    log_line(&format!("Published {} bytes to {subject:?}", body.len()))
                }
                None => {}
            }
        }
    }
    if let Some(bar) = bar {
        bar.finish();
    }
    client.flush().await?;
    Ok(())
}

/// natscli's body printing (outPutMSGBody).
fn print_body(data: &[u8]) {
    crate::output::print_message_body(data);
}

fn print_headers(headers: &Option<HeaderMap>) {
    if let Some(headers) = headers.as_ref().filter(|h| !h.is_empty()) {
        for (name, values) in headers.iter() {
            for value in values {
                println!("{name}: {value}");
            }
        }
        println!();
    }
}

pub async fn subscribe(args: &SubArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let wait = match &args.wait {
        Some(text) => Some(parse_duration(text)?),
        None => None,
    };
    if args.stream.is_some()
        || args.start_sequence.is_some()
        || args.all
        || args.new
        || args.last
        || args.last_per_subject
    {
        return subscribe_stream(client, &effective, args, wait).await;
    }
    if args.subjects.is_empty() {
        return Err(CliError::message("subject is required"));
    }
    let mut subscribers = Vec::new();
    for subject in &args.subjects {
        let subscriber = match &args.queue {
            Some(queue) => {
                client
                    .queue_subscribe(subject.clone(), queue.clone())
                    .await?
            }
            None => client.subscribe(subject.clone()).await?,
        };
        subscribers.push(subscriber);
    }
    client.flush().await?;
    if !args.raw {
        log_line(&format!("Subscribing on {} ", args.subjects.join(", ")));
    }
    let mut merged = futures::stream::select_all(subscribers);
    let mut received = 0u64;
    loop {
        let next = match wait {
            Some(wait) => match tokio::time::timeout(wait, merged.next()).await {
                Ok(message) => message,
                Err(_) => break,
            },
            None => merged.next().await,
        };
        let Some(message) = next else { break };
        received += 1;
        if args.raw {
            println!("{}", String::from_utf8_lossy(&message.payload));
        } else {
            match &message.reply {
                Some(reply) => println!(
                    "[#{received}] Received on {:?} with reply {:?}",
                    message.subject.as_str(),
                    reply.as_str()
                ),
                None => println!("[#{received}] Received on {:?}", message.subject.as_str()),
            }
            if !args.subjects_only {
                print_headers(&message.headers);
                if !args.headers_only {
                    print_body(&message.payload);
                }
            }
        }
        if args.count.is_some_and(|limit| received >= limit) {
            break;
        }
    }
    Ok(())
}

async fn subscribe_stream(
    client: async_nats::Client,
    effective: &crate::options::Effective,
    args: &SubArgs,
    wait: Option<Duration>,
) -> Result<(), CliError> {
    use async_nats::jetstream::consumer::DeliverPolicy;
    let js = crate::api::JetStream::new(client.clone(), effective);
    let stream_name = match &args.stream {
        Some(stream) => stream.clone(),
        None => {
            let subject = args
                .subjects
                .first()
                .ok_or_else(|| CliError::message("subject is required"))?;
            js.stream_names(Some(subject))
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    CliError::message(format!("no stream found for subject {subject}"))
                })?
        }
    };
    let filter = args.subjects.first().cloned().unwrap_or_default();
    let shown_subject = if filter.is_empty() {
        ">".to_string()
    } else {
        filter.clone()
    };
    // natscli's wording for each start position (with its trailing space).
    let (deliver_policy, announcement) = if let Some(sequence) = args.start_sequence {
        (
            DeliverPolicy::ByStartSequence {
                start_sequence: sequence,
            },
            format!("Subscribing to subject {shown_subject} starting at sequence {sequence} "),
        )
    } else if args.last {
        (
            DeliverPolicy::Last,
            format!("Subscribing to subject {shown_subject} from last received message "),
        )
    } else if args.new {
        (
            DeliverPolicy::New,
            format!("Subscribing to subject {shown_subject} for new messages "),
        )
    } else if args.last_per_subject {
        (
            DeliverPolicy::LastPerSubject,
            format!("Subscribing to subject {shown_subject} for last message per subject "),
        )
    } else {
        (
            DeliverPolicy::All,
            format!("Subscribing to subject {shown_subject} from first received message "),
        )
    };
    let context = async_nats::jetstream::new(client);
    let stream = context
        .get_stream(&stream_name)
        .await
        .map_err(|e| CliError::message(format!("could not load stream {stream_name}: {e}")))?;
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig {
            filter_subject: filter.clone(),
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| CliError::message(format!("could not create consumer: {e}")))?;
    if !args.raw {
        log_line(&announcement);
    }
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| CliError::message(format!("could not consume: {e}")))?;
    let mut received = 0u64;
    loop {
        let next = match wait {
            Some(wait) => match tokio::time::timeout(wait, messages.next()).await {
                Ok(message) => message,
                Err(_) => break,
            },
            None => messages.next().await,
        };
        let Some(message) = next else { break };
        let message = message.map_err(|e| CliError::message(e.to_string()))?;
        received += 1;
        let info = message
            .info()
            .map_err(|e| CliError::message(format!("Failed to parse message metadata: {e}")))?;
        let pending = info.pending;
        if args.raw {
            println!("{}", String::from_utf8_lossy(&message.payload));
        } else {
            let time = chrono::DateTime::from_timestamp(
                info.published.unix_timestamp(),
                info.published.nanosecond(),
            )
            .unwrap_or_default();
            println!(
                "[#{received}] Received JetStream message: stream: {} seq: {} / pending: {} / subject: {} / time: {}",
                info.stream,
                comma_u64(info.stream_sequence),
                comma_u64(pending),
                message.subject.as_str(),
                local_time(&time)
            );
            if !args.subjects_only {
                print_headers(&message.headers);
                if !args.headers_only {
                    print_body(&message.payload);
                }
            }
        }
        if args.count.is_some_and(|limit| received >= limit)
            || (args.terminate_at_end && pending == 0)
        {
            break;
        }
    }
    Ok(())
}

pub async fn request(args: &RequestArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let body_template = body_or_stdin(&args.body, false, args.raw)?;
    let reply_timeout = parse_duration(&args.reply_timeout)?;
    for index in 1..=args.count.max(1) {
        let (body, subject) = if args.templates {
            (
                expand_or_log(&body_template, index, "body"),
                expand_or_log(&args.subject, index, "subject"),
            )
        } else {
            (body_template.clone(), args.subject.clone())
        };
        let headers = parse_headers(&args.header, index)?;
        if !args.raw {
            log_line(&format!("Sending request on {subject:?}"));
        }
        let inbox = client.new_inbox();
        let mut replies = client.subscribe(inbox.clone()).await?;
        let started = Instant::now();
        client
            .publish_with_reply_and_headers(subject.clone(), inbox, headers, Bytes::from(body))
            .await?;
        client.flush().await?;
        let mut received = 0usize;
        loop {
            let limit = if received == 0 {
                effective.timeout
            } else {
                reply_timeout
            };
            let message = match tokio::time::timeout(limit, replies.next()).await {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(_) if received == 0 => {
                    return Err(CliError::message("nats: timeout"));
                }
                Err(_) => break,
            };
            if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                if !args.raw {
                    log_line("No responders are available");
                }
                return Err(CliError::message(
                    "nats: no responders available for request",
                ));
            }
            received += 1;
            if args.raw {
                crate::output::print_body_compact(&message.payload);
            } else {
                log_line(&format!(
                    "Received with rtt {}",
                    go_duration(started.elapsed())
                ));
                if let Some(headers) = message.headers.as_ref().filter(|h| !h.is_empty()) {
                    for (name, values) in headers.iter() {
                        for value in values {
                            log_line(&format!("{name}: {value}"));
                        }
                    }
                    log_line("");
                }
                print_body(&message.payload);
            }
            if args.replies != 0 && received >= args.replies {
                break;
            }
        }
    }
    Ok(())
}

pub async fn reply(args: &ReplyArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, _) = options.connect().await?;
    let echo = args.echo || args.body.is_none();
    if !args.echo && args.body.is_none() {
        log_line("No body or command supplied, enabling echo mode");
    }
    let mut subscriber = client
        .queue_subscribe(args.subject.clone(), args.queue.clone())
        .await?;
    client.flush().await?;
    let mut counter = 0usize;
    while let Some(message) = subscriber.next().await {
        log_line(&format!(
            "[#{counter}] Received on subject {:?}:",
            message.subject.as_str()
        ));
        if let Some(headers) = &message.headers {
            for (name, values) in headers.iter() {
                for value in values {
                    log_line(&format!("{name}: {value}"));
                }
            }
        }
        println!();
        println!("{}", String::from_utf8_lossy(&message.payload));
        let Some(reply_subject) = message.reply.clone() else {
            counter += 1;
            continue;
        };
        let mut headers = parse_headers(&args.header, counter)?;
        let payload = if echo {
            if let Some(incoming) = &message.headers {
                for (name, values) in incoming.iter() {
                    for value in values {
                        headers.append(name.clone(), value.clone());
                    }
                }
            }
            headers.append("NATS-Reply-Counter", counter.to_string().as_str());
            message.payload.clone()
        } else {
            let request_text = String::from_utf8_lossy(&message.payload).to_string();
            let template = args.body.clone().unwrap_or_default();
            match expand(&template, counter, Some(&request_text)) {
                Ok(body) => Bytes::from(body),
                Err(error) => {
                    log_line(&format!("Could not parse body template: {error}"));
                    Bytes::from(template)
                }
            }
        };
        if let Err(error) = client
            .publish_with_headers(reply_subject, headers, payload)
            .await
        {
            log_line(&format!("Could not publish reply: {error}"));
        }
        counter += 1;
        if args.count.is_some_and(|limit| counter as u64 >= limit) {
            client.flush().await?;
            break;
        }
    }
    Ok(())
}

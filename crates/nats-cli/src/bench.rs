//! `nats bench ...`: core publish/subscribe, request/reply (`service request|serve`),
//! JetStream publish (sync and async) and fetch, with natscli's banner, a progress bar on a
//! terminal, and its summary (msgs/sec, bytes/sec, latency percentiles in microseconds).

use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::api::JetStream;
use crate::error::{CliError, WithContext};
use crate::options::{connect_with, Effective, GlobalOptions};
use crate::output::format::{comma, comma_float, ibytes, parse_bytes};
use crate::output::{log_line, stdout_is_terminal};
use jetstream_api::{
    AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig, StreamPurgeRequest,
};

#[derive(Args, Debug, Clone)]
pub struct CommonFlags {
    /// Number of concurrent clients
    #[arg(long, default_value_t = 1, global = true)]
    pub clients: usize,
    /// Number of messages to publish or subscribe to
    #[arg(long, default_value_t = 100_000, global = true)]
    pub msgs: u64,
    /// Size of the test messages
    #[arg(long, default_value = "128B", global = true)]
    pub size: String,
    /// Disable displaying a progress bar
    #[arg(long, global = true)]
    pub no_progress: bool,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Publish Core NATS messages
    Pub { subject: String },
    /// Subscribe to Core NATS messages
    Sub { subject: String },
    /// Micro-service mode
    Service {
        #[command(subcommand)]
        command: ServiceCommand,
    },
    /// JetStream benchmark commands
    Js {
        #[command(subcommand)]
        command: JsCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum ServiceCommand {
    /// Send a request and wait for its reply
    Request { subject: String },
    /// Service requests
    Serve { subject: String },
}

#[derive(Subcommand, Debug)]
pub enum JsCommand {
    /// Publish JetStream messages
    Pub {
        #[command(subcommand)]
        mode: JsPubMode,
    },
    /// Consume JetStream messages from a durable consumer using fetch
    Fetch(JsFetchArgs),
}

#[derive(Args, Debug)]
pub struct JsPubFlags {
    /// Subject to use for the benchmark
    pub subject: String,
    /// The name of the stream to create or use
    #[arg(long, default_value = "benchstream")]
    pub stream: String,
    /// Purge the stream before running
    #[arg(long)]
    pub purge: bool,
    /// Sets the number of asynchronous operations per batch
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// Storage type (file, memory)
    #[arg(long, default_value = "file", value_parser = ["file", "memory"])]
    pub storage: String,
}

#[derive(Subcommand, Debug)]
pub enum JsPubMode {
    /// Use synchronous JetStream publish
    Sync(JsPubFlags),
    /// Use asynchronous JetStream publish
    Async(JsPubFlags),
}

#[derive(Args, Debug)]
pub struct JsFetchArgs {
    /// The name of the stream to create or use
    #[arg(long, default_value = "benchstream")]
    pub stream: String,
    /// The name of the durable consumer to use
    #[arg(long, default_value = "nats-bench")]
    pub consumer: String,
    /// Sets the number of messages per fetch
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
}

#[derive(Args, Debug)]
pub struct BenchTopArgs {
    #[command(flatten)]
    pub common: CommonFlags,
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// One client's run.
struct Sample {
    messages: u64,
    bytes: u64,
    duration: Duration,
    latencies_nanos: Vec<u64>,
}

impl Sample {
    fn rate(&self) -> i64 {
        (self.messages as f64 / self.duration.as_secs_f64().max(1e-9)) as i64
    }
    fn throughput(&self) -> f64 {
        self.bytes as f64 / self.duration.as_secs_f64().max(1e-9)
    }
}

fn micros(latencies: &[u64], value: f64) -> String {
    let _ = latencies;
    comma_float(value / 1000.0, 2)
}

fn percentile(sorted: &[u64], percent: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((percent / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[index.clamp(1, sorted.len()) - 1] as f64
}

fn latency_summary(sorted: &[u64], separator: &str) -> String {
    let minimum = sorted.first().copied().unwrap_or(0) as f64;
    let maximum = sorted.last().copied().unwrap_or(0) as f64;
    let average = if sorted.is_empty() {
        0.0
    } else {
        sorted.iter().map(|v| *v as f64).sum::<f64>() / sorted.len() as f64
    };
    let parts = [
        ("min", minimum),
        ("avg", average),
        ("max", maximum),
        ("P50", percentile(sorted, 50.0)),
        ("P90", percentile(sorted, 90.0)),
        ("P99", percentile(sorted, 99.0)),
        ("P99.9", percentile(sorted, 99.9)),
    ];
    parts
        .iter()
        .map(|(name, value)| format!("{name}: {}us", micros(sorted, *value)))
        .collect::<Vec<_>>()
        .join(separator)
}

fn sample_text(sample: &Sample) -> String {
    let mut text = format!(
        "{} msgs/sec ~ {}/sec",
        comma(sample.rate()),
        ibytes(sample.throughput() as u64)
    );
    if !sample.latencies_nanos.is_empty() {
        let mut sorted = sample.latencies_nanos.clone();
        sorted.sort_unstable();
        text.push_str(" ~ ");
        text.push_str(&latency_summary(&sorted, " ~ "));
    }
    text
}

/// natscli's BenchmarkResults.Report.
fn report(label: &str, samples: &[Sample]) -> String {
    if samples.is_empty() {
        return "No publisher or subscribers. Nothing to report.".to_string();
    }
    if samples.len() == 1 {
        return format!("NATS {label} stats: {}\n", sample_text(&samples[0]));
    }
    let mut out = String::new();
    for (index, sample) in samples.iter().enumerate() {
        out.push_str(&format!(
            " [{}] {} ({} msgs)\n",
            index + 1,
            sample_text(sample),
            comma(sample.messages as i64)
        ));
    }
    let total_messages: u64 = samples.iter().map(|s| s.messages).sum();
    let total_bytes: u64 = samples.iter().map(|s| s.bytes).sum();
    let longest = samples
        .iter()
        .map(|s| s.duration)
        .max()
        .unwrap_or(Duration::from_secs(1))
        .as_secs_f64()
        .max(1e-9);
    let rates: Vec<i64> = samples.iter().map(Sample::rate).collect();
    let average = rates.iter().sum::<i64>() / rates.len() as i64;
    let variance = rates
        .iter()
        .map(|r| (*r as f64 - average as f64).powi(2))
        .sum::<f64>()
        / rates.len() as f64;
    out.push_str(&format!(
        "\n NATS {label} aggregated stats: {} msgs/sec ~ {}/sec\n",
        comma((total_messages as f64 / longest) as i64),
        ibytes((total_bytes as f64 / longest) as u64)
    ));
    out.push_str(&format!(
        " message rates min {} | avg {} | max {} | stddev {} msgs\n",
        comma(rates.iter().copied().min().unwrap_or(0)),
        comma(average),
        comma(rates.iter().copied().max().unwrap_or(0)),
        comma(variance.sqrt() as i64)
    ));
    let mut all: Vec<u64> = samples
        .iter()
        .flat_map(|s| s.latencies_nanos.iter().copied())
        .collect();
    if !all.is_empty() {
        all.sort_unstable();
        out.push_str(&format!(
            " latencies per operation {}\n",
            latency_summary(&all, " | ")
        ));
    }
    out
}

fn banner(label: &str, mut attributes: Vec<(&str, String)>, common: &CommonFlags) -> String {
    attributes.push(("clients", comma(common.clients as i64)));
    attributes.push(("msg-size", common.size.clone()));
    attributes.push(("msgs", comma(common.msgs as i64)));
    attributes.sort_by(|a, b| a.0.cmp(b.0));
    let joined: Vec<String> = attributes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("Starting {label} benchmark [{}]", joined.join(", "))
}

fn progress(common: &CommonFlags, total: u64) -> Option<indicatif::ProgressBar> {
    if common.no_progress || !stdout_is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

/// Messages per client: an even split, the first clients taking the remainder.
fn share(total: u64, clients: usize, index: usize) -> u64 {
    let clients = clients.max(1) as u64;
    total / clients + u64::from((index as u64) < total % clients)
}

pub async fn run(args: &BenchTopArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let effective = options.effective()?;
    let common = &args.common;
    let size = parse_bytes(&common.size)?.max(0) as usize;
    let payload = Bytes::from(vec![b'x'; size]);
    let (label, samples) = match &args.command {
        BenchCommand::Pub { subject } => {
            let label = "Core NATS publisher";
            log_line(&banner(
                label,
                vec![
                    ("subject", subject.clone()),
                    ("multi-subject", "false".into()),
                ],
                common,
            ));
            (
                label,
                run_clients(&effective, common, Work::Publish(subject.clone()), payload).await?,
            )
        }
        BenchCommand::Sub { subject } => {
            let label = "Core NATS subscriber";
            log_line(&banner(label, vec![("subject", subject.clone())], common));
            (
                label,
                run_clients(
                    &effective,
                    common,
                    Work::Subscribe(subject.clone()),
                    payload,
                )
                .await?,
            )
        }
        BenchCommand::Service { command } => match command {
            ServiceCommand::Request { subject } => {
                let label = "Core NATS service requester";
                log_line(&banner(label, vec![("subject", subject.clone())], common));
                (
                    label,
                    run_clients(&effective, common, Work::Request(subject.clone()), payload)
                        .await?,
                )
            }
            ServiceCommand::Serve { subject } => {
                let label = "Core NATS service server";
                log_line(&banner(label, vec![("subject", subject.clone())], common));
                (
                    label,
                    run_clients(&effective, common, Work::Serve(subject.clone()), payload).await?,
                )
            }
        },
        BenchCommand::Js { command } => match command {
            JsCommand::Pub { mode } => {
                let (flags, asynchronous) = match mode {
                    JsPubMode::Sync(flags) => (flags, false),
                    JsPubMode::Async(flags) => (flags, true),
                };
                let label = if asynchronous {
                    "JetStream asynchronous publisher"
                } else {
                    "JetStream synchronous publisher"
                };
                prepare_stream(&effective, flags, options).await?;
                log_line(&banner(
                    label,
                    vec![
                        ("stream", flags.stream.clone()),
                        ("storage", flags.storage.clone()),
                    ],
                    common,
                ));
                let work = Work::JsPublish {
                    subject: flags.subject.clone(),
                    batch: if asynchronous { flags.batch.max(1) } else { 1 },
                };
                (label, run_clients(&effective, common, work, payload).await?)
            }
            JsCommand::Fetch(fetch) => {
                let label = "JetStream durable consumer (fetch)";
                prepare_consumer(&effective, fetch, options).await?;
                log_line(&banner(
                    label,
                    vec![
                        ("stream", fetch.stream.clone()),
                        ("consumer", fetch.consumer.clone()),
                    ],
                    common,
                ));
                let work = Work::Fetch {
                    stream: fetch.stream.clone(),
                    consumer: fetch.consumer.clone(),
                    batch: fetch.batch.max(1),
                };
                (label, run_clients(&effective, common, work, payload).await?)
            }
        },
    };
    println!();
    println!("{}", report(label, &samples));
    Ok(())
}

async fn prepare_stream(
    effective: &Effective,
    flags: &JsPubFlags,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let client = connect_with(effective, options.connection_name.clone()).await?;
    let js = JetStream::new(client.clone(), effective);
    match js.stream_info(&flags.stream).await {
        Ok(_) => {
            if flags.purge {
                js.stream_purge(&flags.stream, &StreamPurgeRequest::default())
                    .await?;
            }
        }
        Err(error) if error.api_err_code() == Some(crate::api::STREAM_NOT_FOUND) => {
            let config = StreamConfig {
                name: flags.stream.clone(),
                subjects: vec![flags.subject.clone()],
                storage: StorageType::from_name(&flags.storage).unwrap_or_default(),
                allow_direct: true,
                ..StreamConfig::default()
            };
            js.stream_create(&config)
                .await
                .context("could not create the benchmark stream")?;
        }
        Err(error) => return Err(error),
    }
    client.flush().await?;
    Ok(())
}

async fn prepare_consumer(
    effective: &Effective,
    fetch: &JsFetchArgs,
    options: &GlobalOptions,
) -> Result<(), CliError> {
    let client = connect_with(effective, options.connection_name.clone()).await?;
    let js = JetStream::new(client.clone(), effective);
    let config = ConsumerConfig {
        durable_name: fetch.consumer.clone(),
        ack_policy: AckPolicy::Explicit,
        deliver_policy: DeliverPolicy::All,
        max_ack_pending: (fetch.batch as i64 * 2).max(1000),
        ..ConsumerConfig::default()
    };
    js.consumer_create(&fetch.stream, &config)
        .await
        .context("could not create the benchmark consumer")?;
    client.flush().await?;
    Ok(())
}

#[derive(Clone)]
enum Work {
    Publish(String),
    Subscribe(String),
    Request(String),
    Serve(String),
    JsPublish {
        subject: String,
        batch: usize,
    },
    Fetch {
        stream: String,
        consumer: String,
        batch: usize,
    },
}

async fn run_clients(
    effective: &Effective,
    common: &CommonFlags,
    work: Work,
    payload: Bytes,
) -> Result<Vec<Sample>, CliError> {
    let bar = progress(common, common.msgs);
    let mut clients = Vec::new();
    for index in 0..common.clients.max(1) {
        clients.push(connect_with(effective, Some(format!("NATS CLI Bench {index}"))).await?);
    }
    let mut tasks = Vec::new();
    for (index, client) in clients.into_iter().enumerate() {
        let count = match work {
            // Every subscriber sees every message.
            Work::Subscribe(_) | Work::Serve(_) => common.msgs,
            _ => share(common.msgs, common.clients, index),
        };
        let work = work.clone();
        let payload = payload.clone();
        let bar = bar.clone();
        let timeout = effective.timeout;
        let prefix = effective.api_prefix.clone();
        tasks.push(tokio::spawn(async move {
            run_one(client, work, count, payload, bar, timeout, prefix).await
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        let sample = task
            .await
            .map_err(|e| CliError::message(format!("benchmark client failed: {e}")))??;
        samples.push(sample);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(samples)
}

async fn run_one(
    client: async_nats::Client,
    work: Work,
    count: u64,
    payload: Bytes,
    bar: Option<indicatif::ProgressBar>,
    timeout: Duration,
    api_prefix: String,
) -> Result<Sample, CliError> {
    let tick = |n: u64| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    };
    let size = payload.len() as u64;
    let mut latencies = Vec::new();
    let mut received = 0u64;
    let started;
    match work {
        Work::Publish(subject) => {
            started = Instant::now();
            for _ in 0..count {
                client.publish(subject.clone(), payload.clone()).await?;
                tick(1);
            }
            client.flush().await?;
            received = count;
        }
        Work::Subscribe(subject) => {
            let mut subscriber = client.subscribe(subject).await?;
            client.flush().await?;
            let _first = subscriber
                .next()
                .await
                .ok_or_else(|| CliError::message("subscription closed"))?;
            started = Instant::now();
            let mut last_received = started;
            received += 1;
            tick(1);
            while received < count {
                // Messages lost on the way (slow consumer) would otherwise stall forever.
                match tokio::time::timeout(Duration::from_secs(5), subscriber.next()).await {
                    Ok(Some(_)) => {
                        received += 1;
                        last_received = Instant::now();
                        tick(1);
                    }
                    _ => break,
                }
            }
            if received < count {
                log_line(&format!(
                    "WARNING: received {} of {} messages, the rest were lost on the way",
                    comma(received as i64),
                    comma(count as i64)
                ));
            }
            return Ok(Sample {
                messages: received,
                bytes: received * size,
                duration: last_received.duration_since(started),
                latencies_nanos: latencies,
            });
        }
        Work::Request(subject) => {
            started = Instant::now();
            for _ in 0..count {
                let sent = Instant::now();
                client.request(subject.clone(), payload.clone()).await?;
                latencies.push(sent.elapsed().as_nanos() as u64);
                tick(1);
            }
            received = count;
        }
        Work::Serve(subject) => {
            let mut subscriber = client
                .queue_subscribe(subject, "bench-service".into())
                .await?;
            client.flush().await?;
            started = Instant::now();
            while received < count {
                let Some(message) = subscriber.next().await else {
                    break;
                };
                if let Some(reply) = message.reply {
                    client.publish(reply, payload.clone()).await?;
                }
                received += 1;
                tick(1);
            }
            client.flush().await?;
        }
        Work::JsPublish { subject, batch } => {
            started = Instant::now();
            let mut remaining = count;
            while remaining > 0 {
                let this_batch = remaining.min(batch as u64);
                let sent = Instant::now();
                let mut pending = Vec::with_capacity(this_batch as usize);
                for _ in 0..this_batch {
                    let request = async_nats::Request::new()
                        .payload(payload.clone())
                        .timeout(Some(timeout));
                    pending.push(client.send_request(subject.clone(), request));
                }
                for response in futures::future::join_all(pending).await {
                    let response = response?;
                    let value: serde_json::Value = serde_json::from_slice(&response.payload)
                        .map_err(|_| CliError::message("invalid PubAck"))?;
                    if let Some(error) = value.get("error") {
                        return Err(CliError::message(format!("publish failed: {error}")));
                    }
                }
                let per_message = sent.elapsed().as_nanos() as u64 / this_batch.max(1);
                if batch == 1 {
                    latencies.push(per_message);
                }
                tick(this_batch);
                remaining -= this_batch;
            }
            received = count;
        }
        Work::Fetch {
            stream,
            consumer,
            batch,
        } => {
            let next_subject = format!("{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}");
            let inbox = client.new_inbox();
            let mut deliveries = client.subscribe(inbox.clone()).await?;
            started = Instant::now();
            while received < count {
                let want = (count - received).min(batch as u64);
                let body = serde_json::json!({
                    "batch": want,
                    "expires": (timeout.as_nanos() as u64).saturating_sub(100_000_000),
                });
                let sent = Instant::now();
                client
                    .publish_with_reply(
                        next_subject.clone(),
                        inbox.clone(),
                        Bytes::from(serde_json::to_vec(&body)?),
                    )
                    .await?;
                let mut got = 0u64;
                while got < want {
                    match tokio::time::timeout(timeout, deliveries.next()).await {
                        Ok(Some(message)) if message.status.is_none() => {
                            if let Some(reply) = message.reply {
                                client.publish(reply, Bytes::from_static(b"+ACK")).await?;
                            }
                            got += 1;
                        }
                        Ok(Some(_)) => break,
                        _ => {
                            return Err(CliError::message(
                                "timeout waiting for messages from the consumer",
                            ))
                        }
                    }
                }
                if got == 0 {
                    return Err(CliError::message("the consumer has no more messages"));
                }
                latencies.push(sent.elapsed().as_nanos() as u64 / got);
                received += got;
                tick(got);
            }
            client.flush().await?;
        }
    }
    Ok(Sample {
        messages: received,
        bytes: received * size,
        duration: started.elapsed(),
        latencies_nanos: latencies,
    })
}

//! `nats kv ...`: Key-Value buckets through async-nats' KV API (add, put, get, del, purge,
//! history, watch, ls, info) with natscli's output. Bucket details come from the backing
//! stream `KV_<bucket>` via [`crate::api::JetStream`].

use bytes::Bytes;
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::api::JetStream;
use crate::buckets::{bucket_size, storage_type, KEY_VALUE};
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::columns::Columns;
use crate::output::format::{
    age_limit, comma, comma_u64, ibytes, ibytes_i64, local_time, local_time_text, parse_bytes,
    parse_duration,
};
use crate::output::table::Table;
use crate::prompt;

#[derive(Args, Debug)]
pub struct KvArgs {
    #[command(subcommand)]
    pub command: KvCommand,
}

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// Adds a new KV Store Bucket
    #[command(alias = "new")]
    Add(AddArgs),
    /// Puts a value into a key
    Put {
        bucket: String,
        key: String,
        /// The value to store, when empty reads STDIN
        value: Option<String>,
    },
    /// Puts a value into a key only if the key is new or it's last operation was a delete
    Create {
        bucket: String,
        key: String,
        /// The value to store, when empty reads STDIN
        value: Option<String>,
    },
    /// Updates a key with a new value if the previous value matches the given revision
    Update {
        bucket: String,
        key: String,
        /// The value to store, when empty reads STDIN
        value: Option<String>,
        /// The revision of the previous value in the bucket
        revision: Option<u64>,
    },
    /// Gets a value for a key
    Get {
        bucket: String,
        key: String,
        /// Gets a specific revision
        #[arg(long)]
        revision: Option<u64>,
        /// Show only the value string
        #[arg(long)]
        raw: bool,
    },
    /// Deletes a key or the entire bucket
    #[command(alias = "rm")]
    Del {
        bucket: String,
        key: Option<String>,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Deletes a key from the bucket, clearing history before creating a delete marker
    Purge {
        bucket: String,
        key: String,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Reclaim space used by deleted keys
    Compact {
        bucket: String,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Shows the full history for a key
    History { bucket: String, key: String },
    /// Watch the bucket or a specific key for updated
    Watch {
        bucket: String,
        /// The key to act on (default all)
        key: Option<String>,
    },
    /// List buckets or keys in a bucket
    #[command(alias = "list")]
    Ls {
        bucket: Option<String>,
        /// Show just the bucket names
        #[arg(long, short = 'n')]
        names: bool,
    },
    /// View the status of a KV store
    #[command(alias = "status")]
    Info { bucket: String },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The bucket to act on
    pub bucket: String,
    /// A description for the bucket
    #[arg(long)]
    pub description: Option<String>,
    /// How many historic values to keep per key
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=64))]
    pub history: i64,
    /// Storage backend to use (file, memory)
    #[arg(long, default_value = "file", value_parser = ["file", "f", "memory", "m"])]
    pub storage: String,
    /// How long to keep values for
    #[arg(long)]
    pub ttl: Option<String>,
    /// How many replicas of the data to store
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Maximum size for any single value
    #[arg(long, value_name = "BYTES")]
    pub max_value_size: Option<String>,
    /// Maximum size for the bucket
    #[arg(long, value_name = "BYTES")]
    pub max_bucket_size: Option<String>,
    /// Compress the bucket data
    #[arg(long)]
    pub compress: bool,
}

pub async fn run(args: &KvArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let js = JetStream::new(client.clone(), &effective);
    let context = async_nats::jetstream::new(client.clone());
    let result = run_command(&args.command, &client, &js, &context).await;
    let _ = client.flush().await;
    result
}

async fn load(
    context: &async_nats::jetstream::Context,
    bucket: &str,
) -> Result<async_nats::jetstream::kv::Store, CliError> {
    context.get_key_value(bucket).await.map_err(|e| {
        // nats.go's wording for a missing bucket, which natscli prints.
        if e.to_string().contains("stream not found") {
            CliError::message("nats: bucket not found")
        } else {
            CliError::message(format!("unable to load bucket: {e}"))
        }
    })
}

/// The value argument, or all of standard input when it is absent or empty (natscli reads
/// standard input only when it is not a terminal).
fn value_or_stdin(value: &Option<String>) -> Result<Bytes, CliError> {
    use std::io::IsTerminal;
    match value {
        Some(value) if !value.is_empty() => Ok(Bytes::from(value.clone())),
        _ if std::io::stdin().is_terminal() => Ok(Bytes::new()),
        _ => {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut data)?;
            Ok(Bytes::from(data))
        }
    }
}

/// A failed expected-revision publish, worded as nats.go words a JetStream API error (what
/// natscli prints for `kv create` and `kv update`).
struct ApiRefusal {
    err_code: u64,
    text: String,
}

/// Publish `value` to `key` only if the key's last revision is `revision` (0: no value
/// yet), returning the new revision.
async fn publish_expecting(
    client: &async_nats::Client,
    bucket: &str,
    key: &str,
    value: Bytes,
    revision: u64,
) -> Result<u64, CliError> {
    try_publish_expecting(client, bucket, key, value, revision)
        .await?
        .map_err(|refusal| CliError::message(refusal.text))
}

async fn try_publish_expecting(
    client: &async_nats::Client,
    bucket: &str,
    key: &str,
    value: Bytes,
    revision: u64,
) -> Result<Result<u64, ApiRefusal>, CliError> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(
        "Nats-Expected-Last-Subject-Sequence",
        revision.to_string().as_str(),
    );
    let request = async_nats::Request::new().payload(value).headers(headers);
    let response = client
        .send_request(format!("$KV.{bucket}.{key}"), request)
        .await
        .map_err(CliError::from)?;
    let answer: serde_json::Value = serde_json::from_slice(&response.payload)?;
    if let Some(error) = answer.get("error") {
        let number = |name: &str| error.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
        let description = error
            .get("description")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        return Ok(Err(ApiRefusal {
            err_code: number("err_code"),
            text: format!(
                "nats: API error: code={} err_code={} description={description}",
                number("code"),
                number("err_code")
            ),
        }));
    }
    Ok(Ok(answer.get("seq").and_then(|v| v.as_u64()).unwrap_or(0)))
}

/// `kv create`: like nats.go's Create, a key whose last operation was a delete or purge
/// counts as absent; an existing value is refused with nats.go's "key exists" wording.
async fn create(
    client: &async_nats::Client,
    context: &async_nats::jetstream::Context,
    bucket: &str,
    key: &str,
    value: &Option<String>,
) -> Result<(), CliError> {
    /// JSStreamWrongLastSequenceErr and its replicated-stream twin.
    const WRONG_LAST_SEQUENCE: [u64; 2] = [10071, 10164];
    let store = load(context, bucket).await?;
    let body = value_or_stdin(value)?;
    let refusal = try_publish_expecting(client, bucket, key, body.clone(), 0)
        .await?
        .err();
    if let Some(refusal) = refusal {
        let latest = store
            .entry(key)
            .await
            .map_err(|e| CliError::message(e.to_string()))?;
        match latest {
            Some(entry)
                if !matches!(entry.operation, async_nats::jetstream::kv::Operation::Put) =>
            {
                publish_expecting(client, bucket, key, body, entry.revision).await?;
            }
            _ if WRONG_LAST_SEQUENCE.contains(&refusal.err_code) => {
                return Err(CliError::message(format!("{}: key exists", refusal.text)));
            }
            _ => return Err(CliError::message(refusal.text)),
        }
    }
    println!("{}", value.as_deref().unwrap_or(""));
    Ok(())
}

fn entry_time(entry: &async_nats::jetstream::kv::Entry) -> String {
    let created = chrono::DateTime::from_timestamp(
        entry.created.unix_timestamp(),
        entry.created.nanosecond(),
    )
    .unwrap_or_default();
    local_time(&created)
}

fn operation_name(operation: &async_nats::jetstream::kv::Operation) -> &'static str {
    use async_nats::jetstream::kv::Operation;
    match operation {
        Operation::Put => "PUT",
        Operation::Delete => "DELETE",
        Operation::Purge => "PURGE",
    }
}

/// natscli shows values that are not printable as base64.
fn printable(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(text)
            if text
                .chars()
                .all(|c| !c.is_control() || c == '\n' || c == '\t' || c == '\r') =>
        {
            text.to_string()
        }
        _ => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(value)
        }
    }
}

fn confirm(text: &str) -> Result<bool, CliError> {
    prompt::confirm(text, false)
}

async fn run_command(
    command: &KvCommand,
    client: &async_nats::Client,
    js: &JetStream,
    context: &async_nats::jetstream::Context,
) -> Result<(), CliError> {
    match command {
        KvCommand::Add(args) => {
            let mut config = async_nats::jetstream::kv::Config {
                bucket: args.bucket.clone(),
                description: args.description.clone().unwrap_or_default(),
                history: args.history,
                num_replicas: args.replicas,
                compression: args.compress,
                storage: storage_type(&args.storage),
                ..Default::default()
            };
            if let Some(ttl) = &args.ttl {
                config.max_age = parse_duration(ttl)?;
            }
            config.max_value_size = match &args.max_value_size {
                Some(text) => parse_bytes(text)?.clamp(-1, i64::from(i32::MAX)) as i32,
                None => -1,
            };
            config.max_bytes = bucket_size(&args.max_bucket_size)?;
            context
                .create_key_value(config)
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            show_info(js, &args.bucket).await
        }
        KvCommand::Create { bucket, key, value } => {
            create(client, context, bucket, key, value).await
        }
        KvCommand::Update {
            bucket,
            key,
            value,
            revision,
        } => {
            load(context, bucket).await?;
            let body = value_or_stdin(value)?;
            publish_expecting(client, bucket, key, body, revision.unwrap_or(0))
                .await
                .map(|_| println!("{}", value.as_deref().unwrap_or("")))
        }
        KvCommand::Put { bucket, key, value } => {
            let store = load(context, bucket).await?;
            let body = value_or_stdin(value)?;
            store
                .put(key, body)
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            // natscli echoes the argument, not what it read from standard input.
            println!("{}", value.as_deref().unwrap_or(""));
            Ok(())
        }
        KvCommand::Get {
            bucket,
            key,
            revision,
            raw,
        } => {
            let store = load(context, bucket).await?;
            let entry = match revision {
                Some(revision) => store.entry_for_revision(key.clone(), *revision).await,
                None => store.entry(key.clone()).await,
            }
            .map_err(|e| CliError::message(e.to_string()))?
            .filter(|e| matches!(e.operation, async_nats::jetstream::kv::Operation::Put))
            .ok_or_else(|| CliError::message("nats: key not found"))?;
            if *raw {
                use std::io::Write;
                let mut stdout = std::io::stdout();
                stdout.write_all(&entry.value)?;
                stdout.flush()?;
                return Ok(());
            }
            println!(
                "{} > {} revision: {} created @ {}",
                entry.bucket,
                entry.key,
                entry.revision,
                entry_time(&entry)
            );
            println!();
            let text = printable(&entry.value);
            if text.len() > 120 {
                println!(
                    "Showing first 120 bytes of {}, use --raw for full data\n",
                    comma(text.len() as i64)
                );
                println!("{}", text.chars().take(120).collect::<String>());
            } else {
                println!("{text}");
            }
            println!();
            Ok(())
        }
        KvCommand::Del { bucket, key, force } => match key {
            None => {
                if !force && !confirm(&format!("Delete bucket {bucket}?"))? {
                    println!("Skipping delete");
                    return Ok(());
                }
                context
                    .delete_key_value(bucket)
                    .await
                    .map_err(|e| CliError::message(e.to_string()))?;
                Ok(())
            }
            Some(key) => {
                let store = load(context, bucket).await?;
                if !force && !confirm(&format!("Delete key {bucket} > {key}?"))? {
                    println!("Skipping delete");
                    return Ok(());
                }
                store
                    .delete(key)
                    .await
                    .map_err(|e| CliError::message(e.to_string()))
            }
        },
        KvCommand::Purge { bucket, key, force } => {
            let store = load(context, bucket).await?;
            if !force && !confirm(&format!("Purge key {bucket} > {key}?"))? {
                println!("Skipping purge");
                return Ok(());
            }
            store
                .purge(key)
                .await
                .map_err(|e| CliError::message(e.to_string()))
        }
        KvCommand::Compact { bucket, force } => {
            load(context, bucket).await?;
            if !force
                && !confirm(&format!(
                    "Purge all historic values and audit trails for deleted keys in bucket {bucket}?"
                ))?
            {
                println!("Skipping delete");
                return Ok(());
            }
            compact(js, bucket).await
        }
        KvCommand::History { bucket, key } => {
            let store = load(context, bucket).await?;
            let mut history = store
                .history(key)
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            let mut table = Table::new(format!("History for {bucket} > {key}"));
            table.headers(["Key", "Revision", "Op", "Created", "Length", "Value"]);
            table.align_right(1);
            while let Some(entry) = history.next().await {
                let entry = entry.map_err(|e| CliError::message(e.to_string()))?;
                let value = printable(&entry.value);
                let value = if value.len() > 40 {
                    format!("{}...", value.chars().take(37).collect::<String>())
                } else {
                    value
                };
                table.row([
                    entry.key.clone(),
                    entry.revision.to_string(),
                    operation_name(&entry.operation).to_string(),
                    entry_time(&entry),
                    comma(entry.value.len() as i64),
                    value,
                ]);
            }
            println!("{}\n", table.render());
            Ok(())
        }
        KvCommand::Watch { bucket, key } => {
            let store = load(context, bucket).await?;
            let mut watch = match key {
                Some(key) => store.watch_with_history(key).await,
                None => store.watch_with_history(">").await,
            }
            .map_err(|e| CliError::message(e.to_string()))?;
            while let Some(entry) = watch.next().await {
                let entry = entry.map_err(|e| CliError::message(e.to_string()))?;
                // Coloured like natscli; console drops the colour when stdout is no terminal.
                let name = operation_name(&entry.operation);
                let operation = match entry.operation {
                    async_nats::jetstream::kv::Operation::Put => console::style(name).green(),
                    _ => console::style(name).red(),
                };
                match entry.operation {
                    async_nats::jetstream::kv::Operation::Put => println!(
                        "[{}] {operation} {} > {}: {}",
                        entry_time(&entry),
                        entry.bucket,
                        entry.key,
                        String::from_utf8_lossy(&entry.value)
                    ),
                    _ => println!(
                        "[{}] {operation} {} > {}",
                        entry_time(&entry),
                        entry.bucket,
                        entry.key
                    ),
                }
            }
            Ok(())
        }
        KvCommand::Ls { bucket, names } => match bucket {
            Some(bucket) => {
                let store = load(context, bucket).await?;
                let mut keys = store
                    .keys()
                    .await
                    .map_err(|e| CliError::message(e.to_string()))?;
                let mut found = false;
                while let Some(key) = keys.next().await {
                    let key = key.map_err(|e| CliError::message(e.to_string()))?;
                    found = true;
                    println!("{key}");
                }
                if !found && !names {
                    println!("No keys found in bucket");
                }
                Ok(())
            }
            None => {
                let mut buckets = KEY_VALUE.streams(js).await?;
                if *names {
                    KEY_VALUE.print_names(&buckets);
                    return Ok(());
                }
                if buckets.is_empty() {
                    println!("No Key-Value buckets found");
                    return Ok(());
                }
                buckets.sort_by(|a, b| a.config.name.cmp(&b.config.name));
                println!("{}\n", KEY_VALUE.table(&buckets));
                Ok(())
            }
        },
        KvCommand::Info { bucket } => show_info(js, bucket).await,
    }
}

/// `kv compact`, as nats.go's PurgeDeletes: every key whose latest entry is a delete or purge
/// marker loses its history; markers older than 30 minutes go too, newer ones stay so
/// watchers still see them. Keys are found from the stream's subject counts rather than a
/// watcher, so no consumer is needed.
async fn compact(js: &JetStream, bucket: &str) -> Result<(), CliError> {
    const KEEP_MARKERS_YOUNGER_THAN: std::time::Duration = std::time::Duration::from_secs(30 * 60);
    let stream = format!("KV_{bucket}");
    let prefix = format!("$KV.{bucket}.");
    let info = js
        .stream_info_subjects(&stream, &format!("{prefix}>"))
        .await?;
    for subject in info.state.subjects.keys() {
        let request = jetstream_api::MsgGetRequest {
            last_by_subject: subject.clone(),
            ..Default::default()
        };
        let latest = js.message_get(&stream, &request).await?;
        let headers =
            crate::api::parse_header_block(&crate::api::decode_base64(&latest.headers_base64));
        let is_marker = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("KV-Operation") && (value == "DEL" || value == "PURGE")
        });
        if !is_marker {
            continue;
        }
        let keep = if crate::output::format::since(&latest.time) > KEEP_MARKERS_YOUNGER_THAN {
            None
        } else {
            Some(1)
        };
        js.stream_purge(
            &stream,
            &jetstream_api::StreamPurgeRequest {
                filter: subject.clone(),
                keep: keep.unwrap_or(0),
                ..Default::default()
            },
        )
        .await?;
    }
    Ok(())
}

async fn show_info(js: &JetStream, bucket: &str) -> Result<(), CliError> {
    let info = js
        .stream_info(&format!("KV_{bucket}"))
        .await
        .context(&format!("could not load bucket {bucket}"))?;
    let config = &info.config;
    let mut columns = Columns::new(format!(
        "Information for Key-Value Store Bucket {bucket} created {}",
        local_time_text(&info.created)
    ));
    columns.section("Configuration");
    columns.row("Bucket Name", bucket);
    columns.row("History Kept", comma(config.max_msgs_per_subject));
    columns.row("Values Stored", comma_u64(info.state.messages));
    columns.row(
        "Compressed",
        config.compression != jetstream_api::Compression::None,
    );
    columns.row("Per-Key TTL Supported", config.allow_msg_ttl);
    columns.row("Backing Store Kind", "JetStream");
    columns.row_if_not_empty("Description", &config.description);
    columns.row("Bucket Size", ibytes(info.state.bytes));
    columns.row(
        "Maximum Bucket Size",
        if config.max_bytes == -1 {
            "unlimited".to_string()
        } else {
            ibytes_i64(config.max_bytes)
        },
    );
    columns.row(
        "Maximum Value Size",
        if config.max_msg_size == -1 {
            "unlimited".to_string()
        } else {
            ibytes_i64(i64::from(config.max_msg_size))
        },
    );
    columns.row("Maximum Age", age_limit(config.max_age));
    columns.row("JetStream Stream", &config.name);
    columns.row("Storage", config.storage.title());
    print!("{}", columns.render());
    println!();
    Ok(())
}

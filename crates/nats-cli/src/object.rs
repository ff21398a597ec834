//! `nats object ...`: Object Store buckets through async-nats' object store API (add, put,
//! get, del, info, ls, seal, watch) with natscli's output. Bucket details come from the
//! backing stream `OBJ_<bucket>` via [`crate::api::JetStream`]; objects themselves are only
//! touched through async-nats so the chunk and metadata layout stays the library's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use base64::Engine;
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::api::JetStream;
use crate::buckets::{bucket_size, storage_type, OBJECT_STORE};
use crate::error::{CliError, WithContext};
use crate::options::GlobalOptions;
use crate::output::columns::Columns;
use crate::output::format::{
    age_limit, comma, humanize_duration, ibytes, ibytes_i64, local_time, parse_duration, parse_time,
};
use crate::output::progress::{transfer_bar, Counted};
use crate::output::table::Table;
use crate::prompt;

type ObjectStore = async_nats::jetstream::object_store::ObjectStore;
type ObjectInfo = async_nats::jetstream::object_store::ObjectInfo;

#[derive(Args, Debug)]
pub struct ObjectArgs {
    #[command(subcommand)]
    pub command: ObjectCommand,
}

#[derive(Subcommand, Debug)]
pub enum ObjectCommand {
    /// Adds a new Object Store Bucket
    Add(AddArgs),
    /// Puts a file into the store
    Put {
        bucket: String,
        /// The file to put (standard input when absent, then --name is required)
        file: Option<PathBuf>,
        /// Override the name supplied to the object store
        #[arg(long)]
        name: Option<String>,
        /// Sets an optional description for the object
        #[arg(long)]
        description: Option<String>,
        /// Adds headers to the object using K:V format
        #[arg(long = "header", short = 'H')]
        headers: Vec<String>,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
        /// Disable progress bars
        #[arg(long)]
        no_progress: bool,
    },
    /// Deletes a file or bucket from the store
    #[command(alias = "rm")]
    Del {
        bucket: String,
        file: Option<String>,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Retrieves a file from the store
    Get {
        bucket: String,
        file: String,
        /// Override the output file name
        #[arg(long, short = 'O')]
        output: Option<PathBuf>,
        /// Act without confirmation
        #[arg(long, short = 'f')]
        force: bool,
        /// Disable progress bars
        #[arg(long)]
        no_progress: bool,
    },
    /// Get information about a bucket or object
    #[command(alias = "show", alias = "i")]
    Info {
        bucket: String,
        file: Option<String>,
    },
    /// List buckets or contents of a specific bucket
    Ls {
        bucket: Option<String>,
        /// When listing buckets, show just the bucket names
        #[arg(long, short = 'n')]
        names: bool,
    },
    /// Seals a bucket preventing further updates
    Seal {
        bucket: String,
        /// Force sealing without prompting
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Watch a bucket for changes
    Watch { bucket: String },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The bucket to act on
    pub bucket: String,
    /// How long to keep objects for
    #[arg(long)]
    pub ttl: Option<String>,
    /// How many replicas of the data to store
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Maximum size for the bucket
    #[arg(long)]
    pub max_bucket_size: Option<String>,
    /// A description for the bucket
    #[arg(long)]
    pub description: Option<String>,
    /// Storage backend to use (file, memory)
    #[arg(long, default_value = "file", value_parser = ["file", "f", "memory", "m"])]
    pub storage: String,
    /// Compress the bucket data
    #[arg(long)]
    pub compress: bool,
}

pub async fn run(args: &ObjectArgs, options: &GlobalOptions) -> Result<(), CliError> {
    let (client, effective) = options.connect().await?;
    let js = JetStream::new(client.clone(), &effective);
    let context = async_nats::jetstream::new(client.clone());
    let result = run_command(&args.command, &js, &context, effective.trace).await;
    let _ = client.flush().await;
    result
}

async fn load(
    context: &async_nats::jetstream::Context,
    bucket: &str,
) -> Result<ObjectStore, CliError> {
    context.get_object_store(bucket).await.map_err(|error| {
        // nats.go's wording for a missing bucket, which natscli prints.
        if error.to_string().contains("stream not found") {
            CliError::message("nats: bucket not found")
        } else {
            CliError::message(error.to_string())
        }
    })
}

/// Object info, with nats.go's wording for a missing object; like nats.go's GetInfo, a
/// deleted object counts as missing.
async fn object_info(store: &ObjectStore, name: &str) -> Result<ObjectInfo, CliError> {
    let not_found = || CliError::message("nats: object not found");
    let info = store.info(name).await.map_err(|error| {
        use async_nats::jetstream::object_store::InfoErrorKind;
        match error.kind() {
            InfoErrorKind::NotFound => not_found(),
            _ => CliError::message(error.to_string()),
        }
    })?;
    if info.deleted {
        return Err(not_found());
    }
    Ok(info)
}

fn modified(info: &ObjectInfo) -> Option<chrono::DateTime<chrono::Utc>> {
    let time = info.modified?;
    chrono::DateTime::from_timestamp(time.unix_timestamp(), time.nanosecond())
}

fn confirm(text: &str) -> Result<bool, CliError> {
    prompt::confirm(text, false)
}

/// `trace` turns progress bars off, as in natscli.
async fn run_command(
    command: &ObjectCommand,
    js: &JetStream,
    context: &async_nats::jetstream::Context,
    trace: bool,
) -> Result<(), CliError> {
    match command {
        ObjectCommand::Add(args) => {
            let mut config = async_nats::jetstream::object_store::Config {
                bucket: args.bucket.clone(),
                description: args.description.clone(),
                num_replicas: args.replicas,
                compression: args.compress,
                storage: storage_type(&args.storage),
                ..Default::default()
            };
            if let Some(ttl) = &args.ttl {
                config.max_age = parse_duration(ttl)?;
            }
            config.max_bytes = bucket_size(&args.max_bucket_size)?;
            context
                .create_object_store(config)
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            show_bucket_info(js, &args.bucket).await
        }
        ObjectCommand::Put {
            bucket,
            file,
            name,
            description,
            headers,
            force,
            no_progress,
        } => {
            let request = PutRequest {
                bucket,
                file: file.as_deref(),
                name: name.as_deref(),
                description,
                headers,
                force: *force,
                no_progress: *no_progress || trace,
            };
            put(context, request).await
        }
        ObjectCommand::Get {
            bucket,
            file,
            output,
            force,
            no_progress,
        } => {
            let quiet = *no_progress || trace;
            get(context, bucket, file, output.as_deref(), *force, quiet).await
        }
        ObjectCommand::Del {
            bucket,
            file,
            force,
        } => match file {
            Some(file) => {
                let store = load(context, bucket).await?;
                if !force {
                    let info = object_info(&store, file).await?;
                    let question = format!(
                        "Delete {} byte file {bucket} > {file}?",
                        ibytes(info.size as u64)
                    );
                    if !confirm(&question)? {
                        println!("Skipping delete");
                        return Ok(());
                    }
                }
                store
                    .delete(file)
                    .await
                    .map_err(|e| CliError::message(e.to_string()))?;
                println!("Removed {bucket} > {file}");
                show_bucket_info(js, bucket).await
            }
            None => {
                load(context, bucket).await?;
                if !force && !confirm(&format!("Delete bucket {bucket} and all its files?"))? {
                    println!("Skipping delete");
                    return Ok(());
                }
                context
                    .delete_object_store(bucket)
                    .await
                    .map_err(|e| CliError::message(e.to_string()))?;
                Ok(())
            }
        },
        ObjectCommand::Info { bucket, file } => {
            let store = load(context, bucket).await?;
            match file {
                None => show_bucket_info(js, bucket).await,
                Some(file) => {
                    let info = object_info(&store, file).await?;
                    show_object_info(&info);
                    Ok(())
                }
            }
        }
        ObjectCommand::Ls { bucket, names } => match bucket {
            Some(bucket) => list_objects(context, bucket, *names).await,
            None => list_buckets(js, *names).await,
        },
        ObjectCommand::Seal { bucket, force } => {
            if !force
                && !confirm(&format!(
                    "Really seal Bucket {bucket}, sealed buckets can not be unsealed or modified"
                ))?
            {
                return Ok(());
            }
            let mut store = load(context, bucket).await?;
            store
                .seal()
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            println!("{bucket} has been sealed");
            show_bucket_info(js, bucket).await
        }
        ObjectCommand::Watch { bucket } => {
            let store = load(context, bucket).await?;
            let mut watch = store
                .watch_with_history()
                .await
                .map_err(|e| CliError::message(e.to_string()))?;
            while let Some(info) = watch.next().await {
                let info = info.map_err(|e| CliError::message(e.to_string()))?;
                let time = modified(&info).map(|t| local_time(&t)).unwrap_or_default();
                if info.deleted {
                    println!(
                        "[{time}] {} {} > {}",
                        console::style("DEL").red(),
                        info.bucket,
                        info.name
                    );
                } else {
                    println!(
                        "[{time}] {} {} > {}: {} bytes in {} chunks",
                        console::style("PUT").green(),
                        info.bucket,
                        info.name,
                        ibytes(info.size as u64),
                        comma(info.chunks as i64)
                    );
                }
            }
            Ok(())
        }
    }
}

/// What `object put` was asked to store.
struct PutRequest<'a> {
    bucket: &'a str,
    file: Option<&'a Path>,
    name: Option<&'a str>,
    description: &'a Option<String>,
    headers: &'a [String],
    force: bool,
    no_progress: bool,
}

async fn put(
    context: &async_nats::jetstream::Context,
    request: PutRequest<'_>,
) -> Result<(), CliError> {
    let (bucket, headers) = (request.bucket, request.headers);
    let store = load(context, bucket).await?;
    let name = match (request.name, request.file) {
        (Some(name), _) => name.to_string(),
        (None, Some(file)) => clean_path(&file.to_string_lossy()),
        (None, None) => {
            return Err(CliError::message(
                "--name is required when reading from stdin",
            ))
        }
    };
    if let Ok(existing) = store.info(&name).await {
        if !existing.deleted && !request.force {
            show_object_info(&existing);
            println!();
            if !confirm(&format!("Replace existing file {bucket} > {name}"))? {
                return Ok(());
            }
            println!();
        }
    }
    let header_map = crate::messaging::parse_headers(headers, 0)?;
    let metadata = async_nats::jetstream::object_store::ObjectMetadata {
        name: name.clone(),
        description: request.description.clone().filter(|d| !d.is_empty()),
        headers: (!headers.is_empty()).then_some(header_map),
        ..Default::default()
    };
    let info = match request.file {
        Some(path) => {
            let file = tokio::fs::File::open(path)
                .await
                .context(&format!("could not open {}", path.display()))?;
            let size = file.metadata().await?.len();
            let mut reader = Counted::new(file, transfer_bar(size, request.no_progress));
            let stored = store.put(metadata, &mut reader).await;
            reader.finish();
            stored
        }
        None => {
            let mut reader = tokio::io::stdin();
            store.put(metadata, &mut reader).await
        }
    }
    .map_err(|e| CliError::message(e.to_string()))?;
    println!();
    show_object_info(&info);
    Ok(())
}

/// Go's `filepath.Clean` for the object name natscli derives from a file path.
fn clean_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

async fn get(
    context: &async_nats::jetstream::Context,
    bucket: &str,
    file: &str,
    output: Option<&Path>,
    force: bool,
    no_progress: bool,
) -> Result<(), CliError> {
    let store = load(context, bucket).await?;
    let info = object_info(&store, file).await?;
    let object = store
        .get(file)
        .await
        .map_err(|e| CliError::message(e.to_string()))?;
    let target = match output {
        Some(path) => path.to_path_buf(),
        None => PathBuf::from(
            Path::new(&info.name)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| info.name.clone()),
        ),
    };
    let target = std::path::absolute(&target)?;
    if !force
        && target.exists()
        && !confirm(&format!(
            "Replace existing target file {}",
            target.display()
        ))?
    {
        return Ok(());
    }
    let start = Instant::now();
    let mut out = tokio::fs::File::create(&target)
        .await
        .context(&format!("could not create {}", target.display()))?;
    let bar = transfer_bar(info.size as u64, no_progress);
    if bar.is_some() {
        println!();
    }
    let mut object = Counted::new(object, bar);
    let copied = tokio::io::copy(&mut object, &mut out).await;
    object.finish();
    let copied = match copied {
        Ok(copied) => copied,
        Err(error) => {
            drop(out);
            let _ = std::fs::remove_file(&target);
            return Err(error.into());
        }
    };
    tokio::io::AsyncWriteExt::flush(&mut out).await?;
    if copied > 0 && copied != info.size as u64 {
        return Err(CliError::message(format!(
            "wrote {}, expected {}",
            ibytes(copied),
            ibytes(info.size as u64)
        )));
    }
    let elapsed = start.elapsed();
    if elapsed.as_secs() >= 2 {
        let rate = info.size as f64 / elapsed.as_secs_f64();
        println!(
            "Wrote: {} to {} in {} average {}/s",
            ibytes(copied),
            target.display(),
            humanize_duration(elapsed),
            ibytes(rate as u64)
        );
    } else {
        println!(
            "Wrote: {} to {} in {}",
            ibytes(copied),
            target.display(),
            humanize_duration(elapsed)
        );
    }
    Ok(())
}

async fn list_objects(
    context: &async_nats::jetstream::Context,
    bucket: &str,
    names: bool,
) -> Result<(), CliError> {
    let store = load(context, bucket).await?;
    let mut objects = Vec::new();
    let mut list = store
        .list()
        .await
        .map_err(|e| CliError::message(e.to_string()))?;
    while let Some(info) = list.next().await {
        objects.push(info.map_err(|e| CliError::message(e.to_string()))?);
    }
    if objects.is_empty() {
        println!("No entries found");
        return Ok(());
    }
    if names {
        for info in &objects {
            println!("{}", info.name);
        }
        return Ok(());
    }
    let mut table = Table::new("Bucket Contents");
    table.headers(["Name", "Size", "Time"]);
    for info in &objects {
        let time = modified(info)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        table.row([info.name.clone(), ibytes(info.size as u64), time]);
    }
    println!("{}", table.render());
    Ok(())
}

async fn list_buckets(js: &JetStream, names: bool) -> Result<(), CliError> {
    let mut buckets = OBJECT_STORE.streams(js).await?;
    if buckets.is_empty() {
        println!("No Object Store buckets found");
        return Ok(());
    }
    if names {
        OBJECT_STORE.print_names(&buckets);
        return Ok(());
    }
    buckets.sort_by_key(|s| s.state.bytes);
    println!("{}", OBJECT_STORE.table(&buckets));
    Ok(())
}

async fn show_bucket_info(js: &JetStream, bucket: &str) -> Result<(), CliError> {
    let info = js
        .stream_info(&format!("OBJ_{bucket}"))
        .await
        .context(&format!("could not load bucket {bucket}"))?;
    let config = &info.config;
    let created = parse_time(&info.created)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        })
        .unwrap_or_else(|| info.created.to_rfc3339());
    let mut columns = Columns::new(format!(
        "Information for Object Store Bucket {bucket} created {created}"
    ));
    columns.section("Configuration");
    columns.row("Bucket Name", bucket);
    columns.row_if_not_empty("Description", &config.description);
    columns.row("Replicas", config.replicas);
    columns.row("TTL", age_limit(config.max_age));
    columns.row("Sealed", config.sealed);
    columns.row("Size", ibytes(info.state.bytes));
    columns.row(
        "Maximum Bucket Size",
        if config.max_bytes == -1 {
            "unlimited".to_string()
        } else {
            ibytes_i64(config.max_bytes)
        },
    );
    columns.row("Storage", config.storage.title());
    columns.row("Backing Store Kind", "JetStream");
    columns.row("JetStream Stream", &config.name);
    print!("{}", columns.render());
    Ok(())
}

fn show_object_info(info: &ObjectInfo) {
    let mut columns = Columns::new(format!(
        "Object information for {} > {}",
        info.bucket, info.name
    ));
    if let Some(description) = &info.description {
        columns.row_if_not_empty("Description", description);
    }
    columns.row("Size", ibytes(info.size as u64));
    columns.row(
        "Modification Time",
        modified(info).map(|t| local_time(&t)).unwrap_or_default(),
    );
    columns.row("Chunks", comma(info.chunks as i64));
    columns.row("Digest", digest_text(info.digest.as_deref().unwrap_or("")));
    columns.row_if("Deleted", info.deleted, info.deleted);
    if let Some(headers) = &info.headers {
        let mut lines: Vec<String> = Vec::new();
        for (key, values) in headers.iter() {
            for value in values {
                lines.push(format!("{key}: {value}"));
            }
        }
        if let Some((first, rest)) = lines.split_first() {
            columns.row("Headers", first);
            for line in rest {
                columns.row("", line);
            }
        }
    }
    print!("{}", columns.render());
}

/// `SHA-256=<base64url>` as natscli shows it: the algorithm and the digest in hex.
fn digest_text(digest: &str) -> String {
    let (algorithm, encoded) = digest.split_once('=').unwrap_or((digest, ""));
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(encoded)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded))
        .unwrap_or_default();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{algorithm} {hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_path_like_go() {
        assert_eq!(clean_path("a/./b//c/../d"), "a/b/d");
        assert_eq!(clean_path("../x"), "../x");
        assert_eq!(clean_path("/../x"), "/x");
        assert_eq!(clean_path("./"), ".");
    }

    #[test]
    fn digest_in_hex() {
        assert_eq!(digest_text("SHA-256=AAEC_w=="), "SHA-256 000102ff");
    }
}

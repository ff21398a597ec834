//! What `nats kv` and `nats object` share. Both kinds of bucket are streams with a name prefix
//! (`KV_<bucket>`, `OBJ_<bucket>`): they are listed from STREAM.LIST and shown in one table
//! layout (the key-value one adds a Values column), and the `add` flags for storage and bucket
//! size parse the same way.

use async_nats::jetstream::stream::StorageType;
use jetstream_api::StreamInfo;

use crate::api::JetStream;
use crate::error::CliError;
use crate::output::format::{comma_u64, humanize_since, ibytes, local_time_text, parse_bytes};
use crate::output::table::Table;

pub struct BucketKind {
    stream_prefix: &'static str,
    table_title: &'static str,
    /// The Values column (key-value buckets count their values).
    counts_values: bool,
}

pub const KEY_VALUE: BucketKind = BucketKind {
    stream_prefix: "KV_",
    table_title: "Key-Value Buckets",
    counts_values: true,
};

pub const OBJECT_STORE: BucketKind = BucketKind {
    stream_prefix: "OBJ_",
    table_title: "Object Store Buckets",
    counts_values: false,
};

impl BucketKind {
    /// The streams that back buckets of this kind.
    pub async fn streams(&self, js: &JetStream) -> Result<Vec<StreamInfo>, CliError> {
        let (streams, _) = js.stream_list(None).await?;
        Ok(streams
            .into_iter()
            .filter(|stream| stream.config.name.starts_with(self.stream_prefix))
            .collect())
    }

    pub fn bucket_name<'a>(&self, stream: &'a StreamInfo) -> &'a str {
        stream
            .config
            .name
            .strip_prefix(self.stream_prefix)
            .unwrap_or(&stream.config.name)
    }

    pub fn print_names(&self, buckets: &[StreamInfo]) {
        for stream in buckets {
            println!("{}", self.bucket_name(stream));
        }
    }

    /// natscli's bucket table, rows in the order given.
    pub fn table(&self, buckets: &[StreamInfo]) -> String {
        let mut table = Table::new(self.table_title);
        let mut headers = vec!["Bucket", "Description", "Created", "Size"];
        if self.counts_values {
            headers.push("Values");
        }
        headers.push("Last Update");
        table.headers(headers);
        for stream in buckets {
            let mut row = vec![
                self.bucket_name(stream).to_string(),
                stream.config.description.clone(),
                local_time_text(&stream.created),
                ibytes(stream.state.bytes),
            ];
            if self.counts_values {
                row.push(comma_u64(stream.state.messages));
            }
            row.push(humanize_since(&stream.state.last_time));
            table.row(row);
        }
        table.render()
    }
}

/// `--storage file|f|memory|m`.
pub fn storage_type(text: &str) -> StorageType {
    if text.starts_with('m') {
        StorageType::Memory
    } else {
        StorageType::File
    }
}

/// `--max-bucket-size`, unlimited (-1) when absent.
pub fn bucket_size(text: &Option<String>) -> Result<i64, CliError> {
    match text {
        Some(text) => parse_bytes(text),
        None => Ok(-1),
    }
}

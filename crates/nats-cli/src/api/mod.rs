//! The JetStream API as the CLI uses it: JSON requests to `$JS.API.*` subjects over a plain
//! async-nats connection, error answers turned into [`CliError::Api`]. Commands call this; it
//! knows nothing about output. The request and response types are jetstream-api's (the same
//! ones our server uses); `jsm_json` holds the shape natscli prints them in.
//!
//! Responses are decoded leniently, unlike the server's strict request decoding: a newer server
//! may add fields the CLI does not know, and natscli (Go's `encoding/json`) ignores those, so we
//! drop them (jetstream-api's `Strictness::Lenient`) instead of failing. An enum value we do
//! not know (a new retention policy, say) still fails, as it does in natscli.

pub mod jsm_json;

use std::time::Duration;

use bytes::Bytes;
use jetstream_api::json::{decode_request_with, Strictness};
use jetstream_api::{
    AccountInfo, ApiError, ConsumerConfig, ConsumerInfo, MsgGetRequest, Paged, StoredMessage,
    StreamConfig, StreamInfo, StreamPurgeRequest,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::options::Effective;

/// err_code values the CLI reacts to.
pub const STREAM_NOT_FOUND: u16 = jetstream_api::errors::STREAM_NOT_FOUND.err_code;
pub const NO_MESSAGE_FOUND: u16 = jetstream_api::errors::NO_MESSAGE_FOUND.err_code;

#[derive(Clone)]
pub struct JetStream {
    pub client: async_nats::Client,
    prefix: String,
    pub timeout: Duration,
    trace: bool,
}

/// Decodes one response object (or a member of one), ignoring fields we do not know.
pub fn decode_response<T: DeserializeOwned + Default>(value: Value) -> Result<T, CliError> {
    let body = serde_json::to_vec(&value)?;
    decode_request_with(&body, Strictness::Lenient).map_err(|error| {
        CliError::message(format!(
            "could not decode the server's response: {}",
            error.description
        ))
    })
}

/// Decodes a list member of a response (`streams`, `consumers`); absent or null is empty.
pub(crate) fn decode_list<T: DeserializeOwned + Default>(
    value: Option<&Value>,
) -> Result<Vec<T>, CliError> {
    match value {
        Some(Value::Array(items)) => items.iter().cloned().map(decode_response).collect(),
        _ => Ok(Vec::new()),
    }
}

/// Loads a `--config` file: a bare config, or an info document (`stream info --json`,
/// `consumer info --json`) whose `config` member is used.
pub fn load_config_file<T: DeserializeOwned + Default>(
    path: &std::path::Path,
) -> Result<T, CliError> {
    let text = std::fs::read_to_string(path)?;
    let value: Value = serde_json::from_str(&text)?;
    let config = match value.get("config") {
        Some(config) => config.clone(),
        None => value,
    };
    decode_user_json(&config.to_string())
}

/// Decodes a JSON document the user wrote (`--config` files, `--mirror '{...}'`) as natscli
/// does: Go's decoding, unknown fields ignored.
pub fn decode_user_json<T: DeserializeOwned + Default>(text: &str) -> Result<T, CliError> {
    decode_request_with(text.as_bytes(), Strictness::Lenient)
        .map_err(|error| CliError::message(error.description))
}

impl JetStream {
    pub fn new(client: async_nats::Client, effective: &Effective) -> JetStream {
        JetStream {
            client,
            prefix: effective.api_prefix.clone(),
            timeout: effective.timeout,
            trace: effective.trace,
        }
    }

    pub fn api_subject(&self, suffix: &str) -> String {
        format!("{}.{}", self.prefix, suffix)
    }

    /// One API round trip; an `error` member in the answer becomes [`CliError::Api`].
    pub async fn request_raw(&self, suffix: &str, body: Bytes) -> Result<Value, CliError> {
        let subject = self.api_subject(suffix);
        if self.trace {
            eprintln!(">>> {subject}\n{}\n", String::from_utf8_lossy(&body));
        }
        let request = async_nats::Request::new()
            .payload(body)
            .timeout(Some(self.timeout));
        let response =
            self.client.send_request(subject, request).await.map_err(
                |error| match CliError::from(error) {
                    CliError::NoResponders => CliError::message(
                        "JetStream not enabled: no responders available for request",
                    ),
                    other => other,
                },
            )?;
        if self.trace {
            eprintln!("<<< {}\n", String::from_utf8_lossy(&response.payload));
        }
        let value: Value = serde_json::from_slice(&response.payload)?;
        if let Some(error) = value.get("error") {
            let error: ApiError = serde_json::from_value(error.clone()).unwrap_or_default();
            return Err(CliError::Api {
                code: error.code,
                err_code: error.err_code,
                description: error.description,
            });
        }
        Ok(value)
    }

    pub async fn request<T: DeserializeOwned + Default>(
        &self,
        suffix: &str,
        body: &impl Serialize,
    ) -> Result<T, CliError> {
        let payload = serde_json::to_vec(body)?;
        let value = self.request_raw(suffix, Bytes::from(payload)).await?;
        decode_response(value)
    }

    async fn request_empty<T: DeserializeOwned + Default>(
        &self,
        suffix: &str,
    ) -> Result<T, CliError> {
        let value = self.request_raw(suffix, Bytes::new()).await?;
        decode_response(value)
    }

    pub async fn account_info(&self) -> Result<AccountInfo, CliError> {
        self.request_empty("INFO").await
    }

    pub async fn stream_info(&self, stream: &str) -> Result<StreamInfo, CliError> {
        self.request_empty(&format!("STREAM.INFO.{stream}")).await
    }

    /// Stream info including the per-subject counts matching `filter`.
    pub async fn stream_info_subjects(
        &self,
        stream: &str,
        filter: &str,
    ) -> Result<StreamInfo, CliError> {
        let mut merged: Option<StreamInfo> = None;
        let mut offset = 0usize;
        loop {
            let body = serde_json::json!({"subjects_filter": filter, "offset": offset});
            let value = self
                .request_raw(
                    &format!("STREAM.INFO.{stream}"),
                    Bytes::from(serde_json::to_vec(&body)?),
                )
                .await?;
            let page = paging(&value);
            let info: StreamInfo = decode_response(value)?;
            let received = info.state.subjects.len();
            match merged.as_mut() {
                None => merged = Some(info),
                Some(existing) => existing.state.subjects.extend(info.state.subjects),
            }
            offset += received;
            if received == 0 || page.total == 0 || offset >= page.total {
                break;
            }
        }
        merged.ok_or_else(|| CliError::message("empty stream info"))
    }

    pub async fn stream_create(&self, config: &StreamConfig) -> Result<StreamInfo, CliError> {
        self.request(&format!("STREAM.CREATE.{}", config.name), config)
            .await
    }

    pub async fn stream_update(&self, config: &StreamConfig) -> Result<StreamInfo, CliError> {
        self.request(&format!("STREAM.UPDATE.{}", config.name), config)
            .await
    }

    pub async fn stream_delete(&self, stream: &str) -> Result<(), CliError> {
        let _: Value = self
            .request_empty(&format!("STREAM.DELETE.{stream}"))
            .await?;
        Ok(())
    }

    pub async fn stream_purge(
        &self,
        stream: &str,
        request: &StreamPurgeRequest,
    ) -> Result<u64, CliError> {
        let value: Value = self
            .request(&format!("STREAM.PURGE.{stream}"), request)
            .await?;
        Ok(value.get("purged").and_then(Value::as_u64).unwrap_or(0))
    }

    pub async fn message_get(
        &self,
        stream: &str,
        request: &MsgGetRequest,
    ) -> Result<StoredMessage, CliError> {
        let value: Value = self
            .request(&format!("STREAM.MSG.GET.{stream}"), request)
            .await?;
        let message = value
            .get("message")
            .cloned()
            .ok_or_else(|| CliError::message("invalid message get response"))?;
        decode_response(message)
    }

    pub async fn message_delete(&self, stream: &str, seq: u64) -> Result<(), CliError> {
        let _: Value = self
            .request(
                &format!("STREAM.MSG.DELETE.{stream}"),
                &serde_json::json!({"seq": seq}),
            )
            .await?;
        Ok(())
    }

    /// Every page of a paged name list (`STREAM.NAMES`, `CONSUMER.NAMES.<stream>`).
    async fn names(
        &self,
        suffix: &str,
        field: &str,
        subject: Option<&str>,
    ) -> Result<Vec<String>, CliError> {
        let mut names = Vec::new();
        loop {
            let mut body = serde_json::json!({"offset": names.len()});
            if let Some(subject) = subject {
                body["subject"] = Value::String(subject.to_string());
            }
            let value = self
                .request_raw(suffix, Bytes::from(serde_json::to_vec(&body)?))
                .await?;
            let page = paging(&value);
            let batch: Vec<String> = value
                .get(field)
                .filter(|v| !v.is_null())
                .cloned()
                .map(serde_json::from_value)
                .transpose()?
                .unwrap_or_default();
            let received = batch.len();
            names.extend(batch);
            if received == 0 || names.len() >= page.total || page.limit == 0 {
                break;
            }
        }
        names.sort();
        Ok(names)
    }

    pub async fn stream_names(&self, subject: Option<&str>) -> Result<Vec<String>, CliError> {
        self.names("STREAM.NAMES", "streams", subject).await
    }

    /// Stream infos via `STREAM.LIST`, plus the names the server reported missing.
    pub async fn stream_list(
        &self,
        subject: Option<&str>,
    ) -> Result<(Vec<StreamInfo>, Vec<String>), CliError> {
        let mut streams: Vec<StreamInfo> = Vec::new();
        let mut missing = Vec::new();
        loop {
            let mut body = serde_json::json!({"offset": streams.len()});
            if let Some(subject) = subject {
                body["subject"] = Value::String(subject.to_string());
            }
            let value = self
                .request_raw("STREAM.LIST", Bytes::from(serde_json::to_vec(&body)?))
                .await?;
            let page = paging(&value);
            let batch: Vec<StreamInfo> = decode_list(value.get("streams"))?;
            if let Some(Value::Array(names)) = value.get("missing") {
                missing.extend(names.iter().filter_map(|n| n.as_str().map(str::to_string)));
            }
            let received = batch.len();
            streams.extend(batch);
            if received == 0 || streams.len() >= page.total {
                break;
            }
        }
        Ok((streams, missing))
    }

    pub async fn consumer_names(&self, stream: &str) -> Result<Vec<String>, CliError> {
        self.names(&format!("CONSUMER.NAMES.{stream}"), "consumers", None)
            .await
    }

    pub async fn consumer_list(&self, stream: &str) -> Result<Vec<ConsumerInfo>, CliError> {
        let mut consumers: Vec<ConsumerInfo> = Vec::new();
        loop {
            let body = serde_json::json!({"offset": consumers.len()});
            let value = self
                .request_raw(
                    &format!("CONSUMER.LIST.{stream}"),
                    Bytes::from(serde_json::to_vec(&body)?),
                )
                .await?;
            let page = paging(&value);
            let batch: Vec<ConsumerInfo> = decode_list(value.get("consumers"))?;
            let received = batch.len();
            consumers.extend(batch);
            if received == 0 || consumers.len() >= page.total {
                break;
            }
        }
        Ok(consumers)
    }

    pub async fn consumer_info(
        &self,
        stream: &str,
        consumer: &str,
    ) -> Result<ConsumerInfo, CliError> {
        self.request_empty(&format!("CONSUMER.INFO.{stream}.{consumer}"))
            .await
    }

    pub async fn consumer_create(
        &self,
        stream: &str,
        config: &ConsumerConfig,
    ) -> Result<ConsumerInfo, CliError> {
        let body = serde_json::json!({"stream_name": stream, "config": config});
        let name = if !config.durable_name.is_empty() {
            config.durable_name.as_str()
        } else {
            config.name.as_str()
        };
        let suffix = if name.is_empty() {
            format!("CONSUMER.CREATE.{stream}")
        } else if !config.filter_subject.is_empty() && !config.filter_subject.contains(['*', '>']) {
            format!("CONSUMER.CREATE.{stream}.{name}.{}", config.filter_subject)
        } else {
            format!("CONSUMER.CREATE.{stream}.{name}")
        };
        self.request(&suffix, &body).await
    }

    pub async fn consumer_delete(&self, stream: &str, consumer: &str) -> Result<(), CliError> {
        let _: Value = self
            .request_empty(&format!("CONSUMER.DELETE.{stream}.{consumer}"))
            .await?;
        Ok(())
    }

    /// The pull subject for a consumer's next messages.
    pub fn next_subject(&self, stream: &str, consumer: &str) -> String {
        self.api_subject(&format!("CONSUMER.MSG.NEXT.{stream}.{consumer}"))
    }
}

/// `total`/`offset`/`limit` of a paged response (zeros when absent).
fn paging(value: &Value) -> Paged {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

/// Decode a base64 field of a stored message (empty when absent or not base64).
pub fn decode_base64(text: &str) -> Vec<u8> {
    jetstream_api::base64::decode(text).unwrap_or_default()
}

/// Parse a NATS header block (`NATS/1.0\r\nKey: value\r\n...`) into ordered pairs.
pub fn parse_header_block(block: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(block);
    text.split("\r\n")
        .skip(1)
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            Some((key.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

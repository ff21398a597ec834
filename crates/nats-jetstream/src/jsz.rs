//! `/jsz`'s per-account part (nats-server's `AccountDetail` with its `stream_detail` and
//! `consumer_detail`), selected by the request's options as nats-server selects it: `acc` names
//! one account; otherwise `accounts` (implied by `streams` or `consumers`) lists them by name,
//! paged by `offset` and `limit`.

use crate::api::Context;
use crate::JetStream;
use serde_json::{json, Value};
use std::sync::Arc;

/// What a `/jsz` read asks for beyond the totals.
#[derive(Clone, Debug, Default)]
pub struct JszDetail {
    /// `acc`: one account (empty: none named).
    pub account: String,
    pub accounts: bool,
    pub streams: bool,
    pub consumers: bool,
    pub config: bool,
    pub offset: usize,
    /// 0: nats-server's default of 1024.
    pub limit: usize,
}

impl JetStream {
    /// The number of accounts JetStream serves (`/jsz` `total`).
    pub fn account_count(&self) -> usize {
        self.engine.accounts.load().len()
    }

    /// The `account_details` of a `/jsz` read; empty when none is asked for.
    pub fn jsz_account_details(&self, detail: &JszDetail) -> Vec<Value> {
        let streams = detail.streams || detail.consumers;
        let list_accounts = detail.accounts || (streams && detail.account.is_empty());
        let accounts = self.engine.accounts.load();
        let named = accounts
            .iter()
            .find(|account| account.registry.account_name == detail.account);
        let chosen: Vec<&Arc<Context>> = match named {
            Some(account) => vec![account],
            None if list_accounts => {
                // The engine keeps its accounts sorted by name.
                let limit = if detail.limit == 0 {
                    1024
                } else {
                    detail.limit
                };
                accounts.iter().skip(detail.offset).take(limit).collect()
            }
            None => Vec::new(),
        };
        chosen
            .into_iter()
            .filter_map(|account| {
                let name = &account.registry.account_name;
                let mut body = self.account_detail(name)?;
                if streams {
                    let details: Vec<Value> =
                        Self::account_stream_details(account, detail.consumers)
                            .into_iter()
                            .map(|(info, consumers)| stream_detail(info, consumers, detail))
                            .collect();
                    if let (Value::Object(fields), false) = (&mut body, details.is_empty()) {
                        fields.insert("stream_detail".into(), Value::Array(details));
                    }
                }
                Some(body)
            })
            .collect()
    }
}

/// One `StreamDetail`: name, created, cluster, config (with `config`), state, consumers (their
/// config with `config` only), mirror and sources.
fn stream_detail(
    info: jetstream_api::StreamInfo,
    consumers: Vec<jetstream_api::ConsumerInfo>,
    detail: &JszDetail,
) -> Value {
    let info = serde_json::to_value(&info).unwrap_or(Value::Null);
    let mut out = serde_json::Map::new();
    out.insert("name".into(), info["config"]["name"].clone());
    out.insert("created".into(), info["created"].clone());
    if let Some(cluster) = info.get("cluster") {
        out.insert("cluster".into(), cluster.clone());
    }
    if detail.config {
        out.insert("config".into(), info["config"].clone());
    }
    out.insert("state".into(), info["state"].clone());
    if !consumers.is_empty() {
        let consumers: Vec<Value> = consumers
            .iter()
            .map(|consumer| {
                let mut value = serde_json::to_value(consumer).unwrap_or(Value::Null);
                if let (Value::Object(fields), false) = (&mut value, detail.config) {
                    fields.remove("config");
                }
                value
            })
            .collect();
        out.insert("consumer_detail".into(), json!(consumers));
    }
    for key in ["mirror", "sources"] {
        if let Some(value) = info.get(key).filter(|value| !value.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    Value::Object(out)
}

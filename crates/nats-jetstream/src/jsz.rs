//! `/jsz`'s per-account part (nats-server's `AccountDetail` with its `stream_detail` and
//! `consumer_detail`), selected by the request's options as nats-server selects it: `acc` names
//! one account; otherwise `accounts` (implied by `streams` or `consumers`) lists them by name,
//! paged by `offset` and `limit`. In a cluster a follower lists its replicas' consumers too (a
//! replicated stream's durables from their committed state), each with its `cluster` block;
//! `raft` adds the Raft groups and the counts of what this server leads.

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
    /// `raft`: each stream's Raft group and its consumers' (`stream_raft_group`,
    /// `consumer_raft_groups`).
    pub raft: bool,
    pub offset: usize,
    /// 0: nats-server's default of 1024.
    pub limit: usize,
}

impl JetStream {
    /// The number of accounts JetStream serves (`/jsz` `total`).
    pub fn account_count(&self) -> usize {
        self.engine.accounts.load().len()
    }

    /// `/jsz`'s `streams_leader` and `consumers_leader` (asked for with `raft`): the streams and
    /// consumers this server leads, over every account. As nats-server counts them, an asset
    /// without a Raft group (an R1 stream, a consumer running alone here) counts as led here;
    /// a replicated stream counts where its group's leader is, and so do its durable consumers
    /// (they ride the stream's group: docs/parity.md, "replicated consumers").
    pub fn jsz_leader_counts(&self) -> (usize, usize) {
        let mut streams = 0;
        let mut consumers = 0;
        for account in self.engine.accounts.load().iter() {
            let server = &account.server_name;
            let leads = |cluster: &Option<jetstream_api::ClusterInfo>| {
                cluster
                    .as_ref()
                    .is_none_or(|cluster| &cluster.leader == server)
            };
            for (info, infos) in Self::account_stream_details(account, true) {
                if leads(&info.cluster) {
                    streams += 1;
                }
                consumers += infos
                    .iter()
                    .filter(|consumer| leads(&consumer.cluster))
                    .count();
            }
        }
        (streams, consumers)
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
/// config with `config` only), mirror and sources; with `raft`, the stream's Raft group and its
/// consumers' (a durable of a replicated stream is in its stream's group; a consumer running
/// alone here, in none, is left out as nats-server leaves out one without a group).
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
    let group = info["cluster"]["raft_group"].as_str().unwrap_or_default();
    if detail.raft && !group.is_empty() {
        out.insert("stream_raft_group".into(), json!(group));
        let groups: Vec<Value> = consumers
            .iter()
            .filter_map(|consumer| {
                let group = consumer.cluster.as_ref()?.raft_group.as_str();
                (!group.is_empty()).then(|| json!({"name": consumer.name, "raft_group": group}))
            })
            .collect();
        if !groups.is_empty() {
            out.insert("consumer_raft_groups".into(), json!(groups));
        }
    }
    Value::Object(out)
}

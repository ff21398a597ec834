//! `/jsz`: JetStream's usage, config and limits (nats-server's disabled form without
//! JetStream). The options are read and checked as nats-server does (`accounts`, `streams`,
//! `consumers`, `config`, `leader-only`, `raft` booleans, `acc`, `offset`, `limit`); the
//! per-account details (`account_details` with `stream_detail` and `consumer_detail`) come from
//! nats-jetstream's `jsz.rs`; with `raft`, `streams_leader` and `consumers_leader` too.

use super::format::rfc3339;
use super::query::Query;
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Value};
use time::OffsetDateTime;

/// The options of one `/jsz` read.
#[derive(Clone, Debug, Default)]
pub struct JszOptions {
    pub account: String,
    pub accounts: bool,
    pub streams: bool,
    pub consumers: bool,
    pub config: bool,
    pub leader_only: bool,
    pub raft: bool,
    pub offset: i64,
    pub limit: i64,
}

impl JszOptions {
    pub fn from_query(query: &Query) -> Result<JszOptions, Refusal> {
        Ok(JszOptions {
            account: query.text("acc").to_string(),
            accounts: query.boolean("accounts")?,
            streams: query.boolean("streams")?,
            consumers: query.boolean("consumers")?,
            config: query.boolean("config")?,
            leader_only: query.boolean("leader-only")?,
            raft: query.boolean("raft")?,
            offset: query.int("offset")?,
            limit: query.int("limit")?,
        })
    }
}

impl JszOptions {
    /// The options of a `$SYS.REQ.SERVER.*.JSZ` request body (nats-server's `JSzOptions` JSON:
    /// `account`, `accounts`, `streams`, `consumer`, `config`, `leader_only`, `raft`,
    /// `offset`, `limit`); what is absent or of another type is off.
    pub fn from_json(body: &serde_json::Map<String, Value>) -> JszOptions {
        let flag = |key: &str| body.get(key).and_then(Value::as_bool).unwrap_or(false);
        let number = |key: &str| body.get(key).and_then(Value::as_i64).unwrap_or(0);
        JszOptions {
            account: body
                .get("account")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            accounts: flag("accounts"),
            streams: flag("streams"),
            consumers: flag("consumer"),
            config: flag("config"),
            leader_only: flag("leader_only"),
            raft: flag("raft"),
            offset: number("offset"),
            limit: number("limit"),
        }
    }
}

pub fn jsz(server: &Server, options: &JszOptions) -> Value {
    match server.running_jetstream() {
        Some(jetstream) => {
            let mut answer = jetstream.jsz();
            if let Some(object) = answer.as_object_mut() {
                if let Some(meta) = server.meta.get() {
                    object.insert("meta_cluster".into(), meta.cluster_info());
                }
                // nats-server counts them with `raft` only, and leaves out a zero.
                if options.raft {
                    let (streams, consumers) = jetstream.jsz_leader_counts();
                    for (key, count) in
                        [("streams_leader", streams), ("consumers_leader", consumers)]
                    {
                        if count > 0 {
                            object.insert(key.into(), json!(count));
                        }
                    }
                }
            }
            let details = jetstream.jsz_account_details(&nats_jetstream::JszDetail {
                account: options.account.clone(),
                accounts: options.accounts,
                streams: options.streams,
                consumers: options.consumers,
                config: options.config,
                raft: options.raft,
                offset: usize::try_from(options.offset).unwrap_or(0),
                limit: usize::try_from(options.limit).unwrap_or(0),
            });
            if let (false, Some(object)) = (details.is_empty(), answer.as_object_mut()) {
                object.insert("account_details".into(), Value::Array(details));
            }
            answer
        }
        None => json!({
            "memory": 0,
            "storage": 0,
            "reserved_memory": 0,
            "reserved_storage": 0,
            "accounts": 0,
            "ha_assets": 0,
            "api": {"level": 0, "total": 0, "errors": 0},
            "server_id": server.server_id,
            "now": rfc3339(OffsetDateTime::now_utc()),
            "disabled": true,
            "config": {"max_memory": 0, "max_storage": 0},
            "streams": 0,
            "consumers": 0,
            "messages": 0,
            "bytes": 0,
            "total": 0,
        }),
    }
}

//! `/jsz`: JetStream's usage, config and limits (nats-server's disabled form without
//! JetStream). The options are read and checked as nats-server does (`accounts`, `streams`,
//! `consumers`, `config`, `leader-only`, `raft` booleans, `acc`, `offset`, `limit`); per-account
//! details are not produced yet (see docs/parity.md).

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

pub fn jsz(server: &Server, _options: &JszOptions) -> Value {
    match server.jetstream.get() {
        Some(jetstream) => {
            let mut answer = jetstream.jsz();
            if let (Some(meta), Some(object)) = (server.meta.get(), answer.as_object_mut()) {
                object.insert("meta_cluster".into(), meta.cluster_info());
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

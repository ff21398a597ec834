//! `/accountz` and `/accstatz`: the accounts as nats-server shows them without configured
//! accounts (`$G` and the system account `$SYS`). Minimal until per-account structures exist:
//! `$G` carries the server's connections, subscriptions and message totals.

use super::format::rfc3339;
use super::query::Query;
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use time::OffsetDateTime;

const GLOBAL_ACCOUNT: &str = "$G";
const SYSTEM_ACCOUNT: &str = "$SYS";

/// The options of one `/accountz` read.
#[derive(Clone, Debug, Default)]
pub struct AccountzOptions {
    pub account: String,
}

impl AccountzOptions {
    pub fn from_query(query: &Query) -> Result<AccountzOptions, Refusal> {
        Ok(AccountzOptions {
            account: query.text("acc").to_string(),
        })
    }
}

pub fn accountz(server: &Server, options: &AccountzOptions) -> Result<Value, Refusal> {
    let now = OffsetDateTime::now_utc();
    let mut body = Map::new();
    body.insert("server_id".into(), json!(server.server_id));
    body.insert("now".into(), json!(rfc3339(now)));
    body.insert("system_account".into(), json!(SYSTEM_ACCOUNT));
    if options.account.is_empty() {
        body.insert("accounts".into(), json!([GLOBAL_ACCOUNT, SYSTEM_ACCOUNT]));
        return Ok(Value::Object(body));
    }
    let global = match options.account.as_str() {
        GLOBAL_ACCOUNT => true,
        SYSTEM_ACCOUNT => false,
        other => {
            return Err(Refusal::bad_request(format!(
                "Account {other} does not exist"
            )))
        }
    };
    let (connections, subscriptions) = if global {
        (
            server.clients.lock().len(),
            server.accounts.subscription_count(),
        )
    } else {
        (0, 0)
    };
    let jetstream = global && server.jetstream.get().is_some();
    let mut detail = json!({
        "account_name": options.account,
        "update_time": rfc3339(server.start_time),
        "expired": false,
        "complete": true,
        "jetstream_enabled": jetstream,
        "leafnode_connections": 0,
        "client_connections": connections,
        "subscriptions": subscriptions,
        "name_tag": options.account,
    });
    if let Some(fields) = detail.as_object_mut() {
        if global {
            fields.insert("sublist_stats".into(), super::subsz::sublist_stats(server));
        } else {
            fields.insert("is_system".into(), json!(true));
        }
    }
    body.insert("account_detail".into(), detail);
    Ok(Value::Object(body))
}

/// The options of one `/accstatz` read.
#[derive(Clone, Debug, Default)]
pub struct AccstatzOptions {
    /// `unused`: also the accounts without connections.
    pub include_unused: bool,
    pub accounts: Vec<String>,
}

impl AccstatzOptions {
    pub fn from_query(query: &Query) -> Result<AccstatzOptions, Refusal> {
        let accounts = query
            .text("accounts")
            .split(',')
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect();
        Ok(AccstatzOptions {
            include_unused: query.boolean("unused")?,
            accounts,
        })
    }
}

pub fn accstatz(server: &Server, options: &AccstatzOptions) -> Value {
    let now = OffsetDateTime::now_utc();
    let connections = server.clients.lock().len();
    let (in_msgs, in_bytes, out_msgs, out_bytes) = server.message_totals();
    let mut statz = Vec::new();
    for (name, global) in [(GLOBAL_ACCOUNT, true), (SYSTEM_ACCOUNT, false)] {
        if !options.accounts.is_empty() && !options.accounts.iter().any(|wanted| wanted == name) {
            continue;
        }
        let account_connections = if global { connections } else { 0 };
        if account_connections == 0 && !options.include_unused {
            continue;
        }
        let flow = |msgs: u64, bytes: u64| {
            json!({
                "msgs": msgs,
                "bytes": bytes,
                "gateways": {"msgs": 0, "bytes": 0},
                "routes": {"msgs": 0, "bytes": 0},
                "leafs": {"msgs": 0, "bytes": 0},
            })
        };
        let (sent, received) = if global {
            (flow(out_msgs, out_bytes), flow(in_msgs, in_bytes))
        } else {
            (flow(0, 0), flow(0, 0))
        };
        statz.push(json!({
            "acc": name,
            "name": name,
            "conns": account_connections,
            "leafnodes": 0,
            "total_conns": account_connections,
            "num_subscriptions": if global { server.accounts.subscription_count() } else { 0 },
            "sent": sent,
            "received": received,
            "slow_consumers": if global {
                server.stats.slow_consumers.load(Ordering::Relaxed)
            } else {
                0
            },
        }));
    }
    json!({
        "server_id": server.server_id,
        "now": rfc3339(now),
        "account_statz": statz,
    })
}

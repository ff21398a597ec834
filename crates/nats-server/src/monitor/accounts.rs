//! `/accountz` and `/accstatz`, and the per-account builders the system account's
//! `$SYS.REQ.ACCOUNT.<account>.INFO` / `STATZ` / `CONNS` answers share with them: one account's
//! info (connections, subscriptions, imports, exports, sublist counters) and its statistics
//! (connections and message totals of its connected clients).

use super::format::rfc3339;
use super::query::Query;
use super::Refusal;
use crate::accounts::{Account, GLOBAL_ACCOUNT, SYSTEM_IMPORTS};
use crate::client::ClientShared;
use crate::config::ResponseType;
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use time::OffsetDateTime;

/// The account a client belongs to (`$G` until it has one).
pub fn account_name(client: &ClientShared) -> &str {
    client
        .account()
        .map_or(GLOBAL_ACCOUNT, |account| &account.name)
}

/// The connected clients of one account.
pub fn account_clients(server: &Server, name: &str) -> Vec<Arc<ClientShared>> {
    server
        .clients
        .lock()
        .values()
        .filter(|client| account_name(client) == name)
        .cloned()
        .collect()
}

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
    body.insert(
        "system_account".into(),
        json!(server.accounts.system().name.as_ref()),
    );
    if options.account.is_empty() {
        let mut names: Vec<String> = server
            .accounts
            .iter()
            .map(|account| account.name.to_string())
            .collect();
        names.sort_unstable();
        body.insert("accounts".into(), json!(names));
        return Ok(Value::Object(body));
    }
    let detail = account_info(server, &options.account).map_err(Refusal::bad_request)?;
    body.insert("account_detail".into(), detail);
    Ok(Value::Object(body))
}

/// One account as nats-server's `AccountInfo` shows it (`/accountz?acc=`, the `INFO` request),
/// or its error for an unknown account.
pub fn account_info(server: &Server, name: &str) -> Result<Value, String> {
    let Some(account) = server.accounts.lookup(name) else {
        return Err(format!("Account {name} does not exist"));
    };
    let account = &account;
    let system = Arc::ptr_eq(account, server.accounts.system());
    let jetstream = server
        .jetstream
        .get()
        .is_some_and(|jetstream| jetstream.serves(name));
    let mut info = Map::new();
    info.insert("account_name".into(), json!(name));
    info.insert("update_time".into(), json!(rfc3339(server.start_time)));
    if system {
        info.insert("is_system".into(), json!(true));
    }
    info.insert("expired".into(), json!(false));
    info.insert("complete".into(), json!(true));
    info.insert("jetstream_enabled".into(), json!(jetstream));
    info.insert("leafnode_connections".into(), json!(0));
    info.insert(
        "client_connections".into(),
        json!(account_clients(server, name).len()),
    );
    info.insert(
        "subscriptions".into(),
        json!(account.router.subscription_count()),
    );
    let exports = exports(server, name, system);
    if !exports.is_empty() {
        info.insert("exports".into(), json!(exports));
    }
    let imports = imports(server, account, system);
    if !imports.is_empty() {
        info.insert("imports".into(), json!(imports));
    }
    info.insert("name_tag".into(), json!(name));
    info.insert(
        "sublist_stats".into(),
        super::subsz::go_statistics(crate::accounts::sublist_statistics(std::iter::once(
            account,
        ))),
    );
    Ok(Value::Object(info))
}

fn response_type_text(response_type: ResponseType) -> &'static str {
    match response_type {
        ResponseType::Singleton => "Singleton",
        ResponseType::Stream => "Streamed",
        ResponseType::Chunked => "Chunked",
    }
}

/// The account's exports as `AccountInfo` lists them: the configured ones, and for the system
/// account the services every other account imports.
fn exports(server: &Server, name: &str, system: bool) -> Vec<Value> {
    let mut exports = Vec::new();
    if system {
        for subject in ["$SYS.REQ.ACCOUNT.*.CONNZ", "$SYS.REQ.ACCOUNT.*.STATZ"] {
            exports.push(json!({
                "subject": subject,
                "type": "service",
                "response_type": "Streamed",
            }));
        }
    }
    let configured = server
        .options
        .accounts
        .iter()
        .filter(|account| account.name == name)
        .flat_map(|account| account.exports.iter());
    for export in configured {
        let mut entry = Map::new();
        entry.insert("subject".into(), json!(export.subject));
        match export.service {
            Some(response_type) => {
                entry.insert("type".into(), json!("service"));
                entry.insert(
                    "response_type".into(),
                    json!(response_type_text(response_type)),
                );
            }
            None => {
                entry.insert("type".into(), json!("stream"));
            }
        }
        if let Some(approved) = export.accounts.as_ref().filter(|list| !list.is_empty()) {
            entry.insert("approved_accounts".into(), json!(approved));
        }
        exports.push(Value::Object(entry));
    }
    exports
}

/// The account's imports as `AccountInfo` lists them: the configured ones and, outside the
/// system account, the system's CONNZ and STATZ services.
fn imports(server: &Server, account: &Account, system: bool) -> Vec<Value> {
    let mut imports = Vec::new();
    let configured = server
        .options
        .accounts
        .iter()
        .filter(|config| config.name == *account.name)
        .flat_map(|config| config.imports.iter());
    for import in configured {
        let mut entry = Map::new();
        entry.insert("subject".into(), json!(import.subject));
        entry.insert("account".into(), json!(import.account));
        if import.service {
            entry.insert("to".into(), json!(import.to));
        }
        entry.insert("local_subject".into(), json!(import.to));
        entry.insert(
            "type".into(),
            json!(if import.service { "service" } else { "stream" }),
        );
        entry.insert("invalid".into(), json!(false));
        entry.insert("share".into(), json!(false));
        entry.insert("tracking".into(), json!(false));
        imports.push(Value::Object(entry));
    }
    if !system {
        let system_name = server.accounts.system().name.clone();
        for (local, kind) in SYSTEM_IMPORTS {
            imports.push(json!({
                "subject": format!("$SYS.REQ.ACCOUNT.{}.{kind}", account.name),
                "account": system_name.as_ref(),
                "to": local,
                "local_subject": local,
                "type": "service",
                "invalid": false,
                "share": false,
                "tracking": false,
            }));
        }
        // rnats answers `$SYS.REQ.USER.INFO` in every account (`security::user_info`).
        imports.push(json!({
            "subject": format!("$SYS.REQ.USER.{}.INFO", account.name),
            "account": system_name.as_ref(),
            "to": "$SYS.REQ.USER.INFO",
            "local_subject": "$SYS.REQ.USER.INFO",
            "type": "service",
            "invalid": false,
            "share": true,
            "tracking": false,
        }));
    }
    imports
}

/// One account's statistics as nats-server's `AccountStat` (`/accstatz`, the `STATZ` and
/// `CONNS` answers): its connections and what they sent and received (rnats sums the open
/// connections' counters; docs/parity.md).
pub fn account_stat(server: &Server, account: &Account) -> (usize, Map<String, Value>) {
    let clients = account_clients(server, &account.name);
    let (mut in_msgs, mut in_bytes, mut out_msgs, mut out_bytes) = (0, 0, 0, 0);
    for client in &clients {
        let counters = &client.counters;
        in_msgs += counters.in_msgs.load(Ordering::Relaxed);
        in_bytes += counters.in_bytes.load(Ordering::Relaxed);
        out_msgs += counters.out_msgs.load(Ordering::Relaxed);
        out_bytes += counters.out_bytes.load(Ordering::Relaxed);
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
    let mut stat = Map::new();
    stat.insert("acc".into(), json!(account.name.as_ref()));
    stat.insert("name".into(), json!(account.name.as_ref()));
    stat.insert("conns".into(), json!(clients.len()));
    stat.insert("leafnodes".into(), json!(0));
    stat.insert("total_conns".into(), json!(clients.len()));
    stat.insert(
        "num_subscriptions".into(),
        json!(account.router.subscription_count()),
    );
    stat.insert("sent".into(), flow(out_msgs, out_bytes));
    stat.insert("received".into(), flow(in_msgs, in_bytes));
    stat.insert("slow_consumers".into(), json!(0));
    (clients.len(), stat)
}

/// The options of one `/accstatz` read (or an account `STATZ` request).
#[derive(Clone, Debug, Default)]
pub struct AccstatzOptions {
    /// `unused` (`include_unused`): also the accounts without connections.
    pub include_unused: bool,
    /// Only these accounts (none: every account).
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

/// The statistics of the accounts asked for, by name.
pub fn account_stats(server: &Server, options: &AccstatzOptions) -> Vec<Value> {
    let mut accounts: Vec<Arc<Account>> = if options.accounts.is_empty() {
        server.accounts.iter().collect()
    } else {
        options
            .accounts
            .iter()
            .filter_map(|name| server.accounts.lookup(name))
            .collect()
    };
    accounts.sort_by(|left, right| left.name.cmp(&right.name));
    accounts
        .into_iter()
        .filter_map(|account| {
            let (connections, stat) = account_stat(server, &account);
            (connections > 0 || options.include_unused).then_some(Value::Object(stat))
        })
        .collect()
}

pub fn accstatz(server: &Server, options: &AccstatzOptions) -> Value {
    json!({
        "server_id": server.server_id,
        "now": rfc3339(OffsetDateTime::now_utc()),
        "account_statz": account_stats(server, options),
    })
}

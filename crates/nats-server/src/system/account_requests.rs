//! `$SYS.REQ.ACCOUNT.<account>.<kind>`: one account's monitoring answers in the system account,
//! as nats-server's events.go serves them, for kind CONNZ, SUBSZ, JSZ, INFO, STATZ, LEAFZ
//! (`{"server", "data"}` or `{"server", "error"}`) and CONNS (the `account_connections`
//! advisory); and `$SYS.REQ.ACCOUNT.PING.STATZ`, every account's STATZ. Every other account
//! reaches its own CONNZ and STATZ through the system imports `accounts/mod.rs` enters.
//!
//! The JSON comes from the monitoring producers (`crate::monitor`); this file reads the request
//! (the account from the subject, options from the JSON body) and decides whether to answer:
//! nats-server stays silent for a STATZ or CONNS of an account without connections and for a
//! request whose filters name another server.

use super::{filters_match, publish_bytes, request_options, server_object};
use crate::monitor::accounts::{account_stat, account_stats, AccstatzOptions};
use crate::server::Server;
use bytes::Bytes;
use nats_jetstream::Message;
use serde_json::{json, Map, Value};

/// The kinds served under `$SYS.REQ.ACCOUNT.*.<kind>`.
pub(super) const KINDS: [&str; 7] = ["CONNZ", "SUBSZ", "JSZ", "INFO", "STATZ", "LEAFZ", "CONNS"];

/// Every account's STATZ.
pub(super) const PING_STATZ: &str = "$SYS.REQ.ACCOUNT.PING.STATZ";

/// Which subscription a request came in on (`$SYS.REQ.ACCOUNT.PING.STATZ` matches both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// `$SYS.REQ.ACCOUNT.*.<kind>`.
    Account,
    /// `$SYS.REQ.ACCOUNT.PING.STATZ`.
    PingStatz,
}

/// What the request asks: its account and kind, from a five-token subject.
fn account_and_kind(subject: &str) -> Option<(&str, &str)> {
    let mut tokens = subject.split('.');
    let (Some("$SYS"), Some("REQ"), Some("ACCOUNT"), Some(account), Some(kind), None) = (
        tokens.next(),
        tokens.next(),
        tokens.next(),
        tokens.next(),
        tokens.next(),
        tokens.next(),
    ) else {
        return None;
    };
    Some((account, kind))
}

/// A JSON option as a query value.
fn query_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The request's JSON options as the monitoring endpoint's query pairs: `renames` maps the JSON
/// names nats-server's `*Options` types use to the query's; `true` flags become `1`.
fn query_pairs(options: &Map<String, Value>, renames: &[(&str, &str)]) -> Vec<(String, String)> {
    options
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| {
            let name = renames
                .iter()
                .find(|(json_name, _)| json_name == key)
                .map_or(key.as_str(), |(_, query_name)| query_name);
            let text = match value {
                Value::Bool(true) => "1".to_string(),
                Value::Bool(false) => "0".to_string(),
                other => query_text(other),
            };
            (name.to_string(), text)
        })
        .collect()
}

/// nats-server's `ConnzOptions` JSON names as `/connz` query pairs.
pub(super) fn connz_pairs(options: &Map<String, Value>) -> Vec<(String, String)> {
    let mut pairs = query_pairs(
        options,
        &[("subscriptions", "subs"), ("auth", "auth"), ("acc", "acc")],
    );
    let detail = options
        .get("subscriptions_detail")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    pairs.retain(|(name, _)| name != "subscriptions_detail");
    // `state` is nats-server's `ConnState` number: 0 open, 1 closed, 2 all.
    for (name, value) in pairs.iter_mut() {
        if name == "state" {
            let text = match value.as_str() {
                "0" => "open",
                "1" => "closed",
                "2" => "all",
                _ => continue,
            };
            *value = text.to_string();
        }
    }
    if detail {
        pairs.retain(|(name, _)| name != "subs");
        pairs.push(("subs".into(), "detail".into()));
    }
    pairs
}

/// nats-server's `SubszOptions` JSON names as `/subsz` query pairs.
pub(super) fn subsz_pairs(options: &Map<String, Value>) -> Vec<(String, String)> {
    query_pairs(options, &[("subscriptions", "subs"), ("account", "acc")])
}

/// Answer one request that came in on `source`.
pub(super) fn answer(server: &Server, message: &Message, source: Source) {
    let Some(reply) = &message.reply else {
        return;
    };
    let Ok(subject) = std::str::from_utf8(&message.subject) else {
        return;
    };
    let Some((account, kind)) = account_and_kind(subject) else {
        return;
    };
    if kind == "CONNS" {
        answer_conns(server, reply, account, &message.payload);
        return;
    }
    // Options: an empty body is none; one Go cannot read into the kind's options is a 400.
    let type_name = match kind {
        "CONNZ" => "ConnzEventOptions",
        "SUBSZ" => "SubszEventOptions",
        "JSZ" => "JszEventOptions",
        "INFO" => "AccInfoEventOptions",
        "LEAFZ" => "LeafzEventOptions",
        _ => "AccountStatzEventOptions",
    };
    let options = match request_options(&message.payload, type_name) {
        Ok(options) => options,
        Err(text) => {
            let payload = json!({
                "server": server_object(server),
                "error": {"code": 400, "description": text},
            });
            publish_bytes(server, reply, payload);
            return;
        }
    };
    if !filters_match(server, &options) {
        return;
    }
    let data = match (source, kind) {
        (Source::PingStatz, _) => {
            let stats = account_stats(server, &statz_options(&options, Vec::new()));
            statz_data(server, stats, &options)
        }
        // The PING request also matches `$SYS.REQ.ACCOUNT.*.STATZ`: its own subscription answers.
        (Source::Account, "STATZ") if account == "PING" => None,
        (Source::Account, "STATZ") => {
            let stats = account_stats(server, &statz_options(&options, vec![account.to_string()]));
            statz_data(server, stats, &options)
        }
        (Source::Account, "CONNZ") => {
            let mut pairs = connz_pairs(&options);
            pairs.retain(|(name, _)| name != "acc");
            pairs.push(("acc".into(), account.to_string()));
            Some(Ok(crate::monitor::connz(server, &pairs)))
        }
        (Source::Account, "SUBSZ") => {
            let mut pairs = subsz_pairs(&options);
            pairs.retain(|(name, _)| name != "acc" && name != "subs");
            pairs.push(("acc".into(), account.to_string()));
            pairs.push(("subs".into(), "1".into()));
            Some(Ok(crate::monitor::subsz(server, &pairs)))
        }
        (Source::Account, "JSZ") => Some(account_jsz(server, account)),
        (Source::Account, "INFO") => Some(crate::monitor::accounts::account_info(server, account)),
        (Source::Account, "LEAFZ") => Some(Ok(crate::monitor::topology::leafz(
            server,
            &crate::monitor::topology::LeafzOptions {
                account: account.to_string(),
                ..Default::default()
            },
        ))),
        _ => None,
    };
    let Some(data) = data else {
        return;
    };
    let payload = match data {
        Ok(data) => json!({"server": server_object(server), "data": data}),
        Err(description) => json!({
            "server": server_object(server),
            "data": null,
            "error": {"code": 500, "description": description},
        }),
    };
    publish_bytes(server, reply, payload);
}

/// nats-server's `AccountStatzOptions` (`accounts`, `include_unused`); `forced` replaces the
/// accounts when the subject names one.
fn statz_options(options: &Map<String, Value>, forced: Vec<String>) -> AccstatzOptions {
    let accounts = if forced.is_empty() {
        options
            .get("accounts")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        forced
    };
    AccstatzOptions {
        include_unused: include_unused(options),
        accounts,
    }
}

fn include_unused(options: &Map<String, Value>) -> bool {
    options
        .get("include_unused")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A STATZ body, or nothing when no account is left to show (unless `include_unused`).
fn statz_data(
    server: &Server,
    stats: Vec<Value>,
    options: &Map<String, Value>,
) -> Option<Result<Value, String>> {
    if stats.is_empty() && !include_unused(options) {
        return None;
    }
    Some(Ok(json!({
        "server_id": server.server_id,
        "now": crate::monitor::rfc3339(time::OffsetDateTime::now_utc()),
        "account_statz": stats,
    })))
}

/// One account's JetStream usage, or nats-server's error text.
fn account_jsz(server: &Server, account: &str) -> Result<Value, String> {
    let Some(jetstream) = server.jetstream.get() else {
        return Err("jetstream not enabled".into());
    };
    if server.accounts.lookup(account).is_none() {
        return Err(format!("account \"{account}\" not found"));
    }
    jetstream
        .account_detail(account)
        .ok_or_else(|| format!("account \"{account}\" not jetstream enabled"))
}

/// `CONNS`: the account's `account_connections` advisory to the requester, when it has local
/// connections (a body, if any, must name the same account).
fn answer_conns(server: &Server, reply: &Bytes, account: &str, payload: &[u8]) {
    if !payload.is_empty() {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        let named = request
            .get("acc")
            .and_then(Value::as_str)
            .unwrap_or(account);
        if named != account {
            return;
        }
    }
    let Some(account) = server.accounts.lookup(account) else {
        return;
    };
    let (connections, stat) = account_stat(server, &account);
    if connections == 0 {
        return;
    }
    let now = time::OffsetDateTime::now_utc();
    let mut advisory = Map::new();
    advisory.insert(
        "type".into(),
        json!("io.nats.server.advisory.v1.account_connections"),
    );
    advisory.insert("id".into(), json!(crate::security::identity::new_nuid()));
    advisory.insert(
        "timestamp".into(),
        json!(go_compat::time_text::rfc3339_nano(now)),
    );
    advisory.insert("server".into(), server_object(server));
    advisory.extend(stat);
    publish_bytes(server, reply, Value::Object(advisory));
}

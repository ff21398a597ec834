//! `/connz`: the client connections, with nats-server's options (`sort`, `auth`, `subs`
//! (`detail`), `offset`, `limit`, `cid`, `state`, `user`, `acc`, `filter_subject`) and field
//! names. Open connections are read at the request (`record.rs`), closed ones come from the
//! ring `closed.rs` keeps; `state` picks either or both.

use super::format::{rfc3339, since};
use super::query::Query;
pub use super::query::{SubscriptionsShown, DEFAULT_LIMIT};
use super::record::{ConnectionRecord, SubscriptionRecord};
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::cmp::Reverse;
use std::sync::Arc;
use time::OffsetDateTime;

/// Which connections: nats-server's `state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConnectionState {
    #[default]
    Open,
    Closed,
    Any,
    /// A `$SYS` request's `state` number that nats-server's `ConnState` does not name (not
    /// 0-2): neither open nor closed connections, an empty page.
    Unnamed,
}

impl ConnectionState {
    fn includes_open(self) -> bool {
        matches!(self, ConnectionState::Open | ConnectionState::Any)
    }

    fn includes_closed(self) -> bool {
        matches!(self, ConnectionState::Closed | ConnectionState::Any)
    }
}

/// nats-server's `sort` keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    #[default]
    Cid,
    Start,
    Subscriptions,
    Pending,
    MessagesTo,
    MessagesFrom,
    BytesTo,
    BytesFrom,
    LastActivity,
    Idle,
    Uptime,
    RoundTrip,
    Stop,
    Reason,
}

impl SortKey {
    fn parse(text: &str) -> Option<SortKey> {
        Some(match text {
            "" | "cid" => SortKey::Cid,
            "start" => SortKey::Start,
            "subs" => SortKey::Subscriptions,
            "pending" => SortKey::Pending,
            "msgs_to" => SortKey::MessagesTo,
            "msgs_from" => SortKey::MessagesFrom,
            "bytes_to" => SortKey::BytesTo,
            "bytes_from" => SortKey::BytesFrom,
            "last" => SortKey::LastActivity,
            "idle" => SortKey::Idle,
            "uptime" => SortKey::Uptime,
            "rtt" => SortKey::RoundTrip,
            "stop" => SortKey::Stop,
            "reason" => SortKey::Reason,
            _ => return None,
        })
    }

    fn text(self) -> &'static str {
        match self {
            SortKey::Cid => "cid",
            SortKey::Start => "start",
            SortKey::Subscriptions => "subs",
            SortKey::Pending => "pending",
            SortKey::MessagesTo => "msgs_to",
            SortKey::MessagesFrom => "msgs_from",
            SortKey::BytesTo => "bytes_to",
            SortKey::BytesFrom => "bytes_from",
            SortKey::LastActivity => "last",
            SortKey::Idle => "idle",
            SortKey::Uptime => "uptime",
            SortKey::RoundTrip => "rtt",
            SortKey::Stop => "stop",
            SortKey::Reason => "reason",
        }
    }
}

/// The options of one `/connz` read (from a query or, later, a `$SYS` request).
#[derive(Clone, Debug, Default)]
pub struct ConnzOptions {
    pub sort: SortKey,
    pub username: bool,
    pub subscriptions: SubscriptionsShown,
    pub offset: usize,
    pub limit: usize,
    pub cid: u64,
    pub state: ConnectionState,
    pub user: String,
    pub account: String,
    pub filter_subject: String,
}

impl ConnzOptions {
    /// The options of a request without a query: the first page of open connections by cid.
    pub fn default_page() -> ConnzOptions {
        ConnzOptions {
            limit: DEFAULT_LIMIT,
            ..ConnzOptions::default()
        }
    }

    pub fn from_query(query: &Query) -> Result<ConnzOptions, Refusal> {
        let sort_text = query.text("sort");
        let sort = SortKey::parse(sort_text)
            .ok_or_else(|| Refusal::bad_request(format!("invalid sorting option: {sort_text}")))?;
        let username = query.boolean("auth")?;
        let subscriptions = query.subscriptions_shown()?;
        let (offset, mut limit) = query.page()?;
        let cid = query.uint64("cid")?;
        // One connection at most (nats-server's answer says `limit: 1`).
        if cid > 0 {
            limit = 1;
        }
        let state_text = query.text("state");
        let state = match state_text.to_ascii_lowercase().as_str() {
            "" | "open" => ConnectionState::Open,
            "closed" => ConnectionState::Closed,
            "any" | "all" => ConnectionState::Any,
            _ => {
                return Err(Refusal::bad_request(format!(
                    "Error decoding state for {state_text}"
                )))
            }
        };
        if matches!(sort, SortKey::Stop | SortKey::Reason) && state != ConnectionState::Closed {
            return Err(Refusal::bad_request(format!(
                "sort by {} only valid on closed connections",
                sort.text()
            )));
        }
        Ok(ConnzOptions {
            sort,
            username,
            subscriptions,
            offset,
            limit,
            cid,
            state,
            user: query.text("user").to_string(),
            account: query.text("acc").to_string(),
            filter_subject: query.text("filter_subject").to_string(),
        })
    }
}

pub fn connz(server: &Server, options: &ConnzOptions) -> Value {
    let now = OffsetDateTime::now_utc();
    // nats-server answers a filter on an account it does not know with an empty page and
    // neither its id nor a connection list.
    if !options.account.is_empty() && server.accounts.lookup(&options.account).is_none() {
        return json!({
            "server_id": "",
            "now": rfc3339(now),
            "num_connections": 0,
            "total": 0,
            "offset": options.offset,
            "limit": options.limit,
            "connections": null,
        });
    }
    // nats-server's `total` counts the connections of the state and account asked for, before
    // the other filters.
    let mut total = 0;
    let mut records: Vec<Arc<ConnectionRecord>> = Vec::new();
    if options.state.includes_open() {
        let with_subscriptions =
            options.subscriptions != SubscriptionsShown::None || !options.filter_subject.is_empty();
        let clients: Vec<_> = server
            .clients
            .lock()
            .values()
            .filter(|client| {
                options.account.is_empty()
                    || super::accounts::account_name(client) == options.account
            })
            .cloned()
            .collect();
        total += clients.len();
        records.extend(
            clients
                .iter()
                .filter(|client| options.cid == 0 || client.id == options.cid)
                .map(|client| ConnectionRecord::open(client, with_subscriptions))
                .filter(|record| {
                    options.filter_subject.is_empty()
                        || record.subscriptions.iter().any(|subscription| {
                            // nats-server's SubjectsCollide: either way round.
                            nats_subject::subjects_overlap(
                                &subscription.subject,
                                &options.filter_subject,
                            )
                        })
                })
                .map(Arc::new),
        );
    }
    if options.state.includes_closed() {
        // nats-server keeps no account name for a closed connection of `$G`, so `acc=$G`
        // finds none of them.
        let closed: Vec<_> = server
            .closed_connections
            .list()
            .into_iter()
            .filter(|record| {
                options.account.is_empty()
                    || (record.account != crate::accounts::GLOBAL_ACCOUNT
                        && record.account == options.account)
            })
            .collect();
        total += closed.len();
        records.extend(
            closed
                .into_iter()
                .filter(|record| options.cid == 0 || record.cid == options.cid),
        );
    }
    records.retain(|record| {
        options.user.is_empty() || record.meta.user.as_deref() == Some(&options.user)
    });
    sort(&mut records, options.sort, now);
    let connections: Vec<Value> = records
        .iter()
        .skip(options.offset)
        .take(options.limit)
        .map(|record| connection_info(record, options, now))
        .collect();
    json!({
        "server_id": server.server_id,
        "now": rfc3339(now),
        "num_connections": connections.len(),
        "total": total,
        "offset": options.offset,
        "limit": options.limit,
        "connections": connections,
    })
}

fn sort(records: &mut [Arc<ConnectionRecord>], key: SortKey, now: OffsetDateTime) {
    let stop = |record: &ConnectionRecord| record.closure.map(|closure| closure.stop);
    let reason = |record: &ConnectionRecord| record.closure.map(|closure| closure.reason.text());
    match key {
        SortKey::Cid => records.sort_by_key(|record| record.cid),
        SortKey::Start => records.sort_by_key(|record| record.start),
        SortKey::Subscriptions => records.sort_by_key(|record| Reverse(record.subscription_count)),
        SortKey::Pending => records.sort_by_key(|record| Reverse(record.pending)),
        SortKey::MessagesTo => records.sort_by_key(|record| Reverse(record.out_msgs)),
        SortKey::MessagesFrom => records.sort_by_key(|record| Reverse(record.in_msgs)),
        SortKey::BytesTo => records.sort_by_key(|record| Reverse(record.out_bytes)),
        SortKey::BytesFrom => records.sort_by_key(|record| Reverse(record.in_bytes)),
        SortKey::LastActivity => records.sort_by_key(|record| Reverse(record.last_activity)),
        SortKey::Idle => {
            records.sort_by_key(|record| Reverse(record.end(now) - record.last_activity))
        }
        SortKey::Uptime => records.sort_by_key(|record| Reverse(record.end(now) - record.start)),
        SortKey::RoundTrip => records.sort_by_key(|record| Reverse(record.round_trip)),
        SortKey::Stop => records.sort_by_key(|record| Reverse(stop(record))),
        SortKey::Reason => records.sort_by_key(|record| reason(record)),
    }
}

fn connection_info(
    record: &ConnectionRecord,
    options: &ConnzOptions,
    now: OffsetDateTime,
) -> Value {
    let meta = &record.meta;
    let end = record.end(now);
    let mut entry = Map::new();
    entry.insert("cid".into(), json!(record.cid));
    entry.insert("kind".into(), json!("Client"));
    let kind = if record.websocket {
        "websocket"
    } else {
        "nats"
    };
    entry.insert("type".into(), json!(kind));
    entry.insert("ip".into(), json!(record.address.ip().to_string()));
    entry.insert("port".into(), json!(record.address.port()));
    entry.insert("start".into(), json!(rfc3339(record.start)));
    entry.insert("last_activity".into(), json!(rfc3339(record.last_activity)));
    if let Some(closure) = record.closure {
        entry.insert("stop".into(), json!(rfc3339(closure.stop)));
        entry.insert("reason".into(), json!(closure.reason.text()));
    }
    entry.insert(
        "rtt".into(),
        json!(go_compat::duration::format_std(record.round_trip)),
    );
    entry.insert("uptime".into(), json!(since(end, record.start)));
    entry.insert("idle".into(), json!(since(end, record.last_activity)));
    entry.insert("pending_bytes".into(), json!(record.pending));
    entry.insert("in_msgs".into(), json!(record.in_msgs));
    entry.insert("out_msgs".into(), json!(record.out_msgs));
    entry.insert("in_bytes".into(), json!(record.in_bytes));
    entry.insert("out_bytes".into(), json!(record.out_bytes));
    entry.insert("subscriptions".into(), json!(record.subscription_count));
    if let Some(name) = meta.name.as_ref().filter(|name| !name.is_empty()) {
        entry.insert("name".into(), json!(name));
    }
    if let Some(lang) = meta.lang.as_ref().filter(|lang| !lang.is_empty()) {
        entry.insert("lang".into(), json!(lang));
    }
    if let Some(version) = meta.version.as_ref().filter(|version| !version.is_empty()) {
        entry.insert("version".into(), json!(version));
    }
    if let Some((version, cipher)) = &meta.tls {
        entry.insert("tls_version".into(), json!(version));
        entry.insert("tls_cipher_suite".into(), json!(cipher));
        if meta.tls_first {
            entry.insert("tls_first".into(), json!(true));
        }
    }
    // nats-server saves closed connections without them.
    if options.username && record.closure.is_none() && !meta.tls_peer_certificates.is_empty() {
        let certificates: Vec<Value> = meta
            .tls_peer_certificates
            .iter()
            .map(peer_certificate)
            .collect();
        entry.insert("tls_peer_certs".into(), json!(certificates));
    }
    if options.username {
        if let Some(user) = meta.user.as_ref().filter(|user| !user.is_empty()) {
            entry.insert("authorized_user".into(), json!(user));
        }
        let global = record.account == crate::accounts::GLOBAL_ACCOUNT;
        if !global {
            entry.insert("account".into(), json!(record.account));
        }
        // nats-server shows a closed connection's name tag only outside `$G`.
        if !global || record.closure.is_none() {
            entry.insert("name_tag".into(), json!(record.account));
        }
    }
    // A closed connection's details carry the account, as nats-server saves them.
    let closed = record.closure.is_some();
    let subscriptions = &record.subscriptions;
    match options.subscriptions {
        SubscriptionsShown::Subjects if !subscriptions.is_empty() => {
            let mut subjects: Vec<_> = subscriptions
                .iter()
                .map(|subscription| subscription.subject.clone())
                .collect();
            subjects.sort();
            entry.insert("subscriptions_list".into(), json!(subjects));
        }
        SubscriptionsShown::Detail if !subscriptions.is_empty() => {
            let details: Vec<_> = subscriptions
                .iter()
                .map(|subscription| subscription_detail(subscription, closed))
                .collect();
            entry.insert("subscriptions_list_detail".into(), json!(details));
        }
        _ => {}
    }
    Value::Object(entry)
}

/// One `tls_peer_certs` entry (each field left out when empty, as nats-server does).
fn peer_certificate(certificate: &crate::security::certificate::PeerCertificate) -> Value {
    let mut entry = Map::new();
    for (key, value) in [
        ("subject", &certificate.subject),
        ("spki_sha256", &certificate.spki_sha256),
        ("cert_sha256", &certificate.cert_sha256),
    ] {
        if !value.is_empty() {
            entry.insert(key.into(), json!(value));
        }
    }
    Value::Object(entry)
}

/// One subscription as `/connz?subs=detail` and `/subsz?subs=1` show it (`account`: with the
/// account names, as `/subsz` has them).
pub fn subscription_detail(subscription: &SubscriptionRecord, account: bool) -> Value {
    let mut entry = Map::new();
    if account {
        entry.insert("account".into(), json!(subscription.account));
        entry.insert("account_tag".into(), json!(subscription.account));
    }
    entry.insert("subject".into(), json!(subscription.subject));
    if let Some(queue) = &subscription.queue {
        entry.insert("qgroup".into(), json!(queue));
    }
    entry.insert("sid".into(), json!(subscription.sid));
    entry.insert("msgs".into(), json!(subscription.delivered));
    if subscription.max > 0 {
        entry.insert("max".into(), json!(subscription.max));
    }
    entry.insert("cid".into(), json!(subscription.cid));
    Value::Object(entry)
}

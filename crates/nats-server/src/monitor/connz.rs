//! `/connz`: the client connections, with nats-server's options (`sort`, `auth`, `subs`
//! (`detail`), `offset`, `limit`, `cid`, `state`, `user`, `acc`, `filter_subject`) and field
//! names. A connection without a measured round trip is sent an RTT ping, as nats-server does,
//! so the next read shows it. Closed connections are not kept (`state=closed` lists none).

use super::format::{rfc3339, since};
use super::query::Query;
pub use super::query::{SubscriptionsShown, DEFAULT_LIMIT};
use super::Refusal;
use crate::client::{ClientShared, ClientSubscription};
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use time::OffsetDateTime;

/// Which connections: nats-server's `state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConnectionState {
    #[default]
    Open,
    Closed,
    Any,
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
        let (offset, limit) = query.page()?;
        let cid = query.uint64("cid")?;
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

/// What one connection shows, read once so sorting compares the same figures it prints.
struct Snapshot {
    client: Arc<ClientShared>,
    meta: crate::client::ClientMeta,
    last_activity: OffsetDateTime,
    subscriptions: Vec<Arc<ClientSubscription>>,
    pending: usize,
    round_trip: std::time::Duration,
    in_msgs: u64,
    in_bytes: u64,
    out_msgs: u64,
    out_bytes: u64,
}

impl Snapshot {
    fn take(client: Arc<ClientShared>) -> Snapshot {
        let meta = client.meta.lock().clone();
        let last_activity = *client.last_activity.lock();
        let subscriptions = client.subscriptions.lock().values().cloned().collect();
        let pending = client.pending_bytes();
        let round_trip = match *client.rtt.lock() {
            Some(round_trip) => round_trip,
            None => {
                client.send_rtt_ping();
                std::time::Duration::ZERO
            }
        };
        let counters = &client.counters;
        Snapshot {
            in_msgs: counters.in_msgs.load(Ordering::Relaxed),
            in_bytes: counters.in_bytes.load(Ordering::Relaxed),
            out_msgs: counters.out_msgs.load(Ordering::Relaxed),
            out_bytes: counters.out_bytes.load(Ordering::Relaxed),
            client,
            meta,
            last_activity,
            subscriptions,
            pending,
            round_trip,
        }
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
    let mut snapshots: Vec<Snapshot> = if options.state == ConnectionState::Closed {
        Vec::new()
    } else {
        let clients: Vec<_> = server.clients.lock().values().cloned().collect();
        clients
            .into_iter()
            .filter(|client| options.cid == 0 || client.id == options.cid)
            .map(Snapshot::take)
            .filter(|snapshot| {
                options.user.is_empty() || snapshot.meta.user.as_deref() == Some(&options.user)
            })
            .filter(|snapshot| {
                options.account.is_empty()
                    || super::accounts::account_name(&snapshot.client) == options.account
            })
            .filter(|snapshot| {
                options.filter_subject.is_empty()
                    || snapshot.subscriptions.iter().any(|subscription| {
                        nats_subject::subject_matches_filter(
                            &subscription.subject,
                            &options.filter_subject,
                        )
                    })
            })
            .collect()
    };
    sort(&mut snapshots, options.sort, now);
    let total = snapshots.len();
    let connections: Vec<Value> = snapshots
        .iter()
        .skip(options.offset)
        .take(options.limit)
        .map(|snapshot| connection_info(snapshot, options, now))
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

fn sort(snapshots: &mut [Snapshot], key: SortKey, now: OffsetDateTime) {
    match key {
        SortKey::Cid | SortKey::Stop | SortKey::Reason => {
            snapshots.sort_by_key(|snapshot| snapshot.client.id)
        }
        SortKey::Start => snapshots.sort_by_key(|snapshot| snapshot.client.start),
        SortKey::Subscriptions => {
            snapshots.sort_by_key(|snapshot| Reverse(snapshot.subscriptions.len()))
        }
        SortKey::Pending => snapshots.sort_by_key(|snapshot| Reverse(snapshot.pending)),
        SortKey::MessagesTo => snapshots.sort_by_key(|snapshot| Reverse(snapshot.out_msgs)),
        SortKey::MessagesFrom => snapshots.sort_by_key(|snapshot| Reverse(snapshot.in_msgs)),
        SortKey::BytesTo => snapshots.sort_by_key(|snapshot| Reverse(snapshot.out_bytes)),
        SortKey::BytesFrom => snapshots.sort_by_key(|snapshot| Reverse(snapshot.in_bytes)),
        SortKey::LastActivity => snapshots.sort_by_key(|snapshot| Reverse(snapshot.last_activity)),
        SortKey::Idle => snapshots.sort_by_key(|snapshot| Reverse(now - snapshot.last_activity)),
        SortKey::Uptime => snapshots.sort_by_key(|snapshot| Reverse(now - snapshot.client.start)),
        SortKey::RoundTrip => snapshots.sort_by_key(|snapshot| Reverse(snapshot.round_trip)),
    }
}

fn connection_info(snapshot: &Snapshot, options: &ConnzOptions, now: OffsetDateTime) -> Value {
    let client = &snapshot.client;
    let meta = &snapshot.meta;
    let mut entry = Map::new();
    entry.insert("cid".into(), json!(client.id));
    entry.insert("kind".into(), json!("Client"));
    entry.insert("type".into(), json!("nats"));
    entry.insert("ip".into(), json!(client.address.ip().to_string()));
    entry.insert("port".into(), json!(client.address.port()));
    entry.insert("start".into(), json!(rfc3339(client.start)));
    entry.insert(
        "last_activity".into(),
        json!(rfc3339(snapshot.last_activity)),
    );
    entry.insert(
        "rtt".into(),
        json!(go_compat::duration::format_std(snapshot.round_trip)),
    );
    entry.insert("uptime".into(), json!(since(now, client.start)));
    entry.insert("idle".into(), json!(since(now, snapshot.last_activity)));
    entry.insert("pending_bytes".into(), json!(snapshot.pending));
    entry.insert("in_msgs".into(), json!(snapshot.in_msgs));
    entry.insert("out_msgs".into(), json!(snapshot.out_msgs));
    entry.insert("in_bytes".into(), json!(snapshot.in_bytes));
    entry.insert("out_bytes".into(), json!(snapshot.out_bytes));
    entry.insert("subscriptions".into(), json!(snapshot.subscriptions.len()));
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
    if options.username {
        if let Some(user) = &meta.user {
            entry.insert("authorized_user".into(), json!(user));
        }
        entry.insert(
            "name_tag".into(),
            json!(super::accounts::account_name(client)),
        );
    }
    let subscriptions = &snapshot.subscriptions;
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
                .map(|subscription| subscription_detail(subscription, false))
                .collect();
            entry.insert("subscriptions_list_detail".into(), json!(details));
        }
        _ => {}
    }
    Value::Object(entry)
}

/// One subscription as `/connz?subs=detail` and `/subsz?subs=1` show it (`account`: with the
/// account names, as `/subsz` has them).
pub fn subscription_detail(subscription: &ClientSubscription, account: bool) -> Value {
    let mut entry = Map::new();
    if account {
        let name = subscription
            .client
            .account()
            .map_or(crate::accounts::GLOBAL_ACCOUNT, |account| &account.name);
        entry.insert("account".into(), json!(name));
        entry.insert("account_tag".into(), json!(name));
    }
    entry.insert("subject".into(), json!(subscription.subject));
    if let Some(queue) = &subscription.queue {
        entry.insert("qgroup".into(), json!(queue));
    }
    entry.insert(
        "sid".into(),
        json!(String::from_utf8_lossy(&subscription.sid)),
    );
    entry.insert(
        "msgs".into(),
        json!(subscription.delivered.load(Ordering::Relaxed)),
    );
    let max = subscription.max.load(Ordering::Relaxed);
    if max > 0 {
        entry.insert("max".into(), json!(max));
    }
    entry.insert("cid".into(), json!(subscription.client.id));
    Value::Object(entry)
}

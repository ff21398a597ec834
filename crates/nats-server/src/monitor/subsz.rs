//! `/subsz` (also `/subscriptionsz`): the sublist's statistics and, with `subs=1`, the
//! subscriptions (`offset`, `limit`, `test` a subject they must match).

use super::connz::subscription_detail;
use super::format::{go_float, rfc3339};
use super::query::Query;
use super::query::DEFAULT_LIMIT;
use super::record::SubscriptionRecord;
use super::Refusal;
use crate::accounts::imports::ImportTarget;
use crate::accounts::Account;
use crate::router::Subscriber;
use crate::server::Server;
use serde_json::{json, Map, Value};
use time::OffsetDateTime;

/// The options of one `/subsz` read.
#[derive(Clone, Debug, Default)]
pub struct SubszOptions {
    pub subscriptions: bool,
    pub offset: usize,
    pub limit: usize,
    /// `test`: only subscriptions a publish on this subject would reach.
    pub test: String,
    /// `acc`: only this account's table and subscriptions.
    pub account: String,
}

impl SubszOptions {
    /// The options of a request without a query.
    pub fn default_page() -> SubszOptions {
        SubszOptions {
            limit: DEFAULT_LIMIT,
            ..SubszOptions::default()
        }
    }

    pub fn from_query(query: &Query) -> Result<SubszOptions, Refusal> {
        let subscriptions = query.boolean("subs")?;
        let (offset, limit) = query.page()?;
        let test = query.text("test").to_string();
        if !test.is_empty() && !nats_subject::is_valid_literal_subject(&test) {
            return Err(Refusal::bad_request(format!("Bad test subject: {test}")));
        }
        Ok(SubszOptions {
            subscriptions,
            offset,
            limit,
            test,
            account: query.text("acc").to_string(),
        })
    }
}

pub fn subsz(server: &Server, options: &SubszOptions) -> Value {
    let now = OffsetDateTime::now_utc();
    let (offset, limit) = (options.offset, options.limit);
    let list = options.subscriptions;
    let mut body = Map::new();
    body.insert("server_id".into(), json!(server.server_id));
    body.insert("now".into(), json!(rfc3339(now)));
    let statistics = if options.account.is_empty() {
        server.accounts.statistics()
    } else {
        crate::accounts::sublist_statistics(server.accounts.lookup(&options.account).into_iter())
    };
    if let Value::Object(statistics) = go_statistics(statistics) {
        body.extend(statistics);
    }
    let clients: Vec<_> = server
        .clients
        .lock()
        .values()
        .filter(|client| {
            options.account.is_empty() || super::accounts::account_name(client) == options.account
        })
        .cloned()
        .collect();
    // nats-server counts and lists only with `subs=1` (its `total` is 0 otherwise).
    let mut subscriptions = Vec::new();
    if list {
        for client in &clients {
            subscriptions.extend(
                client
                    .subscriptions
                    .lock()
                    .values()
                    .map(|subscription| SubscriptionRecord::of(subscription)),
            );
        }
        if options.account.is_empty() {
            for account in server.accounts.iter() {
                subscriptions.extend(internal_subscriptions(&account));
            }
        } else if let Some(account) = server.accounts.lookup(&options.account) {
            subscriptions.extend(internal_subscriptions(&account));
        }
    }
    if !options.test.is_empty() {
        subscriptions.retain(|subscription| {
            nats_subject::subject_matches_filter(&options.test, &subscription.subject)
        });
    }
    body.insert("total".into(), json!(subscriptions.len()));
    body.insert("offset".into(), json!(offset));
    body.insert("limit".into(), json!(limit));
    // nats-server leaves an empty list out.
    if list && subscriptions.len() > offset {
        let details: Vec<_> = subscriptions
            .iter()
            .skip(offset)
            .take(limit)
            .map(|subscription| subscription_detail(subscription, true))
            .collect();
        body.insert("subscriptions_list".into(), json!(details));
    }
    Value::Object(body)
}

/// The server's own entries in an account's table, as nats-server lists the subscriptions of
/// its internal clients: the `$SYS` request handlers, JetStream's API and stream
/// subscriptions, and the service imports (the `$SYS` requests and `$JS.API.>` every account
/// imports) with an exporter's `_R_` response entry. Client subscriptions are listed from the
/// connections, a route's interest is not this server's and a stream import's shadow stands
/// for a client subscription already listed. They have no connection (`cid` 0), an internal
/// subscription's `sid` is its id (an import's 0) and they count no messages.
fn internal_subscriptions(account: &Account) -> Vec<SubscriptionRecord> {
    let record = |subject: String, queue: Option<String>, sid: u64| SubscriptionRecord {
        account: account.name.to_string(),
        subject,
        queue,
        sid: sid.to_string(),
        delivered: 0,
        max: 0,
        cid: 0,
    };
    account
        .router
        .subscriptions()
        .into_iter()
        .filter_map(|(subject, queue, subscriber)| match subscriber {
            Subscriber::Internal(internal) => Some(record(
                subject,
                queue.map(|queue| queue.to_string()),
                internal.id,
            )),
            Subscriber::Import(target) if !matches!(*target, ImportTarget::Stream(_)) => {
                Some(record(subject, queue.map(|queue| queue.to_string()), 0))
            }
            _ => None,
        })
        .collect()
}

/// The sublist's counters (`num_subscriptions`, `num_cache`, ..., `avg_fanout`), as `/subsz`
/// and `/accountz`'s `sublist_stats` show them.
pub fn sublist_stats(server: &Server) -> Value {
    go_statistics(server.accounts.statistics())
}

/// Sublist counters as JSON, the floats printed as Go prints them.
pub fn go_statistics(counters: Vec<(String, Value)>) -> Value {
    let mut statistics = Map::new();
    for (key, value) in counters {
        let value = match value.as_f64() {
            Some(float) if value.is_f64() => go_float(float),
            _ => value,
        };
        statistics.insert(key, value);
    }
    Value::Object(statistics)
}

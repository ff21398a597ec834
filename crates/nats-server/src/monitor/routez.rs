//! `/routez`: the routes of a cluster (`subs`: `1`/`true` for the subjects, `detail` for
//! each subscription), with nats-server's field names. Empty without a cluster.

use super::format::{rfc3339, uptime_text};
use super::query::Query;
use super::query::SubscriptionsShown;
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use time::OffsetDateTime;

/// The options of one `/routez` read.
#[derive(Clone, Debug, Default)]
pub struct RoutezOptions {
    pub subscriptions: SubscriptionsShown,
}

impl RoutezOptions {
    pub fn from_query(query: &Query) -> Result<RoutezOptions, Refusal> {
        Ok(RoutezOptions {
            subscriptions: query.subscriptions_shown()?,
        })
    }
}

pub fn routez(server: &Server, options: &RoutezOptions) -> Value {
    let now = OffsetDateTime::now_utc();
    let links = server
        .routes()
        .map(|routes| routes.links())
        .unwrap_or_default();
    let configured: Vec<String> = server
        .options
        .cluster
        .as_ref()
        .map(|cluster| cluster.routes.iter().map(|url| url.address()).collect())
        .unwrap_or_default();
    let routes: Vec<Value> = links
        .iter()
        .map(|link| {
            let connection = &link.connection;
            let info = link.info.lock().clone();
            let counters = &connection.counters;
            let last_activity = *connection.last_activity.lock();
            let mut route = Map::new();
            route.insert("rid".into(), json!(link.rid()));
            route.insert("remote_id".into(), json!(info.server_id));
            route.insert("remote_name".into(), json!(info.server_name));
            route.insert("did_solicit".into(), json!(link.did_solicit()));
            let address = format!("{}:{}", connection.address.ip(), connection.address.port());
            route.insert(
                "is_configured".into(),
                json!(
                    (link.solicited && configured.contains(&address))
                        || link.carried.lock().is_some()
                ),
            );
            route.insert("ip".into(), json!(connection.address.ip().to_string()));
            route.insert("port".into(), json!(connection.address.port()));
            route.insert("start".into(), json!(rfc3339(connection.start)));
            route.insert("last_activity".into(), json!(rfc3339(last_activity)));
            route.insert(
                "rtt".into(),
                json!(go_compat::duration::format_std(
                    connection.rtt.lock().unwrap_or_default()
                )),
            );
            route.insert(
                "uptime".into(),
                json!(uptime_text((now - connection.start).unsigned_abs())),
            );
            route.insert(
                "idle".into(),
                json!(uptime_text((now - last_activity).unsigned_abs())),
            );
            route.insert("pending_size".into(), json!(connection.pending_bytes()));
            route.insert(
                "in_msgs".into(),
                json!(counters.in_msgs.load(Ordering::Relaxed)),
            );
            route.insert(
                "out_msgs".into(),
                json!(counters.out_msgs.load(Ordering::Relaxed)),
            );
            route.insert(
                "in_bytes".into(),
                json!(counters.in_bytes.load(Ordering::Relaxed)),
            );
            route.insert(
                "out_bytes".into(),
                json!(counters.out_bytes.load(Ordering::Relaxed)),
            );
            let subscriptions: Vec<crate::route::InterestKey> =
                link.subscriptions.lock().keys().cloned().collect();
            route.insert("subscriptions".into(), json!(subscriptions.len()));
            match options.subscriptions {
                SubscriptionsShown::Subjects => {
                    let list: Vec<&String> = subscriptions
                        .iter()
                        .map(|(_, subject, _)| subject)
                        .collect();
                    route.insert("subscriptions_list".into(), json!(list));
                }
                SubscriptionsShown::Detail => {
                    let list: Vec<Value> = subscriptions
                        .iter()
                        .map(|(account, subject, queue)| {
                            let mut entry = Map::new();
                            entry.insert("subject".into(), json!(subject));
                            if let Some(queue) = queue {
                                entry.insert("qgroup".into(), json!(queue));
                            }
                            let sid = match queue {
                                Some(queue) => format!("R {account} {subject} {queue}"),
                                None => format!("R {account} {subject}"),
                            };
                            entry.insert("sid".into(), json!(sid));
                            entry.insert("msgs".into(), json!(0));
                            entry.insert("cid".into(), json!(link.rid()));
                            Value::Object(entry)
                        })
                        .collect();
                    route.insert("subscriptions_list_detail".into(), json!(list));
                }
                SubscriptionsShown::None => {}
            }
            route.insert("compression".into(), json!("off"));
            Value::Object(route)
        })
        .collect();
    json!({
        "server_id": server.server_id,
        "server_name": server.server_name,
        "now": rfc3339(now),
        "num_routes": routes.len(),
        "routes": routes,
    })
}

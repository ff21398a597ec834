//! The STATSZ message (`$SYS.REQ.SERVER.PING` replies and the periodic
//! `$SYS.SERVER.<id>.STATSZ` event): `{"server": {...}, "statsz": {...}}` with nats-server's
//! fields (connections, subscriptions, message counters, routes, active servers, and the
//! JetStream block when JetStream runs).

use crate::server::Server;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

pub(super) fn message(server: &Server) -> Value {
    let (in_msgs, in_bytes, out_msgs, out_bytes) = server.message_totals();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let connections = server.clients.lock().len();
    let links = server
        .routes()
        .map(|routes| routes.links())
        .unwrap_or_default();
    let active_accounts = server
        .accounts
        .iter()
        .filter(|account| account.router.subscription_count() > 0)
        .count();
    let mut statsz = json!({
        "start": crate::monitor::rfc3339(server.start_time),
        "mem": crate::monitor::resident_memory(),
        "cores": cores,
        "cpu": 0,
        "connections": connections,
        "total_connections": server.stats.total_connections.load(Ordering::Relaxed),
        "active_accounts": active_accounts,
        "subscriptions": server.accounts.subscription_count(),
        "sent": {"msgs": out_msgs, "bytes": out_bytes},
        "sent_to_clients": {"msgs": out_msgs, "bytes": out_bytes},
        "received": {"msgs": in_msgs, "bytes": in_bytes},
        "received_from_clients": {"msgs": in_msgs, "bytes": in_bytes},
        "slow_consumers": server.stats.slow_consumers.load(Ordering::Relaxed),
        "active_servers": links.len() + 1,
        "gomaxprocs": cores,
    });
    if let Some(fields) = statsz.as_object_mut() {
        if !links.is_empty() {
            let routes: Vec<Value> = links
                .iter()
                .map(|link| {
                    let counters = &link.connection.counters;
                    json!({
                        "rid": link.rid(),
                        "name": link.info.lock().server_name.clone(),
                        "sent": {
                            "msgs": counters.out_msgs.load(Ordering::Relaxed),
                            "bytes": counters.out_bytes.load(Ordering::Relaxed),
                        },
                        "received": {
                            "msgs": counters.in_msgs.load(Ordering::Relaxed),
                            "bytes": counters.in_bytes.load(Ordering::Relaxed),
                        },
                        "pending": link.connection.pending_bytes(),
                    })
                })
                .collect();
            fields.insert("routes".into(), json!(routes));
        }
        if let Some(jetstream) = server.jetstream.get() {
            fields.insert("jetstream".into(), jetstream_block(jetstream.jsz()));
        }
    }
    json!({"server": super::server_object(server), "statsz": statsz})
}

/// The `jetstream` block of STATSZ from /jsz: config and usage (`stats`).
fn jetstream_block(jsz: Value) -> Value {
    json!({
        "config": jsz.get("config").cloned().unwrap_or_else(|| json!({})),
        "stats": {
            "memory": jsz.get("memory").cloned().unwrap_or(json!(0)),
            "storage": jsz.get("storage").cloned().unwrap_or(json!(0)),
            "reserved_memory": jsz.get("reserved_memory").cloned().unwrap_or(json!(0)),
            "reserved_storage": jsz.get("reserved_storage").cloned().unwrap_or(json!(0)),
            "accounts": jsz.get("accounts").cloned().unwrap_or(json!(0)),
            "ha_assets": jsz.get("ha_assets").cloned().unwrap_or(json!(0)),
            "api": jsz.get("api").cloned().unwrap_or_else(|| json!({})),
        },
    })
}

//! The monitoring endpoint (`-m PORT` / `http_port`): a small HTTP/1.1 GET responder on tokio
//! serving /varz, /connz, /subsz, /healthz, /routez, /jsz (and /) with nats-server's JSON field
//! names. One request per connection (`Connection: close`).

use crate::server::{Server, GO_FIELD, VERSION};
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MAX_REQUEST_HEAD: usize = 16 * 1024;
const DEFAULT_LIMIT: usize = 1024;

pub async fn serve(server: Arc<Server>, listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let server = server.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), handle(server, stream)).await;
        });
    }
}

async fn handle(server: Arc<Server>, mut stream: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await?;
        if read == 0 || head.len() > MAX_REQUEST_HEAD {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut parts = text.lines().next().unwrap_or("").split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = parse_query(query);
    let (status, body) = if method != "GET" && method != "HEAD" {
        (
            "405 Method Not Allowed",
            json!({"error": "method not allowed"}),
        )
    } else {
        route(&server, path, &query)
    };
    let mut body = serde_json::to_string_pretty(&body).unwrap_or_else(|_| "{}".into());
    if path == "/healthz" {
        body = serde_json::to_string(&json!({"status": "ok"})).unwrap_or_default();
    }
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes()).await?;
    }
    stream.shutdown().await
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key.to_string(), value.to_string())
        })
        .collect()
}

fn query_value<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
}

fn route(server: &Server, path: &str, query: &[(String, String)]) -> (&'static str, Value) {
    let path = path.trim_end_matches('/');
    let endpoint = if path.is_empty() { "/" } else { path };
    *server
        .http_requests
        .lock()
        .entry(endpoint.to_string())
        .or_insert(0) += 1;
    match endpoint {
        "/" => (
            "200 OK",
            json!({"endpoints": ["/varz", "/connz", "/subsz", "/healthz", "/routez", "/jsz"]}),
        ),
        "/varz" => ("200 OK", varz(server)),
        "/connz" => ("200 OK", connz(server, query)),
        "/subsz" | "/subscriptionsz" => ("200 OK", subsz(server, query)),
        "/healthz" => ("200 OK", json!({"status": "ok"})),
        "/routez" => ("200 OK", routez(server, query)),
        "/jsz" => ("200 OK", jsz(server)),
        _ => ("404 Not Found", json!({"error": "not found"})),
    }
}

pub fn rfc3339(time: OffsetDateTime) -> String {
    go_compat::time_text::rfc3339_nano(time)
}

/// nats-server's uptime text: `3s`, `1m3s`, `2h1m3s`, `1d2h1m3s`, `1y2d...`.
pub fn uptime_text(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    let years = seconds / (365 * 86400);
    seconds %= 365 * 86400;
    let days = seconds / 86400;
    seconds %= 86400;
    let hours = seconds / 3600;
    seconds %= 3600;
    let minutes = seconds / 60;
    seconds %= 60;
    if years > 0 {
        format!("{years}y{days}d{hours}h{minutes}m{seconds}s")
    } else if days > 0 {
        format!("{days}d{hours}h{minutes}m{seconds}s")
    } else if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// Go prints a whole float64 without a fraction (`2`, not `2.0`).
fn go_float(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

pub(crate) fn resident_memory() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

pub(crate) fn varz(server: &Server) -> Value {
    let options = &server.options;
    let now = OffsetDateTime::now_utc();
    let (in_msgs, in_bytes, out_msgs, out_bytes) = server.message_totals();
    let address = server.client_address.get();
    let monitor = server.monitor_address.get();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let connections = server.clients.lock().len();
    let http_requests: Map<String, Value> = server
        .http_requests
        .lock()
        .iter()
        .map(|(path, count)| (path.clone(), json!(count)))
        .collect();
    let jetstream = server
        .jetstream
        .get()
        .map_or_else(|| json!({}), |jetstream| jetstream.varz());
    let mut varz = json!({
        "server_id": server.server_id,
        "server_name": server.server_name,
        "version": VERSION,
        "proto": 1,
        "go": GO_FIELD,
        "host": options.host,
        "port": address.map_or(options.port.max(0) as u16, |address| address.port()),
        "auth_required": server.authenticator.required(),
        "max_connections": options.max_connections,
        "max_subscriptions": options.max_subscriptions,
        "ping_interval": options.ping_interval.as_nanos() as u64,
        "ping_max": options.ping_max,
        "http_host": monitor.map(|address| address.ip().to_string()).unwrap_or_default(),
        "http_port": monitor.map_or(0, |address| address.port()),
        "http_base_path": "",
        "https_port": 0,
        "auth_timeout": go_float(options.auth_timeout().as_secs_f64()),
        "max_control_line": options.max_control_line,
        "max_payload": options.max_payload,
        "max_pending": options.max_pending,
        "cluster": cluster_varz(server),
        "gateway": {},
        "leaf": {},
        "mqtt": {},
        "websocket": {},
        "jetstream": jetstream,
        "tls_timeout": go_float(options.tls.as_ref().map_or(2.0, |tls| tls.timeout.as_secs_f64())),
        "write_deadline": options.write_deadline.as_nanos() as u64,
        "start": rfc3339(server.start_time),
        "now": rfc3339(now),
        "uptime": uptime_text((now - server.start_time).unsigned_abs()),
        "mem": resident_memory(),
        "cores": cores,
        "gomaxprocs": cores,
        "cpu": 0,
        "connections": connections,
        "total_connections": server.stats.total_connections.load(Ordering::Relaxed),
        "routes": server.routes().map_or(0, |routes| routes.count()),
        "remotes": server.routes().map_or(0, |routes| routes.count()),
        "leafnodes": 0,
        "in_msgs": in_msgs,
        "in_bytes": in_bytes,
        "in_client_msgs": in_msgs,
        "in_client_bytes": in_bytes,
        "out_msgs": out_msgs,
        "out_bytes": out_bytes,
        "out_client_msgs": out_msgs,
        "out_client_bytes": out_bytes,
        "slow_consumers": server.stats.slow_consumers.load(Ordering::Relaxed),
        "stale_connections": server.stats.stale_connections.load(Ordering::Relaxed),
        "stalled_clients": 0,
        "subscriptions": server.accounts.subscription_count(),
        "http_req_stats": http_requests,
        "config_load_time": rfc3339(server.start_time),
        "config_digest": "",
        "system_account": &*server.accounts.system().name,
        "slow_consumer_stats": {
            "clients": server.stats.slow_consumers.load(Ordering::Relaxed),
            "routes": 0, "gateways": 0, "leafs": 0
        },
        "stale_connection_stats": {
            "clients": server.stats.stale_connections.load(Ordering::Relaxed),
            "routes": 0, "gateways": 0, "leafs": 0
        },
    });
    // Both are omitted when false, as nats-server's omitempty does.
    if let (Some(tls), Some(fields)) = (&options.tls, varz.as_object_mut()) {
        if !options.allow_non_tls || tls.handshake_first {
            fields.insert("tls_required".into(), json!(true));
        }
        if tls.verify {
            fields.insert("tls_verify".into(), json!(true));
        }
    }
    varz
}

fn paging(query: &[(String, String)]) -> (usize, usize) {
    let offset = query_value(query, "offset")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let limit = query_value(query, "limit")
        .and_then(|value| value.parse().ok())
        .filter(|limit: &usize| *limit > 0)
        .unwrap_or(DEFAULT_LIMIT);
    (offset, limit)
}

pub(crate) fn connz(server: &Server, query: &[(String, String)]) -> Value {
    let now = OffsetDateTime::now_utc();
    let subscriptions_mode = query_value(query, "subs").unwrap_or("");
    let detail = subscriptions_mode == "detail";
    let list = matches!(subscriptions_mode, "1" | "true");
    let (offset, limit) = paging(query);
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    let clients: Vec<_> = match query_value(query, "cid").and_then(|cid| cid.parse::<u64>().ok()) {
        Some(cid) => clients
            .into_iter()
            .filter(|client| client.id == cid)
            .collect(),
        None => clients,
    };
    let total = clients.len();
    let mut connections = Vec::new();
    for client in clients.iter().skip(offset).take(limit) {
        let meta = client.meta.lock().clone();
        let last_activity = *client.last_activity.lock();
        let subscriptions: Vec<_> = client.subscriptions.lock().values().cloned().collect();
        let mut entry = Map::new();
        entry.insert("cid".into(), json!(client.id));
        entry.insert("kind".into(), json!("Client"));
        entry.insert("type".into(), json!("nats"));
        entry.insert("ip".into(), json!(client.address.ip().to_string()));
        entry.insert("port".into(), json!(client.address.port()));
        entry.insert("start".into(), json!(rfc3339(client.start)));
        entry.insert("last_activity".into(), json!(rfc3339(last_activity)));
        entry.insert(
            "rtt".into(),
            json!(go_compat::duration::format_std(
                client.rtt.lock().unwrap_or_default()
            )),
        );
        entry.insert(
            "uptime".into(),
            json!(uptime_text((now - client.start).unsigned_abs())),
        );
        entry.insert(
            "idle".into(),
            json!(uptime_text((now - last_activity).unsigned_abs())),
        );
        entry.insert("pending_bytes".into(), json!(client.pending_bytes()));
        let counters = &client.counters;
        entry.insert(
            "in_msgs".into(),
            json!(counters.in_msgs.load(Ordering::Relaxed)),
        );
        entry.insert(
            "out_msgs".into(),
            json!(counters.out_msgs.load(Ordering::Relaxed)),
        );
        entry.insert(
            "in_bytes".into(),
            json!(counters.in_bytes.load(Ordering::Relaxed)),
        );
        entry.insert(
            "out_bytes".into(),
            json!(counters.out_bytes.load(Ordering::Relaxed)),
        );
        entry.insert("subscriptions".into(), json!(subscriptions.len()));
        if let Some(name) = meta.name.filter(|name| !name.is_empty()) {
            entry.insert("name".into(), json!(name));
        }
        if let Some(lang) = meta.lang.filter(|lang| !lang.is_empty()) {
            entry.insert("lang".into(), json!(lang));
        }
        if let Some(version) = meta.version.filter(|version| !version.is_empty()) {
            entry.insert("version".into(), json!(version));
        }
        if let Some((version, cipher)) = meta.tls {
            entry.insert("tls_version".into(), json!(version));
            entry.insert("tls_cipher_suite".into(), json!(cipher));
            if meta.tls_first {
                entry.insert("tls_first".into(), json!(true));
            }
        }
        if let Some(user) = meta.user {
            entry.insert("authorized_user".into(), json!(user));
        }
        if list && !subscriptions.is_empty() {
            let mut subjects: Vec<_> = subscriptions
                .iter()
                .map(|subscription| subscription.subject.clone())
                .collect();
            subjects.sort();
            entry.insert("subscriptions_list".into(), json!(subjects));
        }
        if detail && !subscriptions.is_empty() {
            let details: Vec<_> = subscriptions
                .iter()
                .map(|subscription| subscription_detail(subscription, false))
                .collect();
            entry.insert("subscriptions_list_detail".into(), json!(details));
        }
        connections.push(Value::Object(entry));
    }
    json!({
        "server_id": server.server_id,
        "now": rfc3339(now),
        "num_connections": connections.len(),
        "total": total,
        "offset": offset,
        "limit": limit,
        "connections": connections,
    })
}

fn subscription_detail(subscription: &crate::client::ClientSubscription, account: bool) -> Value {
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

pub(crate) fn subsz(server: &Server, query: &[(String, String)]) -> Value {
    let now = OffsetDateTime::now_utc();
    let (offset, limit) = paging(query);
    let list = matches!(
        query_value(query, "subs").unwrap_or(""),
        "1" | "true" | "detail"
    );
    let mut body = Map::new();
    body.insert("server_id".into(), json!(server.server_id));
    body.insert("now".into(), json!(rfc3339(now)));
    for (key, value) in server.accounts.statistics() {
        let value = match value.as_f64() {
            Some(float) if value.is_f64() => go_float(float),
            _ => value,
        };
        body.insert(key, value);
    }
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    let mut subscriptions = Vec::new();
    for client in &clients {
        subscriptions.extend(client.subscriptions.lock().values().cloned());
    }
    body.insert("total".into(), json!(subscriptions.len()));
    body.insert("offset".into(), json!(offset));
    body.insert("limit".into(), json!(limit));
    if list {
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

/// The `cluster` block of /varz (empty without a cluster).
fn cluster_varz(server: &Server) -> Value {
    let (Some(cluster), Some(routes)) = (&server.options.cluster, server.routes()) else {
        return json!({});
    };
    let mut block = Map::new();
    block.insert("name".into(), json!(routes.cluster_name()));
    if let Some(address) = server.route_address.get() {
        block.insert("addr".into(), json!(cluster.host));
        block.insert("cluster_port".into(), json!(address.port()));
    }
    block.insert(
        "auth_timeout".into(),
        go_float(
            cluster
                .auth_timeout
                .unwrap_or(crate::config::options::DEFAULT_AUTH_TIMEOUT)
                .as_secs_f64(),
        ),
    );
    if !cluster.routes.is_empty() {
        let urls: Vec<String> = cluster.routes.iter().map(|url| url.address()).collect();
        block.insert("urls".into(), json!(urls));
    }
    block.insert("tls_timeout".into(), go_float(2.0));
    // One unpooled route per peer (see docs/parity.md).
    block.insert("pool_size".into(), json!(-1));
    Value::Object(block)
}

pub(crate) fn routez(server: &Server, query: &[(String, String)]) -> Value {
    let subscriptions_mode = query_value(query, "subs").unwrap_or("");
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
            route.insert("did_solicit".into(), json!(link.solicited));
            let address = format!("{}:{}", connection.address.ip(), connection.address.port());
            route.insert(
                "is_configured".into(),
                json!(link.solicited && configured.contains(&address)),
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
            match subscriptions_mode {
                "1" | "true" => {
                    let list: Vec<&String> = subscriptions
                        .iter()
                        .map(|(_, subject, _)| subject)
                        .collect();
                    route.insert("subscriptions_list".into(), json!(list));
                }
                "detail" => {
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
                _ => {}
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

pub(crate) fn jsz(server: &Server) -> Value {
    match server.jetstream.get() {
        Some(jetstream) => jetstream.jsz(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_like_nats_server() {
        assert_eq!(uptime_text(Duration::from_secs(3)), "3s");
        assert_eq!(uptime_text(Duration::from_secs(63)), "1m3s");
        assert_eq!(uptime_text(Duration::from_secs(7263)), "2h1m3s");
        assert_eq!(uptime_text(Duration::from_secs(90063)), "1d1h1m3s");
    }
}

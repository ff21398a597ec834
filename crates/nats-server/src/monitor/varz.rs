//! `/varz`: the server's identity, options, totals and runtime figures, with nats-server's
//! field names (Go's `omitempty` fields left out when empty).

use super::format::{go_float, rfc3339, uptime_text};
use crate::server::{Server, GIT_COMMIT, GO_FIELD, VERSION};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::time::Instant;
use time::OffsetDateTime;

/// The process's CPU use in percent since the previous read (since start on the first), from
/// `/proc/self/stat` as nats-server's `pse` reads it; rounded to one decimal as nats-server.
fn cpu_percent() -> f64 {
    static LAST: Mutex<Option<(Instant, f64)>> = Mutex::new(None);
    let Some(cpu_seconds) = process_cpu_seconds() else {
        return 0.0;
    };
    let now = Instant::now();
    let mut last = LAST.lock();
    let (since, before) = last.unwrap_or((process_start(), 0.0));
    *last = Some((now, cpu_seconds));
    let wall = now.duration_since(since).as_secs_f64();
    if wall <= 0.0 {
        return 0.0;
    }
    ((cpu_seconds - before) / wall * 1000.0).round() / 10.0
}

/// User plus system time of this process, in seconds.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces) start after its `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some((user + system) / ticks)
}

/// The first read's reference point: when this module was first used.
pub(super) fn process_start() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

pub fn resident_memory() -> u64 {
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

pub fn varz(server: &Server) -> Value {
    let options = server.current_options();
    let now = OffsetDateTime::now_utc();
    let (in_msgs, in_bytes, out_msgs, out_bytes) = server.message_totals();
    let address = server.client_address.get();
    let monitor = server.monitor_address.get();
    let https = server.monitor_tls_address.get();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let connections = server.clients.lock().len();
    let http_requests: Map<String, Value> = server
        .http_requests
        .lock()
        .iter()
        .map(|(path, count)| (path.clone(), json!(count)))
        .collect();
    let mut jetstream = server
        .jetstream
        .get()
        .map_or_else(|| json!({}), |jetstream| jetstream.varz());
    // Clustered: the meta group, as `/jsz` `meta_cluster` shows it (nats-server's
    // `JetStreamVarz.Meta`).
    if let (Some(meta), Some(_), Some(object)) = (
        server.meta.get(),
        server.jetstream.get(),
        jetstream.as_object_mut(),
    ) {
        object.insert("meta".into(), meta.cluster_info());
    }
    let mut varz = json!({
        "server_id": server.server_id,
        "server_name": server.server_name,
        "version": VERSION,
        "proto": 1,
        "go": GO_FIELD,
        "host": options.host,
        "port": address.map_or(options.port.max(0) as u16, |address| address.port()),
        "max_connections": options.max_connections,
        "ping_interval": options.ping_interval.as_nanos() as u64,
        "ping_max": options.ping_max,
        "http_host": monitor.map(|address| address.ip().to_string()).unwrap_or_default(),
        "http_port": monitor.map_or(0, |address| address.port()),
        "http_base_path": options.http_base_path,
        "https_port": https.map_or(0, |address| address.port()),
        "auth_timeout": go_float(options.auth_timeout().as_secs_f64()),
        "max_control_line": options.max_control_line,
        "max_payload": options.max_payload,
        "max_pending": options.max_pending,
        "cluster": cluster_varz(server),
        "gateway": {},
        "leaf": {},
        "mqtt": {},
        "websocket": websocket_varz(server),
        "jetstream": jetstream,
        "tls_timeout": go_float(options.tls.as_ref().map_or(2.0, |tls| tls.timeout.as_secs_f64())),
        "write_deadline": options.write_deadline.as_nanos() as u64,
        "start": rfc3339(server.start_time),
        "now": rfc3339(now),
        "uptime": uptime_text((now - server.start_time).unsigned_abs()),
        "mem": resident_memory(),
        "cores": cores,
        "gomaxprocs": cores,
        "cpu": go_float(cpu_percent()),
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
        "config_load_time": rfc3339(*server.config_load_time.lock()),
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
        "feature_flags": crate::config::feature_flags::merged(&options.feature_flags),
        // nats-server counts the waits on its disk I/O semaphore (at most 4096 disk calls in
        // flight). Nothing here waits on such a limit: the store's calls run on the tasks and
        // blocking threads that need them, so no call ever waited (docs/parity.md).
        "disk_io_wait_stats": {"waiters": 0, "waits": 0, "wait_time": 0, "max_wait_time": 0},
    });
    // Omitted when false or zero, as nats-server's omitempty does.
    if let Some(fields) = varz.as_object_mut() {
        if server.authenticator().required() {
            fields.insert("auth_required".into(), json!(true));
        }
        if options.max_subscriptions != 0 {
            fields.insert("max_subscriptions".into(), json!(options.max_subscriptions));
        }
        // The URLs clients learn in INFO (ours and the peers', `[::1]:4222` for IPv6).
        let connect_urls = crate::route::client_connect_urls(server);
        if !connect_urls.is_empty() {
            fields.insert("connect_urls".into(), json!(connect_urls));
        }
        if !options.server_tags.is_empty() {
            fields.insert("tags".into(), json!(options.server_tags));
        }
        if let Some(commit) = GIT_COMMIT {
            fields.insert("git_commit".into(), json!(commit));
        }
    }
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

/// The `cluster` block of /varz (empty without a cluster).
/// nats-server's `WebsocketOptsVarz`: every field omitted when empty.
fn websocket_varz(server: &Server) -> Value {
    let Some(listener) = server.websocket() else {
        return json!({});
    };
    let options = &listener.options;
    let mut block = Map::new();
    block.insert("host".into(), json!(options.listen_host()));
    block.insert("port".into(), json!(listener.address.port()));
    if let Some(advertise) = &options.advertise {
        block.insert("advertise".into(), json!(advertise));
    }
    if let Some(user) = &options.no_auth_user {
        block.insert("no_auth_user".into(), json!(user));
    }
    if let Some(cookie) = &options.jwt_cookie {
        block.insert("jwt_cookie".into(), json!(cookie));
    }
    if !options.handshake_timeout.is_zero() {
        block.insert(
            "handshake_timeout".into(),
            json!(options.handshake_timeout.as_nanos() as u64),
        );
    }
    if let Some(timeout) = options.auth_timeout.filter(|timeout| !timeout.is_zero()) {
        block.insert("auth_timeout".into(), go_float(timeout.as_secs_f64()));
    }
    if options.no_tls {
        block.insert("no_tls".into(), json!(true));
    }
    if options.tls.as_ref().is_some_and(|tls| tls.map) {
        block.insert("tls_map".into(), json!(true));
    }
    if options.same_origin {
        block.insert("same_origin".into(), json!(true));
    }
    if !options.allowed_origins.is_empty() {
        block.insert("allowed_origins".into(), json!(options.allowed_origins));
    }
    if options.compression {
        block.insert("compression".into(), json!(true));
    }
    Value::Object(block)
}

fn cluster_varz(server: &Server) -> Value {
    let options = server.current_options();
    let (Some(cluster), Some(routes)) = (&options.cluster, server.routes()) else {
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
        go_float(cluster.effective_auth_timeout().as_secs_f64()),
    );
    if !cluster.routes.is_empty() {
        let urls: Vec<String> = cluster.routes.iter().map(|url| url.address()).collect();
        block.insert("urls".into(), json!(urls));
    }
    let tls_timeout = cluster
        .tls
        .as_ref()
        .map_or(2.0, |tls| tls.timeout.as_secs_f64());
    block.insert("tls_timeout".into(), go_float(tls_timeout));
    if cluster.tls.is_some() {
        block.insert("tls_required".into(), json!(true));
        block.insert("tls_verify".into(), json!(true));
    }
    // One unpooled route per peer (see docs/parity.md).
    block.insert("pool_size".into(), json!(-1));
    if let Some(deadline) = cluster
        .write_deadline
        .filter(|deadline| !deadline.is_zero())
    {
        block.insert("write_deadline".into(), json!(deadline.as_nanos() as u64));
    }
    Value::Object(block)
}

//! Monitoring endpoints (`-m PORT`): field names as nats-server. Passes against nats-server too.

use test_harness::monitoring::get_json as get;
use test_harness::{RawClient, ServerOptions, TestServer};

fn monitored() -> TestServer {
    TestServer::start(ServerOptions {
        monitoring: true,
        ..Default::default()
    })
}

/// A monitored server with one raw client (CONNECT `connect`) as its only connection. A client
/// of another test, reconnecting to a port that test's server had and this one got since, can
/// join a fresh server (the CI parity pass on 2299e54 saw `/connz` count 2 on nats-server): such
/// a server is left for a new one (at most 3 tries).
fn alone_with(connect: &str) -> (TestServer, RawClient) {
    let mut tries = 0;
    loop {
        tries += 1;
        let server = monitored();
        let mut client = RawClient::connect_with(&server, connect);
        client.ping_collect();
        if get(&server, "/connz")["num_connections"] == 1 || tries == 3 {
            return (server, client);
        }
        eprintln!(
            "a stray client joined the server on port {}: another one",
            server.port
        );
    }
}

#[test]
fn healthz() {
    let server = monitored();
    assert_eq!(
        get(&server, "/healthz"),
        serde_json::json!({"status": "ok"})
    );
}

#[test]
fn varz_fields() {
    let (server, mut client) = alone_with(r#"{"verbose":false}"#);
    client.send("SUB foo 1\r\nPUB foo 5\r\nhello\r\n");
    client.ping_collect();
    let varz = get(&server, "/varz");
    for field in [
        "server_id",
        "server_name",
        "version",
        "proto",
        "host",
        "port",
        "max_connections",
        "ping_interval",
        "ping_max",
        "http_host",
        "http_port",
        "auth_timeout",
        "max_control_line",
        "max_payload",
        "max_pending",
        "write_deadline",
        "start",
        "now",
        "uptime",
        "mem",
        "cores",
        "cpu",
        "connections",
        "total_connections",
        "routes",
        "in_msgs",
        "in_bytes",
        "out_msgs",
        "out_bytes",
        "slow_consumers",
        "subscriptions",
        "http_req_stats",
    ] {
        assert!(varz.get(field).is_some(), "varz lacks {field}");
    }
    assert_eq!(varz["port"], server.port);
    assert_eq!(varz["http_port"], server.monitor_port.unwrap());
    assert_eq!(varz["max_payload"], 1048576);
    assert_eq!(varz["ping_interval"], 120_000_000_000u64);
    assert_eq!(varz["write_deadline"], 10_000_000_000u64);
    assert_eq!(varz["connections"], 1);
    assert!(varz["in_msgs"].as_u64().unwrap() >= 1);
    assert!(varz["out_msgs"].as_u64().unwrap() >= 1);
    assert!(varz["in_bytes"].as_u64().unwrap() >= 5);
}

#[test]
fn connz_with_subscriptions() {
    let (server, mut client) =
        alone_with(r#"{"verbose":false,"name":"probe","lang":"rust","version":"9.9.9"}"#);
    client.send("SUB foo 1\r\nSUB bar q 2\r\n");
    client.ping_collect();
    let connz = get(&server, "/connz");
    assert_eq!(connz["num_connections"], 1);
    assert_eq!(connz["total"], 1);
    assert_eq!(connz["limit"], 1024);
    let connection = &connz["connections"][0];
    for field in [
        "cid",
        "kind",
        "type",
        "ip",
        "port",
        "start",
        "last_activity",
        "rtt",
        "uptime",
        "idle",
        "pending_bytes",
        "in_msgs",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "subscriptions",
    ] {
        assert!(connection.get(field).is_some(), "connz lacks {field}");
    }
    assert_eq!(connection["name"], "probe");
    assert_eq!(connection["lang"], "rust");
    assert_eq!(connection["version"], "9.9.9");
    assert_eq!(connection["subscriptions"], 2);
    assert!(connection.get("subscriptions_list").is_none());
    let connz = get(&server, "/connz?subs=1");
    let mut subjects: Vec<String> = connz["connections"][0]["subscriptions_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|subject| subject.as_str().unwrap().to_string())
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["bar", "foo"]);
    let connz = get(&server, "/connz?subs=detail");
    let details = connz["connections"][0]["subscriptions_list_detail"]
        .as_array()
        .unwrap();
    let bar = details.iter().find(|d| d["subject"] == "bar").unwrap();
    assert_eq!(bar["qgroup"], "q");
    assert_eq!(bar["sid"], "2");
}

#[test]
fn subsz_routez_and_jsz_without_jetstream() {
    let server = monitored();
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.send("SUB foo 1\r\n");
    client.ping_collect();
    let subsz = get(&server, "/subsz");
    for field in [
        "num_subscriptions",
        "num_cache",
        "num_inserts",
        "num_removes",
        "num_matches",
        "cache_hit_rate",
        "max_fanout",
        "avg_fanout",
    ] {
        assert!(subsz.get(field).is_some(), "subsz lacks {field}");
    }
    assert!(subsz["num_subscriptions"].as_u64().unwrap() >= 1);
    let routez = get(&server, "/routez");
    assert_eq!(routez["num_routes"], 0);
    assert_eq!(routez["routes"], serde_json::json!([]));
    let jsz = get(&server, "/jsz");
    assert_eq!(jsz["disabled"], true);
}

#[test]
fn jsz_with_jetstream() {
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        jetstream: true,
        ..Default::default()
    });
    let jsz = get(&server, "/jsz");
    assert!(jsz.get("disabled").is_none_or(|disabled| disabled == false));
    assert!(jsz.get("config").is_some());
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["jetstream"], true);
}

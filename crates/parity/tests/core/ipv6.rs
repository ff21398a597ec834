//! Listening on IPv6 as nats-server does: with no `-a` it listens on every interface for IPv4
//! and IPv6 (so `nats://[::1]:PORT` works), `-a ::1` listens on the IPv6 loopback, and the
//! monitoring port follows the same rule. Skipped where the machine has no IPv6 loopback.

use crate::process::{info_line, spawn};
use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use test_harness::free_port;

fn has_ipv6_loopback() -> bool {
    TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

fn v6(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv6Addr::LOCALHOST, port))
}

fn v4(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn no_host_listens_on_ipv4_and_ipv6() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no IPv6 loopback");
        return;
    }
    let port = free_port();
    let monitor = free_port();
    let _server = spawn(&["-p", &port.to_string(), "-m", &monitor.to_string()]);
    info_line(v4(port)).expect("IPv4 clients reach the server");
    info_line(v6(port)).expect("IPv6 clients reach the server");
    // The monitoring port too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(v6(monitor)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "monitoring is not reachable over IPv6"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn ipv6_host_listens_there() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no IPv6 loopback");
        return;
    }
    let port = free_port();
    let _server = spawn(&["-a", "::1", "-p", &port.to_string()]);
    let line = info_line(v6(port)).expect("the server listens on [::1]");
    let info: serde_json::Value =
        serde_json::from_str(line.trim_start_matches("INFO ").trim()).expect("INFO is JSON");
    assert_eq!(info["host"], "::1", "{info}");
}

/// A GET over HTTP/1.0 to the monitoring port, the JSON body (bounded wait for the port).
fn monitor_json(address: SocketAddr, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Ok(mut stream) = std::net::TcpStream::connect(address) {
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
            let mut response = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut response).is_ok()
            {
                if let Some((_, body)) = response.split_once("\r\n\r\n") {
                    if let Ok(json) = serde_json::from_str(body) {
                        return json;
                    }
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no JSON from {address}{path}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Two servers routed over the IPv6 loopback: clients learn both in `connect_urls` written as
/// `[::1]:port`, `/varz` shows the IPv6 hosts, `/routez` the peer's address.
#[test]
fn ipv6_cluster_urls_and_monitoring() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no IPv6 loopback");
        return;
    }
    let directory = tempfile::tempdir().expect("temp dir");
    let client_ports = [free_port(), free_port()];
    let route_ports = [free_port(), free_port()];
    let monitor_port = free_port();
    let mut servers = Vec::new();
    for node in 0..2 {
        let peer = 1 - node;
        let http = if node == 0 {
            format!("http: \"[::1]:{monitor_port}\"\n")
        } else {
            String::new()
        };
        let config = format!(
            "server_name: n{node}\nlisten: \"[::1]:{}\"\n{http}cluster {{\n  name: six\n  listen: \"[::1]:{}\"\n  routes: [\"nats-route://[::1]:{}\"]\n}}\n",
            client_ports[node], route_ports[node], route_ports[peer]
        );
        let path = directory.path().join(format!("n{node}.conf"));
        std::fs::write(&path, config).expect("write config");
        servers.push(spawn(&["-c", path.to_str().expect("utf-8 path")]));
    }
    let expected: Vec<String> = client_ports
        .iter()
        .map(|port| format!("[::1]:{port}"))
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let line = info_line(v6(client_ports[0])).expect("node 0 answers on [::1]");
        let info: serde_json::Value =
            serde_json::from_str(line.trim_start_matches("INFO ").trim()).expect("INFO is JSON");
        let mut urls: Vec<String> = info["connect_urls"]
            .as_array()
            .map(|urls| {
                urls.iter()
                    .filter_map(|url| url.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        urls.sort();
        let mut wanted = expected.clone();
        wanted.sort();
        if urls == wanted {
            assert_eq!(info["host"], "::1", "{info}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "connect_urls never became {wanted:?}: {info}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let varz = monitor_json(v6(monitor_port), "/varz");
    assert_eq!(varz["host"], "::1", "{varz}");
    assert_eq!(varz["cluster"]["addr"], "::1", "{varz}");
    assert_eq!(varz["cluster"]["cluster_port"], route_ports[0], "{varz}");
    let mut urls: Vec<String> = varz["connect_urls"]
        .as_array()
        .map(|urls| {
            urls.iter()
                .filter_map(|url| url.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    urls.sort();
    let mut wanted = expected.clone();
    wanted.sort();
    assert_eq!(urls, wanted, "{varz}");
    let routez = monitor_json(v6(monitor_port), "/routez");
    let routes = routez["routes"].as_array().expect("routes in /routez");
    assert!(!routes.is_empty(), "{routez}");
    for route in routes {
        assert_eq!(route["ip"], "::1", "{routez}");
    }
    drop(servers);
}

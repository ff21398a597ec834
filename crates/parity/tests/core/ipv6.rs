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

//! The websocket block's per-connection settings and cluster wiring, ours and nats-server
//! alike: `ping_interval` (PINGs at the websocket interval, a stale connection closed with
//! 1001 "Stale Connection"), `authorization { timeout }` (the authentication timeout of
//! websocket clients, closed with 1008), `jwt_cookie` in operator mode (the user JWT from a
//! cookie; refused at start-up without trusted operators), and `connect_urls` in a websocket
//! client's INFO when clustered (the websocket URLs of every server, not the client URLs).

use super::jwt_builder::{account_jwt, user_jwt, Trust};
use super::websocket::{frame, raw_client, read_frame, read_until_close, wait_for_port, WAIT};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};
use test_harness::{free_port, ServerOptions, SpawnTied, TestServer};

/// A server with `top` at the top of its config and a plain-text websocket listener whose
/// block holds `block`.
fn server_with(top: &str, block: &str) -> (TestServer, u16) {
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "{top}\nwebsocket {{\n  listen: \"127.0.0.1:{port}\"\n  no_tls: true\n  {block}\n}}\n"
        )),
        ..Default::default()
    });
    wait_for_port(port);
    (server, port)
}

fn info_json(info: &str) -> serde_json::Value {
    // A websocket INFO frame holds the protocol line; RawClient keeps only the JSON.
    let json = info.strip_prefix("INFO ").unwrap_or(info).trim_end();
    serde_json::from_str(json).unwrap_or_else(|error| panic!("{error}: {info}"))
}

#[test]
fn the_websocket_ping_interval_replaces_the_servers_and_a_stale_client_is_closed_with_1001() {
    // The server's interval is far away: the PINGs come at the websocket block's.
    let (_server, port) = server_with(
        "ping_interval: \"30s\"\nping_max: 1",
        "ping_interval: \"200ms\"",
    );
    let (mut stream, _) = raw_client(port, "");
    let started = Instant::now();
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\n", true))
        .expect("send CONNECT");
    let (first, ping) = read_frame(&mut stream).expect("a PING frame");
    assert_eq!(first & 0x0F, 2);
    assert_eq!(ping, b"PING\r\n");
    // Left unanswered, the next tick finds one PING outstanding (ping_max 1).
    let (data, close) = read_until_close(&mut stream);
    assert_eq!(data, "-ERR 'Stale Connection'\r\n");
    assert_eq!(close, Some((1001, "Stale Connection".to_string())));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed after {:?}: the server's 30 s interval was used",
        started.elapsed()
    );
}

#[test]
fn a_client_answering_the_websocket_pings_stays() {
    let (_server, port) = server_with("ping_max: 1", "ping_interval: \"100ms\"");
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\n", true))
        .expect("send CONNECT");
    for _ in 0..4 {
        let (_, ping) = read_frame(&mut stream).expect("a PING frame");
        assert_eq!(ping, b"PING\r\n");
        stream
            .write_all(&frame(2, b"PONG\r\n", true))
            .expect("send PONG");
    }
    stream
        .write_all(&frame(2, b"PING\r\n", true))
        .expect("send PING");
    loop {
        let (_, data) = read_frame(&mut stream).expect("still connected");
        match data.as_slice() {
            b"PING\r\n" => stream
                .write_all(&frame(2, b"PONG\r\n", true))
                .expect("send PONG"),
            other => {
                assert_eq!(other, b"PONG\r\n");
                break;
            }
        }
    }
}

#[test]
fn the_websocket_authorization_timeout_replaces_the_servers() {
    // The server's users authenticate websocket clients too; only the timeout is the block's.
    let (_server, port) = server_with(
        "authorization { token: \"secret\", timeout: 30 }",
        "authorization { timeout: 0.5 }",
    );
    let (mut stream, info) = raw_client(port, "");
    assert_eq!(info_json(&info)["auth_required"], true, "{info}");
    let started = Instant::now();
    let (data, close) = read_until_close(&mut stream);
    assert_eq!(data, "-ERR 'Authentication Timeout'\r\n");
    assert_eq!(close, Some((1008, "Authentication Timeout".to_string())));
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5),
        "closed after {elapsed:?}"
    );
    // In time, the server's token is what lets a websocket client in.
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(
            2,
            b"CONNECT {\"verbose\":false,\"auth_token\":\"secret\"}\r\nPING\r\n",
            true,
        ))
        .expect("send CONNECT");
    let (_, pong) = read_frame(&mut stream).expect("PONG");
    assert_eq!(pong, b"PONG\r\n");
}

#[test]
fn a_jwt_cookie_authenticates_in_operator_mode() {
    let trust = Trust::new();
    let account = nkeys::KeyPair::new_account();
    let account_token = account_jwt(&account, &trust.operator, json!({}));
    let user = nkeys::KeyPair::new_user();
    let bearer = user_jwt(&user, &account, None, json!({"bearer_token": true}));
    let (_server, port) = server_with(
        &trust.config(&[(&account, &account_token)]),
        "jwt_cookie: \"nats_jwt\"",
    );
    // The browser's cookie carries the bearer JWT; CONNECT names no credentials.
    let (mut stream, info) =
        raw_client(port, &format!("Cookie: theme=dark; nats_jwt={bearer}\r\n"));
    assert_eq!(info_json(&info)["auth_required"], true, "{info}");
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\nPING\r\n", true))
        .expect("send CONNECT");
    let (_, pong) = read_frame(&mut stream).expect("PONG");
    assert_eq!(pong, b"PONG\r\n");
    // Without the cookie, nothing authenticates the client.
    let (mut stream, _) = raw_client(port, "Cookie: theme=dark\r\n");
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\nPING\r\n", true))
        .expect("send CONNECT");
    let (data, close) = read_until_close(&mut stream);
    assert_eq!(data, "-ERR 'Authorization Violation'\r\n");
    assert_eq!(close.map(|(status, _)| status), Some(1008));
}

#[test]
fn a_jwt_cookie_without_trusted_operators_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("ws.conf");
    std::fs::write(
        &config,
        "websocket { port: -1, no_tls: true, jwt_cookie: \"nats_jwt\" }\n",
    )
    .expect("write config");
    let output = std::process::Command::new(test_harness::server_binary())
        .arg("-c")
        .arg(&config)
        .dies_with_this_thread()
        .output()
        .expect("run the server");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "trusted operators or trusted keys configuration is required for JWT authentication via cookie \"nats_jwt\""
        ),
        "{stderr}"
    );
}

/// Two routed servers, each with a websocket listener: (servers, websocket ports).
fn websocket_cluster() -> (Vec<TestServer>, Vec<u16>) {
    let route_ports = [free_port(), free_port()];
    let websocket_ports = vec![free_port(), free_port()];
    let routes = route_ports
        .iter()
        .map(|port| format!("\"nats-route://127.0.0.1:{port}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let servers = (0..2)
        .map(|index| {
            TestServer::with_config(&format!(
                "server_name: ws{index}\n\
                 cluster {{ name: wsc, listen: \"127.0.0.1:{}\", routes: [{routes}] }}\n\
                 websocket {{ listen: \"127.0.0.1:{}\", no_tls: true }}\n",
                route_ports[index], websocket_ports[index]
            ))
        })
        .collect();
    for port in &websocket_ports {
        wait_for_port(*port);
    }
    (servers, websocket_ports)
}

#[test]
fn websocket_clients_of_a_cluster_get_the_websocket_urls() {
    let (servers, ports) = websocket_cluster();
    let expected: Vec<String> = ports
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect();
    let deadline = Instant::now() + WAIT;
    let info = loop {
        let (_, info) = raw_client(ports[0], "");
        let info = info_json(&info);
        if info["connect_urls"]
            .as_array()
            .is_some_and(|urls| urls.len() == 2)
        {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "no websocket connect_urls: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Ours first, then the peer's; websocket addresses, not the client ports.
    assert_eq!(info["connect_urls"], json!(expected), "{info}");
    assert_eq!(info["cluster"], "wsc", "{info}");
    // A TCP client of the same server is told the client ports.
    let mut raw = test_harness::RawClient::connect(&servers[0]);
    let tcp_info = info_json(&raw.info);
    let client_urls: Vec<String> = tcp_info["connect_urls"]
        .as_array()
        .map(|urls| {
            urls.iter()
                .filter_map(|url| url.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        client_urls.contains(&format!("127.0.0.1:{}", servers[0].port)),
        "{tcp_info}"
    );
    assert!(
        !client_urls.iter().any(|url| expected.contains(url)),
        "{tcp_info}"
    );
    raw.send("PING\r\n");
    raw.expect_line("PONG");
}

#[test]
fn a_websocket_client_is_told_when_a_peer_joins() {
    let route_ports = [free_port(), free_port()];
    let websocket_ports = [free_port(), free_port()];
    let config = |index: usize| {
        format!(
            "server_name: late{index}\n\
             cluster {{ name: late, listen: \"127.0.0.1:{}\", routes: [\"nats-route://127.0.0.1:{}\"] }}\n\
             websocket {{ listen: \"127.0.0.1:{}\", no_tls: true }}\n",
            route_ports[index],
            route_ports[1 - index],
            websocket_ports[index]
        )
    };
    let _first = TestServer::with_config(&config(0));
    wait_for_port(websocket_ports[0]);
    let (mut stream, info) = raw_client(websocket_ports[0], "");
    assert!(info_json(&info).get("connect_urls").is_none(), "{info}");
    stream
        .write_all(&frame(
            2,
            b"CONNECT {\"verbose\":false,\"protocol\":1}\r\nPING\r\n",
            true,
        ))
        .expect("send CONNECT");
    // The PONG (nats-server may put an INFO of its own in the same frame, without urls).
    let (_, first) = read_frame(&mut stream).expect("PONG");
    assert!(first.starts_with(b"PONG\r\n"), "{first:?}");
    assert!(
        !String::from_utf8_lossy(&first).contains("connect_urls"),
        "{first:?}"
    );
    let _second = TestServer::with_config(&config(1));
    // The asynchronous INFO names both servers' websocket listeners.
    let update = 'frames: loop {
        let (_, data) = read_frame(&mut stream).expect("an asynchronous INFO");
        for line in String::from_utf8_lossy(&data).split("\r\n") {
            if line.starts_with("PING") {
                stream
                    .write_all(&frame(2, b"PONG\r\n", true))
                    .expect("send PONG");
            } else if line.starts_with("INFO ") && line.contains("connect_urls") {
                break 'frames line.to_string();
            }
        }
    };
    let urls = info_json(&update)["connect_urls"].clone();
    assert_eq!(
        urls,
        json!(websocket_ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()),
        "{update}"
    );
}

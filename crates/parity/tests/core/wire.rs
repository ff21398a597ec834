//! Raw-wire behaviour, byte for byte: INFO, verbose +OK, -ERR texts and which errors close the
//! connection, limits, UNSUB max, headers, no-responders, echo. Passes against the real
//! nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test core wire::`).

use std::time::Duration;
use test_harness::{RawClient, ServerOptions, TestServer};

const QUIET: &str = r#"{"verbose":false,"pedantic":false,"headers":true}"#;

fn server_with_config(config: &str) -> TestServer {
    TestServer::start(ServerOptions {
        config: Some(config.to_string()),
        ..Default::default()
    })
}

#[test]
fn info_has_the_fields_clients_need() {
    let server = TestServer::core();
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    let server_id = info["server_id"].as_str().unwrap();
    assert_eq!(server_id.len(), 56);
    assert!(server_id.starts_with('N'));
    assert_eq!(info["server_name"], info["server_id"]);
    let version = info["version"].as_str().unwrap();
    assert_eq!(version.split('.').count(), 3, "semver version: {version}");
    assert!(version.starts_with("2."));
    assert_eq!(info["proto"], 1);
    assert_eq!(info["host"], "127.0.0.1");
    assert_eq!(info["port"], server.port);
    assert_eq!(info["headers"], true);
    assert_eq!(info["max_payload"], 1048576);
    assert!(info["client_id"].as_u64().unwrap() > 0);
    assert_eq!(info["client_ip"], "127.0.0.1");
    assert!(info.get("auth_required").is_none());
    assert!(info.get("jetstream").is_none());
}

#[test]
fn info_line_format() {
    let server = TestServer::core();
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(&mut stream), &mut line).unwrap();
    assert!(line.starts_with("INFO {"));
    assert!(line.ends_with("} \r\n"), "{line:?}");
}

/// INFO carries `git_commit` (the build's commit, as `/varz` shows it; absent from both when
/// the build has none) right after `proto`, and `api_lvl` (JetStream's API level, sent with or
/// without JetStream) before `xkey`: nats-server 2.15.1's fields in its order.
#[test]
fn info_carries_git_commit_and_api_level_in_order() {
    let server = TestServer::start(test_harness::ServerOptions {
        monitoring: true,
        ..Default::default()
    });
    let client = RawClient::connect(&server);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    let varz = test_harness::monitoring::get_json(&server, "/varz");
    assert_eq!(info.get("git_commit"), varz.get("git_commit"), "{info}");
    assert_eq!(info["api_lvl"], 5, "{info}");
    let mut keys = vec![
        "server_id",
        "server_name",
        "version",
        "proto",
        "git_commit",
        "go",
        "host",
        "port",
        "headers",
        "max_payload",
        "client_id",
        "client_ip",
        "api_lvl",
        "xkey",
    ];
    if info.get("git_commit").is_none() {
        keys.retain(|key| *key != "git_commit");
    }
    let positions: Vec<usize> = keys
        .iter()
        .map(|key| {
            client
                .info
                .find(&format!("\"{key}\":"))
                .unwrap_or_else(|| panic!("no {key}: {}", client.info))
        })
        .collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "{keys:?} out of order: {}",
        client.info
    );
    let object = info.as_object().expect("INFO object");
    assert_eq!(object.len(), keys.len(), "{info}");
}

#[test]
fn verbose_defaults_to_true_and_ok_precedes_delivery() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\n");
    assert_eq!(
        client.ping_collect(),
        ["+OK", "+OK", "+OK", "MSG foo 1 2", "hi", "PONG"]
    );
}

#[test]
fn pub_sub_with_reply_and_queue() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo.* 1\r\nSUB foo.> q 2\r\nPUB foo.bar inbox.1 5\r\nhello\r\n");
    let lines = client.ping_collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(lines.contains(&"MSG foo.bar 1 inbox.1 5".to_string()));
    assert!(lines.contains(&"MSG foo.bar 2 inbox.1 5".to_string()));
}

#[test]
fn echo_off_suppresses_own_messages() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"pedantic":false,"echo":false}"#,
    );
    client.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\n");
    assert_eq!(client.ping_collect(), ["PONG"]);
}

#[test]
fn unsub_with_max_delivers_exactly_max() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo 1\r\nUNSUB 1 2\r\n");
    for _ in 0..4 {
        client.send("PUB foo 1\r\nx\r\n");
    }
    assert_eq!(
        client.ping_collect(),
        ["MSG foo 1 1", "x", "MSG foo 1 1", "x", "PONG"]
    );
}

#[test]
fn unsub_removes_and_unknown_sid_is_fine() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo 1\r\nUNSUB 1\r\nUNSUB 99\r\nPUB foo 1\r\nx\r\n");
    assert_eq!(client.ping_collect(), ["PONG"]);
}

#[test]
fn headers_go_only_to_header_clients() {
    let server = TestServer::core();
    let mut plain = RawClient::connect_with(&server, r#"{"verbose":false,"pedantic":false}"#);
    plain.send("SUB foo 1\r\n");
    plain.ping_collect();
    let mut with_headers = RawClient::connect_with(&server, QUIET);
    with_headers.send("SUB foo 1\r\n");
    with_headers.send("HPUB foo 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nhi\r\n");
    assert_eq!(
        with_headers.ping_collect(),
        ["HMSG foo 1 18 20", "NATS/1.0", "A: b", "", "hi", "PONG"]
    );
    assert_eq!(plain.ping_collect(), ["MSG foo 1 2", "hi", "PONG"]);
}

#[test]
fn hpub_without_headers_closes_silently() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false,"pedantic":false}"#);
    client.send("HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(""));
}

#[test]
fn no_responders_status_goes_to_the_requester() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"pedantic":false,"headers":true,"no_responders":true}"#,
    );
    client.send("SUB inbox.* 1\r\nPUB service inbox.1 2\r\nhi\r\n");
    assert_eq!(
        client.ping_collect(),
        [
            "HMSG inbox.1 1 39 39",
            "NATS/1.0 503",
            "Nats-Subject: service",
            "",
            "",
            "PONG"
        ]
    );
}

#[test]
fn no_responders_without_headers_is_refused() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("CONNECT {\"no_responders\":true}\r\nPING\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'no responders requires headers support'\r\n")
    );
}

#[test]
fn invalid_subjects() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send(
        "CONNECT {\"verbose\":false}\r\nSUB foo..bar 1\r\nSUB foo.>.bar 2\r\nPUB foo.* 2\r\nhi\r\n",
    );
    assert_eq!(
        client.ping_collect(),
        [
            "-ERR 'Invalid Subject'",
            "-ERR 'Invalid Subject'",
            "-ERR 'Invalid Publish Subject'",
            "PONG"
        ]
    );
}

#[test]
fn duplicate_sid_keeps_the_first_subscription() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo 1\r\nSUB bar 1\r\nPUB bar 1\r\nx\r\nPUB foo 1\r\ny\r\n");
    assert_eq!(client.ping_collect(), ["MSG foo 1 1", "y", "PONG"]);
}

#[test]
fn garbage_operation_closes_with_unknown_protocol_operation() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("FOO bar\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Unknown Protocol Operation'\r\n")
    );
}

#[test]
fn payload_longer_than_announced_closes() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("PUB foo 2\r\nhello\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Unknown Protocol Operation'\r\n")
    );
}

#[test]
fn oversize_payload_closes_with_maximum_payload_violation() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("PUB foo 2000000\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Maximum Payload Violation'\r\n")
    );
}

#[test]
fn max_payload_from_config_is_announced_and_enforced() {
    let server = server_with_config("max_payload: 100\n");
    let mut client = RawClient::connect_with(&server, QUIET);
    let info: serde_json::Value = serde_json::from_str(&client.info).unwrap();
    assert_eq!(info["max_payload"], 100);
    client.send("PUB foo 100\r\n");
    client.send_bytes(&[b'x'; 100]);
    client.send("\r\n");
    client.ping_collect();
    client.send("PUB foo 101\r\n");
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'Maximum Payload Violation'\r\n")
    );
}

#[test]
fn wrong_argument_count_closes_without_error() {
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo\r\n");
    assert_eq!(client.read_to_close().as_deref(), Some(""));
}

#[test]
fn lowercase_operations_work() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("connect {\"verbose\":false}\r\nsub foo 1\r\npub foo 1\r\na\r\n");
    assert_eq!(client.ping_collect(), ["MSG foo 1 1", "a", "PONG"]);
}

#[test]
fn ping_without_connect_is_answered() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    assert_eq!(client.ping_collect(), ["PONG"]);
}

#[test]
fn max_control_line_is_enforced() {
    let server = server_with_config("max_control_line: 64\n");
    let mut client = RawClient::connect_with(&server, QUIET);
    let long_subject = "a".repeat(100);
    client.send(&format!("SUB {long_subject} 1\r\n"));
    assert_eq!(
        client.read_to_close().as_deref(),
        Some("-ERR 'maximum control line exceeded'\r\n")
    );
}

#[test]
fn max_subscriptions_refuses_extra_subscriptions() {
    let server = server_with_config("max_subscriptions: 2\n");
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB a 1\r\nSUB b 2\r\nSUB c 3\r\n");
    assert_eq!(
        client.ping_collect(),
        ["-ERR 'maximum subscriptions exceeded'", "PONG"]
    );
}

#[test]
fn max_connections_refuses_the_extra_connection() {
    let server = server_with_config("max_connections: 1\n");
    // The harness' readiness probe connection may still be counted for a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let _first = loop {
        let mut client = RawClient::connect(&server);
        client.send("CONNECT {\"verbose\":false}\r\nPING\r\n");
        if client.read_line().as_deref() == Some("PONG") {
            break client;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "first connection refused"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut second = RawClient::connect(&server);
    assert_eq!(
        second.read_to_close().as_deref(),
        Some("-ERR 'maximum connections exceeded'\r\n")
    );
}

#[test]
fn server_pings_and_closes_stale_connections() {
    let server = server_with_config("ping_interval: \"200ms\"\nping_max: 2\n");
    let mut client = RawClient::connect_with(&server, QUIET);
    client.timeout = Duration::from_secs(5);
    let text = client
        .read_to_close()
        .expect("server closes a stale client");
    assert_eq!(text, "PING\r\nPING\r\n-ERR 'Stale Connection'\r\n");
}

#[test]
fn answering_pings_keeps_the_connection() {
    // Generous enough for a loaded CI machine: a PONG within two intervals keeps it alive.
    let server = server_with_config("ping_interval: \"250ms\"\nping_max: 2\n");
    let mut client = RawClient::connect_with(&server, QUIET);
    for _ in 0..4 {
        client.expect_line("PING");
        client.send("PONG\r\n");
    }
    assert_eq!(
        client.ping_collect().last().map(String::as_str),
        Some("PONG")
    );
}

#[test]
fn queue_group_members_share_the_messages() {
    let server = TestServer::core();
    let mut members: Vec<RawClient> = (0..3)
        .map(|_| {
            let mut member = RawClient::connect_with(&server, QUIET);
            member.send("SUB jobs workers 1\r\n");
            member.ping_collect();
            member
        })
        .collect();
    let mut publisher = RawClient::connect_with(&server, QUIET);
    let total = 300;
    for _ in 0..total {
        publisher.send("PUB jobs 1\r\nj\r\n");
    }
    publisher.ping_collect();
    let counts: Vec<usize> = members
        .iter_mut()
        .map(|member| {
            member
                .ping_collect()
                .iter()
                .filter(|line| line.starts_with("MSG jobs 1 1"))
                .count()
        })
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), total, "{counts:?}");
    assert!(counts.iter().all(|count| *count > 0), "{counts:?}");
}

/// Answers (PONG) and deliveries to the connection itself leave in the order they were made,
/// whether the task that made them wrote them to the socket or the socket was full and the
/// connection's writer took over (ours writes from the reader while its writer idles).
#[test]
fn answers_and_own_deliveries_keep_their_order_when_the_socket_fills() {
    const ROUNDS: usize = 200_000;
    let server = TestServer::core();
    let mut client = RawClient::connect_with(&server, QUIET);
    client.send("SUB foo 1\r\n");
    // Sent without reading: the output (4.6 MB) outgrows the socket buffers.
    client.send(&"PUB foo 2\r\nhi\r\nPING\r\n".repeat(ROUNDS));
    for round in 0..ROUNDS {
        for expected in ["MSG foo 1 2", "hi", "PONG"] {
            let line = client.read_line();
            assert_eq!(line.as_deref(), Some(expected), "round {round}");
        }
    }
    assert_eq!(client.ping_collect(), ["PONG"]);
}

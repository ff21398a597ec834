//! The CLOSE frame a websocket client gets for each way the server ends its connection, ours
//! and nats-server alike (issue 18): 1009 "Maximum Message Payload Exceeded" for a PUB over
//! `max_payload`, 1008 "Maximum Control Line Exceeded" for a protocol line over
//! `max_control_line`, 1008 "Authentication Failure" for a refused CONNECT, 1001 "Server
//! Shutdown" when the server stops; each after the `-ERR` a TCP client would get. Going over
//! `max_subscriptions` is answered with `-ERR` and the connection stays open, as over TCP.

use super::websocket::{frame, raw_client, read_frame, read_until_close, wait_for_port};
use std::io::Write;
use test_harness::{free_port, ServerOptions, TestServer};

const CONNECT: &[u8] = b"CONNECT {\"verbose\":false,\"protocol\":1}\r\n";

/// A server with limits low enough to cross and a plain-text websocket listener.
fn limited_server(extra: &str) -> (TestServer, u16) {
    limited_server_with(extra, "max_payload: 1024\n")
}

/// [`limited_server`] with its own `max_payload` line.
fn limited_server_with(extra: &str, payload: &str) -> (TestServer, u16) {
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "{payload}max_control_line: 256\nmax_subscriptions: 2\n{extra}\n\
             websocket {{\n  listen: \"127.0.0.1:{port}\"\n  no_tls: true\n}}\n"
        )),
        ..Default::default()
    });
    wait_for_port(port);
    (server, port)
}

/// A websocket client that sent CONNECT, `then` and a PING, and read up to the PONG.
fn connected(port: u16, then: &[u8]) -> std::net::TcpStream {
    let (mut stream, _) = raw_client(port, "");
    let mut payload = CONNECT.to_vec();
    payload.extend_from_slice(then);
    payload.extend_from_slice(b"PING\r\n");
    stream
        .write_all(&frame(2, &payload, true))
        .expect("send frame");
    let mut data = String::new();
    while !data.contains("PONG\r\n") {
        let (_, payload) = read_frame(&mut stream).expect("PONG");
        data.push_str(&String::from_utf8_lossy(&payload));
    }
    stream
}

/// Send one frame holding `bytes` after CONNECT; what came back before the CLOSE, and the
/// CLOSE's status and reason.
fn send_then_close(port: u16, bytes: &[u8]) -> (String, Option<(u16, String)>) {
    let (mut stream, _) = raw_client(port, "");
    let mut payload = CONNECT.to_vec();
    payload.extend_from_slice(bytes);
    stream
        .write_all(&frame(2, &payload, true))
        .expect("send frame");
    read_until_close(&mut stream)
}

#[test]
fn a_payload_over_max_payload_closes_with_1009() {
    let (_server, port) = limited_server("");
    let mut publish = b"PUB foo 2000\r\n".to_vec();
    publish.extend_from_slice(&[b'x'; 2000]);
    publish.extend_from_slice(b"\r\n");
    let (data, status) = send_then_close(port, &publish);
    assert_eq!(data, "-ERR 'Maximum Payload Violation'\r\n");
    assert_eq!(
        status,
        Some((1009, "Maximum Message Payload Exceeded".to_string()))
    );
}

#[test]
fn a_control_line_over_max_control_line_closes_with_1008() {
    let (_server, port) = limited_server("");
    let line = format!("PUB {} 1\r\nx\r\n", "a".repeat(300));
    let (data, status) = send_then_close(port, line.as_bytes());
    assert_eq!(data, "-ERR 'maximum control line exceeded'\r\n");
    assert_eq!(
        status,
        Some((1008, "Maximum Control Line Exceeded".to_string()))
    );
}

#[test]
fn a_refused_connect_closes_with_1008() {
    let (_server, port) = limited_server("authorization { user: a, password: b }");
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(
            2,
            b"CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"wrong\"}\r\n",
            true,
        ))
        .expect("send frame");
    let (data, status) = read_until_close(&mut stream);
    assert_eq!(data, "-ERR 'Authorization Violation'\r\n");
    assert_eq!(status, Some((1008, "Authentication Failure".to_string())));
}

#[test]
fn too_many_subscriptions_is_an_error_not_a_close() {
    let (_server, port) = limited_server("");
    let (mut stream, _) = raw_client(port, "");
    let mut payload = CONNECT.to_vec();
    payload.extend_from_slice(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nPING\r\n");
    stream
        .write_all(&frame(2, &payload, true))
        .expect("send frame");
    // The -ERR, then PONG: the connection is still served (frames may split anywhere).
    let mut data = String::new();
    while !data.contains("PONG\r\n") {
        let (first, payload) = read_frame(&mut stream).expect("a frame before PONG");
        assert_ne!(first & 0x0F, 8, "no CLOSE: {data}");
        data.push_str(&String::from_utf8_lossy(&payload));
    }
    assert!(
        data.starts_with("-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n"),
        "{data}"
    );
}

#[test]
fn server_shutdown_closes_with_1001() {
    let (mut server, port) = limited_server("");
    let mut stream = connected(port, b"");
    server.stop();
    let (_, status) = read_until_close(&mut stream);
    assert_eq!(status, Some((1001, "Server Shutdown".to_string())));
}

/// A slow consumer is dropped without a CLOSE frame (nats-server does not flush a connection
/// it closes for that; the peer sees the connection end, its 1006), and it is dropped even
/// though it reads nothing: the socket ends within the write deadline.
#[test]
fn a_slow_consumer_is_dropped_without_a_close_frame() {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let (server, port) = limited_server_with(
        "write_deadline: \"500ms\"\nmax_pending: 1MB\n",
        "max_payload: 1MB\n",
    );
    let mut stream = connected(port, b"SUB big 1\r\n");
    // Far more than the socket buffers and max_pending hold, while the client reads nothing.
    let mut publisher = test_harness::RawClient::connect_with(&server, r#"{"verbose":false}"#);
    let message = format!("PUB big 65536\r\n{}\r\n", "x".repeat(65536));
    for _ in 0..300 {
        publisher.send(&message);
    }
    publisher.ping_collect();
    let started = Instant::now();
    let mut close = None;
    while let Some((first, payload)) = read_frame(&mut stream) {
        if first & 0x0F == 8 {
            close = Some(String::from_utf8_lossy(&payload).into_owned());
        }
    }
    // The last frame may be cut short; then the socket is at its end.
    let mut rest = Vec::new();
    let ended = stream.read_to_end(&mut rest).is_ok();
    assert!(
        ended && started.elapsed() < Duration::from_secs(9),
        "still open after {:?}",
        started.elapsed()
    );
    assert_eq!(close, None, "no CLOSE frame");
}

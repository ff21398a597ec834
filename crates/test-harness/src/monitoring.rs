//! The monitoring endpoints (`/varz`, `/connz`, `/jsz`, ...) of a server started with
//! `monitoring`, read over plain HTTP; every read is bounded.

use crate::TestServer;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// GET `path` (with its query) and parse the body; the answer must be `200` with a JSON
/// content type, as nats-server sends.
pub fn get_json(server: &TestServer, path: &str) -> Value {
    let port = server.monitor_port.expect("server started with monitoring");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect monitoring port");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("send request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let text = String::from_utf8(response).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("http response");
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{path}: {head}"
    );
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

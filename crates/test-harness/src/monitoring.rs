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
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("content-type: application/json"),
        "{path}: {head}"
    );
    // nats-server's Go HTTP server sends a large body (`/varz` with JetStream) in chunks.
    let body = if head.contains("transfer-encoding: chunked") {
        unchunk(body)
    } else {
        body.to_string()
    };
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// The body of a `Transfer-Encoding: chunked` response: each chunk is its size in hex, a line
/// end, the bytes and a line end; a zero size ends it.
fn unchunk(body: &str) -> String {
    let mut rest = body.as_bytes();
    let mut joined = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|pair| pair == b"\r\n")
            .expect("chunk size line");
        let size_line = String::from_utf8_lossy(&rest[..line_end]);
        let size_text = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).expect("hex chunk size");
        if size == 0 {
            return String::from_utf8(joined).expect("utf-8 body");
        }
        let chunk_start = line_end + 2;
        joined.extend_from_slice(&rest[chunk_start..chunk_start + size]);
        rest = &rest[chunk_start + size + 2..];
    }
}

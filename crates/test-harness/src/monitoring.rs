//! The monitoring endpoints (`/varz`, `/connz`, `/jsz`, ...) of a server started with
//! `monitoring`, read over plain HTTP/1.1 (one response at a time, so a connection can be kept
//! alive across requests); every read is bounded.

use crate::TestServer;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP response: its status, its head (lower-cased, for header checks) and its body
/// (chunked bodies joined).
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl HttpResponse {
    /// The value of header `name` (lower-case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim())
        })
    }
}

/// A connection to the monitoring port of `server`, with a read bound.
pub fn connect(server: &TestServer) -> TcpStream {
    let port = server.monitor_port.expect("server started with monitoring");
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect monitoring port");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    stream
}

/// GET `path` on a fresh connection (closed after the answer).
pub fn get_response(server: &TestServer, path: &str) -> HttpResponse {
    let mut stream = connect(server);
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("send request");
    read_response(&mut stream).unwrap_or_else(|| panic!("{path}: no response"))
}

/// GET `path` (with its query) and parse the body; the answer must be `200` with a JSON
/// content type, as nats-server sends.
pub fn get_json(server: &TestServer, path: &str) -> Value {
    let response = get_response(server, path);
    assert_eq!(response.status, 200, "{path}: {response:?}");
    assert!(
        response
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/json")),
        "{path}: {}",
        response.head
    );
    serde_json::from_str(&response.body)
        .unwrap_or_else(|e| panic!("{path}: {e}: {}", response.body))
}

/// Read one response from `stream` (Content-Length, chunked, or until close); `None` when the
/// server closed without answering.
pub fn read_response(stream: &mut TcpStream) -> Option<HttpResponse> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position;
        }
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status code");
    let mut rest = buffer[head_end + 4..].to_vec();
    let mut response = HttpResponse {
        status,
        head,
        body: String::new(),
    };
    let fill = |rest: &mut Vec<u8>, stream: &mut TcpStream, wanted: usize| {
        while rest.len() < wanted {
            let mut chunk = [0u8; 16384];
            let read = stream.read(&mut chunk).expect("read body");
            assert!(read > 0, "connection closed inside a body");
            rest.extend_from_slice(&chunk[..read]);
        }
    };
    if response.header("transfer-encoding") == Some("chunked") {
        // nats-server's Go HTTP server sends a large body (`/varz` with JetStream) in chunks:
        // each is its size in hex, a line end, the bytes and a line end; a zero size ends it.
        let mut joined = Vec::new();
        loop {
            let line_end = loop {
                if let Some(position) = rest.windows(2).position(|pair| pair == b"\r\n") {
                    break position;
                }
                let wanted = rest.len() + 1;
                fill(&mut rest, stream, wanted);
            };
            let size_line = String::from_utf8_lossy(&rest[..line_end]).to_string();
            let size_text = size_line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16).expect("hex chunk size");
            fill(&mut rest, stream, line_end + 2 + size + 2);
            if size == 0 {
                break;
            }
            joined.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
            rest.drain(..line_end + 2 + size + 2);
        }
        response.body = String::from_utf8(joined).expect("utf-8 body");
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length.parse().expect("content-length");
        fill(&mut rest, stream, length);
        response.body = String::from_utf8_lossy(&rest[..length]).into_owned();
    } else {
        let _ = stream.read_to_end(&mut rest);
        response.body = String::from_utf8_lossy(&rest).into_owned();
    }
    Some(response)
}

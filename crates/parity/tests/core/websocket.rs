//! WebSocket clients (`websocket { }`), ours and nats-server alike: async-nats over `ws://`
//! (pub/sub, request/reply, a JetStream publish with its PubAck, a TCP client and a websocket
//! client seeing each other's messages), and raw upgrades and frames: refused upgrades with
//! their HTTP status, origin checks (403), INFO in a binary frame, a PING answered with a PONG,
//! a CLOSE echoed with its status, an unmasked frame or an oversized control frame closed
//! with 1002 and the reason, a NATS protocol error answered with `-ERR` in a frame,
//! permessage-deflate negotiated and used both ways, the start-up refusal without TLS, and
//! the `/varz` websocket block.

use base64::Engine;
use futures::StreamExt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use test_harness::{free_port, ServerOptions, TestServer};
use tokio::time::timeout;

pub(super) const WAIT: Duration = Duration::from_secs(10);

/// A server with a plain-text websocket listener on its own port (`extra` goes in the block).
fn websocket_server(extra: &str, jetstream: bool) -> (TestServer, u16) {
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "websocket {{\n  listen: \"127.0.0.1:{port}\"\n  no_tls: true\n  {extra}\n}}\n"
        )),
        jetstream,
        ..Default::default()
    });
    wait_for_port(port);
    (server, port)
}

pub(super) fn wait_for_port(port: u16) {
    let deadline = Instant::now() + WAIT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "websocket port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn new_key() -> String {
    let bytes: [u8; 16] = std::array::from_fn(|index| (index as u8).wrapping_mul(37));
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A well-formed upgrade request with `extra` header lines.
pub(super) fn upgrade_request(extra: &str) -> String {
    format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n",
        new_key()
    )
}

/// Send `request` and read the response head (up to the blank line).
pub(super) fn send_request(port: u16, request: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect websocket port");
    stream
        .set_read_timeout(Some(WAIT))
        .expect("set read timeout");
    stream.write_all(request.as_bytes()).expect("send request");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}

/// An upgraded raw connection, with the INFO frame read.
pub(super) fn raw_client(port: u16, extra: &str) -> (TcpStream, String) {
    let (mut stream, head) = send_request(port, &upgrade_request(extra));
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let (first, info) = read_frame(&mut stream).expect("INFO frame");
    assert_eq!(first & 0x0F, 2, "INFO comes in a binary frame");
    (stream, String::from_utf8_lossy(&info).into_owned())
}

/// A client frame: FIN, `opcode`, masked unless `masked` is false.
pub(super) fn frame(opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    if payload.len() <= 125 {
        out.push(mask_bit | payload.len() as u8);
    } else if payload.len() < 65_536 {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    }
    if masked {
        let key = [0x3a, 0x91, 0x07, 0xc4];
        out.extend_from_slice(&key);
        out.extend(
            payload
                .iter()
                .enumerate()
                .map(|(index, byte)| byte ^ key[index & 3]),
        );
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// One server frame: (first byte, payload). Server frames are never masked.
pub(super) fn read_frame(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).ok()?;
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let length = match head[1] & 0x7F {
        126 => {
            let mut wide = [0u8; 2];
            stream.read_exact(&mut wide).ok()?;
            u16::from_be_bytes(wide) as usize
        }
        127 => {
            let mut wide = [0u8; 8];
            stream.read_exact(&mut wide).ok()?;
            u64::from_be_bytes(wide) as usize
        }
        short => short as usize,
    };
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).ok()?;
    Some((head[0], payload))
}

/// Frames until the CLOSE: (data received, the CLOSE's status and body).
pub(super) fn read_until_close(stream: &mut TcpStream) -> (String, Option<(u16, String)>) {
    let mut data = String::new();
    while let Some((first, payload)) = read_frame(stream) {
        match first & 0x0F {
            8 => {
                let status = (payload.len() >= 2).then(|| {
                    (
                        u16::from_be_bytes([payload[0], payload[1]]),
                        String::from_utf8_lossy(&payload[2..]).into_owned(),
                    )
                });
                return (data, status);
            }
            _ => data.push_str(&String::from_utf8_lossy(&payload)),
        }
    }
    (data, None)
}

/// A connection closed for a broken frame or a NATS protocol error. nats-server closes it as a
/// read error and its CLOSE frame races the socket's close (CI saw both: no CLOSE, and CLOSE
/// 1002 with the reason); rnats always sends the replies queued before the error, then a
/// CLOSE with status 1002 and the reason (docs/parity.md).
fn expect_protocol_close(stream: &mut TcpStream, data: &str, reason: &str) {
    let (received, status) = read_until_close(stream);
    if test_harness::is_reference() {
        assert!(
            status.is_none() || status == Some((1002, reason.to_string())),
            "nats-server drops the connection, at most after a CLOSE 1002 {reason:?}: {status:?}"
        );
    } else {
        assert_eq!(received, data);
        assert_eq!(status, Some((1002, reason.to_string())));
    }
}

#[test]
fn refused_upgrades_get_the_http_status() {
    let (_server, port) = websocket_server("", false);
    let key = new_key();
    let cases = [
        ("POST / HTTP/1.1\r\nHost: x\r\n\r\n".to_string(), "405 Method Not Allowed"),
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_string(), "400 Bad Request"),
        (
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n".to_string(),
            "400 Bad Request",
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n".to_string(),
            "400 Bad Request",
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n".to_string(),
            "400 Bad Request",
        ),
        (
            format!("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 12\r\n\r\n"),
            "400 Bad Request",
        ),
    ];
    for (request, status) in cases {
        let (_stream, head) = send_request(port, &request);
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status}\r\n")),
            "{request:?}: {head}"
        );
        assert!(head.contains("Sec-Websocket-Version: 13\r\n"), "{head}");
    }
}

#[test]
fn origins_outside_the_allowed_list_are_forbidden() {
    let (_server, port) =
        websocket_server("allowed_origins: [\"http://good.example:8080\"]", false);
    let (_stream, head) = send_request(port, &upgrade_request("Origin: http://evil.example\r\n"));
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    let (_stream, head) = send_request(
        port,
        &upgrade_request("Origin: http://good.example:8080\r\n"),
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    // No Origin at all: not a browser, accepted.
    let (_stream, head) = send_request(port, &upgrade_request(""));
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");

    let (_server, port) = websocket_server("same_origin: true", false);
    let (_stream, head) = send_request(port, &upgrade_request("Origin: http://127.0.0.2\r\n"));
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    let (_stream, head) = send_request(port, &upgrade_request("Origin: http://127.0.0.1\r\n"));
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
}

#[test]
fn info_names_the_websocket_port_and_accept_key_is_right() {
    let (_server, port) = websocket_server("", false);
    let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    let (mut stream, head) = send_request(port, request);
    assert!(
        head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    assert!(!head.contains("Sec-WebSocket-Extensions"), "{head}");
    let (first, info) = read_frame(&mut stream).expect("INFO frame");
    assert_eq!(first, 0x82);
    let info = String::from_utf8_lossy(&info);
    assert!(
        info.starts_with("INFO {") && info.ends_with("\r\n"),
        "{info}"
    );
    let json: serde_json::Value =
        serde_json::from_str(info["INFO ".len()..].trim()).expect("INFO JSON");
    assert_eq!(json["port"], port, "{info}");
}

#[test]
fn ping_gets_a_pong_and_close_is_echoed() {
    let (_server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(9, b"are you there", true))
        .expect("send ping");
    let (first, payload) = read_frame(&mut stream).expect("pong");
    assert_eq!(first, 0x8A);
    assert_eq!(payload, b"are you there");
    let mut close = 1000u16.to_be_bytes().to_vec();
    close.extend_from_slice(b"bye");
    stream
        .write_all(&frame(8, &close, true))
        .expect("send close");
    let (_, status) = read_until_close(&mut stream);
    assert_eq!(status, Some((1000, "bye".to_string())));
}

#[test]
fn an_unmasked_frame_is_a_protocol_error() {
    let (_server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(2, b"PING\r\n", false))
        .expect("send frame");
    expect_protocol_close(&mut stream, "", "mask bit missing");
}

#[test]
fn a_control_frame_over_the_limit_is_a_protocol_error() {
    let (_server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(9, &[b'x'; 126], true))
        .expect("send ping");
    expect_protocol_close(
        &mut stream,
        "",
        "control frame length bigger than maximum allowed of 125 bytes",
    );
}

#[test]
fn a_nats_protocol_error_comes_back_as_err_in_a_frame() {
    let (_server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    stream
        .write_all(&frame(
            2,
            b"CONNECT {\"verbose\":false}\r\nPING\r\nBOGUS\r\n",
            true,
        ))
        .expect("send frame");
    expect_protocol_close(
        &mut stream,
        "PONG\r\n-ERR 'Unknown Protocol Operation'\r\n",
        "Protocol Violation",
    );
}

#[test]
fn frames_split_anywhere_still_parse() {
    let (_server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    let mut bytes = frame(1, b"CONNECT {\"verbose\":false}\r\nSUB a 1\r\n", true);
    // A fragmented message: binary start, a continuation, then the final continuation.
    let first = frame(2, b"PUB a 5\r\nhe", true);
    let mut middle = frame(0, b"l", true);
    let mut last = frame(0, b"lo\r\nPING\r\n", true);
    let mut start = first.clone();
    start[0] &= 0x7F; // not final
    middle[0] &= 0x7F;
    last[0] |= 0x80;
    bytes.extend_from_slice(&start);
    bytes.extend_from_slice(&middle);
    bytes.extend_from_slice(&last);
    for chunk in bytes.chunks(3) {
        stream.write_all(chunk).expect("send");
        stream.flush().expect("flush");
    }
    let mut data = String::new();
    while !data.ends_with("PONG\r\n") {
        let (_, payload) = read_frame(&mut stream).expect("frame");
        data.push_str(&String::from_utf8_lossy(&payload));
    }
    assert_eq!(data, "MSG a 1 5\r\nhello\r\nPONG\r\n");
}

#[test]
fn large_messages_cross_frames_both_ways() {
    let (server, port) = websocket_server("", false);
    let (mut stream, _) = raw_client(port, "");
    let payload = "p".repeat(300_000);
    let mut publish = format!(
        "CONNECT {{\"verbose\":false}}\r\nSUB big 1\r\nPUB big {}\r\n",
        payload.len()
    );
    publish.push_str(&payload);
    publish.push_str("\r\nPING\r\n");
    stream
        .write_all(&frame(2, publish.as_bytes(), true))
        .expect("send");
    let mut data = String::new();
    while !data.ends_with("PONG\r\n") {
        let (_, bytes) = read_frame(&mut stream).expect("frame");
        data.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(
        data,
        format!("MSG big 1 {}\r\n{payload}\r\nPONG\r\n", payload.len())
    );
    // From a TCP publisher to the websocket subscriber.
    let mut publisher = test_harness::RawClient::connect(&server);
    publisher.send(&format!(
        "CONNECT {{\"verbose\":false}}\r\nPUB big {}\r\n{payload}\r\n",
        payload.len()
    ));
    let expected = format!("MSG big 1 {}\r\n{payload}\r\n", payload.len());
    let mut data = String::new();
    while data.len() < expected.len() {
        let (_, bytes) = read_frame(&mut stream).expect("frame");
        data.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(data, expected);
}

#[test]
fn websocket_requires_tls_unless_no_tls() {
    let port = free_port();
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("ws.conf");
    std::fs::write(&path, format!("websocket {{ port: {port} }}\n")).expect("write config");
    let path_text = path.display().to_string();
    let finished = crate::process::run(&["-c", &path_text], WAIT).expect("must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    assert_eq!(
        finished.stderr,
        "nats-server: websocket requires TLS configuration\n"
    );
}

#[test]
fn varz_shows_the_websocket_block() {
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "websocket {{ listen: \"127.0.0.1:{port}\", no_tls: true, compression: true, advertise: \"ws.example:443\" }}\n"
        )),
        monitoring: true,
        ..Default::default()
    });
    let varz = test_harness::monitoring::get_json(&server, "/varz");
    let block = &varz["websocket"];
    assert_eq!(block["host"], "127.0.0.1", "{block}");
    assert_eq!(block["port"], port, "{block}");
    assert_eq!(block["no_tls"], true, "{block}");
    assert_eq!(block["compression"], true, "{block}");
    assert_eq!(block["advertise"], "ws.example:443", "{block}");
}

#[test]
fn compression_is_negotiated_and_used_both_ways() {
    let (server, port) = websocket_server("compression: true", false);
    let (mut stream, head) = send_request(
        port,
        &upgrade_request(
            "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n",
        ),
    );
    assert!(
        head.contains("Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n"),
        "{head}"
    );
    let (first, info) = read_frame(&mut stream).expect("INFO frame");
    assert_eq!(first, 0xC2, "INFO is compressed (FIN, RSV1, binary)");
    let info = inflate(&info);
    assert!(info.starts_with("INFO {"), "{info}");

    let mut subscriber = test_harness::RawClient::connect(&server);
    subscriber.send("CONNECT {\"verbose\":false}\r\nSUB compressed 1\r\nPING\r\n");
    subscriber.expect_line("PONG");
    let payload = "z".repeat(500);
    let text = format!(
        "CONNECT {{\"verbose\":false}}\r\nPUB compressed {}\r\n{payload}\r\nPING\r\n",
        payload.len()
    );
    let mut compressed = deflate(text.as_bytes());
    let mut message = frame(2, &compressed, true);
    message[0] |= 0x40;
    stream.write_all(&message).expect("send compressed frame");
    subscriber.expect_line(&format!("MSG compressed 1 {}", payload.len()));
    compressed.clear();
    let (first, pong) = read_frame(&mut stream).expect("PONG frame");
    assert_eq!(first, 0x82, "small batches are not compressed");
    assert_eq!(pong, b"PONG\r\n");
}

fn inflate(bytes: &[u8]) -> String {
    let mut input = bytes.to_vec();
    input.extend_from_slice(&[0, 0, 0xff, 0xff]);
    let mut decoder = flate2::read::DeflateDecoder::new(&input[..]);
    let mut text = String::new();
    let _ = decoder.read_to_string(&mut text);
    text
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("deflate");
    encoder.flush().expect("sync flush");
    let mut out = encoder.finish().expect("finish");
    // A sync flush ends with 00 00 ff ff, the final empty block follows; send the
    // message as permessage-deflate wants it: up to the sync tail.
    if let Some(position) = out
        .windows(4)
        .rposition(|window| window == [0, 0, 0xff, 0xff])
    {
        out.truncate(position);
    }
    out
}

#[tokio::test]
#[ignore = "async-nats 0.51's ws transport stalls on deliveries under load, against nats-server too (a 60 KB message never arrives from either); the raw tests cover the same paths"]
async fn async_nats_over_ws_publishes_subscribes_and_requests() {
    let (server, port) = websocket_server("", false);
    let websocket = timeout(WAIT, async_nats::connect(format!("ws://127.0.0.1:{port}")))
        .await
        .expect("connect in time")
        .expect("connect over ws");
    let tcp = async_nats::connect(server.url())
        .await
        .expect("connect tcp");

    let mut from_tcp = websocket.subscribe("cross.tcp").await.expect("subscribe");
    let mut from_websocket = tcp.subscribe("cross.ws").await.expect("subscribe");
    websocket.flush().await.expect("flush");
    tcp.flush().await.expect("flush");
    tcp.publish("cross.tcp", "from tcp".into())
        .await
        .expect("publish");
    websocket
        .publish("cross.ws", "from websocket".into())
        .await
        .expect("publish");
    let message = timeout(WAIT, from_tcp.next()).await.expect("in time");
    assert_eq!(message.expect("message").payload, "from tcp");
    let message = timeout(WAIT, from_websocket.next()).await.expect("in time");
    assert_eq!(message.expect("message").payload, "from websocket");

    let mut service = tcp.subscribe("service").await.expect("subscribe");
    tcp.flush().await.expect("flush");
    let responder = tcp.clone();
    tokio::spawn(async move {
        while let Some(request) = service.next().await {
            if let Some(reply) = request.reply {
                let _ = responder.publish(reply, "answer".into()).await;
            }
        }
    });
    let answer = timeout(WAIT, websocket.request("service", "question".into()))
        .await
        .expect("in time")
        .expect("answer");
    assert_eq!(answer.payload, "answer");
}

#[tokio::test]
async fn a_jetstream_publish_over_ws_gets_its_pub_ack() {
    let (_server, port) = websocket_server("", true);
    let client = timeout(WAIT, async_nats::connect(format!("ws://127.0.0.1:{port}")))
        .await
        .expect("connect in time")
        .expect("connect over ws");
    let jetstream = async_nats::jetstream::new(client);
    jetstream
        .create_stream(async_nats::jetstream::stream::Config {
            name: "WS".into(),
            subjects: vec!["ws.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let ack = timeout(WAIT, async {
        jetstream
            .publish("ws.one", "stored".into())
            .await
            .expect("publish")
            .await
            .expect("ack")
    })
    .await
    .expect("ack in time");
    assert_eq!(ack.stream, "WS");
    assert_eq!(ack.sequence, 1);
}

#[tokio::test]
async fn wss_uses_the_websocket_tls_block() {
    let certificates = test_harness::certificates::TestCertificates::generate();
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "websocket {{\n  listen: \"127.0.0.1:{port}\"\n  {}\n}}\n",
            certificates.block("")
        )),
        ..Default::default()
    });
    wait_for_port(port);
    let client = timeout(
        WAIT,
        async_nats::ConnectOptions::new()
            .add_root_certificates(certificates.ca())
            .connect(format!("wss://localhost:{port}")),
    )
    .await
    .expect("connect in time")
    .expect("connect over wss");
    let mut subscription = client.subscribe("secure").await.expect("subscribe");
    client.flush().await.expect("flush");
    let tcp = async_nats::connect(server.url())
        .await
        .expect("connect tcp");
    tcp.publish("secure", "over tls".into())
        .await
        .expect("publish");
    let message = timeout(WAIT, subscription.next()).await.expect("in time");
    assert_eq!(message.expect("message").payload, "over tls");
    // Plain text on the TLS listener is not a websocket upgrade.
    let (_stream, head) = send_request(port, &upgrade_request(""));
    assert!(!head.starts_with("HTTP/1.1 101"), "{head}");
}

#[test]
fn websocket_authorization_and_cookies() {
    let (_server, port) = websocket_server(
        "authorization { token: \"websecret\" }\n  token_cookie: \"nats_token\"",
        false,
    );
    // INFO says auth is required for websocket clients only.
    let (mut stream, info) = raw_client(port, "");
    assert!(info.contains("\"auth_required\":true"), "{info}");
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\nPING\r\n", true))
        .expect("send");
    let (data, status) = read_until_close(&mut stream);
    assert_eq!(data, "-ERR 'Authorization Violation'\r\n");
    assert_eq!(status.map(|(code, _)| code), Some(1008));
    // The token from the cookie.
    let (mut stream, _) = raw_client(port, "Cookie: other=1; nats_token=websecret\r\n");
    stream
        .write_all(&frame(2, b"CONNECT {\"verbose\":false}\r\nPING\r\n", true))
        .expect("send");
    let (_, pong) = read_frame(&mut stream).expect("PONG");
    assert_eq!(pong, b"PONG\r\n");
}

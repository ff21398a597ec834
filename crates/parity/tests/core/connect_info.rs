//! The INFO nats-server sends after the PONG to a client's first PING once CONNECT said
//! `protocol` 1 or more, over TCP and websocket alike: the server's INFO with `connect_info`,
//! `remote_account` (the account the client is bound to) and `acc_is_sys` for the system
//! account; nothing for `protocol` 0 nor for later PINGs. Passes against nats-server too
//! (`NATS_SERVER_BIN`).

use super::websocket::{frame, raw_client, read_frame, wait_for_port};
use serde_json::Value;
use std::io::Write;
use test_harness::{free_port, RawClient, ServerOptions, TestServer};

fn server() -> (TestServer, u16) {
    let port = free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "accounts {{\n  SYS {{ users: [ {{ user: sys, password: sys }} ] }}\n  \
             A {{ users: [ {{ user: a, password: a }} ] }}\n}}\nsystem_account: SYS\n\
             websocket {{\n  listen: \"127.0.0.1:{port}\"\n  no_tls: true\n}}\n"
        )),
        ..Default::default()
    });
    wait_for_port(port);
    (server, port)
}

fn info_json(line: &str) -> Value {
    let text = line
        .strip_prefix("INFO ")
        .unwrap_or_else(|| panic!("not an INFO: {line:?}"));
    serde_json::from_str(text.trim()).expect("INFO json")
}

#[test]
fn tcp_clients_get_an_info_after_their_first_pong() {
    let (server, _) = server();
    let mut client = RawClient::connect(&server);
    let first = info_json(&format!("INFO {}", client.info));
    client.send(
        "CONNECT {\"verbose\":false,\"protocol\":1,\"user\":\"a\",\"pass\":\"a\"}\r\nPING\r\n",
    );
    client.expect_line("PONG");
    let second = info_json(&client.read_line().expect("INFO after PONG"));
    assert_eq!(second["connect_info"], true, "{second}");
    assert_eq!(second["remote_account"], "A", "{second}");
    assert!(second.get("acc_is_sys").is_none(), "{second}");
    assert!(second.get("nonce").is_none(), "{second}");
    for key in ["server_id", "client_id", "client_ip", "port", "max_payload"] {
        assert_eq!(second[key], first[key], "{key}: {second}");
    }
    // Only the first PING.
    client.send("PING\r\n");
    client.expect_line("PONG");
    client.send("PING\r\n");
    client.expect_line("PONG");

    let mut system = RawClient::connect(&server);
    system.send(
        "CONNECT {\"verbose\":false,\"protocol\":1,\"user\":\"sys\",\"pass\":\"sys\"}\r\nPING\r\n",
    );
    system.expect_line("PONG");
    let info = info_json(&system.read_line().expect("INFO after PONG"));
    assert_eq!(info["remote_account"], "SYS", "{info}");
    assert_eq!(info["acc_is_sys"], true, "{info}");

    // protocol 0 takes no async INFO.
    let mut old = RawClient::connect(&server);
    old.send(
        "CONNECT {\"verbose\":false,\"protocol\":0,\"user\":\"a\",\"pass\":\"a\"}\r\nPING\r\n",
    );
    old.expect_line("PONG");
    old.send("PING\r\n");
    old.expect_line("PONG");
}

#[test]
fn websocket_clients_get_it_with_the_websocket_listener() {
    let (_server, port) = server();
    let (mut stream, first) = raw_client(port, "");
    let first = info_json(&first);
    let connect =
        b"CONNECT {\"verbose\":false,\"protocol\":1,\"user\":\"a\",\"pass\":\"a\"}\r\nPING\r\n";
    stream
        .write_all(&frame(2, connect, true))
        .expect("send frame");
    let mut data = String::new();
    while !data.ends_with("\r\n") || !data.contains("INFO") {
        let (first, payload) = read_frame(&mut stream).expect("PONG and INFO");
        assert_eq!(first & 0x0F, 2, "binary frames: {data}");
        data.push_str(&String::from_utf8_lossy(&payload));
    }
    let info_line = data
        .strip_prefix("PONG\r\n")
        .unwrap_or_else(|| panic!("PONG first: {data:?}"));
    let second = info_json(info_line);
    assert_eq!(second["connect_info"], true, "{second}");
    assert_eq!(second["remote_account"], "A", "{second}");
    assert_eq!(second["port"], port, "{second}");
    assert_eq!(second["port"], first["port"], "{second}");
    assert_eq!(second["client_id"], first["client_id"], "{second}");
}

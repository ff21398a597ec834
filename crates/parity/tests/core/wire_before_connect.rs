//! Operations before CONNECT: nats-server serves them with its default client options
//! (verbose and pedantic, so `+OK` after each and `-ERR 'Invalid Publish Subject'` for a
//! wildcard PUB) until CONNECT replaces them; with authorization configured anything but
//! CONNECT is an `Authorization Violation` that closes. Passes against nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test core wire_before_connect`).

use test_harness::{RawClient, TestServer};

#[test]
fn pub_before_connect_is_acknowledged() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("PUB a 1\r\nx\r\n");
    assert_eq!(client.ping_collect(), ["+OK", "PONG"]);
}

#[test]
fn sub_unsub_and_delivery_before_connect_are_acknowledged() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("SUB a 1\r\nPUB a 1\r\nx\r\nUNSUB 1\r\nPUB a 1\r\ny\r\n");
    assert_eq!(
        client.ping_collect(),
        ["+OK", "+OK", "MSG a 1 1", "x", "+OK", "+OK", "PONG"]
    );
}

#[test]
fn wildcard_pub_before_connect_is_refused_as_pedantic() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("PUB a.*.b 1\r\nx\r\n");
    assert_eq!(
        client.ping_collect(),
        ["-ERR 'Invalid Publish Subject'", "+OK", "PONG"]
    );
}

#[test]
fn connect_replaces_the_defaults() {
    let server = TestServer::core();
    let mut client = RawClient::connect(&server);
    client.send("PUB a 1\r\nx\r\nCONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    client.send("PUB a 1\r\nx\r\nPUB a.* 1\r\ny\r\n");
    assert_eq!(client.ping_collect(), ["+OK", "PONG"]);
}

#[test]
fn pub_or_sub_before_connect_with_authorization_is_a_violation() {
    let server = TestServer::with_config("authorization { user: a, password: b }\n");
    for operation in ["PUB a 1\r\nx\r\n", "SUB a 1\r\n"] {
        let mut client = RawClient::connect(&server);
        client.send(&format!("{operation}PING\r\n"));
        assert_eq!(
            client.read_to_close().as_deref(),
            Some("-ERR 'Authorization Violation'\r\n"),
            "{operation:?}"
        );
    }
}

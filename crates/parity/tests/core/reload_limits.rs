//! Config reload of the connection limits, as nats-server's `maxConnOption` and
//! `maxPayloadOption`: a lower `max_connections` closes connections until the server is
//! within it (each told `maximum connections exceeded`; `Closed N connections to fall within
//! max_connections`), and a lower `max_payload` applies to the connections already up (a
//! larger PUB is a `Maximum Payload Violation`). The same test passes against nats-server.

use super::reload::{await_log, rewrite_and_hangup};
use test_harness::{RawClient, TestServer};

/// Whether `client` is still served: `Ok(())` on a PONG, else what came instead (an `-ERR`
/// line, or `None` once closed).
fn served(client: &mut RawClient) -> Result<(), Option<String>> {
    client.send("PING\r\n");
    loop {
        match client.read_line() {
            Some(line) if line == "PONG" => return Ok(()),
            Some(line) if line == "PING" => continue,
            other => return Err(other),
        }
    }
}

#[test]
fn a_lower_max_connections_closes_connections_down_to_it() {
    let server = TestServer::with_config("max_connections: 10\n");
    let mut clients: Vec<RawClient> = (0..3)
        .map(|_| RawClient::connect_with(&server, r#"{"verbose":false}"#))
        .collect();
    for client in &mut clients {
        assert_eq!(served(client), Ok(()));
    }
    rewrite_and_hangup(&server, "max_connections: 1\n");
    await_log(
        &server,
        "Closed 2 connections to fall within max_connections",
        1,
    );
    await_log(&server, "Reloaded: max_connections = 1", 1);
    let mut closed = 0;
    for client in &mut clients {
        match served(client) {
            Ok(()) => {}
            Err(Some(line)) => {
                assert_eq!(line, "-ERR 'maximum connections exceeded'");
                assert_eq!(client.read_line(), None, "still open after the -ERR");
                closed += 1;
            }
            Err(None) => panic!("closed without the -ERR"),
        }
    }
    assert_eq!(closed, 2);
}

#[test]
fn a_lower_max_payload_applies_to_connections_already_up() {
    let server = TestServer::with_config("max_payload: 4096\n");
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    let payload = "x".repeat(3000);
    client.send(&format!("PUB big {}\r\n{payload}\r\n", payload.len()));
    assert_eq!(served(&mut client), Ok(()));
    rewrite_and_hangup(&server, "max_payload: 2048\n");
    await_log(&server, "Reloaded: max_payload = 2048", 1);
    await_log(&server, "Reloaded server configuration", 1);
    client.send(&format!("PUB big {}\r\n{payload}\r\n", payload.len()));
    assert_eq!(
        served(&mut client),
        Err(Some("-ERR 'Maximum Payload Violation'".into()))
    );
}

//! The route protocol on the wire, against one server and a fake peer speaking raw TCP on its
//! route port: the handshake and the interest dump, `RS+`/`RS-` as local interest changes
//! (queue groups with their weight), the `RMSG`/`HMSG` forms a publish produces (with the
//! queue-list forms), routed messages delivered to local subscribers only, duplicate routes and
//! malformed route input. Every test passes on nats-server 2.15.1 too.

use test_harness::{free_port, RawClient, ServerOptions, TestServer};

/// One server with a route listener; returns it and the route address.
fn clustered() -> (TestServer, String) {
    let route_port = free_port();
    let server = TestServer::start(ServerOptions {
        args: vec![
            "--cluster".into(),
            format!("nats://127.0.0.1:{route_port}"),
            "--cluster_name".into(),
            "C1".into(),
        ],
        ..Default::default()
    });
    (server, format!("127.0.0.1:{route_port}"))
}

/// A fake peer that completed the handshake as the soliciting side.
fn fake_route(route_address: &str, server_id: &str) -> RawClient {
    let mut route = RawClient::connect_addr(route_address);
    route.send(&format!(
        "CONNECT {{\"echo\":false,\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\
         \"headers\":true,\"name\":\"{server_id}\",\"cluster\":\"C1\"}}\r\n\
         INFO {{\"server_id\":\"{server_id}\",\"server_name\":\"fake\",\"version\":\"2.9.0\",\
         \"proto\":1,\"host\":\"127.0.0.1\",\"port\":1,\"headers\":true,\"cluster\":\"C1\"}}\r\n"
    ));
    route
}

/// PING the peer and collect what it sent before the PONG (answering its own PINGs), keeping
/// only lines about the global account `$G` (nats-server also routes its `$SYS` traffic).
fn global_lines_until_pong(route: &mut RawClient) -> Vec<String> {
    route.send("PING\r\n");
    let mut lines = Vec::new();
    let mut keep_payload = false;
    loop {
        let line = route
            .read_line()
            .expect("route answered PING before closing");
        match line.as_str() {
            "PONG" => return lines,
            "PING" => route.send("PONG\r\n"),
            _ => {
                let global = ["RS+ $G ", "RS- $G ", "RMSG $G ", "HMSG $G "]
                    .iter()
                    .any(|prefix| line.starts_with(prefix));
                if global || keep_payload {
                    lines.push(line.clone());
                }
                // The payload line of a $G message (payloads here are one line).
                keep_payload = line.starts_with("RMSG $G ") || line.starts_with("HMSG $G ");
                if line.starts_with("HMSG $G ") {
                    // Header block: version line, blank line, then the payload.
                    for _ in 0..2 {
                        if let Some(next) = route.read_line() {
                            lines.push(next);
                        }
                    }
                }
            }
        }
    }
}

fn client(server: &TestServer) -> RawClient {
    RawClient::connect_with(
        server,
        "{\"verbose\":false,\"headers\":true,\"protocol\":1}",
    )
}

/// PING the client and collect what it got before the PONG, without async INFOs (nats-server
/// sends protocol-1 clients one after CONNECT; both servers send one when the cluster's
/// client URLs change).
fn client_round_trip(client: &mut RawClient) -> Vec<String> {
    client.send("PING\r\n");
    client
        .read_until_line("PONG")
        .into_iter()
        .filter(|line| !line.starts_with("INFO "))
        .collect()
}

#[test]
fn route_port_greets_with_info_and_dumps_interest() {
    let (server, route_address) = clustered();
    let mut subscriber = client(&server);
    subscriber.send("SUB foo 1\r\nSUB bar q1 2\r\nSUB bar q1 3\r\n");
    client_round_trip(&mut subscriber);

    let mut route = fake_route(&route_address, "NFAKEROUTEDUMP");
    let info: serde_json::Value = serde_json::from_str(&route.info).expect("INFO JSON");
    assert_eq!(info["cluster"], "C1");
    assert_eq!(info["headers"], true);
    assert!(info["server_id"].as_str().is_some_and(|id| id.len() == 56));

    let mut lines = global_lines_until_pong(&mut route);
    lines.sort();
    assert_eq!(lines, vec!["RS+ $G bar q1 2", "RS+ $G foo"]);
}

#[test]
fn interest_changes_go_out_once_per_subject_and_with_queue_weights() {
    let (server, route_address) = clustered();
    let mut route = fake_route(&route_address, "NFAKEROUTEINTEREST");
    assert!(global_lines_until_pong(&mut route).is_empty());
    let mut subscriber = client(&server);

    let mut step = |client_ops: &str| {
        subscriber.send(client_ops);
        client_round_trip(&mut subscriber);
        global_lines_until_pong(&mut route)
    };
    assert_eq!(step("SUB baz 1\r\n"), vec!["RS+ $G baz"]);
    assert!(
        step("SUB baz 2\r\n").is_empty(),
        "a second sub is not re-announced"
    );
    assert_eq!(step("SUB qq g 3\r\n"), vec!["RS+ $G qq g 1"]);
    assert_eq!(step("SUB qq g 4\r\n"), vec!["RS+ $G qq g 2"]);
    assert_eq!(step("UNSUB 3\r\n"), vec!["RS+ $G qq g 1"]);
    assert_eq!(step("UNSUB 4\r\n"), vec!["RS- $G qq g"]);
    assert!(step("UNSUB 1\r\n").is_empty(), "one sub on baz remains");
    assert_eq!(step("UNSUB 2\r\n"), vec!["RS- $G baz"]);
}

#[test]
fn publishes_cross_as_rmsg_and_hmsg_with_queue_lists() {
    let (server, route_address) = clustered();
    let mut route = fake_route(&route_address, "NFAKEROUTEMESSAGES");
    route.send("RS+ $G foo\r\nRS+ $G bar q1 3\r\n");
    global_lines_until_pong(&mut route);
    let mut publisher = client(&server);
    publisher.send(
        "PUB foo 2\r\nhi\r\nPUB foo r 2\r\nhi\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n\
         PUB bar rr 2\r\nhi\r\nPUB bar 2\r\nhi\r\nPUB other 2\r\nhi\r\n",
    );
    client_round_trip(&mut publisher);
    let lines = global_lines_until_pong(&mut route);
    assert_eq!(
        lines,
        vec![
            "RMSG $G foo 2",
            "hi",
            "RMSG $G foo r 2",
            "hi",
            "HMSG $G foo 12 14",
            "NATS/1.0",
            "",
            "hi",
            "RMSG $G bar + rr q1 2",
            "hi",
            "RMSG $G bar | q1 2",
            "hi",
        ]
    );
}

#[test]
fn routed_messages_reach_local_subscribers_only_and_queues_only_when_named() {
    let (server, route_address) = clustered();
    let mut subscriber = client(&server);
    subscriber.send("SUB foo 6\r\nSUB bar q1 5\r\n");
    client_round_trip(&mut subscriber);
    let mut route = fake_route(&route_address, "NFAKEROUTEINBOUND");
    // A second peer interested in foo: a routed message must not be forwarded to it.
    let mut other = fake_route(&route_address, "NFAKEROUTEOTHER");
    other.send("RS+ $G foo\r\n");
    global_lines_until_pong(&mut other);
    global_lines_until_pong(&mut route);

    route.send(
        "RMSG $G foo 2\r\nyo\r\nRMSG $G bar 2\r\nno\r\nRMSG $G bar | q1 2\r\nq1\r\n\
         HMSG $G bar + rep q1 12 14\r\nNATS/1.0\r\n\r\nhd\r\nRMSG $G bar | q2 2\r\nno\r\n",
    );
    global_lines_until_pong(&mut route);
    let received = client_round_trip(&mut subscriber);
    assert_eq!(
        received,
        vec![
            "MSG foo 6 2",
            "yo",
            "MSG bar 5 2",
            "q1",
            "HMSG bar 5 rep 12 14",
            "NATS/1.0",
            "",
            "hd",
            "PONG"
        ]
    );
    assert!(
        global_lines_until_pong(&mut other).is_empty(),
        "a routed message went on to another route"
    );
}

#[test]
fn a_second_route_from_the_same_server_is_closed() {
    let (_server, route_address) = clustered();
    let mut first = fake_route(&route_address, "NFAKEROUTEDUPLICATE");
    global_lines_until_pong(&mut first);
    let mut second = fake_route(&route_address, "NFAKEROUTEDUPLICATE");
    let answer = second.read_to_close();
    assert!(
        answer.is_some_and(|text| !text.contains("-ERR")),
        "duplicate route must be closed without an error"
    );
    // The first route still works.
    global_lines_until_pong(&mut first);
}

#[test]
fn malformed_routed_message_closes_the_route() {
    let (server, route_address) = clustered();
    let mut route = fake_route(&route_address, "NFAKEROUTEMALFORMED");
    global_lines_until_pong(&mut route);
    route.send("RMSG foo\r\n");
    assert!(route.read_to_close().is_some(), "route stayed open");
    // Clients are still served.
    let mut probe = client(&server);
    assert_eq!(client_round_trip(&mut probe), vec!["PONG"]);
}

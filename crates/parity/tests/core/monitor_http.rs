//! The monitoring port on its HTTP stack: every endpoint's keys and JSON types as nats-server
//! 2.15.1 answers them, nats-server's errors for bad query values and paths, keep-alive,
//! oversized and slow request heads, `http_base_path`, `https_port`, and a measured `/connz`
//! `rtt`. Passes against nats-server too (`NATS_SERVER_BIN`).

use serde_json::Value;
use std::io::Write;
use std::time::{Duration, Instant};
use test_harness::certificates::TestCertificates;
use test_harness::monitoring::{self, get_json, get_response, read_response};
use test_harness::{RawClient, ServerOptions, TestServer};

fn monitored() -> TestServer {
    TestServer::start(ServerOptions {
        monitoring: true,
        ..Default::default()
    })
}

/// Each endpoint (and, after a space, the first element of one of its lists) with its keys and
/// JSON types, read from nats-server 2.15.1 with one named client subscribed to `foo`.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "varz",
        "server_id:string server_name:string version:string proto:number go:string \
         git_commit:string feature_flags:object disk_io_wait_stats:object host:string \
         port:number max_connections:number ping_interval:number \
         ping_max:number http_host:string http_port:number http_base_path:string \
         https_port:number auth_timeout:number max_control_line:number max_payload:number \
         max_pending:number cluster:object gateway:object leaf:object mqtt:object \
         websocket:object jetstream:object tls_timeout:number write_deadline:number \
         start:string now:string uptime:string mem:number cores:number gomaxprocs:number \
         cpu:number connections:number total_connections:number routes:number \
         remotes:number leafnodes:number in_msgs:number in_bytes:number \
         in_client_msgs:number in_client_bytes:number out_msgs:number out_bytes:number \
         out_client_msgs:number out_client_bytes:number slow_consumers:number \
         stale_connections:number stalled_clients:number subscriptions:number \
         http_req_stats:object config_load_time:string config_digest:string \
         system_account:string slow_consumer_stats:object stale_connection_stats:object",
    ),
    (
        "connz conn",
        "cid:number kind:string type:string ip:string port:number start:string \
         last_activity:string rtt:string uptime:string idle:string pending_bytes:number \
         in_msgs:number out_msgs:number in_bytes:number out_bytes:number \
         subscriptions:number name:string lang:string version:string",
    ),
    (
        "connz?subs=1 conn",
        "cid:number kind:string type:string ip:string port:number start:string \
         last_activity:string rtt:string uptime:string idle:string pending_bytes:number \
         in_msgs:number out_msgs:number in_bytes:number out_bytes:number \
         subscriptions:number name:string lang:string version:string \
         subscriptions_list:array",
    ),
    (
        "connz?subs=detail&auth=1 conn",
        "cid:number kind:string type:string ip:string port:number start:string \
         last_activity:string rtt:string uptime:string idle:string pending_bytes:number \
         in_msgs:number out_msgs:number in_bytes:number out_bytes:number \
         subscriptions:number name:string lang:string version:string \
         subscriptions_list_detail:array name_tag:string",
    ),
    (
        "routez",
        "server_id:string server_name:string now:string num_routes:number routes:array",
    ),
    (
        "gatewayz",
        "server_id:string now:string outbound_gateways:object inbound_gateways:object",
    ),
    (
        "leafz",
        "server_id:string now:string leafnodes:number leafs:array",
    ),
    (
        "subsz",
        "server_id:string now:string num_subscriptions:number num_cache:number \
         num_inserts:number num_removes:number num_matches:number cache_hit_rate:number \
         max_fanout:number avg_fanout:number total:number offset:number limit:number",
    ),
    (
        "subsz?subs=1",
        "server_id:string now:string num_subscriptions:number num_cache:number \
         num_inserts:number num_removes:number num_matches:number cache_hit_rate:number \
         max_fanout:number avg_fanout:number total:number offset:number limit:number \
         subscriptions_list:array",
    ),
    (
        "subsz?subs=1 sub",
        "account:string account_tag:string subject:string sid:string msgs:number \
         cid:number",
    ),
    (
        "accountz",
        "server_id:string now:string system_account:string accounts:array",
    ),
    (
        "accountz?acc=$G",
        "server_id:string now:string system_account:string account_detail:object",
    ),
    (
        "accountz?acc=$G detail",
        "account_name:string update_time:string expired:bool complete:bool \
         jetstream_enabled:bool leafnode_connections:number client_connections:number \
         subscriptions:number imports:array name_tag:string sublist_stats:object",
    ),
    (
        "accstatz",
        "server_id:string now:string account_statz:array",
    ),
    (
        "accstatz?unused=1 acc",
        "acc:string name:string conns:number leafnodes:number total_conns:number \
         num_subscriptions:number sent:object received:object slow_consumers:number",
    ),
    (
        "jsz",
        "memory:number storage:number reserved_memory:number reserved_storage:number \
         accounts:number ha_assets:number api:object server_id:string now:string \
         disabled:bool config:object streams:number consumers:number messages:number \
         bytes:number total:number",
    ),
    ("healthz", "status:string"),
    ("ipqueuesz", ""),
];

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[test]
fn every_endpoint_has_nats_server_keys_and_types() {
    let server = monitored();
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"name":"probe","lang":"rust","version":"1.0"}"#,
    );
    client.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\n");
    client.ping_collect();
    for (name, schema) in SCHEMAS {
        let (path, part) = name.split_once(' ').unwrap_or((name, ""));
        let body = get_json(&server, &format!("/{path}"));
        let value = match part {
            "" => body.clone(),
            // The probe's own connection: the harness's readiness check may still be listed.
            "conn" => body["connections"]
                .as_array()
                .and_then(|connections| {
                    connections
                        .iter()
                        .find(|connection| connection["name"] == "probe")
                })
                .cloned()
                .unwrap_or_else(|| panic!("no probe connection in {body}")),
            "sub" => body["subscriptions_list"][0].clone(),
            "acc" => body["account_statz"][0].clone(),
            "detail" => body["account_detail"].clone(),
            other => panic!("unknown part {other}"),
        };
        let Value::Object(fields) = &value else {
            panic!("{name}: not an object: {body}");
        };
        let mut expected: Vec<String> = schema.split_whitespace().map(str::to_string).collect();
        expected.sort();
        let mut seen: Vec<String> = fields
            .iter()
            .map(|(key, value)| format!("{key}:{}", json_type(value)))
            .collect();
        seen.sort();
        assert_eq!(seen, expected, "{name}: {body}");
    }
}

#[test]
fn bad_query_values_get_nats_server_errors() {
    let server = monitored();
    let cases = [
        (
            "/connz?limit=abc",
            r#"Error decoding int for 'limit': strconv.Atoi: parsing "abc": invalid syntax"#,
        ),
        ("/connz?sort=bogus", "invalid sorting option: bogus"),
        ("/connz?state=bogus", "Error decoding state for bogus"),
        (
            "/connz?sort=stop",
            "sort by stop only valid on closed connections",
        ),
        (
            "/connz?cid=x",
            r#"Error decoding uint64 for 'cid': strconv.ParseUint: parsing "x": invalid syntax"#,
        ),
        (
            "/subsz?subs=detail",
            r#"Error decoding boolean for 'subs': strconv.ParseBool: parsing "detail": invalid syntax"#,
        ),
        (
            "/routez?subs=x",
            r#"Error decoding boolean for 'subs': strconv.ParseBool: parsing "x": invalid syntax"#,
        ),
        (
            "/jsz?streams=x",
            r#"Error decoding boolean for 'streams': strconv.ParseBool: parsing "x": invalid syntax"#,
        ),
        (
            "/gatewayz?accs=x",
            r#"Error decoding boolean for 'accs': strconv.ParseBool: parsing "x": invalid syntax"#,
        ),
        (
            "/leafz?subs=x",
            r#"Error decoding boolean for 'subs': strconv.ParseBool: parsing "x": invalid syntax"#,
        ),
        ("/accountz?acc=nope", "Account nope does not exist"),
    ];
    for (path, text) in cases {
        let response = get_response(&server, path);
        assert_eq!(response.status, 400, "{path}: {response:?}");
        assert_eq!(response.body, text, "{path}");
    }
    let health = get_response(&server, "/healthz?stream=x");
    assert_eq!(health.status, 400);
    let body: Value = serde_json::from_str(&health.body).expect("json");
    assert_eq!(body["status"], "error");
    assert_eq!(
        body["error"],
        "\"account\" must not be empty when checking stream health"
    );
    // The server still answers normally afterwards.
    assert_eq!(get_json(&server, "/healthz")["status"], "ok");
}

#[test]
fn unknown_paths_and_raftz_are_404() {
    let server = monitored();
    for path in ["/nope", "/varz/", "/expvarz"] {
        let response = get_response(&server, path);
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.body, "404 page not found\n", "{path}");
    }
    let raft = get_response(&server, "/raftz");
    assert_eq!(
        (raft.status, raft.body.as_str()),
        (404, "No Raft nodes registered")
    );
    let index = get_response(&server, "/");
    assert_eq!(index.status, 200);
    assert!(index
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/html"));
    assert!(index.body.contains("varz") && index.body.contains("healthz"));
}

#[test]
fn one_connection_serves_many_requests() {
    let server = monitored();
    let mut stream = monitoring::connect(&server);
    for round in 0..20 {
        write!(stream, "GET /varz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("send");
        let response = read_response(&mut stream).expect("response on a kept-alive connection");
        assert_eq!(response.status, 200, "round {round}");
        let varz: Value = serde_json::from_str(&response.body).expect("json");
        assert_eq!(varz["http_req_stats"]["/varz"], round + 1);
    }
}

#[test]
fn oversized_and_garbage_requests_are_refused_and_serving_goes_on() {
    let server = monitored();
    let mut stream = monitoring::connect(&server);
    let big = "a".repeat(2 * 1024 * 1024);
    // The server may answer and close before taking the whole head: ignore write errors.
    let _ = write!(
        stream,
        "GET /varz HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n"
    );
    let response = read_response(&mut stream).expect("an answer to an oversized head");
    assert_eq!(response.status, 431);

    let mut stream = monitoring::connect(&server);
    write!(stream, "GARBAGE\r\n\r\n").expect("send");
    let response = read_response(&mut stream).expect("an answer to garbage");
    assert_eq!(response.status, 400);

    assert_eq!(get_json(&server, "/healthz")["status"], "ok");
}

#[test]
fn a_slow_request_head_is_dropped_while_others_are_served() {
    let server = monitored();
    let mut slow = monitoring::connect(&server);
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(slow, "GET /varz HTTP/1.1\r\n").expect("send part of a head");
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(get_json(&server, "/healthz")["status"], "ok");
    }
    // Both servers drop a head that is not complete within 5 seconds, without an answer.
    let answer = read_response(&mut slow);
    let waited = started.elapsed();
    assert!(answer.is_none() || answer.is_some_and(|a| a.status == 408));
    assert!(waited < Duration::from_secs(15), "dropped after {waited:?}");
}

#[test]
fn base_path_prefixes_every_endpoint() {
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        config: Some("http_base_path: \"/mon\"\n".into()),
        ..Default::default()
    });
    let varz = get_json(&server, "/mon/varz");
    assert_eq!(varz["http_base_path"], "/mon");
    assert_eq!(get_json(&server, "/mon/healthz")["status"], "ok");
    assert_eq!(get_response(&server, "/mon").status, 200);
    assert_eq!(get_response(&server, "/varz").status, 404);
    assert_eq!(get_response(&server, "/mon/").status, 404);
}

#[test]
fn connz_rtt_is_measured() {
    let server = monitored();
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.ping_collect();
    let connz = get_json(&server, "/connz");
    let rtt = connz["connections"][0]["rtt"].as_str().expect("rtt text");
    assert_ne!(rtt, "0s", "{connz}");
    assert!(
        rtt.ends_with("µs") || rtt.ends_with("ms") || rtt.ends_with("ns"),
        "{rtt}"
    );
}

/// On the wildcard host (both servers listen dual-stack there) an IPv4 client shows as
/// `127.0.0.1`, as Go prints an IPv4-mapped address, not `::ffff:127.0.0.1`.
#[test]
fn connz_shows_an_ipv4_client_of_the_wildcard_host_as_ipv4() {
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        // After the harness's `-a 127.0.0.1`: the later one holds on both servers.
        args: vec!["-a".into(), "0.0.0.0".into()],
        ..Default::default()
    });
    let mut client = RawClient::connect_with(&server, r#"{"verbose":false}"#);
    client.ping_collect();
    let connz = get_json(&server, "/connz");
    assert_eq!(connz["connections"][0]["ip"], "127.0.0.1", "{connz}");
}

#[test]
fn connz_sorts_and_pages() {
    let server = monitored();
    let mut quiet = RawClient::connect_with(&server, r#"{"verbose":false,"name":"quiet"}"#);
    let mut busy = RawClient::connect_with(&server, r#"{"verbose":false,"name":"busy"}"#);
    busy.send("PUB a 1\r\nx\r\nPUB a 1\r\nx\r\nPUB a 1\r\nx\r\n");
    busy.ping_collect();
    quiet.ping_collect();
    let connz = get_json(&server, "/connz?sort=msgs_from");
    assert_eq!(connz["connections"][0]["name"], "busy", "{connz}");
    let paged = get_json(&server, "/connz?sort=msgs_from&offset=1&limit=1");
    assert_eq!(paged["total"], 2);
    assert_eq!(paged["num_connections"], 1);
    assert_eq!(paged["connections"][0]["name"], "quiet", "{paged}");
}

#[test]
fn https_port_serves_over_tls() {
    let certificates = TestCertificates::generate();
    let port = test_harness::free_port();
    let server = TestServer::start(ServerOptions {
        config: Some(format!("https_port: {port}\n{}", certificates.block(""))),
        ..Default::default()
    });
    let url = format!("https://localhost:{port}/varz");
    let deadline = Instant::now() + Duration::from_secs(10);
    let output = loop {
        let output = std::process::Command::new("curl")
            .args(["-s", "--max-time", "5", "--cacert"])
            .arg(certificates.ca())
            .arg(&url)
            .output()
            .expect("run curl");
        if output.status.success() || Instant::now() > deadline {
            break output;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(output.status.success(), "{output:?}");
    let varz: Value = serde_json::from_slice(&output.stdout).expect("json over https");
    assert_eq!(varz["https_port"], port);
    assert_eq!(varz["port"], server.port);
}

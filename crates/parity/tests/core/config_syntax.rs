//! Config files in the layouts nats-server accepts and client libraries' test suites write:
//! a whole file in braces (JSON style) and a block whose `{` opens on the next line. The
//! server must start and apply them.

use test_harness::{ServerOptions, TestServer};

fn info_of(server: &TestServer) -> serde_json::Value {
    let line = crate::process::info_line(server.addr().parse().expect("address"))
        .expect("the server answers");
    serde_json::from_str(line.trim_start_matches("INFO ").trim()).expect("INFO is JSON")
}

#[test]
fn json_style_file() {
    let server = TestServer::start(ServerOptions {
        config: Some(
            "{\n  \"max_payload\": 4096,\n  \"authorization\": {\n    \"token\": \"s3cret\"\n  }\n}\n"
                .into(),
        ),
        ..Default::default()
    });
    let info = info_of(&server);
    assert_eq!(info["max_payload"], 4096, "{info}");
    assert_eq!(info["auth_required"], true, "{info}");
}

#[test]
fn uglified_json_on_one_line() {
    let server = TestServer::start(ServerOptions {
        config: Some("{\"max_payload\": 2048,\"max_connections\": 10}".into()),
        ..Default::default()
    });
    assert_eq!(info_of(&server)["max_payload"], 2048);
}

#[test]
fn block_opening_on_the_next_line() {
    let server = TestServer::start(ServerOptions {
        config: Some("max_payload: 3072\nauthorization\n{\n  token: s3cret\n}\n".into()),
        ..Default::default()
    });
    let info = info_of(&server);
    assert_eq!(info["max_payload"], 3072, "{info}");
    assert_eq!(info["auth_required"], true, "{info}");
}

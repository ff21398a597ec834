//! Config reload of the server-wide JetStream limits, as nats-server's
//! `jetStreamLimitsOption`: a raised `max_memory_store` / `max_file_store` is applied at once
//! (`Reloaded: JetStream max_mem_store = 3.00 MB`; a stream the old limit refused is created,
//! `/varz` shows the new figure), a lowered one is refused in nats-server's words and the
//! running limit stays. The same test passes against nats-server.

use super::reload::{await_log, rewrite_and_hangup};
use super::reload_accounts::js_request;
use test_harness::monitoring::get_json;
use test_harness::{RawClient, ServerOptions, TestServer};

const MB: i64 = 1024 * 1024;

fn limits(store: &std::path::Path, memory: &str, file: &str) -> String {
    format!(
        "jetstream {{ store_dir: {:?}, max_memory_store: {memory}, max_file_store: {file} }}\n",
        store.display().to_string()
    )
}

/// `$JS.API.STREAM.CREATE` of a memory stream reserving `max_bytes`: its error code, if any.
fn create_error(client: &mut RawClient, name: &str, max_bytes: i64) -> Option<i64> {
    let reply = js_request(
        client,
        &format!("STREAM.CREATE.{name}"),
        &format!(
            r#"{{"name":"{name}","subjects":["{name}"],"storage":"memory","max_bytes":{max_bytes}}}"#
        ),
    );
    reply
        .get("error")
        .map(|error| error["err_code"].as_i64().expect("err_code"))
}

fn varz_max_memory(server: &TestServer) -> i64 {
    get_json(server, "/varz")["jetstream"]["config"]["max_memory"]
        .as_i64()
        .expect("max_memory")
}

#[test]
fn raised_jetstream_limits_apply_at_once_and_lowered_ones_are_refused() {
    let store = tempfile::tempdir().expect("store dir");
    let server = TestServer::start(ServerOptions {
        config: Some(limits(store.path(), "1MB", "10MB")),
        monitoring: true,
        ..Default::default()
    });
    let mut client = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"headers":true,"no_responders":true}"#,
    );
    // 10028: insufficient memory resources available.
    assert_eq!(create_error(&mut client, "BIG", 2 * MB), Some(10028));
    assert_eq!(varz_max_memory(&server), MB);

    rewrite_and_hangup(&server, &limits(store.path(), "3MB", "20MB"));
    await_log(&server, "Reloaded: JetStream max_mem_store = 3.00 MB", 1);
    await_log(&server, "Reloaded: JetStream max_file_store = 20.00 MB", 1);
    await_log(&server, "Reloaded server configuration", 1);
    assert_eq!(varz_max_memory(&server), 3 * MB);
    assert_eq!(create_error(&mut client, "BIG", 2 * MB), None);

    rewrite_and_hangup(&server, &limits(store.path(), "2MB", "20MB"));
    await_log(
        &server,
        "config reload not supported for decreasing jetstream max memory and store",
        1,
    );
    assert_eq!(varz_max_memory(&server), 3 * MB);
    // The running 3 MB stays: 1 MB more fits beside the 2 MB stream, 2 MB more does not.
    assert_eq!(create_error(&mut client, "MORE", 2 * MB), Some(10028));
    assert_eq!(create_error(&mut client, "FITS", MB), None);
}

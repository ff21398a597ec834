//! Config reload of the server-wide JetStream limits, as nats-server's
//! `jetStreamLimitsOption`: a raised `max_memory_store` / `max_file_store` is applied at once
//! (`Reloaded: JetStream max_mem_store = 3.00 MB`; a stream the old limit refused is created,
//! `/varz` shows the new figure), a lowered one is refused in nats-server's words and the
//! running limit stays. JetStream turned on in a server started without it is started, as
//! nats-server's `jetStreamOption`; turned off and on again after a raise it comes back with
//! the raised limit; turned off it stops answering, and back on with another `store_dir` it
//! runs from that directory (a new directory while it stays on is refused); an account given
//! JetStream by a reload answers in the JetStream domain (`$JS.<domain>.API`), and a new domain
//! is refused in nats-server's words. The same tests pass against nats-server.

use super::reload::{await_log, rewrite_and_hangup};
use super::reload_accounts::{jetstream_accounts, jetstream_answers, js_request, next_message};
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

/// Wait (bounded) until `$JS.API.INFO` is answered (rnats starts a JetStream turned on by a
/// reload aside; nats-server before it logs the reload).
fn await_jetstream(client: &mut RawClient) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !jetstream_answers(client) {
        assert!(
            std::time::Instant::now() < deadline,
            "JetStream never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn connect_js(server: &TestServer, user: Option<&str>) -> RawClient {
    let credentials = user
        .map(|user| format!(r#","user":"{user}","pass":"{user}""#))
        .unwrap_or_default();
    RawClient::connect_with(
        server,
        &format!(r#"{{"verbose":false,"headers":true,"no_responders":true{credentials}}}"#),
    )
}

#[test]
fn jetstream_turned_on_in_a_server_started_without_it() {
    let store = tempfile::tempdir().expect("store dir");
    let server = TestServer::start(ServerOptions {
        config: Some("max_payload: 65536\n".into()),
        monitoring: true,
        ..Default::default()
    });
    let mut client = connect_js(&server, None);
    assert!(!jetstream_answers(&mut client));
    rewrite_and_hangup(
        &server,
        &format!(
            "max_payload: 65536\n{}",
            limits(store.path(), "8MB", "64MB")
        ),
    );
    await_log(&server, "Reloaded: JetStream", 1);
    await_log(&server, "Reloaded server configuration", 1);
    await_jetstream(&mut client);
    assert_eq!(create_error(&mut client, "ON", MB), None);
    // Stored in the new directory.
    client.send("SUB _INBOX.ack 80\r\nPUB ON _INBOX.ack 2\r\nhi\r\n");
    let (_, ack) = next_message(&mut client).expect("a PubAck");
    let ack: serde_json::Value = serde_json::from_slice(&ack).expect("json PubAck");
    assert_eq!(ack["stream"], "ON", "{ack}");
    assert_eq!(ack["seq"], 1, "{ack}");
    assert_eq!(varz_max_memory(&server), 8 * MB);
}

#[test]
fn jetstream_off_and_on_again_after_a_raise_keeps_the_raised_limit() {
    let store = tempfile::tempdir().expect("store dir");
    let server = TestServer::start(ServerOptions {
        config: Some(limits(store.path(), "1MB", "10MB")),
        monitoring: true,
        ..Default::default()
    });
    let mut client = connect_js(&server, None);
    rewrite_and_hangup(&server, &limits(store.path(), "3MB", "10MB"));
    await_log(&server, "Reloaded: JetStream max_mem_store = 3.00 MB", 1);
    rewrite_and_hangup(&server, "max_payload: 65536\n");
    await_log(&server, "Reloaded: JetStream\n", 1);
    rewrite_and_hangup(&server, &limits(store.path(), "3MB", "10MB"));
    await_log(&server, "Reloaded server configuration", 3);
    let log = server.log();
    assert!(!log.contains("config reload not supported"), "{log}");
    await_jetstream(&mut client);
    assert_eq!(varz_max_memory(&server), 3 * MB);
    // 2 MB fits only under the raised limit.
    let refused = create_error(&mut client, "BIG", 2 * MB);
    if test_harness::is_reference() && refused == Some(10028) {
        // nats-server 2.15.1, about 1 run in 4 (7 of 26 here): its JetStream restarted by the
        // reload answers 10028 yet holds the stream, its reservation counted (/jsz: streams 1,
        // reserved_memory 2 MB, the account's reserved_memory and api inflight wrapped below
        // 0). Reported, not asserted; ours is held to the create above.
        println!("nats-server refused the 2 MB stream after JetStream's restart: 10028");
        return;
    }
    assert_eq!(refused, None);
}

/// Waits (bounded) until `$JS.API` goes unanswered (JetStream stopped by a reload: nats-server
/// answers nothing, and neither does rnats once its engine stopped).
fn await_no_jetstream(client: &mut RawClient) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while jetstream_answers(client) {
        assert!(
            std::time::Instant::now() < deadline,
            "JetStream still answers"
        );
    }
}

/// The names `$JS.API.STREAM.NAMES` lists.
fn stream_names(client: &mut RawClient) -> serde_json::Value {
    js_request(client, "STREAM.NAMES", "")["streams"].clone()
}

#[test]
fn jetstream_back_on_with_another_store_directory_serves_that_directory() {
    let (first, second) = (
        tempfile::tempdir().expect("store dir"),
        tempfile::tempdir().expect("store dir"),
    );
    let server = TestServer::start(ServerOptions {
        config: Some(limits(first.path(), "8MB", "64MB")),
        monitoring: true,
        ..Default::default()
    });
    let mut client = connect_js(&server, None);
    let created = js_request(
        &mut client,
        "STREAM.CREATE.FIRST",
        r#"{"name":"FIRST","subjects":["first"],"storage":"file"}"#,
    );
    assert!(created.get("error").is_none(), "{created}");

    // A new directory while JetStream stays on is refused, in nats-server's words.
    rewrite_and_hangup(&server, &limits(second.path(), "8MB", "64MB"));
    await_log(
        &server,
        "config reload not supported for jetstream storage directory",
        1,
    );

    rewrite_and_hangup(&server, "max_payload: 65536\n");
    await_log(&server, "Reloaded: JetStream\n", 1);
    await_no_jetstream(&mut client);

    // On again with the other directory and other limits: JetStream runs from it.
    rewrite_and_hangup(&server, &limits(second.path(), "4MB", "32MB"));
    await_log(&server, "Reloaded: JetStream\n", 2);
    await_jetstream(&mut client);
    let config = get_json(&server, "/jsz")["config"].clone();
    let expected = second.path().join("jetstream").display().to_string();
    assert_eq!(config["store_dir"], expected.as_str(), "{config}");
    assert_eq!(config["max_memory"], 4 * MB, "{config}");
    assert_eq!(stream_names(&mut client), serde_json::Value::Null);
    let created = js_request(
        &mut client,
        "STREAM.CREATE.SECOND",
        r#"{"name":"SECOND","subjects":["second"],"storage":"file"}"#,
    );
    assert!(created.get("error").is_none(), "{created}");
    assert!(
        second.path().join("jetstream/$G/streams/SECOND").is_dir(),
        "SECOND is not in the second directory"
    );

    // Back to the first directory: its stream is there again, the second's is not.
    rewrite_and_hangup(&server, "max_payload: 65536\n");
    await_log(&server, "Reloaded: JetStream\n", 3);
    await_no_jetstream(&mut client);
    rewrite_and_hangup(&server, &limits(first.path(), "8MB", "64MB"));
    await_log(&server, "Reloaded: JetStream\n", 4);
    await_jetstream(&mut client);
    // nats-server answers the JetStream API before it has recovered the directory's streams
    // (STREAM.NAMES said `null` in 1 of 10 runs, and in the parity pass of CI6): there the
    // test asks again, for a bounded time. Ours answers only once the streams are back.
    let mut names = stream_names(&mut client);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while test_harness::is_reference() && names.is_null() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        names = stream_names(&mut client);
    }
    assert_eq!(names, serde_json::json!(["FIRST"]));
}

fn domain_accounts(store: &std::path::Path, domain: &str, b_has_jetstream: bool) -> String {
    jetstream_accounts(store, &format!(", domain: {domain}"), b_has_jetstream)
}

/// `$JS.<domain>.API.INFO` asked by `client`: the reply's JSON, `None` without a responder.
fn domain_info(client: &mut RawClient, domain: &str) -> Option<serde_json::Value> {
    client.send(&format!(
        "SUB _INBOX.dom 81\r\nUNSUB 81 1\r\nPUB $JS.{domain}.API.INFO _INBOX.dom 0\r\n\r\n"
    ));
    let (head, payload) = next_message(client).expect("a reply or a no-responders status");
    if head.starts_with("HMSG ") {
        let text = String::from_utf8_lossy(&payload);
        assert!(text.starts_with("NATS/1.0 503"), "{head} {text}");
        return None;
    }
    Some(serde_json::from_slice(&payload).expect("json reply"))
}

#[test]
fn an_account_given_jetstream_by_reload_answers_in_the_domain() {
    let store = tempfile::tempdir().expect("store dir");
    let server = TestServer::with_config(&domain_accounts(store.path(), "HUB", false));
    let mut a = connect_js(&server, Some("a"));
    let mut b = connect_js(&server, Some("b"));
    let served = domain_info(&mut a, "HUB").expect("A answers in its domain");
    assert!(served.get("error").is_none(), "{served}");
    assert!(domain_info(&mut b, "HUB").is_none_or(|reply| reply.get("error").is_some()));

    rewrite_and_hangup(&server, &domain_accounts(store.path(), "HUB", true));
    await_log(&server, "Reloaded server configuration", 1);
    let served = domain_info(&mut b, "HUB").expect("B answers in the domain");
    assert!(served.get("error").is_none(), "{served}");

    // The domain itself is not reloadable.
    rewrite_and_hangup(&server, &domain_accounts(store.path(), "OTHER", true));
    await_log(
        &server,
        "config reload not supported for JetStreamDomain: old=HUB, new=OTHER",
        1,
    );
}

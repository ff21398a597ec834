//! `$SYS.REQ.ACCOUNT.<account>.<kind>` (CONNZ, SUBSZ, JSZ, INFO, STATZ, LEAFZ, CONNS) in the
//! system account, `$SYS.REQ.ACCOUNT.PING.STATZ`, and the system imports through which every
//! other account asks for its own CONNZ and STATZ: the `{"server", "data"}` envelope, the
//! fields, nats-server's errors and its silences. Passes against the real nats-server too
//! (`NATS_SERVER_BIN`).

use super::system_account::{connect, request_json};
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::{ServerOptions, TestServer};

const WAIT: Duration = Duration::from_secs(10);
/// How long a request that nats-server leaves unanswered is given.
const SILENCE: Duration = Duration::from_millis(750);

const CONFIG: &str = r#"
server_name: account-requests
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
  A { users: [ { user: a, password: a } ], jetstream: enabled }
  B { users: [ { user: b, password: b } ] }
}
system_account: SYS
"#;

fn server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(CONFIG.to_string()),
        ..Default::default()
    })
}

/// A request nobody answers although the subject has a responder (the request times out).
async fn assert_silent(client: &async_nats::Client, subject: &str, body: &str) {
    let answer = tokio::time::timeout(
        SILENCE,
        client.request(subject.to_string(), body.to_string().into()),
    )
    .await;
    match answer {
        Err(_) => {}
        Ok(Err(error)) => assert_eq!(
            error.kind(),
            async_nats::client::RequestErrorKind::TimedOut,
            "{subject}: {error}"
        ),
        Ok(Ok(message)) => panic!(
            "{subject} answered: {}",
            String::from_utf8_lossy(&message.payload)
        ),
    }
}

async fn assert_no_responders(client: &async_nats::Client, subject: &str) {
    let error = tokio::time::timeout(WAIT, client.request(subject.to_string(), "".into()))
        .await
        .expect("answer in time")
        .expect_err("no responder");
    assert_eq!(
        error.kind(),
        async_nats::client::RequestErrorKind::NoResponders,
        "{subject}: {error}"
    );
}

fn assert_envelope(reply: &Value) {
    let server = &reply["server"];
    assert_eq!(server["name"], "account-requests", "{reply}");
    assert!(
        server["id"].as_str().is_some_and(|id| id.len() == 56),
        "{reply}"
    );
    assert!(server["seq"].as_u64().is_some_and(|seq| seq > 0), "{reply}");
    assert!(server["time"].is_string(), "{reply}");
}

/// User `a` connected with a subscription on `foo.>` and one JetStream API request made.
async fn account_a_in_use(server: &TestServer) -> (async_nats::Client, async_nats::Subscriber) {
    let user = connect(server, "a").await;
    let subscription = user.subscribe("foo.>").await.unwrap();
    let info = request_json(&user, "$JS.API.INFO", "").await;
    assert!(info["api"].is_object(), "{info}");
    (user, subscription)
}

#[tokio::test]
async fn connz_subsz_and_leafz_show_only_the_account() {
    let server = server();
    let (_a, _subscription) = account_a_in_use(&server).await;
    let _b = connect(&server, "b").await;
    let system = connect(&server, "sys").await;

    let connz = request_json(&system, "$SYS.REQ.ACCOUNT.A.CONNZ", "").await;
    assert_envelope(&connz);
    let data = &connz["data"];
    assert_eq!(data["num_connections"], 1, "{connz}");
    assert_eq!(data["total"], 1, "{connz}");
    assert_eq!(data["connections"][0]["name"], "a-probe", "{connz}");
    assert_eq!(data["server_id"], connz["server"]["id"], "{connz}");

    // The options of /connz in the body; an `acc` there cannot widen the view.
    let connz = request_json(
        &system,
        "$SYS.REQ.ACCOUNT.A.CONNZ",
        r#"{"subscriptions": true, "acc": "B"}"#,
    )
    .await;
    let connection = &connz["data"]["connections"][0];
    assert_eq!(connection["name"], "a-probe", "{connz}");
    let subjects = connection["subscriptions_list"].as_array().expect("list");
    assert!(subjects.iter().any(|subject| subject == "foo.>"), "{connz}");

    // An account the server does not know: an empty page without a server id.
    let connz = request_json(&system, "$SYS.REQ.ACCOUNT.NOPE.CONNZ", "").await;
    assert_eq!(connz["data"]["server_id"], "", "{connz}");
    assert_eq!(connz["data"]["total"], 0, "{connz}");
    assert!(connz["data"]["connections"].is_null(), "{connz}");

    // SUBSZ always lists, and only the account's subscriptions.
    let subsz = request_json(&system, "$SYS.REQ.ACCOUNT.A.SUBSZ", "").await;
    assert_envelope(&subsz);
    let list = subsz["data"]["subscriptions_list"]
        .as_array()
        .unwrap_or_else(|| panic!("no list: {subsz}"));
    assert!(
        list.iter()
            .any(|entry| entry["subject"] == "foo.>" && entry["account"] == "A"),
        "{subsz}"
    );
    assert!(list.iter().all(|entry| entry["account"] == "A"), "{subsz}");
    assert!(subsz["data"]["num_subscriptions"].is_u64(), "{subsz}");
    let subsz = request_json(&system, "$SYS.REQ.ACCOUNT.A.SUBSZ", r#"{"test": "foo.x"}"#).await;
    assert_eq!(subsz["data"]["total"], 1, "{subsz}");
    assert_eq!(
        subsz["data"]["subscriptions_list"][0]["subject"], "foo.>",
        "{subsz}"
    );

    let leafz = request_json(&system, "$SYS.REQ.ACCOUNT.A.LEAFZ", "").await;
    assert_envelope(&leafz);
    assert_eq!(leafz["data"]["leafnodes"], 0, "{leafz}");
    assert_eq!(leafz["data"]["leafs"], serde_json::json!([]), "{leafz}");

    // A body that is not JSON: nats-server's 400, no data.
    let bad = request_json(&system, "$SYS.REQ.ACCOUNT.A.CONNZ", "{bad").await;
    assert_envelope(&bad);
    assert_eq!(bad["error"]["code"], 400, "{bad}");
    assert!(bad.get("data").is_none(), "{bad}");

    // A kind nobody serves has no responder at all.
    assert_no_responders(&system, "$SYS.REQ.ACCOUNT.A.FOO").await;
}

#[tokio::test]
async fn jsz_and_info_answer_or_name_the_error() {
    let server = server();
    let (_a, _subscription) = account_a_in_use(&server).await;
    let system = connect(&server, "sys").await;

    let jsz = request_json(&system, "$SYS.REQ.ACCOUNT.A.JSZ", "").await;
    assert_envelope(&jsz);
    let data = &jsz["data"];
    assert_eq!(data["name"], "A", "{jsz}");
    assert_eq!(data["id"], "A", "{jsz}");
    assert_eq!(data["memory"], 0, "{jsz}");
    assert_eq!(data["storage"], 0, "{jsz}");
    // Unlimited (-1) as Go prints it unsigned.
    assert_eq!(data["reserved_memory"], u64::MAX, "{jsz}");
    assert_eq!(data["reserved_storage"], u64::MAX, "{jsz}");
    assert!(data["api"]["total"].is_u64(), "{jsz}");
    assert_eq!(data["api"]["errors"], 0, "{jsz}");

    for (subject, description) in [
        (
            "$SYS.REQ.ACCOUNT.B.JSZ",
            r#"account "B" not jetstream enabled"#,
        ),
        ("$SYS.REQ.ACCOUNT.NOPE.JSZ", r#"account "NOPE" not found"#),
        ("$SYS.REQ.ACCOUNT.NOPE.INFO", "Account NOPE does not exist"),
    ] {
        let reply = request_json(&system, subject, "").await;
        assert_envelope(&reply);
        assert_eq!(reply["error"]["code"], 500, "{reply}");
        assert_eq!(reply["error"]["description"], description, "{reply}");
        assert!(reply["data"].is_null(), "{reply}");
    }

    let info = request_json(&system, "$SYS.REQ.ACCOUNT.A.INFO", "").await;
    assert_envelope(&info);
    let data = &info["data"];
    assert_eq!(data["account_name"], "A", "{info}");
    assert_eq!(data["name_tag"], "A", "{info}");
    assert_eq!(data["jetstream_enabled"], true, "{info}");
    assert_eq!(data["client_connections"], 1, "{info}");
    assert_eq!(data["leafnode_connections"], 0, "{info}");
    assert_eq!(data["expired"], false, "{info}");
    assert!(data.get("is_system").is_none(), "{info}");
    assert!(
        data["subscriptions"]
            .as_u64()
            .is_some_and(|count| count >= 1),
        "{info}"
    );
    assert!(
        data["sublist_stats"]["num_subscriptions"].is_u64(),
        "{info}"
    );
    let imports = data["imports"].as_array().expect("imports");
    assert!(
        imports
            .iter()
            .any(|import| import["subject"] == "$SYS.REQ.ACCOUNT.A.CONNZ"
                && import["local_subject"] == "$SYS.REQ.ACCOUNT.PING.CONNZ"
                && import["account"] == "SYS"
                && import["type"] == "service"),
        "{info}"
    );

    let info = request_json(&system, "$SYS.REQ.ACCOUNT.SYS.INFO", "").await;
    assert_eq!(info["data"]["is_system"], true, "{info}");
    assert_eq!(info["data"]["jetstream_enabled"], false, "{info}");
}

#[tokio::test]
async fn statz_and_conns_answer_only_for_accounts_in_use() {
    let server = server();
    let (_a, _subscription) = account_a_in_use(&server).await;
    let system = connect(&server, "sys").await;

    let statz = request_json(&system, "$SYS.REQ.ACCOUNT.A.STATZ", "").await;
    assert_envelope(&statz);
    let stats = statz["data"]["account_statz"].as_array().expect("list");
    assert_eq!(stats.len(), 1, "{statz}");
    assert_eq!(stats[0]["acc"], "A", "{statz}");
    assert_eq!(stats[0]["conns"], 1, "{statz}");
    assert_eq!(stats[0]["total_conns"], 1, "{statz}");
    assert!(
        stats[0]["received"]["msgs"]
            .as_u64()
            .is_some_and(|msgs| msgs >= 1),
        "{statz}"
    );
    assert!(stats[0]["sent"]["routes"].is_object(), "{statz}");

    // B has no connection: silence, unless unused accounts are asked for.
    assert_silent(&system, "$SYS.REQ.ACCOUNT.B.STATZ", "").await;
    assert_silent(&system, "$SYS.REQ.ACCOUNT.NOPE.STATZ", "").await;
    let statz = request_json(
        &system,
        "$SYS.REQ.ACCOUNT.B.STATZ",
        r#"{"include_unused": true}"#,
    )
    .await;
    assert_eq!(statz["data"]["account_statz"][0]["acc"], "B", "{statz}");
    assert_eq!(statz["data"]["account_statz"][0]["conns"], 0, "{statz}");

    // PING: every account in use (here SYS and A).
    let statz = request_json(&system, "$SYS.REQ.ACCOUNT.PING.STATZ", "").await;
    let names: Vec<&str> = statz["data"]["account_statz"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|stat| stat["acc"].as_str())
        .collect();
    assert!(names.contains(&"A") && names.contains(&"SYS"), "{statz}");
    assert!(!names.contains(&"B"), "{statz}");

    let conns = request_json(&system, "$SYS.REQ.ACCOUNT.A.CONNS", "").await;
    assert_eq!(
        conns["type"], "io.nats.server.advisory.v1.account_connections",
        "{conns}"
    );
    assert_envelope(&conns);
    assert!(
        conns["id"].is_string() && conns["timestamp"].is_string(),
        "{conns}"
    );
    assert_eq!(conns["acc"], "A", "{conns}");
    assert_eq!(conns["conns"], 1, "{conns}");
    assert!(conns["sent"]["msgs"].is_u64(), "{conns}");
    assert_silent(&system, "$SYS.REQ.ACCOUNT.B.CONNS", "").await;
}

#[tokio::test]
async fn other_accounts_reach_their_own_connz_and_statz() {
    let server = server();
    let (user, _subscription) = account_a_in_use(&server).await;
    let _b = connect(&server, "b").await;
    let _system = connect(&server, "sys").await;

    for subject in ["$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.SERVER.PING.CONNZ"] {
        let connz = request_json(&user, subject, "").await;
        assert_envelope(&connz);
        assert_eq!(connz["data"]["total"], 1, "{subject}: {connz}");
        assert_eq!(
            connz["data"]["connections"][0]["name"], "a-probe",
            "{subject}: {connz}"
        );
    }
    let statz = request_json(&user, "$SYS.REQ.ACCOUNT.PING.STATZ", "").await;
    assert_envelope(&statz);
    let stats = statz["data"]["account_statz"].as_array().expect("list");
    assert_eq!(stats.len(), 1, "{statz}");
    assert_eq!(stats[0]["acc"], "A", "{statz}");

    // The rest of the system account stays out of reach.
    assert_no_responders(&user, "$SYS.REQ.ACCOUNT.A.INFO").await;
}

/// `$SYS.REQ.SERVER.PING.HEALTHZ` takes `/healthz`'s options in its body (nats-server's
/// `HealthzOptions` JSON): the account, stream and consumer checks with their 404s, the
/// request errors (400), `details`, `js-enabled-only` and its deprecated `js-enabled` (which
/// skip the asset checks), and a value of the wrong type answered with Go's decoding error;
/// `/healthz` answers the same checks over HTTP.
#[tokio::test]
async fn healthz_takes_its_options_from_the_request_body() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        monitoring: true,
        config: Some(CONFIG.to_string()),
        ..Default::default()
    });
    let a = connect(&server, "a").await;
    test_harness::client::api(&a, "$JS.API.STREAM.CREATE.ORDERS", r#"{"name":"ORDERS"}"#).await;
    test_harness::client::api(
        &a,
        "$JS.API.CONSUMER.CREATE.ORDERS.C",
        r#"{"stream_name":"ORDERS","config":{"durable_name":"C","ack_policy":"explicit"}}"#,
    )
    .await;
    let system = connect(&server, "sys").await;
    let stream_missing = r#"JetStream stream "NOPE" not found on account "A""#;
    let consumer_missing = r#"JetStream consumer "X" not found for stream "ORDERS" on account "A""#;
    let cases = [
        ("", json!({"status": "ok", "status_code": 200})),
        (
            r#"{"account":"A"}"#,
            json!({"status": "ok", "status_code": 200}),
        ),
        (
            r#"{"account":"A","stream":"ORDERS","consumer":"C"}"#,
            json!({"status": "ok", "status_code": 200}),
        ),
        (
            r#"{"account":"A","stream":"NOPE"}"#,
            json!({"status": "unavailable", "status_code": 404, "error": stream_missing}),
        ),
        (
            r#"{"account":"A","stream":"NOPE","details":true}"#,
            json!({"status": "error", "status_code": 404, "errors": [
                {"type": "STREAM", "account": "A", "stream": "NOPE", "error": stream_missing}
            ]}),
        ),
        (
            r#"{"account":"A","stream":"ORDERS","consumer":"X"}"#,
            json!({"status": "unavailable", "status_code": 404, "error": consumer_missing}),
        ),
        (
            r#"{"account":"B"}"#,
            json!({"status": "unavailable", "status_code": 404,
                   "error": r#"JetStream account "B" not found"#}),
        ),
        (
            r#"{"account":"B","js-enabled-only":true}"#,
            json!({"status": "ok", "status_code": 200}),
        ),
        (
            r#"{"account":"B","js-enabled":true}"#,
            json!({"status": "ok", "status_code": 200}),
        ),
        (
            r#"{"account":"B","js-server-only":true}"#,
            json!({"status": "ok", "status_code": 200}),
        ),
        (
            r#"{"consumer":"C"}"#,
            json!({"status": "error", "status_code": 400,
                   "error": r#""stream" must not be empty when checking consumer health"#}),
        ),
        (
            r#"{"stream":"ORDERS"}"#,
            json!({"status": "error", "status_code": 400,
                   "error": r#""account" must not be empty when checking stream health"#}),
        ),
    ];
    for (body, expected) in cases {
        let reply = request_json(&system, "$SYS.REQ.SERVER.PING.HEALTHZ", body).await;
        assert_eq!(reply["data"], expected, "{body}: {reply}");
    }
    for (body, description) in [
        (
            r#"{"js-enabled-only":"yes"}"#,
            "json: cannot unmarshal string into Go struct field HealthzEventOptions.js-enabled-only of type bool",
        ),
        (
            r#"{"account":5}"#,
            "json: cannot unmarshal number into Go struct field HealthzEventOptions.account of type string",
        ),
    ] {
        let reply = request_json(&system, "$SYS.REQ.SERVER.PING.HEALTHZ", body).await;
        assert_eq!(
            reply["error"],
            json!({"code": 400, "description": description}),
            "{body}: {reply}"
        );
        assert!(reply.get("data").is_none(), "{body}: {reply}");
    }

    let http = test_harness::monitoring::get_response(&server, "/healthz?account=A&stream=NOPE");
    assert_eq!(http.status, 404, "{http:?}");
    let body: Value = serde_json::from_str(&http.body).expect("json");
    assert_eq!(
        body,
        json!({"status": "unavailable", "error": stream_missing}),
        "{http:?}"
    );
}

/// A body nats-server cannot read into the request's options (`zReq`'s `json.Unmarshal`) is
/// answered with Go's error, code 400, beside the server object and without data: not JSON,
/// a truncated or blank body, a second value, or JSON that is not an object (the Go type
/// named), or a filter option of the wrong type. `null` is no options.
#[tokio::test]
async fn bodies_that_are_not_json_options_are_refused_with_400() {
    let server = server();
    let system = connect(&server, "sys").await;
    let info = request_json(&system, "$SYS.REQ.SERVER.PING.IDZ", "").await;
    let id = info["id"].as_str().expect("server id").to_string();
    let own_healthz = format!("$SYS.REQ.SERVER.{id}.HEALTHZ");
    let cases = [
        (
            "$SYS.REQ.SERVER.PING.HEALTHZ",
            "hello",
            "invalid character 'h' looking for beginning of value".to_string(),
        ),
        (
            own_healthz.as_str(),
            "{",
            "unexpected end of JSON input".to_string(),
        ),
        (
            "$SYS.REQ.SERVER.PING.HEALTHZ",
            " ",
            "unexpected end of JSON input".to_string(),
        ),
        (
            "$SYS.REQ.SERVER.PING.HEALTHZ",
            "{}{}",
            "invalid character '{' after top-level value".to_string(),
        ),
        (
            "$SYS.REQ.SERVER.PING.VARZ",
            "{} x",
            "invalid character 'x' after top-level value".to_string(),
        ),
        (
            "$SYS.REQ.SERVER.PING.JSZ",
            "[1]",
            unmarshal("array", "JszEventOptions"),
        ),
        (
            "$SYS.REQ.SERVER.PING.CONNZ",
            "5",
            unmarshal("number", "ConnzEventOptions"),
        ),
        (
            "$SYS.REQ.SERVER.PING.STATSZ",
            r#""x""#,
            unmarshal("string", "StatszEventOptions"),
        ),
        (
            "$SYS.REQ.SERVER.PING",
            "true",
            unmarshal("bool", "StatszEventOptions"),
        ),
        (
            "$SYS.REQ.ACCOUNT.A.CONNZ",
            "[]",
            unmarshal("array", "ConnzEventOptions"),
        ),
        (
            "$SYS.REQ.ACCOUNT.A.INFO",
            "nope",
            "invalid character 'o' in literal null (expecting 'u')".to_string(),
        ),
    ];
    // A filter option of the wrong type, in any endpoint's options.
    let filters = [
        (
            "$SYS.REQ.SERVER.PING.VARZ",
            r#"{"server_name":5}"#,
            field("number", "VarzEventOptions.server_name", "string"),
        ),
        (
            "$SYS.REQ.SERVER.PING.HEALTHZ",
            r#"{"exact_match":"x"}"#,
            field("string", "HealthzEventOptions.exact_match", "bool"),
        ),
        (
            "$SYS.REQ.SERVER.PING.JSZ",
            r#"{"tags":"x"}"#,
            field("string", "JszEventOptions.tags", "[]string"),
        ),
        (
            "$SYS.REQ.SERVER.PING",
            r#"{"cluster":true}"#,
            field("bool", "StatszEventOptions.cluster", "string"),
        ),
        (
            "$SYS.REQ.ACCOUNT.A.CONNZ",
            r#"{"host":{}}"#,
            field("object", "ConnzEventOptions.host", "string"),
        ),
        (
            "$SYS.REQ.SERVER.PING.VARZ",
            r#"{"tags":["a",1]}"#,
            "json: cannot unmarshal number into VarzEventOptions.tags.1 of type string".to_string(),
        ),
    ];
    for (subject, body, description) in cases.into_iter().chain(filters) {
        let reply = request_json(&system, subject, body).await;
        assert_envelope(&reply);
        assert_eq!(
            reply["error"],
            json!({"code": 400, "description": description}),
            "{subject} {body:?}: {reply}"
        );
        assert!(reply.get("data").is_none(), "{subject} {body:?}: {reply}");
    }
    let reply = request_json(&system, "$SYS.REQ.SERVER.PING.HEALTHZ", "null").await;
    assert_eq!(
        reply["data"],
        json!({"status": "ok", "status_code": 200}),
        "{reply}"
    );
}

/// Go's text for an options field of the wrong kind.
fn field(kind: &str, field: &str, wanted: &str) -> String {
    format!("json: cannot unmarshal {kind} into Go struct field {field} of type {wanted}")
}

/// Go's text for JSON of the wrong kind for a request's options type.
fn unmarshal(kind: &str, type_name: &str) -> String {
    format!("json: cannot unmarshal {kind} into Go value of type server.{type_name}")
}

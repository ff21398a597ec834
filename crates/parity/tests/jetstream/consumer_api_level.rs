//! `Nats-Required-Api-Level` on every `$JS.API.CONSUMER.*` request, checked where nats-server
//! 2.15.1 checks it (CREATE and PAUSE decode their body first, INFO checks it is empty first,
//! RESET is answered only by an existing consumer, a pull request gets a `412` status), with
//! its exact reply bytes. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use serde_json::json;
use std::time::Duration;
use test_harness::client::{api, connect};
use test_harness::TestServer;

const LEVEL_ERROR: &str =
    r#""error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"}"#;

/// A request carrying `Nats-Required-Api-Level: <level>`; the raw reply (headers, body), or
/// None when nothing answers within a short wait.
async fn request(
    client: &async_nats::Client,
    subject: &str,
    body: &str,
    level: &str,
) -> Option<(Option<String>, String)> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Required-Api-Level", level);
    let answer = tokio::time::timeout(
        Duration::from_millis(700),
        client.request_with_headers(subject.to_string(), headers, body.to_string().into()),
    )
    .await
    .ok()?
    .ok()?;
    let status = answer.status.map(|status| {
        format!(
            "{} {}",
            status.as_u16(),
            answer.description.clone().unwrap_or_default()
        )
    });
    Some((status, String::from_utf8(answer.payload.to_vec()).unwrap()))
}

/// Body of the reply (panics when there is none).
async fn body(client: &async_nats::Client, subject: &str, payload: &str, level: &str) -> String {
    request(client, subject, payload, level)
        .await
        .unwrap_or_else(|| panic!("no reply to {subject}"))
        .1
}

async fn setup(server: &TestServer) -> async_nats::Client {
    let client = connect(server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.S",
        &json!({"name": "S", "subjects": ["s"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    for config in [
        json!({"name": "C", "ack_policy": "explicit", "priority_groups": ["g"],
               "priority_policy": "pinned_client"}),
        json!({"durable_name": "P", "deliver_subject": "push.p"}),
    ] {
        let name = config
            .get("name")
            .or_else(|| config.get("durable_name"))
            .and_then(|name| name.as_str())
            .unwrap()
            .to_string();
        let created = api(
            &client,
            &format!("$JS.API.CONSUMER.CREATE.S.{name}"),
            &json!({"stream_name": "S", "config": config}).to_string(),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
    client
}

fn level_error(response_type: &str, rest: &str) -> String {
    format!(r#"{{"type":"io.nats.jetstream.api.v1.{response_type}",{LEVEL_ERROR}{rest}}}"#)
}

#[tokio::test]
async fn every_consumer_request_refuses_a_newer_level() {
    let server = TestServer::jetstream();
    let client = setup(&server).await;
    let create = json!({"stream_name": "S", "config": {"name": "X"}}).to_string();
    let durable = json!({"stream_name": "S", "config": {"durable_name": "D"}}).to_string();
    let legacy = json!({"stream_name": "S", "config": {}}).to_string();
    let missing_stream = json!({"stream_name": "NOPE", "config": {"name": "X"}}).to_string();
    let paged = r#","total":0,"offset":0,"limit":0,"consumers":[]"#;
    let pause = r#","paused":false,"pause_until":"0001-01-01T00:00:00Z""#;
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "$JS.API.CONSUMER.CREATE.S.X",
            &create,
            level_error("consumer_create_response", ""),
        ),
        (
            "$JS.API.CONSUMER.CREATE.S",
            &legacy,
            level_error("consumer_create_response", ""),
        ),
        (
            "$JS.API.CONSUMER.DURABLE.CREATE.S.D",
            &durable,
            level_error("consumer_create_response", ""),
        ),
        (
            "$JS.API.CONSUMER.CREATE.NOPE.X",
            &missing_stream,
            level_error("consumer_create_response", ""),
        ),
        (
            "$JS.API.CONSUMER.INFO.S.C",
            "",
            level_error("consumer_info_response", ""),
        ),
        (
            "$JS.API.CONSUMER.INFO.S.NOPE",
            "",
            level_error("consumer_info_response", ""),
        ),
        (
            "$JS.API.CONSUMER.NAMES.S",
            "{",
            level_error("consumer_names_response", paged),
        ),
        (
            "$JS.API.CONSUMER.LIST.NOPE",
            "",
            level_error("consumer_list_response", paged),
        ),
        (
            "$JS.API.CONSUMER.DELETE.S.C",
            r#"{"a":1}"#,
            level_error("consumer_delete_response", ""),
        ),
        (
            "$JS.API.CONSUMER.PAUSE.S.NOPE",
            "",
            level_error("consumer_pause_response", pause),
        ),
        (
            "$JS.API.CONSUMER.UNPIN.S.C",
            "{",
            level_error("consumer_unpin_response", ""),
        ),
        (
            "$JS.API.CONSUMER.UNPIN.S.NOPE",
            r#"{"group":"g"}"#,
            level_error("consumer_unpin_response", ""),
        ),
        (
            "$JS.API.CONSUMER.RESET.S.C",
            "{",
            level_error("consumer_reset_response", r#","reset_seq":0"#),
        ),
    ];
    for (subject, payload, expected) in cases {
        assert_eq!(
            body(&client, subject, payload, "99").await,
            expected,
            "{subject} {payload}"
        );
    }
    // Nothing was created, deleted or paused.
    let names = api(&client, "$JS.API.CONSUMER.NAMES.S", "").await;
    assert_eq!(names["consumers"], json!(["C", "P"]), "{names}");
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.C", "").await;
    assert_ne!(info["paused"], json!(true), "{info}");
}

#[tokio::test]
async fn checks_that_come_before_the_level() {
    let server = TestServer::jetstream();
    let client = setup(&server).await;
    let invalid = |response_type: &str, rest: &str| {
        format!(
            r#"{{"type":"io.nats.jetstream.api.v1.{response_type}","error":{{"code":400,"err_code":10025,"description":"invalid JSON: unexpected EOF"}}{rest}}}"#
        )
    };
    assert_eq!(
        body(&client, "$JS.API.CONSUMER.CREATE.S.X", "{", "99").await,
        invalid("consumer_create_response", "")
    );
    assert_eq!(
        body(&client, "$JS.API.CONSUMER.PAUSE.S.C", "{", "99").await,
        invalid(
            "consumer_pause_response",
            r#","paused":false,"pause_until":"0001-01-01T00:00:00Z""#
        )
    );
    assert_eq!(
        body(&client, "$JS.API.CONSUMER.INFO.S.C", r#"{"a":1}"#, "99").await,
        r#"{"type":"io.nats.jetstream.api.v1.consumer_info_response","error":{"code":400,"err_code":10038,"description":"expected an empty request payload"}}"#
    );
    assert_eq!(
        body(&client, "$JS.API.CONSUMER.LEADER.STEPDOWN.S.C", "", "99").await,
        r#"{"type":"io.nats.jetstream.api.v1.consumer_leader_stepdown_response","error":{"code":503,"err_code":10010,"description":"JetStream clustering support required"}}"#
    );
    // RESET is answered by the consumer itself: a missing one answers nothing.
    assert_eq!(
        request(&client, "$JS.API.CONSUMER.RESET.S.NOPE", "", "99").await,
        None
    );
    // Pull requests: a push consumer's 409 first, then the level's 412.
    let next = |consumer: &str| format!("$JS.API.CONSUMER.MSG.NEXT.S.{consumer}");
    assert_eq!(
        request(&client, &next("P"), "", "99").await,
        Some((Some("409 Consumer is push based".into()), String::new()))
    );
    assert_eq!(
        request(&client, &next("C"), r#"{"batch":1,"no_wait":true}"#, "99").await,
        Some((Some("412 Required Api Level".into()), String::new()))
    );
    // The refused requests changed nothing a later request could see.
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.C", "").await;
    assert_eq!(info["num_waiting"], 0, "{info}");
}

#[tokio::test]
async fn which_header_values_pass() {
    let server = TestServer::jetstream();
    let client = setup(&server).await;
    // An empty value is no requirement; Go's Atoi takes a sign; 5 is 2.15.1's level.
    for level in ["", "-1", "+5", "5", "0"] {
        let answer = body(&client, "$JS.API.CONSUMER.NAMES.S", "", level).await;
        assert_eq!(
            answer,
            r#"{"type":"io.nats.jetstream.api.v1.consumer_names_response","total":2,"offset":0,"limit":1024,"consumers":["C","P"]}"#,
            "level {level:?}"
        );
    }
    for level in ["6", "abc", "5.0", "99999999999999999999"] {
        let answer = body(&client, "$JS.API.CONSUMER.INFO.S.C", "", level).await;
        assert_eq!(
            answer,
            level_error("consumer_info_response", ""),
            "level {level:?}"
        );
    }
    let answer = request(
        &client,
        "$JS.API.CONSUMER.MSG.NEXT.S.C",
        r#"{"batch":1,"no_wait":true}"#,
        "abc",
    )
    .await;
    assert_eq!(
        answer,
        Some((Some("412 Required Api Level".into()), String::new()))
    );
}

//! Consumer names with path separators are refused on every create path (issue 17 item 5):
//! the legacy ephemeral `CONSUMER.CREATE.<stream>` with the name in the body only, the new
//! `CONSUMER.CREATE.<stream>.<name>` and `CONSUMER.DURABLE.CREATE.<stream>.<name>`, all with
//! `400 / 10127`; a body name the subject overrides does not count. Other characters no name
//! may hold get nats-server's `500 / 10052`. Answers compared with nats-server 2.15.1; passes
//! on it too.

use serde_json::{json, Value};
use test_harness::client::{api, connect, stream_s};
use test_harness::TestServer;

const SEPARATORS: (u64, u64, &str) = (400, 10127, "Consumer name can not contain path separators");

fn error_of(reply: &Value) -> Option<(u64, u64, String)> {
    let error = reply.get("error")?;
    Some((
        error["code"].as_u64().unwrap_or_default(),
        error["err_code"].as_u64().unwrap_or_default(),
        error["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

async fn create(client: &async_nats::Client, subject: &str, config: Value) -> Value {
    api(
        client,
        &format!("$JS.API.{subject}"),
        &json!({"stream_name": "S", "config": config}).to_string(),
    )
    .await
}

#[tokio::test]
async fn path_separators_refused_on_every_create_path() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 0).await;
    let separators = Some((SEPARATORS.0, SEPARATORS.1, SEPARATORS.2.to_string()));

    for (subject, config) in [
        ("CONSUMER.CREATE.S", json!({"name": "a/b"})),
        ("CONSUMER.CREATE.S", json!({"name": "a\\b"})),
        (
            "CONSUMER.CREATE.S",
            json!({"name": "a/b", "deliver_subject": "d"}),
        ),
        ("CONSUMER.CREATE.S.a/b", json!({})),
        ("CONSUMER.CREATE.S.a\\b", json!({"durable_name": "a\\b"})),
        (
            "CONSUMER.DURABLE.CREATE.S.a/b",
            json!({"durable_name": "a/b"}),
        ),
    ] {
        let reply = create(&client, subject, config.clone()).await;
        assert_eq!(error_of(&reply), separators, "{subject} {config}: {reply}");
    }

    // Other characters no name may hold: nats-server's stream-config error, 500 / 10052.
    for name in ["a.b", "a b", "a*", "a>"] {
        let reply = create(&client, "CONSUMER.CREATE.S", json!({"name": name})).await;
        assert_eq!(
            error_of(&reply),
            Some((
                500,
                10052,
                "consumer name can not contain '.', '*', '>', '\\', '/'".to_string()
            )),
            "{name}: {reply}"
        );
    }

    // The subject's name wins over the body's, on the new and the legacy durable path.
    let reply = create(&client, "CONSUMER.CREATE.S.x", json!({"name": "a/b"})).await;
    assert_eq!(error_of(&reply), None, "{reply}");
    assert_eq!(reply["name"], "x", "{reply}");
    let reply = create(
        &client,
        "CONSUMER.DURABLE.CREATE.S.ab",
        json!({"durable_name": "ab", "name": "a/b"}),
    )
    .await;
    assert_eq!(error_of(&reply), None, "{reply}");
    assert_eq!(reply["name"], "ab", "{reply}");

    // Nothing refused was created.
    let names = api(&client, "$JS.API.CONSUMER.NAMES.S", "").await;
    let mut names: Vec<&str> = names["consumers"]
        .as_array()
        .expect("consumer names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["ab", "x"]);
}

//! `$JS.API.CONSUMER.*` as raw JSON: create/update semantics, defaults echoed, errors with
//! nats-server's codes, NAMES/LIST paging, DELETE, PAUSE. Runs against ours or the real
//! nats-server (`NATS_SERVER_BIN`).

use serde_json::{json, Value};
use test_harness::client::{api, connect, create_stream};
use test_harness::TestServer;

async fn create(client: &async_nats::Client, subject: &str, body: Value) -> Value {
    api(
        client,
        &format!("$JS.API.CONSUMER.{subject}"),
        &body.to_string(),
    )
    .await
}

fn err_code(response: &Value) -> u64 {
    response["error"]["err_code"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn create_update_and_errors() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(&client, json!({"name": "A", "subjects": ["a.>"]})).await;

    let created = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "config": {"durable_name": "C1", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(
        created["type"],
        "io.nats.jetstream.api.v1.consumer_create_response"
    );
    assert_eq!(created["name"], "C1");
    assert_eq!(created["stream_name"], "A");
    let config = &created["config"];
    assert_eq!(config["durable_name"], "C1");
    assert_eq!(config["name"], "C1");
    assert_eq!(config["deliver_policy"], "all");
    assert_eq!(config["ack_policy"], "explicit");
    assert_eq!(config["ack_wait"], 30_000_000_000u64);
    assert_eq!(config["max_deliver"], -1);
    assert_eq!(config["replay_policy"], "instant");
    assert_eq!(config["max_waiting"], 512);
    assert_eq!(config["max_ack_pending"], 1000);
    assert_eq!(config["num_replicas"], 0);
    assert_eq!(config["metadata"]["_nats.req.level"], "0");
    assert_eq!(
        created["delivered"],
        json!({"consumer_seq": 0, "stream_seq": 0})
    );
    assert_eq!(
        created["ack_floor"],
        json!({"consumer_seq": 0, "stream_seq": 0})
    );
    assert_eq!(created["num_pending"], 0);
    assert!(created.get("cluster").is_none() || created["cluster"]["leader"].is_string());

    // Identical create: the same consumer again, no error.
    let again = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "config": {"durable_name": "C1", "ack_policy": "explicit"}}),
    )
    .await;
    assert!(again.get("error").is_none(), "{again}");
    // action create with a different config.
    let exists = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "action": "create", "config": {"durable_name": "C1", "ack_policy": "explicit", "description": "x"}}),
    )
    .await;
    assert_eq!(err_code(&exists), 10148, "{exists}");
    // Update of a missing consumer.
    let missing = create(
        &client,
        "CREATE.A.C2",
        json!({"stream_name": "A", "action": "update", "config": {"durable_name": "C2", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(err_code(&missing), 10149, "{missing}");
    // Updates: allowed field, then a forbidden one.
    let updated = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "config": {"durable_name": "C1", "ack_policy": "explicit", "description": "now described", "max_ack_pending": 5}}),
    )
    .await;
    assert_eq!(
        updated["config"]["description"], "now described",
        "{updated}"
    );
    assert_eq!(updated["config"]["max_ack_pending"], 5);
    let forbidden = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "config": {"durable_name": "C1", "ack_policy": "explicit", "deliver_policy": "new"}}),
    )
    .await;
    assert_eq!(err_code(&forbidden), 10012, "{forbidden}");
    assert_eq!(
        forbidden["error"]["description"],
        "deliver policy can not be updated"
    );

    // Subject/body mismatches.
    let mismatch = create(
        &client,
        "CREATE.A.C3",
        json!({"stream_name": "B", "config": {"durable_name": "C3"}}),
    )
    .await;
    assert_eq!(err_code(&mismatch), 10056, "{mismatch}");
    let durable_mismatch = create(
        &client,
        "DURABLE.CREATE.A.X",
        json!({"stream_name": "A", "config": {"durable_name": "Y", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(err_code(&durable_mismatch), 10017, "{durable_mismatch}");
    let filter_mismatch = create(
        &client,
        "CREATE.A.C4.a.b",
        json!({"stream_name": "A", "config": {"name": "C4", "filter_subject": "a.c"}}),
    )
    .await;
    assert_eq!(err_code(&filter_mismatch), 10131, "{filter_mismatch}");
    let no_stream = create(
        &client,
        "CREATE.NOPE.C5",
        json!({"stream_name": "NOPE", "config": {"name": "C5"}}),
    )
    .await;
    assert_eq!(err_code(&no_stream), 10059, "{no_stream}");
    let bad_policy = create(
        &client,
        "CREATE.A.C6",
        json!({"stream_name": "A", "config": {"name": "C6", "deliver_policy": "by_start_sequence"}}),
    )
    .await;
    assert_eq!(err_code(&bad_policy), 10094, "{bad_policy}");
    let push_waiting = create(
        &client,
        "CREATE.A.C7",
        json!({"stream_name": "A", "config": {"name": "C7", "deliver_subject": "out", "max_waiting": 3}}),
    )
    .await;
    assert_eq!(err_code(&push_waiting), 10080, "{push_waiting}");
    let pull_heartbeat = create(
        &client,
        "CREATE.A.C8",
        json!({"stream_name": "A", "config": {"name": "C8", "idle_heartbeat": 1000000000}}),
    )
    .await;
    assert_eq!(err_code(&pull_heartbeat), 10088, "{pull_heartbeat}");
    // max_ack_pending with ack none: refused for a push consumer only (issue 19 sweep, found
    // through nats-py); a pull consumer keeps the value, and changing an existing consumer's
    // ack policy is refused for that first.
    let push_none = create(
        &client,
        "CREATE.A.C9",
        json!({"stream_name": "A", "config": {"name": "C9", "deliver_subject": "out9", "ack_policy": "none", "max_ack_pending": 10}}),
    )
    .await;
    assert_eq!(err_code(&push_none), 10082, "{push_none}");
    let pull_none = create(
        &client,
        "CREATE.A.C10",
        json!({"stream_name": "A", "config": {"name": "C10", "ack_policy": "none", "max_ack_pending": 10}}),
    )
    .await;
    assert_eq!(pull_none["config"]["max_ack_pending"], 10, "{pull_none}");
    let to_none = create(
        &client,
        "CREATE.A.C1",
        json!({"stream_name": "A", "action": "update", "config": {"durable_name": "C1", "ack_policy": "none", "max_ack_pending": 10}}),
    )
    .await;
    assert_eq!(err_code(&to_none), 10012, "{to_none}");
    assert_eq!(
        to_none["error"]["description"], "ack policy can not be updated",
        "{to_none}"
    );

    // Ephemeral (legacy subject): server-made 8-character name, inactive threshold 5s.
    let ephemeral = create(
        &client,
        "CREATE.A",
        json!({"stream_name": "A", "config": {"ack_policy": "explicit"}}),
    )
    .await;
    let name = ephemeral["name"].as_str().unwrap();
    assert_eq!(name.len(), 8, "{ephemeral}");
    assert_eq!(ephemeral["config"]["inactive_threshold"], 5_000_000_000u64);
    assert!(ephemeral["config"].get("durable_name").is_none());

    // INFO errors.
    let info_missing = api(&client, "$JS.API.CONSUMER.INFO.A.NOPE", "").await;
    assert_eq!(err_code(&info_missing), 10014, "{info_missing}");
    assert_eq!(info_missing["error"]["description"], "consumer not found");
    let info = api(&client, "$JS.API.CONSUMER.INFO.A.C1", "").await;
    assert_eq!(
        info["type"],
        "io.nats.jetstream.api.v1.consumer_info_response"
    );
}

#[tokio::test]
async fn names_list_delete_and_pause() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(&client, json!({"name": "N", "subjects": ["n.>"]})).await;
    for name in ["c", "a", "b"] {
        let created = create(
            &client,
            &format!("DURABLE.CREATE.N.{name}"),
            json!({"stream_name": "N", "config": {"durable_name": name, "ack_policy": "explicit"}}),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
    }
    let names = api(&client, "$JS.API.CONSUMER.NAMES.N", "").await;
    assert_eq!(
        names["type"],
        "io.nats.jetstream.api.v1.consumer_names_response"
    );
    assert_eq!(names["consumers"], json!(["a", "b", "c"]));
    assert_eq!(names["total"], 3);
    assert_eq!(names["limit"], 1024);
    let paged = api(&client, "$JS.API.CONSUMER.NAMES.N", r#"{"offset":2}"#).await;
    assert_eq!(paged["consumers"], json!(["c"]));
    assert_eq!(paged["offset"], 2);
    let list = api(&client, "$JS.API.CONSUMER.LIST.N", "").await;
    assert_eq!(
        list["type"],
        "io.nats.jetstream.api.v1.consumer_list_response"
    );
    assert_eq!(list["limit"], 256);
    let listed: Vec<&str> = list["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|info| info["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a", "b", "c"]);
    let stream_info = api(&client, "$JS.API.STREAM.INFO.N", "").await;
    assert_eq!(stream_info["state"]["consumer_count"], 3);

    let paused = api(
        &client,
        "$JS.API.CONSUMER.PAUSE.N.a",
        r#"{"pause_until":"2999-01-01T00:00:00Z"}"#,
    )
    .await;
    assert_eq!(
        paused["type"],
        "io.nats.jetstream.api.v1.consumer_pause_response"
    );
    assert_eq!(paused["paused"], true, "{paused}");
    let info = api(&client, "$JS.API.CONSUMER.INFO.N.a", "").await;
    assert_eq!(info["paused"], true, "{info}");
    assert_eq!(info["config"]["pause_until"], "2999-01-01T00:00:00Z");
    let resumed = api(&client, "$JS.API.CONSUMER.PAUSE.N.a", "").await;
    assert_eq!(resumed["paused"], false, "{resumed}");

    let deleted = api(&client, "$JS.API.CONSUMER.DELETE.N.b", "").await;
    assert_eq!(
        deleted,
        json!({"type": "io.nats.jetstream.api.v1.consumer_delete_response", "success": true})
    );
    let again = api(&client, "$JS.API.CONSUMER.DELETE.N.b", "").await;
    assert_eq!(err_code(&again), 10014, "{again}");
    let names = api(&client, "$JS.API.CONSUMER.NAMES.N", "").await;
    assert_eq!(names["consumers"], json!(["a", "c"]));
}

#[tokio::test]
async fn work_queue_refuses_overlapping_consumers() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "W", "subjects": ["w.>"], "retention": "workqueue"}),
    )
    .await;
    let first = create(
        &client,
        "CREATE.W.one",
        json!({"stream_name": "W", "config": {"durable_name": "one", "ack_policy": "explicit", "filter_subject": "w.a.>"}}),
    )
    .await;
    assert!(first.get("error").is_none(), "{first}");
    let overlapping = create(
        &client,
        "CREATE.W.two",
        json!({"stream_name": "W", "config": {"durable_name": "two", "ack_policy": "explicit", "filter_subject": "w.*.x"}}),
    )
    .await;
    assert_eq!(err_code(&overlapping), 10100, "{overlapping}");
    let unfiltered = create(
        &client,
        "CREATE.W.three",
        json!({"stream_name": "W", "config": {"durable_name": "three", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(err_code(&unfiltered), 10099, "{unfiltered}");
    let disjoint = create(
        &client,
        "CREATE.W.four",
        json!({"stream_name": "W", "config": {"durable_name": "four", "ack_policy": "explicit", "filter_subject": "w.b.>"}}),
    )
    .await;
    assert!(disjoint.get("error").is_none(), "{disjoint}");
    let not_explicit = create(
        &client,
        "CREATE.W.five",
        json!({"stream_name": "W", "config": {"durable_name": "five", "ack_policy": "none", "filter_subject": "w.c"}}),
    )
    .await;
    assert_eq!(err_code(&not_explicit), 10084, "{not_explicit}");
}

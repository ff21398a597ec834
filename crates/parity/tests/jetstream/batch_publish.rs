//! Atomic batch publish (ADR-50, `allow_atomic`) as a client sees it: empty replies while a
//! batch is staged, the commit's PubAck with `batch` and `count`, all-or-nothing commits, and
//! nats-server 2.15's errors and limits. Runs against ours or the real nats-server
//! (`NATS_SERVER_BIN`).

use test_harness::client;

use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::client::{
    api, connect, create_stream as create, pairs, publish_raw, stored_headers,
};
use test_harness::TestServer;

/// One batch message: `Nats-Batch-Id`, `Nats-Batch-Sequence`, then `extra`; the raw reply.
async fn batch(
    client: &async_nats::Client,
    subject: &str,
    id: &str,
    sequence: u64,
    extra: &[(&str, &str)],
    body: &str,
) -> String {
    let sequence = sequence.to_string();
    let mut headers = vec![("Nats-Batch-Id", id), ("Nats-Batch-Sequence", &sequence)];
    headers.extend_from_slice(extra);
    publish_raw(client, subject, &headers, body).await
}

/// Stream `A` on `a.>` with atomic batches allowed.
async fn atomic_stream(client: &async_nats::Client) {
    create(
        client,
        json!({"name": "A", "subjects": ["a.>"], "allow_atomic": true}),
    )
    .await;
}

const COMMIT: (&str, &str) = ("Nats-Batch-Commit", "1");

async fn state(client: &async_nats::Client, stream: &str) -> Value {
    api(client, &format!("$JS.API.STREAM.INFO.{stream}"), "").await["state"].clone()
}

fn error(code: u16, err_code: u32, description: &str, stream: &str) -> String {
    format!(
        r#"{{"error":{{"code":{code},"err_code":{err_code},"description":"{description}"}},"stream":"{stream}","seq":0}}"#
    )
}

#[tokio::test]
async fn a_committed_batch_is_stored_whole_with_one_ack() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    assert_eq!(batch(&client, "a.1", "b1", 1, &[], "x").await, "");
    assert_eq!(batch(&client, "a.2", "b1", 2, &[], "y").await, "");
    // Nothing is visible before the commit.
    assert_eq!(state(&client, "A").await["messages"], 0);
    assert_eq!(
        batch(&client, "a.3", "b1", 3, &[COMMIT], "z").await,
        r#"{"stream":"A","seq":3,"batch":"b1","count":3}"#
    );
    assert_eq!(state(&client, "A").await["messages"], 3);
    // The batch headers are stored with the messages.
    assert_eq!(
        stored_headers(&client, "A", 1).await,
        pairs(&[("Nats-Batch-Id", "b1"), ("Nats-Batch-Sequence", "1")])
    );
    // A one-message batch, and an end-of-batch marker that is not stored itself but marks
    // the last stored message as the commit.
    assert_eq!(
        batch(&client, "a.1", "b2", 1, &[COMMIT], "x").await,
        r#"{"stream":"A","seq":4,"batch":"b2","count":1}"#
    );
    assert_eq!(batch(&client, "a.1", "b3", 1, &[], "x").await, "");
    assert_eq!(
        batch(&client, "a.1", "b3", 2, &[("Nats-Batch-Commit", "eob")], "").await,
        r#"{"stream":"A","seq":5,"batch":"b3","count":1}"#
    );
    assert_eq!(
        stored_headers(&client, "A", 5).await,
        pairs(&[
            ("Nats-Batch-Commit", "1"),
            ("Nats-Batch-Id", "b3"),
            ("Nats-Batch-Sequence", "1")
        ])
    );
    // Ordinary publishes carry on after the batches.
    assert_eq!(
        publish_raw(&client, "a.9", &[], "x").await,
        r#"{"stream":"A","seq":6}"#
    );
}

#[tokio::test]
async fn malformed_batches_are_refused() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, json!({"name": "N", "subjects": ["n.>"]})).await;
    atomic_stream(&client).await;
    assert_eq!(
        batch(&client, "n.1", "b", 1, &[], "x").await,
        error(400, 10174, "atomic publish is disabled", "N")
    );
    assert_eq!(
        publish_raw(&client, "a.1", &[("Nats-Batch-Id", "b")], "x").await,
        error(400, 10175, "atomic publish sequence is missing", "A")
    );
    let incomplete = error(400, 10176, "atomic publish batch is incomplete", "A");
    assert_eq!(batch(&client, "a.1", "b", 2, &[], "x").await, incomplete);
    assert_eq!(
        batch(&client, "a.1", "b", 1001, &[], "x").await,
        error(400, 10199, "atomic publish batch is too large: 1000", "A")
    );
    assert_eq!(
        batch(&client, "a.1", &"x".repeat(65), 1, &[], "x").await,
        error(400, 10179, "atomic publish batch ID is invalid", "A")
    );
    assert_eq!(
        batch(&client, "a.1", "b", 1, &[("Nats-Batch-Commit", "yes")], "x").await,
        error(400, 10200, "atomic publish batch commit is invalid", "A")
    );
    // A gap abandons the batch: the rest of it is refused too, and nothing is stored.
    assert_eq!(batch(&client, "a.1", "g", 1, &[], "x").await, "");
    assert_eq!(batch(&client, "a.1", "g", 3, &[], "x").await, incomplete);
    assert_eq!(
        batch(&client, "a.1", "g", 4, &[COMMIT], "x").await,
        incomplete
    );
    // An end-of-batch marker cannot be the whole batch.
    assert_eq!(
        batch(&client, "a.1", "e", 1, &[("Nats-Batch-Commit", "eob")], "x").await,
        incomplete
    );
    assert_eq!(
        batch(
            &client,
            "a.1",
            "l",
            1,
            &[("Nats-Expected-Last-Msg-Id", "m"), COMMIT],
            "x"
        )
        .await,
        error(
            400,
            10177,
            "atomic publish unsupported header used: Nats-Expected-Last-Msg-Id",
            "A"
        )
    );
    assert_eq!(
        batch(
            &client,
            "a.1",
            "v",
            1,
            &[("Nats-Required-Api-Level", "99"), COMMIT],
            "x"
        )
        .await,
        error(412, 10185, "JetStream minimum api level required", "A")
    );
    assert_eq!(state(&client, "A").await["messages"], 0);
}

#[tokio::test]
async fn the_commit_checks_the_batch_as_one() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        json!({"name": "R", "subjects": ["r.>"], "allow_atomic": true, "allow_rollup_hdrs": true,
               "max_msgs": 5, "discard": "new"}),
    )
    .await;
    // A message id twice in one batch.
    assert_eq!(
        batch(&client, "r.a", "d", 1, &[("Nats-Msg-Id", "m1")], "x").await,
        ""
    );
    assert_eq!(
        batch(
            &client,
            "r.a",
            "d",
            2,
            &[("Nats-Msg-Id", "m1"), COMMIT],
            "x"
        )
        .await,
        error(
            400,
            10201,
            "atomic publish batch contains duplicate message id",
            "R"
        )
    );
    // Expected last sequence only on the first message.
    assert_eq!(
        batch(
            &client,
            "r.a",
            "s",
            1,
            &[("Nats-Expected-Last-Sequence", "0")],
            "x"
        )
        .await,
        ""
    );
    assert_eq!(
        batch(
            &client,
            "r.a",
            "s",
            2,
            &[("Nats-Expected-Last-Sequence", "1"), COMMIT],
            "x"
        )
        .await,
        error(400, 10164, "wrong last sequence", "R")
    );
    // A subject the batch already writes cannot be rolled up or expected.
    assert_eq!(batch(&client, "r.a", "u", 1, &[], "x").await, "");
    assert_eq!(
        batch(
            &client,
            "r.a",
            "u",
            2,
            &[("Nats-Rollup", "sub"), COMMIT],
            "x"
        )
        .await,
        error(500, 10111, "batch rollup sub invalid", "R")
    );
    assert_eq!(batch(&client, "r.x", "p", 1, &[], "x").await, "");
    assert_eq!(
        batch(
            &client,
            "r.x",
            "p",
            2,
            &[("Nats-Expected-Last-Subject-Sequence", "0"), COMMIT],
            "x"
        )
        .await,
        error(400, 10164, "wrong last sequence", "R")
    );
    // Discard new counts the whole batch against max_msgs.
    for sequence in 1..=5 {
        assert_eq!(batch(&client, "r.z", "n", sequence, &[], "x").await, "");
    }
    assert_eq!(
        batch(&client, "r.z", "n", 6, &[COMMIT], "x").await,
        error(503, 10077, "maximum messages exceeded", "R")
    );
    assert_eq!(state(&client, "R").await["messages"], 0);
    // A rollup of the subject on its first message in the batch is fine.
    assert_eq!(
        batch(&client, "r.b", "ok", 1, &[("Nats-Rollup", "sub")], "1").await,
        ""
    );
    assert_eq!(
        batch(&client, "r.c", "ok", 2, &[COMMIT], "2").await,
        r#"{"stream":"R","seq":2,"batch":"ok","count":2}"#
    );
}

#[tokio::test]
async fn counters_run_on_inside_a_batch() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        json!({"name": "K", "subjects": ["k.>"], "allow_atomic": true, "allow_msg_counter": true}),
    )
    .await;
    assert_eq!(
        batch(&client, "k.a", "c", 1, &[("Nats-Incr", "5")], "").await,
        ""
    );
    assert_eq!(
        batch(&client, "k.a", "c", 2, &[("Nats-Incr", "7")], "").await,
        ""
    );
    assert_eq!(
        batch(&client, "k.b", "c", 3, &[("Nats-Incr", "1"), COMMIT], "").await,
        r#"{"stream":"K","seq":3,"batch":"c","count":3}"#
    );
    let second = api(&client, "$JS.API.STREAM.MSG.GET.K", r#"{"seq":2}"#).await;
    // {"val":"12"}
    assert_eq!(second["message"]["data"], "eyJ2YWwiOiIxMiJ9");
    assert_eq!(
        batch(&client, "k.a", "m", 1, &[COMMIT], "").await,
        error(400, 10169, "message counter increment is missing", "K")
    );
}

#[tokio::test]
async fn open_batches_per_stream_are_bounded() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        json!({"name": "I", "subjects": ["i.>"], "allow_atomic": true, "storage": "memory"}),
    )
    .await;
    for index in 0..50 {
        assert_eq!(
            batch(&client, "i.a", &format!("b{index}"), 1, &[], "x").await,
            ""
        );
    }
    assert_eq!(
        batch(&client, "i.a", "b50", 1, &[], "x").await,
        error(429, 10210, "atomic publish too many inflight", "I")
    );
    // Committing one frees a slot.
    assert_eq!(
        batch(&client, "i.a", "b0", 2, &[COMMIT], "x").await,
        r#"{"stream":"I","seq":2,"batch":"b0","count":2}"#
    );
    assert_eq!(batch(&client, "i.a", "b50", 1, &[], "x").await, "");
}

#[tokio::test]
async fn config_rules_for_batches() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, json!({"name": "O", "subjects": ["o.>"]})).await;
    let cases = [
        (
            json!({"name": "M1", "mirror": {"name": "O"}, "allow_atomic": true}),
            "stream mirrors can not also use atomic publishing",
        ),
        (
            json!({"name": "M2", "mirror": {"name": "O"}, "allow_batched": true}),
            "stream mirrors can not also use batch publishing",
        ),
        (
            json!({"name": "M3", "mirror": {"name": "O"}, "allow_msg_schedules": true}),
            "stream mirrors can not also schedule messages",
        ),
        (
            json!({"name": "M4", "mirror": {"name": "O"}, "allow_msg_counter": true}),
            "stream mirrors can not also calculate counters",
        ),
        (
            json!({"name": "P", "subjects": ["p"], "allow_atomic": true, "persist_mode": "async"}),
            "async persist mode is not supported with atomic batch publish",
        ),
    ];
    for (config, description) in cases {
        let name = config["name"].as_str().unwrap().to_string();
        let response = api(
            &client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &config.to_string(),
        )
        .await;
        assert_eq!(response["error"]["description"], description, "{config}");
    }
}

#[tokio::test]
async fn a_mirror_drops_the_headers_meant_for_the_origin() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    assert_eq!(batch(&client, "a.1", "b", 1, &[], "x").await, "");
    assert_eq!(
        batch(&client, "a.2", "b", 2, &[("X-Kept", "1"), COMMIT], "y").await,
        r#"{"stream":"A","seq":2,"batch":"b","count":2}"#
    );
    create(&client, json!({"name": "M", "mirror": {"name": "A"}})).await;
    let copies = client::wait_for_messages(&client, "M", ">", 2).await;
    assert_eq!(copies.len(), 2);
    assert_eq!(stored_headers(&client, "M", 1).await, pairs(&[]));
    assert_eq!(
        stored_headers(&client, "M", 2).await,
        pairs(&[("X-Kept", "1")])
    );
}

#[tokio::test]
async fn an_abandoned_batch_is_advised() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    let mut advisories = client
        .subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.A")
        .await
        .expect("subscribe");
    client.flush().await.expect("flush");
    assert_eq!(batch(&client, "a.1", "g", 1, &[], "x").await, "");
    batch(&client, "a.1", "g", 3, &[], "x").await;
    let advisory = tokio::time::timeout(client::TIMEOUT, advisories.next())
        .await
        .expect("advisory in time")
        .expect("subscription open");
    let advisory: Value = serde_json::from_slice(&advisory.payload).expect("json");
    assert_eq!(
        advisory["type"],
        "io.nats.jetstream.advisory.v1.stream_batch_abandoned"
    );
    assert_eq!(
        (&advisory["stream"], &advisory["batch"], &advisory["reason"]),
        (&json!("A"), &json!("g"), &json!("incomplete"))
    );
}

/// nats-server tells an empty `Nats-Batch-Commit:` from an absent one: present but neither `1`
/// nor `eob`, it is an invalid commit, and the batch it belongs to is gone.
#[tokio::test]
async fn an_empty_batch_commit_is_invalid() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    atomic_stream(&client).await;
    let invalid = error(400, 10200, "atomic publish batch commit is invalid", "A");
    assert_eq!(
        batch(
            &client,
            "a.1",
            "first",
            1,
            &[("Nats-Batch-Commit", "")],
            "x"
        )
        .await,
        invalid
    );
    assert_eq!(batch(&client, "a.1", "open", 1, &[], "x").await, "");
    assert_eq!(
        batch(&client, "a.2", "open", 2, &[("Nats-Batch-Commit", "")], "y").await,
        invalid
    );
    assert_eq!(
        batch(&client, "a.3", "open", 3, &[COMMIT], "z").await,
        error(400, 10176, "atomic publish batch is incomplete", "A")
    );
    // Outside a batch the header means nothing.
    assert_eq!(
        publish_raw(&client, "a.4", &[("Nats-Batch-Commit", "")], "w").await,
        r#"{"stream":"A","seq":1}"#
    );
    assert_eq!(state(&client, "A").await["messages"], 1);
}

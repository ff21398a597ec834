//! What a `STREAM.DELETE` / `CONSUMER.DELETE` answer promises, however soon the next request
//! comes: the consumer no longer answers its pull requests, the stream's bytes have left the
//! account usage, and a re-create of the same name starts fresh (and, for a durable file
//! consumer, keeps its files across a restart). Each is repeated back to back, since a delete
//! whose work finishes after its answer fails these only sometimes. Runs against ours or the
//! real nats-server (`NATS_SERVER_BIN`).

use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::client::{api, connect, create_stream, publish_raw, TIMEOUT};
use test_harness::TestServer;

const ROUNDS: usize = 25;

/// One `MSG.NEXT` (batch 1, no wait) on its own inbox: the message (delivered under its stored
/// subject, which a client's request mux cannot match), or the status or error instead.
async fn next_request(
    client: &async_nats::Client,
    stream: &str,
    consumer: &str,
) -> Result<async_nats::Message, String> {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.expect("subscribe");
    let subject = format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}");
    let body = json!({"batch": 1, "no_wait": true}).to_string();
    client
        .publish_with_reply(subject, inbox, body.into())
        .await
        .expect("publish");
    let reply = tokio::time::timeout(TIMEOUT, replies.next())
        .await
        .expect("an answer, not a client timeout")
        .expect("a reply");
    match &reply.status {
        Some(status) => Err(status.as_u16().to_string()),
        None => Ok(reply),
    }
}

fn consumer_config(stream: &str, name: &str, durable: bool) -> String {
    let mut config = json!({"name": name, "ack_policy": "explicit", "deliver_policy": "all"});
    if durable {
        config["durable_name"] = json!(name);
    }
    json!({"stream_name": stream, "config": config}).to_string()
}

async fn ok(client: &async_nats::Client, subject: &str, body: &str) -> Value {
    let answer = api(client, subject, body).await;
    assert!(answer.get("error").is_none(), "{subject}: {answer}");
    answer
}

#[tokio::test]
async fn a_deleted_memory_consumer_is_gone_when_its_delete_is_answered() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "D", "subjects": ["d.>"], "storage": "memory"}),
    )
    .await;
    for index in 0..3 {
        publish_raw(&client, &format!("d.{index}"), &[], "m").await;
    }
    for round in 0..ROUNDS {
        let durable = round % 2 == 0;
        let create = "$JS.API.CONSUMER.CREATE.D.C".to_string();
        ok(&client, &create, &consumer_config("D", "C", durable)).await;
        // The first message, so the re-created consumer must start again from it.
        let first = next_request(&client, "D", "C").await.expect("a message");
        assert_eq!(first.subject.as_str(), "d.0");

        ok(&client, "$JS.API.CONSUMER.DELETE.D.C", "").await;
        let after = next_request(&client, "D", "C").await;
        assert!(
            matches!(&after, Err(status) if status == "503"),
            "round {round}: a pull request right after the delete: {:?}",
            after.map(|message| message.payload)
        );

        ok(&client, &create, &consumer_config("D", "C", durable)).await;
        let again = next_request(&client, "D", "C").await.expect("a message");
        assert_eq!(again.subject.as_str(), "d.0", "round {round}");
        ok(&client, "$JS.API.CONSUMER.DELETE.D.C", "").await;
    }
}

#[tokio::test]
async fn a_deleted_memory_stream_leaves_the_account_usage_at_once() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    for round in 0..ROUNDS {
        create_stream(
            &client,
            json!({"name": "M", "subjects": ["m.>"], "storage": "memory"}),
        )
        .await;
        for index in 0..5 {
            publish_raw(&client, &format!("m.{index}"), &[], "payload").await;
        }
        let info = ok(&client, "$JS.API.INFO", "").await;
        assert!(info["memory"].as_u64().unwrap_or(0) > 0, "{info}");

        ok(&client, "$JS.API.STREAM.DELETE.M", "").await;
        let info = ok(&client, "$JS.API.INFO", "").await;
        assert_eq!(info["memory"], 0, "round {round}: {info}");
        assert_eq!(info["streams"], 0, "round {round}: {info}");

        // Publishes after the answer reach nothing; a re-create starts empty.
        let answer = tokio::time::timeout(TIMEOUT, client.request("m.late", "x".into()))
            .await
            .expect("an answer, not a client timeout");
        assert!(
            matches!(&answer, Err(error) if error.kind() == async_nats::RequestErrorKind::NoResponders),
            "round {round}: {:?}",
            answer.map(|message| message.payload)
        );
        create_stream(
            &client,
            json!({"name": "M", "subjects": ["m.>"], "storage": "memory"}),
        )
        .await;
        let info = ok(&client, "$JS.API.STREAM.INFO.M", "").await;
        assert_eq!(info["state"]["messages"], 0, "round {round}: {info}");
        ok(&client, "$JS.API.STREAM.DELETE.M", "").await;
    }
}

#[tokio::test]
async fn a_durable_file_consumer_recreated_at_once_keeps_its_files() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "F", "subjects": ["f.>"], "storage": "file"}),
    )
    .await;
    publish_raw(&client, "f.0", &[], "m").await;
    for round in 0..ROUNDS {
        let name = format!("C{}", round % 3);
        ok(
            &client,
            &format!("$JS.API.CONSUMER.CREATE.F.{name}"),
            &consumer_config("F", &name, true),
        )
        .await;
        ok(&client, &format!("$JS.API.CONSUMER.DELETE.F.{name}"), "").await;
        ok(
            &client,
            &format!("$JS.API.CONSUMER.CREATE.F.{name}"),
            &consumer_config("F", &name, true),
        )
        .await;
    }
    drop(client);
    server.restart();
    let client = connect(&server).await;
    let names = ok(&client, "$JS.API.CONSUMER.NAMES.F", "").await;
    let mut names: Vec<String> = names["consumers"]
        .as_array()
        .expect("a list of consumers")
        .iter()
        .filter_map(|name| name.as_str().map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names, ["C0", "C1", "C2"]);
}

//! A durable created over a same-named ephemeral consumer is persisted (issue 17 item 4): the
//! ephemeral `X` takes and acks messages, `CONSUMER.DURABLE.CREATE.S.X` turns it durable (both
//! servers answer success), and after a restart on the same store `X` is still there with its
//! position and acks. Passes on nats-server 2.15.1.

use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, stream_s, TIMEOUT};
use test_harness::TestServer;

const CONFIG: &str = r#""ack_policy":"explicit","deliver_policy":"all""#;

#[tokio::test]
async fn durable_over_ephemeral_survives_restart() {
    let mut server = TestServer::jetstream();
    {
        let client = connect(&server).await;
        stream_s(&client, 5).await;
        let created = api(
            &client,
            "$JS.API.CONSUMER.CREATE.S.X",
            &format!(r#"{{"stream_name":"S","config":{{"name":"X",{CONFIG}}}}}"#),
        )
        .await;
        assert!(created.get("error").is_none(), "{created}");
        assert!(created["config"].get("durable_name").is_none(), "{created}");

        let consumer: jetstream::consumer::PullConsumer = jetstream::new(client.clone())
            .get_stream("S")
            .await
            .expect("stream")
            .get_consumer("X")
            .await
            .expect("ephemeral consumer");
        let mut messages = consumer
            .fetch()
            .max_messages(2)
            .expires(TIMEOUT)
            .messages()
            .await
            .expect("fetch");
        for _ in 0..2 {
            let message = tokio::time::timeout(TIMEOUT, messages.next())
                .await
                .expect("message in time")
                .expect("a message")
                .expect("message");
            message.double_ack().await.expect("ack confirmed");
        }

        let durable = api(
            &client,
            "$JS.API.CONSUMER.DURABLE.CREATE.S.X",
            &format!(r#"{{"stream_name":"S","config":{{"durable_name":"X",{CONFIG}}}}}"#),
        )
        .await;
        assert!(durable.get("error").is_none(), "{durable}");
        assert_eq!(durable["config"]["durable_name"], "X", "{durable}");
    }

    server.restart();
    let client = connect(&server).await;
    let info = api(&client, "$JS.API.CONSUMER.INFO.S.X", "").await;
    assert!(
        info.get("error").is_none(),
        "durable lost across restart: {info}"
    );
    assert_eq!(info["config"]["durable_name"], "X", "{info}");
    let positions: Vec<Value> = vec![
        info["delivered"]["stream_seq"].clone(),
        info["ack_floor"]["stream_seq"].clone(),
        info["num_pending"].clone(),
        info["num_ack_pending"].clone(),
    ];
    assert_eq!(
        positions,
        [json!(2), json!(2), json!(3), json!(0)],
        "{info}"
    );

    // And it goes on from there.
    let consumer: jetstream::consumer::PullConsumer = jetstream::new(client.clone())
        .get_stream("S")
        .await
        .expect("stream")
        .get_consumer("X")
        .await
        .expect("durable consumer");
    let mut messages = consumer
        .fetch()
        .max_messages(1)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .expect("fetch");
    let message = tokio::time::timeout(TIMEOUT, messages.next())
        .await
        .expect("message in time")
        .expect("a message")
        .expect("message");
    assert_eq!(
        message.info().expect("ack info").stream_sequence,
        3,
        "resumed after the acked messages"
    );
}

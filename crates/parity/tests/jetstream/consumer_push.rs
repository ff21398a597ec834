//! Push consumers: delivery to a subject and a queue group, idle heartbeats, flow control, and
//! the ordered consumers of async-nats (push and pull flavours). Runs against ours or the real
//! nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream::{self, consumer::push};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

async fn stream_with(client: &async_nats::Client, name: &str, subject: &str, count: usize) {
    let response = api(
        client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        &json!({"name": name, "subjects": [format!("{subject}.>")]}).to_string(),
    )
    .await;
    assert!(response.get("error").is_none(), "{response}");
    let context = jetstream::new(client.clone());
    for index in 0..count {
        context
            .publish(
                format!("{subject}.{}", index % 3),
                format!("m{index}").into(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn push_delivers_and_acks() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "P", "p", 5).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("P").await.unwrap();
    let consumer: jetstream::consumer::PushConsumer = stream
        .create_consumer(push::Config {
            durable_name: Some("D".into()),
            deliver_subject: "deliver.here".into(),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    for index in 0..5 {
        let message = timeout(TIMEOUT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(message.payload, format!("m{index}"));
        message.double_ack().await.unwrap();
    }
    let info = api(&client, "$JS.API.CONSUMER.INFO.P.D", "").await;
    assert_eq!(info["push_bound"], true, "{info}");
    assert_eq!(info["ack_floor"]["stream_seq"], 5, "{info}");
    assert_eq!(info["num_pending"], 0);
}

#[tokio::test]
async fn queue_group_gets_each_message_once() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "Q", "q", 0).await;
    let mut first = client
        .queue_subscribe("grp.out", "workers".into())
        .await
        .unwrap();
    let mut second = client
        .queue_subscribe("grp.out", "workers".into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.Q.G",
        r#"{"stream_name":"Q","config":{"durable_name":"G","deliver_subject":"grp.out","deliver_group":"workers","ack_policy":"none"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let context = jetstream::new(client.clone());
    for index in 0..20 {
        context
            .publish(format!("q.{index}"), "x".into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let mut received = 0;
    while received < 20 {
        tokio::select! {
            Some(_) = first.next() => received += 1,
            Some(_) = second.next() => received += 1,
            _ = tokio::time::sleep(TIMEOUT) => panic!("only {received} of 20"),
        }
    }
    // Nothing more arrives.
    let extra = timeout(Duration::from_millis(300), async {
        tokio::select! {
            Some(_) = first.next() => true,
            Some(_) = second.next() => true,
        }
    })
    .await;
    assert!(extra.is_err(), "a message was delivered twice");
}

#[tokio::test]
async fn idle_heartbeat_and_flow_control_statuses() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "H", "h", 0).await;
    let mut deliveries = client.subscribe("hb.out").await.unwrap();
    client.flush().await.unwrap();
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.H.B",
        r#"{"stream_name":"H","config":{"durable_name":"B","deliver_subject":"hb.out","ack_policy":"none","idle_heartbeat":200000000,"flow_control":true}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let heartbeat = timeout(TIMEOUT, deliveries.next()).await.unwrap().unwrap();
    assert_eq!(heartbeat.status.map(|s| s.as_u16()), Some(100));
    assert_eq!(heartbeat.description.as_deref(), Some("Idle Heartbeat"));
    let headers = heartbeat.headers.unwrap();
    assert_eq!(headers.get("Nats-Last-Consumer").unwrap().as_str(), "0");
    assert_eq!(headers.get("Nats-Last-Stream").unwrap().as_str(), "0");

    // Enough bytes for a flow-control request.
    let context = jetstream::new(client.clone());
    let payload = bytes::Bytes::from(vec![b'x'; 64 * 1024]);
    let mut acks = Vec::new();
    for index in 0..40 {
        acks.push(
            context
                .publish(format!("h.{index}"), payload.clone())
                .await
                .unwrap(),
        );
    }
    for ack in acks {
        ack.await.unwrap();
    }
    let mut data = 0;
    let mut flow_control = None;
    // Idle heartbeats keep arriving while a consumer is stalled: bound the whole loop too.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while flow_control.is_none() || data < 40 {
        assert!(
            std::time::Instant::now() < deadline,
            "deliveries stalled after {data} of 40 messages"
        );
        let message = timeout(TIMEOUT, deliveries.next()).await.unwrap().unwrap();
        match message.status.map(|s| s.as_u16()) {
            Some(100) if message.description.as_deref() == Some("FlowControl Request") => {
                let reply = message.reply.clone().unwrap();
                assert!(reply.starts_with("$JS.FC.H.B."), "{reply}");
                client.publish(reply.clone(), "".into()).await.unwrap();
                flow_control = Some(reply);
            }
            Some(100) => {}
            _ => data += 1,
        }
        if data == 40 && flow_control.is_none() {
            panic!("no flow-control request after 2.5 MB");
        }
    }
}

#[tokio::test]
async fn ordered_consumers_read_everything_in_order() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_with(&client, "O", "o", 50).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("O").await.unwrap();
    let ordered = stream
        .create_consumer(push::OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: "o.>".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = ordered.messages().await.unwrap();
    for index in 0..50 {
        let message = timeout(TIMEOUT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(message.payload, format!("m{index}"));
    }
    let pull_ordered = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            filter_subject: "o.1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = pull_ordered.messages().await.unwrap();
    for index in (1..50).step_by(3) {
        let message = timeout(TIMEOUT, messages.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(message.payload, format!("m{index}"));
    }
}

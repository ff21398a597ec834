//! What a consumer delivers: deliver policies (all, last, new, by_start_sequence,
//! by_start_time, last_per_subject), filter_subject(s), headers_only, max_ack_pending stalls, and
//! num_pending with filters. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::time::timeout;

/// Subjects d.a, d.b, d.c, d.a, d.b, d.a (seq 1..=6), payload = "<subject>#<seq>".
async fn setup(client: &async_nats::Client) -> jetstream::Context {
    let created = api(
        client,
        "$JS.API.STREAM.CREATE.D",
        &json!({"name": "D", "subjects": ["d.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let context = jetstream::new(client.clone());
    for (index, subject) in ["d.a", "d.b", "d.c", "d.a", "d.b", "d.a"]
        .iter()
        .enumerate()
    {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("X-Index", index.to_string().as_str());
        context
            .publish_with_headers(
                subject.to_string(),
                headers,
                format!("{subject}#{}", index + 1).into(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }
    context
}

async fn create(client: &async_nats::Client, name: &str, config: Value) -> Value {
    let mut config = config;
    config["durable_name"] = json!(name);
    config["ack_policy"] = json!("explicit");
    let created = api(
        client,
        &format!("$JS.API.CONSUMER.CREATE.D.{name}"),
        &json!({"stream_name": "D", "config": config}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    created
}

/// Everything available now, acked.
async fn payloads(context: &jetstream::Context, name: &str) -> Vec<String> {
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("D")
        .await
        .unwrap()
        .get_consumer(name)
        .await
        .unwrap();
    let mut out = Vec::new();
    let mut batch = consumer.fetch().max_messages(100).messages().await.unwrap();
    while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
        let message = message.unwrap();
        out.push(String::from_utf8(message.payload.to_vec()).unwrap());
        message.double_ack().await.unwrap();
    }
    out
}

#[tokio::test]
async fn deliver_policies_and_filters() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = setup(&client).await;
    let cases = [
        (
            "all",
            json!({"deliver_policy": "all"}),
            vec!["d.a#1", "d.b#2", "d.c#3", "d.a#4", "d.b#5", "d.a#6"],
        ),
        ("last", json!({"deliver_policy": "last"}), vec!["d.a#6"]),
        ("new", json!({"deliver_policy": "new"}), vec![]),
        (
            "seq",
            json!({"deliver_policy": "by_start_sequence", "opt_start_seq": 4}),
            vec!["d.a#4", "d.b#5", "d.a#6"],
        ),
        (
            "time",
            json!({"deliver_policy": "by_start_time", "opt_start_time": "2000-01-01T00:00:00Z"}),
            vec!["d.a#1", "d.b#2", "d.c#3", "d.a#4", "d.b#5", "d.a#6"],
        ),
        (
            "lps",
            json!({"deliver_policy": "last_per_subject", "filter_subject": "d.>"}),
            vec!["d.c#3", "d.b#5", "d.a#6"],
        ),
        (
            "filter",
            json!({"filter_subject": "d.b"}),
            vec!["d.b#2", "d.b#5"],
        ),
        (
            "filters",
            json!({"filter_subjects": ["d.b", "d.c"]}),
            vec!["d.b#2", "d.c#3", "d.b#5"],
        ),
        (
            "last_b",
            json!({"deliver_policy": "last", "filter_subject": "d.b"}),
            vec!["d.b#5"],
        ),
    ];
    for (name, config, expected) in cases {
        let created = create(&client, name, config).await;
        assert_eq!(
            created["num_pending"].as_u64().unwrap(),
            expected.len() as u64,
            "{name}: {created}"
        );
        assert_eq!(payloads(&context, name).await, expected, "{name}");
    }
    // last_per_subject needs a filter.
    let refused = api(
        &client,
        "$JS.API.CONSUMER.CREATE.D.nofilter",
        r#"{"stream_name":"D","config":{"durable_name":"nofilter","deliver_policy":"last_per_subject"}}"#,
    )
    .await;
    assert_eq!(
        refused["error"]["description"],
        "consumer delivery policy is deliver last per subject, but optional filter subject is not set"
    );
    // `new` sees what comes after it was created.
    context
        .publish("d.z", "d.z#7".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(payloads(&context, "new").await, ["d.z#7"]);
    let info = api(&client, "$JS.API.CONSUMER.INFO.D.filter", "").await;
    assert_eq!(info["num_pending"], 0, "{info}");
    assert_eq!(info["delivered"]["consumer_seq"], 2, "{info}");
}

#[tokio::test]
async fn headers_only_sends_sizes() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = setup(&client).await;
    create(&client, "H", json!({"headers_only": true})).await;
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("D")
        .await
        .unwrap()
        .get_consumer("H")
        .await
        .unwrap();
    let mut batch = consumer.fetch().max_messages(1).messages().await.unwrap();
    let message = timeout(TIMEOUT, batch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(message.payload.is_empty());
    let headers = message.headers.clone().unwrap();
    assert_eq!(headers.get("Nats-Msg-Size").unwrap().as_str(), "5");
    assert_eq!(headers.get("X-Index").unwrap().as_str(), "0");
}

#[tokio::test]
async fn max_ack_pending_stalls_delivery() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = setup(&client).await;
    create(&client, "M", json!({"max_ack_pending": 2})).await;
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("D")
        .await
        .unwrap()
        .get_consumer("M")
        .await
        .unwrap();
    let fetch = |count| {
        let consumer = consumer.clone();
        async move {
            let mut got = Vec::new();
            let mut batch = consumer
                .batch()
                .max_messages(count)
                .expires(Duration::from_millis(500))
                .messages()
                .await
                .unwrap();
            while let Some(message) = timeout(TIMEOUT, batch.next()).await.unwrap() {
                got.push(message.unwrap());
            }
            got
        }
    };
    let first = fetch(5).await;
    assert_eq!(first.len(), 2);
    assert!(fetch(5).await.is_empty());
    let info = api(&client, "$JS.API.CONSUMER.INFO.D.M", "").await;
    assert_eq!(info["num_ack_pending"], 2, "{info}");
    assert_eq!(info["num_pending"], 4, "{info}");
    first[0].double_ack().await.unwrap();
    let next = fetch(5).await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].payload, "d.c#3");
}

#[tokio::test]
async fn replay_original_keeps_the_gaps_and_acks_are_sampled() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.R",
        &json!({"name": "R", "subjects": ["r.>"]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let context = jetstream::new(client.clone());
    for index in 0..3 {
        if index > 0 {
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        context
            .publish("r.x", format!("{index}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let mut deliveries = client.subscribe("replay.out").await.unwrap();
    let mut metrics = client
        .subscribe("$JS.EVENT.METRIC.CONSUMER.ACK.R.RP")
        .await
        .unwrap();
    client.flush().await.unwrap();
    let created = api(
        &client,
        "$JS.API.CONSUMER.CREATE.R.RP",
        r#"{"stream_name":"R","config":{"durable_name":"RP","deliver_subject":"replay.out","ack_policy":"explicit","replay_policy":"original","sample_freq":"100%"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let mut arrivals = Vec::new();
    for _ in 0..3 {
        let message = timeout(TIMEOUT, deliveries.next()).await.unwrap().unwrap();
        arrivals.push(tokio::time::Instant::now());
        client
            .publish(message.reply.unwrap(), "+ACK".into())
            .await
            .unwrap();
    }
    for pair in arrivals.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(300), "gap {gap:?}");
    }
    let metric = timeout(TIMEOUT, metrics.next()).await.unwrap().unwrap();
    let metric: Value = serde_json::from_slice(&metric.payload).unwrap();
    assert_eq!(metric["type"], "io.nats.jetstream.metric.v1.consumer_ack");
    assert_eq!(metric["stream"], "R");
    assert_eq!(metric["consumer"], "RP");
    assert_eq!(metric["deliveries"], 1);
}

#[tokio::test]
async fn purge_moves_the_consumer_past_removed_messages() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = setup(&client).await;
    create(&client, "U", json!({})).await;
    let consumer: jetstream::consumer::PullConsumer = context
        .get_stream("D")
        .await
        .unwrap()
        .get_consumer("U")
        .await
        .unwrap();
    let mut batch = consumer.fetch().max_messages(2).messages().await.unwrap();
    let first = timeout(TIMEOUT, batch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    first.double_ack().await.unwrap();
    let purged = api(&client, "$JS.API.STREAM.PURGE.D", "").await;
    assert_eq!(purged["purged"], 6, "{purged}");
    let info = api(&client, "$JS.API.CONSUMER.INFO.D.U", "").await;
    assert_eq!(info["num_pending"], 0, "{info}");
    assert_eq!(info["num_ack_pending"], 0, "{info}");
    assert_eq!(info["ack_floor"]["stream_seq"], 6, "{info}");
    assert_eq!(info["delivered"]["stream_seq"], 6, "{info}");
    context
        .publish("d.q", "d.q#7".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(payloads(&context, "U").await, ["d.q#7"]);
}

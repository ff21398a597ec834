//! async-nats's service API (`$SRV`, ADR-32) on the server: two instances of one service in a
//! queue group, grouped endpoints, error replies with their headers, and the `$SRV.PING`,
//! `$SRV.INFO` and `$SRV.STATS` discovery requests answered by every instance (request-many
//! through one inbox). Part of issue 19's client-library sweep; passes against the real
//! nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test core client_service::`).

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::service::{self, ServiceExt};
use futures::StreamExt;
use serde_json::Value;
use test_harness::client::connect;
use test_harness::TestServer;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// Starts one instance of the "sweep" service: `sweep.echo` answers with the payload,
/// `sweep.math.fail` answers with a service error.
async fn start_instance(client: async_nats::Client) -> String {
    let service = client
        .service_builder()
        .description("issue 19 sweep")
        .start("sweep", "1.2.3")
        .await
        .unwrap();
    let id = service.info().await.id;
    let mut echo = service.endpoint("sweep.echo").await.unwrap();
    let mut fail = service
        .group("sweep.math")
        .endpoint_builder()
        .name("fail")
        .add("fail")
        .await
        .unwrap();
    tokio::spawn(async move {
        // Keeps the service (and its discovery subscriptions) alive with the endpoints.
        let _service = service;
        loop {
            tokio::select! {
                Some(request) = echo.next() => {
                    let payload = request.message.payload.clone();
                    request.respond(Ok(payload)).await.unwrap();
                }
                Some(request) = fail.next() => {
                    request
                        .respond(Err(service::error::Error {
                            status: "no way".into(),
                            code: 418,
                        }))
                        .await
                        .unwrap();
                }
                else => break,
            }
        }
    });
    id
}

/// Every reply to one request within a short window after the first `expected`.
async fn gather(client: &async_nats::Client, subject: &str, expected: usize) -> Vec<Value> {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    client
        .publish_with_reply(subject.to_string(), inbox, "".into())
        .await
        .unwrap();
    let mut values = Vec::new();
    while values.len() < expected {
        let reply = timeout(WAIT, replies.next())
            .await
            .unwrap_or_else(|_| panic!("{subject}: {} of {expected} replies", values.len()))
            .unwrap();
        values.push(serde_json::from_slice(&reply.payload).unwrap());
    }
    assert!(
        timeout(Duration::from_millis(300), replies.next())
            .await
            .is_err(),
        "{subject}: more than {expected} replies"
    );
    values
}

#[tokio::test]
async fn service_endpoints_errors_and_discovery() {
    let server = TestServer::core();
    let first = start_instance(connect(&server).await).await;
    let second = start_instance(connect(&server).await).await;
    let client = connect(&server).await;

    for index in 0..10 {
        let answer = timeout(
            WAIT,
            client.request("sweep.echo", format!("{index}").into()),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(&answer.payload[..], format!("{index}").as_bytes());
    }

    let failure = timeout(WAIT, client.request("sweep.math.fail", "".into()))
        .await
        .unwrap()
        .unwrap();
    let headers = failure.headers.unwrap();
    assert_eq!(
        headers.get(service::NATS_SERVICE_ERROR).unwrap().as_str(),
        "no way"
    );
    assert_eq!(
        headers
            .get(service::NATS_SERVICE_ERROR_CODE)
            .unwrap()
            .as_str(),
        "418"
    );

    let ids: BTreeSet<String> = [first, second].into();
    for subject in ["$SRV.PING", "$SRV.PING.sweep"] {
        let pings = gather(&client, subject, 2).await;
        let seen: BTreeSet<String> = pings
            .iter()
            .map(|ping| ping["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(seen, ids, "{subject}");
        for ping in &pings {
            assert_eq!(ping["type"], "io.nats.micro.v1.ping_response");
            assert_eq!(ping["version"], "1.2.3");
        }
    }
    for id in &ids {
        let info = gather(&client, &format!("$SRV.INFO.sweep.{id}"), 1).await;
        assert_eq!(info[0]["description"], "issue 19 sweep");
        let subjects: BTreeSet<&str> = info[0]["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|endpoint| endpoint["subject"].as_str().unwrap())
            .collect();
        assert_eq!(subjects, ["sweep.echo", "sweep.math.fail"].into());
    }
    let stats = gather(&client, "$SRV.STATS.sweep", 2).await;
    let mut echo_requests = 0;
    let mut errors = 0;
    for instance in &stats {
        for endpoint in instance["endpoints"].as_array().unwrap() {
            match endpoint["subject"].as_str().unwrap() {
                "sweep.echo" => echo_requests += endpoint["num_requests"].as_u64().unwrap(),
                _ => errors += endpoint["num_errors"].as_u64().unwrap(),
            }
            assert_eq!(endpoint["queue_group"], "q");
        }
    }
    assert_eq!(
        echo_requests, 10,
        "each request to exactly one instance (queue group q)"
    );
    assert_eq!(errors, 1);
}

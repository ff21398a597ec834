//! async-nats's public API for core NATS, driven feature by feature as its documentation shows
//! it (issue 19's client-library sweep): connect options as the server sees them, the INFO the
//! client reads, reconnects that restore subscriptions, retry on the first connect, drain of a
//! subscription and of a client, `unsubscribe_after`, request-many through one inbox, headers
//! with repeated values, request time-outs. Passes against the real nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test core client_library::`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::{ConnectOptions, Event, HeaderMap, Subscriber};
use futures::StreamExt;
use test_harness::client::barrier;
use test_harness::monitoring::get_json;
use test_harness::{free_port, ServerOptions, TestServer};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

async fn next_payload(subscriber: &mut Subscriber) -> String {
    let message = timeout(WAIT, subscriber.next())
        .await
        .expect("a message in time")
        .expect("subscription open");
    String::from_utf8_lossy(&message.payload).into_owned()
}

/// Waits (bounded) until `events` holds `wanted` as often as `count`.
async fn wait_for_event(events: &Arc<Mutex<Vec<String>>>, wanted: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = events
            .lock()
            .unwrap()
            .iter()
            .filter(|event| event.as_str() == wanted)
            .count();
        if seen >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {count}x {wanted:?} in {:?}",
            events.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn recording_events(options: ConnectOptions) -> (ConnectOptions, Arc<Mutex<Vec<String>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = options.event_callback(move |event: Event| {
        let sink = sink.clone();
        async move {
            sink.lock().unwrap().push(event.to_string());
        }
    });
    (options, events)
}

#[tokio::test]
async fn connect_options_as_the_server_reports_them() {
    let server = TestServer::start(ServerOptions {
        monitoring: true,
        ..Default::default()
    });
    let client = ConnectOptions::new()
        .name("sweep-client")
        .connect(server.url())
        .await
        .unwrap();
    barrier(&client).await;

    let info = client.server_info();
    assert_eq!(info.port, server.port);
    assert_eq!(info.host, "127.0.0.1");
    assert_eq!(info.max_payload, 1024 * 1024);
    assert_eq!(info.proto, 1);
    assert!(info.headers);
    assert!(!info.auth_required);
    assert!(!info.tls_required);
    assert!(!info.jetstream);
    assert!(info.client_id > 0);
    assert_eq!(info.client_ip, "127.0.0.1");
    assert_eq!(info.server_id.len(), 56, "{}", info.server_id);
    assert!(client.is_server_compatible(2, 10, 0), "{}", info.version);

    let connz = get_json(&server, "/connz?subs=1");
    let connections = connz["connections"].as_array().unwrap();
    let ours = connections
        .iter()
        .find(|connection| connection["name"] == "sweep-client")
        .unwrap_or_else(|| panic!("no connection named sweep-client in {connz}"));
    assert_eq!(ours["lang"], "rust");
    assert_eq!(ours["version"], "0.51.0");
    assert_eq!(ours["cid"].as_u64(), Some(info.client_id));
}

#[tokio::test]
async fn a_small_max_payload_reaches_the_client() {
    let server = TestServer::with_config("max_payload: 1KB\n");
    let client = test_harness::client::connect(&server).await;
    assert_eq!(client.max_payload(), 1024);
    let mut subscription = client.subscribe("limit").await.unwrap();
    barrier(&client).await;
    client
        .publish("limit", vec![b'a'; 1024].into())
        .await
        .unwrap();
    assert_eq!(next_payload(&mut subscription).await.len(), 1024);
    let refused = client.publish("limit", vec![b'a'; 1025].into()).await;
    assert!(refused.is_err(), "a payload over max_payload is refused");
}

#[tokio::test]
async fn no_echo_keeps_a_client_from_its_own_messages() {
    let server = TestServer::core();
    let quiet = ConnectOptions::new()
        .no_echo()
        .connect(server.url())
        .await
        .unwrap();
    let other = test_harness::client::connect(&server).await;
    let mut own = quiet.subscribe("echo.test").await.unwrap();
    let mut theirs = other.subscribe("echo.test").await.unwrap();
    // A no-echo client sees none of its own messages, so its round trip goes through a
    // responder on the other connection.
    let mut responder = other.subscribe("echo.barrier").await.unwrap();
    barrier(&other).await;
    let answering = other.clone();
    tokio::spawn(async move {
        while let Some(request) = responder.next().await {
            if let Some(reply) = request.reply {
                let _ = answering.publish(reply, "".into()).await;
            }
        }
    });
    timeout(WAIT, quiet.request("echo.barrier", "".into()))
        .await
        .unwrap()
        .unwrap();
    quiet
        .publish("echo.test", "from quiet".into())
        .await
        .unwrap();
    other
        .publish("echo.test", "from other".into())
        .await
        .unwrap();
    other.flush().await.unwrap();
    // Two connections: no order between their messages.
    let mut both = [
        next_payload(&mut theirs).await,
        next_payload(&mut theirs).await,
    ];
    both.sort();
    assert_eq!(both, ["from other", "from quiet"]);
    assert_eq!(next_payload(&mut own).await, "from other");
    assert!(
        timeout(Duration::from_millis(300), own.next())
            .await
            .is_err(),
        "no echo of its own message"
    );
}

#[tokio::test]
async fn custom_inbox_prefix_carries_requests() {
    let server = TestServer::core();
    let responder = test_harness::client::connect(&server).await;
    let mut service = responder.subscribe("prefixed.service").await.unwrap();
    barrier(&responder).await;
    tokio::spawn(async move {
        while let Some(request) = service.next().await {
            let reply = request.reply.clone().unwrap();
            responder
                .publish(reply.clone(), reply.to_string().into())
                .await
                .unwrap();
        }
    });
    let requester = ConnectOptions::new()
        .custom_inbox_prefix("_MINE.sweep")
        .connect(server.url())
        .await
        .unwrap();
    let answer = timeout(WAIT, requester.request("prefixed.service", "".into()))
        .await
        .unwrap()
        .unwrap();
    let reply = String::from_utf8_lossy(&answer.payload).into_owned();
    assert!(reply.starts_with("_MINE.sweep."), "{reply}");
}

#[tokio::test]
async fn reconnect_restores_subscriptions_and_queue_groups() {
    let mut server = TestServer::core();
    let (options, events) = recording_events(ConnectOptions::new());
    let client = options
        .reconnect_delay_callback(|_| Duration::from_millis(50))
        .connect(server.url())
        .await
        .unwrap();
    let mut plain = client.subscribe("after.restart").await.unwrap();
    let mut queued = client
        .queue_subscribe("after.restart", "group".into())
        .await
        .unwrap();
    let mut limited = client.subscribe("after.limited").await.unwrap();
    limited.unsubscribe_after(2).await.unwrap();
    barrier(&client).await;
    client.publish("after.limited", "one".into()).await.unwrap();
    assert_eq!(next_payload(&mut limited).await, "one");
    let first_server_id = client.server_info().server_id;

    server.restart();
    wait_for_event(&events, "disconnected", 1).await;
    wait_for_event(&events, "connected", 1).await;
    barrier(&client).await;
    assert_ne!(client.server_info().server_id, first_server_id);
    assert_eq!(client.statistics().connects.load(Ordering::Relaxed), 2);

    let publisher = test_harness::client::connect(&server).await;
    publisher
        .publish("after.restart", "again".into())
        .await
        .unwrap();
    publisher
        .publish("after.limited", "two".into())
        .await
        .unwrap();
    publisher
        .publish("after.limited", "three".into())
        .await
        .unwrap();
    publisher.flush().await.unwrap();
    assert_eq!(next_payload(&mut plain).await, "again");
    assert_eq!(next_payload(&mut queued).await, "again");
    // The rest of the unsubscribe_after limit was sent again with the subscription.
    assert_eq!(next_payload(&mut limited).await, "two");
    assert!(timeout(WAIT, limited.next()).await.unwrap().is_none());
}

#[tokio::test]
async fn retry_on_initial_connect_waits_for_the_server() {
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let connecting = tokio::spawn(async move {
        ConnectOptions::new()
            .retry_on_initial_connect()
            .reconnect_delay_callback(|_| Duration::from_millis(50))
            .connect(url)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start(ServerOptions {
        port: Some(port),
        ..Default::default()
    });
    let client = timeout(Duration::from_secs(10), connecting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let mut subscription = client.subscribe("late").await.unwrap();
    barrier(&client).await;
    let publisher = test_harness::client::connect(&server).await;
    publisher.publish("late", "arrived".into()).await.unwrap();
    publisher.flush().await.unwrap();
    assert_eq!(next_payload(&mut subscription).await, "arrived");
}

#[tokio::test]
async fn force_reconnect_keeps_subscriptions() {
    let server = TestServer::core();
    let client = test_harness::client::connect(&server).await;
    let mut subscription = client.subscribe("forced").await.unwrap();
    barrier(&client).await;
    let first_client_id = client.server_info().client_id;
    client.force_reconnect().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.server_info().client_id == first_client_id {
        assert!(Instant::now() < deadline, "no new connection");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let publisher = test_harness::client::connect(&server).await;
    // Published until the re-sent subscription is in place.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        publisher
            .publish("forced", "still here".into())
            .await
            .unwrap();
        publisher.flush().await.unwrap();
        if let Ok(Some(message)) = timeout(Duration::from_millis(100), subscription.next()).await {
            assert_eq!(&message.payload[..], b"still here");
            break;
        }
        assert!(Instant::now() < deadline, "subscription not restored");
    }
}

#[tokio::test]
async fn subscription_drain_delivers_what_was_sent_then_ends() {
    let server = TestServer::core();
    let client = test_harness::client::connect(&server).await;
    let publisher = test_harness::client::connect(&server).await;
    let mut subscription = client.subscribe("drained").await.unwrap();
    barrier(&client).await;
    for index in 0..50 {
        publisher
            .publish("drained", index.to_string().into())
            .await
            .unwrap();
    }
    barrier(&publisher).await;
    subscription.drain().await.unwrap();
    let mut received = Vec::new();
    while let Some(message) = timeout(WAIT, subscription.next()).await.unwrap() {
        received.push(String::from_utf8_lossy(&message.payload).into_owned());
    }
    let expected: Vec<String> = (0..50).map(|index| index.to_string()).collect();
    assert_eq!(received, expected);
    // The server no longer has the interest.
    publisher.publish("drained", "late".into()).await.unwrap();
    barrier(&publisher).await;
    let answer = timeout(WAIT, publisher.request("drained", "".into()))
        .await
        .unwrap();
    assert!(answer.is_err(), "no responder left: {answer:?}");
}

#[tokio::test]
async fn client_drain_closes_after_its_subscriptions_end() {
    let server = TestServer::core();
    let (options, events) = recording_events(ConnectOptions::new());
    let client = options.connect(server.url()).await.unwrap();
    let publisher = test_harness::client::connect(&server).await;
    let mut first = client.subscribe("client.drain.one").await.unwrap();
    let mut second = client.subscribe("client.drain.two").await.unwrap();
    barrier(&client).await;
    publisher
        .publish("client.drain.one", "1".into())
        .await
        .unwrap();
    publisher
        .publish("client.drain.two", "2".into())
        .await
        .unwrap();
    barrier(&publisher).await;
    client.drain().await.unwrap();
    assert_eq!(next_payload(&mut first).await, "1");
    assert_eq!(next_payload(&mut second).await, "2");
    assert!(timeout(WAIT, first.next()).await.unwrap().is_none());
    assert!(timeout(WAIT, second.next()).await.unwrap().is_none());
    wait_for_event(&events, "closed", 1).await;
    assert!(client.publish("client.drain.one", "".into()).await.is_err());
}

#[tokio::test]
async fn request_many_collects_every_responder() {
    let server = TestServer::core();
    let responders = test_harness::client::connect(&server).await;
    for name in ["a", "b", "c"] {
        let mut service = responders.subscribe("many.service").await.unwrap();
        let client = responders.clone();
        tokio::spawn(async move {
            while let Some(request) = service.next().await {
                let mut headers = HeaderMap::new();
                headers.insert("Responder", name);
                client
                    .publish_with_headers(request.reply.unwrap(), headers, request.payload)
                    .await
                    .unwrap();
            }
        });
    }
    barrier(&responders).await;
    let requester = test_harness::client::connect(&server).await;
    let inbox = requester.new_inbox();
    let mut replies = requester.subscribe(inbox.clone()).await.unwrap();
    requester
        .publish_with_reply("many.service", inbox, "ping".into())
        .await
        .unwrap();
    let mut names = Vec::new();
    for _ in 0..3 {
        let reply = timeout(WAIT, replies.next()).await.unwrap().unwrap();
        assert_eq!(&reply.payload[..], b"ping");
        let headers = reply.headers.unwrap();
        names.push(headers.get("Responder").unwrap().to_string());
    }
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(timeout(Duration::from_millis(300), replies.next())
        .await
        .is_err());
}

#[tokio::test]
async fn headers_keep_repeated_values_order_and_case() {
    let server = TestServer::core();
    let client = test_harness::client::connect(&server).await;
    let mut subscription = client.subscribe("headers.many").await.unwrap();
    barrier(&client).await;
    let mut headers = HeaderMap::new();
    headers.append("X-Multi", "first");
    headers.append("X-Multi", "second");
    headers.insert("lower-case-key", "Value With Spaces");
    client
        .publish_with_headers("headers.many", headers, "".into())
        .await
        .unwrap();
    let message = timeout(WAIT, subscription.next()).await.unwrap().unwrap();
    assert!(message.payload.is_empty());
    let received = message.headers.unwrap();
    let values: Vec<String> = received
        .get_all("X-Multi")
        .map(|value| value.to_string())
        .collect();
    assert_eq!(values, ["first", "second"]);
    assert_eq!(
        received.get("lower-case-key").map(|value| value.as_str()),
        Some("Value With Spaces")
    );
    assert!(message.status.is_none());
}

#[tokio::test]
async fn request_times_out_when_the_responder_is_silent() {
    let server = TestServer::core();
    let silent = test_harness::client::connect(&server).await;
    let _held = silent.subscribe("silent.service").await.unwrap();
    barrier(&silent).await;
    let requester = ConnectOptions::new()
        .request_timeout(Some(Duration::from_millis(300)))
        .connect(server.url())
        .await
        .unwrap();
    let error = requester
        .request("silent.service", "".into())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::TimedOut);
    let error = requester
        .request("nobody.listens", "".into())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
}

#[tokio::test]
async fn statistics_count_both_directions() {
    let server = TestServer::core();
    let client = test_harness::client::connect(&server).await;
    let mut subscription = client.subscribe("counted").await.unwrap();
    barrier(&client).await;
    let statistics = client.statistics();
    let before_in = statistics.in_messages.load(Ordering::Relaxed);
    let before_out = statistics.out_messages.load(Ordering::Relaxed);
    for _ in 0..10 {
        client.publish("counted", "12345".into()).await.unwrap();
    }
    for _ in 0..10 {
        assert_eq!(next_payload(&mut subscription).await, "12345");
    }
    assert_eq!(
        statistics.in_messages.load(Ordering::Relaxed) - before_in,
        10
    );
    assert_eq!(
        statistics.out_messages.load(Ordering::Relaxed) - before_out,
        10
    );
}

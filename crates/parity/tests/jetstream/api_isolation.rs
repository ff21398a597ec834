//! One expensive `$JS.API` request stalls only its sender: while a client sends stream creates
//! listing 100k subjects each, other clients' pub/sub round trips, new connections' INFO and
//! `$JS.API.INFO` keep answering. And the API queue limit (`jetstream { request_queue_limit }`,
//! nats-server's 10,000 by default): requests piling up past it are dropped unanswered, and the
//! server keeps serving everyone, the flooder included.

use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use test_harness::client::connect;
use test_harness::{ServerOptions, TestServer};
use tokio::io::AsyncBufReadExt;

/// Subjects per stream create: a 1.4 MB request.
const SUBJECTS: usize = 100_000;
/// Stream creates sent at once, without waiting. One: nats-server serves its API queues with
/// GOMAXPROCS workers, so on 2 cores two such creates stall its `$JS.API.INFO` too.
const CREATES: usize = 1;
/// How long the other clients measure while the creates are served.
const MEASURE: Duration = Duration::from_secs(4);
/// Bound for any single operation (a stalled server misses it by minutes).
const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);
/// The p99 each measured operation must meet. nats-server answers in ~1 ms on an idle machine
/// (ours 2-60 ms in a debug build at load 10). At load 25 (CI beside other test runs, session 26)
/// `$JS.API.INFO`'s p99 reached 410 ms (pub/sub 8 ms), failing the 250 ms this was: 1 s keeps
/// the margin CI's load needs and still fails operations held behind the create.
const P99_BOUND: Duration = Duration::from_secs(1);

fn huge_create(index: usize) -> Vec<u8> {
    let subjects: Vec<String> = (0..SUBJECTS)
        .map(|subject| format!("huge{index}.s{subject}"))
        .collect();
    serde_json::to_vec(&json!({
        "name": format!("HUGE{index}"),
        "subjects": subjects,
        "storage": "memory",
    }))
    .unwrap()
}

fn p99(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[(samples.len() * 99 / 100).min(samples.len() - 1)]
}

async fn new_connection_info(address: &str) -> Duration {
    let started = Instant::now();
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut reader = tokio::io::BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    assert!(line.starts_with("INFO "), "{line}");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_stream_creates_stall_only_their_sender() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some("max_payload: 8MB\n".into()),
        ..Default::default()
    });
    let sender = connect(&server).await;
    let other = connect(&server).await;
    let mut echo = other.subscribe("isolation.echo").await.unwrap();
    other.flush().await.unwrap();
    let bodies: Vec<Vec<u8>> = (0..CREATES).map(huge_create).collect();
    let mut replies = sender.subscribe("isolation.created").await.unwrap();
    for (index, body) in bodies.into_iter().enumerate() {
        sender
            .publish_with_reply(
                format!("$JS.API.STREAM.CREATE.HUGE{index}"),
                "isolation.created",
                body.into(),
            )
            .await
            .unwrap();
    }
    sender.flush().await.unwrap();

    let (mut pub_sub, mut connects, mut account_infos) = (Vec::new(), Vec::new(), Vec::new());
    let started = Instant::now();
    while started.elapsed() < MEASURE {
        let round_trip = Instant::now();
        other
            .publish("isolation.echo", "ping".into())
            .await
            .unwrap();
        tokio::time::timeout(OPERATION_TIMEOUT, echo.next())
            .await
            .expect("pub/sub round trip stalled")
            .unwrap();
        pub_sub.push(round_trip.elapsed());

        let connect_time =
            tokio::time::timeout(OPERATION_TIMEOUT, new_connection_info(&server.addr()))
                .await
                .expect("a new connection got no INFO");
        connects.push(connect_time);

        let info = Instant::now();
        let answer =
            tokio::time::timeout(OPERATION_TIMEOUT, other.request("$JS.API.INFO", "".into()))
                .await
                .expect("$JS.API.INFO stalled")
                .unwrap();
        let answer: Value = serde_json::from_slice(&answer.payload).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
        account_infos.push(info.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let figures = [
        ("pub/sub round trip", p99(&mut pub_sub)),
        ("new connection INFO", p99(&mut connects)),
        ("$JS.API.INFO", p99(&mut account_infos)),
    ];
    eprintln!("p99 while {CREATES} creates of {SUBJECTS} subjects were served: {figures:?}");
    for (what, figure) in figures {
        assert!(
            figure <= P99_BOUND,
            "{what}: p99 {figure:?} > {P99_BOUND:?}"
        );
    }

    // The creates themselves are served, and correctly. nats-server compares the subjects
    // pairwise (5e9 comparisons per create), which takes many minutes: only ours is waited for.
    if test_harness::is_reference() {
        return;
    }
    for _ in 0..CREATES {
        let reply = tokio::time::timeout(Duration::from_secs(300), replies.next())
            .await
            .expect("stream create answered")
            .unwrap();
        let reply: Value = serde_json::from_slice(&reply.payload).unwrap();
        assert!(reply.get("error").is_none(), "{}", &reply["error"]);
        assert_eq!(
            reply["config"]["subjects"].as_array().unwrap().len(),
            SUBJECTS
        );
    }
}

#[tokio::test]
async fn overlapping_subjects_in_a_huge_list_are_found() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let mut subjects: Vec<String> = (0..20_000).map(|index| format!("big.s{index}")).collect();
    subjects.push("big.*".into());
    subjects.push("other.>".into());
    subjects.push("big.s7".into());
    let reply = client
        .request(
            "$JS.API.STREAM.CREATE.BIG",
            serde_json::to_vec(&json!({"name": "BIG", "subjects": subjects}))
                .unwrap()
                .into(),
        )
        .await
        .unwrap();
    let reply: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(
        reply["error"],
        json!({"code": 500, "err_code": 10052,
            "description": "subject \"big.s0\" overlaps with \"big.*\""})
    );
}

/// Requests sent at once by the flood test, against a queue limit of [`FLOOD_LIMIT`].
const FLOOD: usize = 2_000;
const FLOOD_LIMIT: usize = 10;

#[tokio::test]
async fn a_flood_past_the_request_queue_limit_is_dropped_and_the_server_keeps_serving() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(format!(
            "jetstream {{ request_queue_limit: {FLOOD_LIMIT} }}\n"
        )),
        ..Default::default()
    });
    let flooder = connect(&server).await;
    let other = connect(&server).await;
    let mut answers = flooder.subscribe("flood.answers").await.unwrap();
    let mut echo = other.subscribe("flood.echo").await.unwrap();
    other.flush().await.unwrap();
    // Stream creates (admin queue), sent without waiting: far faster than they are served.
    for index in 0..FLOOD {
        let body = json!({"name": format!("F{index}"), "subjects": [format!("f.{index}")],
            "storage": "memory"});
        flooder
            .publish_with_reply(
                format!("$JS.API.STREAM.CREATE.F{index}"),
                "flood.answers",
                serde_json::to_vec(&body).unwrap().into(),
            )
            .await
            .unwrap();
    }
    // A round trip through the flooder's connection: the server has read the whole flood.
    let mut sync = flooder.subscribe("flood.sync").await.unwrap();
    flooder.publish("flood.sync", "".into()).await.unwrap();
    tokio::time::timeout(OPERATION_TIMEOUT, sync.next())
        .await
        .expect("the flooder's own round trip stalled")
        .unwrap();

    // Others are served meanwhile: pub/sub and the API.
    other.publish("flood.echo", "ping".into()).await.unwrap();
    tokio::time::timeout(OPERATION_TIMEOUT, echo.next())
        .await
        .expect("pub/sub stalled by the flood")
        .unwrap();
    // A request after the flood is answered: the flooded queue drains and serves again. It may
    // itself be the request that reaches the limit again (both servers then drop it with the
    // few still pending), so it is sent until answered, a bounded number of times.
    let body = serde_json::to_vec(&json!({"name": "AFTER", "storage": "memory"})).unwrap();
    let mut after = None;
    for _ in 0..10 {
        let request = other.request("$JS.API.STREAM.CREATE.AFTER", body.clone().into());
        if let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(2), request).await {
            after = Some(answer);
            break;
        }
    }
    let after = after.expect("no create answered after the flood");
    let after: Value = serde_json::from_slice(&after.payload).unwrap();
    assert!(after.get("error").is_none(), "{after}");

    let info = tokio::time::timeout(OPERATION_TIMEOUT, other.request("$JS.API.INFO", "".into()))
        .await
        .expect("$JS.API.INFO after the flood")
        .unwrap();
    let info: Value = serde_json::from_slice(&info.payload).unwrap();
    let created = info["streams"].as_u64().unwrap() as usize - 1;
    // Requests were dropped (the limit was reached), not all of them (it was reached again and
    // again, each time after serving some), and each served create was answered.
    assert!(
        created < FLOOD - FLOOD_LIMIT,
        "{created} of {FLOOD} creates served: nothing dropped"
    );
    assert!(created > 0, "no create served");
    let mut answered = 0;
    while answered < created {
        let answer = tokio::time::timeout(OPERATION_TIMEOUT, answers.next())
            .await
            .unwrap_or_else(|_| panic!("{answered} answers for {created} streams created"))
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer.payload).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
        answered += 1;
    }
}

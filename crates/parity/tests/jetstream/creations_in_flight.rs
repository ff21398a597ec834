//! STREAM.CREATE requests sent in one burst, many in flight at once (issue 21: ours creates
//! plain file streams beside one another, `registry/beside.rs`): every answer is the one a
//! request-at-a-time server gives in some order (a name asked twice with two configs: one
//! created, the other 10058; overlapping subjects: one created, the other 10065; an
//! identical repeat: success), requests about a stream of the burst see it, every stream
//! answered as created takes messages, and all of them are there after a kill -9. A clean
//! stop (SIGTERM, lame duck mode) with creations in flight: no stream is started after
//! JetStream stopped, every creation answered is there after a restart and every directory
//! left is a stream that loads. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use test_harness::client::{api, connect};
use test_harness::{RawClient, ServerOptions, TestServer};

const STREAMS: usize = 40;

fn file_stream(name: &str, subjects: &[&str]) -> String {
    json!({"name": name, "subjects": subjects, "storage": "file", "num_replicas": 1}).to_string()
}

fn error_code(answer: &Value) -> Option<u64> {
    answer["error"]["err_code"].as_u64()
}

/// Of two contested creations, one was created and the other refused with `code`.
fn one_won(pair: &[&Value; 2], code: u64) {
    let created = pair.iter().filter(|a| error_code(a).is_none()).count();
    assert_eq!(created, 1, "{pair:?}");
    assert!(pair.iter().any(|a| error_code(a) == Some(code)), "{pair:?}");
}

/// The stream names the server lists (one page: fewer than 1,024 here).
async fn names(client: &async_nats::Client) -> BTreeSet<String> {
    let answer = api(client, "$JS.API.STREAM.NAMES", "").await;
    answer["streams"]
        .as_array()
        .map(|streams| {
            streams
                .iter()
                .filter_map(|name| name.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_burst_of_creations_is_answered_as_one_at_a_time() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    let mut requests: Vec<(String, String)> = (0..STREAMS)
        .map(|index| {
            let name = format!("F{index}");
            let subject = format!("f{index}.>");
            (
                format!("$JS.API.STREAM.CREATE.{name}"),
                file_stream(&name, &[&subject]),
            )
        })
        .collect();
    // Behind them in the same burst: an identical repeat, the same name with other subjects,
    // another name overlapping one, a memory stream, a consumer of one, a delete of one.
    let extra = [
        ("$JS.API.STREAM.CREATE.F5", file_stream("F5", &["f5.>"])),
        ("$JS.API.STREAM.CREATE.F6", file_stream("F6", &["other.>"])),
        ("$JS.API.STREAM.CREATE.X", file_stream("X", &["f7.a"])),
        (
            "$JS.API.STREAM.CREATE.M",
            json!({"name": "M", "subjects": ["m.>"], "storage": "memory"}).to_string(),
        ),
        (
            "$JS.API.CONSUMER.CREATE.F9.C",
            json!({"stream_name": "F9", "config": {"name": "C", "durable_name": "C",
                "ack_policy": "explicit"}})
            .to_string(),
        ),
        ("$JS.API.STREAM.DELETE.F8", String::new()),
    ];
    requests.extend(
        extra
            .iter()
            .map(|(subject, body)| (subject.to_string(), body.clone())),
    );
    let answers = join_all(
        requests
            .iter()
            .map(|(subject, body)| api(&client, subject, body)),
    )
    .await;
    let answer = |subject: &str, nth: usize| -> &Value {
        requests
            .iter()
            .zip(&answers)
            .filter(|((asked, _), _)| asked == subject)
            .nth(nth)
            .map(|(_, answer)| answer)
            .unwrap_or_else(|| panic!("{subject} asked"))
    };

    // Every plain creation but the contested ones succeeded.
    for index in (0..STREAMS).filter(|index| ![6, 7].contains(index)) {
        let created = answer(&format!("$JS.API.STREAM.CREATE.F{index}"), 0);
        assert_eq!(created["config"]["name"], format!("F{index}"), "{created}");
        assert_eq!(created["state"]["messages"], 0, "{created}");
    }
    let repeat = answer("$JS.API.STREAM.CREATE.F5", 1);
    assert_eq!(repeat["config"]["name"], "F5", "identical repeat: {repeat}");
    // One of each contested pair won, the other got the error a later request gets.
    let six = [
        answer("$JS.API.STREAM.CREATE.F6", 0),
        answer("$JS.API.STREAM.CREATE.F6", 1),
    ];
    one_won(&six, 10058);
    let overlap = [
        answer("$JS.API.STREAM.CREATE.F7", 0),
        answer("$JS.API.STREAM.CREATE.X", 0),
    ];
    one_won(&overlap, 10065);
    let memory = answer("$JS.API.STREAM.CREATE.M", 0);
    assert_eq!(memory["config"]["name"], "M", "{memory}");
    // Ours serves the account's other requests once the creations before them are in; a
    // server racing them could say the stream is not there yet (10059), never anything else.
    let consumer = answer("$JS.API.CONSUMER.CREATE.F9.C", 0);
    assert!(
        consumer["name"] == "C" || error_code(consumer) == Some(10059),
        "{consumer}"
    );
    let deleted = answer("$JS.API.STREAM.DELETE.F8", 0);
    let f8_deleted = deleted["success"] == true;
    assert!(
        f8_deleted || error_code(deleted) == Some(10059),
        "{deleted}"
    );
    if !test_harness::is_reference() {
        // Ours keeps the arrival order for what could depend on the burst.
        assert_eq!(consumer["name"], "C", "{consumer}");
        assert!(f8_deleted, "{deleted}");
        assert!(error_code(six[1]).is_some() && error_code(overlap[1]).is_some());
    }

    let mut expected: BTreeSet<String> = (0..STREAMS).map(|index| format!("F{index}")).collect();
    expected.insert("M".to_string());
    if f8_deleted {
        expected.remove("F8");
    }
    if error_code(overlap[0]).is_some() {
        expected.remove("F7");
        expected.insert("X".to_string());
    }
    assert_eq!(names(&client).await, expected);

    // Every stream answered as created stores a message.
    for name in expected.iter().filter(|name| name.as_str() != "M") {
        let subject = match name.as_str() {
            "X" => "f7.a".to_string(),
            "F6" if error_code(six[0]).is_some() => "other.x".to_string(),
            _ => format!("f{}.x", &name[1..]),
        };
        let ack: Value = serde_json::from_slice(
            &client
                .request(subject.clone(), "m".into())
                .await
                .expect("a PubAck")
                .payload,
        )
        .expect("JSON");
        assert_eq!(ack["stream"], name.as_str(), "{subject}: {ack}");
        assert_eq!(ack["seq"], 1, "{subject}: {ack}");
    }

    // The file streams are all there after a kill -9 (the memory one is not).
    drop(client);
    server.kill9();
    server.restart();
    let client = connect(&server).await;
    expected.remove("M");
    assert_eq!(names(&client).await, expected);
}

/// Creations sent in one burst before the stop, and how many are answered before it.
const BURST: usize = 300;
const ANSWERED_BEFORE_STOP: usize = 10;

/// Lame duck mode's settings: the clients are closed 4 s after the signal (one client: at the
/// grace period's end), time to publish to every stream of the burst once JetStream stopped.
const LAME_DUCK: &str = "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"4s\"\n";

/// The burst's `index`th stream: every other one a Key-Value bucket's stream (as the clients
/// create it), the others plain file streams; its name and a subject it takes.
fn burst_stream(index: usize) -> (String, String, String) {
    if index.is_multiple_of(2) {
        let bucket = format!("B{index}");
        let config = json!({"name": format!("KV_{bucket}"), "subjects": [format!("$KV.{bucket}.>")],
            "storage": "file", "retention": "limits", "max_msgs_per_subject": 1,
            "discard": "new", "max_msgs": -1, "max_bytes": -1, "max_age": 0, "max_msg_size": -1,
            "num_replicas": 1, "duplicate_window": 120_000_000_000u64, "allow_rollup_hdrs": true,
            "deny_delete": true, "allow_direct": true, "mirror_direct": false});
        (
            format!("KV_{bucket}"),
            format!("$KV.{bucket}.key"),
            config.to_string(),
        )
    } else {
        let name = format!("F{index}");
        let subject = format!("f{index}.>");
        (
            name.clone(),
            format!("f{index}.x"),
            file_stream(&name, &[&subject]),
        )
    }
}

/// One message of the raw connection on `_INBOX.c.<token>`.
pub(super) enum Delivery {
    /// A JSON answer (an API answer, a PubAck).
    Json(String, Value),
    /// A message with a reply subject: a stream message a consumer delivered, with its ack
    /// subject.
    Message(String, String),
    /// A status without a body (no responders, no messages): its code.
    Status(String, u16),
}

/// The next message on `_INBOX.c.*` (answering PINGs, skipping other lines); `None` once the
/// server closed the connection (or stayed silent for the client's timeout).
pub(super) fn next_delivery(client: &mut RawClient) -> Option<Delivery> {
    loop {
        let line = client.read_line()?;
        if line == "PING" {
            client.send("PONG\r\n");
            continue;
        }
        let parts: Vec<&str> = line.split(' ').collect();
        let headers = match parts.first() {
            Some(&"MSG") => false,
            Some(&"HMSG") => true,
            _ => continue,
        };
        let token = parts[1].rsplit('.').next().unwrap_or_default().to_string();
        // MSG <subject> <sid> [reply] <size>; HMSG <subject> <sid> [reply] <header size> <size>
        let reply_present = parts.len() == if headers { 6 } else { 5 };
        let reply = reply_present.then(|| parts[3].to_string());
        let size: usize = parts.last()?.parse().ok()?;
        let body = client.read_payload(size)?;
        let header_size = if headers {
            parts[parts.len() - 2].parse().ok()?
        } else {
            0
        };
        let (head, payload) = body.split_at(header_size.min(body.len()));
        let status = std::str::from_utf8(head)
            .ok()
            .and_then(|head| head.lines().next())
            .and_then(|first| first.strip_prefix("NATS/1.0 "))
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok());
        if let Some(code) = status.filter(|_| payload.is_empty()) {
            return Some(Delivery::Status(token, code));
        }
        if let Some(reply) = reply {
            return Some(Delivery::Message(token, reply));
        }
        return Some(Delivery::Json(
            token,
            serde_json::from_slice(payload).unwrap_or(Value::Null),
        ));
    }
}

/// A JetStream server with lame duck mode's settings ([`LAME_DUCK`]) and a raw client that
/// takes every answer sent to `_INBOX.c.*`.
pub(super) fn server_and_raw_client() -> (TestServer, RawClient) {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        config: Some(LAME_DUCK.to_string()),
        ..Default::default()
    });
    let mut raw = RawClient::connect_with(
        &server,
        r#"{"verbose":false,"pedantic":false,"protocol":1,"headers":true,"no_responders":true}"#,
    );
    raw.timeout = Duration::from_secs(30);
    raw.send("SUB _INBOX.c.* 1\r\n");
    (server, raw)
}

/// Sends the stop `signal`; in lame duck mode (SIGUSR2) returns once JetStream stopped (the
/// clients stay connected for the grace period).
pub(super) fn signal_stop(server: &TestServer, signal: libc::c_int) {
    let pid = server.pid().expect("running") as libc::pid_t;
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(pid, signal);
    }
    if signal == libc::SIGUSR2 {
        await_log_line(server, "JetStream Shutdown", Duration::from_secs(20));
    }
}

/// The stopped server exits 0 (bounded wait).
pub(super) fn assert_clean_exit(server: &mut TestServer) {
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "a clean stop exits 0; log:\n{}",
        server.log()
    );
}

/// Ours only: the restarted server's log tells of no store it could not recover or had to
/// repair, stream or consumer (nats-server words these differently).
pub(super) fn assert_recovered_cleanly(server: &TestServer) {
    if test_harness::is_reference() {
        return;
    }
    let log = server.log();
    for problem in [
        "could not be recovered",
        "repaired on open",
        "consumer store unreadable",
        "consumer config unreadable",
    ] {
        assert!(!log.contains(problem), "{problem:?} in the log:\n{log}");
    }
}

/// Waits (bounded) for a log line that ends with `line` (the log's prefix before it).
fn await_log_line(server: &TestServer, line: &str, within: Duration) {
    test_harness::waits::await_some(&format!("{line:?} in the log"), within, || {
        server
            .log()
            .lines()
            .any(|logged| logged.trim_end().ends_with(line))
            .then_some(())
    });
}

/// What a stop signal leaves of a burst of creations in flight.
fn stop_with_creations_in_flight(signal: libc::c_int) {
    let lame_duck = signal == libc::SIGUSR2;
    let (mut server, mut raw) = server_and_raw_client();
    let streams: Vec<(String, String, String)> = (0..BURST).map(burst_stream).collect();
    let burst: String = streams
        .iter()
        .enumerate()
        .map(|(index, (name, _, body))| {
            format!(
                "PUB $JS.API.STREAM.CREATE.{name} _INBOX.c.{index} {}\r\n{body}\r\n",
                body.len()
            )
        })
        .collect();
    raw.send(&burst);

    let mut answers: BTreeMap<usize, Value> = BTreeMap::new();
    let mut acks_after_stop: Vec<(String, Value)> = Vec::new();
    let mut record = |delivery: Delivery, answers: &mut BTreeMap<usize, Value>| match delivery {
        Delivery::Json(token, body) => {
            if let Some(index) = token.strip_prefix('p') {
                acks_after_stop.push((index.to_string(), body));
            } else if let Ok(index) = token.parse() {
                answers.insert(index, body);
            }
        }
        Delivery::Message(..) | Delivery::Status(..) => {}
    };
    while answers.len() < ANSWERED_BEFORE_STOP {
        let delivery = next_delivery(&mut raw)
            .unwrap_or_else(|| panic!("the burst is not answered; log:\n{}", server.log()));
        record(delivery, &mut answers);
    }
    signal_stop(&server, signal);
    if lame_duck {
        // The clients stay connected for the grace period: once JetStream stopped, no stream
        // of the burst takes a message any more (one started after the stop would ack it).
        let publishes: String = streams
            .iter()
            .enumerate()
            .map(|(index, (_, subject, _))| format!("PUB {subject} _INBOX.c.p{index} 1\r\nx\r\n"))
            .collect();
        raw.send(&publishes);
    }
    while let Some(delivery) = next_delivery(&mut raw) {
        record(delivery, &mut answers);
    }
    assert_clean_exit(&mut server);
    // nats-server 2.15.1 has this gap: a creation its API goroutines were serving when lame
    // duck mode stopped JetStream starts its stream afterwards, which then acks publishes
    // (2 of 300 in one run; docs/parity.md). Ours waits for its creations in flight first.
    if test_harness::is_reference() {
        eprintln!("acks after JetStream stopped: {acks_after_stop:?}");
    } else {
        assert!(
            acks_after_stop.is_empty(),
            "streams took messages after JetStream stopped: {acks_after_stop:?}; log:\n{}",
            server.log()
        );
    }
    let created: BTreeSet<String> = answers
        .iter()
        .filter(|(_, answer)| answer.get("error").is_none())
        .map(|(index, answer)| {
            assert_eq!(
                answer["config"]["name"],
                streams[*index].0.as_str(),
                "{answer}"
            );
            streams[*index].0.clone()
        })
        .collect();
    for answer in answers
        .values()
        .filter(|answer| answer.get("error").is_some())
    {
        // A refusal says why (the stop); never a malformed answer.
        assert!(answer["error"]["code"].as_u64().is_some(), "{answer}");
    }
    let streams_directory = server
        .store_dir
        .clone()
        .expect("a store")
        .join("jetstream/$G/streams");
    // Trash and spare directories (ours) hold a '.', which no stream name of the burst does.
    let directories: BTreeSet<String> = std::fs::read_dir(&streams_directory)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
                .filter(|name| !name.contains('.'))
                .collect()
        })
        .unwrap_or_default();

    server.restart();
    let listed = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let client = connect(&server).await;
            let listed = names(&client).await;
            // Every stream there takes a message as its first (after the one a stream started
            // after the stop took, on nats-server).
            let took_after_stop: BTreeSet<&str> = acks_after_stop
                .iter()
                .filter_map(|(_, ack)| ack["stream"].as_str())
                .collect();
            let by_name: BTreeMap<&str, &str> = streams
                .iter()
                .map(|(name, subject, _)| (name.as_str(), subject.as_str()))
                .collect();
            let acks = join_all(listed.iter().map(|name| {
                let subject = by_name
                    .get(name.as_str())
                    .copied()
                    .unwrap_or("unknown")
                    .to_string();
                let client = client.clone();
                async move {
                    let answer = client.request(subject, "m".into()).await;
                    (
                        name.clone(),
                        answer.map(|message| {
                            serde_json::from_slice::<Value>(&message.payload).unwrap_or(Value::Null)
                        }),
                    )
                }
            }))
            .await;
            for (name, ack) in acks {
                let ack = ack.unwrap_or_else(|error| panic!("{name} takes no message: {error}"));
                assert_eq!(ack["stream"], name.as_str(), "{ack}");
                let first = 1 + u64::from(took_after_stop.contains(name.as_str()));
                assert_eq!(ack["seq"], first, "{name}: {ack}");
            }
            listed
        });
    let missing: Vec<&String> = created.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "answered as created, gone after the restart: {missing:?}; log:\n{}",
        server.log()
    );
    let unloaded: Vec<&String> = directories.difference(&listed).collect();
    assert!(
        unloaded.is_empty(),
        "directories that are no stream after the restart: {unloaded:?}; log:\n{}",
        server.log()
    );
    assert_recovered_cleanly(&server);
    eprintln!(
        "{} of {BURST} answered before the stop's end, {} created, {} streams after the restart",
        answers.len(),
        created.len(),
        listed.len()
    );
}

#[test]
fn creations_in_flight_at_sigterm_are_kept_whole_or_not_made() {
    stop_with_creations_in_flight(libc::SIGTERM);
}

#[test]
fn creations_in_flight_in_lame_duck_mode_never_start_a_stream_after_jetstream_stopped() {
    stop_with_creations_in_flight(libc::SIGUSR2);
}

//! CONSUMER.CREATE requests in flight when a clean stop begins (issue 21, the consumers' side
//! of `creations_in_flight.rs`): 300 creations over ten file streams (new-style durables,
//! legacy `CONSUMER.DURABLE.CREATE` durables and named ephemerals), each after a STREAM.CREATE
//! of its own, sent in one write over raw TCP, then SIGTERM or lame duck mode once the first
//! answers came. The server exits 0; no consumer delivers a message or takes an ack after
//! JetStream stopped (lame duck mode keeps the client connected for its grace period: every
//! consumer of the burst is asked for a message then); after a restart every durable answered
//! as created is there with its config, and every consumer directory left on disk is a
//! consumer that loads. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use super::creations_in_flight::{
    assert_clean_exit, assert_recovered_cleanly, next_delivery, server_and_raw_client, signal_stop,
    Delivery,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use test_harness::client::{api, connect};
use test_harness::RawClient;

/// File streams made before the burst, one message each.
const STREAMS: usize = 10;
/// Creations sent in one burst before the stop, and how many are answered before it.
const BURST: usize = 300;
const ANSWERED_BEFORE_STOP: usize = 10;

/// One creation of the burst.
struct Creation {
    stream: String,
    name: String,
    durable: bool,
    /// The API subject and the request body.
    subject: String,
    body: String,
    /// What its config must say after the restart (a durable).
    description: String,
    filter: String,
}

/// The burst's `index`th creation: a third new-style durables
/// (`CONSUMER.CREATE.<stream>.<name>`), a third legacy durables
/// (`CONSUMER.DURABLE.CREATE.<stream>.<name>`), a third named ephemerals; all pull consumers
/// with explicit acks, spread over the streams.
fn creation(index: usize) -> Creation {
    let stream = format!("S{}", index % STREAMS);
    let filter = format!("s{}.>", index % STREAMS);
    let description = format!("burst {index}");
    let (name, durable, subject) = match index % 3 {
        0 => {
            let name = format!("D{index}");
            let subject = format!("$JS.API.CONSUMER.CREATE.{stream}.{name}");
            (name, true, subject)
        }
        1 => {
            let name = format!("L{index}");
            let subject = format!("$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{name}");
            (name, true, subject)
        }
        _ => {
            let name = format!("E{index}");
            let subject = format!("$JS.API.CONSUMER.CREATE.{stream}.{name}");
            (name, false, subject)
        }
    };
    let mut config = json!({"description": description, "ack_policy": "explicit",
        "deliver_policy": "all", "filter_subject": filter, "ack_wait": 30_000_000_000u64});
    if durable {
        config["durable_name"] = json!(name);
    } else {
        config["name"] = json!(name);
        config["inactive_threshold"] = json!(60_000_000_000u64);
    }
    let body = json!({"stream_name": stream, "config": config}).to_string();
    Creation {
        stream,
        name,
        durable,
        subject,
        body,
        description,
        filter,
    }
}

/// The consumer directories under a stream's directory (ours: `consumers`, nats-server's:
/// `obs`), leaving out the names with a '.' (our trash), which no consumer of the burst has.
fn consumer_directories(stream_directory: &Path) -> BTreeSet<String> {
    ["consumers", "obs"]
        .iter()
        .filter_map(|kind| std::fs::read_dir(stream_directory.join(kind)).ok())
        .flat_map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().is_dir())
                .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
                .filter(|name| !name.contains('.'))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The consumer names a stream lists (one page: fewer than 1,024 here).
async fn consumer_names(client: &async_nats::Client, stream: &str) -> BTreeSet<String> {
    let answer = api(client, &format!("$JS.API.CONSUMER.NAMES.{stream}"), "").await;
    answer["consumers"]
        .as_array()
        .unwrap_or_else(|| panic!("CONSUMER.NAMES.{stream}: {answer}"))
        .iter()
        .filter_map(|name| name.as_str().map(str::to_string))
        .collect()
}

/// The streams of the test made over `raw`, each holding one message: the creations first (ours
/// makes them beside one another and answers each once made), then the messages.
fn make_streams(raw: &mut RawClient) {
    let creations: String = (0..STREAMS)
        .map(|stream| {
            let body = json!({"name": format!("S{stream}"), "subjects": [format!("s{stream}.>")],
                "storage": "file", "num_replicas": 1})
            .to_string();
            format!(
                "PUB $JS.API.STREAM.CREATE.S{stream} _INBOX.c.s{stream} {}\r\n{body}\r\n",
                body.len()
            )
        })
        .collect();
    raw.send(&creations);
    await_answers(raw, 's');
    let messages: String = (0..STREAMS)
        .map(|stream| format!("PUB s{stream}.m _INBOX.c.p{stream} 1\r\nm\r\n"))
        .collect();
    raw.send(&messages);
    for ack in await_answers(raw, 'p') {
        assert_eq!(ack["seq"], 1, "{ack}");
    }
}

/// The answers to the [`STREAMS`] requests whose reply tokens start with `kind`, each a success.
fn await_answers(raw: &mut RawClient, kind: char) -> Vec<Value> {
    let mut answers = Vec::new();
    while answers.len() < STREAMS {
        match next_delivery(raw) {
            Some(Delivery::Json(token, answer)) if token.starts_with(kind) => {
                assert!(answer.get("error").is_none(), "{token}: {answer}");
                answers.push(answer);
            }
            Some(Delivery::Status(token, code)) => panic!("{token}: status {code}"),
            Some(_) => {}
            None => panic!("{STREAMS} answers to {kind}* not in time"),
        }
    }
    answers
}

/// What the burst's answers and the consumers of a stopped JetStream said.
#[derive(Default)]
struct Observed {
    /// Creation answers by index.
    answers: BTreeMap<usize, Value>,
    /// Consumers (by index) that served a pull request sent after JetStream stopped: what they
    /// answered (a message, a status other than no responders).
    ran_after_stop: BTreeMap<usize, String>,
    /// Consumers (by index) that answered an AckSync sent after JetStream stopped.
    acked_after_stop: BTreeSet<usize>,
}

impl Observed {
    /// Records one delivery; a message delivered after the stop is acked (AckSync) at once.
    fn record(&mut self, delivery: Delivery, raw: &mut RawClient) {
        let index = |token: &str| token.get(1..).and_then(|index| index.parse::<usize>().ok());
        let after_stop = |token: &str, kind: char| token.starts_with(kind).then(|| index(token));
        match delivery {
            Delivery::Json(token, body) => {
                if let Ok(index) = token.parse() {
                    self.answers.insert(index, body);
                } else if let Some(Some(index)) = after_stop(&token, 'a') {
                    self.acked_after_stop.insert(index);
                }
            }
            Delivery::Message(token, ack) => {
                let Some(Some(index)) = after_stop(&token, 'n') else {
                    return;
                };
                self.ran_after_stop.insert(index, "a message".into());
                raw.send(&format!("PUB {ack} _INBOX.c.a{index} 0\r\n\r\n"));
            }
            // No responders: no consumer there, as after the stop.
            Delivery::Status(_, 503) => {}
            Delivery::Status(token, code) => {
                if let Some(Some(index)) = after_stop(&token, 'n') {
                    self.ran_after_stop.insert(index, format!("status {code}"));
                } else if let Some(Some(index)) = after_stop(&token, 'a') {
                    self.acked_after_stop.insert(index);
                }
            }
        }
    }
}

/// What a stop signal leaves of a burst of consumer creations in flight.
fn stop_with_consumer_creations_in_flight(signal: libc::c_int) {
    let lame_duck = signal == libc::SIGUSR2;
    let (mut server, mut raw) = server_and_raw_client();
    make_streams(&mut raw);

    let creations: Vec<Creation> = (0..BURST).map(creation).collect();
    // Each consumer creation comes after a stream creation, which ours makes beside the
    // requests that follow (`registry/beside.rs`): the consumer creation waits for it, so a
    // stop often finds one waiting, and both go on once the stream is made.
    let burst: String = creations
        .iter()
        .enumerate()
        .map(|(index, creation)| {
            let stream = json!({"name": format!("X{index}"), "subjects": [format!("x{index}.>")],
                "storage": "file", "num_replicas": 1})
            .to_string();
            format!(
                "PUB $JS.API.STREAM.CREATE.X{index} _INBOX.c.x{index} {}\r\n{stream}\r\n\
                 PUB {} _INBOX.c.{index} {}\r\n{}\r\n",
                stream.len(),
                creation.subject,
                creation.body.len(),
                creation.body
            )
        })
        .collect();
    raw.send(&burst);

    let mut observed = Observed::default();
    while observed.answers.len() < ANSWERED_BEFORE_STOP {
        let delivery = next_delivery(&mut raw)
            .unwrap_or_else(|| panic!("the burst is not answered; log:\n{}", server.log()));
        observed.record(delivery, &mut raw);
    }
    signal_stop(&server, signal);
    if lame_duck {
        // The client stays connected for the grace period: once JetStream stopped, no
        // consumer of the burst delivers (one started after the stop would, and take the ack).
        let requests: String = creations
            .iter()
            .enumerate()
            .map(|(index, creation)| {
                let body = r#"{"batch":1,"no_wait":true}"#;
                format!(
                    "PUB $JS.API.CONSUMER.MSG.NEXT.{}.{} _INBOX.c.n{index} {}\r\n{body}\r\n",
                    creation.stream,
                    creation.name,
                    body.len()
                )
            })
            .collect();
        raw.send(&requests);
    }
    while let Some(delivery) = next_delivery(&mut raw) {
        observed.record(delivery, &mut raw);
    }
    assert_clean_exit(&mut server);
    if test_harness::is_reference() {
        eprintln!(
            "after JetStream stopped: pulls served by {:?}, acks taken by {:?}",
            observed.ran_after_stop, observed.acked_after_stop
        );
    } else {
        assert!(
            observed.ran_after_stop.is_empty() && observed.acked_after_stop.is_empty(),
            "consumers ran after JetStream stopped: pulls served by {:?}, acks taken by {:?}; log:\n{}",
            observed.ran_after_stop,
            observed.acked_after_stop,
            server.log()
        );
    }
    let mut created: BTreeSet<usize> = BTreeSet::new();
    for (index, answer) in &observed.answers {
        if answer.get("error").is_some() {
            // A refusal says why (the stop); never a malformed answer.
            assert!(answer["error"]["code"].as_u64().is_some(), "{answer}");
            eprintln!("creation {index} refused: {}", answer["error"]);
            continue;
        }
        let creation = &creations[*index];
        assert_eq!(answer["name"], creation.name.as_str(), "{answer}");
        assert_eq!(answer["stream_name"], creation.stream.as_str(), "{answer}");
        created.insert(*index);
    }
    let streams_directory = server
        .store_dir
        .clone()
        .expect("a store")
        .join("jetstream/$G/streams");
    let directories: BTreeMap<String, BTreeSet<String>> = (0..STREAMS)
        .map(|stream| {
            let name = format!("S{stream}");
            let found = consumer_directories(&streams_directory.join(&name));
            (name, found)
        })
        .collect();

    server.restart();
    let listed = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let client = connect(&server).await;
            let mut listed = BTreeMap::new();
            for stream in directories.keys() {
                listed.insert(stream.clone(), consumer_names(&client, stream).await);
            }
            // Every durable answered as created is there, with the config it was created with.
            for index in &created {
                let creation = &creations[*index];
                if !creation.durable {
                    continue;
                }
                let info = api(
                    &client,
                    &format!(
                        "$JS.API.CONSUMER.INFO.{}.{}",
                        creation.stream, creation.name
                    ),
                    "",
                )
                .await;
                assert!(
                    info.get("error").is_none(),
                    "answered as created, gone after the restart: {}: {info}",
                    creation.name
                );
                let config = &info["config"];
                assert_eq!(config["durable_name"], creation.name.as_str(), "{info}");
                assert_eq!(
                    config["description"],
                    creation.description.as_str(),
                    "{info}"
                );
                assert_eq!(config["filter_subject"], creation.filter.as_str(), "{info}");
                assert_eq!(config["ack_policy"], "explicit", "{info}");
            }
            listed
        });
    // Every consumer directory left is a consumer that loaded.
    for (stream, found) in &directories {
        let unloaded: Vec<&String> = found.difference(&listed[stream]).collect();
        assert!(
            unloaded.is_empty(),
            "{stream}: consumer directories that are no consumer after the restart: {unloaded:?}; log:\n{}",
            server.log()
        );
    }
    assert_recovered_cleanly(&server);
    eprintln!(
        "{} of {BURST} answered before the stop's end, {} created ({} durables), {} consumers after the restart",
        observed.answers.len(),
        created.len(),
        created.iter().filter(|index| creations[**index].durable).count(),
        listed.values().map(BTreeSet::len).sum::<usize>()
    );
}

#[test]
fn consumer_creations_in_flight_at_sigterm_are_kept_whole_or_not_made() {
    stop_with_consumer_creations_in_flight(libc::SIGTERM);
}

#[test]
fn consumer_creations_in_flight_in_lame_duck_mode_never_run_a_consumer_after_jetstream_stopped() {
    stop_with_consumer_creations_in_flight(libc::SIGUSR2);
}

//! STREAM.CREATE requests sent in one burst, many in flight at once (issue 21: ours creates
//! plain file streams beside one another, `registry/beside.rs`): every answer is the one a
//! request-at-a-time server gives in some order (a name asked twice with two configs: one
//! created, the other 10058; overlapping subjects: one created, the other 10065; an
//! identical repeat: success), requests about a stream of the burst see it, every stream
//! answered as created takes messages, and all of them are there after a kill -9. Runs
//! against ours or the real nats-server (`NATS_SERVER_BIN`).

use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use test_harness::client::{api, connect};
use test_harness::TestServer;

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

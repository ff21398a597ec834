//! A meta leader takes stream creates from its election on. Ours once answered 10009 ("JetStream
//! cluster can not handle request") to a create that reached a leader elected a moment before:
//! openraft refuses writes until a quorum acknowledged the leader within its lease, which a new
//! leader has only once a follower answered its first append (hundreds of milliseconds on a
//! loaded machine; `rolling::` failed so in 1 of 8 runs at load 35). nats-server's leader takes
//! the proposal and commits it once a quorum answers.
//!
//! Creates are sent to every node from the moment the cluster is up, before any meta leader is
//! elected, so the first ones a leader sees reach it in its first moments. Answers other than a
//! created stream may only be the leaderless 10008 (or none, as nats-server leaves a request
//! unanswered while it has no leader).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{connect, error_code};
use crate::meta::{start, ELECTION_BOUND};

/// Each create waits this long for its answer before the next is sent.
const ANSWER_WAIT: Duration = Duration::from_millis(300);
/// Creates answered `did_create` before the test ends.
const CREATED: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_reaching_a_just_elected_meta_leader_are_not_refused() {
    let cluster = start(3);
    let mut clients = Vec::new();
    for index in 0..3 {
        clients.push(connect(&cluster, index).await);
    }
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut created = 0;
    let mut refused: Vec<Value> = Vec::new();
    let mut attempt = 0usize;
    while created < CREATED {
        assert!(
            Instant::now() < deadline,
            "{created} streams created; answers refused: {refused:?}\n{}",
            cluster.logs()
        );
        let client = &clients[attempt % 3];
        let name = format!("FRESH{attempt}");
        attempt += 1;
        let body = json!({"name": name, "subjects": [format!("fresh.{name}")]});
        let request = client.request(
            format!("$JS.API.STREAM.CREATE.{name}"),
            serde_json::to_vec(&body).expect("json").into(),
        );
        let Ok(Ok(reply)) = tokio::time::timeout(ANSWER_WAIT, request).await else {
            continue;
        };
        let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
        match error_code(&answer) {
            0 if answer["did_create"] == true => created += 1,
            10008 => {}
            _ => refused.push(answer),
        }
    }
    assert!(refused.is_empty(), "creates refused: {refused:?}");
}

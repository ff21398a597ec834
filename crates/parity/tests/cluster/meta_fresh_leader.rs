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
//!
//! A create sent to a server the moment its `/jsz` names itself the meta leader is answered.
//! Ours once held a just-elected leader silent until a quorum confirmed it (the fix against a
//! restarted leader answering beside the new one), so such a create went unanswered: three
//! tests of the CI run on 5a25eaf (load 8-10) lost their first create that way. nats-server
//! 2.15.1 often leaves that create unanswered too (the client asks again there; the test says
//! how often); ours answers it.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, connect, error_code};
use crate::meta::{agreed_leader, meta_cluster, start, stepdown, system_client, ELECTION_BOUND};

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

/// How long nats-server is asked again for a create it left unanswered.
const RETRY_BOUND: Duration = Duration::from_secs(60);

/// Elections in [`a_create_sent_the_moment_a_server_names_itself_meta_leader_is_answered`].
const ELECTIONS: usize = 4;

/// The answers to a create, less (on nats-server) the 10008 "JetStream cluster not available"
/// of the servers that do not know the new leader yet: every nats-server takes each `$JS.API`
/// request, and one whose meta group has no leader (past its first `lostQuorumInterval`)
/// answers a create with 10008 beside the leader's answer (`jsStreamCreateRequest`'s
/// `isLeaderless`; the parity pass on efba111 failed on one). Such a create is asked again when
/// nothing else answered it. Ours answers only from the leader: every answer counts there.
async fn leaders_answers(client: &async_nats::Client, subject: &str, body: &Value) -> Vec<Value> {
    let mut got = answers(client, subject, body.clone()).await;
    if test_harness::is_reference() {
        let leaderless: Vec<Value> = got
            .iter()
            .filter(|answer| error_code(answer) == 10008)
            .cloned()
            .collect();
        if !leaderless.is_empty() {
            println!("{subject}: nats-server servers without a leader answered {leaderless:?}");
        }
        got.retain(|answer| error_code(answer) != 10008);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_sent_the_moment_a_server_names_itself_meta_leader_is_answered() {
    let cluster = start(3);
    let mut clients = Vec::new();
    for index in 0..3 {
        clients.push(connect(&cluster, index).await);
    }
    let system = system_client(&cluster, 0).await;
    let mut previous: Option<String> = None;
    for election in 0..ELECTIONS {
        // Poll every node's /jsz until one names itself leader (not the one stepped down).
        let deadline = Instant::now() + ELECTION_BOUND;
        let leader = tokio::task::block_in_place(|| loop {
            assert!(
                Instant::now() < deadline,
                "election {election}: no node named itself meta leader\n{}",
                cluster.logs()
            );
            let found = (0..3).find(|&index| {
                let name = &cluster.node(index).name;
                previous.as_ref() != Some(name)
                    && meta_cluster(&cluster, index)
                        .is_some_and(|meta| meta["leader"].as_str() == Some(name.as_str()))
            });
            if let Some(index) = found {
                break index;
            }
            std::thread::sleep(Duration::from_millis(2));
        });
        let name = format!("NAMED{election}");
        let body = json!({"name": name, "subjects": [format!("named.{election}")]});
        let subject = format!("$JS.API.STREAM.CREATE.{name}");
        let mut got = leaders_answers(&clients[leader], &subject, &body).await;
        // nats-server often leaves such a create unanswered (2 of 3 runs on an idle machine,
        // and the parity pass on 6e75fcc): a client asks again. Ours must answer the first.
        // The retries have a bound of their own: each unanswered create costs `answers`' 10 s, and
        // two of them after a slow election outlasted the election's bound (the parity pass on
        // 05a2328).
        let mut unanswered = 0;
        let retry_deadline = Instant::now() + RETRY_BOUND;
        while got.is_empty() && test_harness::is_reference() && Instant::now() < retry_deadline {
            unanswered += 1;
            got = leaders_answers(&clients[leader], &subject, &body).await;
        }
        if unanswered > 0 {
            println!("election {election}: nats-server left {unanswered} create(s) unanswered");
        }
        assert_eq!(
            got.len(),
            1,
            "election {election}: a create sent to {} as it named itself leader: {got:?}\n{}",
            cluster.node(leader).name,
            cluster.logs()
        );
        // A create asked again may find the stream its unanswered first made: nats-server answers
        // that one with the stream's info and no `did_create`.
        let created = got[0]["did_create"] == true
            || (unanswered > 0
                && got[0]["config"]["name"] == name.as_str()
                && error_code(&got[0]) == 0);
        assert!(created, "election {election}: {}", got[0]);

        let leader_name = cluster.node(leader).name.clone();
        tokio::task::block_in_place(|| agreed_leader(&cluster, &[0, 1, 2], 3, None))
            .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
        let stepped = stepdown(&system, "").await;
        assert_eq!(stepped["success"], true, "{stepped}");
        previous = Some(leader_name);
    }
}

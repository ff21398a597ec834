//! A STREAM.LEADER.STEPDOWN (and a CONSUMER.LEADER.STEPDOWN of an R3 durable) reaching a leader
//! whose lease lapsed (issues 15 and 20). A leader that has not heard from a quorum for the
//! lost-quorum interval (2 s) no longer leads for the stream here (it takes no publishes,
//! answers no reads), but it is still the group's elected leader and its followers still follow
//! it: nobody answered the stepdown (seen at load 27-30, where a leader's quorum
//! acknowledgements came late). Now the elected leader steps down and answers success, as
//! nats-server's raft leader steps down whatever its followers' state (`raft.go` `StepDown`:
//! to a peer heard from lately, else to no one). Ours also no longer refuses a stepdown for want
//! of a caught-up follower (10005 "no replacement peer connected" before, where nats-server
//! answered success): the least behind takes over (`cluster::stepdown_successor`, its unit
//! tests; a leader without a caught-up follower is one just elected, not heard from yet, too
//! short a state to reach from here).
//!
//! Here the lapse is certain: both followers of the group asked about are paused (SIGSTOP,
//! their routes up), and the test waits until the leader no longer answers the group's INFO
//! (ours) before it sends the stepdown. Ours: exactly one answer, success; after the followers
//! resume the stream has a leader again and takes a publish. nats-server (the parity pass) keeps
//! answering INFO from its leader; its stepdown is sent 3 s after the pause and it answered
//! success (also 13 s after it, tried once), asserted loosely: at most one answer, success or
//! 10008 (its meta group loses its quorum too). Its durable's leader may be another server
//! than the stream's, so each round pauses the followers of the leader it asks.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, error_code};
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes_of};
use crate::meta::{index_of, start_debug, ELECTION_BOUND};

const STREAM: &str = "LAPSED";
const DURABLE: &str = "LAPSING";
/// How long an INFO is given to be answered while the followers are paused.
const ANSWER: Duration = Duration::from_secs(1);
/// nats-server's leader answers INFO throughout; its stepdown is sent after this.
const REFERENCE_PAUSE: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_lease_lapsed_answers_a_stepdown() {
    let (mut cluster, names, clients) = three_nodes_of(start_debug(3)).await;
    create_r3(&clients[0], STREAM, "lapsed.>")
        .await
        .0
        .assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_until_acked(
        &jetstream,
        "lapsed.x",
        "m1",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(&clients[0], STREAM, &names, 1).await;
    let created = answers(
        &clients[0],
        &format!("$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.{DURABLE}"),
        json!({"stream_name": STREAM,
               "config": {"durable_name": DURABLE, "ack_policy": "explicit"}}),
    )
    .await;
    assert!(
        created.len() == 1 && error_code(&created[0]) == 0,
        "{created:?}"
    );

    // The stream's stepdown.
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let got = stepdown_while_lapsed(
        &mut cluster,
        &clients,
        leader,
        &format!("$JS.API.STREAM.INFO.{STREAM}"),
        &format!("$JS.API.STREAM.LEADER.STEPDOWN.{STREAM}"),
    )
    .await;
    assert_success(&got, "stream");
    settled_with_publish(&jetstream, &clients[leader], &names, "m2", 2).await;

    // The durable's stepdown (ours: its leader is the stream's, and it steps the stream down).
    let consumer_info = format!("$JS.API.CONSUMER.INFO.{STREAM}.{DURABLE}");
    let leader = consumer_leader(&cluster, &clients[0], &consumer_info).await;
    let got = stepdown_while_lapsed(
        &mut cluster,
        &clients,
        leader,
        &consumer_info,
        &format!("$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM}.{DURABLE}"),
    )
    .await;
    assert_success(&got, "consumer");
    settled_with_publish(&jetstream, &clients[leader], &names, "m3", 3).await;
    consumer_leader(&cluster, &clients[leader], &consumer_info).await;
}

/// Pauses the two servers other than `leader`, waits until `leader` no longer answers `info`
/// (ours; nats-server: [`REFERENCE_PAUSE`]), asks `stepdown` through `leader`'s client,
/// resumes them and returns the answers.
async fn stepdown_while_lapsed(
    cluster: &mut test_harness::cluster::Cluster,
    clients: &[async_nats::Client; 3],
    leader: usize,
    info: &str,
    stepdown: &str,
) -> Vec<Value> {
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    for &index in &followers {
        cluster.pause(index);
    }
    let paused = Instant::now();
    let client = &clients[leader];
    loop {
        let asked = client.request(info.to_string(), "".into());
        let answered = matches!(tokio::time::timeout(ANSWER, asked).await, Ok(Ok(_)));
        if test_harness::is_reference() {
            if paused.elapsed() >= REFERENCE_PAUSE {
                break;
            }
        } else if !answered {
            break;
        }
        assert!(
            paused.elapsed() < ELECTION_BOUND,
            "the leader still answers {info} {:?} after its followers' pause",
            paused.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("{info}: lapsed {:?} after the pause", paused.elapsed());
    let got = answers(client, stepdown, Value::Null).await;
    println!("{stepdown}: {got:?}");
    for &index in &followers {
        cluster.resume(index);
    }
    got
}

/// Ours: exactly one answer, success. nats-server: at most one, success or 10008.
fn assert_success(got: &[Value], of: &str) {
    if test_harness::is_reference() {
        assert!(got.len() <= 1, "{got:?}");
        assert!(
            got.iter()
                .all(|answer| answer["success"] == true || error_code(answer) == 10008),
            "{got:?}"
        );
    } else {
        assert_eq!(
            got,
            vec![
                json!({"type": format!("io.nats.jetstream.api.v1.{of}_leader_stepdown_response"),
                        "success": true})
            ],
            "{of} stepdown"
        );
    }
}

/// Once the followers are back the stream has a leader again and takes a publish.
async fn settled_with_publish(
    jetstream: &async_nats::jetstream::Context,
    client: &async_nats::Client,
    names: &[String],
    payload: &str,
    messages: u64,
) {
    publish_until_acked(
        jetstream,
        "lapsed.x",
        payload,
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(client, STREAM, names, messages).await;
    assert!(info["cluster"]["leader"].is_string(), "{info}");
}

/// The server leading the durable, once one answers its INFO naming itself.
async fn consumer_leader(
    cluster: &test_harness::cluster::Cluster,
    client: &async_nats::Client,
    info: &str,
) -> usize {
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let got = answers(client, info, Value::Null).await;
        if let [answer] = got.as_slice() {
            if let Some(leader) = answer["cluster"]["leader"].as_str() {
                return index_of(cluster, leader);
            }
        }
        assert!(
            Instant::now() < deadline,
            "{info}: no leader named: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

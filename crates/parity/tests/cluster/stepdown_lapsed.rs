//! A STREAM.LEADER.STEPDOWN reaching a stream leader whose lease lapsed (issue 20). A leader
//! that has not heard from a quorum for the lost-quorum interval (2 s) no longer leads for the
//! stream here (it takes no publishes, answers no reads), but it is still the group's elected
//! leader and its followers still follow it: nobody answered the stepdown (seen at load 27-30,
//! where a leader's quorum acknowledgements came late). Now the elected leader steps down and
//! answers success, as nats-server's raft leader steps down whatever its followers' state.
//!
//! Here the lapse is certain: both followers of an R3 stream on three servers are paused
//! (SIGSTOP, their routes up), and the test waits until the leader no longer answers
//! STREAM.INFO (ours) before it sends the stepdown. Ours: exactly one answer, success; after the
//! followers resume the stream has a leader again. nats-server (the parity pass) keeps
//! answering STREAM.INFO from its leader until it steps down for want of a quorum; its answer
//! to the stepdown is success, or 10008 when the meta group or the stream's group counts as
//! leaderless by then (its leader among the paused): at most one answer, asserted loosely.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, error_code};
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes_of};
use crate::meta::{index_of, start_debug, ELECTION_BOUND};

const STREAM: &str = "LAPSED";
/// How long a STREAM.INFO is given to be answered while the followers are paused.
const ANSWER: Duration = Duration::from_secs(1);
/// nats-server's leader answers STREAM.INFO throughout; its stepdown is sent after this.
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
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    for &index in &followers {
        cluster.pause(index);
    }
    let paused = Instant::now();
    let client = &clients[leader];
    let info_subject = format!("$JS.API.STREAM.INFO.{STREAM}");

    // Until the leader's lease has lapsed: it no longer answers STREAM.INFO (ours).
    loop {
        let asked = client.request(info_subject.clone(), "".into());
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
            "the leader still answers STREAM.INFO {:?} after its followers' pause",
            paused.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("lapsed {:?} after the pause", paused.elapsed());

    let subject = format!("$JS.API.STREAM.LEADER.STEPDOWN.{STREAM}");
    let got = answers(client, &subject, Value::Null).await;
    println!("{subject}: {got:?}");
    for &index in &followers {
        cluster.resume(index);
    }
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
                json!({"type": "io.nats.jetstream.api.v1.stream_leader_stepdown_response",
                        "success": true})
            ],
            "{subject}"
        );
    }

    // The stream has a leader again once its followers are back, and takes a publish.
    publish_until_acked(
        &jetstream,
        "lapsed.x",
        "m2",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(client, STREAM, &names, 2).await;
    assert!(info["cluster"]["leader"].is_string(), "{info}");
}

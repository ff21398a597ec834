//! An R3 stream leader cut off from both other replicas (the link proxies blackhole its routes,
//! pinged every 500 ms so the routes drop): a client of that server publishing to the stream
//! hears "no responders" once the old leader has given up leading (nats-server: its lost-quorum
//! step-down, about 20 s here; ours: 2 s without a quorum's acknowledgement), never a PubAck
//! for a write the quorum does not have; healed, the same client publishes through the new
//! leader and every PubAck it heard is on the stream at its sequence. While cut off, STREAM.INFO
//! through that server is answered by it as a replica of a leaderless group (no leader, every
//! member listed), as nats-server answers.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use serde_json::Value;
use test_harness::cluster::LinkMode;

use crate::fault_schedule::proxied_jetstream_cluster;
use crate::jetstream_assignments::{answers, connect};
use crate::jetstream_faults::message_at;
use crate::jetstream_replicated::{create_r3, names_of, publish_until_acked, settled_info};
use crate::meta::{index_of, ELECTION_BOUND};

/// The cut-off leader stops taking publishes within this: ours gives up leading 2 s after its
/// quorum's last acknowledgement (margin for a loaded machine); nats-server steps down after
/// its lost-quorum interval and check (about 20 s measured here).
fn stop_bound() -> Duration {
    if test_harness::is_reference() {
        Duration::from_secs(40)
    } else {
        Duration::from_secs(10)
    }
}

/// What one publish through the cut-off server got.
#[derive(Debug)]
enum Outcome {
    Acked(u64),
    Refused(Value),
    NoResponders,
    Silence,
}

async fn publish(client: &async_nats::Client, payload: String) -> Outcome {
    let answer = tokio::time::timeout(
        Duration::from_secs(2),
        client.request("island.x", payload.into()),
    )
    .await;
    match answer {
        Err(_) => Outcome::Silence,
        Ok(Err(error)) if error.kind() == async_nats::client::RequestErrorKind::NoResponders => {
            Outcome::NoResponders
        }
        Ok(Err(_)) => Outcome::Silence,
        Ok(Ok(message)) => {
            let answer: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
            match answer["seq"].as_u64() {
                Some(seq) if answer.get("error").is_none() => Outcome::Acked(seq),
                _ => Outcome::Refused(answer),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_leader_cut_off_from_its_quorum_stops_taking_publishes() {
    let cluster = proxied_jetstream_cluster("island");
    let names = names_of(&cluster);
    let control = connect(&cluster, 0).await;
    let (created, _) = create_r3(&control, "ISLAND", "island.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(control.clone());
    publish_until_acked(
        &jetstream,
        "island.x",
        "before",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(&control, "ISLAND", &names, 1).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let majority = (0..3).find(|&i| i != leader).unwrap_or(0);
    let majority_client = connect(&cluster, majority).await;
    let island = connect(&cluster, leader).await;

    let cut = Instant::now();
    for other in (0..3).filter(|&i| i != leader) {
        cluster.set_link(leader, other, LinkMode::Blackhole);
    }
    let mut acked = Vec::new();
    let mut n = 0;
    let stopped = loop {
        n += 1;
        let payload = format!("during-{n}");
        let outcome = publish(&island, payload.clone()).await;
        match outcome {
            Outcome::NoResponders => break cut.elapsed(),
            Outcome::Acked(seq) => acked.push((payload, seq)),
            Outcome::Refused(answer) => panic!("{payload}: {answer}"),
            Outcome::Silence => {}
        }
        assert!(
            cut.elapsed() < stop_bound(),
            "the cut-off leader still takes publishes {:?} after the cut ({n} sent, acked \
             {acked:?})\n{}",
            cut.elapsed(),
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("cut-off stream leader: no responders {stopped:.1?} after the cut, acked during it {acked:?}");
    // It stays so while the cut lasts.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let outcome = publish(&island, "still-cut".into()).await;
        assert!(matches!(outcome, Outcome::NoResponders), "{outcome:?}");
    }

    // STREAM.INFO through the cut-off server: answered once, by that replica, naming no leader
    // and every member (itself included).
    let deadline = Instant::now() + stop_bound();
    let info = loop {
        let got = answers(&island, "$JS.API.STREAM.INFO.ISLAND", Value::Null).await;
        if let [info] = got.as_slice() {
            break info.clone();
        }
        assert!(got.is_empty(), "more than one answer: {got:?}");
        assert!(
            Instant::now() < deadline,
            "STREAM.INFO unanswered on the cut-off server"
        );
    };
    println!(
        "cut-off STREAM.INFO answered {:.1?} after the cut",
        cut.elapsed()
    );
    assert!(info.get("error").is_none(), "{info}");
    assert!(info["cluster"].get("leader").is_none(), "{info}");
    assert_eq!(
        info["cluster"]["raft_group"], created.answer["cluster"]["raft_group"],
        "{info}"
    );
    let mut listed: Vec<&str> = info["cluster"]["replicas"]
        .as_array()
        .map(|replicas| replicas.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    listed.sort();
    assert_eq!(
        listed,
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        "{info}"
    );
    assert!(info["state"]["last_seq"].as_u64() >= Some(1), "{info}");

    // Healed: the island's client publishes through the new leader; every PubAck it heard
    // during the cut is on the stream at its sequence.
    cluster.heal_all();
    let deadline = Instant::now() + ELECTION_BOUND;
    let after = loop {
        if let Outcome::Acked(seq) = publish(&island, "after".into()).await {
            break seq;
        }
        assert!(
            Instant::now() < deadline,
            "no PubAck through the healed node"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    acked.push(("after".into(), after));
    let info = settled_info(&majority_client, "ISLAND", &names, after).await;
    assert_eq!(info["state"]["last_seq"], after, "{info}");
    for (payload, seq) in acked {
        let stored = message_at(&majority_client, "ISLAND", seq).await;
        assert_eq!(stored.as_deref(), Some(payload.as_str()), "seq {seq}");
    }
}

//! An R3 stream whose group has no leader answers as nats-server's does: with the stream leader
//! and one follower killed, a publish to the stream's subjects through the surviving replica
//! gets "no responders" at once (only a leader subscribes the stream's subjects), not silence
//! until the publisher's timeout.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where every assertion holds too.

use std::time::{Duration, Instant};

use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes};
use crate::meta::{index_of, ELECTION_BOUND};

/// The surviving replica stops taking publishes within this after the others are killed.
const SETTLE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_to_a_leaderless_r3_stream_gets_no_responders() {
    let (mut cluster, names, clients) = three_nodes().await;
    let (created, _) = create_r3(&clients[0], "ALONE", "alone.>").await;
    assert_eq!(created["did_create"], true, "{created}");
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_until_acked(
        &jetstream,
        "alone.x",
        "one",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(&clients[0], "ALONE", &names, 1).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let survivor = (0..3).find(|&i| i != leader).unwrap_or(0);
    for doomed in (0..3).filter(|&i| i != survivor) {
        cluster.kill9(doomed);
    }

    let client = &clients[survivor];
    let deadline = Instant::now() + SETTLE;
    loop {
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(2),
            client.request("alone.x", "two".into()),
        )
        .await;
        match answer {
            Ok(Err(error))
                if error.kind() == async_nats::client::RequestErrorKind::NoResponders =>
            {
                assert!(started.elapsed() < Duration::from_secs(1));
                break;
            }
            other => {
                let shown = other.map(|reply| reply.map(|message| message.payload));
                assert!(Instant::now() < deadline, "still {shown:?}");
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

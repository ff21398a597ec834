//! A server killed, its JetStream store wiped, and restarted under the same name (issue 20,
//! "a wiped node rejoining under a new identity"): as with nats-server, it is back in the meta
//! group and in its stream's group, current, with every message acknowledged before and after
//! the wipe and its durable consumer's confirmed acks, and it can lead the stream.
//!
//! Three nodes, one R3 stream: the wiped server must come back into the same group (there is
//! no other server to re-place it on). All-rnats clusters normally; all-nats-server clusters in
//! the parity pass (`NATS_SERVER_BIN`), where every assertion holds too.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::jetstream_assignments::connect;
use crate::jetstream_replicated::{create_r3, publish_until_acked, read_all};
use crate::membership::{durable_with_acks, lead_on, members, nodes, placed_without, reader_kept};
use crate::meta::{agreed_leader, index_of, meta_cluster, ELECTION_BOUND};

/// The wiped server is back in its groups, current, within this (nats-server: 3-4 s).
const REJOIN_BOUND: Duration = Duration::from_secs(60);

/// Waits until the meta leader (agreed by all three) lists both other servers as current
/// replicas, `name` among them.
fn meta_whole_with(cluster: &test_harness::cluster::Cluster, name: &str) {
    let deadline = Instant::now() + REJOIN_BOUND;
    loop {
        let whole = agreed_leader(cluster, &[0, 1, 2], 3, None)
            .ok()
            .and_then(|leader| meta_cluster(cluster, index_of(cluster, &leader)))
            .is_some_and(|meta| {
                let replicas = meta["replicas"].as_array().cloned().unwrap_or_default();
                replicas.len() == 2
                    && replicas.iter().all(|replica| {
                        replica["current"] == true
                            && replica.get("offline") != Some(&Value::Bool(true))
                    })
                    && (meta["leader"] == name
                        || replicas.iter().any(|replica| replica["name"] == name))
            });
        if whole {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "meta group not whole with {name}: {:?}\n{}",
            (0..3).map(|i| meta_cluster(cluster, i)).collect::<Vec<_>>(),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Empties the JetStream store of node `index` (killed already).
pub(crate) fn wipe_store(cluster: &test_harness::cluster::Cluster, index: usize) {
    let store = cluster
        .node(index)
        .store_dir
        .clone()
        .expect("a JetStream store dir");
    std::fs::remove_dir_all(&store).expect("wipe the store");
    std::fs::create_dir_all(&store).expect("an empty store dir");
}

/// Kills `victim`, restarts `others` one after the other (so none holds in memory what the
/// victim announced), wipes the victim's store and starts it again; returns when it started,
/// once the meta group is whole with it.
fn forgotten_and_wiped(
    cluster: &mut test_harness::cluster::Cluster,
    victim: usize,
    others: &[usize],
) -> Instant {
    cluster.kill9(victim);
    for &other in others {
        cluster.restart(other);
        agreed_leader(cluster, others, 3, None)
            .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    }
    wipe_store(cluster, victim);
    let started = Instant::now();
    cluster.restart(victim);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    meta_whole_with(cluster, &cluster.node(victim).name.clone());
    started
}

/// Which server is wiped.
#[derive(Clone, Copy, Debug)]
enum Victim {
    /// A follower of the stream that does not lead the meta group.
    IdleFollower,
    /// The server leading both the meta group and the stream.
    Leader,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_follower_rejoins_its_groups_with_every_acked_message() {
    wipe_and_rejoin(Victim::IdleFollower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_leader_of_the_meta_group_and_the_stream_rejoins_as_a_follower() {
    wipe_and_rejoin(Victim::Leader).await;
}

/// Wipes the server `which` names (kill -9, store removed, restart under the same name) with writes before
/// and while it is down, and checks it is back in both groups with everything acknowledged.
async fn wipe_and_rejoin(which: Victim) {
    let (mut cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], "WIPED", "wiped.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut payloads = Vec::new();
    for n in 0..20 {
        let payload = format!("w{n}");
        publish_until_acked(&jetstream, "wiped.x", &payload, deadline).await;
        payloads.push(payload);
    }
    let info = placed_without(&cluster, &clients[0], "WIPED", &[], 3, 20).await;
    let before = members(&info);
    // A durable consumer with 5 of the 20 acknowledged (each ack confirmed).
    durable_with_acks(&jetstream, "WIPED", 5).await;

    let meta_leader = agreed_leader(&cluster, &[0, 1, 2], 3, None).expect("meta leader");
    let stream_leader = info["cluster"]["leader"].as_str().unwrap_or("").to_string();
    let victim = match which {
        Victim::IdleFollower => before
            .iter()
            .find(|name| **name != stream_leader && **name != meta_leader)
            .cloned()
            .expect("an idle follower"),
        Victim::Leader => {
            lead_on(&clients[0], "WIPED", &meta_leader).await;
            meta_leader
        }
    };
    let victim_index = index_of(&cluster, &victim);
    let through = (0..3).find(|&i| i != victim_index).expect("a live node");

    cluster.kill9(victim_index);
    wipe_store(&cluster, victim_index);

    // Acknowledged while the wiped server is down.
    let jetstream = async_nats::jetstream::new(clients[through].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 20..30 {
        let payload = format!("w{n}");
        publish_until_acked(&jetstream, "wiped.x", &payload, deadline).await;
        payloads.push(payload);
    }

    let started = Instant::now();
    cluster.restart(victim_index);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let meshed = started.elapsed();
    meta_whole_with(&cluster, &victim);
    let info = placed_without(&cluster, &clients[through], "WIPED", &[], 3, 30).await;
    assert_eq!(members(&info), before, "{info}");
    eprintln!(
        "wiped {which:?} {victim} current again after {} ms (routes back after {} ms)",
        started.elapsed().as_millis(),
        meshed.as_millis()
    );

    // Acknowledged after its return, then read from the wiped server as the stream's leader.
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 30..35 {
        let payload = format!("w{n}");
        publish_until_acked(&jetstream, "wiped.x", &payload, deadline).await;
        payloads.push(payload);
    }
    placed_without(&cluster, &clients[through], "WIPED", &[], 3, 35).await;
    lead_on(&clients[through], "WIPED", &victim).await;
    let client = connect(&cluster, victim_index).await;
    let stored = read_all(&client, "WIPED", 35).await;
    let stored: Vec<String> = stored.into_values().collect();
    assert_eq!(stored, payloads);
    // The consumer's confirmed acks too, as the wiped server now leads it.
    reader_kept(&client, "WIPED", 5, 30).await;
}

/// The wiped server's earlier identity is recognised by a meta leader that never heard it: the
/// server is killed, both others restart one after the other (so neither holds in memory what
/// it announced), then its store is wiped and it comes back. The meta group and the stream's
/// group must be whole with it again (ours: by the members' record in the meta log; before,
/// the dead earlier incarnation stayed a member and the group never became whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_server_is_recognised_by_a_meta_leader_that_never_heard_it() {
    let (mut cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], "FORGOT", "forgot.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..10 {
        publish_until_acked(&jetstream, "forgot.x", &format!("f{n}"), deadline).await;
    }
    let info = placed_without(&cluster, &clients[0], "FORGOT", &[], 3, 10).await;
    let before = members(&info);
    let meta_leader = agreed_leader(&cluster, &[0, 1, 2], 3, None).expect("meta leader");
    let victim = (0..3)
        .find(|&i| cluster.node(i).name != meta_leader)
        .expect("a server not leading the meta group");
    let others: Vec<usize> = (0..3).filter(|&i| i != victim).collect();
    // Ours: the meta leader records each member's server (name, incarnation) in the meta log
    // within a second or two of leading; a victim killed before its record committed leaves
    // nothing for the next leader to recognise it by. Wait until the victim applied its own.
    if !test_harness::is_reference() {
        let recorded = format!(
            "JetStream cluster member {} recorded",
            cluster.node(victim).name
        );
        tokio::task::block_in_place(|| {
            crate::reload_routes::await_log(&cluster, victim, &recorded, 1)
        });
    }

    let name = cluster.node(victim).name.clone();
    let started =
        tokio::task::block_in_place(|| forgotten_and_wiped(&mut cluster, victim, &others));
    let through = connect(&cluster, others[0]).await;
    let info = placed_without(&cluster, &through, "FORGOT", &[], 3, 10).await;
    assert_eq!(members(&info), before, "{info}");
    eprintln!(
        "wiped {name}, unknown to the meta leader, current again after {} ms",
        started.elapsed().as_millis()
    );
}

/// A server killed right after the meta group's first election, before anything else happened,
/// its store wiped: it is recognised when it comes back. The leader is restarted first (then the
/// third server), so no server holds in memory what the victim announced: only the meta log can
/// name its earlier incarnation (ours: the leader records every member it knows at once when a
/// quorum confirmed its leadership; before, at its first one-second tick, and a leader
/// restarted before that tick left the dead incarnation a member for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_right_after_the_first_election_is_recognised_after_a_wipe() {
    let mut cluster = crate::meta::start(3);
    let leader = agreed_leader(&cluster, &[0, 1, 2], 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let leader = index_of(&cluster, &leader);
    let victim = (0..3).find(|&i| i != leader).expect("a follower");
    let survivor = (0..3)
        .find(|&i| i != leader && i != victim)
        .expect("a third server");
    let name = cluster.node(victim).name.clone();
    let started = tokio::task::block_in_place(|| {
        forgotten_and_wiped(&mut cluster, victim, &[leader, survivor])
    });
    eprintln!(
        "{name}, killed right after the election and wiped, current again after {} ms",
        started.elapsed().as_millis()
    );
}

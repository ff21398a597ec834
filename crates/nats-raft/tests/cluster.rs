//! Groups of 3 to 5 nodes in one runtime (paused tokio time, real files in a tempdir): election,
//! replication, failover, restart and catch-up, wiped nodes, torn and truncated logs, snapshots,
//! supervision.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{
    fast, payloads, propose_many, snapshot_and_rejoin_as_4, stop_and_wipe_a_follower, Cluster,
    GROUP,
};
use nats_raft::{GroupStatus, NodeId, RaftGroup, RaftGroupError, Role};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn three_nodes_elect_one_leader_and_replicate_10k_proposals_in_order() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let status = cluster.node(leader).status();
    assert_eq!(status.voters, [1, 2, 3].into_iter().collect());
    assert!(status.term >= 1);

    let group = cluster.node(leader);
    let before = group.log_counters();
    let mut indexes = Vec::new();
    for round in 0..10 {
        indexes.extend(propose_many(&group, &format!("r{round}"), 1_000).await);
    }
    assert_eq!(indexes.len(), 10_000);
    let mut sorted = indexes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 10_000, "every proposal got its own index");
    let counters = group.log_counters();
    let appended = counters.entries_appended - before.entries_appended;
    let fsyncs = counters.fsyncs - before.fsyncs;
    assert!(appended >= 10_000);
    assert!(
        fsyncs * 10 < appended,
        "group commit: {fsyncs} fsyncs for {appended} entries"
    );

    let last = *indexes.iter().max().expect("indexes");
    for node in [1, 2, 3] {
        cluster.wait_applied(node, last, WAIT).await;
    }
    let reference = cluster.applied_entries(leader);
    assert_eq!(reference.len(), 10_000);
    for node in [1, 2, 3] {
        assert_eq!(
            cluster.applied_entries(node),
            reference,
            "node {node} applied the same log"
        );
    }
    let leader_status = cluster
        .node(leader)
        .wait_for(WAIT, |status| {
            status.followers.len() == 2 && status.followers.iter().all(|follower| follower.lag == 0)
        })
        .await
        .expect("followers caught up");
    assert!(leader_status
        .followers
        .iter()
        .all(|follower| follower.matched == leader_status.last_log_index));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_follower_refuses_proposals_and_names_the_leader() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let follower = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    let refused = cluster
        .node(follower)
        .propose(Bytes::from_static(b"x"))
        .await;
    assert_eq!(
        refused,
        Err(RaftGroupError::NotLeader {
            leader: Some(leader)
        })
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killing_the_leader_elects_another_and_loses_no_committed_entry() {
    let cluster = Cluster::start(&[1, 2, 3, 4, 5], fast).await;
    let first = cluster.leader(WAIT).await;
    propose_many(&cluster.node(first), "before", 500).await;
    cluster.stop_node(first).await;

    let second = cluster.leader(WAIT).await;
    assert_ne!(second, first);
    let indexes = propose_many(&cluster.node(second), "after", 500).await;
    let last = *indexes.iter().max().expect("indexes");
    for node in cluster.running() {
        cluster.wait_applied(node, last, WAIT).await;
    }
    let entries = payloads(&cluster.applied_entries(second));
    for number in 0..500 {
        assert!(
            entries.contains(&Bytes::from(format!("before-{number}"))),
            "before-{number} kept"
        );
        assert!(
            entries.contains(&Bytes::from(format!("after-{number}"))),
            "after-{number} kept"
        );
    }
    for node in cluster.running() {
        assert_eq!(
            cluster.applied_entries(node),
            cluster.applied_entries(second)
        );
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_isolated_leader_is_replaced_and_its_uncommitted_proposal_fails() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let first = cluster.leader(WAIT).await;
    propose_many(&cluster.node(first), "before", 10).await;
    cluster.isolate(first);
    let stale = cluster.node(first);
    let pending = tokio::spawn(async move { stale.propose(Bytes::from_static(b"lost")).await });
    let second = cluster.leader(WAIT).await;
    assert_ne!(second, first);
    propose_many(&cluster.node(second), "after", 10).await;
    cluster.heal(first);
    let outcome = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the stale proposal ends")
        .expect("task");
    assert!(
        outcome.is_err(),
        "the isolated leader's proposal was not committed: {outcome:?}"
    );
    let last = cluster.node(second).status().last_log_index.expect("log");
    cluster.wait_applied(first, last, WAIT).await;
    let entries = payloads(&cluster.applied_entries(first));
    assert!(!entries.contains(&Bytes::from_static(b"lost")));
    assert_eq!(
        cluster.applied_entries(first),
        cluster.applied_entries(second)
    );
    cluster.shutdown().await;
}

/// A follower's lag, as the leader reports it, counts the committed entries it does not hold
/// (nats-server's `commit - li`), not entries appended and still being proposed: under a steady
/// load a follower is always a proposal behind the leader's last index, and STREAM.INFO's
/// replicas read `current: false` (lag 0 is their `current`) nearly all the time.
#[tokio::test(start_paused = true)]
async fn a_followers_lag_counts_committed_entries_only() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let group = cluster.node(leader);
    propose_many(&group, "before", 5).await;
    let followers: Vec<NodeId> = [1, 2, 3].into_iter().filter(|n| *n != leader).collect();
    let lags = |group: &RaftGroup| -> Vec<u64> {
        let status = group.status();
        followers
            .iter()
            .map(|node| {
                status
                    .followers
                    .iter()
                    .find(|follower| follower.node == *node)
                    .map_or(u64::MAX, |follower| follower.lag)
            })
            .collect()
    };
    let caught_up = |status: &GroupStatus| {
        status.followers.len() == 2
            && status
                .followers
                .iter()
                .all(|follower| follower.matched == status.committed)
    };
    group.wait_for(WAIT, caught_up).await.expect("caught up");
    assert_eq!(lags(&group), vec![0, 0]);

    // One follower cut off: the entries committed without it are its lag.
    cluster.isolate(followers[0]);
    propose_many(&group, "without", 4).await;
    assert_eq!(lags(&group), vec![4, 0]);
    cluster.heal(followers[0]);
    group
        .wait_for(WAIT, caught_up)
        .await
        .expect("caught up again");

    // Both cut off: the leader appends an entry it cannot commit; neither follower lacks a
    // committed entry.
    cluster.isolate(followers[0]);
    cluster.isolate(followers[1]);
    let stale = group.clone();
    let pending =
        tokio::spawn(async move { stale.propose(Bytes::from_static(b"in flight")).await });
    let status = group
        .wait_for(WAIT, |status| status.last_log_index > status.committed)
        .await
        .expect("appended");
    assert_eq!(status.role, Role::Leader, "{status:?}");
    assert_eq!(lags(&group), vec![0, 0], "{:?}", group.status());
    cluster.heal(followers[0]);
    cluster.heal(followers[1]);
    let _ = tokio::time::timeout(WAIT, pending).await;
    cluster.shutdown().await;
}

/// A leader whose group restarts does not resume its term (openraft's leader restore is off):
/// it comes back a follower and, here with no other campaigner, leads again after its election
/// timeout in a new term, under a new leadership number for the
/// application, whose in-memory state (a stream's duplicate window, running consumers) was built
/// in the old one. (When restore was on, the resumed term needed a new number too: a stream
/// leader rebuilt after a failed proposal kept the duplicate window holding the failed
/// message's id and answered its retry as a duplicate at a sequence it never stored.)
#[tokio::test(start_paused = true)]
async fn a_restarted_leader_leads_again_in_a_new_term_under_a_new_leadership_number() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let first = cluster.leader(WAIT).await;
    propose_many(&cluster.node(first), "before", 10).await;
    // No follower campaigns while the leader restarts (paused time runs on during its I/O): the
    // restarted node's election timer elects it.
    for follower in [1, 2, 3].into_iter().filter(|node| *node != first) {
        cluster.node(follower).set_active(false);
    }
    let mut leading = cluster.node(first).leading();
    let before = *leading
        .wait_for(Option::is_some)
        .await
        .expect("leading watch");
    let term = cluster.node(first).status().term;

    cluster.stop_node(first).await;
    let restarted = cluster.start_node(first, true, None).await;
    let mut leading = restarted.leading();
    let after = *tokio::time::timeout(WAIT, leading.wait_for(Option::is_some))
        .await
        .expect("the restarted leader leads again")
        .expect("leading watch");
    assert!(
        restarted.status().term > term,
        "a restarted leader leads only through an election: {:?}",
        restarted.status()
    );
    assert_ne!(after, before, "a new term is a new leadership");
    // Still leading for the application: a proposal commits.
    propose_many(&restarted, "after", 10).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_restarted_follower_recovers_from_disk_and_catches_up() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    propose_many(&cluster.node(leader), "a", 200).await;
    let follower = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    let applied_before = cluster.node(leader).status().applied.expect("applied");
    cluster.wait_applied(follower, applied_before, WAIT).await;
    cluster.stop_node(follower).await;
    let indexes = propose_many(&cluster.node(leader), "b", 200).await;

    let restarted = cluster.start_node(follower, true, None).await;
    assert!(restarted.recovery().torn_tail.is_none());
    assert!(restarted.recovery().last_index >= Some(applied_before));
    let last = *indexes.iter().max().expect("indexes");
    cluster.wait_applied(follower, last, WAIT).await;
    assert_eq!(
        cluster.applied_entries(follower),
        cluster.applied_entries(leader)
    );
    cluster.shutdown().await;
}

/// A restarted follower 12.5 MiB behind (200 entries of 64 KiB, fewer than the snapshot
/// threshold) catches up through appends of at most 4 MiB each (the test transport carries
/// 5 MiB at most, as a route's pending limit bounds a message): openraft sends up to 300
/// entries at once, and a catch-up of large stream batches closed the route as a slow consumer.
#[tokio::test(start_paused = true)]
async fn a_follower_catches_up_through_appends_no_larger_than_one_message() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let follower = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    propose_many(&cluster.node(leader), "a", 10).await;
    let applied_before = cluster.node(leader).status().applied.expect("applied");
    cluster.wait_applied(follower, applied_before, WAIT).await;
    cluster.stop_node(follower).await;
    let big = "x".repeat(64 << 10);
    let node = cluster.node(leader);
    let proposals = (0..200).map(|number| node.propose(Bytes::from(format!("{number}-{big}"))));
    let mut last = 0;
    for index in futures::future::join_all(proposals).await {
        last = last.max(index.expect("proposal committed"));
    }
    cluster.start_node(follower, true, None).await;
    cluster.wait_applied(follower, last, WAIT).await;
    assert_eq!(
        cluster.applied_entries(follower),
        cluster.applied_entries(leader)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_wiped_follower_rejoins_under_a_new_id() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    propose_many(&cluster.node(leader), "a", 300).await;
    let wiped = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    cluster.stop_node(wiped).await;
    std::fs::remove_dir_all(cluster.directory(wiped)).expect("wipe");
    cluster
        .node(leader)
        .remove_member(wiped)
        .await
        .expect("remove the wiped id");

    cluster.start_node(4, false, None).await;
    cluster
        .node(leader)
        .add_member(4)
        .await
        .expect("add the new id");
    let status = cluster.node(leader).status();
    assert_eq!(
        status.voters,
        [1, 2, 3, 4]
            .into_iter()
            .filter(|node| *node != wiped)
            .collect()
    );
    let indexes = propose_many(&cluster.node(leader), "b", 100).await;
    let last = *indexes.iter().max().expect("indexes");
    cluster.wait_applied(4, last, WAIT).await;
    assert_eq!(cluster.applied_entries(4), cluster.applied_entries(leader));
    cluster.shutdown().await;
}

fn segment_of(cluster: &Cluster, node: u64) -> std::path::PathBuf {
    let mut segments: Vec<_> = std::fs::read_dir(cluster.directory(node))
        .expect("node directory")
        .map(|item| item.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "seg"))
        .collect();
    segments.sort();
    segments.pop().expect("a segment")
}

#[tokio::test(start_paused = true)]
async fn a_torn_log_tail_is_cut_reported_and_refilled_from_the_leader() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let indexes = propose_many(&cluster.node(leader), "a", 100).await;
    let follower = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    let last = *indexes.iter().max().expect("indexes");
    cluster.wait_applied(follower, last, WAIT).await;
    cluster.stop_node(follower).await;
    // A torn write at the end: a record header promising more bytes than there are.
    let segment = segment_of(&cluster, follower);
    let mut contents = std::fs::read(&segment).expect("read");
    contents.extend_from_slice(&[200, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3]);
    std::fs::write(&segment, &contents).expect("write");

    let restarted = cluster.start_node(follower, true, None).await;
    let torn = restarted
        .recovery()
        .torn_tail
        .clone()
        .expect("torn tail reported");
    assert_eq!(torn.dropped_bytes, 11);
    assert_eq!(
        restarted.status().protected_until,
        None,
        "nothing committed was lost"
    );
    let more = propose_many(&cluster.node(leader), "b", 50).await;
    cluster
        .wait_applied(follower, *more.iter().max().expect("indexes"), WAIT)
        .await;
    assert_eq!(
        cluster.applied_entries(follower),
        cluster.applied_entries(leader)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_node_whose_log_lost_committed_entries_neither_votes_nor_leads_until_caught_up() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let indexes = propose_many(&cluster.node(leader), "a", 100).await;
    let last = *indexes.iter().max().expect("indexes");
    let damaged = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    let other = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader && *node != damaged)
        .expect("the other follower");
    cluster.wait_applied(damaged, last, WAIT).await;
    // Let the follower learn and record the commit of everything.
    cluster
        .node(damaged)
        .wait_for(WAIT, |status| status.committed == Some(last))
        .await
        .expect("commit recorded");
    cluster.stop_node(damaged).await;
    // Lose the second half of its log (power loss, or a bad block cut by recovery).
    let segment = segment_of(&cluster, damaged);
    let length = std::fs::metadata(&segment).expect("metadata").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open");
    file.set_len(length / 2).expect("truncate");
    drop(file);
    // The leader goes away too: only the damaged node and one healthy follower remain.
    cluster.stop_node(leader).await;

    let restarted = cluster.start_node(damaged, true, None).await;
    let protected = restarted.status().protected_until.expect("protected");
    assert!(protected >= last, "protected until {protected}");
    assert!(restarted.recovery().last_index < Some(last));
    // Three election timeouts: the healthy follower cannot win without the damaged node's vote,
    // and the damaged node does not campaign.
    tokio::time::sleep(Duration::from_secs(12)).await;
    for node in [damaged, other] {
        assert_ne!(
            cluster.node(node).status().role,
            Role::Leader,
            "node {node} must not lead"
        );
    }
    // The old leader returns: a leader is elected, the damaged node catches up and votes again.
    cluster.start_node(leader, true, None).await;
    let new_leader = cluster.leader(WAIT).await;
    assert_ne!(new_leader, damaged);
    cluster
        .node(damaged)
        .wait_for(WAIT, |status| status.protected_until.is_none())
        .await
        .expect("protection lifted after catching up");
    cluster.wait_applied(damaged, last, WAIT).await;
    cluster
        .node(new_leader)
        .transfer_leader(damaged)
        .await
        .expect("transfer");
    cluster
        .node(damaged)
        .wait_for(WAIT, |status| status.role == Role::Leader)
        .await
        .expect("the repaired node can lead");
    let entries = payloads(&cluster.applied_entries(damaged));
    for number in 0..100 {
        assert!(entries.contains(&Bytes::from(format!("a-{number}"))));
    }
    cluster.shutdown().await;
}

fn snapshot_often(config: &mut nats_raft::GroupConfig) {
    fast(config);
    config.snapshot_after_entries = 100;
    config.snapshot_lag_threshold = 100;
}

#[tokio::test(start_paused = true)]
async fn a_far_behind_follower_is_sent_a_snapshot() {
    let mut cluster = Cluster::start(&[1, 2, 3], snapshot_often).await;
    let leader = cluster.leader(WAIT).await;
    let behind = stop_and_wipe_a_follower(&cluster, leader).await;
    let indexes = propose_many(&cluster.node(leader), "a", 1_000).await;
    let last = *indexes.iter().max().expect("indexes");
    snapshot_and_rejoin_as_4(&mut cluster, leader, behind, last, WAIT).await;
    cluster.shutdown().await;
}

/// A snapshot larger than the transport carries in one message (here 16 MiB, the test
/// transport's limit 5 MiB) reaches a wiped follower in chunks, each answered before the next.
/// Sent whole, a 1 GiB stream's snapshot overran a route's pending limit and the route was
/// closed again and again (bench/cluster --suite streams, wiped follower).
#[tokio::test(start_paused = true)]
async fn a_snapshot_larger_than_one_message_reaches_the_follower_in_chunks() {
    let mut cluster = Cluster::start(&[1, 2, 3], snapshot_often).await;
    let leader = cluster.leader(WAIT).await;
    let behind = stop_and_wipe_a_follower(&cluster, leader).await;
    // 16 MiB in entries of 16 KiB, proposed 64 at a time: an append carries at most 1 MiB.
    let big = "x".repeat(16 << 10);
    let mut last = 0;
    let node = cluster.node(leader);
    for round in 0..16 {
        let proposals = (0..64).map(|number| {
            let payload = Bytes::from(format!("{round}-{number}-{big}"));
            node.propose(payload)
        });
        for index in futures::future::join_all(proposals).await {
            last = last.max(index.expect("proposal committed"));
        }
    }
    snapshot_and_rejoin_as_4(&mut cluster, leader, behind, last, WAIT).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_group_whose_state_machine_fails_goes_offline_and_restarts_from_its_directory() {
    let mut cluster = Cluster::start(&[1], fast).await;
    cluster.stop_node(1).await;
    let poison = Bytes::from_static(b"poison");
    let group = cluster.start_node(1, true, Some(poison.clone())).await;
    cluster.leader(WAIT).await;
    propose_many(&group, "ok", 10).await;
    let mut offline = group.offline_watch();
    let failed = group.propose(poison.clone()).await;
    assert!(
        failed.is_err(),
        "the poisoned proposal does not succeed: {failed:?}"
    );
    tokio::time::timeout(WAIT, offline.wait_for(|reason| reason.is_some()))
        .await
        .expect("offline reported in time")
        .expect("watch");
    let status = group.status();
    assert_eq!(status.role, Role::Offline);
    assert!(
        status
            .error
            .as_deref()
            .is_some_and(|error| error.contains("poisoned")),
        "{status:?}"
    );
    assert!(matches!(
        group.propose(Bytes::from_static(b"x")).await,
        Err(RaftGroupError::Offline(_))
    ));

    // Restarted from the same directory without the fault, it re-applies and carries on.
    cluster.stop_node(1).await;
    drop(group);
    let group = cluster.start_node(1, true, None).await;
    cluster.leader(WAIT).await;
    let index = group
        .propose(Bytes::from_static(b"after"))
        .await
        .expect("proposal");
    cluster.wait_applied(1, index, WAIT).await;
    let entries = payloads(&cluster.applied_entries(1));
    assert!(entries.contains(&poison));
    assert_eq!(entries.last(), Some(&Bytes::from_static(b"after")));
    assert_eq!(GROUP, group.group());
    cluster.shutdown().await;
}

/// A shutdown returns once openraft's state machine worker has let go of the application's
/// machine (no late apply after it), and promptly (real time: the worker quits within
/// milliseconds of the core).
#[tokio::test]
async fn a_shutdown_returns_after_the_state_machine_is_released_and_promptly() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    propose_many(&cluster.node(leader), "before", 50).await;
    let started = std::time::Instant::now();
    cluster.stop_node(leader).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "shutdown took {took:?}");
    let applied = cluster.applied_entries(leader).len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        cluster.applied_entries(leader).len(),
        applied,
        "applied after shutdown"
    );
    cluster.shutdown().await;
}

/// A leader restarted while cut off from the others does not lead: not openraft's leader role
/// (no leader restore: it would lead a term whose entries committed by its followers its own log
/// may have lost to a power cut, parity cluster power_loss), and not for the application. Its
/// pending uncommitted tail stays unapplied. Replaces the guards a resumed leadership needed
/// (no leading before applying its tail, nor before a quorum answered).
#[tokio::test(start_paused = true)]
async fn a_leader_restarted_cut_off_does_not_lead() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let first = cluster.leader(WAIT).await;
    propose_many(&cluster.node(first), "before", 10).await;
    cluster.isolate(first);
    let leader = cluster.node(first);
    let pending = tokio::spawn(async move { leader.propose(Bytes::from_static(b"tail")).await });
    cluster
        .node(first)
        .wait_for(WAIT, |status| status.last_log_index > status.committed)
        .await
        .expect("the tail appended, uncommitted");
    cluster.stop_node(first).await;
    let _ = pending.await;
    let restarted = cluster.start_node(first, true, None).await;
    let led = restarted
        .wait_for(Duration::from_secs(10), |status| {
            status.role == Role::Leader
        })
        .await;
    assert!(led.is_err(), "led again, cut off: {led:?}");
    assert_eq!(*restarted.leading().borrow(), None, "leading, cut off");
    cluster.shutdown().await;
}

/// A proposal refused at the door (the leader is handing its leadership over) is `NotLeader`:
/// it never reached the log. One that reached a cut-off leader's log and was replaced there by
/// the next leader's entries is `Discarded`: it might have committed through the next leader, so
/// a caller must not take it for a refusal.
#[tokio::test(start_paused = true)]
async fn a_discarded_proposal_is_told_apart_from_a_refused_one() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let old = cluster.leader(WAIT).await;
    cluster.isolate(old);
    let cut_off = cluster.node(old);
    let pending = tokio::spawn(async move { cut_off.propose(Bytes::from_static(b"cut")).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        cluster.node(old).status().last_log_index > cluster.node(old).status().committed,
        "the proposal is in the cut-off leader's log: {:#?}",
        cluster.node(old).status()
    );
    let new = cluster.leader(WAIT).await;
    assert_ne!(new, old);
    cluster
        .node(new)
        .propose(Bytes::from_static(b"next"))
        .await
        .expect("the new leader commits");
    cluster.heal(old);
    let discarded = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the cut-off proposal resolves")
        .expect("proposal task");
    assert!(
        matches!(discarded, Err(RaftGroupError::Discarded { .. })),
        "{discarded:?}"
    );

    let leader = cluster.leader(WAIT).await;
    let target = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    cluster.isolate(target);
    cluster
        .node(leader)
        .transfer_leader(target)
        .await
        .expect("transfer triggered");
    let refused = cluster
        .node(leader)
        .propose(Bytes::from_static(b"during the handover"))
        .await;
    assert_eq!(
        refused,
        Err(RaftGroupError::NotLeader {
            leader: Some(target)
        })
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn proposals_in_flight_commit_in_order_and_only_in_the_term_they_were_submitted_for() {
    let mut cluster = Cluster::start(&[1, 2, 3], fast).await;
    let first = cluster.leader(WAIT).await;
    let leader = cluster.node(first);
    let (term, one) = leader
        .submit(Bytes::from_static(b"one"), None)
        .await
        .expect("handed to the core");
    let (same, two) = leader
        .submit(Bytes::from_static(b"two"), Some(term))
        .await
        .expect("handed to the core");
    assert_eq!(same, term);
    assert_eq!(term, leader.status().term);
    // Both in flight; the second resolves after the first, one index later.
    let two = two.await.expect("the second commits");
    let one = one.await.expect("the first commits");
    assert_eq!(two, one + 1);

    // The leader restarts and leads again in a later term (as in the restart test above).
    for follower in [1, 2, 3].into_iter().filter(|node| *node != first) {
        cluster.node(follower).set_active(false);
    }
    cluster.stop_node(first).await;
    let restarted = cluster.start_node(first, true, None).await;
    let mut leading = restarted.leading();
    tokio::time::timeout(WAIT, leading.wait_for(Option::is_some))
        .await
        .expect("the restarted leader leads again")
        .expect("leading watch");
    let last = restarted.status().last_log_index;
    // A proposal decided on top of the earlier term's proposals is refused in the new one and
    // never reaches the log.
    let (_, stale) = restarted
        .submit(Bytes::from_static(b"stale"), Some(term))
        .await
        .expect("handed to the core");
    assert!(
        matches!(stale.await, Err(RaftGroupError::NotLeader { .. })),
        "a proposal pinned to an earlier term is refused"
    );
    assert_eq!(restarted.status().last_log_index, last);
    let (now, fresh) = restarted
        .submit(Bytes::from_static(b"fresh"), None)
        .await
        .expect("handed to the core");
    assert!(now > term, "{now} > {term}");
    fresh.await.expect("commits in the new term");
    cluster.shutdown().await;
}

/// A new leader whose followers hold its whole log (a leadership transfer) sends them only
/// what they lack: its election's blank entry and what follows. openraft's first probe of a
/// follower started at the binary search's midpoint and carried every entry from there again
/// (up to half the unpurged log), so the blank entry, and a stream's first publish after a
/// stepdown, waited for that resend (vendor/README.md, the optimistic first probe). Here
/// 126,364 bytes went from the transfer to the first proposal applied before the change
/// (half the log's entries again, to each follower), 894 after.
#[tokio::test(start_paused = true)]
async fn a_new_leader_sends_its_followers_only_the_entries_they_lack() {
    let cluster = Cluster::start(&[1, 2, 3], fast).await;
    let leader = cluster.leader(WAIT).await;
    let group = cluster.node(leader);
    let body = "x".repeat(1024);
    // Fewer than a snapshot's 5,000 entries: all of them stay in the log.
    let proposals = (0..2_000).map(|number| group.propose(Bytes::from(format!("{number}-{body}"))));
    let mut last = 0;
    for index in futures::future::join_all(proposals).await {
        last = last.max(index.expect("proposal committed"));
    }
    for node in [1, 2, 3] {
        cluster.wait_applied(node, last, WAIT).await;
    }
    let target = [1, 2, 3]
        .into_iter()
        .find(|node| *node != leader)
        .expect("a follower");
    let before = cluster.router.sent_bytes();
    group
        .transfer_leader(target)
        .await
        .expect("transfer triggered");
    let deadline = tokio::time::Instant::now() + WAIT;
    while cluster.leader(WAIT).await != target {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no handover to {target}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let index = cluster
        .node(target)
        .propose(Bytes::from_static(b"after the handover"))
        .await
        .expect("proposal committed");
    for node in [1, 2, 3] {
        cluster.wait_applied(node, index, WAIT).await;
    }
    let sent = cluster.router.sent_bytes() - before;
    assert!(
        sent < 16 << 10,
        "{sent} bytes sent from the transfer to the first proposal applied everywhere"
    );
    cluster.shutdown().await;
}

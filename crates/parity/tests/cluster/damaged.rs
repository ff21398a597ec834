//! Corrupt or truncated files on a minority node never cost an acknowledged message (issue 15,
//! the Jepsen finding against nats-server 2.12: "corrupt or truncated logs on a minority of
//! nodes winning elections").
//!
//! Three nodes, one R3 file stream led by L, followers V (the victim) and H. H is killed, so
//! the next messages are acknowledged by L and V alone. Then V is killed and its files for the
//! stream are damaged (its Raft log truncated, or its tail overwritten with garbage, with the
//! stream's last block too), L is killed, H and V restarted: V's vote decides whether H
//! (which never had the last messages) leads, and V's log may still look longer than H's. A
//! damaged node must neither vote for H nor lead: no publish is acknowledged at a sequence that
//! was already acknowledged, and once L is back every acknowledged message is there, V has them
//! all, and the stream takes publishes.
//!
//! Ours: opening the damaged log finds it ends before its recorded commit (nats-raft's
//! commit-index protection), V neither votes nor campaigns until caught up, so no publish is
//! acknowledged until L is back. Without that protection ours acknowledged 20 publishes at
//! sequences already acknowledged, in every case.
//!
//! One case cuts V's meta group log too, V being the meta leader: it led the term whose
//! committed entries it lost. Before nats-raft refused to resume such a leadership at start-up
//! (openraft's leader restore), V led the meta group again at once, without the stream's
//! assignment, and the stream was gone from the cluster ("stream not found") after L returned.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`),
//! where a loss or a stream that does not become whole again is printed, not asserted:
//! nats-server 2.15.1, in 6 runs (2 of each case), 3 times acknowledged publishes at sequences
//! it had acknowledged before (H and the damaged V elected a leader without them), and the other
//! 3 times took no publish but left a replica behind after L returned (`current: false`,
//! `active: 0`, 30-60 s later).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;

use crate::jetstream_r3_admin::paths_under;
use crate::jetstream_replicated::{create_r3, publish_until_acked, read_all};
use crate::membership::{lead_on, nodes, placed_without, stream_info, try_lead_on};
use crate::meta::{agreed_leader, index_of, ELECTION_BOUND};
use crate::support::connect;

const STREAM: &str = "DAMAGED";
const SUBJECT: &str = "damaged.x";
/// Acknowledged by all three.
const FIRST: u64 = 20;
/// Acknowledged by L and V only (H down).
const SECOND: u64 = 20;
/// How long publishes are tried while only H and the damaged V run, and how many at most.
const WINDOW: Duration = Duration::from_secs(8);
const LATE: usize = 20;

/// The stream has a leader and two current replicas again, once L is back, within this.
const WHOLE_BOUND: Duration = Duration::from_secs(30);

/// Waits until STREAM.INFO through `client` shows a leader and two current, online replicas;
/// the last answer as `Err` when that does not happen within [`WHOLE_BOUND`].
async fn whole(client: &async_nats::Client) -> Result<serde_json::Value, serde_json::Value> {
    let deadline = Instant::now() + WHOLE_BOUND;
    loop {
        let info = stream_info(client, STREAM).await;
        let replicas = info["cluster"]["replicas"].as_array().cloned();
        let settled = info["cluster"]["leader"]
            .as_str()
            .is_some_and(|leader| !leader.is_empty())
            && replicas.is_some_and(|replicas| {
                replicas.len() == 2
                    && replicas.iter().all(|replica| {
                        replica["current"] == true
                            && replica.get("offline") != Some(&serde_json::Value::Bool(true))
                    })
            });
        if settled {
            return Ok(info);
        }
        if Instant::now() > deadline {
            return Err(info);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What is done to V's files while it is down.
#[derive(Clone, Copy, Debug)]
enum Damage {
    /// Every Raft log file of the stream's group, and every message block of the stream, cut to
    /// this fraction (in percent) of its bytes.
    Truncated(u64),
    /// As [`Damage::Truncated`], the meta group's Raft log too.
    TruncatedWithMeta(u64),
    /// The last third of the last Raft log file of the stream's group, and of the stream's last
    /// message block, overwritten with garbage.
    Garbage,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_raft_log_is_cut_short_neither_votes_nor_leads_until_caught_up() {
    damaged_follower(Damage::Truncated(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_raft_log_lost_its_last_entries_does_not_lead_with_them_missing() {
    damaged_follower(Damage::Truncated(70)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_meta_and_stream_logs_are_cut_short_loses_no_acked_message() {
    damaged_follower(Damage::TruncatedWithMeta(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_last_records_fail_their_checksum_loses_no_acked_message() {
    damaged_follower(Damage::Garbage).await;
}

/// Every regular file under `root`, recursively, sorted.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = paths_under(root)
        .into_iter()
        .filter(|path| path.is_file())
        .collect();
    found.sort();
    found
}

/// The Raft log files of the stream groups under a node's store: ours `<group>/raft/log-*.seg`,
/// nats-server's `<group>/msgs/*.blk`, both under `_js_`, the meta group's (`_meta_`) only if
/// `with_meta`, the stream's own blocks (ours keeps them in `<group>/store/streams/`) left out.
fn group_logs(store: &Path, with_meta: bool) -> Vec<PathBuf> {
    files_under(store)
        .into_iter()
        .filter(|path| {
            let text = path.display().to_string();
            text.contains("/_js_/")
                && (with_meta || !text.contains("/_meta_/"))
                && !text.contains("/streams/")
                && path
                    .extension()
                    .is_some_and(|extension| extension == "seg" || extension == "blk")
        })
        .collect()
}

/// The message blocks of the stream (`streams/DAMAGED/msgs/*.blk`, ours and nats-server's).
fn stream_blocks(store: &Path) -> Vec<PathBuf> {
    files_under(store)
        .into_iter()
        .filter(|path| {
            path.display()
                .to_string()
                .contains(&format!("/streams/{STREAM}/"))
                && path.extension().is_some_and(|extension| extension == "blk")
        })
        .collect()
}

/// Overwrites the last third of `path` with a pattern no checksum accepts (not zeros, which a
/// store may take for preallocated space).
fn garble_tail(path: &Path) -> String {
    use std::io::{Seek, SeekFrom, Write};
    let length = std::fs::metadata(path).map_or(0, |metadata| metadata.len());
    let from = length - length / 3;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|error| panic!("open {}: {error}", path.display()));
    file.seek(SeekFrom::Start(from)).expect("seek");
    let garbage: Vec<u8> = (0..length - from)
        .map(|i| 0xA5 ^ (i as u8).wrapping_mul(31))
        .collect();
    file.write_all(&garbage).expect("write garbage");
    file.sync_all().expect("sync");
    format!("{}: bytes {from}..{length} garbage", path.display())
}

/// Damages node V's files (V is down); returns what was done, for the output.
fn damage(store: &Path, how: Damage) -> Vec<String> {
    let logs = group_logs(store, matches!(how, Damage::TruncatedWithMeta(_)));
    assert!(
        !logs.is_empty(),
        "no Raft log of the stream's group under {}: {:#?}",
        store.display(),
        files_under(store)
    );
    let blocks = stream_blocks(store);
    let mut done = Vec::new();
    match how {
        Damage::Truncated(percent) | Damage::TruncatedWithMeta(percent) => {
            for path in logs.iter().chain(&blocks) {
                let length = std::fs::metadata(path).map_or(0, |metadata| metadata.len());
                let kept = length * percent / 100;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .and_then(|file| {
                        file.set_len(kept)?;
                        file.sync_all()
                    })
                    .unwrap_or_else(|error| panic!("truncate {}: {error}", path.display()));
                done.push(format!("{}: {length} -> {kept} bytes", path.display()));
            }
        }
        Damage::Garbage => {
            if let Some(last) = logs.last() {
                done.push(garble_tail(last));
            }
            if let Some(last) = blocks.last() {
                done.push(garble_tail(last));
            }
        }
    }
    done
}

/// Publishes `late<n>` through `jetstream` (each until acknowledged or the window ends) while
/// only H and the damaged V run; returns what was acknowledged, by sequence.
async fn publish_in_window(jetstream: &async_nats::jetstream::Context) -> BTreeMap<u64, String> {
    let until = Instant::now() + WINDOW;
    let mut acked = BTreeMap::new();
    let mut n = 0;
    while Instant::now() < until && acked.len() < LATE {
        let payload = format!("late{n}");
        let message = Publish::build()
            .payload(payload.clone().into())
            .message_id(payload.clone());
        let attempt = match jetstream.send_publish(SUBJECT.to_string(), message).await {
            Ok(pending) => pending.await.ok(),
            Err(_) => None,
        };
        match attempt {
            Some(ack) => {
                acked.insert(ack.sequence, payload);
                n += 1;
            }
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    acked
}

/// The scenario of the module's documentation, with V's files damaged as `how` says.
async fn damaged_follower(how: Damage) {
    let (mut cluster, clients) = nodes(3).await;
    let (created, _) = create_r3(&clients[0], STREAM, "damaged.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    // Acknowledged messages by sequence.
    let mut acked: BTreeMap<u64, String> = BTreeMap::new();
    for n in 0..FIRST {
        let payload = format!("a{n}");
        let ack = publish_until_acked(&jetstream, SUBJECT, &payload, deadline).await;
        acked.insert(ack.sequence, payload);
    }
    let mut info = placed_without(&cluster, &clients[0], STREAM, &[], 3, FIRST).await;
    // With its meta log damaged, V is the meta leader (a stream follower): it led the term whose
    // entries it lost.
    let meta_leader = match how {
        Damage::TruncatedWithMeta(_) => {
            let meta_leader = agreed_leader(&cluster, &[0, 1, 2], 3, None)
                .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
            if info["cluster"]["leader"] == meta_leader.as_str() {
                let other = (0..3)
                    .map(|i| cluster.node(i).name.clone())
                    .find(|name| *name != meta_leader)
                    .expect("another server");
                lead_on(&clients[0], STREAM, &other).await;
                info = placed_without(&cluster, &clients[0], STREAM, &[], 3, FIRST).await;
            }
            Some(index_of(&cluster, &meta_leader))
        }
        _ => None,
    };
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let victim = meta_leader.unwrap_or(followers[0]);
    assert_ne!(victim, leader, "{info}");
    let healthy = (0..3)
        .find(|&i| i != leader && i != victim)
        .expect("a third node");

    // H down (killed, not paused: a paused process still has the kernel buffer what L sends
    // it, and reads it when resumed): the next messages are acknowledged by L and V only.
    cluster.kill9(healthy);
    let to_leader = connect(&cluster, leader).await;
    let jetstream = async_nats::jetstream::new(to_leader.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    for n in 0..SECOND {
        let payload = format!("b{n}");
        let ack = publish_until_acked(&jetstream, SUBJECT, &payload, deadline).await;
        acked.insert(ack.sequence, payload);
    }
    let last_acked = acked.keys().max().copied().unwrap_or(0);
    assert_eq!(last_acked, FIRST + SECOND, "{acked:?}");

    cluster.kill9(victim);
    let store = cluster
        .node(victim)
        .store_dir
        .clone()
        .expect("a JetStream store dir");
    let done = damage(&store, how);
    eprintln!(
        "{how:?}: damaged {} ({}):\n  {}",
        cluster.node(victim).name,
        cluster.node(victim).kind.label(),
        done.join("\n  ")
    );
    cluster.kill9(leader);
    cluster.restart(healthy);
    cluster.restart(victim);
    cluster
        .wait_for_mesh_of(&[victim, healthy], test_harness::cluster::MESH_TIMEOUT)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));

    // Only H and the damaged V run: nothing may be acknowledged at a sequence already given.
    let to_healthy = connect(&cluster, healthy).await;
    let late = publish_in_window(&async_nats::jetstream::new(to_healthy.clone())).await;
    // Ours says what opening the damaged log found; the protection must have been engaged.
    let found: Vec<String> = cluster
        .node(victim)
        .log()
        .lines()
        .filter(|line| line.contains("raft log"))
        .map(str::to_string)
        .collect();
    eprintln!("{how:?}: the damaged node's log:\n  {}", found.join("\n  "));
    let reused: Vec<u64> = late
        .keys()
        .copied()
        .filter(|&seq| seq <= last_acked)
        .collect();
    let lost_in_window = !reused.is_empty();
    if lost_in_window {
        let message = format!(
            "{how:?}: with L down, H and the damaged V acknowledged {late:?}: sequences {reused:?} \
             were acknowledged before as {:?}",
            reused.iter().map(|seq| &acked[seq]).collect::<Vec<_>>()
        );
        if test_harness::is_reference() {
            eprintln!("nats-server reused acknowledged sequences: {message}");
        } else {
            panic!("{message}\n{}", cluster.logs());
        }
    } else {
        eprintln!(
            "{how:?}: with L down, H and the damaged V acknowledged {} publishes (sequences {:?})",
            late.len(),
            late.keys().collect::<Vec<_>>()
        );
    }
    if !test_harness::is_reference() {
        // With its meta log cut, V does not know the stream until a meta leader tells it (none
        // while V does not vote): its meta group is the one protected then.
        let protected = match how {
            Damage::TruncatedWithMeta(_) => "group=_meta_",
            _ => "group=S-R3F",
        };
        assert!(
            found
                .iter()
                .any(|line| line.contains("until caught up") && line.contains(protected)),
            "{how:?}: the damaged node did not protect its recorded commit\n{}",
            cluster.logs()
        );
    }
    if lost_in_window {
        // Recorded above (nats-server only); what follows has nothing to stand on.
        return;
    }
    let mut expected = acked.clone();
    expected.extend(late);

    // L back: every acknowledged message, V with all of them, and the stream takes publishes.
    cluster.restart(leader);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let through = connect(&cluster, healthy).await;
    let info = match whole(&through).await {
        Ok(info) => info,
        Err(info) if test_harness::is_reference() => {
            eprintln!(
                "{how:?}: nats-server's stream not whole again within {WHOLE_BOUND:?} after L \
                 returned: {info}"
            );
            return;
        }
        Err(info) => panic!(
            "{how:?}: the stream not whole again within {WHOLE_BOUND:?}: {info}\n{}",
            cluster.logs()
        ),
    };
    let last = info["state"]["last_seq"].as_u64().unwrap_or(0);
    let stored = read_all(&through, STREAM, last).await;
    let missing: Vec<(u64, String, Option<String>)> = expected
        .iter()
        .filter(|(seq, payload)| stored.get(seq) != Some(payload))
        .map(|(seq, payload)| (*seq, payload.clone(), stored.get(seq).cloned()))
        .collect();
    if !missing.is_empty() {
        let message = format!(
            "{how:?}: acknowledged messages not stored as acknowledged (seq, acked, stored): \
             {missing:?}\nstream info: {info}"
        );
        if test_harness::is_reference() {
            eprintln!("nats-server lost acknowledged messages: {message}");
            return;
        }
        panic!("{message}\n{}", cluster.logs());
    }

    let jetstream = async_nats::jetstream::new(through.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut after = last;
    for n in 0..5 {
        let payload = format!("c{n}");
        let ack = publish_until_acked(&jetstream, SUBJECT, &payload, deadline).await;
        assert!(ack.sequence > after, "{payload} acked at {}", ack.sequence);
        after = ack.sequence;
        expected.insert(ack.sequence, payload);
    }
    placed_without(&cluster, &through, STREAM, &[], 3, None).await;
    let victim_name = cluster.node(victim).name.clone();
    match try_lead_on(&through, STREAM, &victim_name).await {
        Ok(()) => {}
        // nats-server 2.15.1 sometimes cannot hand the leadership to the damaged node: in a CI
        // parity pass (TruncatedWithMeta) its stream lost its leader and two replicas stayed
        // behind for the whole bound after every replica had been current.
        Err(info) if test_harness::is_reference() => {
            eprintln!("{how:?}: nats-server's damaged {victim_name} never led the stream: {info}");
            return;
        }
        Err(info) => panic!(
            "{how:?}: the damaged {victim_name} never led the stream: {info}\n{}",
            cluster.logs()
        ),
    }
    let on_victim = connect(&cluster, victim).await;
    let info = stream_info(&on_victim, STREAM).await;
    assert_eq!(info["cluster"]["leader"], victim_name.as_str(), "{info}");
    let stored = read_all(&on_victim, STREAM, after).await;
    for (seq, payload) in &expected {
        assert_eq!(
            stored.get(seq),
            Some(payload),
            "{how:?}: the damaged {victim_name}, leading, at {seq}"
        );
    }
    eprintln!(
        "{how:?}: {} acknowledged messages kept, the damaged {victim_name} leads with all of them",
        expected.len()
    );
}

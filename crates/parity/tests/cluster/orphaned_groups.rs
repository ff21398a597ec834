//! A replicated stream deleted while one of its servers is down: that server, restarted, holds
//! nothing of the stream or its Raft group once it caught up with the meta group, and a stream
//! still assigned to it keeps its files (the same group directory) through the restart. A group
//! directory that no assignment names at all (left by a crash between a removal and the
//! deletion of the files, or by a snapshot that caught the server up without the removal entry)
//! goes too, on ours: nats-server cleans up only the streams it recovers from disk (its
//! `checkForOrphans`), so there it is printed, not asserted.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use test_harness::cluster::Cluster;
use test_harness::is_reference;

use crate::jetstream_assignments::{answers, one_answer};
use crate::jetstream_r3_admin::directories_named;
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info, three_nodes};
use crate::meta::{agreed_leader, index_of, ELECTION_BOUND};

/// How soon a restarted server has removed what is no longer assigned to it.
const REMOVAL_BOUND: Duration = Duration::from_secs(20);
/// A group directory no assignment names (ours: `S-R<n>F-<suffix>`, as placement names groups).
const ORPHAN: &str = "S-R3F-orphan42";

pub(crate) fn store_of(cluster: &Cluster, index: usize) -> PathBuf {
    cluster
        .node(index)
        .store_dir
        .clone()
        .unwrap_or_else(|| panic!("node {index} has no store directory"))
}

/// The one directory named `name` under `root`.
fn only_directory(root: &Path, name: &str) -> PathBuf {
    let found = directories_named(root, name);
    assert_eq!(found.len(), 1, "{name} under {}: {found:?}", root.display());
    PathBuf::from(&found[0])
}

/// Waits (bounded by [`REMOVAL_BOUND`]) until none of `names` is a directory under `root`;
/// what is left otherwise.
pub(crate) async fn until_gone(root: &Path, names: &[&str]) -> Result<(), Vec<String>> {
    let deadline = Instant::now() + REMOVAL_BOUND;
    loop {
        let left: Vec<String> = names
            .iter()
            .flat_map(|name| directories_named(root, name))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(left);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn raft_group(info: &Value) -> String {
    let group = info["cluster"]["raft_group"].as_str().unwrap_or("");
    assert!(!group.is_empty(), "no raft_group: {info}");
    group.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_deleted_while_its_server_was_down_leaves_nothing_there_once_it_is_back() {
    let (mut cluster, names, clients) = three_nodes().await;
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let mut groups = Vec::new();
    for (stream, subject) in [("GONE", "gone.>"), ("KEPT", "kept.>")] {
        let (created, _) = create_r3(&clients[0], stream, subject).await;
        created.assert_created();
        for n in 0..5 {
            let subject = format!("{}.x", stream.to_lowercase());
            publish_until_acked(&jetstream, &subject, &format!("{stream}-{n}"), deadline).await;
        }
        groups.push(raft_group(
            &settled_info(&clients[0], stream, &names, 5).await,
        ));
    }
    let (gone_group, kept_group) = (groups[0].clone(), groups[1].clone());
    // A server that does not lead the meta group goes down: the other two delete GONE.
    let meta = tokio::task::block_in_place(|| agreed_leader(&cluster, &[0, 1, 2], 3, None))
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let down = (0..3)
        .find(|&i| i != index_of(&cluster, &meta))
        .expect("a follower");
    let through = (0..3).find(|&i| i != down).expect("a live node");
    let root = store_of(&cluster, down);
    only_directory(&root, &gone_group);
    let kept_dir = only_directory(&root, &kept_group);
    let kept_inode = std::fs::metadata(&kept_dir).expect("KEPT's group").ino();

    cluster.kill9(down);
    // The delete is answered by GONE's leader: one on the live nodes first (a delete applied
    // while the stream had none, its leader just killed, went unanswered in 1 run of 2).
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let info = answers(&clients[through], "$JS.API.STREAM.INFO.GONE", Value::Null).await;
        let leader = info
            .first()
            .and_then(|info| info["cluster"]["leader"].as_str())
            .unwrap_or("");
        if !leader.is_empty() && leader != names[down] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "GONE led by none but {}: {info:?}",
            names[down]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deleted = one_answer(&clients[through], "$JS.API.STREAM.DELETE.GONE", Value::Null).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    for live in (0..3).filter(|&i| i != down) {
        until_gone(&store_of(&cluster, live), &["GONE", &gone_group])
            .await
            .unwrap_or_else(|left| panic!("GONE still on a live node: {left:?}"));
    }
    // A group directory nothing assigns, beside KEPT's.
    let orphan = kept_dir.with_file_name(ORPHAN);
    std::fs::create_dir_all(orphan.join("raft")).expect("orphan directory");
    std::fs::write(orphan.join("raft").join("leftover"), b"x").expect("orphan file");

    cluster.restart(down);
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let what = if is_reference() {
        "nats-server"
    } else {
        "ours"
    };
    until_gone(&root, &["GONE", &gone_group])
        .await
        .unwrap_or_else(|left| panic!("{what}: GONE left on the restarted node: {left:?}"));
    let orphan_gone = until_gone(&root, &[ORPHAN]).await;
    println!("{what}: the unassigned group directory after the restart: {orphan_gone:?}");
    if !is_reference() {
        orphan_gone.unwrap_or_else(|left| panic!("not removed: {left:?}\n{}", cluster.logs()));
    }
    // KEPT's replica there is the one from before (not removed and made again), and it serves.
    let kept_now = only_directory(&root, &kept_group);
    assert_eq!(
        std::fs::metadata(&kept_now).expect("KEPT's group").ino(),
        kept_inode,
        "{what}: KEPT's group directory was made anew"
    );
    let restarted = crate::support::connect(&cluster, down).await;
    let jetstream = async_nats::jetstream::new(restarted.clone());
    publish_until_acked(
        &jetstream,
        "kept.x",
        "KEPT-after",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    settled_info(&restarted, "KEPT", &names, 6).await;
    let stepdown = one_answer(
        &restarted,
        "$JS.API.STREAM.LEADER.STEPDOWN.KEPT",
        json!({"placement": {"preferred": names[down]}}),
    )
    .await;
    println!("{what}: KEPT's leadership to {}: {stepdown}", names[down]);
    let info = settled_info(&restarted, "KEPT", &names, 6).await;
    if info["cluster"]["leader"] == names[down].as_str() {
        let first = one_answer(&restarted, "$JS.API.STREAM.MSG.GET.KEPT", json!({"seq": 1})).await;
        assert!(first["message"]["data"].is_string(), "{first}");
    }
    let gone = one_answer(&restarted, "$JS.API.STREAM.INFO.GONE", Value::Null).await;
    assert_eq!(gone["error"]["err_code"], 10059, "{gone}");
}

//! A full disk in a cluster (issue 15, the brief's "full disks"): three nodes, each with its
//! JetStream store on its own `powerloss-fs` disk, one of them filled (capacity set to what it
//! uses). Every request is answered, promptly, with success or an error; nothing acknowledged is
//! lost; the cluster recovers by itself once space returns (capacity raised), without restarts.
//!
//! - an R3 `STREAM.CREATE` through a node with space and through the full node;
//! - an R3 stream whose leader's disk fills: publishes go on answered, through a new leader;
//! - an R3 stream whose leader's Raft log fills first (its store still writes): the same, the
//!   new leader taking publishes within a failover's time;
//! - an R3 stream whose follower's disk fills: the quorum of two takes publishes, the follower
//!   catches up afterwards;
//! - the meta leader's disk fills: an API request is answered, other streams keep working.
//!
//! Against nats-server the shared promises are asserted (nothing acknowledged lost) and what it
//! answers is printed; ours is held to "always answered" too. Needs root and /dev/fuse; elsewhere
//! it says so and passes.

use std::time::{Duration, Instant};

use async_nats::Client;
use powerloss_fs::{available, Disk, Mount, SyncModel};
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};
use test_harness::is_reference;

use crate::fault_schedule::{create_r3_stream, healed, leader_name, node_names, SETTLE};
use crate::jetstream_replicated::base64_decode;
use crate::meta::{agreed_leader, index_of, kind, SYSTEM_ACCOUNT};

const ROOMY: u64 = 1 << 30;
/// How soon a request must be answered, whatever the answer.
const PROMPT: Duration = Duration::from_secs(5);
/// How long publishes run with a full disk: past a new stream leader's election when the old
/// one cannot hand over (openraft's lease and election timeout, 4-8 s).
const FULL_FOR: Duration = Duration::from_secs(10);

/// Three nodes on their own disks (bound before the cluster, so dropped after it).
struct Setup {
    disks: Vec<Disk>,
    _mounts: Vec<Mount>,
    _dirs: Vec<tempfile::TempDir>,
}

fn start(name: &str) -> Option<(Setup, Cluster, Vec<String>)> {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return None;
    }
    let model = if is_reference() {
        SyncModel::Journaled
    } else {
        SyncModel::Strict
    };
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("mountpoint"))
        .collect();
    let disks: Vec<_> = (0..3).map(|_| Disk::new(ROOMY, model)).collect();
    let mounts = disks
        .iter()
        .zip(&dirs)
        .map(|(disk, dir)| disk.mount(dir.path()).expect("mount"))
        .collect();
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = name.into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = SYSTEM_ACCOUNT.into();
    options.route_ping_interval = Some(Duration::from_millis(500));
    options.store_dirs = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let cluster = Cluster::start(options);
    agreed_leader(&cluster, &[0, 1, 2], 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let names = node_names(&cluster);
    Some((
        Setup {
            disks,
            _mounts: mounts,
            _dirs: dirs,
        },
        cluster,
        names,
    ))
}

impl Setup {
    fn fill(&self, index: usize) {
        let disk = &self.disks[index];
        disk.set_capacity(disk.stats().used_bytes);
    }

    /// Only the Raft logs of node `index` fill: both servers keep them below a directory
    /// `_js_` (`<store>/<system account>/_js_/<group>/`), the streams' stores elsewhere.
    fn fill_raft_logs(&self, index: usize) {
        self.disks[index].set_full_under(Some("_js_"));
    }

    fn free(&self, index: usize) {
        self.disks[index].set_capacity(ROOMY);
        self.disks[index].set_full_under(None);
    }
}

async fn connect(cluster: &Cluster, index: usize) -> Client {
    async_nats::connect(cluster.url(index))
        .await
        .unwrap_or_else(|error| panic!("connect to {index}: {error}"))
}

/// One request: its JSON answer, or `None` when none came within `wait` ("no responders"
/// reads as `{"no_responders": true}`: nobody listens, which the client is told at once).
async fn ask(client: &Client, subject: &str, body: &str, wait: Duration) -> Option<Value> {
    let request = client.request(subject.to_string(), body.to_string().into());
    match tokio::time::timeout(wait, request).await {
        Ok(Ok(reply)) => Some(serde_json::from_slice(&reply.payload).unwrap_or(Value::Null)),
        Ok(Err(error)) if error.kind() == async_nats::RequestErrorKind::NoResponders => {
            Some(json!({"no_responders": true}))
        }
        _ => None,
    }
}

/// What one publish got.
#[derive(Debug, Default)]
struct Tally {
    acked: Vec<(u64, String)>,
    errors: Vec<Value>,
    /// No stream leader listening (between leaders): told at once.
    no_responders: usize,
    /// No answer within [`PROMPT`].
    unanswered: usize,
    /// The payloads of those.
    unanswered_payloads: Vec<String>,
    /// The longest time between two acknowledgements (or from the start of a
    /// [`Tally::publish_for`] to its first one), less the waits of unanswered publishes: how
    /// long no leader took publishes.
    longest_gap: Duration,
}

impl Tally {
    async fn publish(&mut self, client: &Client, subject: &str, payload: String, wait: Duration) {
        let sent = Instant::now();
        let answer = ask(client, subject, &payload, wait).await;
        if answer.is_none() {
            println!(
                "unanswered {payload:?}, sent {:?} before the check",
                sent.elapsed()
            );
        }
        match answer {
            Some(answer) if answer["no_responders"] == true => self.no_responders += 1,
            Some(answer) => match answer["seq"].as_u64() {
                Some(seq) if answer.get("error").is_none() => self.acked.push((seq, payload)),
                _ => self.errors.push(answer),
            },
            None => {
                self.unanswered += 1;
                self.unanswered_payloads.push(payload);
            }
        }
    }

    /// Publishes for `period`, one at a time: how many were acknowledged in it.
    async fn publish_for(
        &mut self,
        client: &Client,
        subject: &str,
        tag: &str,
        period: Duration,
    ) -> usize {
        let before = self.acked.len();
        let end = Instant::now() + period;
        let mut last_ack = Instant::now();
        let mut n = 0;
        while Instant::now() < end {
            let answered = self.acked.len() + self.errors.len();
            let (acked, unanswered, sent) = (self.acked.len(), self.unanswered, Instant::now());
            self.publish(client, subject, format!("{tag}-{n}"), PROMPT)
                .await;
            if self.unanswered > unanswered {
                // Its publisher's wait, not a time without a leader (counted on its own).
                last_ack += sent.elapsed();
            }
            if self.acked.len() > acked {
                self.longest_gap = self.longest_gap.max(last_ack.elapsed());
                last_ack = Instant::now();
            }
            n += 1;
            if self.acked.len() + self.errors.len() == answered {
                // Between leaders: no hammering.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        self.acked.len() - before
    }

    fn summary(&self) -> String {
        let codes: Vec<String> = self
            .errors
            .iter()
            .map(|e| format!("{} {}", e["error"]["err_code"], e["error"]["description"]))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        format!(
            "{} acked, {} errors {codes:?}, {} no responders, {} unanswered, longest without an ack {:?}",
            self.acked.len(),
            self.errors.len(),
            self.no_responders,
            self.unanswered,
            self.longest_gap
        )
    }
}

/// Publishes through `client` until one is acknowledged (bounded by [`SETTLE`]).
async fn until_acked(tally: &mut Tally, client: &Client, subject: &str, tag: &str) {
    let deadline = Instant::now() + SETTLE;
    let before = tally.acked.len();
    let mut n = 0;
    while tally.acked.len() == before {
        assert!(
            Instant::now() < deadline,
            "{tag}: no publish acknowledged in {SETTLE:?}: {}",
            tally.summary()
        );
        tally
            .publish(client, subject, format!("{tag}-{n}"), PROMPT)
            .await;
        n += 1;
        if tally.acked.len() == before {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Every acknowledged payload at its sequence, read from the stream's leader.
async fn all_present(client: &Client, stream: &str, acked: &[(u64, String)]) -> Result<(), String> {
    let subject = format!("$JS.API.STREAM.MSG.GET.{stream}");
    for (seq, payload) in acked {
        let deadline = Instant::now() + SETTLE;
        loop {
            let body = json!({ "seq": seq }).to_string();
            let answer = ask(client, &subject, &body, Duration::from_secs(2)).await;
            if let Some(data) = answer
                .as_ref()
                .and_then(|answer| answer["message"]["data"].as_str())
            {
                let found = String::from_utf8_lossy(&base64_decode(data)).into_owned();
                if &found != payload {
                    return Err(format!(
                        "{stream} {seq}: {found:?}, acknowledged {payload:?}"
                    ));
                }
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{stream} {seq} acknowledged, not read back: {answer:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// The sequence `payload` is stored at in `stream`, if it is (read one message at a time).
async fn stored_at(client: &Client, stream: &str, payload: &str) -> Option<u64> {
    let info = ask(client, &stream_info(stream), "", PROMPT).await?;
    let last = info["state"]["last_seq"].as_u64()?;
    let subject = format!("$JS.API.STREAM.MSG.GET.{stream}");
    for seq in (1..=last).rev() {
        let body = json!({ "seq": seq }).to_string();
        let answer = ask(client, &subject, &body, PROMPT).await;
        if let Some(data) = answer.as_ref().and_then(|a| a["message"]["data"].as_str()) {
            if base64_decode(data) == payload.as_bytes() {
                return Some(seq);
            }
        }
    }
    None
}

fn stream_info(stream: &str) -> String {
    format!("$JS.API.STREAM.INFO.{stream}")
}

/// An R3 create through each of `through`'s clients while node `full`'s disk is full: each is
/// answered within [`PROMPT`]; what was created heals once space returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_create_with_a_full_disk_is_answered() {
    let Some((setup, cluster, names)) = start("fulldiskcreate") else {
        return;
    };
    let meta_leader = agreed_leader(&cluster, &[0, 1, 2], 3, None).expect("meta leader");
    // A full node that does not lead the meta group (that case is its own test).
    let full = (0..3)
        .find(|&i| names[i] != meta_leader)
        .expect("a follower");
    let healthy = (0..3).find(|&i| i != full).expect("another node");
    setup.fill(full);
    let mut created = Vec::new();
    for (through, stream) in [(healthy, "VIAHEALTHY"), (full, "VIAFULL")] {
        let client = connect(&cluster, through).await;
        let body = json!({"name": stream, "subjects": [format!("{}.>", stream.to_lowercase())],
                          "num_replicas": 3, "storage": "file"});
        let sent = Instant::now();
        let answer = ask(
            &client,
            &format!("$JS.API.STREAM.CREATE.{stream}"),
            &body.to_string(),
            PROMPT * 2,
        )
        .await;
        println!(
            "{} R3 create through {} with {} full: {answer:?} after {:?}",
            if is_reference() {
                "nats-server"
            } else {
                "ours"
            },
            names[through],
            names[full],
            sent.elapsed()
        );
        if !is_reference() {
            let answer = answer.unwrap_or_else(|| {
                panic!(
                    "{stream}: no answer in {:?}\n{}",
                    PROMPT * 2,
                    cluster.logs()
                )
            });
            assert!(
                sent.elapsed() < PROMPT,
                "{stream}: answered after {:?}",
                sent.elapsed()
            );
            if answer.get("error").is_none() {
                created.push(stream);
            }
        }
    }
    setup.free(full);
    let client = connect(&cluster, healthy).await;
    for stream in created {
        let subject = format!("{}.a", stream.to_lowercase());
        let mut tally = Tally::default();
        until_acked(&mut tally, &client, &subject, stream).await;
        healed(&client, &stream_info(stream), &names)
            .await
            .unwrap_or_else(|error| panic!("{stream} after space returned: {error}"));
        all_present(&client, stream, &tally.acked)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
    }
}

/// What fills on which node of an R3 stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fill {
    /// The leader's whole disk.
    Leader,
    /// A follower's whole disk.
    Follower,
    /// Only the leader's Raft logs: its store goes on writing.
    LeaderRaftLog,
}

/// How long an R3 stream may take no publishes when its leader's Raft log fills (a failover:
/// the leader hands over at once, the new one elected in about a second; it was 4-8 s when the
/// leader waited for its followers' election timeout).
const RAFT_LOG_FAILOVER: Duration = Duration::from_secs(3);

/// The disk of an R3 stream's leader (or of a follower) fills while the stream takes publishes
/// through a node that stays healthy; then space returns.
async fn stream_node_fills(cluster_name: &str, stream: &str, fill: Fill) {
    let fill_leader = fill != Fill::Follower;
    let Some((setup, cluster, names)) = start(cluster_name) else {
        return;
    };
    let subject = format!("{}.a", stream.to_lowercase());
    let control = connect(&cluster, 0).await;
    create_r3_stream(&control, stream, &format!("{}.>", stream.to_lowercase())).await;
    let info = healed(&control, &stream_info(stream), &names)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let leader = index_of(&cluster, &leader_name(&info));
    let full = if fill_leader {
        leader
    } else {
        (leader + 1) % 3
    };
    let through = (0..3).find(|&i| i != full).expect("a node with space");
    let client = connect(&cluster, through).await;
    let mut tally = Tally::default();
    let before = tally
        .publish_for(&client, &subject, "before", Duration::from_secs(1))
        .await;
    assert!(
        before > 0,
        "no publish before the fault: {}",
        tally.summary()
    );

    if fill == Fill::LeaderRaftLog {
        setup.fill_raft_logs(full);
    } else {
        setup.fill(full);
    }
    let mut during = Tally::default();
    let acked_full = during
        .publish_for(&client, &subject, "during", FULL_FOR)
        .await;
    let what = if is_reference() {
        "nats-server"
    } else {
        "ours"
    };
    println!(
        "{what}: {} ({fill:?}) full, {}: {}",
        names[full],
        stream,
        during.summary()
    );
    if !is_reference() {
        // Every publish answered, also the one sent on the old leader's first refusal: the
        // leader withdraws the stream's subscriptions before it refuses (10077, 10009), so that
        // publish finds no interest at its server ("no responders") or the new leader's. Until
        // Session 25 the withdrawal followed the refusal, and that publish, crossing the route
        // meanwhile, was dropped unanswered in 4 of 10 runs of the two leader cases.
        assert!(
            during.unanswered == 0,
            "publishes unanswered with a full disk: {}\n{}",
            during.summary(),
            cluster.logs()
        );
        // The quorum of two with space takes publishes (a new leader's election first).
        assert!(
            acked_full > 0,
            "no publish acknowledged: {}",
            during.summary()
        );
        if fill == Fill::LeaderRaftLog {
            assert!(
                during.longest_gap < RAFT_LOG_FAILOVER,
                "no leader took publishes for {:?}: {}\n{}",
                during.longest_gap,
                during.summary(),
                cluster.logs()
            );
        }
    }
    tally.acked.extend(during.acked.iter().cloned());

    setup.free(full);
    until_acked(&mut tally, &client, &subject, "after").await;
    tally
        .publish_for(&client, &subject, "after-more", Duration::from_secs(1))
        .await;
    let healed_info = healed(&control, &stream_info(stream), &names).await;
    println!(
        "{what}: after space returned: {:?}",
        healed_info.as_ref().map(|i| &i["cluster"])
    );
    if !is_reference() {
        healed_info.unwrap_or_else(|error| panic!("not healed: {error}\n{}", cluster.logs()));
    }
    all_present(&client, stream, &tally.acked)
        .await
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    for payload in &during.unanswered_payloads {
        let seq = stored_at(&client, stream, payload).await;
        println!("{what}: unanswered {payload:?} stored at {seq:?}");
    }
    if !is_reference() {
        // The node that was full serves the whole stream as leader too (it caught up).
        let caught_up = ask(
            &control,
            &format!("$JS.API.STREAM.LEADER.STEPDOWN.{stream}"),
            &json!({"placement": {"preferred": names[full]}}).to_string(),
            PROMPT,
        )
        .await;
        println!("stepdown to {}: {caught_up:?}", names[full]);
        if caught_up.as_ref().is_some_and(|a| a["success"] == true) {
            all_present(&client, stream, &tally.acked)
                .await
                .unwrap_or_else(|error| panic!("read from {}: {error}", names[full]));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a disk filled and freed, 15-20 s on ours, 60-85 s on nats-server"]
async fn stream_leader_disk_fills() {
    stream_node_fills("fulldiskleader", "FULLLEADER", Fill::Leader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a disk filled and freed, 15-20 s on ours, 60-85 s on nats-server"]
async fn stream_leader_raft_log_fills() {
    stream_node_fills("fulllogleader", "FULLLOGLEADER", Fill::LeaderRaftLog).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a disk filled and freed, 15-20 s on ours, 60-85 s on nats-server"]
async fn stream_follower_disk_fills() {
    stream_node_fills("fulldiskfollower", "FULLFOLLOWER", Fill::Follower).await;
}

/// The meta leader's disk fills: a create is answered (error or success through a new meta
/// leader), an existing R3 stream keeps taking publishes through a healthy node (through a new
/// stream leader when the full node led it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): a disk filled and freed, 15-20 s on ours, 60-85 s on nats-server"]
async fn meta_leader_disk_fills() {
    let Some((setup, cluster, names)) = start("fulldiskmeta") else {
        return;
    };
    let meta_leader = index_of(
        &cluster,
        &agreed_leader(&cluster, &[0, 1, 2], 3, None).expect("meta leader"),
    );
    let healthy = (meta_leader + 1) % 3;
    let control = connect(&cluster, healthy).await;
    create_r3_stream(&control, "BESIDE", "beside.>").await;
    healed(&control, &stream_info("BESIDE"), &names)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let mut tally = Tally::default();
    until_acked(&mut tally, &control, "beside.a", "before").await;

    setup.fill(meta_leader);
    let what = if is_reference() {
        "nats-server"
    } else {
        "ours"
    };
    let sent = Instant::now();
    let body = json!({"name": "DURING", "subjects": ["during.>"], "num_replicas": 3,
                      "storage": "file"});
    let answer = ask(
        &control,
        "$JS.API.STREAM.CREATE.DURING",
        &body.to_string(),
        PROMPT * 2,
    )
    .await;
    println!(
        "{what}: create with the meta leader {} full: {answer:?} after {:?}",
        names[meta_leader],
        sent.elapsed()
    );
    if !is_reference() {
        assert!(
            answer.is_some() && sent.elapsed() < PROMPT,
            "create unanswered in {PROMPT:?} ({:?})\n{}",
            sent.elapsed(),
            cluster.logs()
        );
    }
    let mut during = Tally::default();
    let acked = during
        .publish_for(&control, "beside.a", "during", FULL_FOR)
        .await;
    println!(
        "{what}: BESIDE with the meta leader full: {}",
        during.summary()
    );
    if !is_reference() {
        // The stream's leader may be the full node: as in `stream_node_fills`, every publish is
        // answered while its leadership moves.
        assert!(during.unanswered == 0, "{}", during.summary());
        assert!(acked > 0, "{}", during.summary());
    }
    tally.acked.extend(during.acked.iter().cloned());

    setup.free(meta_leader);
    until_acked(&mut tally, &control, "beside.a", "after").await;
    let meta = agreed_leader(&cluster, &[0, 1, 2], 3, None);
    println!("{what}: meta leader after space returned: {meta:?}");
    if !is_reference() {
        meta.unwrap_or_else(|error| panic!("{error}"));
        healed(&control, &stream_info("BESIDE"), &names)
            .await
            .unwrap_or_else(|error| panic!("BESIDE not healed: {error}\n{}", cluster.logs()));
        // The meta group takes requests again.
        let answer = ask(
            &control,
            "$JS.API.STREAM.CREATE.AFTER",
            &json!({"name": "AFTER", "subjects": ["after.>"], "num_replicas": 3}).to_string(),
            PROMPT * 2,
        )
        .await;
        assert!(
            answer.as_ref().is_some_and(|a| a.get("error").is_none()),
            "create after space returned: {answer:?}"
        );
    }
    all_present(&control, "BESIDE", &tally.acked)
        .await
        .unwrap_or_else(|error| panic!("{what}: {error}"));
}

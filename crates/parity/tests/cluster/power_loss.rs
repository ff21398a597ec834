//! Power loss in a replicated cluster (issue 15's fault suite, after Jepsen's finding on
//! nats-server 2.12: acknowledged writes lost under power loss and pauses, because a follower
//! acknowledges an append before its log is on disk). Three nodes, each with its JetStream store
//! on its own `powerloss-fs` disk; publishers with unique payloads (the `jetstream_faults`
//! publishers: one at a time, retried with the payload as message id) on an R3 file stream
//! through every node, while cycles of power cuts run:
//!
//! - **lone leader / lone follower**: two nodes SIGSTOPped, the third (the stream leader, or a
//!   follower) keeps receiving publishes for a while (it cannot commit alone: what it
//!   acknowledged is recorded), then its power is cut (kill -9, unmount, everything not fsynced
//!   dropped, mount, restart), then the two are resumed;
//! - **all**: the three nodes cut at once under load.
//!
//! After each cycle: the group heals and publishes resume (bounded, the time is recorded), the
//! stream's last sequence has not moved below what it was or what was acknowledged before the
//! cut, and every payload acknowledged so far is read back at its acknowledged sequence. At the
//! end every replica leads in turn and is read whole, and `jetstream_faults`' checker runs (lost,
//! conflicting, backwards, unexpected, duplicates, divergent replicas).
//!
//! Ours (default durability of R>1: a PubAck only once a quorum has the entry fdatasynced in its
//! Raft log) is held to nothing lost, on the strict POSIX disk model (a new name needs its
//! directory's fsync). nats-server runs on the journaled model (any fsync commits every
//! directory change, as ext4 does: it does not fsync directories and would otherwise lose
//! whole streams under any policy) and is expected to lose acknowledged writes: against it the
//! figures are printed, not asserted (see each test). Needs root and /dev/fuse; elsewhere it
//! says so and passes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::Client;
use futures::StreamExt;
use powerloss_fs::{available, Disk, Mount, SyncModel};
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, ClusterOptions, Topology};
use test_harness::is_reference;

use crate::fault_schedule::{
    create_r3_stream, healed, index_named, leader_name, node_names, progress_within,
    roaming_client, start_publishers, History, SETTLE,
};
use crate::jetstream_faults::{check, read_every_replica};
use crate::jetstream_replicated::{base64_decode, lock};
use crate::meta::{agreed_leader, kind, SYSTEM_ACCOUNT};

const STREAM: &str = "POWERLOSS";
const SUBJECT: &str = "powerloss.queue";
const STREAM_INFO: &str = "$JS.API.STREAM.INFO.POWERLOSS";
/// How long the publishers run between the group healing and the next cut.
const LOAD: Duration = Duration::from_secs(2);
/// How long the lone node takes publishes with the two others paused (past our 2 s step-down
/// of a leader without its quorum).
const ALONE: Duration = Duration::from_secs(3);

/// One cycle's power cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// The stream leader alone (the two others paused), then cut.
    LoneLeader,
    /// A follower alone (the two others paused), then cut.
    LoneFollower,
    /// The three nodes at once.
    All,
}

/// Each node's disk and its mount over the node's store dir.
struct Disks {
    disks: Vec<Disk>,
    mounts: Vec<Option<Mount>>,
    dirs: Vec<tempfile::TempDir>,
}

impl Disks {
    fn new(count: usize, model: SyncModel) -> Disks {
        let dirs: Vec<_> = (0..count)
            .map(|_| tempfile::tempdir().expect("mountpoint"))
            .collect();
        let disks: Vec<_> = (0..count).map(|_| Disk::new(1 << 30, model)).collect();
        let mounts = disks
            .iter()
            .zip(&dirs)
            .map(|(disk, dir)| Some(disk.mount(dir.path()).expect("mount")))
            .collect();
        Disks {
            disks,
            mounts,
            dirs,
        }
    }

    /// Node `index`'s process must be gone: unmount, drop what was not synced, mount again.
    fn cut(&mut self, index: usize) {
        if let Some(mount) = self.mounts[index].take() {
            mount.unmount().expect("unmount");
        }
        self.disks[index].cut_power();
        self.mounts[index] = Some(
            self.disks[index]
                .mount(self.dirs[index].path())
                .expect("mount again"),
        );
    }
}

/// What one cycle measured.
#[derive(Debug)]
struct CycleFigures {
    cut: Cut,
    /// Acknowledged publishes so far (all cycles).
    acked: usize,
    /// Of them, publishes sent after the two others were paused (lone cycles).
    acked_alone: usize,
    /// Acknowledged publishes not at their sequence after this cycle.
    lost: usize,
    /// From the last node back to 20 more acknowledged publishes.
    resumed: Option<Duration>,
    /// The stream's last sequence (or highest acknowledged one) before the cut, and after.
    last_before: u64,
    last_after: u64,
}

/// A run's figures and the first thing that kept the cluster from coming back (nats-server).
#[derive(Debug, Default)]
struct Report {
    cycles: Vec<CycleFigures>,
    stuck: Option<String>,
    summary: Option<String>,
    clean: Option<bool>,
}

impl Report {
    fn lost(&self) -> usize {
        self.cycles.iter().map(|c| c.lost).max().unwrap_or(0)
    }

    fn print(&self, what: &str) {
        for (n, c) in self.cycles.iter().enumerate() {
            eprintln!(
                "{what} cycle {n} {:?}: {} acked ({} sent while alone), {} lost, last seq {} -> {}, \
                 resumed in {:?}",
                c.cut, c.acked, c.acked_alone, c.lost, c.last_before, c.last_after, c.resumed
            );
        }
        let backwards = self
            .cycles
            .iter()
            .filter(|c| c.last_after < c.last_before)
            .count();
        let resumed: Vec<Duration> = self.cycles.iter().filter_map(|c| c.resumed).collect();
        let slowest = resumed.iter().max();
        let mean =
            (!resumed.is_empty()).then(|| resumed.iter().sum::<Duration>() / resumed.len() as u32);
        eprintln!(
            "{what}: {} cycles, {} acked, at most {} lost, last sequence backwards in {backwards} \
             cycles, resumed in mean {mean:.1?} max {slowest:.1?}; stuck: {:?}; final check: {:?}",
            self.cycles.len(),
            self.cycles.last().map_or(0, |c| c.acked),
            self.lost(),
            self.stuck,
            self.summary
        );
    }
}

/// The payload stored at `seq` (`Ok(None)`: no message there), from the stream's leader; an
/// error when no answer with the message or its absence came within the settle bound, or the
/// stream is gone (nats-server after a cut of every node).
async fn stored_at(client: &Client, seq: u64) -> Result<Option<String>, String> {
    let subject = format!("$JS.API.STREAM.MSG.GET.{STREAM}");
    let body = json!({ "seq": seq }).to_string();
    let deadline = Instant::now() + SETTLE;
    let mut last = String::new();
    while Instant::now() < deadline {
        let reply = tokio::time::timeout(
            Duration::from_secs(2),
            client.request(subject.clone(), body.clone().into()),
        )
        .await;
        if let Ok(Ok(reply)) = &reply {
            let answer: Value = serde_json::from_slice(&reply.payload).unwrap_or(Value::Null);
            if answer["error"]["err_code"] == 10037 {
                return Ok(None);
            }
            if answer["error"]["err_code"] == 10059 {
                return Err(format!("stream gone at MSG.GET {seq}: {answer}"));
            }
            if let Some(data) = answer["message"]["data"].as_str() {
                return Ok(Some(
                    String::from_utf8_lossy(&base64_decode(data)).into_owned(),
                ));
            }
        }
        last = format!("{reply:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("MSG.GET {seq} unanswered: {last}"))
}

/// Every acknowledged (payload, sequence) read back: how many are not at their sequence.
async fn lost_of(client: &Client, acked: &[(String, u64)]) -> Result<usize, String> {
    let wanted: BTreeMap<u64, Vec<&str>> =
        acked
            .iter()
            .fold(BTreeMap::new(), |mut wanted, (payload, seq)| {
                wanted.entry(*seq).or_insert_with(Vec::new).push(payload);
                wanted
            });
    let stored: Vec<(u64, Result<Option<String>, String>)> =
        futures::stream::iter(wanted.keys().copied())
            .map(|seq| async move { (seq, stored_at(client, seq).await) })
            .buffered(32)
            .collect()
            .await;
    let mut lost = 0;
    for (seq, found) in stored {
        let found = found?;
        lost += wanted[&seq]
            .iter()
            .filter(|payload| found.as_deref() != Some(**payload))
            .count();
    }
    Ok(lost)
}

/// The group healed and publishing again: the healed answer and how long publishes took to
/// resume (20 more acknowledged) from `back`.
async fn recovered(
    cluster: &Cluster,
    control: &Client,
    names: &[String],
    history: &Mutex<History>,
    back: Instant,
) -> Result<(Value, Duration), String> {
    tokio::task::block_in_place(|| cluster.wait_for_mesh())?;
    let info = healed(control, STREAM_INFO, names).await?;
    progress_within(history).await?;
    Ok((info, back.elapsed()))
}

/// One STREAM.INFO answer, whatever it says (`null` when none came).
async fn stream_info_answer(control: &Client) -> Value {
    match tokio::time::timeout(
        Duration::from_secs(2),
        control.request(STREAM_INFO, "".into()),
    )
    .await
    {
        Ok(Ok(reply)) => serde_json::from_slice(&reply.payload).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn last_seq(info: &Value) -> u64 {
    info["state"]["last_seq"].as_u64().unwrap_or(0)
}

/// Runs `cuts` under load and checks after each; `None` without FUSE.
async fn run(cuts: &[Cut], sync_always: bool) -> Option<Report> {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return None;
    }
    let model = if is_reference() {
        SyncModel::Journaled
    } else {
        SyncModel::Strict
    };
    // Dropped after the cluster (declared first): no process holds the mounts then.
    let mut disks = Disks::new(3, model);
    let mut options = ClusterOptions::new(&[kind(); 3], Topology::FullMesh);
    options.name = "powerloss".into();
    options.jetstream = vec![0, 1, 2];
    options.extra_config = SYSTEM_ACCOUNT.into();
    if sync_always {
        options
            .extra_config
            .push_str("jetstream {\n  sync_interval: always\n}\n");
    }
    options.route_ping_interval = Some(Duration::from_millis(500));
    options.store_dirs = disks.dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let mut cluster = Cluster::start(options);
    agreed_leader(&cluster, &[0, 1, 2], 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let names = node_names(&cluster);
    let control = roaming_client(&cluster, 0).await;
    create_r3_stream(&control, STREAM, "powerloss.>").await;

    let stop = Arc::new(AtomicBool::new(false));
    let history: Arc<Mutex<History>> = Arc::default();
    let publishers = start_publishers(&cluster, 3, SUBJECT, &stop, &history).await;
    let mut report = Report::default();
    let mut info = healed(&control, STREAM_INFO, &names)
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    for (n, &cut) in cuts.iter().enumerate() {
        tokio::time::sleep(LOAD).await;
        let leader = index_named(&names, &leader_name(&info));
        let mut acked_alone = 0;
        let last_before = {
            let history = lock(&history);
            let acked = history.acked.iter().map(|a| a.2).max().unwrap_or(0);
            acked.max(last_seq(&info))
        };
        println!("cycle {n} {cut:?}, leader {}", names[leader]);
        match cut {
            Cut::LoneLeader | Cut::LoneFollower => {
                let lone = if cut == Cut::LoneLeader {
                    leader
                } else {
                    (leader + 1) % 3
                };
                let others: Vec<usize> = (0..3).filter(|&i| i != lone).collect();
                for &other in &others {
                    cluster.pause(other);
                }
                let paused = Instant::now();
                tokio::time::sleep(ALONE).await;
                cluster.kill9(lone);
                acked_alone = lock(&history)
                    .times
                    .iter()
                    .filter(|(sent, _)| *sent >= paused)
                    .count();
                disks.cut(lone);
                tokio::task::block_in_place(|| cluster.restart(lone));
                for &other in &others {
                    cluster.resume(other);
                }
            }
            Cut::All => {
                for node in 0..3 {
                    cluster.kill9(node);
                }
                for node in 0..3 {
                    disks.cut(node);
                }
                tokio::task::block_in_place(|| {
                    for node in 0..3 {
                        cluster.restart(node);
                    }
                });
            }
        }
        let back = Instant::now();
        let (healed_info, resumed) =
            match recovered(&cluster, &control, &names, &history, back).await {
                Ok(recovered) => recovered,
                // nats-server after a cut: its unsynced Raft state can keep the group (or the
                // stream itself) from coming back; that is a figure of the run, not a hang.
                Err(error) if is_reference() => {
                    // Lost for sure: everything when the stream is gone, else every
                    // acknowledged sequence past the last one it still holds.
                    let answer = stream_info_answer(&control).await;
                    let gone = answer["error"]["err_code"] == 10059;
                    let last_after = last_seq(&answer);
                    let (acked, lost) = {
                        let history = lock(&history);
                        let lost = history
                            .acked
                            .iter()
                            .filter(|(_, _, seq, _)| gone || *seq > last_after)
                            .count();
                        (history.acked.len(), lost)
                    };
                    report.stuck = Some(format!(
                        "after cycle {n} {cut:?}: {error}; STREAM.INFO answers {answer}"
                    ));
                    if gone || answer["state"].is_object() {
                        report.cycles.push(CycleFigures {
                            cut,
                            acked,
                            acked_alone,
                            lost,
                            resumed: None,
                            last_before,
                            last_after,
                        });
                    }
                    break;
                }
                Err(error) => panic!("not recovered after cycle {n} {cut:?}: {error}"),
            };
        info = healed_info;
        let acked: Vec<(String, u64)> = lock(&history)
            .acked
            .iter()
            .map(|(_, payload, seq, _)| (payload.clone(), *seq))
            .collect();
        let lost = match lost_of(&control, &acked).await {
            Ok(lost) => lost,
            Err(error) if is_reference() => {
                report.stuck = Some(format!("reading after cycle {n} {cut:?}: {error}"));
                acked.len()
            }
            Err(error) => panic!("reading after cycle {n} {cut:?}: {error}"),
        };
        let figures = CycleFigures {
            cut,
            acked: acked.len(),
            acked_alone,
            lost,
            resumed: Some(resumed),
            last_before,
            last_after: last_seq(&info),
        };
        println!("{figures:?}");
        if !is_reference() {
            assert_eq!(figures.lost, 0, "acknowledged writes lost: {figures:?}");
            assert!(
                figures.last_after >= figures.last_before,
                "last sequence moved backwards: {figures:?}"
            );
        }
        report.cycles.push(figures);
        if report.stuck.is_some() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for publisher in publishers {
        publisher.await.expect("publisher");
    }
    if report.stuck.is_some() {
        return Some(report);
    }
    // Healed: each replica leads in turn and is read whole; the checker compares them.
    let settled = match healed(&control, STREAM_INFO, &names).await {
        Ok(settled) => settled,
        Err(error) if is_reference() => {
            report.stuck = Some(format!("after the cycles: {error}"));
            return Some(report);
        }
        Err(error) => panic!("not healed after the cycles: {error}\n{}", cluster.logs()),
    };
    if is_reference() {
        // read_every_replica asserts a settled group on every stepdown, which nats-server
        // after power cuts does not promise; its losses are reported from the reads above.
        return Some(report);
    }
    let replicas = read_every_replica(&control, STREAM, &names, last_seq(&settled)).await;
    let findings = check(&lock(&history), &replicas);
    report.summary = Some(findings.summary(report.cycles.len(), Duration::ZERO));
    report.clean = Some(findings.clean());
    if !findings.clean() {
        println!("{findings:#?}");
    }
    Some(report)
}

/// Two cycles of each scenario (about 90 s on ours). Ours: nothing lost, the last sequence
/// never backwards, replicas identical. nats-server: the figures are printed, not asserted: its
/// followers acknowledge appends before they are on disk (default `sync_interval` 2 min), so a
/// cut of every node can take acknowledged writes, the stream, or the group with it (Jepsen's
/// finding; docs/parity.md, "acknowledged writes under power loss").
///
/// Until nats-raft stopped resuming a leadership at start-up (openraft's leader restore, now
/// off), about one run in four stalled on ours: a cut of all three left the stream leader with a
/// shorter log than its followers (they had fsynced an entry of its term that it had not), it
/// resumed its term and appended a different entry at that index, and both followers failed to
/// apply the next one ("sequence mismatch: expected 760, got 759", raft core stopped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long suite (.ci/long): four power cuts of a cluster"]
async fn power_cuts_lose_no_acknowledged_write() {
    let cuts = [Cut::LoneLeader, Cut::All, Cut::LoneFollower, Cut::All];
    let Some(report) = run(&cuts, false).await else {
        return;
    };
    report.print(if is_reference() {
        "nats-server"
    } else {
        "ours"
    });
    if is_reference() {
        return;
    }
    assert_eq!(report.cycles.len(), cuts.len(), "{report:?}");
    assert!(report.cycles.iter().all(|c| c.acked > 0), "{report:?}");
    assert_eq!(report.clean, Some(true), "{report:?}");
}

/// Cycles of each scenario in the figures run: `POWER_LOSS_CYCLES`, 20 unless set.
fn figure_cycles() -> usize {
    std::env::var("POWER_LOSS_CYCLES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20)
}

/// The lone-node cycles (leader and follower in turn), then the all-node cycles.
fn figure_cuts() -> Vec<Cut> {
    let count = figure_cycles();
    (0..count)
        .map(|n| {
            if n % 2 == 0 {
                Cut::LoneLeader
            } else {
                Cut::LoneFollower
            }
        })
        .chain((0..count).map(|_| Cut::All))
        .collect()
}

/// Figures for bench/README.md and docs/parity.md (by hand: `cargo test -p parity --test
/// cluster power_loss::figures -- --ignored --nocapture --test-threads 1`, and with
/// NATS_SERVER_BIN for nats-server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand for the power-loss figures"]
async fn figures_default_sync() {
    let Some(report) = run(&figure_cuts(), false).await else {
        return;
    };
    report.print("default sync");
    if !is_reference() {
        assert_eq!(report.clean, Some(true), "{report:?}");
    }
}

/// nats-server with `sync_interval: always` (every write fsynced before it is acknowledged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: run by hand for the power-loss figures"]
async fn figures_sync_always() {
    let Some(report) = run(&figure_cuts(), true).await else {
        return;
    };
    report.print("sync always");
    if !is_reference() {
        assert_eq!(report.clean, Some(true), "{report:?}");
    }
}

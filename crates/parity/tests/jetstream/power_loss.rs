//! Power loss (issue 17): the server's store on `powerloss-fs`, load from two publishers and an
//! acking consumer, then kill -9, unmount, drop everything not fsynced, mount and restart.
//! With `sync_interval: always` every PubAck'd message and every confirmed ack (AckSync
//! answered) is there after each cut. With the default interval sync the loss is measured
//! (`#[ignore]`d figures test). Needs root and /dev/fuse; elsewhere it says so and passes.
//!
//! The disk model is strict POSIX for ours in the CI test (a new name needs its directory's
//! fsync) and journaled (any fsync commits every directory change, as ext4 does) for
//! nats-server, which does not sync directories and would otherwise lose whole streams under any
//! policy. The figures tests use the journaled model for both.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use powerloss_fs::{available, Disk, Mount, SyncModel};
use test_harness::{is_reference, ServerOptions, TestServer};

#[derive(Debug, Default)]
struct Figures {
    acknowledged: usize,
    lost_messages: usize,
    confirmed_acks: usize,
    forgotten_acks: usize,
}

fn payload(cycle: usize, index: usize) -> String {
    format!("cycle-{cycle}-message-{index}-{}", "p".repeat(100))
}

async fn context(server: &TestServer) -> jetstream::Context {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(server.url())
        .await
        .expect("connect");
    jetstream::new(client)
}

/// One cycle of load; returns what was confirmed: (seq, payload) PubAcks and acked sequences.
async fn load(
    server: &TestServer,
    cycle: usize,
    duration: Duration,
) -> (Vec<(u64, String)>, Vec<u64>) {
    let context = context(server).await;
    let published = Arc::new(Mutex::new(Vec::new()));
    let acked = Arc::new(Mutex::new(Vec::new()));
    // Two publishers, each with its own subject and payloads.
    let publishers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let context = context.clone();
            let published = published.clone();
            tokio::spawn(async move {
                let mut index = 0;
                loop {
                    let mut pending = Vec::new();
                    for _ in 0..20 {
                        let text = format!("{name}-{}", payload(cycle, index));
                        index += 1;
                        let subject = format!("power.{name}");
                        let Ok(ack) = context.publish(subject, text.clone().into()).await else {
                            return;
                        };
                        pending.push((ack, text));
                    }
                    for (ack, text) in pending {
                        let Ok(ack) = ack.await else { return };
                        published
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((ack.sequence, text));
                    }
                    // A bounded rate keeps the read-back after each cut short.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        })
        .collect();
    let consumer_task = {
        let context = context.clone();
        let acked = acked.clone();
        tokio::spawn(async move {
            let Ok(stream) = context.get_stream("POWER").await else {
                return;
            };
            let Ok(consumer) = stream.get_consumer::<consumer::pull::Config>("C").await else {
                return;
            };
            loop {
                let Ok(mut batch) = consumer
                    .fetch()
                    .max_messages(20)
                    .expires(Duration::from_millis(200))
                    .messages()
                    .await
                else {
                    return;
                };
                while let Some(Ok(message)) = batch.next().await {
                    let Ok(info) = message.info().map(|info| info.stream_sequence) else {
                        return;
                    };
                    if message.double_ack().await.is_err() {
                        return;
                    }
                    acked.lock().unwrap_or_else(|e| e.into_inner()).push(info);
                }
            }
        })
    };
    tokio::time::sleep(duration).await;
    // The cut comes under load: stop recording only after the process is gone.
    let published_now = || published.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let acked_now = || acked.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let snapshot = (published_now(), acked_now());
    for publisher in publishers {
        publisher.abort();
    }
    consumer_task.abort();
    snapshot
}

/// After a restart: which acknowledged messages are gone, which confirmed acks are forgotten
/// (their messages delivered again). Acks every redelivered message so the next cycle starts
/// from a settled consumer.
async fn verify(
    server: &TestServer,
    published: &[(u64, String)],
    acked: &BTreeSet<u64>,
) -> (usize, usize) {
    let context = context(server).await;
    let Ok(stream) = context.get_stream("POWER").await else {
        return (published.len(), acked.len());
    };
    let mut lost = 0;
    for (seq, text) in published {
        match stream.get_raw_message(*seq).await {
            Ok(message) if message.payload == text.as_bytes() => {}
            _ => lost += 1,
        }
    }
    let Ok(consumer) = stream.get_consumer::<consumer::pull::Config>("C").await else {
        return (lost, acked.len());
    };
    let mut forgotten = 0;
    loop {
        let mut batch = consumer
            .fetch()
            .max_messages(500)
            .expires(Duration::from_millis(500))
            .messages()
            .await
            .expect("fetch");
        let mut got = 0;
        while let Some(Ok(message)) = batch.next().await {
            got += 1;
            let seq = message.info().expect("info").stream_sequence;
            if acked.contains(&seq) {
                forgotten += 1;
            }
            message.double_ack().await.expect("ack");
        }
        if got == 0 {
            break;
        }
    }
    (lost, forgotten)
}

async fn cycles(
    sync_always: bool,
    count: usize,
    duration: Duration,
    strict: bool,
) -> Option<Figures> {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return None;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let model = if is_reference() || !strict {
        SyncModel::Journaled
    } else {
        SyncModel::Strict
    };
    let disk = Disk::new(4 << 30, model);
    let mut mount = Some(disk.mount(mountpoint.path()).expect("mount"));
    let sync = if sync_always {
        "sync_interval: always"
    } else {
        ""
    };
    let mut server = TestServer::start(ServerOptions {
        config: Some(format!(
            "jetstream {{\n  store_dir: \"{}\"\n  {sync}\n}}\n",
            mountpoint.path().display()
        )),
        ..Default::default()
    });
    {
        let context = context(&server).await;
        let stream = context
            .create_stream(stream::Config {
                name: "POWER".into(),
                subjects: vec!["power.>".into()],
                ..Default::default()
            })
            .await
            .expect("create stream");
        stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some("C".into()),
                ack_policy: consumer::AckPolicy::Explicit,
                ..Default::default()
            })
            .await
            .expect("create consumer");
    }
    let mut figures = Figures::default();
    for cycle in 0..count {
        let (published, acked) = load(&server, cycle, duration).await;
        server.kill9();
        if let Some(mounted) = mount.take() {
            mounted.unmount().expect("unmount");
        }
        disk.cut_power();
        mount = Some(disk.mount(mountpoint.path()).expect("mount again"));
        server.restart();
        let acked: BTreeSet<u64> = acked.into_iter().collect();
        let (lost, forgotten) = verify(&server, &published, &acked).await;
        eprintln!(
            "cycle {cycle}: {} acknowledged, {lost} lost; {} acks confirmed, {forgotten} forgotten",
            published.len(),
            acked.len()
        );
        figures.acknowledged += published.len();
        figures.lost_messages += lost;
        figures.confirmed_acks += acked.len();
        figures.forgotten_acks += forgotten;
    }
    server.kill9();
    drop(mount);
    Some(figures)
}

/// Confirmed acks are reported, not asserted, here: consumer state is still written once a
/// second (issue 17 item 3, in nats-jetstream), so some are forgotten at a cut. The long
/// `#[ignore]`d run below asserts both and is the check for that fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_always_keeps_every_acknowledged_message_across_power_cuts() {
    let Some(figures) = cycles(true, 3, Duration::from_secs(2), true).await else {
        return;
    };
    eprintln!("{figures:?}");
    assert!(
        figures.acknowledged > 0 && figures.confirmed_acks > 0,
        "{figures:?}"
    );
    assert_eq!(figures.lost_messages, 0, "{figures:?}");
}

/// Cycles of the figures tests: `POWER_LOSS_CYCLES`, 20 unless set.
fn figure_cycles() -> usize {
    std::env::var("POWER_LOSS_CYCLES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20)
}

/// Figures for docs/parity.md and bench/README.md, both servers on the journaled disk model:
/// `cargo test -p parity --test jetstream power_loss_ -- --ignored --nocapture --test-threads 1`
/// (and with NATS_SERVER_BIN for nats-server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn power_loss_default_sync_figures() {
    let count = figure_cycles();
    let Some(figures) = cycles(false, count, Duration::from_secs(3), false).await else {
        return;
    };
    eprintln!("default sync, {count} cycles of 3 s: {figures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn power_loss_sync_always_figures() {
    let count = figure_cycles();
    let Some(figures) = cycles(true, count, Duration::from_secs(3), false).await else {
        return;
    };
    eprintln!("sync always, {count} cycles of 3 s: {figures:?}");
    if !is_reference() {
        assert_eq!(figures.lost_messages, 0, "{figures:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn power_loss_sync_always_long() {
    let Some(figures) = cycles(true, 10, Duration::from_secs(5), true).await else {
        return;
    };
    eprintln!("sync always, 10 cycles of 5 s: {figures:?}");
    assert_eq!(figures.lost_messages, 0, "{figures:?}");
    assert_eq!(figures.forgotten_acks, 0, "{figures:?}");
}

/// A server whose store is on its own powerloss-fs disk of 1 GiB: the strict POSIX model for
/// ours, journaled for nats-server (see the module). `None`, said, without FUSE.
struct OnDisk {
    server: TestServer,
    disk: Disk,
    mount: Option<Mount>,
    mountpoint: tempfile::TempDir,
}

impl OnDisk {
    /// `jetstream` is added inside the server's `jetstream { }` block.
    fn start(jetstream: &str) -> Option<OnDisk> {
        if !available() {
            eprintln!("skipped: FUSE needs root and /dev/fuse");
            return None;
        }
        let mountpoint = tempfile::tempdir().expect("tempdir");
        let model = if is_reference() {
            SyncModel::Journaled
        } else {
            SyncModel::Strict
        };
        let disk = Disk::new(1 << 30, model);
        let mount = disk.mount(mountpoint.path()).expect("mount");
        let server = TestServer::start(ServerOptions {
            config: Some(format!(
                "jetstream {{\n  store_dir: \"{}\"\n  {jetstream}\n}}\n",
                mountpoint.path().display()
            )),
            ..Default::default()
        });
        Some(OnDisk {
            server,
            disk,
            mount: Some(mount),
            mountpoint,
        })
    }

    /// kill -9, unmount, everything not fsynced dropped, mount, restart; a new context and the
    /// stream names the restarted server lists.
    async fn cut_power_and_restart(&mut self) -> (jetstream::Context, BTreeSet<String>) {
        self.server.kill9();
        if let Some(mount) = self.mount.take() {
            mount.unmount().expect("unmount");
        }
        self.disk.cut_power();
        self.mount = Some(
            self.disk
                .mount(self.mountpoint.path())
                .expect("mount again"),
        );
        self.server.restart();
        let context = context(&self.server).await;
        let names = context
            .stream_names()
            .filter_map(|name| async move { name.ok() })
            .collect()
            .await;
        (context, names)
    }
}

/// A confirmed creation survives a power cut, with many in flight (issue 21: the creation syncs
/// of concurrent creations share their directories' fsyncs, and ancestors known durable are not
/// synced again). Two waves of KV buckets, 24 creations in flight each (the second wave after
/// the first's ancestors are durable), plus a bucket deleted and created again with another
/// history; the power is cut right after the last answer (strict-POSIX disk model for ours).
/// nats-server does not sync a new stream at all (docs/parity.md, "new stream directory"): on
/// the reference the survivors are reported, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmed_creations_in_flight_survive_a_power_cut() {
    use async_nats::jetstream::kv;
    let Some(mut on_disk) = OnDisk::start("") else {
        return;
    };
    let context = context(&on_disk.server).await;
    let create = |bucket: String, history: i64| {
        let context = context.clone();
        async move {
            context
                .create_key_value(kv::Config {
                    bucket: bucket.clone(),
                    history,
                    ..Default::default()
                })
                .await
                .unwrap_or_else(|error| panic!("create {bucket}: {error}"));
        }
    };
    for wave in 0..2 {
        let creations: Vec<_> = (0..24)
            .map(|index| tokio::spawn(create(format!("W{wave}_{index}"), 1)))
            .collect();
        for creation in creations {
            creation.await.expect("creation task");
        }
    }
    context.delete_key_value("W0_0").await.expect("delete W0_0");
    create("W0_0".to_string(), 5).await;
    let (context, names) = on_disk.cut_power_and_restart().await;
    let expected: BTreeSet<String> = (0..2)
        .flat_map(|wave| (0..24).map(move |index| format!("KV_W{wave}_{index}")))
        .collect();
    let missing: Vec<&String> = expected.difference(&names).collect();
    let history = match context.get_stream("KV_W0_0").await {
        Ok(mut stream) => stream
            .info()
            .await
            .map(|info| info.config.max_messages_per_subject)
            .ok(),
        Err(_) => None,
    };
    eprintln!(
        "after the cut: {} of {} buckets, missing {missing:?}; recreated KV_W0_0 history {history:?}",
        expected.len() - missing.len(),
        expected.len()
    );
    on_disk.server.kill9();
    if is_reference() {
        return;
    }
    assert!(missing.is_empty(), "confirmed buckets lost: {missing:?}");
    assert_eq!(history, Some(5), "the recreated bucket's config");
}

/// Buckets created right after others were deleted (ours makes the deleted stores' directories
/// into spares and the new buckets take them, `nats-store/src/file/spares.rs`): after a power
/// cut every confirmed bucket is there with exactly its acknowledged value, nothing of the
/// deleted buckets' data or sequences, and the deleted buckets are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_created_after_deletions_survive_a_power_cut_without_old_data() {
    use async_nats::jetstream::kv;
    let Some(mut on_disk) = OnDisk::start("sync_interval: always") else {
        return;
    };
    let context = context(&on_disk.server).await;
    const BUCKETS: usize = 16;
    let bucket = |name: String| {
        let context = context.clone();
        async move {
            context
                .create_key_value(kv::Config {
                    bucket: name.clone(),
                    ..Default::default()
                })
                .await
                .unwrap_or_else(|error| panic!("create {name}: {error}"))
        }
    };
    for index in 0..BUCKETS {
        let store = bucket(format!("OLD{index}")).await;
        for value in 0..3 {
            store
                .put(format!("k{value}"), format!("old {value}").into())
                .await
                .expect("put old");
        }
    }
    // Ours: the deleted stores become spares in the background; wait for them so the new
    // buckets take them (their directories' inode numbers, to check they did).
    let streams = on_disk
        .mountpoint
        .path()
        .join("jetstream")
        .join("$G")
        .join("streams");
    let old_inodes = |streams: &std::path::Path| -> BTreeSet<u64> {
        use std::os::unix::fs::MetadataExt;
        (0..BUCKETS)
            .filter_map(|index| std::fs::metadata(streams.join(format!("KV_OLD{index}"))).ok())
            .map(|metadata| metadata.ino())
            .collect()
    };
    let deleted = old_inodes(&streams);
    assert!(is_reference() || deleted.len() == BUCKETS, "{deleted:?}");
    for index in 0..BUCKETS {
        context
            .delete_key_value(format!("OLD{index}"))
            .await
            .expect("delete old bucket");
    }
    let inodes = |spares: bool| -> BTreeSet<u64> {
        use std::os::unix::fs::MetadataExt;
        std::fs::read_dir(&streams)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|entry| {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        name.contains(".spare.") == spares && (spares || name.starts_with("KV_"))
                    })
                    .filter_map(|entry| entry.metadata().ok().map(|metadata| metadata.ino()))
                    .collect()
            })
            .unwrap_or_default()
    };
    if !is_reference() {
        test_harness::waits::await_some(
            "the deleted stores made spares",
            Duration::from_secs(20),
            || Some(()).filter(|_| inodes(true).is_superset(&deleted)),
        );
    }
    let creations: Vec<_> = (0..BUCKETS)
        .map(|index| {
            let bucket = bucket(format!("NEW{index}"));
            tokio::spawn(async move {
                let store = bucket.await;
                store
                    .put("k", format!("new {index}").into())
                    .await
                    .expect("put new")
            })
        })
        .collect();
    for creation in creations {
        assert_eq!(
            creation.await.expect("creation task"),
            1,
            "a new bucket's first revision"
        );
    }
    if !is_reference() {
        assert_eq!(
            inodes(false),
            deleted,
            "the new buckets are the deleted ones' spares"
        );
    }
    let (context, names) = on_disk.cut_power_and_restart().await;
    let expected: BTreeSet<String> = (0..BUCKETS).map(|index| format!("KV_NEW{index}")).collect();
    let mut found = Vec::new();
    for index in 0..BUCKETS {
        let state = match context.get_stream(format!("KV_NEW{index}")).await {
            Ok(mut stream) => stream.info().await.ok().map(|info| {
                (
                    info.state.messages,
                    info.state.first_sequence,
                    info.state.last_sequence,
                )
            }),
            Err(_) => None,
        };
        let value = match context.get_key_value(format!("NEW{index}")).await {
            Ok(store) => store.get("k").await.ok().flatten(),
            Err(_) => None,
        };
        found.push((state, value));
    }
    eprintln!("after the cut: streams {names:?}, new buckets (state, value) {found:?}");
    on_disk.server.kill9();
    if is_reference() {
        return;
    }
    assert_eq!(names, expected, "the new buckets, none of the deleted ones");
    for (index, (state, value)) in found.into_iter().enumerate() {
        assert_eq!(
            state,
            Some((1, 1, 1)),
            "KV_NEW{index}: one message at sequence 1"
        );
        assert_eq!(
            value,
            Some(format!("new {index}").into()),
            "KV_NEW{index}'s value"
        );
    }
}

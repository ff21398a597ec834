//! I/O errors (issue 17), through `powerloss-fs`: a failing fsync under `sync_interval: always`
//! and failing writes under the default policy. No PubAck for anything not made durable (or not
//! written), publishes refused with 503 / 10077 and the operating system's reason while the
//! fault lasts, publishing resumes by itself once it clears, and every acknowledged message is
//! there after a power cut (fsync case) or a restart (write case).
//!
//! What nats-server does under the same faults is not promised here: against it only the
//! acknowledged messages are checked. Needs root and /dev/fuse; elsewhere it says so and passes.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use powerloss_fs::{available, Disk, SyncModel};
use test_harness::{is_reference, ServerOptions, TestServer};

use super::full_disk::{assert_all_present, publish};

async fn start(mountpoint: &std::path::Path, sync: &str) -> TestServer {
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "jetstream {{\n  store_dir: \"{}\"\n  {sync}\n}}\n",
            mountpoint.display()
        )),
        ..Default::default()
    });
    let client = async_nats::connect(server.url()).await.expect("connect");
    jetstream::new(client)
        .create_stream(stream::Config {
            name: "FULL".into(),
            subjects: vec!["full.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    server
}

/// Publishes during the fault: none may be acknowledged; returns the first error reply.
async fn refused_during_fault(
    client: &async_nats::Client,
    acked: &mut Vec<(u64, String)>,
) -> Option<serde_json::Value> {
    let mut refusal = None;
    let mut unanswered = 0;
    for index in 0..20 {
        let text = format!("during-{index}");
        match publish(client, "full.a", &text, Duration::from_secs(2)).await {
            Ok(seq) => {
                acked.push((seq, text));
                if !is_reference() {
                    panic!("sequence {seq} acknowledged during the fault");
                }
            }
            Err(Some(error)) => {
                refusal = Some(error);
                break;
            }
            Err(None) => {
                unanswered += 1;
                if is_reference() && unanswered >= 2 {
                    break;
                }
            }
        }
    }
    refusal
}

async fn resume(client: &async_nats::Client, acked: &mut Vec<(u64, String)>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut index = 0;
    while acked
        .iter()
        .filter(|(_, text)| text.starts_with("after-"))
        .count()
        < 20
    {
        let text = format!("after-{index}");
        index += 1;
        match publish(client, "full.a", &text, Duration::from_secs(2)).await {
            Ok(seq) => acked.push((seq, text)),
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "publishing did not resume: {error:?}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn assert_refusal(refusal: Option<serde_json::Value>) {
    let refusal = refusal.expect("a publish during the fault is answered with an error");
    assert_eq!(refusal["error"]["code"], 503, "{refusal}");
    assert_eq!(refusal["error"]["err_code"], 10077, "{refusal}");
    let description = refusal["error"]["description"].as_str().unwrap_or_default();
    assert!(description.contains("input/output error"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_fsync_acknowledges_nothing_and_resumes_after_it_clears() {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let disk = Disk::new(1 << 30, SyncModel::Journaled);
    let mut mount = Some(disk.mount(mountpoint.path()).expect("mount"));
    let mut server = start(mountpoint.path(), "sync_interval: always").await;
    let client = async_nats::connect(server.url()).await.expect("connect");
    let mut acked = Vec::new();
    for index in 0..50 {
        let text = format!("before-{index}");
        let seq = publish(&client, "full.a", &text, Duration::from_secs(5))
            .await
            .expect("publish before the fault");
        acked.push((seq, text));
    }
    disk.set_failing_syncs(true);
    let refusal = refused_during_fault(&client, &mut acked).await;
    if !is_reference() {
        assert_refusal(refusal);
        assert!(
            server.log().contains("sync failed"),
            "the failure is logged:\n{}",
            server.log()
        );
    }
    disk.set_failing_syncs(false);
    if !is_reference() {
        resume(&client, &mut acked).await;
    }
    // The power goes: every acknowledged message was really made durable.
    drop(client);
    server.kill9();
    if let Some(mounted) = mount.take() {
        mounted.unmount().expect("unmount");
    }
    disk.cut_power();
    mount = Some(disk.mount(mountpoint.path()).expect("mount again"));
    server.restart();
    let client = async_nats::connect(server.url()).await.expect("connect");
    assert_all_present(&jetstream::new(client), &acked, "after a power cut").await;
    server.kill9();
    drop(mount);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_writes_refuse_publishes_until_they_clear() {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let disk = Disk::new(1 << 30, SyncModel::Journaled);
    let mount = disk.mount(mountpoint.path()).expect("mount");
    let mut server = start(mountpoint.path(), "").await;
    let client = async_nats::connect(server.url()).await.expect("connect");
    let mut acked = Vec::new();
    for index in 0..50 {
        let text = format!("before-{index}");
        let seq = publish(&client, "full.a", &text, Duration::from_secs(5))
            .await
            .expect("publish before the fault");
        acked.push((seq, text));
    }
    disk.set_failing_writes(true);
    let refusal = refused_during_fault(&client, &mut acked).await;
    if !is_reference() {
        assert_refusal(refusal);
        assert_all_present(&jetstream::new(client.clone()), &acked, "during the fault").await;
    }
    disk.set_failing_writes(false);
    if !is_reference() {
        resume(&client, &mut acked).await;
    }
    drop(client);
    server.restart();
    let client = async_nats::connect(server.url()).await.expect("connect");
    assert_all_present(&jetstream::new(client), &acked, "after a restart").await;
    server.kill9();
    drop(mount);
}

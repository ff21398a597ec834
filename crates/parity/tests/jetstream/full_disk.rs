//! A full disk (issue 17 item 9), through `powerloss-fs`'s capacity: once the store cannot grow,
//! publishes are answered with 503 / 10077 and the operating system's reason, reads and
//! consumers go on, publishing resumes by itself when space returns, and every acknowledged
//! message is there afterwards and after a restart.
//!
//! nats-server disables JetStream on a full disk and lets publishes time out; against it only the
//! shared promises are checked (nothing acknowledged lost, all there after a restart with space).
//! Needs root and /dev/fuse; elsewhere it says so and passes.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use powerloss_fs::{available, Disk, SyncModel};
use test_harness::{is_reference, ServerOptions, TestServer};

const ROOMY: u64 = 1 << 30;

/// A raw publish request: Ok(sequence), Err(Some(reply JSON)) for an error reply, Err(None) for
/// no answer within `wait`.
pub(crate) async fn publish(
    client: &async_nats::Client,
    subject: &str,
    payload: &str,
    wait: Duration,
) -> Result<u64, Option<serde_json::Value>> {
    let request = client.request(subject.to_string(), payload.to_string().into());
    let Ok(Ok(reply)) = tokio::time::timeout(wait, request).await else {
        return Err(None);
    };
    let value: serde_json::Value = serde_json::from_slice(&reply.payload).map_err(|_| None)?;
    match value["seq"].as_u64() {
        Some(seq) if value.get("error").is_none() => Ok(seq),
        _ => Err(Some(value)),
    }
}

pub(crate) async fn assert_all_present(
    context: &jetstream::Context,
    acked: &[(u64, String)],
    when: &str,
) {
    let stream = context.get_stream("FULL").await.expect("stream");
    for (seq, text) in acked {
        let message = stream
            .get_raw_message(*seq)
            .await
            .unwrap_or_else(|error| panic!("{when}: acknowledged {seq} missing: {error}"));
        assert_eq!(message.payload, text.as_bytes(), "{when}: sequence {seq}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_refuses_publishes_keeps_serving_and_resumes() {
    if !available() {
        eprintln!("skipped: FUSE needs root and /dev/fuse");
        return;
    }
    let mountpoint = tempfile::tempdir().expect("tempdir");
    let disk = Disk::new(ROOMY, SyncModel::Journaled);
    let mount = disk.mount(mountpoint.path()).expect("mount");
    let mut server = TestServer::start(ServerOptions {
        config: Some(format!(
            "jetstream {{\n  store_dir: \"{}\"\n}}\n",
            mountpoint.path().display()
        )),
        ..Default::default()
    });
    let client = async_nats::connect(server.url()).await.expect("connect");
    let context = jetstream::new(client.clone());
    let stream = context
        .create_stream(stream::Config {
            name: "FULL".into(),
            subjects: vec!["full.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let consumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("C".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .expect("create consumer");
    let mut acked = Vec::new();
    for index in 0..200 {
        let text = format!("before-{index}-{}", "x".repeat(200));
        let seq = publish(&client, "full.a", &text, Duration::from_secs(5))
            .await
            .expect("publish before the fault");
        acked.push((seq, text));
    }

    // The disk fills: no file may grow.
    disk.set_capacity(disk.stats().used_bytes);
    let mut refusal = None;
    let mut unanswered = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut index = 0;
    while refusal.is_none() && Instant::now() < deadline {
        let text = format!("during-{index}-{}", "y".repeat(200));
        index += 1;
        match publish(&client, "full.a", &text, Duration::from_secs(2)).await {
            Ok(seq) => acked.push((seq, text)),
            Err(Some(error)) => refusal = Some(error),
            Err(None) => {
                unanswered += 1;
                // nats-server answers none of them.
                if is_reference() && unanswered >= 2 {
                    break;
                }
            }
        }
    }
    if !is_reference() {
        let refusal = refusal.expect("a publish on a full disk is answered with an error");
        assert_eq!(refusal["error"]["code"], 503, "{refusal}");
        assert_eq!(refusal["error"]["err_code"], 10077, "{refusal}");
        let description = refusal["error"]["description"].as_str().unwrap_or_default();
        assert!(description.contains("no space left on device"), "{refusal}");
        // At most the batch in flight when the write failed waits for the disk.
        assert!(unanswered <= 1, "{unanswered} publishes unanswered");
        // Reads and consumers are served meanwhile.
        assert_all_present(&context, &acked, "during the fault").await;
        let mut batch = consumer
            .fetch()
            .max_messages(50)
            .expires(Duration::from_secs(2))
            .messages()
            .await
            .expect("fetch during the fault");
        let mut delivered = 0;
        while let Some(message) = batch.next().await {
            let message = message.expect("message");
            assert!(message.payload.starts_with(b"before-"));
            delivered += 1;
        }
        assert_eq!(delivered, 50, "the consumer delivers during the fault");
    }

    // Space returns: publishing resumes by itself, no restart.
    disk.set_capacity(ROOMY);
    if !is_reference() {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = format!("after-{index}-{}", "z".repeat(200));
            index += 1;
            match publish(&client, "full.a", &text, Duration::from_secs(2)).await {
                Ok(seq) => {
                    acked.push((seq, text));
                    break;
                }
                Err(error) => assert!(
                    Instant::now() < deadline,
                    "publishing did not resume: {error:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for _ in 0..50 {
            let text = format!("after-{index}-{}", "z".repeat(200));
            index += 1;
            let seq = publish(&client, "full.a", &text, Duration::from_secs(5))
                .await
                .expect("publish after the fault");
            acked.push((seq, text));
        }
        assert_all_present(&context, &acked, "after the fault").await;
    }

    // A restart finds every acknowledged message and the stream goes on after them.
    drop(client);
    server.restart();
    let client = async_nats::connect(server.url()).await.expect("connect");
    let context = jetstream::new(client.clone());
    assert_all_present(&context, &acked, "after a restart").await;
    let highest = acked.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
    let seq = publish(&client, "full.a", "after restart", Duration::from_secs(5))
        .await
        .expect("publish after the restart");
    assert!(
        seq > highest,
        "sequence {seq} reissued (highest acknowledged {highest})"
    );
    drop(client);
    server.kill9();
    drop(mount);
}

//! A stream's last sequence never moves backwards across a restart, whatever was lost from its
//! files (issue 17 item 2): 500 acknowledged messages, the last block file cut to half while the
//! server is stopped; after the restart fewer messages are there, but the next publish gets 501,
//! never a sequence already acknowledged for another message. The same after a purge: the first
//! sequence stays past the purged ones. Passes on nats-server 2.15.1 too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use test_harness::{ServerOptions, TestServer};

const MESSAGES: u64 = 500;

fn server() -> TestServer {
    TestServer::start(ServerOptions {
        jetstream: true,
        ..Default::default()
    })
}

async fn context(server: &TestServer) -> jetstream::Context {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(server.url())
        .await
        .expect("connect");
    jetstream::new(client)
}

async fn create(context: &jetstream::Context, name: &str) {
    context
        .create_stream(stream::Config {
            name: name.into(),
            subjects: vec![format!("{}.>", name.to_lowercase())],
            ..Default::default()
        })
        .await
        .expect("create stream");
}

/// Publish `count` messages and return the sequence of the last PubAck.
async fn publish(context: &jetstream::Context, subject: &str, count: u64) -> u64 {
    let mut pending = Vec::new();
    for index in 0..count {
        let payload = format!("message-{index}-{}", "x".repeat(64));
        pending.push(
            context
                .publish(subject.to_string(), payload.into())
                .await
                .expect("publish"),
        );
    }
    let mut last = 0;
    for ack in pending {
        last = ack.await.expect("puback").sequence;
    }
    last
}

/// Every block file (`*.blk`) under `dir`, in any layout (ours: `<id>.blk` in the stream's
/// directory; nats-server: `msgs/<id>.blk`).
fn block_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            block_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "blk") {
            found.push(path);
        }
    }
}

/// The stream's last block file: the highest numeric id.
fn last_block(store_dir: &Path, stream: &str) -> PathBuf {
    let mut found = Vec::new();
    block_files(store_dir, &mut found);
    found.retain(|path| path.components().any(|part| part.as_os_str() == stream));
    found
        .into_iter()
        .max_by_key(|path| {
            path.file_stem()
                .and_then(|stem| stem.to_str())
                .and_then(|stem| stem.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .unwrap_or_else(|| panic!("no block file of {stream} under {}", store_dir.display()))
}

fn cut_to_half(path: &Path) {
    let len = std::fs::metadata(path).expect("block metadata").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open block");
    file.set_len(len / 2).expect("truncate block");
    file.sync_all().expect("sync block");
}

#[tokio::test]
async fn truncated_last_block_does_not_reissue_sequences() {
    let mut server = server();
    let store_dir = server.store_dir.clone().expect("store dir");
    {
        let context = context(&server).await;
        create(&context, "TRUNC").await;
        assert_eq!(publish(&context, "trunc.a", MESSAGES).await, MESSAGES);
    }
    server.stop();
    cut_to_half(&last_block(&store_dir, "TRUNC"));
    server.restart();

    let context = context(&server).await;
    let mut stream = context.get_stream("TRUNC").await.expect("stream info");
    let state = stream.info().await.expect("info").state.clone();
    assert!(
        state.messages < MESSAGES && state.messages > 0,
        "half the block is gone: {state:?}"
    );
    assert_eq!(state.last_sequence, MESSAGES, "{state:?}");
    let next = publish(&context, "trunc.a", 1).await;
    assert_eq!(
        next,
        MESSAGES + 1,
        "an acknowledged sequence was issued again"
    );
    // The repair is logged; a log written to a file carries no colour codes.
    assert!(!server.log().contains('\u{1b}'), "{}", server.log());

    // And it holds over one more restart, with nothing else lost.
    server.restart();
    let context = self::context(&server).await;
    let next = publish(&context, "trunc.a", 1).await;
    assert_eq!(next, MESSAGES + 2);
}

#[tokio::test]
async fn missing_last_block_after_purge_keeps_first_sequence() {
    let mut server = server();
    let store_dir = server.store_dir.clone().expect("store dir");
    {
        let context = context(&server).await;
        create(&context, "PURGED").await;
        assert_eq!(publish(&context, "purged.a", 300).await, 300);
        context
            .get_stream("PURGED")
            .await
            .expect("stream")
            .purge()
            .await
            .expect("purge");
    }
    server.stop();
    // Cut every block of the stream to nothing: the sequence must still continue after 300.
    let mut found = Vec::new();
    block_files(&store_dir, &mut found);
    found.retain(|path| path.components().any(|part| part.as_os_str() == "PURGED"));
    for path in &found {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|file| file.set_len(0))
            .expect("truncate block");
    }
    server.restart();

    let context = context(&server).await;
    let mut stream = context.get_stream("PURGED").await.expect("stream info");
    let state = stream.info().await.expect("info").state.clone();
    assert_eq!(state.messages, 0, "{state:?}");
    assert_eq!(state.last_sequence, 300, "{state:?}");
    assert_eq!(state.first_sequence, 301, "{state:?}");
    assert_eq!(publish(&context, "purged.a", 1).await, 301);
}

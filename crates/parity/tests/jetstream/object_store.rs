//! Object store through async-nats: multi-megabyte objects put and read back byte for byte,
//! info (size, chunks, digest), list, overwrite, delete and the errors after it, and the bucket
//! stream underneath (`OBJ_<bucket>`). Runs against nats-server too (`NATS_SERVER_BIN`).

use async_nats::jetstream::object_store;
use futures::StreamExt;
use test_harness::client::{api, connect, TIMEOUT};
use test_harness::TestServer;
use tokio::io::AsyncReadExt;

/// Deterministic bytes that do not compress to nothing (xorshift).
fn object_bytes(size: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

async fn read_object(bucket: &object_store::ObjectStore, name: &str) -> Vec<u8> {
    let mut object = tokio::time::timeout(TIMEOUT, bucket.get(name))
        .await
        .expect("get in time")
        .expect("get");
    let mut bytes = Vec::new();
    tokio::time::timeout(TIMEOUT, object.read_to_end(&mut bytes))
        .await
        .expect("read in time")
        .expect("read");
    bytes
}

#[tokio::test]
async fn object_store_put_get_list_info_delete() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = async_nats::jetstream::new(client.clone());
    let bucket = context
        .create_object_store(object_store::Config {
            bucket: "FILES".into(),
            description: Some("big things".into()),
            ..Default::default()
        })
        .await
        .expect("create bucket");

    let large = object_bytes(5 * 1024 * 1024 + 123, 7);
    let small = object_bytes(1000, 11);
    let info = tokio::time::timeout(
        TIMEOUT,
        bucket.put("large.bin", &mut std::io::Cursor::new(large.clone())),
    )
    .await
    .expect("put in time")
    .expect("put large");
    assert_eq!(info.size, large.len());
    // async-nats cuts 128 KiB chunks.
    assert_eq!(info.chunks, large.len().div_ceil(128 * 1024));
    bucket
        .put("small.bin", &mut std::io::Cursor::new(small.clone()))
        .await
        .expect("put small");

    assert!(
        read_object(&bucket, "large.bin").await == large,
        "large object differs"
    );
    assert_eq!(read_object(&bucket, "small.bin").await, small);

    let info = bucket.info("large.bin").await.expect("info");
    assert_eq!(info.size, large.len());
    assert!(info
        .digest
        .as_deref()
        .is_some_and(|digest| digest.starts_with("SHA-256=")));
    assert!(!info.deleted);

    let mut names: Vec<String> = Vec::new();
    let mut list = bucket.list().await.expect("list");
    while let Some(entry) = tokio::time::timeout(TIMEOUT, list.next())
        .await
        .expect("list in time")
    {
        names.push(entry.expect("list entry").name);
    }
    names.sort();
    assert_eq!(names, ["large.bin", "small.bin"]);

    // Overwriting replaces the content and drops the old chunks.
    let replacement = object_bytes(3 * 1024 * 1024, 13);
    bucket
        .put("large.bin", &mut std::io::Cursor::new(replacement.clone()))
        .await
        .expect("overwrite");
    assert!(
        read_object(&bucket, "large.bin").await == replacement,
        "overwritten object differs"
    );
    let stream = api(&client, "$JS.API.STREAM.INFO.OBJ_FILES", "").await;
    let stored = stream["state"]["bytes"].as_u64().expect("bytes");
    assert!(
        stored < (replacement.len() + small.len() + 64 * 1024) as u64,
        "old chunks purged: {stream}"
    );

    bucket.delete("large.bin").await.expect("delete");
    let error = bucket.get("large.bin").await.expect_err("deleted object");
    assert_eq!(
        error.kind(),
        object_store::GetErrorKind::NotFound,
        "{error}"
    );
    let error = bucket
        .info("missing.bin")
        .await
        .expect_err("missing object");
    assert_eq!(
        error.kind(),
        object_store::InfoErrorKind::NotFound,
        "{error}"
    );
    assert_eq!(read_object(&bucket, "small.bin").await, small);

    context
        .delete_object_store("FILES")
        .await
        .expect("delete bucket");
    let gone = api(&client, "$JS.API.STREAM.INFO.OBJ_FILES", "").await;
    assert_eq!(gone["error"]["err_code"], 10059, "{gone}");
}

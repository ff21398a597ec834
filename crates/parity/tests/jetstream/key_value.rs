//! The async-nats key-value API on top of streams: bucket create, put/get (direct get), revision
//! checks (expected last subject sequence), delete and purge markers (rollups), history.

use async_nats::jetstream::{self, kv};
use test_harness::client::connect;
use test_harness::TestServer;

#[tokio::test]
async fn key_value_bucket_round_trip() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let context = jetstream::new(client);
    let bucket = context
        .create_key_value(kv::Config {
            bucket: "settings".into(),
            history: 5,
            ..Default::default()
        })
        .await
        .expect("create bucket");
    let first = bucket.put("color", "red".into()).await.expect("put");
    assert_eq!(first, 1);
    let second = bucket.put("color", "blue".into()).await.expect("put");
    assert_eq!(second, 2);
    assert_eq!(
        bucket.get("color").await.expect("get").as_deref(),
        Some(&b"blue"[..])
    );
    let entry = bucket
        .entry("color")
        .await
        .expect("entry")
        .expect("present");
    assert_eq!(entry.revision, 2);
    assert!(bucket.update("color", "green".into(), 1).await.is_err());
    assert_eq!(
        bucket
            .update("color", "green".into(), 2)
            .await
            .expect("update"),
        3
    );
    assert!(bucket.create("color", "x".into()).await.is_err());
    assert_eq!(bucket.create("size", "10".into()).await.expect("create"), 4);
    bucket.delete("size").await.expect("delete");
    assert_eq!(bucket.get("size").await.expect("get deleted"), None);
    // A deleted key may be created again.
    bucket.create("size", "11".into()).await.expect("recreate");
    bucket.purge("color").await.expect("purge");
    assert_eq!(bucket.get("color").await.expect("get purged"), None);
    let status = bucket.status().await.expect("status");
    assert_eq!(status.bucket(), "settings");
    assert_eq!(status.history(), 5);
    let info = context
        .get_stream("KV_settings")
        .await
        .expect("stream")
        .info()
        .await
        .expect("info")
        .clone();
    // color: only its purge marker (a rollup); size: its value, delete marker and new value.
    assert_eq!(info.state.messages, 4, "{:?}", info.state);
    assert_eq!(info.state.first_sequence, 4);
    assert_eq!(info.state.last_sequence, 7);
}

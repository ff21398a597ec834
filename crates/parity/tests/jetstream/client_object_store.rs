//! async-nats's object store beyond put and get (issue 19's client-library sweep): chunked puts
//! with metadata and headers, watchers (with and without history, deletes included), links to
//! an object and to a bucket, a link followed by `get`, metadata updates and renames, list
//! after a delete, and a sealed bucket refusing puts. Passes against the real nats-server too
//! (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_object_store::`).

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::object_store::{self, ObjectInfo, ObjectMetadata, UpdateMetadata};
use async_nats::jetstream::{self};
use futures::{StreamExt, TryStreamExt};
use test_harness::client::connect;
use test_harness::TestServer;
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

async fn read_all(bucket: &object_store::ObjectStore, name: &str) -> Vec<u8> {
    let mut object = timeout(WAIT, bucket.get(name)).await.unwrap().unwrap();
    let mut bytes = Vec::new();
    timeout(WAIT, object.read_to_end(&mut bytes))
        .await
        .unwrap()
        .unwrap();
    bytes
}

async fn next_info(watch: &mut object_store::Watch) -> ObjectInfo {
    timeout(WAIT, watch.next())
        .await
        .expect("an update in time")
        .expect("watch open")
        .expect("no watch error")
}

#[tokio::test]
async fn watch_links_metadata_and_seal() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let mut bucket = context
        .create_object_store(object_store::Config {
            bucket: "files".into(),
            description: Some("sweep".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let other = context
        .create_object_store(object_store::Config {
            bucket: "elsewhere".into(),
            ..Default::default()
        })
        .await
        .unwrap();

    let data: Vec<u8> = (0..50_000u32).map(|index| (index % 251) as u8).collect();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Content-Kind", "sample");
    let info = bucket
        .put(
            ObjectMetadata {
                name: "data.bin".into(),
                description: Some("fifty thousand bytes".into()),
                chunk_size: Some(8 * 1024),
                metadata: HashMap::from([("owner".to_string(), "sweep".to_string())]),
                headers: Some(headers),
            },
            &mut data.as_slice(),
        )
        .await
        .unwrap();
    assert_eq!((info.size, info.chunks), (50_000, 7));
    assert!(info
        .digest
        .as_deref()
        .is_some_and(|digest| digest.starts_with("SHA-256=")));
    let mut history = bucket.watch_with_history().await.unwrap();
    let seen = next_info(&mut history).await;
    assert_eq!(
        (seen.name.as_str(), seen.size, seen.deleted),
        ("data.bin", 50_000, false)
    );
    let mut updates = bucket.watch().await.unwrap();

    let read = bucket.info("data.bin").await.unwrap();
    assert_eq!(read.description.as_deref(), Some("fifty thousand bytes"));
    assert_eq!(
        read.metadata.get("owner").map(String::as_str),
        Some("sweep")
    );
    assert_eq!(
        read.headers
            .as_ref()
            .and_then(|headers| headers.get("Content-Kind"))
            .map(|value| value.as_str()),
        Some("sample")
    );
    assert_eq!(read_all(&bucket, "data.bin").await, data);

    let link = bucket.add_link("alias", &read).await.unwrap();
    let target = link.options.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(
        (target.bucket.as_str(), target.name.as_deref()),
        ("files", Some("data.bin"))
    );
    assert_eq!(read_all(&bucket, "alias").await, data);
    let bucket_link = bucket.add_bucket_link("other", "elsewhere").await.unwrap();
    assert!(bucket_link.options.unwrap().link.unwrap().name.is_none());
    for name in ["alias", "other"] {
        assert_eq!(next_info(&mut updates).await.name, name);
        assert_eq!(next_info(&mut history).await.name, name);
    }

    bucket
        .update_metadata(
            "data.bin",
            UpdateMetadata {
                name: "renamed.bin".into(),
                description: Some("moved".into()),
                metadata: HashMap::new(),
                headers: None,
            },
        )
        .await
        .unwrap();
    assert!(bucket.info("data.bin").await.is_err());
    let renamed = bucket.info("renamed.bin").await.unwrap();
    assert_eq!(renamed.description.as_deref(), Some("moved"));
    assert_eq!(renamed.size, 50_000);
    assert_eq!(read_all(&bucket, "renamed.bin").await, data);
    // The watcher sees the object under its new name.
    loop {
        let info = next_info(&mut updates).await;
        if info.name == "renamed.bin" {
            assert!(!info.deleted);
            break;
        }
    }

    bucket.delete("renamed.bin").await.unwrap();
    let deleted = loop {
        let info = next_info(&mut updates).await;
        if info.name == "renamed.bin" && info.deleted {
            break info;
        }
    };
    assert_eq!(deleted.size, 0);
    let mut names: Vec<String> = bucket
        .list()
        .await
        .unwrap()
        .map_ok(|info| info.name)
        .try_collect()
        .await
        .unwrap();
    names.sort();
    assert_eq!(names, ["alias", "other"]);

    drop(other);
    bucket.seal().await.unwrap();
    let sealed = context
        .get_stream("OBJ_files")
        .await
        .unwrap()
        .cached_info()
        .config
        .sealed;
    assert!(sealed);
    let refused = bucket.put("late.bin", &mut &b"late"[..]).await;
    assert!(refused.is_err(), "a sealed bucket refuses puts");
}

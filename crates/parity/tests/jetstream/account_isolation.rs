//! Accounts keep their Key-Value and object-store buckets apart (issue 16's isolation tests):
//! the same bucket name in two accounts holds two buckets, a key or object written in one is
//! never read through the other, and a user of one account reaches only its own account's
//! `$JS.API` (asking for the other's bucket stream by name finds nothing). Passes against the
//! real nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test
//! jetstream account_isolation::`).

use std::time::Duration;

use async_nats::jetstream::{self, kv, object_store};
use serde_json::Value;
use test_harness::client::api;
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

use crate::account_limits::{connect_as, server};

const WAIT: Duration = Duration::from_secs(5);

async fn read_object(bucket: &object_store::ObjectStore, name: &str) -> Vec<u8> {
    let mut object = timeout(WAIT, bucket.get(name))
        .await
        .expect("get in time")
        .expect("object found");
    let mut bytes = Vec::new();
    timeout(WAIT, object.read_to_end(&mut bytes))
        .await
        .expect("read in time")
        .expect("read");
    bytes
}

#[tokio::test]
async fn key_value_buckets_of_the_same_name_in_two_accounts_never_meet() {
    let server = server();
    let a_client = connect_as(&server, "a").await;
    let b_client = connect_as(&server, "d").await;
    let a = jetstream::new(a_client.clone());
    let b = jetstream::new(b_client.clone());

    let a_bucket = a
        .create_key_value(kv::Config {
            bucket: "config".into(),
            history: 5,
            ..Default::default()
        })
        .await
        .expect("A creates its bucket");
    a_bucket
        .put("region", "a-only".into())
        .await
        .expect("A puts");

    // B sees no bucket of that name, and its `$JS.API` does not know A's stream.
    assert!(
        b.get_key_value("config").await.is_err(),
        "B opened A's bucket"
    );
    let info: Value = api(&b_client, "$JS.API.STREAM.INFO.KV_config", "").await;
    assert_eq!(info["error"]["err_code"], 10059, "{info}");
    let names: Value = api(&b_client, "$JS.API.STREAM.NAMES", "").await;
    assert_eq!(names["total"], 0, "{names}");

    // B's bucket of the same name is its own: neither account reads the other's value.
    let b_bucket = b
        .create_key_value(kv::Config {
            bucket: "config".into(),
            ..Default::default()
        })
        .await
        .expect("B creates a bucket of the same name");
    assert!(
        b_bucket.get("region").await.expect("B reads").is_none(),
        "B read A's key"
    );
    b_bucket
        .put("region", "b-only".into())
        .await
        .expect("B puts");
    let seen_by_a = a_bucket.get("region").await.expect("A reads");
    assert_eq!(seen_by_a.as_deref(), Some(&b"a-only"[..]));
    let seen_by_b = b_bucket.get("region").await.expect("B reads");
    assert_eq!(seen_by_b.as_deref(), Some(&b"b-only"[..]));

    // A's history holds only A's writes.
    let a_history = a_bucket.entry("region").await.expect("A's entry");
    assert_eq!(a_history.map(|entry| entry.revision), Some(1));

    // Deleting B's bucket leaves A's.
    b.delete_key_value("config")
        .await
        .expect("B deletes its bucket");
    let seen_by_a = a_bucket
        .get("region")
        .await
        .expect("A reads after B's delete");
    assert_eq!(seen_by_a.as_deref(), Some(&b"a-only"[..]));
}

#[tokio::test]
async fn object_stores_of_the_same_name_in_two_accounts_never_meet() {
    let server = server();
    let a_client = connect_as(&server, "a").await;
    let b_client = connect_as(&server, "d").await;
    let a = jetstream::new(a_client);
    let b = jetstream::new(b_client.clone());

    let a_store = a
        .create_object_store(object_store::Config {
            bucket: "files".into(),
            ..Default::default()
        })
        .await
        .expect("A creates its store");
    let a_data: Vec<u8> = (0..40_000u32).map(|index| (index % 251) as u8).collect();
    a_store
        .put("report", &mut a_data.as_slice())
        .await
        .expect("A puts");

    assert!(
        b.get_object_store("files").await.is_err(),
        "B opened A's object store"
    );
    let info: Value = api(&b_client, "$JS.API.STREAM.INFO.OBJ_files", "").await;
    assert_eq!(info["error"]["err_code"], 10059, "{info}");

    let b_store = b
        .create_object_store(object_store::Config {
            bucket: "files".into(),
            ..Default::default()
        })
        .await
        .expect("B creates a store of the same name");
    assert!(b_store.info("report").await.is_err(), "B found A's object");
    b_store
        .put("report", &mut &b"b's report"[..])
        .await
        .expect("B puts");
    assert_eq!(read_object(&a_store, "report").await, a_data);
    assert_eq!(read_object(&b_store, "report").await, b"b's report");
}

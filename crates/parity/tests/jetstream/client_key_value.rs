//! async-nats's key-value watchers, history and key listings (issue 19's client-library sweep):
//! `watch_with_history` of one key, a wildcard and many keys (the latest values, `delta` and
//! `seen_current`, then the live updates), `watch_all` and `watch_many` (updates only),
//! `watch_from_revision`, `history` with its delete and purge markers, `keys`, `entry_for_revision`,
//! `delete_expect_revision`, and per-key TTLs with limit markers. Passes against the real
//! nats-server too (`NATS_SERVER_BIN=$(which nats-server) cargo test -p parity --test jetstream client_key_value::`).

use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation, Store, Watch};
use async_nats::jetstream::{self, context::Context};
use futures::{StreamExt, TryStreamExt};
use test_harness::client::connect;
use test_harness::TestServer;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

async fn bucket(context: &Context, name: &str) -> Store {
    context
        .create_key_value(kv::Config {
            bucket: name.into(),
            history: 10,
            ..Default::default()
        })
        .await
        .unwrap()
}

/// The next entry as (key, value, revision, operation).
async fn next(watch: &mut Watch) -> (String, String, u64, Operation) {
    let entry = timeout(WAIT, watch.next())
        .await
        .expect("an entry in time")
        .expect("watch open")
        .expect("no watch error");
    (
        entry.key,
        String::from_utf8_lossy(&entry.value).into_owned(),
        entry.revision,
        entry.operation,
    )
}

async fn quiet(watch: &mut Watch) {
    let more = timeout(Duration::from_millis(300), watch.next()).await;
    assert!(more.is_err(), "no more entries: {more:?}");
}

/// The purge of "a" is a rollup that removes revision 5 from the stream: every watcher reads
/// revision 5 before the next updates are published. Unsynchronised (three more round trips
/// before the purge) the test raced the watchers' consumers: rnats missed revision 5 under CPU
/// load 7 runs in 10 while parking_lot's store lock yielded its core (issue 19; std's mutex
/// since), and once more after that (the lead's CI on 6ec4473: 8 read where 5 was due),
/// the race nats-server shows too in `watch_many_sees_every_update_of_its_keys`.
#[tokio::test]
async fn watchers_initial_values_then_updates() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let store = bucket(&context, "watched").await;
    store.put("a", "1".into()).await.unwrap();
    store.put("b", "1".into()).await.unwrap();
    store.put("a", "2".into()).await.unwrap();
    store.put("c.x", "1".into()).await.unwrap();

    // With history: the latest value of each key, in stream order, the last one current.
    let mut all = store.watch_with_history(">").await.unwrap();
    let mut initial = Vec::new();
    for _ in 0..3 {
        let entry = timeout(WAIT, all.next()).await.unwrap().unwrap().unwrap();
        initial.push((
            entry.key.clone(),
            entry.revision,
            entry.delta,
            entry.seen_current,
        ));
    }
    assert_eq!(
        initial,
        [
            ("b".to_string(), 2, 2, false),
            ("a".to_string(), 3, 1, false),
            ("c.x".to_string(), 4, 0, true)
        ]
    );
    let mut one = store.watch_with_history("a").await.unwrap();
    assert_eq!(
        next(&mut one).await,
        ("a".into(), "2".into(), 3, Operation::Put)
    );
    let mut wildcard = store.watch_with_history("c.*").await.unwrap();
    assert_eq!(next(&mut wildcard).await.0, "c.x");
    // Without history: only what comes next.
    let mut updates = store.watch_all().await.unwrap();
    quiet(&mut updates).await;

    store.put("a", "3".into()).await.unwrap();
    // Revision 5 read by every watcher before the purge of "a" rolls it up (as in
    // watch_many_sees_every_update_of_its_keys below).
    for watch in [&mut all, &mut updates, &mut one] {
        assert_eq!(
            next(watch).await,
            ("a".into(), "3".into(), 5, Operation::Put)
        );
    }
    store.delete("b").await.unwrap();
    store.put("c.y", "1".into()).await.unwrap();
    store.purge("a").await.unwrap();
    for watch in [&mut all, &mut updates] {
        assert_eq!(
            next(watch).await,
            ("b".into(), "".into(), 6, Operation::Delete)
        );
        assert_eq!(
            next(watch).await,
            ("c.y".into(), "1".into(), 7, Operation::Put)
        );
        assert_eq!(
            next(watch).await,
            ("a".into(), "".into(), 8, Operation::Purge)
        );
        quiet(watch).await;
    }
    assert_eq!(next(&mut one).await.3, Operation::Purge);
    quiet(&mut one).await;
    assert_eq!(next(&mut wildcard).await.0, "c.y");
    quiet(&mut wildcard).await;
}

/// `watch_many` is an ordered consumer with several filter subjects: it sees the updates of
/// its keys and not the others (revision 7, "c"), the delete and the purge markers. Revision 5
/// is read before the purge of "a" rolls it up: a watcher reading it afterwards finds it gone,
/// on nats-server as on rnats (both failed the unsynchronised form about 1 run in 100 with the
/// CPU oversubscribed, 4 copies in parallel beside 2 busy loops on 2 cores: nats-server 2.15.1
/// 2/200, rnats 1-2/200), a race in the test, not in the servers.
#[tokio::test]
async fn watch_many_sees_every_update_of_its_keys() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let store = bucket(&context, "many").await;
    store.put("a", "1".into()).await.unwrap();
    store.put("b", "1".into()).await.unwrap();
    store.put("a", "2".into()).await.unwrap();
    store.put("c", "1".into()).await.unwrap();
    let mut many = store.watch_many_with_history(["a", "b"]).await.unwrap();
    assert_eq!(next(&mut many).await.0, "b");
    assert_eq!(next(&mut many).await.0, "a");
    let mut many_updates = store.watch_many(["a", "b"]).await.unwrap();
    store.put("a", "3".into()).await.unwrap();
    for watch in [&mut many, &mut many_updates] {
        assert_eq!(
            next(watch).await,
            ("a".into(), "3".into(), 5, Operation::Put)
        );
    }
    store.delete("b").await.unwrap();
    store.put("c", "2".into()).await.unwrap();
    store.purge("a").await.unwrap();
    for watch in [&mut many, &mut many_updates] {
        assert_eq!(
            next(watch).await,
            ("b".into(), "".into(), 6, Operation::Delete)
        );
        assert_eq!(
            next(watch).await,
            ("a".into(), "".into(), 8, Operation::Purge)
        );
        quiet(watch).await;
    }
}

#[tokio::test]
async fn watch_from_revision_replays_every_revision() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let store = bucket(&context, "replayed").await;
    for value in ["1", "2", "3"] {
        store.put("k", value.into()).await.unwrap();
    }
    store.put("other", "x".into()).await.unwrap();
    let mut from = store.watch_from_revision("k", 2).await.unwrap();
    assert_eq!(next(&mut from).await.2, 2);
    assert_eq!(next(&mut from).await.2, 3);
    quiet(&mut from).await;
    let mut all_from = store.watch_all_from_revision(3).await.unwrap();
    assert_eq!(next(&mut all_from).await.2, 3);
    assert_eq!(next(&mut all_from).await.0, "other");
    quiet(&mut all_from).await;
    store.put("k", "4".into()).await.unwrap();
    assert_eq!(next(&mut from).await.2, 5);
    assert_eq!(next(&mut all_from).await.2, 5);
}

#[tokio::test]
async fn history_keys_and_revisions() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let store = bucket(&context, "histories").await;
    store.put("k", "1".into()).await.unwrap();
    store.put("k", "2".into()).await.unwrap();
    store.put("gone", "x".into()).await.unwrap();
    store.delete("k").await.unwrap();
    store.put("k", "3".into()).await.unwrap();
    store.put("purged", "x".into()).await.unwrap();
    store.purge("purged").await.unwrap();

    let history: Vec<kv::Entry> = store
        .history("k")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let summary: Vec<(u64, Operation)> = history
        .iter()
        .map(|entry| (entry.revision, entry.operation))
        .collect();
    assert_eq!(
        summary,
        [
            (1, Operation::Put),
            (2, Operation::Put),
            (4, Operation::Delete),
            (5, Operation::Put)
        ]
    );
    let purged: Vec<kv::Entry> = store
        .history("purged")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(purged.len(), 1);
    assert_eq!(purged[0].operation, Operation::Purge);

    let mut keys: Vec<String> = store.keys().await.unwrap().try_collect().await.unwrap();
    keys.sort();
    assert_eq!(keys, ["gone", "k"]);

    let old = store.entry_for_revision("k", 2).await.unwrap().unwrap();
    assert_eq!(&old.value[..], b"2");
    assert!(store.entry_for_revision("k", 3).await.unwrap().is_none());

    let refused = store.delete_expect_revision("gone", Some(1)).await;
    assert!(refused.is_err(), "revision 1 is not the last of gone");
    store.delete_expect_revision("gone", Some(3)).await.unwrap();
    assert!(store.get("gone").await.unwrap().is_none());
    let error = store.update("k", "x".into(), 4).await.unwrap_err();
    assert_eq!(error.kind(), kv::UpdateErrorKind::WrongLastRevision);
    let error = store.create("k", "x".into()).await.unwrap_err();
    assert_eq!(error.kind(), kv::CreateErrorKind::AlreadyExists);
}

#[tokio::test]
async fn per_key_ttl_with_limit_markers() {
    let server = TestServer::jetstream();
    let context = jetstream::new(connect(&server).await);
    let store = context
        .create_key_value(kv::Config {
            bucket: "expiring".into(),
            limit_markers: Some(Duration::from_secs(1)),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut watch = store.watch_all().await.unwrap();
    store
        .create_with_ttl("short", "lived".into(), Duration::from_secs(1))
        .await
        .unwrap();
    store.put("long", "lived".into()).await.unwrap();
    assert_eq!(next(&mut watch).await.0, "short");
    assert_eq!(next(&mut watch).await.0, "long");
    let marker = timeout(Duration::from_secs(10), watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(marker.key, "short");
    assert_eq!(marker.operation, Operation::Purge);
    assert!(store.get("short").await.unwrap().is_none());
    assert_eq!(
        store.get("long").await.unwrap().as_deref(),
        Some(&b"lived"[..])
    );
}

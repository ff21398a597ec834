//! Criterion benches of the FileStore hot paths:
//! `cargo bench -p nats-store --bench store`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nats_store::{FileStore, FileStoreOptions, StreamStore, StreamStoreConfig, SyncPolicy};

const BATCH: u64 = 100;

fn open(dir: &std::path::Path, sync: SyncPolicy) -> FileStore {
    FileStore::open(
        dir,
        StreamStoreConfig::default(),
        FileStoreOptions {
            sync,
            ..FileStoreOptions::default()
        },
    )
    .expect("open")
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for (name, payload, sync) in [
        ("1KB_interval", 1024usize, SyncPolicy::default()),
        ("128B_interval", 128, SyncPolicy::default()),
        ("1KB_always_group100", 1024, SyncPolicy::Always),
        ("128B_always_group100", 128, SyncPolicy::Always),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = open(&dir.path().join("s"), sync);
        let body = vec![7u8; payload];
        group.throughput(Throughput::Bytes(BATCH * payload as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    store
                        .store_msg("bench.subject", b"", &body, None)
                        .expect("store");
                }
                store.flush().expect("flush");
            })
        });
        // Keep the disk use of the bench bounded.
        store.purge().expect("purge");
        store.flush().expect("flush");
    }
    group.finish();
}

fn reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = open(&dir.path().join("s"), SyncPolicy::default());
    let count = 1_000_000u64;
    for index in 0..count {
        store
            .store_msg(&format!("kv.b.k{index}"), b"", &[1u8; 32], None)
            .expect("store");
        if index % 10_000 == 0 {
            store.flush().expect("flush");
        }
    }
    store.flush().expect("flush");
    let mut group = c.benchmark_group("read_1M_subjects");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    let mut probe = 0u64;
    group.bench_function("load", |b| {
        b.iter(|| {
            probe = (probe + 7919) % count;
            store.load(probe + 1).expect("load")
        })
    });
    group.bench_function("load_last_literal", |b| {
        b.iter_batched(
            || {
                probe = (probe + 7919) % count;
                format!("kv.b.k{probe}")
            },
            |subject| store.load_last(&subject).expect("load_last"),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("num_pending_literal", |b| {
        b.iter_batched(
            || {
                probe = (probe + 7919) % count;
                format!("kv.b.k{probe}")
            },
            |subject| store.num_pending(&subject, 1, false),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("num_pending_all_mid_stream", |b| {
        b.iter(|| store.num_pending(">", count / 2, false))
    });
    group.sample_size(10);
    group.bench_function("num_pending_wildcard_1M_subjects", |b| {
        b.iter(|| store.num_pending("kv.b.*", count / 2, false))
    });
    // A filter whose wildcard comes before the distinguishing token: one match among 1M subjects.
    group.bench_function("num_pending_narrow_wildcard_1M_subjects", |b| {
        b.iter(|| store.num_pending("kv.*.k500000", 1, false))
    });
    group.bench_function("load_last_narrow_wildcard_1M_subjects", |b| {
        b.iter(|| store.load_last("kv.*.k500000").expect("load_last"))
    });
    group.finish();
}

criterion_group!(benches, append, reads);
criterion_main!(benches);

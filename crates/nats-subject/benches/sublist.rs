//! Sublist matching: literal, `*`, `>` and queue subscriptions; 100k subscriptions; cache hit and
//! miss; insert/remove churn.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use nats_subject::{LocalMatchCache, Sublist};

/// 100k subscriptions spread like a real deployment: mostly literal, some wildcards, some queues.
fn populated(count: u32) -> Sublist<u32> {
    let sublist = Sublist::new();
    for index in 0..count {
        let subject = format!("tenant{}.orders.{}.created", index % 100, index);
        match index % 10 {
            0 => sublist.insert(
                &format!("tenant{}.orders.*.created", index % 100),
                None,
                index,
            ),
            1 => sublist.insert(&format!("tenant{}.>", index % 100), Some("workers"), index),
            _ => sublist.insert(&subject, None, index),
        }
        .expect("valid benchmark subject");
    }
    sublist
}

fn small(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("sublist_small");
    let sublist: Sublist<u32> = Sublist::new();
    sublist.insert("foo.bar.baz", None, 1).unwrap();
    sublist.insert("foo.*.baz", None, 2).unwrap();
    sublist.insert("foo.>", None, 3).unwrap();
    sublist.insert("foo.bar.baz", Some("q"), 4).unwrap();
    sublist.insert("foo.bar.baz", Some("q"), 5).unwrap();
    group.bench_function("match_cache_hit", |bencher| {
        sublist.matches("foo.bar.baz");
        bencher.iter(|| black_box(sublist.matches(black_box("foo.bar.baz"))))
    });
    let mut local = LocalMatchCache::default();
    group.bench_function("match_local_cache_hit", |bencher| {
        bencher.iter(|| black_box(local.matches(&sublist, black_box("foo.bar.baz")).len()))
    });
    let uncached: Sublist<u32> = Sublist::with_cache_capacity(0);
    for (filter, queue, value) in sublist.subscriptions() {
        uncached.insert(&filter, queue.as_deref(), value).unwrap();
    }
    group.bench_function("match_cache_miss_literal_star_gt_queue", |bencher| {
        bencher.iter(|| black_box(uncached.matches(black_box("foo.bar.baz"))))
    });
    group.bench_function("match_cache_miss_gt_only", |bencher| {
        bencher.iter(|| black_box(uncached.matches(black_box("foo.x.y.z"))))
    });
    group.bench_function("insert_remove_literal", |bencher| {
        bencher.iter(|| {
            sublist.insert("churn.subject", None, 9).unwrap();
            sublist.remove("churn.subject", None, &9)
        })
    });
    group.bench_function("insert_remove_wildcard", |bencher| {
        bencher.iter(|| {
            sublist.insert("churn.*", None, 9).unwrap();
            sublist.remove("churn.*", None, &9)
        })
    });
    group.finish();
}

fn large(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("sublist_100k");
    let sublist = populated(100_000);
    group.bench_function("match_cache_hit", |bencher| {
        sublist.matches("tenant42.orders.42.created");
        bencher.iter(|| black_box(sublist.matches(black_box("tenant42.orders.42.created"))))
    });
    let uncached: Sublist<u32> = Sublist::with_cache_capacity(0);
    for (filter, queue, value) in sublist.subscriptions() {
        uncached.insert(&filter, queue.as_deref(), value).unwrap();
    }
    group.bench_function("match_cache_miss", |bencher| {
        bencher.iter(|| black_box(uncached.matches(black_box("tenant42.orders.42.created"))))
    });
    let mut index = 0u32;
    group.bench_function("match_rotating_subjects", |bencher| {
        // More distinct subjects than the cache holds: a mix of hits and misses with eviction.
        let subjects: Vec<String> = (0..4096)
            .map(|i| format!("tenant{}.orders.{}.created", i % 100, i))
            .collect();
        bencher.iter(|| {
            index = (index + 1) % 4096;
            black_box(sublist.matches(&subjects[index as usize]))
        })
    });
    group.finish();
}

criterion_group!(benches, small, large);
criterion_main!(benches);

//! Sublist behaviour: a property test against a naive linear matcher, queue grouping, cache
//! invalidation, concurrency, stats.

use std::collections::BTreeMap;
use std::sync::Arc;

use nats_subject::*;
use proptest::prelude::*;

/// A match result in a comparable shape: sorted plain members, queue name → sorted members.
fn normalize(result: &MatchResult<u32>) -> (Vec<u32>, BTreeMap<String, Vec<u32>>) {
    let mut plain = result.plain.clone();
    plain.sort_unstable();
    let mut queues = BTreeMap::new();
    for (name, members) in &result.queues {
        let entry: &mut Vec<u32> = queues.entry(name.to_string()).or_default();
        entry.extend(members.iter().copied());
    }
    for members in queues.values_mut() {
        members.sort_unstable();
    }
    // A group listed twice would be a bug: the names must be distinct.
    assert_eq!(
        queues.len(),
        result.queues.len(),
        "queue group split in two: {:?}",
        result.queues
    );
    (plain, queues)
}

#[derive(Default)]
struct NaiveSublist {
    entries: Vec<(String, Option<String>, u32)>,
}

impl NaiveSublist {
    fn matches(&self, subject: &str) -> (Vec<u32>, BTreeMap<String, Vec<u32>>) {
        let mut plain = Vec::new();
        let mut queues: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (filter, queue, value) in &self.entries {
            if subject_matches_filter(subject, filter) {
                match queue {
                    None => plain.push(*value),
                    Some(queue) => queues.entry(queue.clone()).or_default().push(*value),
                }
            }
        }
        plain.sort_unstable();
        for members in queues.values_mut() {
            members.sort_unstable();
        }
        (plain, queues)
    }
}

#[derive(Debug, Clone)]
enum Operation {
    Insert(String, Option<String>),
    Remove(usize),
    Match(String),
}

fn filter() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "*"]), 1..4).prop_flat_map(
        |tokens| {
            let joined = tokens.join(".");
            prop_oneof![
                Just(joined.clone()),
                Just(format!("{joined}.>")),
                Just(">".to_owned())
            ]
        },
    )
}

fn literal() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..5)
        .prop_map(|tokens| tokens.join("."))
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        3 => (filter(), prop::option::of(prop::sample::select(vec!["q1", "q2"])))
            .prop_map(|(filter, queue)| Operation::Insert(filter, queue.map(str::to_owned))),
        1 => any::<usize>().prop_map(Operation::Remove),
        4 => literal().prop_map(Operation::Match),
    ]
}

fn run_against_naive(cache_capacity: usize, operations: &[Operation]) -> Result<(), TestCaseError> {
    let sublist: Sublist<u32> = Sublist::with_cache_capacity(cache_capacity);
    let mut naive = NaiveSublist::default();
    let mut next_value = 0u32;
    for operation in operations {
        match operation {
            Operation::Insert(filter, queue) => {
                sublist
                    .insert(filter, queue.as_deref(), next_value)
                    .unwrap();
                naive
                    .entries
                    .push((filter.clone(), queue.clone(), next_value));
                next_value += 1;
            }
            Operation::Remove(index) => {
                if naive.entries.is_empty() {
                    prop_assert!(!sublist.remove("a", None, &u32::MAX));
                    continue;
                }
                let (filter, queue, value) = naive.entries.swap_remove(index % naive.entries.len());
                prop_assert!(sublist.remove(&filter, queue.as_deref(), &value));
                prop_assert!(!sublist.remove(&filter, queue.as_deref(), &value));
            }
            Operation::Match(subject) => {
                // Twice: the second answer may come from the cache and must be the same.
                for _ in 0..2 {
                    prop_assert_eq!(
                        normalize(&sublist.matches(subject)),
                        naive.matches(subject),
                        "subject {}",
                        subject
                    );
                }
            }
        }
        prop_assert_eq!(sublist.count(), naive.entries.len());
    }
    let mut all: Vec<(String, Option<String>, u32)> = sublist
        .subscriptions()
        .into_iter()
        .map(|(subject, queue, value)| (subject, queue.map(|queue| queue.to_string()), value))
        .collect();
    all.sort();
    let mut expected = naive.entries.clone();
    expected.sort();
    prop_assert_eq!(all, expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_like_a_naive_linear_scan(operations in prop::collection::vec(operation(), 1..60)) {
        run_against_naive(DEFAULT_CACHE_CAPACITY, &operations)?;
    }

    #[test]
    fn matches_like_a_naive_linear_scan_with_a_tiny_cache(operations in prop::collection::vec(operation(), 1..60)) {
        run_against_naive(3, &operations)?;
    }

    #[test]
    fn matches_like_a_naive_linear_scan_without_cache(operations in prop::collection::vec(operation(), 1..60)) {
        run_against_naive(0, &operations)?;
    }
}

#[test]
fn queue_groups_are_grouped_by_name_across_filters() {
    let sublist: Sublist<u32> = Sublist::new();
    sublist.insert("orders.new", Some("workers"), 1).unwrap();
    sublist.insert("orders.*", Some("workers"), 2).unwrap();
    sublist.insert("orders.>", Some("auditors"), 3).unwrap();
    sublist.insert("orders.new", None, 4).unwrap();
    let result = sublist.matches("orders.new");
    let (plain, queues) = normalize(&result);
    assert_eq!(plain, vec![4]);
    assert_eq!(queues["workers"], vec![1, 2]);
    assert_eq!(queues["auditors"], vec![3]);
    assert_eq!(result.len(), 4);
    assert!(!result.is_empty());
    assert!(sublist.matches("other").is_empty());
    assert!(sublist.has_interest("orders.x"));
    assert!(!sublist.has_interest("orders"));
}

#[test]
fn invalid_input_is_refused() {
    let sublist: Sublist<u32> = Sublist::new();
    assert!(matches!(
        sublist.insert("foo..bar", None, 1),
        Err(SubjectError::InvalidSubject(_))
    ));
    assert!(matches!(
        sublist.insert("foo.>.bar", None, 1),
        Err(SubjectError::InvalidSubject(_))
    ));
    assert!(matches!(
        sublist.insert("foo", Some("a b"), 1),
        Err(SubjectError::InvalidQueueName(_))
    ));
    assert_eq!(sublist.count(), 0);
    assert!(!sublist.remove("foo..bar", None, &1));
    sublist.insert(">", None, 1).unwrap();
    assert!(sublist.matches("foo..bar").is_empty());
    assert!(sublist.matches("").is_empty());
    assert!(sublist.matches("foo.").is_empty());
}

#[test]
fn cache_is_invalidated_by_inserts_and_removes() {
    let sublist: Sublist<u32> = Sublist::new();
    sublist.insert("a.b", None, 1).unwrap();
    assert_eq!(sublist.matches("a.b").plain, vec![1]);
    let cached = sublist.matches("a.b");
    assert!(
        Arc::ptr_eq(&cached, &sublist.matches("a.b")),
        "second match should hit the cache"
    );
    let generation = sublist.generation();
    sublist.insert("a.*", None, 2).unwrap();
    assert_ne!(sublist.generation(), generation);
    assert_eq!(normalize(&sublist.matches("a.b")).0, vec![1, 2]);
    sublist.insert("x.y", None, 3).unwrap();
    assert!(sublist.remove("a.*", None, &2));
    assert_eq!(sublist.matches("a.b").plain, vec![1]);
    sublist.clear_cache();
    assert_eq!(sublist.stats().num_cache, 0);
    assert_eq!(sublist.matches("a.b").plain, vec![1]);
}

#[test]
fn cache_stays_bounded() {
    let sublist: Sublist<u32> = Sublist::with_cache_capacity(64);
    sublist.insert(">", None, 1).unwrap();
    for index in 0..1000 {
        assert_eq!(sublist.matches(&format!("s.{index}")).plain, vec![1]);
    }
    assert!(sublist.stats().num_cache <= 64);
}

#[test]
fn a_full_cache_admits_only_subjects_seen_before() {
    let sublist: Sublist<u32> = Sublist::with_cache_capacity(8);
    sublist.insert("_INBOX.*.*", None, 1).unwrap();
    for index in 0..8 {
        sublist.matches(&format!("_INBOX.a.{index}"));
    }
    assert_eq!(sublist.stats().num_cache, 8);
    // Unique reply subjects pass through a full cache without displacing anything.
    let first = sublist.matches("_INBOX.a.0");
    for index in 100..1000 {
        assert_eq!(sublist.matches(&format!("_INBOX.b.{index}")).plain, vec![1]);
    }
    assert!(Arc::ptr_eq(&first, &sublist.matches("_INBOX.a.0")));
    // A subject that comes back is cached on its second miss.
    sublist.matches("_INBOX.c.1");
    let repeated = sublist.matches("_INBOX.c.1");
    assert!(Arc::ptr_eq(&repeated, &sublist.matches("_INBOX.c.1")));
    assert!(sublist.stats().num_cache <= 8);
}

#[test]
fn stats_count_like_subsz() {
    let sublist: Sublist<u32> = Sublist::new();
    sublist.insert("a", None, 1).unwrap();
    sublist.insert("a", Some("q"), 2).unwrap();
    sublist.insert("b", None, 3).unwrap();
    assert!(sublist.remove("b", None, &3));
    sublist.matches("a");
    sublist.matches("a");
    sublist.matches("a");
    sublist.matches("b");
    let stats = sublist.stats();
    assert_eq!(stats.num_subscriptions, 2);
    assert_eq!(stats.num_inserts, 3);
    assert_eq!(stats.num_removes, 1);
    assert_eq!(stats.num_matches, 4);
    assert_eq!(stats.num_cache, 2);
    assert!((stats.cache_hit_rate - 0.5).abs() < 1e-9, "{stats:?}");
    assert_eq!(stats.max_fanout, 2);
    assert!((stats.avg_fanout - 1.0).abs() < 1e-9, "{stats:?}");
}

#[test]
fn removing_prunes_and_keeps_others() {
    let sublist: Sublist<u32> = Sublist::new();
    sublist.insert("a.b.c", None, 1).unwrap();
    sublist.insert("a.b", None, 2).unwrap();
    sublist.insert("a.b", None, 2).unwrap();
    assert!(sublist.remove("a.b.c", None, &1));
    assert!(!sublist.remove("a.b.c", None, &1));
    assert!(!sublist.remove("a.b", Some("q"), &2));
    assert_eq!(sublist.matches("a.b").plain, vec![2, 2]);
    assert!(sublist.remove("a.b", None, &2));
    assert_eq!(sublist.matches("a.b").plain, vec![2]);
    assert_eq!(sublist.subscriptions(), vec![("a.b".to_owned(), None, 2)]);
}

#[test]
fn concurrent_readers_never_see_a_stale_cache() {
    let sublist: Arc<Sublist<u32>> = Arc::new(Sublist::new());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let sublist = Arc::clone(&sublist);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    sublist.matches("events.x");
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    for value in 0..2000u32 {
        let filter = if value % 2 == 0 {
            "events.*"
        } else {
            "events.>"
        };
        sublist.insert(filter, None, value).unwrap();
        assert!(
            sublist.matches("events.x").plain.contains(&value),
            "own insert {value} not visible"
        );
        if value % 3 == 0 {
            assert!(sublist.remove(filter, None, &value));
            assert!(
                !sublist.matches("events.x").plain.contains(&value),
                "own remove {value} not visible"
            );
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for reader in readers {
        reader.join().unwrap();
    }
    let expected = (0..2000u32).filter(|value| value % 3 != 0).count();
    assert_eq!(sublist.matches("events.x").plain.len(), expected);
}

#[test]
fn long_subjects_match_past_the_inline_token_limit() {
    let sublist: Sublist<u32> = Sublist::new();
    let tokens: Vec<String> = (0..40).map(|index| format!("t{index}")).collect();
    let subject = tokens.join(".");
    let mut star = tokens.clone();
    star[30] = "*".to_owned();
    sublist.insert(&subject, None, 1).unwrap();
    sublist.insert(&star.join("."), None, 2).unwrap();
    sublist
        .insert(&format!("{}.>", tokens[..20].join(".")), None, 3)
        .unwrap();
    sublist.insert(&format!("{}.x", subject), None, 4).unwrap();
    assert_eq!(normalize(&sublist.matches(&subject)).0, vec![1, 2, 3]);
    assert_eq!(
        normalize(&sublist.matches(&tokens[..16].join("."))).0,
        Vec::<u32>::new()
    );
}

#[test]
fn local_cache_follows_the_generation() {
    let sublist: Sublist<u32> = Sublist::new();
    let mut local: LocalMatchCache<u32> = LocalMatchCache::new(2);
    assert!(local.matches(&sublist, "a").is_empty());
    sublist.insert("a", None, 1).unwrap();
    assert_eq!(local.matches(&sublist, "a").plain, vec![1]);
    let first = Arc::clone(local.matches(&sublist, "a"));
    assert!(Arc::ptr_eq(&first, local.matches(&sublist, "a")));
    for subject in ["b", "c", "d", "e"] {
        local.matches(&sublist, subject);
    }
    assert!(local.len() <= 2);
    sublist.insert("*", None, 2).unwrap();
    assert_eq!(normalize(local.matches(&sublist, "a")).0, vec![1, 2]);
    assert!(sublist.remove("a", None, &1));
    assert_eq!(local.matches(&sublist, "a").plain, vec![2]);
    let mut disabled: LocalMatchCache<u32> = LocalMatchCache::new(0);
    assert_eq!(disabled.matches(&sublist, "x").plain, vec![2]);
    assert!(disabled.len() <= 1);
}

#[test]
fn local_cache_follows_a_move_to_another_sublist() {
    // Two sublists at the same generation: a connection moved to another account's must not be
    // answered from the first one's results.
    let first: Sublist<u32> = Sublist::new();
    let second: Sublist<u32> = Sublist::new();
    first.insert("a", None, 1).unwrap();
    second.insert("a", None, 2).unwrap();
    assert_eq!(first.generation(), second.generation());
    assert_ne!(first.id(), second.id());
    let mut local: LocalMatchCache<u32> = LocalMatchCache::default();
    assert_eq!(local.matches(&first, "a").plain, vec![1]);
    assert_eq!(local.matches(&second, "a").plain, vec![2]);
    assert_eq!(local.matches(&first, "a").plain, vec![1]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn local_cache_matches_like_the_sublist(operations in prop::collection::vec(operation(), 1..60)) {
        let sublist: Sublist<u32> = Sublist::with_cache_capacity(4);
        let mut local: LocalMatchCache<u32> = LocalMatchCache::new(3);
        let mut inserted: Vec<(String, Option<String>, u32)> = Vec::new();
        for (value, operation) in operations.iter().enumerate() {
            match operation {
                Operation::Insert(filter, queue) => {
                    sublist.insert(filter, queue.as_deref(), value as u32).unwrap();
                    inserted.push((filter.clone(), queue.clone(), value as u32));
                }
                Operation::Remove(index) if !inserted.is_empty() => {
                    let (filter, queue, value) = inserted.swap_remove(index % inserted.len());
                    prop_assert!(sublist.remove(&filter, queue.as_deref(), &value));
                }
                Operation::Remove(_) => {}
                Operation::Match(subject) => {
                    let expected = normalize(&sublist.matches(subject));
                    prop_assert_eq!(normalize(local.matches(&sublist, subject)), expected);
                }
            }
        }
    }
}

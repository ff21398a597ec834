use nats_subject::*;

#[test]
fn sublist_basics() {
    let list: Sublist<u32> = Sublist::new();
    list.insert("foo.bar", None, 1).unwrap();
    list.insert("foo.*", None, 2).unwrap();
    list.insert("foo.>", Some("q"), 3).unwrap();
    list.insert(">", Some("q"), 4).unwrap();
    let result = list.matches("foo.bar");
    let mut plain = result.plain.clone();
    plain.sort();
    assert_eq!(plain, vec![1, 2]);
    assert_eq!(result.queues.len(), 1);
    assert_eq!(result.queues[0].1.len(), 2);
    assert!(list.remove("foo.*", None, &2));
    assert_eq!(list.matches("foo.bar").plain, vec![1]);
    assert_eq!(list.count(), 3);
    assert_eq!(list.subscriptions().len(), 3);
}

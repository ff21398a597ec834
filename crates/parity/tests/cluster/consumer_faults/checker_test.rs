//! The consumer fault checker's self-test: it finds each kind of fault in a made-up history.

use super::*;

/// The checker finds each kind of fault in a made-up history (so a clean run means something).
#[test]
fn the_checker_finds_each_kind_of_fault() {
    let history = History {
        acked: vec![
            (0, "a".into(), 1, false),
            (0, "b".into(), 2, false),
            (0, "c".into(), 3, false),
        ],
        ..History::default()
    };
    let consumed: HashMap<&'static str, Shared> = [PULL, PUSH, ORDERED]
        .into_iter()
        .map(|name| (name, Shared::default()))
        .collect();
    for name in [PULL, PUSH, ORDERED] {
        let mut consumed = lock(&consumed[name]);
        for (seq, payload) in [(1, "a"), (2, "b"), (3, "c")] {
            consumed.delivery(seq, payload.into(), "", "");
            consumed.confirmed.insert(seq);
        }
        consumed.last_seq = 3;
    }
    let mut clean = Findings::default();
    check(&history, &consumed, &mut clean);
    assert!(clean.clean(), "{clean:#?}");
    assert_eq!(lock(&consumed[PULL]).confirmed_floor(), 3);

    {
        let mut pull = lock(&consumed[PULL]);
        pull.delivered.remove(&3); // c never delivered
        pull.delivery(1, "a".into(), "", ""); // a again after its ack was confirmed
        pull.pull_ends.insert("409 Consumer Deleted".into(), 1);
        let mut push = lock(&consumed[PUSH]);
        push.delivered.remove(&2);
        push.delivered.insert(4, "b".into()); // b at 4, acked at 2
        push.max_window = MAX_ACK_PENDING as usize + 1;
        push.delivery(1, "a".into(), "", ""); // a again after its ack was confirmed
        lock(&consumed[ORDERED])
            .disordered
            .push("b at 2 after 3".into());
    }
    let mut findings = Findings::default();
    check(&history, &consumed, &mut findings);
    assert_eq!(findings.undelivered.len(), 1, "{findings:#?}");
    assert_eq!(findings.misplaced.len(), 1, "{findings:#?}");
    assert_eq!(findings.forgotten.len(), 2, "{findings:#?}");
    assert_eq!(findings.over_max_ack_pending.len(), 1, "{findings:#?}");
    assert_eq!(findings.bad_pull_ends.len(), 1, "{findings:#?}");
    assert_eq!(findings.disordered.len(), 1, "{findings:#?}");

    // After the schedule: a floor below what was confirmed, acks pending that were confirmed.
    let info = |floor: u64, delivered: u64, pending: u64| {
        json!({"ack_floor": {"stream_seq": floor}, "delivered": {"stream_seq": delivered},
               "num_ack_pending": pending})
    };
    let still: HashMap<&'static str, Value> = [(PULL, info(3, 3, 0)), (PUSH, info(3, 3, 0))].into();
    assert!(check_still(&still, &consumed).is_empty());
    let behind: HashMap<&'static str, Value> =
        [(PULL, info(1, 3, 2)), (PUSH, info(3, 3, 0))].into();
    assert_eq!(check_still(&behind, &consumed).len(), 2);

    assert_eq!(
        ack_subject_sequence("$JS.ACK.S.C.1.42.7.1700000000.3"),
        Some(42)
    );
    assert_eq!(
        ack_subject_sequence("$JS.ACK.dom.hash.S.C.1.42.7.1700000000.3.tok"),
        Some(42)
    );
    assert_eq!(
        ack_subject_delivery("$JS.ACK.S.C.2.42.7.1700000000.3"),
        Some((2, 7))
    );
    assert_eq!(
        ack_subject_delivery("$JS.ACK.dom.hash.S.C.2.42.7.1700000000.3.tok"),
        Some((2, 7))
    );
}

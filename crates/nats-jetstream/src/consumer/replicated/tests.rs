//! Unit tests of the replicated consumers: records, apply, snapshots, proposals and the
//! leadership hand-over (`follow_leadership_change`).

use super::*;

/// A log that takes no proposal; `NoLog(false)`: its group has a member of an rnats build from
/// before the binary consumer records.
struct NoLog(bool);

impl Replicator for NoLog {
    fn submit(&self, _batch: Bytes, _term: Option<u64>) -> crate::SubmitFuture {
        Box::pin(async { Err(ReplicationError::NotLeader) })
    }
    fn leadership(&self) -> tokio::sync::watch::Receiver<Option<u64>> {
        tokio::sync::watch::channel(None).1
    }
    fn rebuilt(&self) {}
    fn lease(&self) -> Arc<dyn crate::Lease> {
        Arc::new(AtomicBool::new(true))
    }
    fn binary_consumer_records(&self) -> bool {
        self.0
    }
}

fn config() -> ConsumerConfig {
    serde_json::from_value(serde_json::json!({"durable_name": "C", "ack_policy": "explicit"}))
        .expect("config")
}

fn encoded(records: &[Record]) -> Vec<u8> {
    serde_json::to_vec(records).expect("records")
}

/// A log whose proposals resolve one per permit the test adds, failing while `fail`; its
/// leader lease holds while `lease`.
struct Gated {
    permits: Arc<tokio::sync::Semaphore>,
    fail: Arc<AtomicBool>,
    lease: Arc<AtomicBool>,
    /// The leadership the stream sees (none unless a test says so).
    leading: tokio::sync::watch::Sender<Option<u64>>,
}

impl Gated {
    fn new() -> Arc<Gated> {
        Arc::new(Gated {
            permits: Arc::new(tokio::sync::Semaphore::new(0)),
            fail: Arc::default(),
            lease: Arc::new(AtomicBool::new(true)),
            leading: tokio::sync::watch::channel(None).0,
        })
    }
}

impl Replicator for Gated {
    fn submit(&self, _batch: Bytes, _term: Option<u64>) -> crate::SubmitFuture {
        let (permits, fail) = (self.permits.clone(), self.fail.clone());
        let commit: crate::ProposeFuture = Box::pin(async move {
            if let Ok(permit) = permits.acquire().await {
                permit.forget();
            }
            if fail.load(Ordering::SeqCst) {
                Err(ReplicationError::NotLeader)
            } else {
                Ok(())
            }
        });
        Box::pin(async move { Ok((1, commit)) })
    }
    fn leadership(&self) -> tokio::sync::watch::Receiver<Option<u64>> {
        self.leading.subscribe()
    }
    fn rebuilt(&self) {}
    fn lease(&self) -> Arc<dyn crate::Lease> {
        self.lease.clone()
    }
}

/// A consumer's proposer over a gated log, and the AckSync answers it sends.
fn gated() -> (
    Arc<Gated>,
    Proposals,
    mpsc::UnboundedReceiver<crate::Message>,
) {
    let log = Gated::new();
    let replicas = ReplicatedConsumers::new(log.clone(), Weak::new());
    let router = crate::test_transport::TestRouter::new();
    let answers = router.channel("answer.>");
    let proposals = Proposals::spawn(replicas, "C".into(), router);
    (log, proposals, answers)
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_stopping_consumer_waits_for_its_proposals_and_confirms_nothing_after() {
    let (log, proposals, mut answers) = gated();
    proposals.send(vec![first_delivery(1, 1)], vec![Bytes::from("answer.1")]);
    let drained = Arc::new(AtomicBool::new(false));
    let drain = {
        let drained = drained.clone();
        async move {
            proposals.drain().await;
            drained.store(true, Ordering::SeqCst);
            proposals
        }
    };
    let drain = tokio::spawn(drain);
    settle().await;
    // The proposal is in flight: the consumer is not stopped yet (a next leadership here
    // would read a committed state without it).
    assert!(!drained.load(Ordering::SeqCst));
    assert!(answers.try_recv().is_err());
    log.permits.add_permits(1);
    let proposals = drain.await.expect("drain");
    assert_eq!(
        answers.recv().await.map(|m| m.subject),
        Some("answer.1".into())
    );
    // Closed: what is handed over after the drain is answered to nobody.
    proposals.send(vec![first_delivery(2, 2)], vec![Bytes::from("answer.2")]);
    log.permits.add_permits(1);
    settle().await;
    assert!(answers.try_recv().is_err());
}

#[tokio::test]
async fn after_a_failed_proposal_no_ack_is_confirmed() {
    let (log, proposals, mut answers) = gated();
    log.fail.store(true, Ordering::SeqCst);
    proposals.send(vec![first_delivery(1, 1)], vec![Bytes::from("answer.1")]);
    log.permits.add_permits(1);
    settle().await;
    // The log took the next one, but it would ack a delivery the log never recorded.
    log.fail.store(false, Ordering::SeqCst);
    let ack = ConsumerEntry::Acked {
        stream_seq: 1,
        consumer_seq: 1,
        all: false,
    };
    proposals.send(vec![ack], vec![Bytes::from("answer.2")]);
    proposals.send(Vec::new(), vec![Bytes::from("answer.3")]);
    log.permits.add_permits(2);
    proposals.drain().await;
    assert!(answers.try_recv().is_err());
}

/// A node losing the stream's leadership stops every consumer before it waits for any
/// drain: a consumer still running while another's proposals drain delivers what the
/// node applies from the next leader (duplicates of that leader's deliveries).
#[tokio::test]
async fn losing_the_leadership_stops_every_consumer_before_draining() {
    lose_the_leadership(false).await;
}

/// ... and before it takes the registry's admin lock: a CONSUMER.CREATE or DELETE holding it on
/// a leader cut off from its quorum (its proposal waits for the step-down) must not keep the
/// consumers delivering, nor the waiting pulls from hearing `409 Leadership Change`.
#[tokio::test]
async fn losing_the_leadership_stops_every_consumer_while_the_admin_lock_is_held() {
    lose_the_leadership(true).await;
}

/// Three replicated consumers with a proposal each that the log does not resolve yet lose the
/// leadership (with the admin lock held elsewhere meanwhile when `lock_held`): every one stops
/// at once; the change completes once the lock is free and the log resolves the drains.
async fn lose_the_leadership(lock_held: bool) {
    let log = Gated::new();
    let router = crate::test_transport::TestRouter::new();
    let transport: Arc<dyn Transport> = router.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = replicated_stream(&log, &transport, dir.path());
    let replicas = ReplicatedConsumers::new(log.clone(), Arc::downgrade(&stream));
    let names = ["A", "B", "C"];
    let created: Vec<Record> = names
        .iter()
        .map(|name| {
            let mut config = config();
            config.durable_name = name.to_string();
            Record::Create {
                name: name.to_string(),
                config: Box::new(config),
                created: 1,
                start_seq: 1,
            }
        })
        .collect();
    replicas.apply(&encoded(&created)).expect("apply");
    let consumers = Arc::new(Consumers::replicated_by(replicas.clone()));
    let home = Home {
        stream: &stream,
        consumers: &consumers,
        transport: &transport,
        domain: None,
    };
    activate(&home, &replicas);
    assert_eq!(consumers.all().len(), names.len());
    // Each consumer has a proposal in flight that the log does not resolve yet (a leader
    // cut off from its quorum).
    for consumer in consumers.all() {
        let proposals = consumer.replication.as_ref().expect("replicated");
        proposals.send(vec![first_delivery(1, 1)], Vec::new());
    }
    settle().await;
    let admin_lock = Arc::new(tokio::sync::Mutex::new(()));
    let held = if lock_held {
        Some(admin_lock.clone().lock_owned().await)
    } else {
        None
    };
    let deactivated = tokio::spawn({
        let (stream, consumers, replicas) = (stream.clone(), consumers.clone(), replicas);
        let transport = transport.clone();
        let admin_lock = admin_lock.clone();
        async move {
            let home = Home {
                stream: &stream,
                consumers: &consumers,
                transport: &transport,
                domain: None,
            };
            follow_leadership_change(&admin_lock, &home, &replicas, true, false).await
        }
    });
    let bound = tokio::time::Instant::now() + Duration::from_secs(5);
    while !consumers.all().is_empty() && tokio::time::Instant::now() < bound {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let running: Vec<String> = consumers.all().iter().map(|c| c.name.clone()).collect();
    assert!(
        running.is_empty(),
        "consumers still running while a drain waits (admin lock held elsewhere: {lock_held}): {running:?}"
    );
    assert!(!deactivated.is_finished(), "the drains wait for the log");
    drop(held);
    log.permits.add_permits(names.len());
    tokio::time::timeout(Duration::from_secs(5), deactivated)
        .await
        .expect("deactivated within the bound")
        .expect("deactivate");
    stream.stop(false).await;
}

/// A replicated memory stream `S` (subject `s`) proposing through `log`.
fn replicated_stream(
    log: &Arc<Gated>,
    transport: &Arc<dyn Transport>,
    dir: &std::path::Path,
) -> Arc<Stream> {
    let stream_config = serde_json::from_value(serde_json::json!({
        "name": "S", "subjects": ["s"], "storage": "memory", "num_replicas": 3,
        "max_msgs": -1, "max_bytes": -1, "max_msg_size": -1, "max_consumers": -1,
        "max_msgs_per_subject": -1,
    }))
    .expect("stream config");
    let context = crate::stream::IngestContext {
        transport: transport.clone(),
        sync_always: false,
        domain: None,
        usage: Arc::new(crate::resources::Usage::new(1 << 30, 1 << 30)),
        batch_limits: Default::default(),
    };
    let (stream, _machine) = Stream::start_replicated(
        stream_config,
        1,
        dir,
        crate::SyncPolicy::default(),
        context,
        log.clone(),
    )
    .expect("stream starts");
    stream
}

/// A replicated push consumer delivers nothing while its leader's lease is out (a leader
/// paused or cut off past it may have been replaced), keeps what is due, and delivers it once
/// the lease is back.
#[tokio::test]
async fn a_push_consumer_holds_its_deliveries_while_the_lease_is_out() {
    let log = Gated::new();
    log.permits.add_permits(1_000);
    // This node leads the stream (its ingest takes publishes), with the lease out below.
    log.leading.send_replace(Some(1));
    let router = crate::test_transport::TestRouter::new();
    let transport: Arc<dyn Transport> = router.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = replicated_stream(&log, &transport, dir.path());
    let replicas = ReplicatedConsumers::new(log.clone(), Arc::downgrade(&stream));
    let mut config = config();
    config.durable_name = "P".into();
    config.deliver_subject = "out".into();
    let create = Record::Create {
        name: "P".into(),
        config: Box::new(config),
        created: 1,
        start_seq: 1,
    };
    replicas.apply(&encoded(&[create])).expect("apply");
    let mut out = router.channel("out");
    let consumers = Arc::new(Consumers::replicated_by(replicas.clone()));
    let home = Home {
        stream: &stream,
        consumers: &consumers,
        transport: &transport,
        domain: None,
    };
    log.lease.store(false, Ordering::SeqCst);
    activate(&home, &replicas);
    let mut pub_ack = router.channel("ack");
    stream.send(crate::stream::StreamCommand::Publish(crate::Message {
        subject: Bytes::from_static(b"s"),
        reply: Some(Bytes::from_static(b"ack")),
        headers: None,
        payload: Bytes::from_static(b"held"),
    }));
    // The message is stored and committed (the log resolves at once) but not delivered.
    let acked = tokio::time::timeout(Duration::from_secs(5), pub_ack.recv())
        .await
        .expect("PubAck within the bound")
        .expect("channel");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&acked.payload).expect("PubAck")["seq"],
        1,
        "{acked:?}"
    );
    let early = tokio::time::timeout(Duration::from_millis(300), out.recv()).await;
    assert!(early.is_err(), "delivered without the lease: {early:?}");
    log.lease.store(true, Ordering::SeqCst);
    let delivered = tokio::time::timeout(Duration::from_secs(5), out.recv())
        .await
        .expect("delivered once the lease is back")
        .expect("channel");
    assert_eq!(delivered.payload, Bytes::from_static(b"held"));
    stream.stop(false).await;
}

#[test]
fn records_build_the_committed_state_and_a_snapshot_carries_it() {
    let replicas = ReplicatedConsumers::new(Arc::new(NoLog(true)), Weak::new());
    let delivered = first_delivery;
    let create = Record::Create {
        name: "C".into(),
        config: Box::new(config()),
        created: 5,
        start_seq: 3,
    };
    let entries = Record::Entries {
        name: "C".into(),
        entries: vec![
            delivered(1, 3),
            delivered(2, 4),
            ConsumerEntry::Acked {
                stream_seq: 3,
                consumer_seq: 1,
                all: false,
            },
        ],
    };
    replicas.apply(&encoded(&[create, entries])).expect("apply");
    let committed = replicas.committed();
    let state = &committed["C"].state;
    assert_eq!(state.ack_floor.stream_seq, 3);
    assert_eq!(state.delivered.stream_seq, 4);
    assert_eq!(state.pending.keys().copied().collect::<Vec<_>>(), [4]);

    let copy = ReplicatedConsumers::new(Arc::new(NoLog(true)), Weak::new());
    copy.restore(&replicas.snapshot()).expect("restore");
    assert_eq!(copy.committed(), committed);

    // Entries after a delete are dropped; an empty restore forgets everything.
    let gone = [
        Record::Delete { name: "C".into() },
        Record::Entries {
            name: "C".into(),
            entries: vec![delivered(3, 5)],
        },
    ];
    replicas.apply(&encoded(&gone)).expect("apply");
    assert!(replicas.committed().is_empty());
    copy.restore(&[]).expect("restore");
    assert!(!copy.contains("C"));
    assert!(replicas.apply(b"not json").is_err());
}

#[test]
fn records_are_a_json_array_while_a_member_of_the_group_reads_only_that() {
    let records = vec![Record::Entries {
        name: "C".into(),
        entries: vec![first_delivery(1, 3)],
    }];
    let older = encode_records(&records, &NoLog(false)).expect("encode");
    assert_eq!(older[0], CONSUMER_BATCH);
    let array: Vec<Record> = serde_json::from_slice(&older[1..]).expect("a JSON array");
    assert_eq!(array, records);
    let binary = encode_records(&records, &NoLog(true)).expect("encode");
    assert_ne!(binary[1], b'[');
    assert!(binary.len() < older.len());
    for batch in [older, binary] {
        assert_eq!(codec::decode(&batch[1..]).expect("decode"), records);
    }
}

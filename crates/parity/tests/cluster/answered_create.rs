//! A replicated stream takes publishes once its create is answered: nats-server's stream
//! leader subscribes the stream's subjects before it answers, and the interest crosses the
//! routes ahead of the answer. Ours once answered from the leader as soon as its leadership
//! showed, while another task made the subscriptions: a publish sent on the answer through
//! another server got "no responders" (2 of 3 runs of 15 creates). nats-server itself does so
//! now and then on a loaded machine: there the publish is sent again (bounded).
//!
//! Also: R3 creates with several in flight are each answered once, within a bound below a new
//! stream group's election timeout.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::jetstream_assignments::{connect, error_code, leader_of};
use crate::meta::start;

const STREAMS: usize = 15;
const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_sent_on_the_create_answer_finds_the_stream() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let client = connect(&cluster, 0).await;
    for index in 0..STREAMS {
        let name = format!("ANSWERED{index}");
        let subject = format!("answered.{index}");
        let body = json!({"name": name, "subjects": [subject], "num_replicas": 3});
        let created = tokio::time::timeout(
            WAIT,
            client.request(
                format!("$JS.API.STREAM.CREATE.{name}"),
                serde_json::to_vec(&body).expect("json").into(),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{name}: no answer in {WAIT:?}"))
        .unwrap_or_else(|error| panic!("{name}: {error}"));
        let created: Value = serde_json::from_slice(&created.payload).unwrap_or(Value::Null);
        assert_eq!(error_code(&created), 0, "{created}");
        let deadline = tokio::time::Instant::now() + WAIT;
        let ack = loop {
            let sent = tokio::time::timeout(WAIT, client.request(subject.clone(), "x".into()))
                .await
                .unwrap_or_else(|_| panic!("{name}: no PubAck in {WAIT:?}"));
            match sent {
                // nats-server 2.15.1 too answers a create now and then before the stream's
                // interest reached this server (the CI parity pass on 93a2dc0, ANSWERED11 of 15):
                // a client publishes again there. Ours must not.
                Err(error)
                    if test_harness::is_reference()
                        && error.kind() == async_nats::RequestErrorKind::NoResponders
                        && tokio::time::Instant::now() < deadline =>
                {
                    println!(
                        "{name}: nats-server had no responders for the publish after the create"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                sent => {
                    break sent.unwrap_or_else(|error| {
                        panic!("{name}: the publish after the create: {error:?}")
                    })
                }
            }
        };
        let ack: Value = serde_json::from_slice(&ack.payload).unwrap_or(Value::Null);
        assert_eq!(ack["seq"], 1, "{name}: {ack}");
    }
}

/// Creations of the second test, and how many are in flight at once.
const CREATED: usize = 32;
const IN_FLIGHT: usize = 8;
/// Each create's answer comes within this, unless the machine is slow: well under a stream
/// group's election timeout (2 s), so no creation waited for an election timer. Ours founded
/// each new group on every peer at once: the founders' campaigns (openraft's `initialize`
/// elects) split the first term or were refused by peers that had not started the group yet,
/// and a third of the creations waited 2-4 s for a timer (bench/README.md, "R3 stream
/// creation"). At CI's load (up to 24) whole batches of creates took 1.5-2.8 s, once 4.9 s, with
/// no election timer fired (helper flakes, session 26): a create later than this fails the test
/// only when a node's log shows an election timer fired while the creates ran
/// ([`TIMER_ELECTION`]), or when later than [`ANSWER_AT_MOST`].
const ANSWER_WITHIN: Duration = Duration::from_millis(1_500);
/// No create waits longer than this, whatever the load.
const ANSWER_AT_MOST: Duration = Duration::from_secs(8);
/// What openraft logs when an election timer runs out.
const TIMER_ELECTION: &str = "election timeout expired, triggering election";
/// How long after the last answer a second answer to any create is looked for.
const QUIET: Duration = Duration::from_secs(2);

/// R3 streams created with several in flight: each create is answered once, and promptly. A new
/// group's first leader answers it; a group that changed leaders while it settled had each
/// leader in turn answer the same create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_creates_in_flight_are_answered_once_and_promptly() {
    let cluster = start(3);
    leader_of(&cluster, &[0, 1, 2]);
    let client = connect(&cluster, 0).await;
    // Where each node's log stood when the creates began.
    let marks: Vec<usize> = (0..3)
        .map(|index| cluster.node(index).log().len())
        .collect();
    let inbox = client.new_inbox();
    let mut answers = client
        .subscribe(format!("{inbox}.*"))
        .await
        .expect("subscribe");
    client.flush().await.expect("flush");
    let create = |index: usize| {
        let name = format!("PROMPT{index}");
        let body =
            json!({"name": name, "subjects": [format!("prompt.{index}")], "num_replicas": 3});
        (
            format!("$JS.API.STREAM.CREATE.{name}"),
            serde_json::to_vec(&body).expect("json"),
        )
    };
    let mut sent_at: HashMap<usize, tokio::time::Instant> = HashMap::new();
    let mut answered: HashMap<usize, (usize, Duration)> = HashMap::new();
    let mut next = 0;
    let deadline = tokio::time::Instant::now() + WAIT * 4;
    while answered.len() < CREATED {
        while next < CREATED && sent_at.len() - answered.len() < IN_FLIGHT {
            let (subject, body) = create(next);
            client
                .publish_with_reply(subject, format!("{inbox}.{next}"), body.into())
                .await
                .expect("publish");
            sent_at.insert(next, tokio::time::Instant::now());
            next += 1;
        }
        let message = tokio::time::timeout_at(deadline, answers.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {CREATED} creates answered within {:?}",
                    answered.len(),
                    WAIT * 4
                )
            })
            .expect("subscription open");
        record(&message, &sent_at, &mut answered);
    }
    // Any answer from now on is a second one.
    while let Ok(Some(message)) = tokio::time::timeout(QUIET, answers.next()).await {
        record(&message, &sent_at, &mut answered);
    }
    let mut twice: Vec<usize> = answered
        .iter()
        .filter(|(_, (count, _))| *count > 1)
        .map(|(index, _)| *index)
        .collect();
    twice.sort_unstable();
    assert!(
        twice.is_empty(),
        "creates answered more than once: {twice:?}"
    );
    let mut late: Vec<(usize, Duration)> = answered
        .iter()
        .filter(|(_, (_, took))| *took > ANSWER_WITHIN)
        .map(|(index, (_, took))| (*index, *took))
        .collect();
    late.sort_unstable();
    let timers: Vec<usize> = (0..3)
        .map(|index| {
            let log = cluster.node(index).log();
            log.get(marks[index]..)
                .unwrap_or_default()
                .matches(TIMER_ELECTION)
                .count()
        })
        .collect();
    println!(
        "creates later than {ANSWER_WITHIN:?}: {late:?}; election timers per node: {timers:?}"
    );
    assert!(
        late.is_empty() || timers.iter().all(|count| *count == 0),
        "creates answered after more than {ANSWER_WITHIN:?} while election timers ran out \
         ({timers:?} per node): {late:?}"
    );
    assert!(
        late.iter().all(|(_, took)| *took <= ANSWER_AT_MOST),
        "creates answered after more than {ANSWER_AT_MOST:?}: {late:?}"
    );
}

/// Counts an answer to create `index` (the last token of its subject) and, for the first, how
/// long it took; checks that it is a success.
fn record(
    message: &async_nats::Message,
    sent_at: &HashMap<usize, tokio::time::Instant>,
    answered: &mut HashMap<usize, (usize, Duration)>,
) {
    let index: usize = message
        .subject
        .rsplit('.')
        .next()
        .and_then(|token| token.parse().ok())
        .unwrap_or_else(|| panic!("answer on {}", message.subject));
    let took = sent_at
        .get(&index)
        .map(|at| at.elapsed())
        .unwrap_or_else(|| panic!("answer to create {index}, never sent"));
    let answer: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
    assert_eq!(error_code(&answer), 0, "create {index}: {answer}");
    answered.entry(index).or_insert((0, took)).0 += 1;
}

//! A burst of `$JS.API` requests during a meta outage (issue 15): a server that sees no meta
//! leader lets at most 1,024 requests wait aside for one (`api/meta_wait.rs`) and handles the
//! others at once as nats-server handles every request then: 10008 "JetStream system
//! temporarily unavailable". Here two of three servers are killed, the meta leader among them,
//! and 5,000 STREAM.INFO requests reach the survivor at once: it stays responsive (a core
//! request/reply through it answered within 1 s throughout, from another connection), answers each request once
//! with 10008, and at least the 3,976 that found no place to wait before any waiting one's wait
//! (4 s) could have ended. nats-server answers every one at once: the same assertions hold there.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

use crate::jetstream_assignments::error_code;
use crate::membership::nodes;
use crate::meta::{agreed_leader, index_of};

/// The requests of the burst.
const BURST: usize = 5_000;
/// Ours lets this many wait aside (`WAITING_LIMIT`).
const WAITING_LIMIT: usize = 1_024;
/// How long ours lets a request wait for a meta leader (`META_LEADER_WAIT`).
const META_LEADER_WAIT: Duration = Duration::from_secs(4);
/// A core request through the survivor is answered within this, throughout.
const RESPONSIVE: Duration = Duration::from_secs(1);
/// Every request of the burst is answered within this of the burst (a loaded machine).
const ANSWERED: Duration = Duration::from_secs(60);
/// The survivor answers a request without a meta leader within this after the kills: ours
/// once the meta group has gone its lost-quorum interval without a leader, nats-server once
/// its node has (a loaded machine).
const LEADERLESS_BOUND: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_during_a_meta_outage_is_answered_once_and_the_server_stays_responsive() {
    let (mut cluster, clients) = nodes(3).await;
    let leader = agreed_leader(&cluster, &[0, 1, 2], 3, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let leader = index_of(&cluster, &leader);
    let survivor = (0..3).find(|&i| i != leader).unwrap_or(0);
    for index in (0..3).filter(|&i| i != survivor) {
        cluster.kill9(index);
    }
    let killed = Instant::now();
    let client = &clients[survivor];

    // Until the survivor answers 10008 on its own (no meta leader for a while).
    loop {
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            client.request("$JS.API.STREAM.INFO.NONE", "".into()),
        )
        .await;
        if let Ok(Ok(message)) = answer {
            let answer: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
            if error_code(&answer) == 10008 {
                break;
            }
        }
        assert!(
            killed.elapsed() < LEADERLESS_BOUND,
            "no 10008 from the survivor {:?} after the kills",
            killed.elapsed()
        );
    }
    println!(
        "10008 from the survivor {:?} after the kills",
        killed.elapsed()
    );

    // A core responder and a prober on the survivor, apart from the burst's connection.
    let responder = crate::support::connect(&cluster, survivor).await;
    let mut echo = responder.subscribe("echo").await.expect("subscribe");
    tokio::spawn(async move {
        while let Some(message) = echo.next().await {
            if let Some(reply) = message.reply {
                let _ = responder.publish(reply, message.payload).await;
            }
        }
    });
    let prober = crate::support::connect(&cluster, survivor).await;
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let probes = tokio::spawn(async move {
        let mut slowest = Duration::ZERO;
        let mut rounds = 0usize;
        loop {
            let began = Instant::now();
            tokio::time::timeout(RESPONSIVE, prober.request("echo", "x".into()))
                .await
                .expect("a core request answered within 1 s")
                .expect("echo");
            slowest = slowest.max(began.elapsed());
            rounds += 1;
            tokio::select! {
                _ = &mut stopped => return (rounds, slowest),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    });

    // The burst, each request with its own reply subject.
    let inbox = client.new_inbox();
    let mut replies = client
        .subscribe(format!("{inbox}.*"))
        .await
        .expect("subscribe");
    let sent = Instant::now();
    for n in 0..BURST {
        client
            .publish_with_reply(
                format!("$JS.API.STREAM.INFO.BURST{n}"),
                format!("{inbox}.{n}"),
                "".into(),
            )
            .await
            .expect("publish");
    }
    client.flush().await.expect("flush");
    let burst_took = sent.elapsed();
    let mut answered: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    let mut early = 0usize;
    let deadline = sent + ANSWERED;
    while answered.len() < BURST {
        let Ok(Some(message)) = tokio::time::timeout_at(deadline.into(), replies.next()).await
        else {
            break;
        };
        let Some(n) = message
            .subject
            .rsplit('.')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let answer: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
        if sent.elapsed() < META_LEADER_WAIT {
            early += 1;
        }
        answered.entry(n).or_default().push(error_code(&answer));
    }
    let all_in = sent.elapsed();
    // Any second answer comes within the quiet after the last.
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_secs(2), replies.next()).await
    {
        if let Some(n) = message
            .subject
            .rsplit('.')
            .next()
            .and_then(|n| n.parse::<usize>().ok())
        {
            answered.entry(n).or_default().push(0);
        }
    }
    let _ = stop.send(());
    let (rounds, slowest) = probes.await.expect("the prober held throughout");
    println!(
        "burst of {BURST} sent in {burst_took:?}, all answered {all_in:?} after, {early} within \
         {META_LEADER_WAIT:?}; {rounds} probes, the slowest {slowest:?}"
    );
    let twice: Vec<_> = answered.iter().filter(|(_, got)| got.len() > 1).collect();
    assert!(twice.is_empty(), "answered more than once: {twice:?}");
    assert_eq!(answered.len(), BURST, "requests left unanswered");
    let codes: BTreeMap<u64, usize> = answered.values().fold(BTreeMap::new(), |mut codes, got| {
        *codes.entry(got[0]).or_default() += 1;
        codes
    });
    assert_eq!(codes, BTreeMap::from([(10008, BURST)]), "{codes:?}");
    assert!(
        early >= BURST - WAITING_LIMIT,
        "only {early} answered within {META_LEADER_WAIT:?}: more than {WAITING_LIMIT} waited"
    );
}

//! An R3 stream's leader cut off from both other replicas (the link proxies blackhole its
//! routes) takes publishes it cannot commit; the next leader will store other messages at
//! those sequences. Reads answered through that server meanwhile (STREAM.INFO's state,
//! DIRECT.GET by sequence and last by subject) show the committed messages only, as
//! nats-server, whose leader stores a message only once it is committed (rnats' leader holds
//! the batch it proposes in its store: `stream/store.rs`'s committed view keeps it from readers).
//!
//! The same with the leader's followers paused (SIGSTOP) rather than cut off, read with
//! STREAM.MSG.GET too (by sequence, last by subject); once the followers resume and the
//! messages commit, every read shows them.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass (`NATS_SERVER_BIN`).

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use test_harness::cluster::{Cluster, LinkMode};

use crate::fault_schedule::proxied_jetstream_cluster;
use crate::jetstream_assignments::connect;
use crate::jetstream_replicated::{names_of, publish_until_acked, settled_info};
use crate::meta::{index_of, ELECTION_BOUND};

const STREAM: &str = "UNCOM";
const COMMITTED: u64 = 5;
/// How long the reads go on after the cut: well within the time either server keeps leading
/// without its quorum (ours 2 s, nats-server about 20 s here).
const WINDOW: Duration = Duration::from_millis(1000);

/// One request through `client` and its first answer, or `None` within half a second.
async fn ask(
    client: &async_nats::Client,
    subject: String,
    body: Value,
) -> Option<async_nats::Message> {
    let payload = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let answer = tokio::time::timeout(
        Duration::from_millis(500),
        client.request(subject, payload.into()),
    )
    .await;
    answer.ok().and_then(Result::ok)
}

/// The stream sequence a direct get answered with, or its status code.
fn direct_answer(message: &async_nats::Message) -> Result<u64, u16> {
    if let Some(status) = message.status {
        return Err(status.as_u16());
    }
    message
        .headers
        .as_ref()
        .and_then(|headers| headers.get("Nats-Sequence"))
        .and_then(|value| value.as_str().parse().ok())
        .ok_or(0)
}

/// An R3 file stream `UNCOM` with direct gets, created through node 0, holding `COMMITTED`
/// acked messages on every replica: a client on node 0, the committed state, the leader's index.
async fn committed_stream(cluster: &Cluster) -> (async_nats::Client, Value, usize) {
    let names = names_of(cluster);
    let control = connect(cluster, 0).await;
    // With direct gets, which nats-server serves from every replica (rnats from the leader).
    let config = json!({"name": STREAM, "subjects": ["uncom.>"], "num_replicas": 3,
                        "storage": "file", "allow_direct": true});
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let created = ask(
            &control,
            format!("$JS.API.STREAM.CREATE.{STREAM}"),
            config.clone(),
        )
        .await
        .and_then(|message| serde_json::from_slice::<Value>(&message.payload).ok());
        match created {
            Some(answer) if answer.get("error").is_none() => break,
            // 10005 while nats-server's meta leader has not heard from every server; an
            // existing stream when an earlier unanswered attempt created it.
            Some(answer) if answer["error"]["err_code"] == 10058 => break,
            other => assert!(Instant::now() < deadline, "not created: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let jetstream = async_nats::jetstream::new(control.clone());
    for n in 1..=COMMITTED {
        let ack = publish_until_acked(
            &jetstream,
            "uncom.x",
            &format!("committed-{n}"),
            Instant::now() + ELECTION_BOUND,
        )
        .await;
        assert_eq!(ack.sequence, n);
    }
    let info = settled_info(&control, STREAM, &names, COMMITTED).await;
    let leader = index_of(cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    (control, info["state"].clone(), leader)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_shows_only_committed_messages() {
    let cluster = proxied_jetstream_cluster("uncom");
    let (_control, committed, leader) = committed_stream(&cluster).await;
    let island = connect(&cluster, leader).await;

    for other in (0..3).filter(|&i| i != leader) {
        cluster.set_link(leader, other, LinkMode::Blackhole);
    }
    let cut = Instant::now();
    // Publishes the leader takes and cannot commit: no PubAck comes for them.
    let inbox = island.new_inbox();
    let mut pub_acks = island
        .subscribe(format!("{inbox}.*"))
        .await
        .expect("subscribe");
    for n in 1..=3 {
        island
            .publish_with_reply(
                "uncom.x",
                format!("{inbox}.{n}"),
                format!("uncommitted-{n}").into(),
            )
            .await
            .expect("publish");
    }
    island.flush().await.expect("flush");

    let mut infos = 0;
    let mut direct = 0;
    while cut.elapsed() < WINDOW {
        let subject = format!("$JS.API.STREAM.INFO.{STREAM}");
        if let Some(answer) = ask(&island, subject, Value::Null).await {
            let info: Value = serde_json::from_slice(&answer.payload).unwrap_or(Value::Null);
            if info.get("error").is_none() {
                infos += 1;
                for field in ["messages", "bytes", "last_seq", "last_ts"] {
                    assert_eq!(info["state"][field], committed[field], "{field}: {info}");
                }
            }
        }
        let by_seq = format!("$JS.API.DIRECT.GET.{STREAM}");
        if let Some(answer) = ask(&island, by_seq, json!({"seq": COMMITTED + 1})).await {
            assert_eq!(
                direct_answer(&answer),
                Err(404),
                "sequence {}",
                COMMITTED + 1
            );
            direct += 1;
        }
        let last = format!("$JS.API.DIRECT.GET.{STREAM}.uncom.x");
        if let Some(answer) = ask(&island, last, Value::Null).await {
            assert_eq!(direct_answer(&answer), Ok(COMMITTED), "last by subject");
            direct += 1;
        }
    }
    println!("through the cut-off leader: {infos} STREAM.INFO and {direct} DIRECT.GET answers");
    assert!(
        infos > 0 && direct > 0,
        "{infos} STREAM.INFO, {direct} DIRECT.GET answered"
    );
    let acked = tokio::time::timeout(Duration::from_millis(10), pub_acks.next()).await;
    assert!(acked.is_err(), "a PubAck without a quorum: {acked:?}");
}

/// How long the reads go on while both followers are paused: within ours' 2 s without a
/// quorum, so the leader keeps its batch and commits it when they resume.
const PAUSED_WINDOW: Duration = Duration::from_millis(800);

/// STREAM.MSG.GET through `client`: the stream sequence it answered with, or its `err_code`.
async fn msg_get(client: &async_nats::Client, body: Value) -> Option<Result<u64, u64>> {
    let answer = ask(client, format!("$JS.API.STREAM.MSG.GET.{STREAM}"), body).await?;
    let answer: Value = serde_json::from_slice(&answer.payload).unwrap_or(Value::Null);
    Some(match answer["message"]["seq"].as_u64() {
        Some(seq) => Ok(seq),
        None => Err(answer["error"]["err_code"].as_u64().unwrap_or(0)),
    })
}

/// What every read through `client` says about the stream's end: STREAM.INFO's last sequence,
/// MSG.GET of `probe` and of the last message by subject, DIRECT.GET of the same two. `None`
/// for a read not answered, or answered with an error other than "no message".
async fn reads(client: &async_nats::Client, probe: u64) -> [Option<Result<u64, u64>>; 5] {
    let info = ask(client, format!("$JS.API.STREAM.INFO.{STREAM}"), Value::Null)
        .await
        .and_then(|answer| serde_json::from_slice::<Value>(&answer.payload).ok())
        .and_then(|info| info["state"]["last_seq"].as_u64().map(Ok));
    let by_seq = msg_get(client, json!({ "seq": probe })).await;
    let last = msg_get(client, json!({"last_by_subj": "uncom.x"})).await;
    let direct = |subject: String, body: Value| async move {
        let answer = ask(client, subject, body).await?;
        Some(direct_answer(&answer).map_err(u64::from))
    };
    let direct_seq = direct(
        format!("$JS.API.DIRECT.GET.{STREAM}"),
        json!({ "seq": probe }),
    )
    .await;
    let direct_last = direct(format!("$JS.API.DIRECT.GET.{STREAM}.uncom.x"), Value::Null).await;
    // "no message found" (10037) and 404 are answers; other errors say nothing of the end.
    let known = |read: Option<Result<u64, u64>>| {
        read.filter(|read| matches!(read, Ok(_) | Err(10037) | Err(404)))
    };
    [info, by_seq, last, direct_seq, direct_last].map(known)
}

/// The leader's quorum paused (SIGSTOP of both followers) instead of cut off: publishes it
/// takes are not shown by STREAM.INFO, STREAM.MSG.GET (by sequence, last by subject) or
/// DIRECT.GET (the same) while they cannot commit; once the followers resume and the
/// publishes are acked (asked again under the same message id: the batch commits, or, if a
/// new leader dropped it, is stored anew), every one of those reads shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_followers_keep_uncommitted_messages_from_every_read_until_they_commit() {
    let mut cluster = proxied_jetstream_cluster("uncomp");
    let (control, _committed, leader) = committed_stream(&cluster).await;
    let island = connect(&cluster, leader).await;
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    for &follower in &followers {
        cluster.pause(follower);
    }
    let paused = Instant::now();
    let payloads: Vec<String> = (1..=3).map(|n| format!("uncommitted-{n}")).collect();
    for payload in &payloads {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", payload.as_str());
        let reply = island.new_inbox();
        island
            .publish_with_reply_and_headers("uncom.x", reply, headers, payload.clone().into())
            .await
            .expect("publish");
    }
    island.flush().await.expect("flush");
    let probe = COMMITTED + 1;
    let before = [
        Ok(COMMITTED),
        Err(10037),
        Ok(COMMITTED),
        Err(404),
        Ok(COMMITTED),
    ];
    let mut answered = [0; 5];
    while paused.elapsed() < PAUSED_WINDOW {
        let seen = reads(&island, probe).await;
        for ((read, expected), count) in seen.iter().zip(&before).zip(&mut answered) {
            if let Some(read) = read {
                *count += 1;
                assert_eq!(
                    read, expected,
                    "a read through the leader while its followers are paused (INFO, \
                     MSG.GET seq, MSG.GET last, DIRECT.GET seq, DIRECT.GET last)"
                );
            }
        }
    }
    for &follower in &followers {
        cluster.resume(follower);
    }
    println!(
        "answered through the leader while its followers were paused (INFO, MSG.GET seq, \
         MSG.GET last, DIRECT.GET seq, DIRECT.GET last): {answered:?}"
    );
    assert!(
        answered.iter().all(|count| *count > 0),
        "a kind of read never answered while the followers were paused: {answered:?}"
    );

    let jetstream = async_nats::jetstream::new(control.clone());
    let mut last = COMMITTED;
    for payload in &payloads {
        let deadline = Instant::now() + ELECTION_BOUND;
        let ack = publish_until_acked(&jetstream, "uncom.x", payload, deadline).await;
        last = last.max(ack.sequence);
    }
    assert_eq!(last, COMMITTED + 3, "the three publishes stored once each");
    // Through the leader of the moment, asked again while the group settles.
    let after = [Ok(last), Ok(probe), Ok(last), Ok(probe), Ok(last)];
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let seen = reads(&control, probe).await;
        if seen
            .iter()
            .zip(&after)
            .all(|(read, expected)| read.as_ref() == Some(expected))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "committed messages not shown: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

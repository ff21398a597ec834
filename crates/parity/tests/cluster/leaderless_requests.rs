//! The `$JS.API` requests a user sends for an R3 stream whose group has no leader (its leader
//! and one follower killed) while the meta group keeps its quorum (five servers, three alive),
//! answered as nats-server 2.15.1 answers them (recorded with `NATS_SERVER_BIN`, where every
//! assertion holds too):
//!
//! | request | nats-server | ours |
//! |---|---|---|
//! | STREAM.INFO | the surviving replica: no leader, every member listed | the same |
//! | MSG.GET, MSG.DELETE, PURGE, STREAM.LEADER.STEPDOWN | 10008 from the replica | the same |
//! | CONSUMER.INFO, CONSUMER.LEADER.STEPDOWN | 10008 from the replica | the same |
//! | CONSUMER.UNPIN, CONSUMER.RESET | nothing (the consumer's leader answers) | the same |
//! | CONSUMER.INFO, DELETE, PAUSE, UNPIN, LEADER.STEPDOWN of a consumer that does not exist | 10014 from the meta leader | 10014 from the replica |
//! | CONSUMER.RESET of a consumer that does not exist | nothing | the same |
//! | CONSUMER.NAMES | the meta leader, the durable named | the replica, the same answer |
//! | CONSUMER.LIST | the meta leader after its 4 s gathering: no info, the durable `missing` | the replica at once, the same answer |
//! | CONSUMER.PAUSE | success from the meta leader (applied through the meta group) | 10008 |
//! | CONSUMER.DELETE | nothing (deleted through the meta group) | 10008 |
//! | CONSUMER.CREATE (ephemeral) | success: an R1 consumer on the replica | 10008 |
//! | CONSUMER.DURABLE.CREATE | nothing | 10008 |
//! | STREAM.UPDATE | nothing (the update is applied) | the same |
//! | STREAM.NAMES, STREAM.LIST | the meta leader, the stream listed | the same |
//! | a publish | no responders | the same |
//! | STREAM.DELETE | success from the replica | the same (unanswered before issue 15) |
//!
//! Once deleted the stream is gone: "stream not found", and when the killed servers come back
//! they remove their copies (stream and group directories) instead of bringing it back.
//!
//! All-rnats clusters normally; all-nats-server clusters in the parity pass. Not per
//! composition: nats-servers and ours do not share a meta group, so a mixed cluster holds no
//! replicated stream.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jetstream_assignments::{answers, error_code};
use crate::jetstream_r3_admin::directories_named;
use crate::jetstream_replicated::{create_r3, publish_until_acked, settled_info};
use crate::membership::{members, nodes};
use crate::meta::{index_of, ELECTION_BOUND};
use crate::orphaned_groups::{store_of, until_gone};

const STREAM: &str = "HEADLESS";
/// The surviving replica answers STREAM.INFO without a leader within this after the kills:
/// nats-server once its group node has run past its lost-quorum interval (11 s measured),
/// ours 2 s after its last route to another member closed (about as long, the first
/// unanswered request waiting out its 10 s); wide margin for a loaded machine.
const LEADERLESS_BOUND: Duration = Duration::from_secs(60);
/// The durable consumer made before the kills.
const KEPT: &str = "KEPT";

fn is_unavailable(answer: &Value) -> bool {
    error_code(answer) == 10008
        && answer["error"]["code"] == 503
        && answer["error"]["description"] == "JetStream system temporarily unavailable"
}

/// A request nats-server carries out through its meta group without an answer, and ours answers
/// 10008 (docs/parity.md).
fn silent_there_unavailable_here(subject: &str, got: &[Value]) {
    if test_harness::is_reference() {
        assert!(got.is_empty(), "{subject}: {got:?}");
    } else {
        assert!(
            got.len() == 1 && is_unavailable(&got[0]),
            "{subject}: {got:?}"
        );
    }
}

/// Every answer to one request, printed.
async fn asked(client: &async_nats::Client, subject: &str, body: Value) -> Vec<Value> {
    let got = answers(client, subject, body).await;
    println!("{subject}: {got:?}");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_for_a_leaderless_r3_stream_are_answered_as_nats_server_answers_them() {
    let (mut cluster, clients) = nodes(5).await;
    let (created, _) = create_r3(&clients[0], STREAM, "headless.>").await;
    created.assert_created();
    let peers: Vec<String> = members(&created.answer).into_iter().collect();
    assert_eq!(peers.len(), 3, "{}", created.answer);
    let group = created.answer["cluster"]["raft_group"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!group.is_empty(), "{}", created.answer);
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    for n in 1..=3 {
        let deadline = Instant::now() + ELECTION_BOUND;
        publish_until_acked(&jetstream, "headless.x", &format!("m{n}"), deadline).await;
    }
    let subject = format!("$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.{KEPT}");
    let body =
        json!({"stream_name": STREAM, "config": {"durable_name": KEPT, "ack_policy": "explicit"}});
    let got = asked(&clients[0], &subject, body).await;
    assert!(got.len() == 1 && error_code(&got[0]) == 0, "{got:?}");
    let info = settled_info(&clients[0], STREAM, &peers, 3).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let placed: Vec<usize> = peers.iter().map(|peer| index_of(&cluster, peer)).collect();
    let survivor = placed.iter().copied().find(|&i| i != leader).unwrap_or(0);
    let doomed: Vec<usize> = placed.iter().copied().filter(|&i| i != survivor).collect();
    let outsider = (0..5).find(|i| !placed.contains(i)).unwrap_or(0);
    for &index in &placed {
        let held = directories_named(&store_of(&cluster, index), &group);
        assert_eq!(
            held.len(),
            1,
            "node {index} holds no group {group}: {held:?}"
        );
    }
    for &index in &doomed {
        cluster.kill9(index);
    }
    let killed = Instant::now();
    let client = &clients[outsider];
    let info_subject = format!("$JS.API.STREAM.INFO.{STREAM}");

    // The survivor answers STREAM.INFO itself: no leader, every member listed.
    let info = loop {
        let got = answers(client, &info_subject, Value::Null).await;
        assert!(got.len() <= 1, "STREAM.INFO answered twice: {got:?}");
        if let Some(info) = got.first() {
            if info.get("error").is_none() && info["cluster"].get("leader").is_none() {
                break info.clone();
            }
        }
        assert!(
            killed.elapsed() < LEADERLESS_BOUND,
            "no leaderless STREAM.INFO {:?} after the kills: {got:?}",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "leaderless STREAM.INFO {:?} after the kills",
        killed.elapsed()
    );
    let mut listed: Vec<String> = info["cluster"]["replicas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|replica| replica["name"].as_str().map(str::to_string))
        .collect();
    listed.sort();
    assert_eq!(listed, peers, "{info}");
    assert_eq!(info["state"]["messages"], 3, "{info}");

    // The stream's own requests: 10008 from the replica.
    for (subject, body) in [
        (
            format!("$JS.API.STREAM.MSG.GET.{STREAM}"),
            json!({"seq": 1}),
        ),
        (
            format!("$JS.API.STREAM.MSG.DELETE.{STREAM}"),
            json!({"seq": 1}),
        ),
        (format!("$JS.API.STREAM.PURGE.{STREAM}"), Value::Null),
        (
            format!("$JS.API.STREAM.LEADER.STEPDOWN.{STREAM}"),
            Value::Null,
        ),
    ] {
        let got = asked(client, &subject, body).await;
        assert!(
            got.len() == 1 && is_unavailable(&got[0]),
            "{subject}: {got:?}"
        );
    }

    // The durable's own requests. nats-server's consumer group notices it has no leader on its
    // own (its leader may have been the survivor, which steps down once it lost its quorum).
    let subject = format!("$JS.API.CONSUMER.INFO.{STREAM}.{KEPT}");
    loop {
        let got = asked(client, &subject, Value::Null).await;
        assert!(got.len() <= 1, "{subject}: {got:?}");
        if got.first().is_some_and(is_unavailable) {
            break;
        }
        assert!(
            killed.elapsed() < LEADERLESS_BOUND,
            "{subject}: no 10008 {:?} after the kills: {got:?}",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let subject = format!("$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM}.{KEPT}");
    let got = asked(client, &subject, Value::Null).await;
    assert!(
        got.len() == 1 && is_unavailable(&got[0]),
        "{subject}: {got:?}"
    );
    // UNPIN and RESET of the durable, and RESET of a consumer that does not exist: a consumer's
    // leader answers them, and there is none; nobody answers on either server. Asked at once,
    // each on its own inbox, so their waits for a first answer overlap.
    let silent = [
        (
            format!("$JS.API.CONSUMER.UNPIN.{STREAM}.{KEPT}"),
            json!({"group": "g"}),
        ),
        (
            format!("$JS.API.CONSUMER.RESET.{STREAM}.{KEPT}"),
            json!({"seq": 1}),
        ),
        (
            format!("$JS.API.CONSUMER.RESET.{STREAM}.NOPE"),
            json!({"seq": 1}),
        ),
    ];
    let got = futures::future::join_all(
        silent
            .iter()
            .map(|(subject, body)| asked(client, subject, body.clone())),
    )
    .await;
    for ((subject, _), got) in silent.iter().zip(got) {
        assert!(got.is_empty(), "{subject}: {got:?}");
    }

    // A consumer that does not exist: "consumer not found", once (nats-server's meta leader
    // from its assignments, ours the replica from the stream's committed consumers).
    for (subject, body) in [
        (format!("$JS.API.CONSUMER.INFO.{STREAM}.NOPE"), Value::Null),
        (
            format!("$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM}.NOPE"),
            Value::Null,
        ),
        (
            format!("$JS.API.CONSUMER.PAUSE.{STREAM}.NOPE"),
            json!({"pause_until": "2099-01-01T00:00:00Z"}),
        ),
        (
            format!("$JS.API.CONSUMER.UNPIN.{STREAM}.NOPE"),
            json!({"group": "g"}),
        ),
        (
            format!("$JS.API.CONSUMER.DELETE.{STREAM}.NOPE"),
            Value::Null,
        ),
    ] {
        let got = asked(client, &subject, body).await;
        assert!(
            got.len() == 1 && error_code(&got[0]) == 10014 && got[0]["error"]["code"] == 404,
            "{subject}: {got:?}"
        );
    }

    let subject = format!("$JS.API.CONSUMER.NAMES.{STREAM}");
    let got = asked(client, &subject, Value::Null).await;
    assert_eq!(got.len(), 1, "{subject}: {got:?}");
    assert_eq!(got[0]["consumers"], json!([KEPT]), "{subject}: {got:?}");
    assert_eq!(got[0]["total"], 1, "{subject}: {got:?}");
    let subject = format!("$JS.API.CONSUMER.LIST.{STREAM}");
    let got = asked(client, &subject, Value::Null).await;
    assert_eq!(got.len(), 1, "{subject}: {got:?}");
    assert_eq!(got[0]["consumers"], json!([]), "{subject}: {got:?}");
    assert_eq!(got[0]["missing"], json!([KEPT]), "{subject}: {got:?}");
    assert_eq!(got[0]["total"], 1, "{subject}: {got:?}");
    let subject = format!("$JS.API.CONSUMER.PAUSE.{STREAM}.{KEPT}");
    let got = asked(
        client,
        &subject,
        json!({"pause_until": "2099-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(got.len(), 1, "{subject}: {got:?}");
    if test_harness::is_reference() {
        assert_eq!(got[0]["paused"], true, "{subject}: {got:?}");
    } else {
        assert!(is_unavailable(&got[0]), "{subject}: {got:?}");
    }
    let subject = format!("$JS.API.CONSUMER.DELETE.{STREAM}.{KEPT}");
    let got = asked(client, &subject, Value::Null).await;
    silent_there_unavailable_here(&subject, &got);

    // Consumers: nats-server's meta leader creates an ephemeral on the replica and leaves a
    // durable unanswered; ours answers both 10008 (docs/parity.md).
    let subject = format!("$JS.API.CONSUMER.CREATE.{STREAM}");
    let body = json!({"stream_name": STREAM, "config": {"ack_policy": "explicit"}});
    let got = asked(client, &subject, body).await;
    assert_eq!(got.len(), 1, "{subject}: {got:?}");
    if test_harness::is_reference() {
        assert!(got[0].get("error").is_none(), "{subject}: {got:?}");
    } else {
        assert!(is_unavailable(&got[0]), "{subject}: {got:?}");
    }
    let subject = format!("$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.D1");
    let body =
        json!({"stream_name": STREAM, "config": {"durable_name": "D1", "ack_policy": "explicit"}});
    let got = asked(client, &subject, body).await;
    silent_there_unavailable_here(&subject, &got);

    // The meta leader's lists name the stream.
    let got = asked(client, "$JS.API.STREAM.NAMES", Value::Null).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["streams"], json!([STREAM]), "{got:?}");
    let got = asked(client, "$JS.API.STREAM.LIST", Value::Null).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["total"], 1, "{got:?}");
    assert_eq!(got[0]["streams"][0]["config"]["name"], STREAM, "{got:?}");

    // A publish: nobody takes it.
    let publish = tokio::time::timeout(
        Duration::from_secs(5),
        client.request("headless.x", "lost".into()),
    )
    .await;
    assert!(
        matches!(&publish, Ok(Err(error))
            if error.kind() == async_nats::client::RequestErrorKind::NoResponders),
        "{publish:?}"
    );

    // STREAM.UPDATE: applied through the meta group, answered by no one on either server (the
    // stream's leader answers it, and there is none); never twice.
    let subject = format!("$JS.API.STREAM.UPDATE.{STREAM}");
    let body = json!({"name": STREAM, "subjects": ["headless.>"], "num_replicas": 3,
                      "storage": "file", "max_msgs": 100});
    let got = asked(client, &subject, body).await;
    assert!(got.len() <= 1, "{subject}: {got:?}");

    // STREAM.DELETE: the meta leader removes the assignment, the replica answers, once.
    let subject = format!("$JS.API.STREAM.DELETE.{STREAM}");
    let got = asked(client, &subject, Value::Null).await;
    assert_eq!(
        got,
        vec![json!({"type": "io.nats.jetstream.api.v1.stream_delete_response", "success": true})],
        "{subject}"
    );
    let got = asked(client, &info_subject, Value::Null).await;
    assert!(got.len() == 1 && error_code(&got[0]) == 10059, "{got:?}");
    until_gone(&store_of(&cluster, survivor), &[STREAM, &group])
        .await
        .unwrap_or_else(|left| panic!("the survivor keeps {left:?}"));

    // The killed servers come back and remove their copies; the stream stays gone.
    for &index in &doomed {
        cluster.restart(index);
    }
    cluster
        .wait_for_mesh()
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    for &index in &doomed {
        if let Err(left) = until_gone(&store_of(&cluster, index), &[STREAM, &group]).await {
            let port = cluster.node(index).monitor_port;
            let raftz = test_harness::cluster::http_get(port, "/raftz");
            let jsz = test_harness::cluster::http_get(port, "/jsz?streams=1");
            panic!(
                "node {index} keeps {left:?}\nraftz {raftz:?}\njsz {jsz:?}\n{}",
                cluster.logs()
            );
        }
    }
    for through in [outsider, doomed[0], doomed[1]] {
        let client = crate::support::connect(&cluster, through).await;
        let got = asked(&client, &info_subject, Value::Null).await;
        assert!(got.len() == 1 && error_code(&got[0]) == 10059, "{got:?}");
        let got = asked(&client, "$JS.API.STREAM.NAMES", Value::Null).await;
        assert!(got.len() == 1 && got[0]["total"] == 0, "{got:?}");
    }
}

/// A durable created while one replica of its R3 stream was cut off from the other two, which
/// are then killed: the surviving replica never saw it. Asked through a server that holds no
/// replica (five servers, the meta group keeps its quorum):
///
/// | request | nats-server | ours |
/// |---|---|---|
/// | CONSUMER.INFO | 10008 from the replica, which knows the consumer's assignment from the meta group | 10014 "consumer not found" from the replica |
/// | CONSUMER.DELETE | nothing (deleted through the meta group) | 10014 |
///
/// Ours keeps consumers in the stream's group only, and the survivor's group cannot tell what it
/// missed (cut off at the partition, it sees what it would see had the leader died then):
/// docs/parity.md "replicated consumers", with the reason the meta group does not record them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_surviving_replica_never_saw() {
    use test_harness::cluster::{ClusterOptions, LinkMode, Topology};
    const CUT: &str = "CUTOFF";
    const UNSEEN: &str = "UNSEEN";
    let mut options = ClusterOptions::new(&[crate::meta::kind(); 5], Topology::Proxied);
    options.name = "meta".into();
    options.jetstream = (0..5).collect();
    options.extra_config = crate::meta::SYSTEM_ACCOUNT.into();
    options.route_ping_interval = Some(Duration::from_millis(500));
    let mut cluster = test_harness::cluster::Cluster::start(options);
    let all: Vec<usize> = (0..5).collect();
    crate::meta::agreed_leader(&cluster, &all, 5, None)
        .unwrap_or_else(|error| panic!("{error}\n{}", cluster.logs()));
    let mut clients = Vec::new();
    for index in 0..5 {
        clients.push(crate::support::connect(&cluster, index).await);
    }
    let (created, _) = create_r3(&clients[0], CUT, "cutoff.>").await;
    created.assert_created();
    let peers: Vec<String> = members(&created.answer).into_iter().collect();
    assert_eq!(peers.len(), 3, "{}", created.answer);
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    publish_until_acked(
        &jetstream,
        "cutoff.x",
        "m1",
        Instant::now() + ELECTION_BOUND,
    )
    .await;
    let info = settled_info(&clients[0], CUT, &peers, 1).await;
    let leader = index_of(&cluster, info["cluster"]["leader"].as_str().unwrap_or(""));
    let placed: Vec<usize> = peers.iter().map(|peer| index_of(&cluster, peer)).collect();
    let survivor = placed.iter().copied().find(|&i| i != leader).unwrap_or(0);
    let doomed: Vec<usize> = placed.iter().copied().filter(|&i| i != survivor).collect();
    let outsider = (0..5).find(|i| !placed.contains(i)).unwrap_or(0);
    let client = &clients[outsider];

    // The survivor is cut off from the other two while the durable is created.
    for &index in &doomed {
        cluster.set_link(survivor, index, LinkMode::Reset);
    }
    let subject = format!("$JS.API.CONSUMER.DURABLE.CREATE.{CUT}.{UNSEEN}");
    let body =
        json!({"stream_name": CUT, "config": {"durable_name": UNSEEN, "ack_policy": "explicit"}});
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let got = asked(client, &subject, body.clone()).await;
        assert!(got.len() <= 1, "{subject}: {got:?}");
        if got.first().is_some_and(|answer| error_code(answer) == 0) {
            break;
        }
        assert!(Instant::now() < deadline, "{subject}: {got:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for &index in &doomed {
        cluster.kill9(index);
    }
    let killed = Instant::now();

    let subject = format!("$JS.API.CONSUMER.INFO.{CUT}.{UNSEEN}");
    let got = loop {
        let got = asked(client, &subject, Value::Null).await;
        assert!(got.len() <= 1, "{subject}: {got:?}");
        if got
            .first()
            .is_some_and(|answer| answer.get("error").is_some())
        {
            break got;
        }
        assert!(
            killed.elapsed() < LEADERLESS_BOUND,
            "{subject}: no error {:?} after the kills: {got:?}",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("{subject} {:?} after the kills", killed.elapsed());
    let expected = if test_harness::is_reference() {
        10008
    } else {
        10014
    };
    assert_eq!(error_code(&got[0]), expected, "{subject}: {got:?}");
    let subject = format!("$JS.API.CONSUMER.DELETE.{CUT}.{UNSEEN}");
    let got = asked(client, &subject, Value::Null).await;
    if test_harness::is_reference() {
        assert!(got.is_empty(), "{subject}: {got:?}");
    } else {
        assert!(
            got.len() == 1 && error_code(&got[0]) == 10014,
            "{subject}: {got:?}"
        );
    }
}

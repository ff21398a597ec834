//! `$JS.API.SERVER.REMOVE` of a server that is still running: as nats-server, that server
//! announces its removal (`$JS.EVENT.ADVISORY.SERVER.REMOVED`) and disables its JetStream
//! (`/jsz` says `disabled`), the rest of the cluster answers its clients' `$JS.API` requests
//! and takes their publishes, and its streams are placed on the others.
//!
//! And of a stopped server through a meta leader that never heard it announce itself (a
//! leader elected in the group's first seconds may not have heard every member yet).
//!
//! Five nodes. All-rnats clusters normally; all-nats-server clusters in the parity pass
//! (`NATS_SERVER_BIN`), where every assertion holds too, except that nats-server refuses the
//! second removal (reported there, not asserted).

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::jetstream_assignments::{connect, one_answer};
use crate::jetstream_replicated::{create_r3, publish_until_acked};
use crate::membership::{idle_follower, members, nodes, placed_without};
use crate::meta::{agreed_leader, index_of, jsz, stepdown, system_client, ELECTION_BOUND};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_live_server_disables_jetstream_and_the_cluster_serves_its_clients() {
    let (cluster, clients) = nodes(5).await;
    let (created, _) = create_r3(&clients[0], "LIVE", "live.>").await;
    created.assert_created();
    let jetstream = async_nats::jetstream::new(clients[0].clone());
    for n in 0..5 {
        let deadline = Instant::now() + ELECTION_BOUND;
        publish_until_acked(&jetstream, "live.x", &format!("l{n}"), deadline).await;
    }
    let info = placed_without(&cluster, &clients[0], "LIVE", &[], 3, 5).await;
    let (victim, victim_index) = idle_follower(&cluster, &info);
    let through = (0..cluster.len())
        .find(|&i| i != victim_index)
        .expect("another node");
    let system = system_client(&cluster, through).await;
    let mut advisories = system
        .subscribe("$JS.EVENT.ADVISORY.SERVER.REMOVED")
        .await
        .expect("subscribe");
    system.flush().await.expect("flush");

    let answer = one_answer(&system, "$JS.API.SERVER.REMOVE", json!({ "peer": victim })).await;
    assert_eq!(
        answer,
        json!({"type": "io.nats.jetstream.api.v1.meta_server_remove_response", "success": true})
    );
    let advisory = tokio::time::timeout(ELECTION_BOUND, advisories.next())
        .await
        .expect("a server_removed advisory in time")
        .expect("advisory");
    let advisory: Value = serde_json::from_slice(&advisory.payload).unwrap_or(Value::Null);
    assert_eq!(
        advisory["type"], "io.nats.jetstream.advisory.v1.server_removed",
        "{advisory}"
    );
    assert_eq!(advisory["server"], victim, "{advisory}");

    // JetStream off on the removed server.
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let state = jsz(&cluster, victim_index).unwrap_or(Value::Null);
        if state["disabled"] == true {
            assert_eq!(state["streams"], 0, "{state}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{victim} keeps JetStream: {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Its clients are served by the others: one answer, and publishes acknowledged.
    let client = connect(&cluster, victim_index).await;
    let account = one_answer(&client, "$JS.API.INFO", Value::Null).await;
    assert!(account.get("error").is_none(), "{account}");
    assert_eq!(account["streams"], 1, "{account}");
    let info = placed_without(&cluster, &client, "LIVE", &[&victim], 3, 5).await;
    assert!(!members(&info).contains(&victim), "{info}");
    let from_victim = async_nats::jetstream::new(client.clone());
    let deadline = Instant::now() + ELECTION_BOUND;
    let ack = publish_until_acked(&from_victim, "live.x", "through the removed", deadline).await;
    assert_eq!(ack.sequence, 6);
}

/// A server stopped before another restarts is never heard by the restarted one, which then
/// leads the meta group: it still finds the stopped server by name (the meta log's record of
/// its members) and removes it. Before, it answered "server is not a member of the cluster"
/// (10044), as the meta leader did in membership_cli's CI failure (session 24).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meta_leader_that_never_heard_a_stopped_server_removes_it() {
    let (mut cluster, _clients) = nodes(5).await;
    let all: Vec<usize> = (0..cluster.len()).collect();
    let leader = agreed_leader(&cluster, &all, 5, None).expect("a meta leader");
    let others: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| i != index_of(&cluster, &leader))
        .collect();
    let (stopped, restarted) = (others[0], others[1]);
    let stopped_name = cluster.node(stopped).name.clone();
    let restarted_name = cluster.node(restarted).name.clone();
    cluster.kill9(stopped);
    tokio::task::block_in_place(|| cluster.restart(restarted));
    let live: Vec<usize> = all.iter().copied().filter(|&i| i != stopped).collect();
    let system = system_client(&cluster, restarted).await;

    // The restarted server made meta leader (it may need a moment to catch up first).
    let preferred = json!({"placement": {"preferred": restarted_name}}).to_string();
    let deadline = Instant::now() + ELECTION_BOUND;
    loop {
        let answer = stepdown(&system, &preferred).await;
        let leading = tokio::task::block_in_place(|| agreed_leader(&cluster, &live, 5, None));
        if leading.as_deref() == Ok(restarted_name.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{restarted_name} not made meta leader: {answer}, {leading:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let answer = one_answer(
        &system,
        "$JS.API.SERVER.REMOVE",
        json!({ "peer": stopped_name }),
    )
    .await;
    // nats-server 2.15.1 refuses it (10044, 3 of 3 runs): its leader knows a server's name only
    // from the server's own statsz and route INFO (docs/parity.md, SERVER.REMOVE of a server
    // never heard).
    if test_harness::is_reference() && answer["error"]["err_code"] == 10044 {
        println!("nats-server: {answer} (reported, not asserted)");
        return;
    }
    assert_eq!(
        answer,
        json!({"type": "io.nats.jetstream.api.v1.meta_server_remove_response", "success": true})
    );
    agreed_leader(&cluster, &live, 4, None).expect("a meta group of the four left");
}

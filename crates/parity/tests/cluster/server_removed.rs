//! `$JS.API.SERVER.REMOVE` of a server that is still running: as nats-server, that server
//! announces its removal (`$JS.EVENT.ADVISORY.SERVER.REMOVED`) and disables its JetStream
//! (`/jsz` says `disabled`), the rest of the cluster answers its clients' `$JS.API` requests
//! and takes their publishes, and its streams are placed on the others.
//!
//! Five nodes. All-rnats clusters normally; all-nats-server clusters in the parity pass
//! (`NATS_SERVER_BIN`), where every assertion holds too.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::jetstream_assignments::{connect, one_answer};
use crate::jetstream_replicated::{create_r3, publish_until_acked};
use crate::membership::{idle_follower, members, nodes, placed_without};
use crate::meta::{jsz, system_client, ELECTION_BOUND};

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

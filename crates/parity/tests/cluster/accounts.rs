//! Accounts across routes: interest and messages carry their account (`RS+ <account> ...`,
//! `RMSG <account> ...`), so the same subject in two accounts never meets anywhere in the
//! cluster: plain subscribers, queue groups (once per account's group in the whole cluster),
//! request/reply and no-responders. Anonymous clients (the mesh probe) land in `$G` through
//! `no_auth_user`. The system account's requests cross routes too: every server answers
//! `$SYS.REQ.SERVER.PING`, whichever node the request came in on.

use std::time::Duration;

use async_nats::Client;
use test_harness::cluster::{Cluster, Topology};

use crate::per_composition;
use crate::support::{interest_barrier, next_within, request, unique, Composition, Reply};

per_composition!(
    accounts_stay_apart_across_routes,
    queue_groups_and_requests_per_account_across_routes,
    server_ping_reaches_every_server
);

const ACCOUNTS: &str = r#"
accounts {
  A { users: [ { user: a, password: a } ] }
  B { users: [ { user: b, password: b } ] }
}
authorization { users: [ { user: g, password: g } ] }
no_auth_user: g
"#;

const WAIT: Duration = Duration::from_secs(5);
/// How long a message that must not arrive is waited for.
const QUIET: Duration = Duration::from_millis(300);

fn start(composition: Composition) -> Cluster {
    let mut options = composition.options(Topology::FullMesh);
    options.extra_config = ACCOUNTS.into();
    Cluster::start(options)
}

async fn connect_as(cluster: &Cluster, index: usize, user: &str) -> Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .request_timeout(Some(Duration::from_secs(2)))
        .ignore_discovered_servers()
        .connect(cluster.url(index))
        .await
        .unwrap_or_else(|e| panic!("connect {user} to node {index}: {e}"))
}

async fn payload_within(subscriber: &mut async_nats::Subscriber, what: &str) -> String {
    let message = next_within(subscriber, WAIT)
        .await
        .unwrap_or_else(|| panic!("{what}: no message"));
    String::from_utf8_lossy(&message.payload).into_owned()
}

async fn assert_quiet(subscriber: &mut async_nats::Subscriber, what: &str) {
    if let Some(message) = next_within(subscriber, QUIET).await {
        panic!("{what}: leaked {:?}", message.payload);
    }
}

async fn accounts_stay_apart_across_routes(composition: Composition) {
    let cluster = start(composition);
    let subject = unique("tenant");
    for publisher_node in 0..3 {
        let (first, second) = ((publisher_node + 1) % 3, (publisher_node + 2) % 3);
        let publisher_a = connect_as(&cluster, publisher_node, "a").await;
        let publisher_b = connect_as(&cluster, publisher_node, "b").await;
        let mut subscribers = Vec::new();
        for (node, user) in [(first, "a"), (second, "a"), (first, "b"), (second, "b")] {
            let client = connect_as(&cluster, node, user).await;
            let subscriber = client.subscribe(subject.clone()).await.expect("subscribe");
            let publisher = if user == "a" {
                &publisher_a
            } else {
                &publisher_b
            };
            interest_barrier(&client, publisher).await;
            subscribers.push((node, user, client, subscriber));
        }
        let global = connect_as(&cluster, first, "g").await;
        let mut in_global = global.subscribe(subject.clone()).await.expect("subscribe");
        // A round trip on the same connection: the server has the subscription after it.
        global
            .request("$SYS.REQ.USER.INFO", "".into())
            .await
            .expect("USER.INFO");

        publisher_a
            .publish(subject.clone(), "for A".into())
            .await
            .unwrap();
        publisher_a.flush().await.unwrap();
        publisher_b
            .publish(subject.clone(), "for B".into())
            .await
            .unwrap();
        publisher_b.flush().await.unwrap();
        for (node, user, _client, subscriber) in subscribers.iter_mut() {
            let what = format!("{user} on node {node} from node {publisher_node}");
            let expected = if *user == "a" { "for A" } else { "for B" };
            assert_eq!(payload_within(subscriber, &what).await, expected, "{what}");
        }
        for (node, user, _client, subscriber) in subscribers.iter_mut() {
            assert_quiet(subscriber, &format!("{user} on node {node}")).await;
        }
        assert_quiet(&mut in_global, "$G subscriber").await;
    }
}

async fn queue_groups_and_requests_per_account_across_routes(composition: Composition) {
    let cluster = start(composition);
    let subject = unique("work");
    let publisher_a = connect_as(&cluster, 0, "a").await;
    let publisher_b = connect_as(&cluster, 0, "b").await;
    // One member of each account's group on each remote node.
    let mut members = Vec::new();
    for node in [1, 2] {
        for user in ["a", "b"] {
            let client = connect_as(&cluster, node, user).await;
            let subscriber = client
                .queue_subscribe(subject.clone(), "workers".into())
                .await
                .expect("queue subscribe");
            let publisher = if user == "a" {
                &publisher_a
            } else {
                &publisher_b
            };
            interest_barrier(&client, publisher).await;
            members.push((user, client, subscriber));
        }
    }
    const COUNT: usize = 50;
    for index in 0..COUNT {
        publisher_a
            .publish(subject.clone(), format!("a{index}").into())
            .await
            .unwrap();
        publisher_b
            .publish(subject.clone(), format!("b{index}").into())
            .await
            .unwrap();
    }
    publisher_a.flush().await.unwrap();
    publisher_b.flush().await.unwrap();
    // Every message exactly once within its own account's group.
    let mut received = Vec::new();
    for (user, _client, subscriber) in members.iter_mut() {
        while let Some(message) = next_within(subscriber, QUIET * 2).await {
            let payload = String::from_utf8_lossy(&message.payload).into_owned();
            assert!(
                payload.starts_with(*user),
                "{user}'s group got {payload} of another account"
            );
            received.push(payload);
        }
    }
    received.sort();
    let mut expected: Vec<String> = (0..COUNT)
        .flat_map(|index| [format!("a{index}"), format!("b{index}")])
        .collect();
    expected.sort();
    assert_eq!(received, expected, "each message once, in its own account");

    // A responder in A on node 2: A's requests from node 0 reach it, B's get no-responders.
    let service = unique("service");
    let responder_client = connect_as(&cluster, 2, "a").await;
    let _responder = crate::support::responder(&responder_client, &service, "from A").await;
    interest_barrier(&responder_client, &publisher_a).await;
    assert_eq!(
        request(&publisher_a, &service, "ping").await,
        Reply::Payload(b"from A".to_vec())
    );
    assert_eq!(
        request(&publisher_b, &service, "ping").await,
        Reply::NoResponders
    );
}

const SYSTEM: &str = r#"
accounts {
  SYS { users: [ { user: sys, password: sys } ] }
}
system_account: SYS
authorization { users: [ { user: g, password: g } ] }
no_auth_user: g
"#;

/// `$SYS.REQ.SERVER.PING` from any node is answered by every server of the cluster, and
/// `$SYS.REQ.SERVER.<id>.VARZ` reaches the server it names across a route.
async fn server_ping_reaches_every_server(composition: Composition) {
    let mut options = composition.options(Topology::FullMesh);
    options.extra_config = SYSTEM.into();
    let cluster = Cluster::start(options);
    for node in 0..3 {
        let system = connect_as(&cluster, node, "sys").await;
        // Interest for the system requests crosses the routes shortly after the mesh forms.
        let deadline = std::time::Instant::now() + crate::support::PROPAGATION_TIMEOUT;
        let answers = loop {
            let answers = ping_all(&system, "$SYS.REQ.SERVER.PING").await;
            // nats-server counts the servers it heard a STATSZ from.
            let all_known = answers
                .iter()
                .all(|answer| answer["statsz"]["active_servers"] == 3);
            if (answers.len() == 3 && all_known) || std::time::Instant::now() > deadline {
                break answers;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let mut names: Vec<String> = answers
            .iter()
            .map(|answer| answer["server"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "from node {node}: {answers:?}");
        for answer in &answers {
            assert_eq!(answer["statsz"]["active_servers"], 3, "{answer}");
        }
        let target = &answers
            .iter()
            .find(|answer| answer["server"]["name"] == names[(node + 1) % 3].as_str())
            .expect("an answer from another node")["server"]["id"];
        let target = target.as_str().unwrap_or_default().to_string();
        let varz = system
            .request(format!("$SYS.REQ.SERVER.{target}.VARZ"), "".into())
            .await
            .expect("VARZ across a route");
        let varz: serde_json::Value = serde_json::from_slice(&varz.payload).unwrap();
        assert_eq!(varz["data"]["server_id"], target.as_str(), "{varz}");
        assert_eq!(varz["server"]["id"], target.as_str(), "{varz}");
    }
}

/// Every answer to one request within a short window.
async fn ping_all(client: &Client, subject: &str) -> Vec<serde_json::Value> {
    use futures::StreamExt;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.expect("subscribe");
    client
        .publish_with_reply(subject.to_string(), inbox, "".into())
        .await
        .expect("publish");
    client.flush().await.expect("flush");
    let mut answers = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(700), replies.next()).await
    {
        if let Ok(value) = serde_json::from_slice(&message.payload) {
            answers.push(value);
        }
    }
    answers
}

//! Messages across routes: pub/sub, wildcards, queue groups (each message once in the whole
//! cluster), request/reply, no-responders, unsubscribe propagation, headers.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::{Client, HeaderMap, Subscriber};
use futures::StreamExt;
use test_harness::cluster::Topology;

use crate::per_composition;
use crate::support::{
    connect, connect_all, interest_barrier, next_within, request, request_until, responder, unique,
    Composition, Reply,
};

per_composition!(
    pub_sub_between_every_pair,
    wildcards_across_routes,
    queue_group_delivers_each_message_once,
    queue_group_with_only_remote_members,
    request_reply_across_routes,
    no_responders_across_routes,
    unsubscribe_propagates,
    headers_across_routes
);

const WAIT: Duration = Duration::from_secs(5);

/// Receive exactly `count` messages, or fail naming what is missing.
async fn receive(
    subscriber: &mut Subscriber,
    count: usize,
    what: &str,
) -> Vec<async_nats::Message> {
    let mut messages = Vec::new();
    while messages.len() < count {
        match next_within(subscriber, WAIT).await {
            Some(message) => messages.push(message),
            None => panic!("{what}: got {} of {count} messages", messages.len()),
        }
    }
    messages
}

async fn pub_sub_between_every_pair(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;
    for publisher in 0..3 {
        let subject = unique("pairs");
        let mut subscribers = Vec::new();
        for (index, client) in clients.iter().enumerate().filter(|(i, _)| *i != publisher) {
            let subscriber = client.subscribe(subject.clone()).await.expect("subscribe");
            interest_barrier(client, &clients[publisher]).await;
            subscribers.push((index, subscriber));
        }
        for n in 0..10 {
            clients[publisher]
                .publish(subject.clone(), format!("{n}").into())
                .await
                .expect("publish");
        }
        clients[publisher].flush().await.expect("flush");
        for (index, subscriber) in subscribers.iter_mut() {
            let got = receive(subscriber, 10, &format!("{publisher}->{index}")).await;
            let payloads: Vec<String> = got
                .iter()
                .map(|m| String::from_utf8_lossy(&m.payload).into_owned())
                .collect();
            let expected: Vec<String> = (0..10).map(|n| n.to_string()).collect();
            assert_eq!(
                payloads, expected,
                "{publisher}->{index}: in order, once each"
            );
        }
    }
}

async fn wildcards_across_routes(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;
    let root = unique("wild");
    let mut star = clients[1]
        .subscribe(format!("{root}.*.x"))
        .await
        .expect("subscribe");
    let mut tail = clients[2]
        .subscribe(format!("{root}.>"))
        .await
        .expect("subscribe");
    interest_barrier(&clients[1], &clients[0]).await;
    interest_barrier(&clients[2], &clients[0]).await;
    for suffix in ["a.x", "b.y", "a.x.z", "end.x"] {
        clients[0]
            .publish(format!("{root}.{suffix}"), suffix.into())
            .await
            .expect("publish");
    }
    clients[0]
        .publish(format!("other.{root}.a.x"), "no".into())
        .await
        .expect("publish");
    clients[0].flush().await.expect("flush");
    let subjects = |messages: Vec<async_nats::Message>| -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                m.subject
                    .as_str()
                    .trim_start_matches(&format!("{root}."))
                    .to_string()
            })
            .collect()
    };
    assert_eq!(subjects(receive(&mut star, 2, "*").await), ["a.x", "end.x"]);
    assert_eq!(
        subjects(receive(&mut tail, 4, ">").await),
        ["a.x", "b.y", "a.x.z", "end.x"]
    );
    // Nothing more came (the `other.` subject matches neither).
    assert!(next_within(&mut star, Duration::from_millis(200))
        .await
        .is_none());
    assert!(next_within(&mut tail, Duration::from_millis(200))
        .await
        .is_none());
}

/// Members of one queue group; each also subscribes (plainly) to a sentinel subject.
struct Member {
    node: usize,
    queue: Subscriber,
    sentinel: Subscriber,
}

/// Publish `total` numbered messages to a queue group spread over `member_nodes` (two members on
/// each), from every node in `publisher_nodes` in turn; every number must arrive exactly once in
/// the whole cluster. Returns the count received per node.
async fn queue_exactly_once(
    composition: Composition,
    member_nodes: &[usize],
    publisher_nodes: &[usize],
    total: usize,
) -> BTreeMap<usize, usize> {
    let cluster = composition.start(Topology::FullMesh);
    let subject = unique("queue");
    let sentinel = format!("{subject}.sentinel");
    let publishers: Vec<Client> = {
        let mut v = Vec::new();
        for &node in publisher_nodes {
            v.push(connect(&cluster, node).await);
        }
        v
    };
    let mut members = Vec::new();
    for &node in member_nodes {
        for _ in 0..2 {
            let client = connect(&cluster, node).await;
            let queue = client
                .queue_subscribe(subject.clone(), "workers".into())
                .await
                .expect("queue subscribe");
            let sentinel_subscription =
                client.subscribe(sentinel.clone()).await.expect("subscribe");
            for publisher in &publishers {
                interest_barrier(&client, publisher).await;
            }
            members.push((
                client,
                Member {
                    node,
                    queue,
                    sentinel: sentinel_subscription,
                },
            ));
        }
    }
    for n in 0..total {
        let publisher = &publishers[n % publishers.len()];
        publisher
            .publish(subject.clone(), n.to_string().into())
            .await
            .expect("publish");
    }
    // Each publisher's sentinel travels behind its queue messages on the same paths: once a
    // member has every sentinel, every queue message meant for it is in its subscription.
    for publisher in &publishers {
        publisher
            .publish(sentinel.clone(), "end".into())
            .await
            .expect("publish");
        publisher.flush().await.expect("flush");
    }
    let mut seen = vec![0usize; total];
    let mut per_node = BTreeMap::new();
    for (_client, member) in members.iter_mut() {
        receive(&mut member.sentinel, publishers.len(), "sentinels").await;
        // Unconstrained: tokio's cooperative budget would make a long run of ready messages
        // look like an empty queue.
        while let Some(Some(message)) =
            futures::FutureExt::now_or_never(tokio::task::unconstrained(member.queue.next()))
        {
            let n: usize = String::from_utf8_lossy(&message.payload)
                .parse()
                .expect("numbered payload");
            seen[n] += 1;
            *per_node.entry(member.node).or_insert(0) += 1;
        }
    }
    let wrong: Vec<(usize, usize)> = seen
        .iter()
        .enumerate()
        .filter(|(_, &count)| count != 1)
        .map(|(n, &count)| (n, count))
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "messages not delivered exactly once (number, times): {wrong:?}; per node {per_node:?}"
    );
    per_node
}

/// Two members on each of the three servers, a publisher on each: 1000 messages, each delivered
/// exactly once in the whole cluster.
async fn queue_group_delivers_each_message_once(composition: Composition) {
    queue_exactly_once(composition, &[0, 1, 2], &[0, 1, 2], 1000).await;
}

/// Members on nodes 1 and 2 only, the publisher on node 0: every message crosses a route, each
/// exactly once, and both servers' members get a share.
async fn queue_group_with_only_remote_members(composition: Composition) {
    let per_node = queue_exactly_once(composition, &[1, 2], &[0], 1000).await;
    assert!(
        per_node.get(&1).is_some_and(|&n| n > 0) && per_node.get(&2).is_some_and(|&n| n > 0),
        "both remote servers' members get messages: {per_node:?}"
    );
}

async fn request_reply_across_routes(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;
    for server in 0..3 {
        let subject = unique("rr");
        let answer: &'static str = ["from-0", "from-1", "from-2"][server];
        let _responder = responder(&clients[server], &subject, answer).await;
        for (requester, client) in clients.iter().enumerate().filter(|(i, _)| *i != server) {
            interest_barrier(&clients[server], client).await;
            for _ in 0..5 {
                assert_eq!(
                    request(client, &subject, "ping").await,
                    Reply::Payload(answer.as_bytes().to_vec()),
                    "request {requester}->{server}"
                );
            }
        }
    }
}

/// A request for a subject nobody in the cluster serves gets the 503 status at once, on every
/// node; one served on another node is answered.
async fn no_responders_across_routes(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;
    for client in &clients {
        assert_eq!(
            request(client, &unique("nobody"), "ping").await,
            Reply::NoResponders
        );
    }
    let subject = unique("served");
    let _responder = responder(&clients[1], &subject, "here").await;
    interest_barrier(&clients[1], &clients[0]).await;
    assert_eq!(
        request(&clients[0], &subject, "ping").await,
        Reply::Payload(b"here".to_vec())
    );
}

/// A remote subscription removed (explicitly, or by reaching its auto-unsubscribe maximum) is
/// removed on the other servers too: requests there get 503.
async fn unsubscribe_propagates(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;

    let subject = unique("unsub");
    let mut subscriber = clients[1]
        .subscribe(subject.clone())
        .await
        .expect("subscribe");
    interest_barrier(&clients[1], &clients[0]).await;
    clients[0]
        .publish(subject.clone(), "one".into())
        .await
        .expect("publish");
    receive(&mut subscriber, 1, "before unsubscribe").await;
    subscriber.unsubscribe().await.expect("unsubscribe");
    request_until(
        &clients[0],
        &subject,
        |r| *r == Reply::NoResponders,
        "interest removed after UNSUB",
    )
    .await;

    let subject = unique("automax");
    let mut limited = clients[2]
        .subscribe(subject.clone())
        .await
        .expect("subscribe");
    limited
        .unsubscribe_after(3)
        .await
        .expect("unsubscribe_after");
    interest_barrier(&clients[2], &clients[0]).await;
    for n in 0..10 {
        clients[0]
            .publish(subject.clone(), format!("{n}").into())
            .await
            .expect("publish");
    }
    clients[0].flush().await.expect("flush");
    let got = receive(&mut limited, 3, "auto-unsubscribe").await;
    let payloads: Vec<_> = got.iter().map(|m| m.payload.to_vec()).collect();
    assert_eq!(payloads, [b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);
    assert!(
        next_within(&mut limited, Duration::from_millis(300))
            .await
            .is_none(),
        "no fourth message after the maximum"
    );
    request_until(
        &clients[0],
        &subject,
        |r| *r == Reply::NoResponders,
        "interest removed after the auto-unsubscribe maximum",
    )
    .await;
}

async fn headers_across_routes(composition: Composition) {
    let cluster = composition.start(Topology::FullMesh);
    let clients = connect_all(&cluster).await;
    let subject = unique("headers");
    let mut subscribers = Vec::new();
    for index in [1, 2] {
        let subscriber = clients[index]
            .subscribe(subject.clone())
            .await
            .expect("subscribe");
        interest_barrier(&clients[index], &clients[0]).await;
        subscribers.push(subscriber);
    }
    let mut headers = HeaderMap::new();
    headers.insert("X-Trace", "abc-123");
    headers.append("X-Multi", "one");
    headers.append("X-Multi", "two");
    clients[0]
        .publish_with_headers(subject.clone(), headers.clone(), "body".into())
        .await
        .expect("publish");
    clients[0]
        .publish_with_headers(subject.clone(), headers.clone(), "".into())
        .await
        .expect("publish");
    clients[0].flush().await.expect("flush");
    for subscriber in subscribers.iter_mut() {
        let got = receive(subscriber, 2, "headers").await;
        for (message, body) in got.iter().zip(["body", ""]) {
            let received = message.headers.as_ref().expect("headers arrive");
            assert_eq!(received.get("X-Trace").map(|v| v.as_str()), Some("abc-123"));
            let multi: Vec<&str> = received.get_all("X-Multi").map(|v| v.as_str()).collect();
            assert_eq!(multi, ["one", "two"]);
            assert_eq!(&message.payload[..], body.as_bytes());
        }
    }

    // A request with headers, answered with headers, across the route (HMSG with a reply).
    let service = unique("hsvc");
    let mut requests = clients[2]
        .subscribe(service.clone())
        .await
        .expect("subscribe");
    interest_barrier(&clients[2], &clients[0]).await;
    let replier = clients[2].clone();
    let echo = tokio::spawn(async move {
        if let Some(message) = requests.next().await {
            let mut answer = HeaderMap::new();
            let trace = message
                .headers
                .as_ref()
                .and_then(|h| h.get("X-Trace").map(|v| v.as_str().to_string()))
                .unwrap_or_default();
            answer.insert("X-Echo", trace.as_str());
            let reply = message.reply.expect("request has a reply subject");
            replier
                .publish_with_headers(reply, answer, "pong".into())
                .await
                .expect("reply");
            replier.flush().await.expect("flush");
        }
    });
    let response = clients[0]
        .request_with_headers(service, headers, "ping".into())
        .await
        .expect("request with headers");
    assert_eq!(&response.payload[..], b"pong");
    assert_eq!(
        response
            .headers
            .as_ref()
            .and_then(|h| h.get("X-Echo"))
            .map(|v| v.as_str()),
        Some("abc-123")
    );
    echo.await.expect("echo task");
}

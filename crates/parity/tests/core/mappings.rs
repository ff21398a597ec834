//! Subject mappings (`mappings { }` at the top level for the global account, and inside an
//! account for that account): plain, wildcard (`$n`, `{{wildcard(n)}}`) and function
//! destinations rewrite a client's publish before it is routed; weighted destinations split
//! the publishes (the weight left over stays on the source, or is dropped when the source is
//! listed itself); permissions apply to the mapped subject; a request through a mapping gets its
//! reply; bad mappings are refused with nats-server's words. Passes against the real
//! nats-server too (`NATS_SERVER_BIN`).

use crate::process::run;
use futures::StreamExt;
use std::collections::HashMap;
use std::time::Duration;
use test_harness::client::settle;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);
/// How long a message that must not arrive is waited for.
const QUIET: Duration = Duration::from_millis(300);

async fn connect(server: &TestServer, user: Option<&str>) -> async_nats::Client {
    let options = match user {
        Some(user) => async_nats::ConnectOptions::with_user_and_password(user.into(), user.into()),
        None => async_nats::ConnectOptions::new(),
    };
    tokio::time::timeout(WAIT, options.connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// The server's own requests and replies (the `settle` round trips) that a `>` subscriber sees.
fn is_settle_traffic(message: &async_nats::Message) -> bool {
    message.subject.starts_with("$SYS.") || message.subject.starts_with("_INBOX.")
}

async fn next_message(subscriber: &mut async_nats::Subscriber) -> async_nats::Message {
    loop {
        let message = tokio::time::timeout(WAIT, subscriber.next())
            .await
            .expect("message in time")
            .expect("subscription open");
        if !is_settle_traffic(&message) {
            return message;
        }
    }
}

async fn assert_quiet(subscriber: &mut async_nats::Subscriber) {
    while let Ok(Some(message)) = tokio::time::timeout(QUIET, subscriber.next()).await {
        assert!(
            is_settle_traffic(&message),
            "unexpected message on {}: {:?}",
            message.subject,
            message.payload
        );
    }
}

const CONFIG: &str = r#"
mappings {
  "orders.new": "orders.created"
  "in.*.*": "out.$2.{{wildcard(1)}}"
  "tail.>": "mapped.tail.>"
  "part.*": "p.{{partition(3,1)}}.{{wildcard(1)}}"
  "cut.*": "c.{{splitfromleft(1,2)}}"
  "slice.*": "s.{{slicefromright(1,2)}}"
  "split.*": "sp.{{split(1,-)}}"
  "w": [ { destination: "w.a", weight: 50% }, { destination: "w.b", weight: 50% } ]
  "keep": [ { destination: "keep.moved", weight: 40 } ]
  "lose": [ { destination: "lose.moved", weight: 30 }, { destination: "lose", weight: 20 } ]
  "svc": "service.q"
}
"#;

#[tokio::test]
async fn destinations_rewrite_the_published_subject() {
    let server = TestServer::with_config(CONFIG);
    let publisher = connect(&server, None).await;
    let watcher = connect(&server, None).await;
    let mut everything = watcher.subscribe(">").await.unwrap();
    settle(&watcher).await;

    for (published, expected) in [
        ("orders.new", "orders.created"),
        ("in.a.b", "out.b.a"),
        ("tail.x.y.z", "mapped.tail.x.y.z"),
        // FNV-1a of "customerid1" modulo 3 is 0 (nats-server's documented partition values).
        ("part.customerid1", "p.0.customerid1"),
        ("part.customerid2", "p.2.customerid2"),
        ("cut.12345", "c.12.345"),
        ("slice.12345", "s.1.23.45"),
        ("split.-ab-cd--e", "sp.ab.cd.e"),
        ("unmapped.subject", "unmapped.subject"),
    ] {
        publisher
            .publish(published, published.into())
            .await
            .unwrap();
        let message = next_message(&mut everything).await;
        assert_eq!(
            message.subject.as_str(),
            expected,
            "published on {published}"
        );
        assert_eq!(&message.payload[..], published.as_bytes());
    }
    assert_quiet(&mut everything).await;
}

/// Publish `count` messages on `subject` and count what arrives per subject.
async fn spread(server: &TestServer, subject: &str, count: usize) -> HashMap<String, usize> {
    let publisher = connect(server, None).await;
    let watcher = connect(server, None).await;
    let mut everything = watcher.subscribe(format!("{subject}.>")).await.unwrap();
    let mut exact = watcher.subscribe(subject.to_string()).await.unwrap();
    settle(&watcher).await;
    for _ in 0..count {
        publisher
            .publish(subject.to_string(), "x".into())
            .await
            .unwrap();
    }
    settle(&publisher).await;
    // The end marker travels behind every message this publisher sent.
    let marker = connect(server, None).await;
    let mut counts = HashMap::new();
    marker
        .publish(format!("{subject}.end"), "end".into())
        .await
        .unwrap();
    loop {
        let message = next_message(&mut everything).await;
        if message.subject.as_str() == format!("{subject}.end") {
            break;
        }
        *counts.entry(message.subject.to_string()).or_default() += 1;
    }
    while let Ok(Some(message)) = tokio::time::timeout(QUIET, exact.next()).await {
        *counts.entry(message.subject.to_string()).or_default() += 1;
    }
    counts
}

#[tokio::test]
async fn weighted_destinations_split_keep_and_drop() {
    let server = TestServer::with_config(CONFIG);
    const COUNT: usize = 1000;
    let within = |counts: &HashMap<String, usize>, subject: &str, low: usize, high: usize| {
        let got = counts.get(subject).copied().unwrap_or(0);
        assert!(
            (low..=high).contains(&got),
            "{subject}: {got} of {COUNT} (wanted {low}..={high}): {counts:?}"
        );
    };

    let split = spread(&server, "w", COUNT).await;
    within(&split, "w.a", 400, 600);
    within(&split, "w.b", 400, 600);
    assert_eq!(split.values().sum::<usize>(), COUNT, "{split:?}");

    // 40 % move, the rest stays on the source subject.
    let kept = spread(&server, "keep", COUNT).await;
    within(&kept, "keep.moved", 300, 500);
    within(&kept, "keep", 500, 700);
    assert_eq!(kept.values().sum::<usize>(), COUNT, "{kept:?}");

    // The source listed itself: 30 % move, 20 % stay, the other half is dropped.
    let lost = spread(&server, "lose", COUNT).await;
    within(&lost, "lose.moved", 220, 380);
    within(&lost, "lose", 120, 280);
    let delivered: usize = lost.values().sum();
    assert!((400..=600).contains(&delivered), "{lost:?}");
}

#[tokio::test]
async fn requests_are_answered_through_a_mapping() {
    let server = TestServer::with_config(CONFIG);
    let responder = connect(&server, None).await;
    let mut service = responder.subscribe("service.q").await.unwrap();
    settle(&responder).await;
    let answering = tokio::spawn(async move {
        while let Some(request) = service.next().await {
            if let Some(reply) = request.reply {
                responder
                    .publish(reply, format!("answer to {}", request.subject).into())
                    .await
                    .unwrap();
            }
        }
    });
    let requester = connect(&server, None).await;
    let answer = tokio::time::timeout(WAIT, requester.request("svc", "q".into()))
        .await
        .expect("answer in time")
        .expect("answered");
    assert_eq!(&answer.payload[..], b"answer to service.q");
    answering.abort();
}

const ACCOUNTS: &str = r#"
accounts {
  A {
    users [ { user: a, password: a }, { user: limited, password: limited, permissions: { publish: "allowed.>" } } ]
    mappings { "x": "y", "allowed.in": "elsewhere", "from.*": "allowed.$1" }
  }
  B { users [ { user: b, password: b } ] }
}
"#;

#[tokio::test]
async fn account_mappings_apply_in_their_account_only() {
    let server = TestServer::with_config(ACCOUNTS);
    let a = connect(&server, Some("a")).await;
    let b = connect(&server, Some("b")).await;
    let mut in_a = a.subscribe(">").await.unwrap();
    let mut in_b = b.subscribe(">").await.unwrap();
    settle(&a).await;
    settle(&b).await;

    a.publish("x", "from a".into()).await.unwrap();
    assert_eq!(next_message(&mut in_a).await.subject.as_str(), "y");
    b.publish("x", "from b".into()).await.unwrap();
    assert_eq!(next_message(&mut in_b).await.subject.as_str(), "x");
    assert_quiet(&mut in_a).await;
    assert_quiet(&mut in_b).await;
}

#[tokio::test]
async fn permissions_apply_to_the_mapped_subject() {
    let server = TestServer::with_config(ACCOUNTS);
    let watcher = connect(&server, Some("a")).await;
    let mut everything = watcher.subscribe(">").await.unwrap();
    settle(&watcher).await;
    let (errors_in, mut errors) = tokio::sync::mpsc::unbounded_channel();
    let limited =
        async_nats::ConnectOptions::with_user_and_password("limited".into(), "limited".into())
            .event_callback(move |event| {
                let errors_in = errors_in.clone();
                async move {
                    if let async_nats::Event::ServerError(error) = event {
                        let _ = errors_in.send(error.to_string());
                    }
                }
            })
            .connect(server.url())
            .await
            .expect("connect");

    // `from.1` is not allowed as written but maps to `allowed.1`, which is.
    limited.publish("from.1", "mapped in".into()).await.unwrap();
    assert_eq!(
        next_message(&mut everything).await.subject.as_str(),
        "allowed.1"
    );
    // `allowed.in` is allowed as written but maps to `elsewhere`, which is not.
    limited
        .publish("allowed.in", "mapped out".into())
        .await
        .unwrap();
    let error = tokio::time::timeout(WAIT, errors.recv())
        .await
        .expect("error in time")
        .expect("error");
    assert!(
        error
            .to_lowercase()
            .contains("permissions violation for publish to \"elsewhere\""),
        "{error}"
    );
    assert_quiet(&mut everything).await;
}

/// The first line nats-server (or ours) prints for a config it refuses.
fn refusal(text: &str) -> String {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("mappings.conf");
    std::fs::write(&path, text).expect("write config");
    let path_text = path.display().to_string();
    let finished = run(&["-t", "-c", &path_text], WAIT).expect("-t must exit");
    assert_eq!(finished.code, 1, "{text}: {}", finished.output());
    finished
        .stderr
        .replace(&format!("{path_text}:"), "")
        .trim_end()
        .to_string()
}

#[test]
fn bad_mappings_are_refused_in_nats_server_words() {
    for (config, expected) in [
        (
            r#"mappings { "foo.*": "bar.*" }"#,
            r#"1:12: Error adding mapping for "foo.*" to "bar.*" : invalid subject"#,
        ),
        (
            r#"mappings { "foo.*": "bar.{{unknown(1)}}" }"#,
            r#"1:12: Error adding mapping for "foo.*" to "bar.{{unknown(1)}}" : invalid mapping destination: unknown function in {{unknown(1)}}"#,
        ),
        (
            r#"mappings { "foo.*": "bar.{{wildcard(2)}}" }"#,
            r#"1:12: Error adding mapping for "foo.*" to "bar.{{wildcard(2)}}" : invalid mapping destination: wildcard index out of range in {{wildcard(2)}}: [2]"#,
        ),
        (
            r#"mappings { "foo": [{destination: "bar", weight: 60}, {destination: "baz", weight: 50}] }"#,
            r#"1:12: Error adding mapping for "foo" : total weight needs to be <= 100"#,
        ),
        (
            r#"mappings { "foo": [{destination: "bar", weight: 160}] }"#,
            "1:40: Invalid weight 160 for mapping destination",
        ),
        (
            r#"mappings { "foo": [{destination: "bar", weight: 10, xx: 1}] }"#,
            r#"1:52: Unknown field "xx" for mapping destination"#,
        ),
        (
            r#"mappings { "foo..x": "bar" }"#,
            r#"1:0: Subject "foo..x" is not a valid subject"#,
        ),
        (
            r#"mappings { "foo": [{destination: "bar", weight: "abc"}] }"#,
            r#"1:40: Invalid weight "abc" for mapping destination"#,
        ),
        (
            r#"mappings { "foo": [{destination: "bar", weight: 10}, {destination: "bar", weight: 10}] }"#,
            r#"1:12: Error adding mapping for "foo" : duplicate entry for "bar""#,
        ),
        (
            r#"mappings { "foo": 5 }"#,
            "1:12: Expected an entry for the mapping destination",
        ),
        (
            r#"mappings { "foo": "bar baz" }"#,
            r#"1:12: Error adding mapping for "foo" to "bar baz" : invalid mapping destination: invalid transform"#,
        ),
        (
            r#"accounts { A { mappings { "foo.*": "bar.{{partition(x,1)}}" } } }"#,
            r#"1:27: Error adding mapping for "foo.*" to "bar.{{partition(x,1)}}" : invalid mapping destination: function argument is invalid or in the wrong format in {{partition(x,1)}}"#,
        ),
    ] {
        assert_eq!(
            refusal(config),
            format!("nats-server: {expected}"),
            "{config}"
        );
    }
}

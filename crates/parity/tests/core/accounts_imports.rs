//! Exports and imports between accounts, as nats-server's config defines them: stream imports
//! (with `prefix` or `to`, wildcard exports, private exports), service imports (`to`, the
//! `Nats-Request-Info` header naming the importer, singleton and stream responses), and the
//! config errors for an import the exporter does not allow, an unknown account and a cycle.
//! Passes against the real nats-server too (`NATS_SERVER_BIN`).

use crate::process::run;
use futures::StreamExt;
use std::time::Duration;
use test_harness::client::settle;
use test_harness::TestServer;

const WAIT: Duration = Duration::from_secs(10);
/// How long a message that must not arrive is waited for.
const QUIET: Duration = Duration::from_millis(300);

const CONFIG: &str = r#"
accounts {
  A {
    users: [ { user: a, password: a } ]
    exports: [
      { stream: "public.>" }
      { stream: "private.>", accounts: [ B ] }
      { service: "svc.>" }
      { service: "feed.>", response_type: stream }
    ]
  }
  B {
    users: [ { user: b, password: b } ]
    imports: [
      { stream: { account: A, subject: "public.>" }, prefix: "from_a" }
      { stream: { account: A, subject: "private.*.orders" }, to: "orders.*" }
      { service: { account: A, subject: "svc.>" } }
      { service: { account: A, subject: "feed.>" }, to: "news.>" }
    ]
  }
  C {
    users: [ { user: c, password: c } ]
    imports: [ { stream: { account: A, subject: "public.>" } } ]
  }
}
"#;

async fn connect(server: &TestServer, user: &str) -> async_nats::Client {
    let options = async_nats::ConnectOptions::with_user_and_password(user.into(), user.into());
    tokio::time::timeout(WAIT, options.connect(server.url()))
        .await
        .expect("connect in time")
        .expect("connect")
}

async fn next(subscriber: &mut async_nats::Subscriber) -> async_nats::Message {
    tokio::time::timeout(WAIT, subscriber.next())
        .await
        .expect("message in time")
        .expect("subscription open")
}

/// The next message that is not `settle`'s own request or answer (seen by `>` subscribers).
async fn next_imported(subscriber: &mut async_nats::Subscriber) -> async_nats::Message {
    loop {
        let message = next(subscriber).await;
        if !is_settle(&message) {
            return message;
        }
    }
}

fn is_settle(message: &async_nats::Message) -> bool {
    message.subject.starts_with("$SYS.REQ.USER.INFO") || message.subject.starts_with("_INBOX.")
}

async fn assert_quiet(subscriber: &mut async_nats::Subscriber) {
    while let Ok(Some(message)) = tokio::time::timeout(QUIET, subscriber.next()).await {
        if !is_settle(&message) {
            panic!(
                "unexpected message on {}: {:?}",
                message.subject, message.payload
            );
        }
    }
}

#[tokio::test]
async fn stream_imports_deliver_under_the_mapped_subject() {
    let server = TestServer::with_config(CONFIG);
    let a = connect(&server, "a").await;
    let b = connect(&server, "b").await;
    let c = connect(&server, "c").await;
    let mut prefixed = b.subscribe("from_a.public.>").await.unwrap();
    let mut everything_b = b.subscribe(">").await.unwrap();
    let mut mapped = b.subscribe("orders.*").await.unwrap();
    let mut literal = b.subscribe("from_a.public.news").await.unwrap();
    let mut plain = c.subscribe("public.*").await.unwrap();
    settle(&b).await;
    settle(&c).await;

    a.publish("public.news", "hello".into()).await.unwrap();
    a.publish("private.eu.orders", "order".into())
        .await
        .unwrap();
    a.publish("private.eu.secret", "secret".into())
        .await
        .unwrap();
    a.flush().await.unwrap();

    let message = next(&mut prefixed).await;
    assert_eq!(message.subject.as_str(), "from_a.public.news");
    assert_eq!(&message.payload[..], b"hello");
    let message = next(&mut literal).await;
    assert_eq!(message.subject.as_str(), "from_a.public.news");
    let message = next(&mut mapped).await;
    assert_eq!(message.subject.as_str(), "orders.eu");
    assert_eq!(&message.payload[..], b"order");
    let mut seen = vec![
        next_imported(&mut everything_b).await.subject.to_string(),
        next_imported(&mut everything_b).await.subject.to_string(),
    ];
    seen.sort();
    assert_eq!(seen, ["from_a.public.news", "orders.eu"]);
    let message = next(&mut plain).await;
    assert_eq!(message.subject.as_str(), "public.news");

    // Nothing else crosses: not the unexported subject, not C's view of the private export.
    assert_quiet(&mut everything_b).await;
    assert_quiet(&mut plain).await;
    assert_quiet(&mut prefixed).await;
}

#[tokio::test]
async fn stream_imports_go_one_way_and_end_with_the_subscription() {
    let server = TestServer::with_config(CONFIG);
    let a = connect(&server, "a").await;
    let b = connect(&server, "b").await;
    let mut in_a = a.subscribe(">").await.unwrap();
    settle(&a).await;
    // The importer publishing on the mapped or the original subject reaches nobody in A.
    b.publish("from_a.public.news", "up".into()).await.unwrap();
    b.publish("public.news", "up".into()).await.unwrap();
    b.flush().await.unwrap();
    settle(&b).await;
    assert_quiet(&mut in_a).await;

    // Queue groups of the importer get each message once.
    let mut first = b
        .queue_subscribe("from_a.public.>", "workers".into())
        .await
        .unwrap();
    let mut second = b
        .queue_subscribe("from_a.public.>", "workers".into())
        .await
        .unwrap();
    settle(&b).await;
    for index in 0..20 {
        a.publish("public.jobs", format!("{index}").into())
            .await
            .unwrap();
    }
    a.flush().await.unwrap();
    let mut received = 0;
    while let Ok(Some(_)) = tokio::time::timeout(
        QUIET,
        futures::stream::select(&mut first, &mut second).next(),
    )
    .await
    {
        received += 1;
    }
    assert_eq!(received, 20);

    // After UNSUB nothing arrives through the import.
    let mut gone = b.subscribe("from_a.public.gone").await.unwrap();
    settle(&b).await;
    gone.unsubscribe().await.unwrap();
    settle(&b).await;
    a.publish("public.gone", "late".into()).await.unwrap();
    a.flush().await.unwrap();
    assert!(tokio::time::timeout(QUIET, gone.next())
        .await
        .unwrap_or(None)
        .is_none());
}

#[tokio::test]
async fn service_imports_carry_requests_and_replies() {
    let server = TestServer::with_config(CONFIG);
    let a = connect(&server, "a").await;
    let b = connect(&server, "b").await;
    let mut service = a.subscribe("svc.>").await.unwrap();
    settle(&a).await;
    let responder = a.clone();
    let answered = tokio::spawn(async move {
        let request = next(&mut service).await;
        let info = request
            .headers
            .as_ref()
            .and_then(|headers| headers.get("Nats-Request-Info"))
            .map(|value| value.to_string())
            .unwrap_or_default();
        let reply = request.reply.clone().expect("a reply subject");
        responder
            .publish(reply.clone(), format!("re: {}", request.subject).into())
            .await
            .unwrap();
        responder.flush().await.unwrap();
        (request.subject.to_string(), reply.to_string(), info)
    });
    let answer = tokio::time::timeout(WAIT, b.request("svc.echo", "hi".into()))
        .await
        .expect("answered in time")
        .expect("answered");
    assert_eq!(&answer.payload[..], b"re: svc.echo");
    let (subject, reply, info) = answered.await.unwrap();
    assert_eq!(subject, "svc.echo");
    // The responder sees a reply subject of its own account, not B's inbox.
    assert!(reply.starts_with("_R_."), "{reply}");
    let info: serde_json::Value = serde_json::from_str(&info).expect("Nats-Request-Info JSON");
    assert_eq!(info["acc"], "B");

    // A subject B does not import has no responders.
    let missing = b.request("svc2.echo", "hi".into()).await;
    assert!(missing.is_err(), "{missing:?}");
}

#[tokio::test]
async fn service_responses_singleton_once_stream_all() {
    let server = TestServer::with_config(CONFIG);
    let a = connect(&server, "a").await;
    let b = connect(&server, "b").await;
    let mut singleton = a.subscribe("svc.many").await.unwrap();
    let mut streamed = a.subscribe("feed.>").await.unwrap();
    settle(&a).await;

    for (subject, service) in [("svc.many", &mut singleton), ("news.today", &mut streamed)] {
        let inbox = b.new_inbox();
        let mut answers = b.subscribe(inbox.clone()).await.unwrap();
        settle(&b).await;
        b.publish_with_reply(subject, inbox, "go".into())
            .await
            .unwrap();
        b.flush().await.unwrap();
        let request = next(service).await;
        let reply = request.reply.expect("reply");
        for index in 0..3 {
            a.publish(reply.clone(), format!("{index}").into())
                .await
                .unwrap();
        }
        a.flush().await.unwrap();
        let expected = if subject == "svc.many" { 1 } else { 3 };
        for index in 0..expected {
            assert_eq!(next(&mut answers).await.payload, format!("{index}"));
        }
        assert_quiet(&mut answers).await;
    }
    // The streamed request arrived under the exporter's subject.
    let inbox = b.new_inbox();
    let mut answers = b.subscribe(inbox.clone()).await.unwrap();
    settle(&b).await;
    b.publish_with_reply("news.sports", inbox, "".into())
        .await
        .unwrap();
    b.flush().await.unwrap();
    let request = next(&mut streamed).await;
    assert_eq!(request.subject.as_str(), "feed.sports");
    a.publish(request.reply.unwrap(), "done".into())
        .await
        .unwrap();
    a.flush().await.unwrap();
    assert_eq!(&next(&mut answers).await.payload[..], b"done");
}

/// The first line nats-server (or ours) prints for a config it refuses.
fn refusal(text: &str) -> String {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("accounts.conf");
    std::fs::write(&path, text).expect("write config");
    let path_text = path.display().to_string();
    let finished = run(&["-c", &path_text], WAIT).expect("a refused config must not start");
    assert_eq!(finished.code, 1, "{}", finished.output());
    finished
        .stderr
        .replace(&format!("{path_text}:"), "")
        .trim_end()
        .to_string()
}

#[test]
fn imports_the_config_does_not_allow_are_refused() {
    let private = r#"
accounts {
  A { users [{user: a, password: a}], exports [ { stream: "a.>", accounts: [B] } ] }
  B { users [{user: b, password: b}] }
  C { users [{user: c, password: c}], imports [ { stream: { account: A, subject: "a.>" } } ] }
}
"#;
    assert_eq!(
        refusal(private),
        "nats-server: 2:1: Error adding stream import \"a.>\": stream import not authorized"
    );
    let cycle = r#"
accounts {
  A { users [{user: a, password: a}], exports [ { service: "q.>" } ], imports [ { service: { account: B, subject: "q.>" } } ] }
  B { users [{user: b, password: b}], exports [ { service: "q.>" } ], imports [ { service: { account: A, subject: "q.>" } } ] }
}
"#;
    assert_eq!(
        refusal(cycle),
        "nats-server: 2:1: Error adding service import \"q.>\": import forms a cycle"
    );
    let unknown = r#"
accounts {
  A { users [{user: a, password: a}] }
  B { users [{user: b, password: b}], imports [ { service: { account: Y, subject: "q.>" } } ] }
}
"#;
    assert_eq!(
        refusal(unknown),
        "nats-server: 2:1: \"Y\" account not defined for service import"
    );
    let unexported = r#"
accounts {
  A { users [{user: a, password: a}] }
  B { users [{user: b, password: b}], imports [ { service: { account: A, subject: "q.>" } } ] }
}
"#;
    assert_eq!(
        refusal(unexported),
        "nats-server: 2:1: Error adding service import \"q.>\": service import not authorized"
    );
}

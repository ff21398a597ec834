//! In-crate tests of the whole JetStream engine over the test router (a stand-in for core
//! routing only): the `$JS.API` and the publish path as a client sees them.

use crate::test_transport::TestRouter;
use crate::{JetStream, JetStreamConfig, Message, ServerIdentity, Transport};
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Fixture {
    pub(crate) router: Arc<TestRouter>,
    pub(crate) jetstream: JetStream,
    _dir: tempfile::TempDir,
}

pub(crate) async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    fixture_in(dir).await
}

async fn fixture_in(dir: tempfile::TempDir) -> Fixture {
    fixture_with(dir, None).await
}

async fn fixture_with(dir: tempfile::TempDir, domain: Option<&str>) -> Fixture {
    let router = TestRouter::new();
    let config = JetStreamConfig {
        enabled: true,
        store_dir: Some(dir.path().to_path_buf()),
        max_memory: Some(1 << 30),
        max_store: Some(10 << 30),
        domain: domain.map(str::to_string),
        ..Default::default()
    };
    let identity = ServerIdentity {
        server_id: "NTEST".into(),
        server_name: "test-server".into(),
        version: "2.15.1".into(),
    };
    let jetstream = JetStream::start(config, identity, router.clone())
        .await
        .unwrap();
    Fixture {
        router,
        jetstream,
        _dir: dir,
    }
}

impl Fixture {
    async fn raw_request(&self, subject: &str, headers: Option<&str>, body: &str) -> Message {
        let inbox = format!("_INBOX.test.{}", crate::nuid::next_id());
        let mut replies = self.router.channel(&inbox);
        self.router.publish(Message {
            subject: Bytes::from(subject.to_string()),
            reply: Some(Bytes::from(inbox)),
            headers: headers.map(|block| Bytes::from(block.to_string())),
            payload: Bytes::from(body.to_string()),
        });
        tokio::time::timeout(Duration::from_secs(5), replies.recv())
            .await
            .expect("reply in time")
            .expect("reply")
    }

    pub(crate) async fn request(&self, subject: &str, body: &str) -> Value {
        let reply = self.raw_request(subject, None, body).await;
        serde_json::from_slice(&reply.payload).expect("json reply")
    }

    pub(crate) async fn publish(&self, subject: &str, headers: Option<&str>, body: &str) -> String {
        let reply = self.raw_request(subject, headers, body).await;
        String::from_utf8(reply.payload.to_vec()).unwrap()
    }

    pub(crate) async fn create(&self, config: Value) -> Value {
        let name = config["name"].as_str().unwrap().to_string();
        self.request(
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &config.to_string(),
        )
        .await
    }
}

#[tokio::test]
async fn account_info_and_monitoring() {
    let fixture = fixture().await;
    let info = fixture.request("$JS.API.INFO", "").await;
    assert_eq!(
        info["type"],
        "io.nats.jetstream.api.v1.account_info_response"
    );
    assert_eq!(info["api"]["level"], 5);
    assert_eq!(info["api"]["total"], 0);
    let varz = fixture.jetstream.varz();
    assert_eq!(varz["config"]["max_memory"], 1i64 << 30);
    assert_eq!(varz["config"]["max_storage"], 10i64 << 30);
    let banner = fixture.jetstream.banner_lines();
    assert!(banner.contains(&"  Max Memory:      1.00 GB".to_string()));
    assert!(banner.contains(&"  Max Storage:     10.00 GB".to_string()));
    assert_eq!(fixture.jetstream.jsz()["config"]["strict"], true);
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn create_publish_info_flow() {
    let fixture = fixture().await;
    let created = fixture
        .create(json!({"name": "ORDERS", "subjects": ["orders.>"]}))
        .await;
    assert_eq!(
        created["type"],
        "io.nats.jetstream.api.v1.stream_create_response"
    );
    assert_eq!(created["did_create"], true);
    assert_eq!(created["config"]["duplicate_window"], 120_000_000_000i64);
    assert_eq!(created["config"]["metadata"]["_nats.req.level"], "0");
    assert_eq!(created["state"]["first_seq"], 0);
    assert!(created.get("cluster").is_none());

    let ack = fixture.publish("orders.new", None, "hello").await;
    assert_eq!(ack, r#"{"stream":"ORDERS","seq":1}"#);
    let ack = fixture.publish("orders.new", None, "again").await;
    assert_eq!(ack, r#"{"stream":"ORDERS","seq":2}"#);

    let info = fixture.request("$JS.API.STREAM.INFO.ORDERS", "").await;
    assert_eq!(info["state"]["messages"], 2);
    assert_eq!(info["state"]["first_seq"], 1);
    assert_eq!(info["state"]["last_seq"], 2);
    assert_eq!(info["state"]["num_subjects"], 1);
    assert_eq!(info["cluster"]["leader"], "test-server");
    assert_eq!(info["total"], 0);

    let again = fixture
        .create(json!({"name": "ORDERS", "subjects": ["orders.>"]}))
        .await;
    assert!(again.get("error").is_none(), "{again}");
    assert_eq!(again["did_create"], true);
    let conflict = fixture
        .create(json!({"name": "ORDERS", "subjects": ["orders.*"]}))
        .await;
    assert_eq!(conflict["error"]["err_code"], 10058);
    let overlap = fixture
        .create(json!({"name": "OTHER", "subjects": ["orders.eu"]}))
        .await;
    assert_eq!(overlap["error"]["err_code"], 10065);
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn dedupe_and_expected_headers() {
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "D", "subjects": ["d.>"]}))
        .await;
    let with_id = "NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(with_id), "x").await,
        r#"{"stream":"D","seq":1}"#
    );
    assert_eq!(
        fixture.publish("d.a", Some(with_id), "x").await,
        r#"{"stream":"D","seq":1,"duplicate": true}"#
    );
    let wrong_stream = "NATS/1.0\r\nNats-Expected-Stream: X\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(wrong_stream), "x").await,
        r#"{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},"stream":"D","seq":0}"#
    );
    let wrong_last = "NATS/1.0\r\nNats-Expected-Last-Sequence: 5\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(wrong_last), "x").await,
        r#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"D","seq":0}"#
    );
    let right_last = "NATS/1.0\r\nNats-Expected-Last-Sequence: 1\r\n\r\n";
    assert_eq!(
        fixture.publish("d.b", Some(right_last), "x").await,
        r#"{"stream":"D","seq":2}"#
    );
    let subject_seq = "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 1\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(subject_seq), "x").await,
        r#"{"stream":"D","seq":3}"#
    );
    let subject_override = "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 2\r\nNats-Expected-Last-Subject-Sequence-Subject: d.b\r\n\r\n";
    assert_eq!(
        fixture.publish("d.c", Some(subject_override), "x").await,
        r#"{"stream":"D","seq":4}"#
    );
    let last_id = "NATS/1.0\r\nNats-Expected-Last-Msg-Id: zz\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(last_id), "x").await,
        r#"{"error":{"code":400,"err_code":10070,"description":"wrong last msg ID: "},"stream":"D","seq":0}"#
    );
    let rollup = "NATS/1.0\r\nNats-Rollup: all\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(rollup), "x").await,
        r#"{"error":{"code":500,"err_code":10111,"description":"rollup not permitted"},"stream":"D","seq":0}"#
    );
    let ttl = "NATS/1.0\r\nNats-TTL: 5s\r\n\r\n";
    assert_eq!(
        fixture.publish("d.a", Some(ttl), "x").await,
        r#"{"error":{"code":400,"err_code":10166,"description":"per-message TTL is disabled"},"stream":"D","seq":0}"#
    );
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn limits_discard_new_and_rollup() {
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "L", "subjects": ["l.>"], "max_msgs": 2, "discard": "new"}))
        .await;
    fixture.publish("l.a", None, "1").await;
    fixture.publish("l.a", None, "2").await;
    assert_eq!(
        fixture.publish("l.a", None, "3").await,
        r#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"L","seq":0}"#
    );
    fixture
        .create(json!({"name": "R", "subjects": ["r.>"], "allow_rollup_hdrs": true}))
        .await;
    for _ in 0..3 {
        fixture.publish("r.a", None, "x").await;
    }
    fixture.publish("r.b", None, "x").await;
    let rollup = "NATS/1.0\r\nNats-Rollup: sub\r\n\r\n";
    assert_eq!(
        fixture.publish("r.a", Some(rollup), "x").await,
        r#"{"stream":"R","seq":5}"#
    );
    let info = fixture.request("$JS.API.STREAM.INFO.R", "").await;
    assert_eq!(info["state"]["messages"], 2);
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn purge_get_delete_and_names() {
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "P", "subjects": ["p.>"], "allow_direct": true}))
        .await;
    for subject in ["p.a", "p.b", "p.a", "p.c"] {
        fixture.publish(subject, None, "data").await;
    }
    let got = fixture
        .request("$JS.API.STREAM.MSG.GET.P", r#"{"last_by_subj":"p.a"}"#)
        .await;
    assert_eq!(got["message"]["seq"], 3);
    assert_eq!(got["message"]["data"], "ZGF0YQ==");
    let missing = fixture
        .request("$JS.API.STREAM.MSG.GET.P", r#"{"seq":99}"#)
        .await;
    assert_eq!(missing["error"]["err_code"], 10037);
    let direct = fixture
        .raw_request("$JS.API.DIRECT.GET.P.p.b", None, "")
        .await;
    let headers = String::from_utf8(direct.headers.unwrap().to_vec()).unwrap();
    assert!(headers.contains("Nats-Sequence: 2\r\n"), "{headers}");
    assert!(headers.contains("Nats-Stream: P\r\n"));
    let direct_missing = fixture
        .raw_request("$JS.API.DIRECT.GET.P", None, r#"{"seq":42}"#)
        .await;
    assert_eq!(
        &direct_missing.headers.unwrap()[..],
        b"NATS/1.0 404 Message Not Found\r\n\r\n"
    );
    let deleted = fixture
        .request("$JS.API.STREAM.MSG.DELETE.P", r#"{"seq":2}"#)
        .await;
    assert_eq!(deleted["success"], true);
    let info = fixture
        .request(
            "$JS.API.STREAM.INFO.P",
            r#"{"deleted_details":true,"subjects_filter":">"}"#,
        )
        .await;
    assert_eq!(info["state"]["deleted"], json!([2]));
    assert_eq!(info["state"]["subjects"]["p.a"], 2);
    assert_eq!(info["total"], 2);
    let purged = fixture
        .request("$JS.API.STREAM.PURGE.P", r#"{"filter":"p.a"}"#)
        .await;
    assert_eq!(purged["purged"], 2);
    let names = fixture.request("$JS.API.STREAM.NAMES", "").await;
    assert_eq!(names["streams"], json!(["P"]));
    assert_eq!(names["limit"], 1024);
    let list = fixture.request("$JS.API.STREAM.LIST", "").await;
    assert_eq!(list["streams"][0]["config"]["name"], "P");
    let unknown = fixture
        .request("$JS.API.STREAM.INFO.P", r#"{"bogus":1}"#)
        .await;
    assert_eq!(unknown["error"]["err_code"], 10025);
    let gone = fixture.request("$JS.API.STREAM.DELETE.P", "").await;
    assert_eq!(gone["success"], true);
    let missing = fixture.request("$JS.API.STREAM.INFO.P", "").await;
    assert_eq!(missing["error"]["err_code"], 10059);
    assert!(!fixture.router.has_interest("p.a"));
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn interest_retention_without_consumers_keeps_nothing() {
    let fixture = fixture().await;
    fixture
        .create(json!({"name": "I", "subjects": ["i.>"], "retention": "interest"}))
        .await;
    assert_eq!(
        fixture.publish("i.a", None, "x").await,
        r#"{"stream":"I","seq":1}"#
    );
    let info = fixture.request("$JS.API.STREAM.INFO.I", "").await;
    assert_eq!(info["state"]["messages"], 0);
    assert_eq!(info["state"]["last_seq"], 1);
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn file_streams_survive_restart_with_dedupe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let fixture = fixture_in(dir).await;
    fixture
        .create(json!({"name": "KEEP", "subjects": ["keep.>"], "max_msgs_per_subject": 5}))
        .await;
    let with_id = "NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n";
    fixture.publish("keep.a", Some(with_id), "one").await;
    fixture.publish("keep.b", None, "two").await;
    fixture.jetstream.shutdown().await;
    let Fixture { router, _dir, .. } = fixture;
    drop(router);

    let fixture = fixture_in(_dir).await;
    assert!(path.join("jetstream/$G/streams/KEEP").is_dir());
    let info = fixture.request("$JS.API.STREAM.INFO.KEEP", "").await;
    assert_eq!(info["state"]["messages"], 2, "{info}");
    assert_eq!(info["config"]["max_msgs_per_subject"], 5);
    assert_eq!(
        fixture.publish("keep.a", Some(with_id), "one").await,
        r#"{"stream":"KEEP","seq":1,"duplicate": true}"#
    );
    assert_eq!(
        fixture.publish("keep.c", None, "three").await,
        r#"{"stream":"KEEP","seq":3}"#
    );
    let got = fixture
        .request("$JS.API.STREAM.MSG.GET.KEEP", r#"{"seq":2}"#)
        .await;
    assert_eq!(got["message"]["data"], "dHdv");
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn domain_in_acks_info_and_account_but_not_create() {
    let fixture = fixture_with(tempfile::tempdir().unwrap(), Some("hub")).await;
    let created = fixture.create(json!({"name": "A"})).await;
    assert!(created.get("domain").is_none(), "{created}");
    assert_eq!(
        fixture.publish("A", None, "x").await,
        r#"{"stream":"A","domain":"hub","seq":1}"#
    );
    let info = fixture.request("$JS.API.STREAM.INFO.A", "").await;
    assert_eq!(info["domain"], "hub");
    let account = fixture.request("$JS.API.INFO", "").await;
    assert_eq!(account["domain"], "hub");
    assert_eq!(fixture.jetstream.jsz()["config"]["domain"], "hub");
    assert!(fixture
        .jetstream
        .banner_lines()
        .contains(&"  Domain:          hub".to_string()));
    fixture.jetstream.shutdown().await;
}

#[tokio::test]
async fn required_api_level_refuses_newer_requests() {
    let fixture = fixture().await;
    let reply = fixture
        .raw_request(
            "$JS.API.STREAM.NAMES",
            Some("NATS/1.0\r\nNats-Required-Api-Level: 9\r\n\r\n"),
            "",
        )
        .await;
    let body: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(body["error"]["err_code"], 10185);
    assert_eq!(body["error"]["code"], 412);
    fixture.jetstream.shutdown().await;
}

/// An update enabling an account's JetStream again while its streams still close after the
/// update that disabled it waits for them, even when another task's `settled` already waits
/// for that closing (the claims requests and the full resolver's pack sync are two tasks): the
/// stream is back with its message. Served at once, the account's streams were reopened beside
/// the closing ones (in a cluster, the closing then stopped the new replica's group).
#[tokio::test]
async fn an_account_enabled_again_while_its_streams_close_gets_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let router = TestRouter::new();
    let setup = || crate::AccountSetup {
        name: "A".into(),
        transport: router.clone(),
        limits: Default::default(),
        tiers: Default::default(),
    };
    let config = JetStreamConfig {
        enabled: true,
        store_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let jetstream =
        JetStream::start_accounts(config, ServerIdentity::default(), vec![setup()], vec![])
            .await
            .unwrap();
    let fixture = Fixture {
        router: router.clone(),
        jetstream: jetstream.clone(),
        _dir: dir,
    };
    fixture
        .create(json!({"name": "KEEP", "subjects": ["keep.>"], "storage": "file"}))
        .await;
    fixture.publish("keep.a", None, "one").await;

    // The closing waits for the registry's admin lock, held here until the account is
    // enabled again; another task's `settled` waits for the closing meanwhile.
    let registry = jetstream.engine.accounts.load()[0].registry.clone();
    let admin = registry.admin_lock.lock().await;
    jetstream.update_account("A", Err(router.clone())).unwrap();
    let settled = jetstream.settled();
    tokio::pin!(settled);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), &mut settled)
            .await
            .is_err()
    );
    jetstream.update_account("A", Ok(setup())).unwrap();
    drop(admin);
    settled.await;
    jetstream.settled().await;

    let info = fixture.request("$JS.API.STREAM.INFO.KEEP", "").await;
    assert_eq!(info["state"]["messages"], 1, "{info}");
    jetstream.shutdown().await;
}

/// Serve one `$JS.API` request on the calling task (`api::handle_request`, no queue, no router
/// in between) and take its answer; when the handler sent it before returning, the answer is
/// taken without yielding to the runtime, so no other task has run since.
async fn serve_inline(
    fixture: &Fixture,
    context: &Arc<crate::api::Context>,
    subject: &str,
    body: &Value,
) -> Value {
    let inbox = format!("_INBOX.inline.{}", crate::nuid::next_id());
    let mut replies = fixture.router.channel(&inbox);
    crate::api::handle_request(
        context,
        Message {
            subject: Bytes::from(subject.to_string()),
            reply: Some(Bytes::from(inbox)),
            headers: None,
            payload: Bytes::from(body.to_string()),
        },
        std::time::Instant::now(),
        None,
    )
    .await;
    let reply = tokio::time::timeout(Duration::from_secs(5), replies.recv())
        .await
        .expect("answered in time")
        .expect("an answer");
    serde_json::from_slice(&reply.payload).expect("json answer")
}

/// A CONSUMER.CREATE the admin thread took from its queue before a stop closed the queues, and
/// whose wait for the registry's admin lock ended only after the stop held it and stopped every
/// stream (the admin lock is a fair queue: a handler that asks for it after `stop_all_streams`
/// did gets it after): it finds the stopped stream still registered, and must not start a
/// consumer there (one with a delivery task and subscriptions that answer pull requests and
/// take acks of a stopped JetStream, its files made after the stream's store closed). It is
/// refused, makes no files and subscribes nothing (issue 21, session 33).
#[tokio::test]
async fn a_consumer_creation_served_after_the_stop_starts_no_consumer() {
    let fixture = fixture().await;
    let created = fixture
        .create(json!({"name": "S", "subjects": ["s.>"], "storage": "file"}))
        .await;
    assert!(created.get("error").is_none(), "{created}");
    fixture.publish("s.a", None, "one").await;
    let context = fixture.jetstream.engine.accounts.load()[0].clone();
    fixture.jetstream.shutdown().await;

    let requests = [
        (
            "$JS.API.CONSUMER.DURABLE.CREATE.S.D",
            json!({"stream_name": "S", "config": {"durable_name": "D", "ack_policy": "explicit"}}),
            "D",
        ),
        (
            "$JS.API.CONSUMER.CREATE.S.N",
            json!({"stream_name": "S", "config": {"durable_name": "N", "ack_policy": "explicit"}}),
            "N",
        ),
        (
            "$JS.API.CONSUMER.CREATE.S.E",
            json!({"stream_name": "S", "config": {"name": "E", "ack_policy": "explicit"}}),
            "E",
        ),
    ];
    let stream = context
        .registry
        .get("S")
        .expect("a stopped stream stays registered");
    let mut problems = Vec::new();
    for (subject, body, name) in requests {
        let answer = serve_inline(&fixture, &context, subject, &body).await;
        if answer["error"]["err_code"] != 10012 {
            problems.push(format!("{subject}: answered {answer}"));
        }
        if context.registry.consumers(&stream).get(name).is_some() {
            problems.push(format!(
                "{subject}: a consumer started on the stopped stream"
            ));
        }
        let next = format!("$JS.API.CONSUMER.MSG.NEXT.S.{name}");
        if fixture.router.has_interest(&next) {
            problems.push(format!(
                "{subject}: its pull requests are served after the stop"
            ));
        }
        let directory = fixture
            ._dir
            .path()
            .join("jetstream/$G/streams/S/consumers")
            .join(name);
        if directory.exists() {
            problems.push(format!("{subject}: {} made", directory.display()));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A consumer's config update (a durable's description, then a pause) is answered once the
/// consumer's task saved it to its store, so a kill -9 right after the answer keeps it, as
/// nats-server's (which writes the config before it answers). The requests are served on the
/// test's own task and each answer is taken without yielding to the runtime: an answer sent
/// before the task had run shows here as the old config on disk.
#[tokio::test]
async fn a_consumer_update_is_answered_once_its_config_is_in_the_store() {
    let fixture = fixture().await;
    let created = fixture
        .create(json!({"name": "S", "subjects": ["s.>"], "storage": "file"}))
        .await;
    assert!(created.get("error").is_none(), "{created}");
    let context = fixture.jetstream.engine.accounts.load()[0].clone();
    let consumer_dir = fixture
        ._dir
        .path()
        .join("jetstream/$G/streams/S/consumers/D");
    for (round, description) in ["first description", "second description"]
        .into_iter()
        .enumerate()
    {
        let body = json!({
            "stream_name": "S",
            "config": {"durable_name": "D", "ack_policy": "explicit", "description": description},
        });
        let answer = serve_inline(&fixture, &context, "$JS.API.CONSUMER.CREATE.S.D", &body).await;
        assert!(answer.get("error").is_none(), "{answer}");
        assert_eq!(answer["config"]["description"], description, "{answer}");
        let stored = std::fs::read(consumer_dir.join("config.bin")).expect("the config file");
        assert!(
            stored
                .windows(description.len())
                .any(|window| window == description.as_bytes()),
            "round {round}: answered before the store had {description:?}: {}",
            String::from_utf8_lossy(&stored)
        );
    }
    // CONSUMER.PAUSE changes the config the same way.
    let pause = json!({"pause_until": "2099-01-01T00:00:00Z"});
    let answer = serve_inline(&fixture, &context, "$JS.API.CONSUMER.PAUSE.S.D", &pause).await;
    assert_eq!(answer["paused"], true, "{answer}");
    let stored = std::fs::read(consumer_dir.join("config.bin")).expect("the config file");
    assert!(
        String::from_utf8_lossy(&stored).contains("2099-01-01"),
        "paused before the store had it: {}",
        String::from_utf8_lossy(&stored)
    );
}

//! The duplicate window and the last message id after a restart, whenever they are rebuilt:
//! at start, or lazily on the first publish that needs them (nats-server's `rebuildDedupe`),
//! including when publishes without an id came first. Graceful stop and SIGKILL.

use test_harness::client::{api, connect, publish_raw};
use test_harness::TestServer;

fn stored(stream: &str, seq: u64) -> String {
    format!(r#"{{"stream":"{stream}","seq":{seq}}}"#)
}

fn duplicate(stream: &str, seq: u64) -> String {
    format!(r#"{{"stream":"{stream}","seq":{seq},"duplicate": true}}"#)
}

async fn create(server: &TestServer, name: &str, subjects: &str) {
    let client = connect(server).await;
    let created = api(
        &client,
        &format!("$JS.API.STREAM.CREATE.{name}"),
        &serde_json::json!({"name": name, "subjects": [subjects]}).to_string(),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
}

#[tokio::test]
async fn ids_from_before_a_restart_stay_duplicates_after_plain_publishes() {
    let mut server = TestServer::jetstream();
    create(&server, "DEDUPE", "dedupe.>").await;
    let client = connect(&server).await;
    for (index, id) in ["a", "b", "c"].iter().enumerate() {
        let ack = publish_raw(&client, "dedupe.1", &[("Nats-Msg-Id", id)], "body").await;
        assert_eq!(ack, stored("DEDUPE", index as u64 + 1));
    }
    drop(client);

    server.restart();
    let client = connect(&server).await;
    // A publish without an id first: it must not stand in for the window of the earlier ones.
    let ack = publish_raw(&client, "dedupe.2", &[], "plain").await;
    assert_eq!(ack, stored("DEDUPE", 4));
    let ack = publish_raw(&client, "dedupe.1", &[("Nats-Msg-Id", "a")], "again").await;
    assert_eq!(ack, duplicate("DEDUPE", 1));
    let ack = publish_raw(&client, "dedupe.1", &[("Nats-Msg-Id", "d")], "new").await;
    assert_eq!(ack, stored("DEDUPE", 5));
    drop(client);

    server.kill9();
    server.restart();
    let client = connect(&server).await;
    let ack = publish_raw(&client, "dedupe.2", &[], "plain").await;
    assert_eq!(ack, stored("DEDUPE", 6));
    for (id, seq) in [("b", 2), ("d", 5)] {
        let ack = publish_raw(&client, "dedupe.1", &[("Nats-Msg-Id", id)], "again").await;
        assert_eq!(ack, duplicate("DEDUPE", seq), "id {id}");
    }
    let info = api(&client, "$JS.API.STREAM.INFO.DEDUPE", "").await;
    assert_eq!(info["state"]["messages"], 6, "{info}");
}

#[tokio::test]
async fn expected_last_msg_id_holds_across_a_restart() {
    let mut server = TestServer::jetstream();
    create(&server, "LASTID", "lastid.>").await;
    let client = connect(&server).await;
    let ack = publish_raw(&client, "lastid.x", &[("Nats-Msg-Id", "first")], "one").await;
    assert_eq!(ack, stored("LASTID", 1));
    drop(client);

    server.restart();
    let client = connect(&server).await;
    let expecting_first = [
        ("Nats-Expected-Last-Msg-Id", "first"),
        ("Nats-Msg-Id", "second"),
    ];
    let ack = publish_raw(&client, "lastid.x", &expecting_first, "two").await;
    assert_eq!(ack, stored("LASTID", 2));
    drop(client);

    server.kill9();
    server.restart();
    let client = connect(&server).await;
    // The last id is now "second": expecting "first" is refused with the actual last id.
    let only_expecting_first = [("Nats-Expected-Last-Msg-Id", "first")];
    let ack = publish_raw(&client, "lastid.x", &only_expecting_first, "three").await;
    let refused: serde_json::Value = serde_json::from_str(&ack).expect("json ack");
    assert_eq!(refused["error"]["err_code"], 10070, "{ack}");
    assert!(
        refused["error"]["description"]
            .as_str()
            .is_some_and(|text| text.ends_with("second")),
        "{ack}"
    );
    let expecting_second = [("Nats-Expected-Last-Msg-Id", "second")];
    let ack = publish_raw(&client, "lastid.x", &expecting_second, "three").await;
    assert_eq!(ack, stored("LASTID", 3));
}

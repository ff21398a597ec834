//! Streams sourcing other streams of the same server: filters and subject transforms, the
//! `Nats-Stream-Source` header (byte for byte, with the origin's identity), `sources` info,
//! dedupe across sources, a missing origin that appears later, an origin created again, sources
//! added and removed by updates, and convergence across restarts (neither lost nor repeated
//! messages). Runs against nats-server too (`NATS_SERVER_BIN`).

use serde_json::Value;
use std::time::Duration;
use test_harness::client::{api, connect, publish_raw, TIMEOUT};
use test_harness::TestServer;

/// STREAM.INFO until `done` says the stream converged; bounded by [`TIMEOUT`].
async fn wait_info(
    client: &async_nats::Client,
    stream: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_info_for(client, stream, what, TIMEOUT, done).await
}

async fn wait_info_for(
    client: &async_nats::Client,
    stream: &str,
    what: &str,
    bound: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let info = api(client, &format!("$JS.API.STREAM.INFO.{stream}"), "").await;
        if done(&info) {
            return info;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{stream} did not reach {what}: {info}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn wait_messages(client: &async_nats::Client, stream: &str, count: u64) -> Value {
    wait_info(client, stream, &format!("{count} messages"), |info| {
        info["state"]["messages"] == count
    })
    .await
}

fn created(response: &Value) {
    assert!(response.get("error").is_none(), "{response}");
}

async fn create(client: &async_nats::Client, name: &str, config: &str) -> Value {
    let response = api(client, &format!("$JS.API.STREAM.CREATE.{name}"), config).await;
    created(&response);
    response
}

/// Subject and headers of the message at `seq`.
async fn message(
    client: &async_nats::Client,
    stream: &str,
    seq: u64,
) -> async_nats::jetstream::message::StreamMessage {
    let context = async_nats::jetstream::new(client.clone());
    let stream = context.get_stream(stream).await.expect("stream");
    tokio::time::timeout(TIMEOUT, stream.get_raw_message(seq))
        .await
        .expect("in time")
        .expect("message")
}

/// The `sources` entry of `origin` (nats-server lists them in no particular order).
fn source<'a>(info: &'a Value, origin: &str) -> &'a Value {
    info["sources"]
        .as_array()
        .and_then(|sources| sources.iter().find(|entry| entry["name"] == origin))
        .unwrap_or(&Value::Null)
}

fn source_header(message: &async_nats::jetstream::message::StreamMessage) -> String {
    message
        .headers
        .get("Nats-Stream-Source")
        .map(|value| value.as_str().to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn sources_filter_transform_and_report() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "O1", r#"{"name":"O1","subjects":["o1.>"]}"#).await;
    create(&client, "O2", r#"{"name":"O2","subjects":["o2.>"]}"#).await;
    for index in 0..3 {
        publish_raw(&client, "o1.a", &[("X-Index", &index.to_string())], "one").await;
        publish_raw(&client, "o2.b", &[], "two").await;
        publish_raw(&client, "o2.c", &[], "skipped by the filter").await;
    }
    let response = create(
        &client,
        "AGG",
        r#"{"name":"AGG","sources":[
            {"name":"O1","subject_transforms":[{"src":"o1.*","dest":"t.{{wildcard(1)}}"}]},
            {"name":"O2","filter_subject":"o2.b"}]}"#,
    )
    .await;
    assert!(response["config"].get("subjects").is_none(), "{response}");
    assert_eq!(response["sources"][0]["active"], -1, "{response}");

    let info = wait_info(&client, "AGG", "6 messages, both sources current", |info| {
        info["state"]["messages"] == 6
            && source(info, "O1")["seq"] == 3
            && source(info, "O2")["seq"] == 5
    })
    .await;
    assert_eq!(info["sources"].as_array().map(Vec::len), Some(2), "{info}");
    let first = source(&info, "O1");
    assert_eq!(first["lag"], 0);
    assert!(first["active"].as_i64().unwrap() >= 0, "{info}");
    assert_eq!(first["subject_transforms"][0]["dest"], "t.{{wildcard(1)}}");
    assert!(first.get("error").is_none(), "{info}");
    assert_eq!(source(&info, "O2")["filter_subject"], "o2.b");

    let mut transformed = 0;
    for seq in 1..=6 {
        let stored = message(&client, "AGG", seq).await;
        let header = source_header(&stored);
        match stored.subject.as_str() {
            "t.a" => {
                transformed += 1;
                assert!(header.starts_with("O1 "), "{header}");
                assert!(header.contains(" o1.* t.{{wildcard(1)}} o1.a"), "{header}");
                assert!(
                    stored.headers.get("X-Index").is_some(),
                    "origin headers kept"
                );
            }
            "o2.b" => assert!(
                header.starts_with("O2 ") && header.contains(" o2.b > o2.b"),
                "{header}"
            ),
            other => panic!("unexpected subject {other}"),
        }
    }
    assert_eq!(transformed, 3);

    // Later messages follow; the lag is what the origin holds beyond the position.
    publish_raw(&client, "o1.z", &[], "later").await;
    let info = wait_messages(&client, "AGG", 7).await;
    assert_eq!(info["state"]["num_subjects"], 3, "{info}");
}

async fn publish_orders(client: &async_nats::Client, indexes: std::ops::Range<u32>) {
    for index in indexes {
        let subject = format!("orders.{}", index % 3);
        publish_raw(client, &subject, &[], &index.to_string()).await;
    }
}

#[tokio::test]
async fn sources_survive_restarts_without_loss_or_repeats() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        "ORDERS",
        r#"{"name":"ORDERS","subjects":["orders.>"]}"#,
    )
    .await;
    create(&client, "AUDIT", r#"{"name":"AUDIT","subjects":["audit"]}"#).await;
    create(
        &client,
        "ALL",
        r#"{"name":"ALL","sources":[{"name":"ORDERS"},{"name":"AUDIT"}]}"#,
    )
    .await;
    publish_orders(&client, 0..60).await;
    publish_raw(&client, "audit", &[], "a").await;
    wait_messages(&client, "ALL", 61).await;
    drop(client);

    server.restart();
    let client = connect(&server).await;
    // Nothing new: after the restart the aggregate stays where it was.
    publish_orders(&client, 60..100).await;
    publish_raw(&client, "audit", &[], "b").await;
    let info = wait_info(
        &client,
        "ALL",
        "both sources at their origin's end",
        |info| source(info, "ORDERS")["seq"] == 100 && source(info, "AUDIT")["seq"] == 2,
    )
    .await;
    assert_eq!(info["state"]["messages"], 102, "{info}");

    // Every origin sequence exactly once.
    let mut seen = std::collections::BTreeSet::new();
    for seq in 1..=102 {
        let stored = message(&client, "ALL", seq).await;
        let header = source_header(&stored);
        assert!(
            seen.insert(header.split(' ').take(2).collect::<Vec<_>>().join(" ")),
            "repeat {header}"
        );
    }
    drop(client);

    // Another restart: the aggregate goes on from where it was.
    server.restart();
    let client = connect(&server).await;
    publish_orders(&client, 100..110).await;
    let info = wait_info(&client, "ALL", "ORDERS at 110", |info| {
        source(info, "ORDERS")["seq"] == 110
    })
    .await;
    assert_eq!(info["state"]["messages"], 112, "{info}");
}

#[tokio::test]
async fn missing_origin_is_waited_for() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        "LATE_AGG",
        r#"{"name":"LATE_AGG","sources":[{"name":"LATE"}]}"#,
    )
    .await;
    let info = wait_info(&client, "LATE_AGG", "a stream-not-found error", |info| {
        info["sources"][0]["error"]["err_code"] == 10059
    })
    .await;
    assert_eq!(info["sources"][0]["error"]["code"], 404, "{info}");
    assert_eq!(info["sources"][0]["active"], -1, "{info}");

    create(&client, "LATE", r#"{"name":"LATE","subjects":["late"]}"#).await;
    publish_raw(&client, "late", &[], "here").await;
    // nats-server looks for a missing origin again only every 10 s or so.
    let info = wait_info_for(
        &client,
        "LATE_AGG",
        "1 message, no lag",
        Duration::from_secs(30),
        // The lag drops once the source has heard the PubAck, just after the message is stored.
        |info| info["state"]["messages"] == 1 && info["sources"][0]["lag"] == 0,
    )
    .await;
    let info = if info["sources"][0].get("error").is_some() {
        wait_info(&client, "LATE_AGG", "no error", |info| {
            info["sources"][0].get("error").is_none()
        })
        .await
    } else {
        info
    };
    assert_eq!(info["sources"][0]["lag"], 0, "{info}");
}

#[tokio::test]
async fn message_ids_dedupe_across_sources() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "EAST", r#"{"name":"EAST","subjects":["east"]}"#).await;
    create(&client, "WEST", r#"{"name":"WEST","subjects":["west"]}"#).await;
    create(
        &client,
        "BOTH",
        r#"{"name":"BOTH","duplicate_window":60000000000,"sources":[{"name":"EAST"},{"name":"WEST"}]}"#,
    )
    .await;
    for id in ["a", "b", "c"] {
        publish_raw(&client, "east", &[("Nats-Msg-Id", id)], "e").await;
        publish_raw(&client, "west", &[("Nats-Msg-Id", id)], "w").await;
    }
    publish_raw(&client, "west", &[("Nats-Msg-Id", "d")], "w").await;
    // Whichever source comes first stores a, b and c; the other's copies are duplicates.
    let info = wait_info(&client, "BOTH", "both sources read to the end", |info| {
        info["state"]["messages"] == 4
            && info["sources"][0]["lag"] == 0
            && info["sources"][1]["lag"] == 0
    })
    .await;
    let subjects = api(
        &client,
        "$JS.API.STREAM.INFO.BOTH",
        r#"{"subjects_filter":">"}"#,
    )
    .await;
    let east = subjects["state"]["subjects"]["east"].as_u64().unwrap_or(0);
    let west = subjects["state"]["subjects"]["west"].as_u64().unwrap_or(0);
    assert_eq!(east + west, 4, "{info}");
    assert!(west >= 1, "d only comes from WEST: {subjects}");
}

#[tokio::test]
async fn updates_add_and_remove_sources() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "S1", r#"{"name":"S1","subjects":["s1"]}"#).await;
    create(&client, "S2", r#"{"name":"S2","subjects":["s2"]}"#).await;
    publish_raw(&client, "s1", &[], "1").await;
    publish_raw(&client, "s2", &[], "2").await;
    publish_raw(&client, "s2", &[], "3").await;
    create(
        &client,
        "GROW",
        r#"{"name":"GROW","subjects":["grow"],"sources":[{"name":"S1"}]}"#,
    )
    .await;
    wait_messages(&client, "GROW", 1).await;
    // Its own subjects still take publishes next to the sourced messages.
    let ack = publish_raw(&client, "grow", &[], "own").await;
    assert!(ack.contains("\"seq\":2"), "{ack}");

    let updated = api(
        &client,
        "$JS.API.STREAM.UPDATE.GROW",
        r#"{"name":"GROW","subjects":["grow"],"sources":[{"name":"S1"},{"name":"S2"}]}"#,
    )
    .await;
    created(&updated);
    wait_messages(&client, "GROW", 4).await;

    let updated = api(
        &client,
        "$JS.API.STREAM.UPDATE.GROW",
        r#"{"name":"GROW","subjects":["grow"],"sources":[{"name":"S2"}]}"#,
    )
    .await;
    created(&updated);
    assert_eq!(
        updated["sources"].as_array().map(Vec::len),
        Some(1),
        "{updated}"
    );
    publish_raw(&client, "s2", &[], "4").await;
    let info = wait_info(&client, "GROW", "S2 at 3", |info| {
        info["sources"][0]["seq"] == 3
    })
    .await;
    assert_eq!(info["state"]["messages"], 5, "{info}");
    // S1 is no longer followed.
    publish_raw(&client, "s1", &[], "ignored").await;
    publish_raw(&client, "s2", &[], "5").await;
    let info = wait_info(&client, "GROW", "S2 at 4", |info| {
        info["sources"][0]["seq"] == 4
    })
    .await;
    assert_eq!(info["state"]["messages"], 6, "{info}");
}

#[tokio::test]
async fn source_config_errors() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "BASE", r#"{"name":"BASE","subjects":["base.>"]}"#).await;
    let cases = [
        (
            r#"{"name":"X","sources":[{"name":"BASE"},{"name":"BASE"}]}"#,
            10140,
        ),
        (
            r#"{"name":"X","sources":[{"name":"BASE","filter_subject":"base.a","subject_transforms":[{"src":"base.*","dest":"x"}]}]}"#,
            10144,
        ),
        (
            r#"{"name":"X","sources":[{"name":"BASE","subject_transforms":[{"src":"base.>","dest":""},{"src":"base.a","dest":""}]}]}"#,
            10147,
        ),
        (
            r#"{"name":"X","mirror":{"name":"BASE"},"subjects":["m.>"]}"#,
            10034,
        ),
        (
            r#"{"name":"X","sources":[{"name":"BASE","external":{"api":"$JS.API","deliver":""}}]}"#,
            10021,
        ),
    ];
    for (config, code) in cases {
        let response = api(&client, "$JS.API.STREAM.CREATE.X", config).await;
        assert_eq!(response["error"]["err_code"], code, "{config}: {response}");
    }
    // A stream sourcing itself through another forms a cycle.
    create(
        &client,
        "LOOP1",
        r#"{"name":"LOOP1","subjects":["loop1"],"sources":[{"name":"BASE"}]}"#,
    )
    .await;
    let response = api(
        &client,
        "$JS.API.STREAM.UPDATE.BASE",
        r#"{"name":"BASE","subjects":["base.>"],"sources":[{"name":"LOOP1"}]}"#,
    )
    .await;
    assert_eq!(response["error"]["err_code"], 10052, "{response}");

    // External sources are accepted and shown with their prefixes.
    let response = create(
        &client,
        "EXT",
        r#"{"name":"EXT","sources":[{"name":"BASE","external":{"api":"$JS.hub.API","deliver":"dl"}}]}"#,
    )
    .await;
    assert_eq!(
        response["sources"][0]["external"]["api"], "$JS.hub.API",
        "{response}"
    );
}

#[tokio::test]
async fn sources_start_where_configured() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "TEN", r#"{"name":"TEN","subjects":["ten"]}"#).await;
    for index in 1..=10 {
        publish_raw(&client, "ten", &[], &index.to_string()).await;
    }
    create(
        &client,
        "TAIL",
        r#"{"name":"TAIL","sources":[{"name":"TEN","opt_start_seq":7}]}"#,
    )
    .await;
    let info = wait_info(&client, "TAIL", "TEN read to its end", |info| {
        info["sources"][0]["seq"] == 10
    })
    .await;
    assert_eq!(info["state"]["messages"], 4, "{info}");
    let first = message(&client, "TAIL", 1).await;
    assert_eq!(&first.payload[..], b"7");
    assert!(source_header(&first).starts_with("TEN 7 > > ten"));
}

/// Origin `AGAIN` with `before` messages, sourced by `AGAIN_ALL`; then `AGAIN` is deleted and
/// created again with `after` messages. Returns the aggregate's info once it holds them all.
async fn recreate_sourced_origin(
    client: &async_nats::Client,
    before: usize,
    after: usize,
) -> Value {
    let origin = r#"{"name":"AGAIN","subjects":["again"]}"#;
    create(client, "AGAIN", origin).await;
    for index in 0..before {
        publish_raw(client, "again", &[], &index.to_string()).await;
    }
    create(
        client,
        "AGAIN_ALL",
        r#"{"name":"AGAIN_ALL","sources":[{"name":"AGAIN"}]}"#,
    )
    .await;
    wait_messages(client, "AGAIN_ALL", before as u64).await;
    let deleted = api(client, "$JS.API.STREAM.DELETE.AGAIN", "").await;
    assert_eq!(deleted["success"], true, "{deleted}");
    create(client, "AGAIN", origin).await;
    for index in 0..after {
        publish_raw(client, "again", &[], &format!("new {index}")).await;
    }
    // nats-server notices the new origin at its next retry (up to ~10 s).
    wait_info_for(
        client,
        "AGAIN_ALL",
        "all of the new origin's messages",
        Duration::from_secs(30),
        |info| info["state"]["messages"] == (before + after) as u64,
    )
    .await
}

#[tokio::test]
async fn a_recreated_origin_is_read_from_its_start() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let info = recreate_sourced_origin(&client, 5, 1).await;
    assert_eq!(info["state"]["last_seq"], 6, "{info}");
}

/// nats-server stores sourced messages verbatim: a `Nats-TTL` from an origin that allows
/// per-message TTLs lands in an aggregate that does not, while a client publish with the same
/// header, or with a `Nats-Stream-Source` of its own, is refused there.
#[tokio::test]
async fn sourced_ttl_is_stored_without_allow_msg_ttl() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        "TTLO",
        r#"{"name":"TTLO","subjects":["ttlo"],"allow_msg_ttl":true}"#,
    )
    .await;
    create(
        &client,
        "PLAIN",
        r#"{"name":"PLAIN","subjects":["plain"],"sources":[{"name":"TTLO"}]}"#,
    )
    .await;
    let ack = publish_raw(&client, "ttlo", &[("Nats-TTL", "1h")], "lives").await;
    assert!(!ack.contains("\"error\""), "{ack}");
    wait_messages(&client, "PLAIN", 1).await;
    let stored = message(&client, "PLAIN", 1).await;
    assert_eq!(stored.subject.as_str(), "ttlo");
    assert_eq!(
        stored.headers.get("Nats-TTL").map(|value| value.as_str()),
        Some("1h")
    );
    assert!(source_header(&stored).starts_with("TTLO 1 "), "{stored:?}");

    let refused = publish_raw(&client, "plain", &[("Nats-TTL", "1h")], "refused").await;
    assert!(
        refused.contains("10166"),
        "per-message TTL disabled: {refused}"
    );
    let refused = publish_raw(
        &client,
        "plain",
        &[("Nats-Stream-Source", "TTLO 2 > > ttlo")],
        "refused",
    )
    .await;
    assert!(
        refused.contains("\"error\""),
        "client Nats-Stream-Source: {refused}"
    );
    let info = api(&client, "$JS.API.STREAM.INFO.PLAIN", "").await;
    assert_eq!(info["state"]["messages"], 1, "{info}");
}

#[tokio::test]
async fn a_sourced_rollup_purges_only_where_rollups_are_allowed() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(
        &client,
        "ROLL",
        r#"{"name":"ROLL","subjects":["roll.>"],"allow_rollup_hdrs":true}"#,
    )
    .await;
    create(
        &client,
        "KEEP",
        r#"{"name":"KEEP","sources":[{"name":"ROLL"}]}"#,
    )
    .await;
    publish_raw(&client, "roll.a", &[], "1").await;
    publish_raw(&client, "roll.a", &[], "2").await;
    wait_messages(&client, "KEEP", 2).await;
    // The rollup empties the subject in its origin; the aggregate keeps the rollup header but,
    // without allow_rollup_hdrs, purges nothing.
    publish_raw(&client, "roll.a", &[("Nats-Rollup", "sub")], "3").await;
    let info = wait_messages(&client, "KEEP", 3).await;
    assert_eq!(info["state"]["messages"], 3, "{info}");
}

/// nats-server's short hash (`getHashSize(.., 8)`): the first 8 bytes of a SHA-256, each as a
/// base-62 digit.
fn short_hash(text: &str) -> String {
    use sha2::Digest;
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    sha2::Sha256::digest(text.as_bytes())[..8]
        .iter()
        .map(|byte| char::from(DIGITS[usize::from(*byte) % DIGITS.len()]))
        .collect()
}

/// The stored header block of one message, as bytes (STREAM.MSG.GET's base64 `hdrs`).
async fn raw_headers(client: &async_nats::Client, stream: &str, seq: u64) -> String {
    use base64::Engine;
    let reply = api(
        client,
        &format!("$JS.API.STREAM.MSG.GET.{stream}"),
        &format!(r#"{{"seq":{seq}}}"#),
    )
    .await;
    let encoded = reply["message"]["hdrs"].as_str().unwrap_or_default();
    let block = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("base64 hdrs");
    String::from_utf8(block).expect("utf8 headers")
}

/// nats-server 2.15 ends the header with the origin's identity, a short hash of the origin's
/// creation time as STREAM.INFO shows it (nine bytes per sourced message more than 2.14).
#[tokio::test]
async fn the_source_header_ends_with_the_origin_identity() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create(&client, "IDO", r#"{"name":"IDO","subjects":["ido.>"]}"#).await;
    publish_raw(&client, "ido.a", &[("X-Keep", "1")], "one").await;
    publish_raw(&client, "ido.b", &[], "two").await;
    create(
        &client,
        "IDAGG",
        r#"{"name":"IDAGG","sources":[{"name":"IDO","filter_subject":"ido.>"}]}"#,
    )
    .await;
    wait_messages(&client, "IDAGG", 2).await;
    let origin = api(&client, "$JS.API.STREAM.INFO.IDO", "").await;
    let identity = short_hash(origin["created"].as_str().expect("created"));
    assert_eq!(
        raw_headers(&client, "IDAGG", 1).await,
        format!(
            "NATS/1.0\r\nX-Keep: 1\r\nNats-Stream-Source: IDO 1 ido.> > ido.a {identity}\r\n\r\n"
        )
    );
    assert_eq!(
        raw_headers(&client, "IDAGG", 2).await,
        format!("NATS/1.0\r\nNats-Stream-Source: IDO 2 ido.> > ido.b {identity}\r\n\r\n")
    );
}

/// An origin deleted and created again is told apart by its identity even when it already holds
/// more messages than the source had read of the old one: the source starts over on it.
#[tokio::test]
async fn a_recreated_origin_with_more_messages_is_read_from_its_start() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let info = recreate_sourced_origin(&client, 2, 4).await;
    let origin = api(&client, "$JS.API.STREAM.INFO.AGAIN", "").await;
    let identity = short_hash(origin["created"].as_str().expect("created"));
    let header = source_header(&message(&client, "AGAIN_ALL", 3).await);
    assert_eq!(header, format!("AGAIN 1 > > again {identity}"), "{info}");
}

//! Message schedules (ADR-51, `allow_msg_schedules`) as a client sees them: the header checks
//! and their errors, `@at` schedules that fire once and are purged, `@every` schedules that
//! repeat, `Nats-Schedule-Source`, and schedules that survive a restart (they are messages in
//! the stream). Uses short real schedules (1-2 s) and waits for the fired message with a pull
//! consumer, bounded by a timeout. Runs against ours or the real nats-server (`NATS_SERVER_BIN`).

use async_nats::jetstream;
use serde_json::json;
use test_harness::client::{
    api, connect, create_stream, pairs, publish_raw, stored_headers, wait_for_messages,
};
use test_harness::TestServer;

/// `@at` a whole second at least `seconds` from now (RFC 3339 in UTC, as clients send it).
fn at_in(seconds: i64) -> String {
    let moment = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds + 1);
    let moment = moment.replace_nanosecond(0).expect("whole second");
    let text = moment
        .format(&time::format_description::well_known::Rfc3339)
        .expect("rfc3339");
    format!("@at {text}")
}

/// Stream `S` on `s.>` with schedules allowed.
async fn schedule_stream(client: &async_nats::Client) {
    create_stream(
        client,
        json!({"name": "S", "subjects": ["s.>"], "allow_msg_schedules": true}),
    )
    .await;
}

fn refusal(err_code: u32, description: &str) -> String {
    format!(
        r#"{{"error":{{"code":400,"err_code":{err_code},"description":"{description}"}},"stream":"S","seq":0}}"#
    )
}

/// Wait (bounded) for `count` messages stored on `subject`; returns their stream sequences.
async fn fired(client: &async_nats::Client, subject: &str, count: usize) -> Vec<u64> {
    let messages = wait_for_messages(client, "S", subject, count).await;
    messages.into_iter().map(|(seq, _)| seq).collect()
}

#[tokio::test]
async fn schedule_headers_are_checked() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    schedule_stream(&client).await;
    create_stream(&client, json!({"name": "N", "subjects": ["n.>"]})).await;
    let at = at_in(60);
    assert_eq!(
        publish_raw(
            &client,
            "n.x",
            &[("Nats-Schedule", &at), ("Nats-Schedule-Target", "n.t")],
            "x"
        )
        .await,
        r#"{"error":{"code":400,"err_code":10188,"description":"message schedules is disabled"},"stream":"N","seq":0}"#
    );
    let pattern_invalid = refusal(10189, "message schedules pattern is invalid");
    let target_invalid = refusal(10190, "message schedules target is invalid");
    let scheduler_invalid = refusal(10212, "message schedules invalid scheduler");
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (vec![("Nats-Schedule", "bogus")], pattern_invalid.clone()),
        (
            vec![
                ("Nats-Schedule", "@every 500ms"),
                ("Nats-Schedule-Target", "s.t"),
            ],
            pattern_invalid,
        ),
        (vec![("Nats-Schedule", &at)], target_invalid.clone()),
        (
            vec![("Nats-Schedule", &at), ("Nats-Schedule-Target", "s.x")],
            target_invalid.clone(),
        ),
        (
            vec![("Nats-Schedule", &at), ("Nats-Schedule-Target", "z.t")],
            target_invalid.clone(),
        ),
        (
            vec![("Nats-Schedule", &at), ("Nats-Schedule-Target", "s.*")],
            target_invalid,
        ),
        (
            vec![
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Schedule-TTL", "bad"),
            ],
            refusal(10191, "message schedules invalid per-message TTL"),
        ),
        (
            vec![
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Schedule-TTL", "5s"),
            ],
            refusal(10166, "per-message TTL is disabled"),
        ),
        (
            vec![
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Rollup", "all"),
            ],
            refusal(10192, "message schedules invalid rollup"),
        ),
        (
            vec![
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Schedule-Source", "s.x"),
            ],
            refusal(10203, "message schedules source is invalid"),
        ),
        (
            vec![
                ("Nats-Schedule", "@hourly"),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Schedule-Time-Zone", "Mars/Base"),
            ],
            refusal(10223, "message schedules time zone is invalid"),
        ),
        (vec![("Nats-Scheduler", "s.y")], scheduler_invalid.clone()),
        (
            vec![("Nats-Schedule-Next", "soon"), ("Nats-Scheduler", "s.y")],
            scheduler_invalid,
        ),
    ];
    for (headers, expected) in cases {
        assert_eq!(
            publish_raw(&client, "s.x", &headers, "x").await,
            expected,
            "{headers:?}"
        );
    }
    // An accepted schedule is stored with the subject rollup it implies; so is a cron one.
    assert_eq!(
        publish_raw(
            &client,
            "s.x",
            &[("Nats-Schedule", &at), ("Nats-Schedule-Target", "s.t")],
            "x"
        )
        .await,
        r#"{"stream":"S","seq":1}"#
    );
    assert_eq!(
        stored_headers(&client, "S", 1).await,
        pairs(&[
            ("Nats-Rollup", "sub"),
            ("Nats-Schedule", &at),
            ("Nats-Schedule-Target", "s.t")
        ])
    );
    assert_eq!(
        publish_raw(
            &client,
            "s.y",
            &[
                ("Nats-Schedule", "0 30 9 * * mon-fri"),
                ("Nats-Schedule-Target", "s.t")
            ],
            "x"
        )
        .await,
        r#"{"stream":"S","seq":2}"#
    );
    // A cron schedule may name a time zone (ours reads the system's zoneinfo files).
    if std::path::Path::new("/usr/share/zoneinfo/Europe/Amsterdam").exists() {
        assert_eq!(
            publish_raw(
                &client,
                "s.z",
                &[
                    ("Nats-Schedule", "0 0 5 * * *"),
                    ("Nats-Schedule-Target", "s.t"),
                    ("Nats-Schedule-Time-Zone", "Europe/Amsterdam")
                ],
                "x"
            )
            .await,
            r#"{"stream":"S","seq":3}"#
        );
    }
}

#[tokio::test]
async fn an_at_schedule_fires_once_and_is_purged() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    create_stream(
        &client,
        json!({"name": "S", "subjects": ["s.>"], "allow_msg_schedules": true, "allow_msg_ttl": true}),
    )
    .await;
    publish_raw(&client, "s.source", &[], "from the source").await;
    let at = at_in(1);
    assert_eq!(
        publish_raw(
            &client,
            "s.once",
            &[
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.target"),
                ("Nats-Schedule-TTL", "60s"),
                ("X-Kept", "yes"),
                ("Nats-Msg-Id", "dropped")
            ],
            "hello"
        )
        .await,
        r#"{"stream":"S","seq":2}"#
    );
    assert_eq!(
        publish_raw(
            &client,
            "s.sourced",
            &[
                ("Nats-Schedule", &at),
                ("Nats-Schedule-Target", "s.copy"),
                ("Nats-Schedule-Source", "s.source")
            ],
            "own body"
        )
        .await,
        r#"{"stream":"S","seq":3}"#
    );
    let sequences = fired(&client, "s.target", 1).await;
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("S").await.expect("stream");
    let message = stream
        .get_raw_message(sequences[0])
        .await
        .expect("fired message");
    assert_eq!(message.payload, "hello");
    assert_eq!(
        stored_headers(&client, "S", sequences[0]).await,
        pairs(&[
            ("Nats-Schedule-Next", "purge"),
            ("Nats-Scheduler", "s.once"),
            ("Nats-TTL", "60s"),
            ("X-Kept", "yes")
        ])
    );
    let copied = fired(&client, "s.copy", 1).await;
    let copy = stream.get_raw_message(copied[0]).await.expect("copy");
    assert_eq!(copy.payload, "from the source");
    // Both schedules are gone once they fired.
    for schedule in ["s.once", "s.sourced"] {
        let last = api(
            &client,
            "$JS.API.STREAM.MSG.GET.S",
            &json!({ "last_by_subj": schedule }).to_string(),
        )
        .await;
        assert_eq!(last["error"]["err_code"], 10037, "{schedule}: {last}");
    }
}

#[tokio::test]
async fn an_every_schedule_repeats() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    schedule_stream(&client).await;
    publish_raw(
        &client,
        "s.repeat",
        &[
            ("Nats-Schedule", "@every 1s"),
            ("Nats-Schedule-Target", "s.tick"),
        ],
        "tick",
    )
    .await;
    let sequences = fired(&client, "s.tick", 2).await;
    for seq in sequences {
        let headers = stored_headers(&client, "S", seq).await;
        assert!(
            headers.contains(&("Nats-Scheduler".to_string(), "s.repeat".to_string())),
            "{headers:?}"
        );
        let next = headers
            .iter()
            .find(|(name, _)| name == "Nats-Schedule-Next")
            .map(|(_, value)| value.clone())
            .expect("next time");
        time::OffsetDateTime::parse(&next, &time::format_description::well_known::Rfc3339)
            .expect("Nats-Schedule-Next is a time");
    }
    // The schedule itself stays.
    let last = api(
        &client,
        "$JS.API.STREAM.MSG.GET.S",
        r#"{"last_by_subj":"s.repeat"}"#,
    )
    .await;
    assert_eq!(last["message"]["seq"], 1, "{last}");
}

#[tokio::test]
async fn schedules_survive_a_restart() {
    let mut server = TestServer::jetstream();
    let client = connect(&server).await;
    schedule_stream(&client).await;
    publish_raw(
        &client,
        "s.later",
        &[
            ("Nats-Schedule", &at_in(2)),
            ("Nats-Schedule-Target", "s.done"),
        ],
        "after the restart",
    )
    .await;
    drop(client);
    server.restart();
    let client = connect(&server).await;
    let sequences = fired(&client, "s.done", 1).await;
    assert_eq!(sequences, vec![2]);
}

/// A publish: subject, headers, the expected reply.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, String);

/// nats-server tells an empty `Nats-Schedule-Time-Zone:` from an absent one (Go would read an
/// empty zone name as UTC): present and empty, it is an invalid time zone on any publish, with or
/// without a schedule, and schedules are disabled on a stream that does not allow them.
#[tokio::test]
async fn an_empty_time_zone_is_invalid() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    schedule_stream(&client).await;
    create_stream(&client, json!({"name": "N", "subjects": ["n.>"]})).await;
    let time_zone_invalid = refusal(10223, "message schedules time zone is invalid");
    let cases: Vec<Case> = vec![
        (
            "s.x",
            vec![
                ("Nats-Schedule", "@hourly"),
                ("Nats-Schedule-Target", "s.t"),
                ("Nats-Schedule-Time-Zone", ""),
            ],
            time_zone_invalid.clone(),
        ),
        (
            "s.x",
            vec![("Nats-Schedule-Time-Zone", "")],
            time_zone_invalid,
        ),
        (
            "n.x",
            vec![("Nats-Schedule-Time-Zone", "")],
            r#"{"error":{"code":400,"err_code":10188,"description":"message schedules is disabled"},"stream":"N","seq":0}"#.to_string(),
        ),
    ];
    for (subject, headers, expected) in cases {
        assert_eq!(
            publish_raw(&client, subject, &headers, "x").await,
            expected,
            "{headers:?}"
        );
    }
    let info = api(&client, "$JS.API.STREAM.INFO.S", "").await;
    assert_eq!(info["state"]["messages"], 0, "{info}");
}

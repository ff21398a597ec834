//! Stream subject transforms with nats-server's mapping functions (`partition`, `split`,
//! `splitfromleft/right`, `slicefromleft/right`, `left`, `right`): the subject a message
//! is stored under, read back with `STREAM.MSG.GET`, and the destinations a stream config
//! refuses. Runs against nats-server too (`NATS_SERVER_BIN`).

use test_harness::client::{api, connect, publish_raw};
use test_harness::TestServer;

#[tokio::test]
async fn mapping_functions_shape_the_stored_subject() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let cases = [
        (
            "PART",
            "part.*.*",
            "out.part.{{partition(3,1)}}.{{wildcard(2)}}",
            "part.customerid1.x",
            "out.part.0.x",
        ),
        (
            "PARTB",
            "partb.*.*",
            "out.partb.{{wildcard(1)}}.{{wildcard(2)}}.{{Partition(10, 1, 2)}}",
            "partb.2.b",
            "out.partb.2.b.9",
        ),
        (
            "WHOLE",
            "whole.*",
            "out.whole.{{partition(1000)}}",
            "whole.abc",
            "out.whole.82",
        ),
        (
            "SFL",
            "sfl.*",
            "out.sfl.{{splitfromleft(1,3)}}",
            "sfl.12345",
            "out.sfl.123.45",
        ),
        (
            "SFR",
            "sfr.*",
            "out.sfr.{{SplitFromRight(1,3)}}",
            "sfr.12345",
            "out.sfr.12.345",
        ),
        (
            "SLL",
            "sll.*",
            "out.sll.{{slicefromleft(1,3)}}",
            "sll.1234567890",
            "out.sll.123.456.789.0",
        ),
        (
            "SLR",
            "slr.*",
            "out.slr.{{SliceFromRight(1,3)}}",
            "slr.1234567890",
            "out.slr.1.234.567.890",
        ),
        (
            "SPLIT",
            "split.*",
            "out.split.{{split(1,-)}}",
            "split.-abc-def--ghi-",
            "out.split.abc.def.ghi",
        ),
        (
            "LEFT",
            "left.*",
            "out.left.{{left(1,3)}}",
            "left.1234",
            "out.left.123",
        ),
        (
            "RIGHT",
            "right.*",
            "out.right.{{right(1,3)}}",
            "right.1234",
            "out.right.234",
        ),
    ];
    for (name, subject, destination, published, expected) in cases {
        let body = serde_json::json!({
            "name": name,
            "subjects": [subject],
            "subject_transform": {"src": subject, "dest": destination},
        });
        let created = api(
            &client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &body.to_string(),
        )
        .await;
        assert!(created.get("error").is_none(), "{name}: {created}");
        let ack = publish_raw(&client, published, &[], "payload").await;
        assert!(ack.contains("\"seq\":1"), "{name}: {ack}");
        let stored = api(
            &client,
            &format!("$JS.API.STREAM.MSG.GET.{name}"),
            r#"{"seq":1}"#,
        )
        .await;
        assert_eq!(stored["message"]["subject"], expected, "{name}: {stored}");
    }
}

#[tokio::test]
async fn invalid_mapping_functions_are_refused() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    for (index, destination) in [
        "out.{{unknown(1)}}",
        "out.{{wildcard(2)}}",
        "out.{{LEFT(1,1)}}",
        "out.{{partition(2147483648,1)}}",
        "out.{{splitfromleft(1)}}",
        "out.{{left(1,2,3)}}",
        "out.{{right(x,2)}}",
        "out.{{partition(3,2)}}",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("BAD{index}");
        let body = serde_json::json!({
            "name": name,
            "subjects": ["bad.*"],
            "subject_transform": {"src": "bad.*", "dest": destination},
        });
        let created = api(
            &client,
            &format!("$JS.API.STREAM.CREATE.{name}"),
            &body.to_string(),
        )
        .await;
        assert!(created.get("error").is_some(), "{destination}: {created}");
    }
}

/// An updated `subject_transform` (and `republish`) applies to the next publish: the stream
/// compiles its transforms per config, so an update must replace them.
#[tokio::test]
async fn updated_transforms_apply_to_the_next_publish() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let config = |destination: &str, republish: &str| {
        serde_json::json!({
            "name": "UPD",
            "subjects": ["upd.*"],
            "subject_transform": {"src": "upd.*", "dest": destination},
            "republish": {"src": ">", "dest": republish},
        })
        .to_string()
    };
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.UPD",
        &config("first.{{wildcard(1)}}", "rp1.>"),
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    let mut first = client.subscribe("rp1.>").await.unwrap();
    let mut second = client.subscribe("rp2.>").await.unwrap();
    test_harness::client::barrier(&client).await;
    let ack = publish_raw(&client, "upd.a", &[], "one").await;
    assert!(ack.contains("\"seq\":1"), "{ack}");
    let updated = api(
        &client,
        "$JS.API.STREAM.UPDATE.UPD",
        &config("second.{{wildcard(1)}}", "rp2.>"),
    )
    .await;
    assert!(updated.get("error").is_none(), "{updated}");
    let ack = publish_raw(&client, "upd.b", &[], "two").await;
    assert!(ack.contains("\"seq\":2"), "{ack}");
    for (seq, expected) in [(1, "first.a"), (2, "second.b")] {
        let stored = api(
            &client,
            "$JS.API.STREAM.MSG.GET.UPD",
            &format!(r#"{{"seq":{seq}}}"#),
        )
        .await;
        assert_eq!(stored["message"]["subject"], expected, "{stored}");
    }
    use futures::StreamExt;
    let wait = std::time::Duration::from_secs(5);
    let republished = tokio::time::timeout(wait, first.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(republished.subject.as_str(), "rp1.first.a");
    let republished = tokio::time::timeout(wait, second.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(republished.subject.as_str(), "rp2.second.b");
}

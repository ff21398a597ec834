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

//! Mirrors of a stream on the same server: same sequences, times and bytes as the origin,
//! following it as it grows, `mirror_direct` inherited, mirror progress in STREAM.INFO.

use serde_json::{json, Value};
use std::time::Duration;
use test_harness::client::{api, connect, publish_raw};
use test_harness::TestServer;

async fn wait_for_messages(client: &async_nats::Client, stream: &str, count: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = api(client, &format!("$JS.API.STREAM.INFO.{stream}"), "").await;
        if info["state"]["messages"] == count {
            return info;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "mirror did not catch up: {info}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn mirror_follows_its_origin() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    let origin = api(
        &client,
        "$JS.API.STREAM.CREATE.ORIGIN",
        r#"{"name":"ORIGIN","subjects":["o.>"],"allow_direct":true}"#,
    )
    .await;
    assert!(origin.get("error").is_none(), "{origin}");
    publish_raw(&client, "o.a", &[("X-Tag", "1")], "one").await;
    publish_raw(&client, "o.b", &[], "two").await;
    publish_raw(&client, "o.c", &[], "three").await;
    // A sequence the origin no longer has stays a gap in the mirror.
    api(&client, "$JS.API.STREAM.MSG.DELETE.ORIGIN", r#"{"seq":2}"#).await;
    let created = api(
        &client,
        "$JS.API.STREAM.CREATE.COPY",
        r#"{"name":"COPY","mirror":{"name":"ORIGIN"}}"#,
    )
    .await;
    assert!(created.get("error").is_none(), "{created}");
    assert_eq!(created["config"]["mirror"], json!({"name": "ORIGIN"}));
    assert_eq!(created["config"]["mirror_direct"], true);
    assert!(created["config"].get("subjects").is_none());
    assert!(created["config"].get("duplicate_window").is_none());
    assert_eq!(created["mirror"]["name"], "ORIGIN");

    let info = wait_for_messages(&client, "COPY", 2).await;
    assert_eq!(info["state"]["last_seq"], 3);
    assert_eq!(info["mirror"]["name"], "ORIGIN");
    assert_eq!(info["mirror"]["lag"], 0);
    assert!(info["mirror"]["active"].as_i64().unwrap() >= 0);

    let original = api(&client, "$JS.API.STREAM.MSG.GET.ORIGIN", r#"{"seq":1}"#).await;
    let copied = api(&client, "$JS.API.STREAM.MSG.GET.COPY", r#"{"seq":1}"#).await;
    assert_eq!(original["message"], copied["message"]);
    let gap = api(&client, "$JS.API.STREAM.MSG.GET.COPY", r#"{"seq":2}"#).await;
    assert_eq!(gap["error"]["err_code"], 10037);

    // Later messages follow.
    publish_raw(&client, "o.d", &[], "four").await;
    let info = wait_for_messages(&client, "COPY", 3).await;
    assert_eq!(info["state"]["last_seq"], 4);
    let fourth = api(&client, "$JS.API.STREAM.MSG.GET.COPY", r#"{"seq":4}"#).await;
    assert_eq!(fourth["message"]["subject"], "o.d");
}

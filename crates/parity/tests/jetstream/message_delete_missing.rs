//! `STREAM.MSG.DELETE` of a sequence that holds no message (issue 17 item 7), answered as
//! nats-server 2.15.1 answers each case: already deleted inside the stream's range
//! `400 / 10043 sequence N not found`; below the first sequence (or 0) `500 / 10057 no message
//! found`; past the last `500 / 10057 stream store EOF`. Passes on nats-server too.

use serde_json::Value;
use test_harness::client::{api, connect, stream_s};
use test_harness::TestServer;

async fn delete(client: &async_nats::Client, body: &str) -> Value {
    api(client, "$JS.API.STREAM.MSG.DELETE.S", body).await
}

fn error_of(reply: &Value) -> (u64, u64, String) {
    let error = &reply["error"];
    (
        error["code"].as_u64().unwrap_or_default(),
        error["err_code"].as_u64().unwrap_or_default(),
        error["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test]
async fn deleting_a_missing_sequence_answers_as_nats_server() {
    let server = TestServer::jetstream();
    let client = connect(&server).await;
    stream_s(&client, 3).await;

    let first = delete(&client, r#"{"seq":2}"#).await;
    assert_eq!(first["success"], Value::Bool(true), "{first}");
    for body in [r#"{"seq":2}"#, r#"{"seq":2,"no_erase":true}"#] {
        assert_eq!(
            error_of(&delete(&client, body).await),
            (400, 10043, "sequence 2 not found".to_string()),
            "{body}"
        );
    }
    assert_eq!(
        error_of(&delete(&client, r#"{"seq":10}"#).await),
        (500, 10057, "stream store EOF".to_string())
    );
    assert_eq!(
        error_of(&delete(&client, r#"{"seq":0}"#).await),
        (500, 10057, "no message found".to_string())
    );
    // Deleting the first message moves the first sequence past the deleted 2: both below it.
    let removed = delete(&client, r#"{"seq":1,"no_erase":true}"#).await;
    assert_eq!(removed["success"], Value::Bool(true), "{removed}");
    for body in [r#"{"seq":1}"#, r#"{"seq":2}"#] {
        assert_eq!(
            error_of(&delete(&client, body).await),
            (500, 10057, "no message found".to_string()),
            "{body}"
        );
    }
}

//! Account resource limits from the `jetstream { ... }` block: stream reservations and publishes
//! refused with nats-server's insufficient-resources errors.

use test_harness::client::{api, connect, publish_raw};
use test_harness::{ServerOptions, TestServer};

#[tokio::test]
async fn limits_from_config_refuse_reservations_and_publishes() {
    let store = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerOptions {
        config: Some(format!(
            "jetstream {{\n  store_dir: {:?}\n  max_file_store: 2K\n  max_mem: 1K\n}}\n",
            store.path().display().to_string()
        )),
        ..Default::default()
    });
    let client = connect(&server).await;
    let file = api(
        &client,
        "$JS.API.STREAM.CREATE.A",
        r#"{"name":"A","max_bytes":4096}"#,
    )
    .await;
    assert_eq!(
        file["error"],
        serde_json::json!({"code": 500, "err_code": 10047, "description": "insufficient storage resources available"})
    );
    let memory = api(
        &client,
        "$JS.API.STREAM.CREATE.M",
        r#"{"name":"M","storage":"memory","max_bytes":4096}"#,
    )
    .await;
    assert_eq!(memory["error"]["err_code"], 10028);
    let created = api(&client, "$JS.API.STREAM.CREATE.A", r#"{"name":"A"}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    let big = "x".repeat(1500);
    assert_eq!(
        publish_raw(&client, "A", &[], &big).await,
        r#"{"stream":"A","seq":1}"#
    );
    assert_eq!(
        publish_raw(&client, "A", &[], &big).await,
        r#"{"stream":"A","seq":2}"#
    );
    assert_eq!(
        publish_raw(&client, "A", &[], "x").await,
        r#"{"error":{"code":503,"err_code":10023,"description":"insufficient resources"},"stream":"A","seq":0}"#
    );
    let account = api(&client, "$JS.API.INFO", "").await;
    assert_eq!(account["streams"], 1);
    assert!(account["storage"].as_u64().unwrap() > 3000, "{account}");
}

//! `/jsz` and the `jetstream` section of `/varz`: nats-server's fields and figures after a few
//! streams and messages.

use test_harness::client::{api, connect, publish_raw};
use test_harness::monitoring::get_json;
use test_harness::{ServerOptions, TestServer};

#[tokio::test]
async fn jsz_and_varz_report_usage_and_config() {
    let server = TestServer::start(ServerOptions {
        jetstream: true,
        monitoring: true,
        ..Default::default()
    });
    let client = connect(&server).await;
    api(
        &client,
        "$JS.API.STREAM.CREATE.A",
        r#"{"name":"A","max_bytes":1000000}"#,
    )
    .await;
    api(
        &client,
        "$JS.API.STREAM.CREATE.M",
        r#"{"name":"M","storage":"memory"}"#,
    )
    .await;
    publish_raw(&client, "A", &[], "hello").await;
    publish_raw(&client, "M", &[], "hi").await;

    let jsz = get_json(&server, "/jsz");
    assert_eq!(jsz["streams"], 2);
    assert_eq!(jsz["messages"], 2);
    assert_eq!(jsz["bytes"], 55);
    assert_eq!(jsz["storage"], 36);
    assert_eq!(jsz["memory"], 19);
    assert_eq!(jsz["reserved_storage"], 1_000_000);
    assert_eq!(jsz["accounts"], 1);
    assert_eq!(jsz["api"]["level"], 5);
    assert_eq!(jsz["api"]["total"], 2);
    assert_eq!(jsz["config"]["strict"], true);
    assert_eq!(jsz["config"]["sync_interval"], 120_000_000_000i64);
    assert!(jsz["config"]["store_dir"]
        .as_str()
        .unwrap()
        .ends_with("/jetstream"));
    assert!(jsz["config"]["max_memory"].as_i64().unwrap() > 0);
    assert_eq!(jsz["limits"]["default_max_consumers"], 1000);

    let varz = get_json(&server, "/varz");
    let section = &varz["jetstream"];
    assert_eq!(section["config"], jsz["config"]);
    assert_eq!(section["stats"]["storage"], 36);
    assert_eq!(section["stats"]["reserved_storage"], 1_000_000);
    assert_eq!(section["limits"]["default_max_consumers"], 1000);
}

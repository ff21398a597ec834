//! `$JS.API.INFO`, advisories and hand-built PubAcks against bytes captured from nats-server
//! v2.15.1.

use jetstream_api::advisory::{
    ActionKind, Advisory, AdvisoryBody, ApiAudit, ConsumerAckMetric, ConsumerActionAdvisory,
    ConsumerPause, DeliveryExceeded, DeliveryNak, DeliveryTerminated, StreamAction,
};
use jetstream_api::json::encode_response;
use jetstream_api::{AccountInfoResponse, PubAckTemplate, Timestamp};
use serde::de::DeserializeOwned;
use serde::Serialize;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn assert_bytes_round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = fixture(name);
    let value: T = serde_json::from_slice(&original)
        .unwrap_or_else(|error| panic!("{name}: decode failed: {error}"));
    let encoded = encode_response(&value);
    assert_eq!(
        String::from_utf8_lossy(&encoded),
        String::from_utf8_lossy(&original),
        "{name}: re-encoded bytes differ"
    );
    value
}

fn assert_advisory<T: DeserializeOwned + Serialize + AdvisoryBody>(name: &str) -> Advisory<T> {
    let advisory: Advisory<T> = assert_bytes_round_trip(name);
    assert_eq!(advisory.event_type, T::TYPE, "{name}");
    assert_eq!(advisory.id.len(), 22, "{name}: a NUID");
    advisory
}

#[test]
fn account_info() {
    for name in ["account_info", "account_info_busy", "account_info_domain"] {
        let response: AccountInfoResponse = assert_bytes_round_trip(name);
        assert!(response.error.is_none());
        let info = response.info.unwrap();
        assert_eq!(info.api.level, 5);
        assert_eq!(info.totals.limits.max_streams, -1);
    }
    let response: AccountInfoResponse = assert_bytes_round_trip("account_info_busy");
    let info = response.info.unwrap();
    assert_eq!((info.totals.streams, info.totals.consumers), (9, 7));
    let response: AccountInfoResponse = assert_bytes_round_trip("account_info_domain");
    assert_eq!(response.info.unwrap().domain, "hub");
    let error =
        AccountInfoResponse::error(jetstream_api::errors::NOT_ENABLED_FOR_ACCOUNT.to_error());
    assert_eq!(
        String::from_utf8(encode_response(&error)).unwrap(),
        r#"{"type":"io.nats.jetstream.api.v1.account_info_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"}}"#
    );
}

#[test]
fn stream_and_consumer_actions() {
    let created: Advisory<StreamAction> = assert_advisory("advisory_stream_created");
    assert_eq!(created.body.action, ActionKind::Create);
    let updated: Advisory<StreamAction> = assert_advisory("advisory_stream_updated");
    assert_eq!(updated.body.action, ActionKind::Modify);
    let deleted: Advisory<StreamAction> = assert_advisory("advisory_stream_deleted");
    assert_eq!(deleted.body.action, ActionKind::Delete);
    let created: Advisory<ConsumerActionAdvisory> = assert_advisory("advisory_consumer_created");
    assert_eq!(created.body.consumer, "D");
    let _: Advisory<ConsumerActionAdvisory> = assert_advisory("advisory_consumer_deleted");
    let paused: Advisory<ConsumerPause> = assert_advisory("advisory_consumer_paused");
    assert!(paused.body.paused);
    let resumed: Advisory<ConsumerPause> = assert_advisory("advisory_consumer_resumed");
    assert!(resumed.body.pause_until.is_zero());
}

#[test]
fn delivery_advisories_and_metrics() {
    let metric: Advisory<ConsumerAckMetric> = assert_advisory("metric_consumer_ack");
    assert_eq!(metric.body.deliveries, 1);
    let nak: Advisory<DeliveryNak> = assert_advisory("advisory_nak");
    assert_eq!(nak.body.stream_sequence, 2);
    let exceeded: Advisory<DeliveryExceeded> = assert_advisory("advisory_max_deliver");
    assert_eq!(exceeded.body.deliveries, 2);
    let terminated: Advisory<DeliveryTerminated> = assert_advisory("advisory_terminated");
    assert_eq!(terminated.body.reason, "because");
}

#[test]
fn api_audit() {
    let audit: Advisory<ApiAudit> = assert_advisory("advisory_api_audit");
    assert_eq!(audit.body.subject, "$JS.API.STREAM.CREATE.ADV");
    let client = audit.body.client.unwrap();
    assert_eq!(
        (client.account.as_str(), client.kind.as_str()),
        ("$G", "Client")
    );
    // The embedded response is itself a stream create response.
    let response: jetstream_api::StreamCreateResponse =
        serde_json::from_str(&audit.body.response).unwrap();
    assert!(response.did_create);
}

#[test]
fn built_advisory_matches_shape() {
    let advisory = Advisory::new(
        "7EjtYll0C94pfjReUQCfIR",
        Timestamp::parse("2026-11-29T19:26:11.001604355Z").unwrap(),
        StreamAction {
            stream: "ADV".into(),
            action: ActionKind::Create,
            domain: String::new(),
        },
    );
    assert_eq!(
        encode_response(&advisory),
        fixture("advisory_stream_created")
    );
}

#[test]
fn pub_ack_template_matches_hot_path_bytes() {
    let template = PubAckTemplate::new("ORDERS", None);
    assert_eq!(template.ok(1), fixture("pub_ack"));
    assert_eq!(template.duplicate(2), fixture("pub_ack_duplicate"));
    let template = PubAckTemplate::new("D", Some("hub"));
    assert_eq!(template.ok(1), fixture("pub_ack_domain"));
    let template = PubAckTemplate::new("C", None);
    assert_eq!(
        template.counter(3, "12"),
        br#"{"stream":"C","seq":3,"val":"12"}"#
    );
    assert_eq!(
        template.batch(9, "b1", 3),
        br#"{"stream":"C","seq":9,"batch":"b1","count":3}"#
    );
}

#[test]
fn pub_ack_template_sequences() {
    let template = PubAckTemplate::new("S", None);
    for sequence in [0u64, 9, 10, 1234567890, u64::MAX] {
        assert_eq!(
            template.ok(sequence),
            format!("{{\"stream\":\"S\",\"seq\":{sequence}}}").into_bytes()
        );
    }
    let mut buffer = b"x".to_vec();
    template.write_ok(&mut buffer, 5);
    assert_eq!(buffer, br#"x{"stream":"S","seq":5}"#);
}

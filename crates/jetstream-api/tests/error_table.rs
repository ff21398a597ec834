//! Spot checks of the generated error table against nats-server's errors.json and live replies.

use jetstream_api::api_error::lookup;
use jetstream_api::errors;
use jetstream_api::json::encode_response;
use jetstream_api::ApiError;

#[test]
fn well_known_entries() {
    let cases: &[(u16, u16, &str)] = &[
        (10059, 404, "stream not found"),
        (
            10058,
            400,
            "stream name already in use with a different configuration",
        ),
        (10039, 503, "JetStream not enabled for account"),
        (10014, 404, "consumer not found"),
        (10037, 404, "no message found"),
        (10025, 400, "invalid JSON: {err}"),
        (10065, 400, "subjects overlap with an existing stream"),
        (10071, 400, "wrong last sequence: {seq}"),
        (10165, 400, "invalid per-message TTL"),
        (10166, 400, "per-message TTL is disabled"),
        (10111, 500, "{err}"),
        (
            10074,
            500,
            "replicas > 1 not supported in non-clustered mode",
        ),
        (10076, 503, "JetStream not enabled"),
        (10148, 400, "consumer already exists"),
        (10149, 400, "consumer does not exist"),
    ];
    for &(err_code, code, description) in cases {
        let entry = lookup(err_code).unwrap_or_else(|| panic!("{err_code} missing"));
        assert_eq!(
            (entry.code, entry.description),
            (code, description),
            "{err_code}"
        );
    }
    assert_eq!(errors::STREAM_NOT_FOUND.err_code, 10059);
    assert_eq!(errors::STREAM_NAME_EXIST.err_code, 10058);
    assert_eq!(errors::NOT_ENABLED_FOR_ACCOUNT.err_code, 10039);
    assert!(lookup(1).is_none());
}

#[test]
fn table_is_sorted_unique_and_complete() {
    assert_eq!(errors::ALL.len(), 226);
    for pair in errors::ALL.windows(2) {
        assert!(pair[0].err_code < pair[1].err_code);
    }
    for entry in errors::ALL {
        assert_eq!(lookup(entry.err_code), Some(entry));
        assert!(entry.name.starts_with("JS"), "{}", entry.name);
        assert!(
            matches!(entry.code, 400 | 404 | 409 | 412 | 429 | 500 | 503),
            "{}",
            entry.name
        );
    }
}

#[test]
fn errors_serialize_like_nats_server() {
    let error = errors::STREAM_NOT_FOUND.to_error();
    assert_eq!(
        String::from_utf8(encode_response(&error)).unwrap(),
        r#"{"code":404,"err_code":10059,"description":"stream not found"}"#
    );
    let error = errors::STREAM_REPLICAS_NOT_SUPPORTED.to_error();
    assert_eq!(
        String::from_utf8(encode_response(&error)).unwrap(),
        r#"{"code":500,"err_code":10074,"description":"replicas \u003e 1 not supported in non-clustered mode"}"#
    );
    let error = errors::INVALID_JSON.with_err("unexpected EOF");
    assert_eq!(error.description, "invalid JSON: unexpected EOF");
    assert!(error.is(&errors::INVALID_JSON));
    assert_eq!(error.to_string(), "invalid JSON: unexpected EOF (10025)");
    let error = errors::STREAM_INVALID_CONFIG.with_err("roll-ups require the purge permission");
    assert_eq!((error.code, error.err_code), (500, 10052));
    let parsed: ApiError = serde_json::from_str(r#"{"code":503}"#).unwrap();
    assert_eq!(serde_json::to_string(&parsed).unwrap(), r#"{"code":503}"#);
}

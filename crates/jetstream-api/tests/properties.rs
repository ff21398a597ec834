//! Property tests: the codecs never panic on hostile input and round-trip what they produce.

use jetstream_api::json::{decode_request, decode_request_with, Strictness};
use jetstream_api::{
    AckKind, AckSubject, AckSubjectPrefix, CreateConsumerRequest, Nanos, NextRequest,
    StreamConfigRequest, Timestamp,
};
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,20}"
}

proptest! {
    #[test]
    fn ack_subject_v1_round_trips(
        stream in name(), consumer in name(),
        delivered in any::<u64>(), stream_sequence in any::<u64>(), consumer_sequence in any::<u64>(),
        timestamp in 0..i64::MAX, pending in any::<u64>(),
    ) {
        let subject = AckSubjectPrefix::v1(&stream, &consumer)
            .reply(delivered, stream_sequence, consumer_sequence, timestamp, pending);
        let parsed = AckSubject::parse(&subject).unwrap();
        prop_assert_eq!(parsed.stream, stream.as_str());
        prop_assert_eq!(parsed.consumer, consumer.as_str());
        prop_assert_eq!(
            (parsed.delivered, parsed.stream_sequence, parsed.consumer_sequence, parsed.timestamp, parsed.pending),
            (delivered, stream_sequence, consumer_sequence, timestamp, pending)
        );
        prop_assert_eq!(parsed.to_string(), subject);
    }

    #[test]
    fn ack_subject_v2_round_trips(
        domain in proptest::option::of(name()), hash in name(), stream in name(), consumer in name(),
        numbers in proptest::array::uniform5(0..u32::MAX as u64),
    ) {
        let subject = AckSubjectPrefix::v2(domain.as_deref(), &hash, &stream, &consumer)
            .reply(numbers[0], numbers[1], numbers[2], numbers[3] as i64, numbers[4]);
        let parsed = AckSubject::parse(&subject).unwrap();
        prop_assert_eq!(parsed.domain, domain.as_deref().filter(|d| *d != "_"));
        prop_assert_eq!(parsed.account_hash, Some(hash.as_str()));
        prop_assert_eq!(parsed.to_string(), subject);
    }

    #[test]
    fn ack_parsers_never_panic(subject in ".{0,80}", body in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = AckSubject::parse(&subject);
        let _ = AckKind::parse(&body);
        let _ = NextRequest::parse(&body);
        let _ = Nanos::parse_go(&subject);
        let _ = Timestamp::parse(&subject);
    }

    #[test]
    fn request_decoding_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_request::<StreamConfigRequest>(&body);
        let _ = decode_request::<CreateConsumerRequest>(&body);
        let _ = decode_request_with::<StreamConfigRequest>(&body, Strictness::Lenient);
    }

    #[test]
    fn json_shaped_garbage_never_panics(body in r#"[\{\}\[\]":,a-z0-9 .-]{0,120}"#) {
        let _ = decode_request::<StreamConfigRequest>(body.as_bytes());
        let _ = decode_request_with::<CreateConsumerRequest>(body.as_bytes(), Strictness::Lenient);
        let _ = NextRequest::parse(body.as_bytes());
    }

    #[test]
    fn go_durations_round_trip(nanos in any::<i64>().prop_filter("not MIN", |n| *n != i64::MIN)) {
        let text = Nanos(nanos).to_go_string();
        prop_assert_eq!(Nanos::parse_go(&text), Some(Nanos(nanos)), "{}", text);
    }

    #[test]
    fn timestamps_round_trip(nanos in any::<i64>()) {
        let timestamp = Timestamp::from_unix_nanos(nanos);
        let text = timestamp.to_rfc3339();
        prop_assert_eq!(Timestamp::parse(&text).unwrap(), timestamp);
        prop_assert_eq!(timestamp.unix_nanos(), nanos);
    }
}

//! Ack reply subjects (`$JS.ACK.` v1 and v2) and ack bodies: the general codec
//! (`jetstream_api::AckSubject`) and the consumer's fast v1 codec must agree, parsing what was
//! written gives back what was written, and nothing panics.
//!
//! Input: `subject\0body`, or, when it starts with `#`, numbers for the writers (the bytes after
//! `#` as five little-endian u64s, the last three tokens of the subject as stream/consumer/domain).

#![no_main]

use jetstream_api::ack::{AckKind, AckSubject, AckSubjectPrefix};
use libfuzzer_sys::fuzz_target;
use nats_jetstream::fuzzing;

fn numbers(data: &[u8]) -> [u64; 5] {
    let mut out = [0u64; 5];
    for (index, chunk) in data.chunks(8).take(5).enumerate() {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        out[index] = u64::from_le_bytes(bytes);
    }
    out
}

fn round_trip(data: &[u8]) {
    let [delivered, sseq, cseq, timestamp, pending] = numbers(data.get(..40).unwrap_or(data));
    let timestamp = (timestamp >> 1) as i64; // nats-server writes times since the epoch.
    let names = String::from_utf8_lossy(data.get(40..).unwrap_or_default()).into_owned();
    let mut names = names.split('.');
    let stream = names.next().filter(|s| !s.is_empty()).unwrap_or("S");
    let consumer = names.next().filter(|s| !s.is_empty()).unwrap_or("C");
    let domain = names.next();
    if [stream, consumer]
        .iter()
        .any(|name| name.contains(['.', ' ', '*', '>']))
    {
        return;
    }
    let v1 = AckSubjectPrefix::v1(stream, consumer);
    let written = v1.reply(delivered, sseq, cseq, timestamp, pending);
    let fast = fuzzing::write_own_ack_reply(
        v1.as_str().as_bytes(),
        delivered,
        sseq,
        cseq,
        timestamp,
        pending,
    );
    assert_eq!(fast, written.as_bytes(), "the two writers differ");
    let parsed = AckSubject::parse(&written).unwrap_or_else(|error| panic!("{written}: {error}"));
    assert_eq!(
        (
            parsed.stream,
            parsed.consumer,
            parsed.delivered,
            parsed.stream_sequence
        ),
        (stream, consumer, delivered, sseq)
    );
    assert_eq!(
        (
            parsed.consumer_sequence,
            parsed.timestamp,
            parsed.pending,
            parsed.domain
        ),
        (cseq, timestamp, pending, None)
    );
    assert_eq!(
        fuzzing::parse_own_ack(written.as_bytes(), v1.as_str().as_bytes()),
        Some((delivered, sseq, cseq))
    );
    if let Some(domain) = domain.filter(|d| !d.contains(['.', ' ', '*', '>'])) {
        let v2 = AckSubjectPrefix::v2(Some(domain), "HASH", stream, consumer);
        let written = v2.reply(delivered, sseq, cseq, timestamp, pending);
        let parsed =
            AckSubject::parse(&written).unwrap_or_else(|error| panic!("{written}: {error}"));
        let expected_domain = (!domain.is_empty() && domain != "_").then_some(domain);
        assert_eq!(
            (
                parsed.domain,
                parsed.account_hash,
                parsed.stream,
                parsed.consumer
            ),
            (expected_domain, Some("HASH"), stream, consumer)
        );
        assert_eq!((parsed.stream_sequence, parsed.pending), (sseq, pending));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(rest) = data.strip_prefix(b"#") {
        return round_trip(rest);
    }
    let (subject, body) = match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let kind = AckKind::parse(body);
    // The canonical spelling of a kind parses back to that kind (a NAK delay or a pull request
    // re-encoded may spell numbers differently, so only the variant is compared). `Unknown`
    // has no spelling.
    if kind != AckKind::Unknown {
        let again = AckKind::parse(&kind.to_body());
        assert_eq!(
            std::mem::discriminant(&again),
            std::mem::discriminant(&kind),
            "{kind:?} -> {again:?}"
        );
    }
    let Ok(subject) = std::str::from_utf8(subject) else {
        return;
    };
    let parsed = AckSubject::parse(subject);
    if let Ok(parsed) = &parsed {
        // Display then parse gives the same fields.
        let shown = parsed.to_string();
        let reparsed = AckSubject::parse(&shown).unwrap_or_else(|error| panic!("{shown}: {error}"));
        assert_eq!(&reparsed, parsed);
    }
    // The fast path, given this subject's own v1 prefix (as a consumer builds it: `$JS.ACK.`,
    // then non-empty stream and consumer names), agrees with the general parser.
    let tokens: Vec<&str> = subject.split('.').collect();
    if tokens.len() >= 4
        && tokens[..2] == ["$JS", "ACK"]
        && !tokens[2].is_empty()
        && !tokens[3].is_empty()
    {
        let prefix = format!("{}.{}.{}.{}.", tokens[0], tokens[1], tokens[2], tokens[3]);
        if let Some((delivered, sseq, cseq)) =
            fuzzing::parse_own_ack(subject.as_bytes(), prefix.as_bytes())
        {
            let general = parsed.unwrap_or_else(|error| {
                panic!("fast path accepts what the general parser refuses: {subject}: {error}")
            });
            assert_eq!(
                (
                    general.delivered,
                    general.stream_sequence,
                    general.consumer_sequence
                ),
                (delivered, sseq, cseq)
            );
        }
    }
});

//! Property tests: encode → parse round trips for client and server frames, split anywhere; and
//! arbitrary bytes split at arbitrary points never panic and parse the same as the whole buffer.

use bytes::{Bytes, BytesMut};
use nats_proto::*;
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_\\-*>]{1,8}"
}

fn subject() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 1..4).prop_map(|tokens| tokens.join("."))
}

fn sid() -> impl Strategy<Value = String> {
    "[0-9a-zA-Z]{1,6}"
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..64)
}

fn headers() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(("[A-Za-z\\-]{1,8}", "[ -~]{0,10}"), 0..3).prop_map(|entries| {
        let mut map = HeaderMap::new();
        for (name, value) in entries {
            map.append(name, value.trim().to_owned());
        }
        map.to_bytes().to_vec()
    })
}

fn client_op() -> impl Strategy<Value = ClientOp> {
    let bytes = |text: String| Bytes::from(text.into_bytes());
    prop_oneof![
        (subject(), prop::option::of(subject()), payload()).prop_map(move |(s, r, p)| {
            ClientOp::Pub {
                subject: bytes(s),
                reply: r.map(bytes),
                payload: Bytes::from(p),
            }
        }),
        (subject(), prop::option::of(subject()), headers(), payload()).prop_map(
            move |(s, r, h, p)| ClientOp::HPub {
                subject: bytes(s),
                reply: r.map(bytes),
                headers: Bytes::from(h),
                payload: Bytes::from(p),
            }
        ),
        (subject(), prop::option::of(token()), sid()).prop_map(move |(s, q, id)| {
            ClientOp::Sub {
                subject: bytes(s),
                queue: q.map(bytes),
                sid: bytes(id),
            }
        }),
        (sid(), prop::option::of(1u64..1_000_000)).prop_map(move |(id, max)| ClientOp::Unsub {
            sid: bytes(id),
            max,
        }),
        Just(ClientOp::Ping),
        Just(ClientOp::Pong),
        (
            any::<bool>(),
            any::<bool>(),
            prop::option::of("[a-z ]{0,12}")
        )
            .prop_map(
                |(verbose, headers, name)| ClientOp::Connect(ConnectOptions {
                    verbose,
                    headers,
                    name,
                    ..ConnectOptions::default()
                })
            ),
    ]
}

fn encode_client_op(out: &mut BytesMut, op: &ClientOp) {
    match op {
        ClientOp::Connect(options) => encode_connect(out, options),
        ClientOp::Pub {
            subject,
            reply,
            payload,
        } => encode_pub(out, subject, reply.as_deref(), payload),
        ClientOp::HPub {
            subject,
            reply,
            headers,
            payload,
        } => encode_hpub(out, subject, reply.as_deref(), headers, payload),
        ClientOp::Sub {
            subject,
            queue,
            sid,
        } => encode_sub(out, subject, queue.as_deref(), sid),
        ClientOp::Unsub { sid, max } => encode_unsub(out, sid, *max),
        ClientOp::Ping => out.extend_from_slice(PING),
        ClientOp::Pong => out.extend_from_slice(PONG),
        ClientOp::Ok => out.extend_from_slice(OK),
        ClientOp::Err(text) => {
            out.extend_from_slice(b"-ERR ");
            out.extend_from_slice(text);
            out.extend_from_slice(CRLF);
        }
    }
}

/// Feeds `input` cut at `cuts` (sorted, deduplicated, clamped), collecting ops until an error.
fn feed(input: &[u8], cuts: &[usize]) -> (Vec<ClientOp>, Option<Option<&'static str>>, usize) {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (input.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(input.len());
    let mut parser = ClientParser::new(1024, 256);
    let mut buf = BytesMut::new();
    let mut ops = Vec::new();
    let mut start = 0;
    for cut in cuts {
        buf.extend_from_slice(&input[start..cut]);
        start = cut;
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(op)) => ops.push(op),
                Ok(None) => break,
                Err(error) => return (ops, Some(error.err_text()), usize::MAX),
            }
        }
    }
    (ops, None, buf.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn client_ops_round_trip_split_anywhere(
        ops in prop::collection::vec(client_op(), 1..6),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let mut wire = BytesMut::new();
        for op in &ops {
            encode_client_op(&mut wire, op);
        }
        let (parsed, error, rest) = feed(&wire, &cuts);
        prop_assert_eq!(error, None);
        prop_assert_eq!(rest, 0);
        prop_assert_eq!(parsed, ops);
    }

    #[test]
    fn server_msgs_round_trip_split_anywhere(
        messages in prop::collection::vec(
            (subject(), sid(), prop::option::of(subject()), prop::option::of(headers()), payload()),
            1..6,
        ),
        cut in any::<usize>(),
    ) {
        let mut wire = BytesMut::new();
        for (subject, sid, reply, headers, payload) in &messages {
            let reply = reply.as_deref().map(str::as_bytes);
            match headers {
                Some(headers) => encode_hmsg(&mut wire, subject.as_bytes(), sid.as_bytes(), reply, headers, payload),
                None => encode_msg(&mut wire, subject.as_bytes(), sid.as_bytes(), reply, payload),
            }
        }
        let cut = cut % (wire.len() + 1);
        let mut parser = ServerParser::new();
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut parsed = Vec::new();
        while let Some(op) = parser.parse(&mut buf).unwrap() {
            parsed.push(op);
        }
        buf.extend_from_slice(&wire[cut..]);
        while let Some(op) = parser.parse(&mut buf).unwrap() {
            parsed.push(op);
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(parsed.len(), messages.len());
        for (op, (subject, sid, reply, headers, payload)) in parsed.iter().zip(&messages) {
            let (op_subject, op_sid, op_reply, op_headers, op_payload) = match op {
                ServerOp::Msg { subject, sid, reply, payload } => (subject, sid, reply, None, payload),
                ServerOp::HMsg { subject, sid, reply, headers, payload } => (subject, sid, reply, Some(headers), payload),
                other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
            };
            prop_assert_eq!(&op_subject[..], subject.as_bytes());
            prop_assert_eq!(&op_sid[..], sid.as_bytes());
            prop_assert_eq!(op_reply.as_deref(), reply.as_deref().map(str::as_bytes));
            prop_assert_eq!(op_headers.map(|headers| headers.to_vec()), headers.clone());
            prop_assert_eq!(&op_payload[..], &payload[..]);
        }
    }

    /// The fuzz target's property, run in CI: arbitrary bytes (biased toward protocol-looking
    /// input) never panic, and any split gives the same ops and the same error as the whole buffer.
    #[test]
    fn arbitrary_bytes_are_split_invariant(
        pieces in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..12),
                prop::sample::select(vec![
                    b"PUB ".to_vec(), b"HPUB ".to_vec(), b"SUB ".to_vec(), b"UNSUB ".to_vec(),
                    b"PING".to_vec(), b"PONG".to_vec(), b"CONNECT ".to_vec(), b"+OK".to_vec(),
                    b"-ERR ".to_vec(), b"INFO ".to_vec(), b"\r\n".to_vec(), b" ".to_vec(),
                    b"\t".to_vec(), b"5".to_vec(), b"12 ".to_vec(), b"foo.bar ".to_vec(),
                    b"NATS/1.0\r\n\r\n".to_vec(), b"{}".to_vec(), b"hello".to_vec(),
                ]),
            ],
            0..24,
        ),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let input = pieces.concat();
        let whole = feed(&input, &[]);
        let split = feed(&input, &cuts);
        prop_assert_eq!(&split.0, &whole.0);
        prop_assert_eq!(split.1, whole.1);
        prop_assert_eq!(split.2, whole.2);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn header_maps_round_trip(
        status in prop::option::of(100u16..1000),
        description in prop::option::of("[A-Za-z][A-Za-z ]{0,15}[A-Za-z]"),
        entries in prop::collection::vec(("[!-9;-~]{1,12}", "[!-~]([ -~]{0,20}[!-~])?"), 0..5),
    ) {
        let mut map = match status {
            Some(status) => HeaderMap::with_status(status, description.as_deref()),
            None => HeaderMap::new(),
        };
        for (name, value) in &entries {
            map.append(name.clone(), value.clone());
        }
        let block = map.to_bytes();
        let parsed = HeaderMap::parse(&block).unwrap();
        prop_assert_eq!(&parsed, &map);
        prop_assert_eq!(header_status(&block), status);
        for (name, _) in &entries {
            let expected = map.get(name).map(str::as_bytes);
            prop_assert_eq!(header_value(&block, name), expected);
        }
    }
}

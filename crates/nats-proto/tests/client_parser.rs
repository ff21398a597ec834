//! ClientParser behaviour: split invariance, pipelining, every error, limits, zero copy.
//! Expected outcomes were observed on nats-server 2.15.1 with raw TCP.

use bytes::{Bytes, BytesMut};
use nats_proto::{ClientOp, ClientParser, ConnectOptions, ProtocolError};

/// Feeds `chunks` one after another, collecting ops until the input is exhausted or an error.
fn parse_chunks(
    parser: &mut ClientParser,
    chunks: &[&[u8]],
) -> (Vec<ClientOp>, Option<ProtocolError>, usize) {
    let mut buf = BytesMut::new();
    let mut ops = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(op)) => ops.push(op),
                Ok(None) => break,
                Err(error) => return (ops, Some(error), buf.len()),
            }
        }
    }
    (ops, None, buf.len())
}

fn parse_whole(input: &[u8]) -> (Vec<ClientOp>, Option<ProtocolError>, usize) {
    parse_chunks(&mut ClientParser::default(), &[input])
}

fn discriminant(error: &Option<ProtocolError>) -> Option<std::mem::Discriminant<ProtocolError>> {
    error.as_ref().map(std::mem::discriminant)
}

/// Asserts that every two-way split and the byte-at-a-time feed give the whole-buffer result.
fn assert_split_invariant(input: &[u8]) {
    let (ops, error, rest) = parse_whole(input);
    for split in 0..=input.len() {
        let (split_ops, split_error, split_rest) = parse_chunks(
            &mut ClientParser::default(),
            &[&input[..split], &input[split..]],
        );
        assert_eq!(split_ops, ops, "split at {split} of {input:?}");
        assert_eq!(
            discriminant(&split_error),
            discriminant(&error),
            "split at {split}"
        );
        if error.is_none() {
            assert_eq!(split_rest, rest, "split at {split}");
        }
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    let (byte_ops, byte_error, _) = parse_chunks(&mut ClientParser::default(), &bytes);
    assert_eq!(byte_ops, ops, "byte at a time: {input:?}");
    assert_eq!(discriminant(&byte_error), discriminant(&error));
}

fn pub_op(subject: &str, reply: Option<&str>, payload: &str) -> ClientOp {
    ClientOp::Pub {
        subject: Bytes::copy_from_slice(subject.as_bytes()),
        reply: reply.map(|reply| Bytes::copy_from_slice(reply.as_bytes())),
        payload: Bytes::copy_from_slice(payload.as_bytes()),
    }
}

const EVERY_OP: &[&[u8]] = &[
    b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"name\":\"x\"}\r\n",
    b"PUB foo 5\r\nhello\r\n",
    b"PUB foo reply.to 5\r\nhello\r\n",
    b"PUB foo 0\r\n\r\n",
    b"HPUB foo 18 23\r\nNATS/1.0\r\nA: b\r\n\r\nhello\r\n",
    b"HPUB foo rep 12 12\r\nNATS/1.0\r\n\r\n\r\n",
    b"SUB foo.* 1\r\n",
    b"SUB foo.> workers 22\r\n",
    b"UNSUB 1\r\n",
    b"UNSUB 1 10\r\n",
    b"PING\r\n",
    b"PONG\r\n",
    b"+OK\r\n",
    b"-ERR 'oops'\r\n",
    b"pub foo 2\r\nhi\r\n",
    b"Pub\tfoo \t 2\r\nhi\r\n",
    b"PING\n",
    b"PUB foo 2\nhi\r\n",
    b"INFO {}\r\nPING\r\n",
];

#[test]
fn every_op_split_at_every_offset_gives_the_same_ops() {
    for input in EVERY_OP {
        let (ops, error, rest) = parse_whole(input);
        assert!(error.is_none(), "{input:?}: {error:?}");
        assert_eq!(rest, 0, "{input:?} left bytes");
        assert!(!ops.is_empty(), "{input:?}");
        assert_split_invariant(input);
    }
}

#[test]
fn pipelined_ops_in_one_buffer() {
    let input: Vec<u8> = EVERY_OP.concat();
    let (ops, error, rest) = parse_whole(&input);
    assert!(error.is_none());
    assert_eq!(rest, 0);
    // INFO from a client is skipped, so one op fewer than lines.
    assert_eq!(ops.len(), EVERY_OP.len());
    assert_split_invariant(&input);
}

#[test]
fn ops_are_decoded_field_by_field() {
    let (ops, error, _) = parse_whole(
        b"PUB foo reply.to 5\r\nhello\r\nHPUB foo rep 18 23\r\nNATS/1.0\r\nA: b\r\n\r\nhello\r\n\
          SUB foo.> workers 22\r\nSUB bar 3\r\nUNSUB 1 10\r\nUNSUB 2\r\nUNSUB 3 0\r\nUNSUB 4 x\r\n-ERR 'oops'\r\n",
    );
    assert!(error.is_none());
    assert_eq!(ops[0], pub_op("foo", Some("reply.to"), "hello"));
    assert_eq!(
        ops[1],
        ClientOp::HPub {
            subject: Bytes::from_static(b"foo"),
            reply: Some(Bytes::from_static(b"rep")),
            headers: Bytes::from_static(b"NATS/1.0\r\nA: b\r\n\r\n"),
            payload: Bytes::from_static(b"hello"),
        }
    );
    assert_eq!(
        ops[2],
        ClientOp::Sub {
            subject: Bytes::from_static(b"foo.>"),
            queue: Some(Bytes::from_static(b"workers")),
            sid: Bytes::from_static(b"22"),
        }
    );
    assert_eq!(
        ops[3],
        ClientOp::Sub {
            subject: Bytes::from_static(b"bar"),
            queue: None,
            sid: Bytes::from_static(b"3"),
        }
    );
    let unsub = |sid: &'static [u8], max| ClientOp::Unsub {
        sid: Bytes::from_static(sid),
        max,
    };
    assert_eq!(ops[4], unsub(b"1", Some(10)));
    assert_eq!(ops[5], unsub(b"2", None));
    // nats-server: a zero or unparsable max unsubscribes at once, as if no max was given.
    assert_eq!(ops[6], unsub(b"3", None));
    assert_eq!(ops[7], unsub(b"4", None));
    assert_eq!(ops[8], ClientOp::Err(Bytes::from_static(b"'oops'")));
}

#[test]
fn connect_absent_fields_take_nats_server_defaults() {
    let (ops, _, _) = parse_whole(
        b"CONNECT {}\r\nCONNECT {\"verbose\":false,\"echo\":false,\"unknown_field\":[1]}\r\n",
    );
    let ClientOp::Connect(defaults) = &ops[0] else {
        panic!("{ops:?}")
    };
    assert_eq!(*defaults, ConnectOptions::default());
    assert!(defaults.verbose && defaults.pedantic && defaults.echo);
    assert!(!defaults.headers && !defaults.no_responders);
    let ClientOp::Connect(explicit) = &ops[1] else {
        panic!("{ops:?}")
    };
    assert!(!explicit.verbose && !explicit.echo && explicit.pedantic);
}

#[test]
fn connect_without_blank_is_accepted() {
    let (ops, error, _) = parse_whole(b"CONNECT{\"name\":\"n\"}\r\n");
    assert!(error.is_none());
    assert!(matches!(&ops[0], ClientOp::Connect(options) if options.name.as_deref() == Some("n")));
}

#[test]
fn ping_ignores_the_rest_of_its_line() {
    let (ops, error, _) = parse_whole(b"PING foo\r\nPINGX\r\n");
    assert!(error.is_none());
    assert_eq!(ops, vec![ClientOp::Ping, ClientOp::Ping]);
}

#[test]
fn carriage_return_inside_arguments_is_a_blank() {
    // nats-server accepts `PUB foo\r 2` as subject foo, size 2.
    let (ops, error, _) = parse_whole(b"PUB foo\r 2\r\nhi\r\n");
    assert!(error.is_none());
    assert_eq!(ops, vec![pub_op("foo", None, "hi")]);
}

/// (input, expected error text or None for a silent close). All close the connection.
const ERRORS: &[(&[u8], Option<&str>)] = &[
    (b"FOO\r\n", Some("Unknown Protocol Operation")),
    (b"\r\n", Some("Unknown Protocol Operation")),
    (b"PUB\r\n", Some("Unknown Protocol Operation")),
    (b"PUBX foo 1\r\n", Some("Unknown Protocol Operation")),
    (b"UNSUB\r\n", Some("Unknown Protocol Operation")),
    (b"MSG foo 1 2\r\nhi\r\n", Some("Unknown Protocol Operation")),
    (
        b"HMSG foo 1 2 2\r\nhi\r\n",
        Some("Unknown Protocol Operation"),
    ),
    (b"PUB foo 2\r\nhiX\r\n", Some("Unknown Protocol Operation")),
    (b"PUB foo 2\r\nhi\nX", Some("Unknown Protocol Operation")),
    (b"-ERR\r\n", Some("Unknown Protocol Operation")),
    (b"PUB foo x\r\n", None),
    (b"PUB foo -1\r\n", None),
    (b"PUB foo +2\r\n", None),
    (b"PUB foo 1234567890\r\n", None),
    (b"PUB foo a b 2\r\n", None),
    (b"PUB  \r\n", None),
    (b"HPUB foo 14 12\r\n", None),
    (b"HPUB foo 12\r\n", None),
    (b"SUB foo\r\n", None),
    (b"SUB a b c d\r\n", None),
    (b"UNSUB 1 2 3\r\n", None),
    (b"CONNECT {bad\r\n", None),
    (b"CONNECT\r\n", None),
    (b"PUB foo 2000000\r\n", Some("Maximum Payload Violation")),
    (
        b"HPUB foo 12 2000000\r\n",
        Some("Maximum Payload Violation"),
    ),
];

#[test]
fn each_error_has_nats_server_text_and_closes() {
    for (input, text) in ERRORS {
        let (ops, error, _) = parse_whole(input);
        assert!(ops.is_empty(), "{input:?}");
        let error = error.unwrap_or_else(|| panic!("no error for {input:?}"));
        assert_eq!(error.err_text(), *text, "{input:?}: {error:?}");
        assert!(error.closes_connection());
        assert_split_invariant(input);
    }
}

#[test]
fn unknown_operation_is_reported_before_the_line_ends() {
    let mut parser = ClientParser::default();
    let mut buf = BytesMut::from(&b"PX"[..]);
    assert_eq!(parser.parse(&mut buf), Err(ProtocolError::UnknownOperation));
    let mut buf = BytesMut::from(&b"PUB foo 2\r\nhiX"[..]);
    assert_eq!(
        ClientParser::default().parse(&mut buf),
        Err(ProtocolError::UnknownOperation)
    );
}

#[test]
fn hpub_with_empty_header_block_is_a_pub() {
    // nats-server 2.15: `HPUB foo 0 2` reaches subscribers as `MSG foo 1 2`.
    let (ops, error, _) = parse_whole(b"HPUB foo r 0 2\r\nhi\r\n");
    assert!(error.is_none());
    assert_eq!(ops, vec![pub_op("foo", Some("r"), "hi")]);
}

#[test]
fn headers_can_be_refused() {
    let mut parser = ClientParser::default();
    parser.set_headers_supported(false);
    let mut buf = BytesMut::from(&b"HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"[..]);
    let error = parser.parse(&mut buf).unwrap_err();
    assert_eq!(error, ProtocolError::HeadersNotSupported);
    assert_eq!(error.err_text(), None);
}

#[test]
fn max_payload_is_inclusive() {
    let mut parser = ClientParser::new(4, 4096);
    let (ops, error, _) = parse_chunks(
        &mut parser,
        &[b"PUB foo 4\r\nabcd\r\nHPUB foo 2 4\r\nab\r\n\r\n"],
    );
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ops.len(), 2);
    let mut parser = ClientParser::new(4, 4096);
    let (_, error, _) = parse_chunks(&mut parser, &[b"PUB foo 5\r\n"]);
    assert_eq!(
        error,
        Some(ProtocolError::MaxPayloadViolation { size: 5, limit: 4 })
    );
    // Headers count toward the limit.
    let mut parser = ClientParser::new(4, 4096);
    let (_, error, _) = parse_chunks(&mut parser, &[b"HPUB foo 3 5\r\n"]);
    assert!(matches!(
        error,
        Some(ProtocolError::MaxPayloadViolation { .. })
    ));
    parser.set_max_payload(10);
    assert_eq!(parser.max_payload(), 10);
}

#[test]
fn max_control_line_counts_the_arguments() {
    // nats-server 2.15: `UNSUB <4096 bytes>` passes, `UNSUB <4097 bytes>` is refused.
    let at_limit = format!("UNSUB {}\r\n", "a".repeat(4096));
    let (ops, error, _) = parse_whole(at_limit.as_bytes());
    assert!(error.is_none());
    assert_eq!(ops.len(), 1);
    let over = format!("UNSUB {}\r\n", "a".repeat(4097));
    let (_, error, _) = parse_whole(over.as_bytes());
    let error = error.unwrap();
    assert_eq!(error.err_text(), Some("maximum control line exceeded"));
    assert_split_invariant(over.as_bytes());
}

#[test]
fn max_control_line_is_enforced_on_a_partial_line() {
    let mut parser = ClientParser::new(1024, 16);
    let mut buf = BytesMut::from(&b"SUB aaaaaaaaaaaaaaaa"[..]);
    assert_eq!(parser.parse(&mut buf), Ok(None));
    buf.extend_from_slice(b"a");
    assert!(matches!(
        parser.parse(&mut buf),
        Err(ProtocolError::MaxControlLineExceeded { .. })
    ));
    // Junk after PING is bounded too (nats-server has no bound there; we keep one).
    let mut parser = ClientParser::new(1024, 16);
    let mut buf = BytesMut::from(&b"PING 0123456789abcdefgh"[..]);
    assert!(parser.parse(&mut buf).is_err());
    let mut parser = ClientParser::new(1024, 16);
    parser.set_max_control_line(64);
    assert_eq!(parser.max_control_line(), 64);
    let mut buf = BytesMut::from(&b"PING 0123456789abcdefgh\r\n"[..]);
    assert_eq!(parser.parse(&mut buf), Ok(Some(ClientOp::Ping)));
}

#[test]
fn partial_frame_consumes_nothing_and_remembers_the_head() {
    let mut parser = ClientParser::default();
    let mut buf = BytesMut::from(&b"PUB foo 10\r\n0123"[..]);
    assert_eq!(parser.parse(&mut buf), Ok(None));
    assert_eq!(buf.len(), 16);
    assert!(parser.is_awaiting_payload());
    assert_eq!(parser.pending_frame_len(), 12 + 10 + 2);
    buf.extend_from_slice(b"456789\r");
    assert_eq!(parser.parse(&mut buf), Ok(None));
    buf.extend_from_slice(b"\nPI");
    assert_eq!(
        parser.parse(&mut buf),
        Ok(Some(pub_op("foo", None, "0123456789")))
    );
    assert!(!parser.is_awaiting_payload());
    assert_eq!(&buf[..], b"PI");
    assert_eq!(parser.parse(&mut buf), Ok(None));
}

#[test]
fn payload_is_a_slice_of_the_read_buffer() {
    let mut parser = ClientParser::default();
    let mut buf = BytesMut::with_capacity(256);
    buf.extend_from_slice(b"PUB foo 5\r\nhello\r\n");
    let start = buf.as_ptr() as usize;
    let end = start + buf.capacity();
    let Some(ClientOp::Pub {
        subject, payload, ..
    }) = parser.parse(&mut buf).unwrap()
    else {
        panic!("expected PUB")
    };
    for part in [&subject, &payload] {
        let address = part.as_ptr() as usize;
        assert!(
            address >= start && address < end,
            "copied instead of sliced"
        );
    }
}

#[test]
fn large_payload_arriving_in_small_reads() {
    let payload = vec![b'x'; 1024 * 1024];
    let mut input = b"PUB big 1048576\r\n".to_vec();
    input.extend_from_slice(&payload);
    input.extend_from_slice(b"\r\n");
    let chunks: Vec<&[u8]> = input.chunks(1000).collect();
    let (ops, error, rest) = parse_chunks(&mut ClientParser::default(), &chunks);
    assert!(error.is_none());
    assert_eq!(rest, 0);
    let [ClientOp::Pub {
        payload: parsed, ..
    }] = &ops[..]
    else {
        panic!("one PUB expected")
    };
    assert_eq!(parsed.len(), payload.len());
}

#[test]
fn every_blank_separates_arguments_at_any_position() {
    // Exercises the word-at-a-time blank search: blanks and control bytes at every offset.
    for length in 1..24 {
        for blank in [b' ', b'\t', b'\r'] {
            let subject = "s".repeat(length);
            let mut line = format!("SUB {subject}").into_bytes();
            line.push(blank);
            line.extend_from_slice(b"q\x01x 7\r\n");
            let (ops, error, _) = parse_whole(&line);
            assert!(error.is_none(), "{line:?}");
            assert_eq!(
                ops,
                vec![ClientOp::Sub {
                    subject: Bytes::from(subject.clone()),
                    queue: Some(Bytes::from_static(b"q\x01x")),
                    sid: Bytes::from_static(b"7"),
                }]
            );
        }
    }
}

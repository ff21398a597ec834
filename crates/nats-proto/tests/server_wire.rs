//! What the server writes: MSG/HMSG/INFO/-ERR encoding byte for byte as nats-server 2.15.1 sends
//! it, read back with ServerParser; and NATS/1.0 header blocks.

use bytes::{Bytes, BytesMut};
use nats_proto::*;

fn info_like_reference() -> ServerInfo {
    ServerInfo {
        server_id: "NCYFBGI7IBV3GPNXMJTI7UYMJ4YS2YYDJO2PUFQFQ3QRAUJFGSGAHO2Y".into(),
        server_name: "NCYFBGI7IBV3GPNXMJTI7UYMJ4YS2YYDJO2PUFQFQ3QRAUJFGSGAHO2Y".into(),
        version: "2.15.1".into(),
        proto: 1,
        git_commit: "b2fd3ef".into(),
        go: "go1.27.2".into(),
        host: "0.0.0.0".into(),
        port: 4333,
        headers: true,
        max_payload: 1048576,
        jetstream: true,
        client_id: 5,
        client_ip: "127.0.0.1".into(),
        api_lvl: 5,
        xkey: "XBJSK2H7SUBWIO5AXZYE56Z5DPL44UJBXBLM5HHLPFREQMVXPFOVDXRN".into(),
        ..ServerInfo::default()
    }
}

#[test]
fn info_matches_the_reference_server_byte_for_byte() {
    // Captured from `nats-server -p 4333 -js` (2.15.1).
    let expected = concat!(
        r#"INFO {"server_id":"NCYFBGI7IBV3GPNXMJTI7UYMJ4YS2YYDJO2PUFQFQ3QRAUJFGSGAHO2Y","#,
        r#""server_name":"NCYFBGI7IBV3GPNXMJTI7UYMJ4YS2YYDJO2PUFQFQ3QRAUJFGSGAHO2Y","version":"2.15.1","#,
        r#""proto":1,"git_commit":"b2fd3ef","go":"go1.27.2","host":"0.0.0.0","port":4333,"headers":true,"#,
        r#""max_payload":1048576,"jetstream":true,"client_id":5,"client_ip":"127.0.0.1","api_lvl":5,"#,
        r#""xkey":"XBJSK2H7SUBWIO5AXZYE56Z5DPL44UJBXBLM5HHLPFREQMVXPFOVDXRN"} "#,
        "\r\n"
    );
    let mut out = BytesMut::new();
    encode_info(&mut out, &info_like_reference());
    assert_eq!(std::str::from_utf8(&out).unwrap(), expected);

    let mut parser = ServerParser::new();
    let Some(ServerOp::Info(json)) = parser.parse(&mut out).unwrap() else {
        panic!("INFO expected")
    };
    assert_eq!(ServerOp::parse_info(&json).unwrap(), info_like_reference());
}

#[test]
fn info_with_auth_and_without_jetstream_omits_and_orders_as_reference() {
    // `nats-server --user a --pass b`: auth_required sits between headers and max_payload,
    // jetstream is omitted when false.
    let info = ServerInfo {
        auth_required: true,
        jetstream: false,
        ..info_like_reference()
    };
    let mut out = BytesMut::new();
    encode_info(&mut out, &info);
    let text = std::str::from_utf8(&out).unwrap();
    assert!(
        text.contains(r#""headers":true,"auth_required":true,"max_payload":1048576,"client_id":5"#)
    );
    assert!(!text.contains("jetstream"));
    assert!(!text.contains("nonce") && !text.contains("connect_urls") && !text.contains("ldm"));
}

#[test]
fn msg_and_hmsg_frames_match_the_reference() {
    let mut out = BytesMut::new();
    encode_msg(&mut out, b"foo", b"1", Some(b"bar"), b"hi");
    assert_eq!(&out[..], b"MSG foo 1 bar 2\r\nhi\r\n");
    assert_eq!(
        msg_encoded_len(b"foo", b"1", Some(b"bar"), b"hi"),
        out.len()
    );
    out.clear();
    encode_msg(&mut out, b"foo", b"1", None, b"");
    assert_eq!(&out[..], b"MSG foo 1 0\r\n\r\n");
    assert_eq!(msg_encoded_len(b"foo", b"1", None, b""), out.len());
    out.clear();
    encode_hmsg(&mut out, b"foo", b"1", None, b"NATS/1.0\r\n\r\n", b"hi");
    assert_eq!(&out[..], b"HMSG foo 1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n");
    out.clear();
    encode_hmsg(
        &mut out,
        b"foo",
        b"1",
        Some(b"r"),
        b"NATS/1.0 503\r\n\r\n",
        b"",
    );
    assert_eq!(&out[..], b"HMSG foo 1 r 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    out.clear();
    encode_err(&mut out, err_text::INVALID_SUBJECT);
    assert_eq!(&out[..], b"-ERR 'Invalid Subject'\r\n");
    assert_eq!(PING, b"PING\r\n");
    assert_eq!(PONG, b"PONG\r\n");
    assert_eq!(OK, b"+OK\r\n");
}

#[test]
fn write_decimal_covers_edges() {
    for value in [0u64, 7, 10, 99, 100, 1048576, u64::MAX] {
        let mut out = BytesMut::new();
        write_decimal(&mut out, value);
        assert_eq!(std::str::from_utf8(&out).unwrap(), value.to_string());
    }
}

#[test]
fn server_parser_reads_every_server_op_split_anywhere() {
    let mut wire = BytesMut::new();
    encode_info(&mut wire, &info_like_reference());
    encode_msg(&mut wire, b"foo.bar", b"12", Some(b"_INBOX.x"), b"payload");
    encode_hmsg(
        &mut wire,
        b"foo",
        b"3",
        None,
        b"NATS/1.0\r\nA: b\r\n\r\n",
        b"x",
    );
    wire.extend_from_slice(b"PING\r\nPONG\r\n+OK\r\n");
    encode_err(&mut wire, "Unknown Protocol Operation");
    let wire = wire.freeze();

    let parse_all = |chunks: &[&[u8]]| {
        let mut parser = ServerParser::new();
        let mut buf = BytesMut::new();
        let mut ops = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(op) = parser.parse(&mut buf).unwrap() {
                ops.push(op);
            }
        }
        assert!(buf.is_empty());
        ops
    };
    let ops = parse_all(&[&wire]);
    assert_eq!(ops.len(), 7);
    assert_eq!(
        ops[1],
        ServerOp::Msg {
            subject: Bytes::from_static(b"foo.bar"),
            sid: Bytes::from_static(b"12"),
            reply: Some(Bytes::from_static(b"_INBOX.x")),
            payload: Bytes::from_static(b"payload"),
        }
    );
    assert_eq!(
        ops[2],
        ServerOp::HMsg {
            subject: Bytes::from_static(b"foo"),
            sid: Bytes::from_static(b"3"),
            reply: None,
            headers: Bytes::from_static(b"NATS/1.0\r\nA: b\r\n\r\n"),
            payload: Bytes::from_static(b"x"),
        }
    );
    assert_eq!(&ops[3..6], &[ServerOp::Ping, ServerOp::Pong, ServerOp::Ok]);
    assert_eq!(
        ops[6],
        ServerOp::Err(Bytes::from_static(b"Unknown Protocol Operation"))
    );
    for split in 0..=wire.len() {
        assert_eq!(
            parse_all(&[&wire[..split], &wire[split..]]),
            ops,
            "split at {split}"
        );
    }
}

#[test]
fn server_parser_rejects_garbage() {
    for input in [
        &b"XYZ\r\n"[..],
        b"MSG foo\r\n",
        b"MSG foo 1 x\r\n",
        b"HMSG foo 1 5 2\r\n",
        b"MSG foo 1 2\r\nhiX",
    ] {
        let mut buf = BytesMut::from(input);
        assert!(ServerParser::new().parse(&mut buf).is_err(), "{input:?}");
    }
}

#[test]
fn header_blocks_parse_and_build() {
    let map = HeaderMap::parse(b"NATS/1.0\r\nNats-Msg-Id: abc\r\nX: 1\r\nX: 2\r\n\r\n").unwrap();
    assert_eq!(map.status, None);
    assert_eq!(map.get("Nats-Msg-Id"), Some("abc"));
    assert_eq!(map.get("nats-msg-id"), None);
    assert_eq!(map.get_ignore_case("nats-msg-id"), Some("abc"));
    assert_eq!(map.get_all("X").collect::<Vec<_>>(), vec!["1", "2"]);

    let status = HeaderMap::parse(b"NATS/1.0 404 No Messages\r\n\r\n").unwrap();
    assert_eq!(status.status, Some(404));
    assert_eq!(status.description.as_deref(), Some("No Messages"));
    assert!(HeaderMap::parse(b"HTTP/1.1 200\r\n\r\n").is_err());
    assert!(HeaderMap::parse(b"NATS/1.0 abc\r\n\r\n").is_err());

    assert_eq!(
        &HeaderMap::with_status(503, None).to_bytes()[..],
        b"NATS/1.0 503\r\n\r\n"
    );
    assert_eq!(
        &HeaderMap::with_status(408, Some("Request Timeout")).to_bytes()[..],
        b"NATS/1.0 408 Request Timeout\r\n\r\n"
    );
    let mut built = HeaderMap::new();
    built.insert("Nats-Msg-Id", "x");
    built.append("A", "1");
    built.insert("A", "2");
    assert_eq!(
        &built.to_bytes()[..],
        b"NATS/1.0\r\nNats-Msg-Id: x\r\nA: 2\r\n\r\n"
    );
    assert!(built.remove("A"));
    assert!(!built.remove("A"));
    assert_eq!(HeaderMap::parse(&built.to_bytes()).unwrap(), built);
    assert!(HeaderMap::new().is_empty());
}

#[test]
fn raw_header_lookups_do_not_need_a_map() {
    let block = b"NATS/1.0 503\r\nNats-Msg-Id:  spaced  \r\nOther: v\r\n\r\n";
    assert_eq!(header_value(block, "Nats-Msg-Id"), Some(&b"spaced"[..]));
    assert_eq!(header_value(block, "Other"), Some(&b"v"[..]));
    assert_eq!(header_value(block, "Missing"), None);
    assert_eq!(header_status(block), Some(503));
    assert_eq!(header_status(b"NATS/1.0\r\n\r\n"), None);
    assert_eq!(
        header_status(b"NATS/1.0 100 Idle Heartbeat\r\n\r\n"),
        Some(100)
    );
}

#[test]
fn client_frames_round_trip_through_the_client_parser() {
    let mut wire = BytesMut::new();
    let options = ConnectOptions {
        verbose: false,
        headers: true,
        name: Some("n".into()),
        ..ConnectOptions::default()
    };
    encode_connect(&mut wire, &options);
    encode_pub(&mut wire, b"a", Some(b"r"), b"p");
    encode_hpub(&mut wire, b"a", None, b"NATS/1.0\r\n\r\n", b"p");
    encode_sub(&mut wire, b"a.*", Some(b"q"), b"1");
    encode_unsub(&mut wire, b"1", Some(5));
    let mut parser = ClientParser::default();
    let mut ops = Vec::new();
    while let Some(op) = parser.parse(&mut wire).unwrap() {
        ops.push(op);
    }
    assert_eq!(ops.len(), 5);
    assert_eq!(ops[0], ClientOp::Connect(options));
    assert_eq!(
        ops[4],
        ClientOp::Unsub {
            sid: Bytes::from_static(b"1"),
            max: Some(5)
        }
    );
}

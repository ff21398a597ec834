use bytes::BytesMut;
use nats_proto::*;

#[test]
fn parses_pub_sub_ping() {
    let mut parser = ClientParser::default();
    let mut buf = BytesMut::from(
        &b"pub foo r 2\r\nhi\r\nSUB foo q 1\r\nPING\r\nHPUB a 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"[..],
    );
    let op = parser.parse(&mut buf).unwrap().unwrap();
    assert_eq!(
        op,
        ClientOp::Pub {
            subject: "foo".into(),
            reply: Some("r".into()),
            payload: "hi".into()
        }
    );
    let op = parser.parse(&mut buf).unwrap().unwrap();
    assert_eq!(
        op,
        ClientOp::Sub {
            subject: "foo".into(),
            queue: Some("q".into()),
            sid: "1".into()
        }
    );
    assert_eq!(parser.parse(&mut buf).unwrap(), Some(ClientOp::Ping));
    let op = parser.parse(&mut buf).unwrap().unwrap();
    assert_eq!(
        op,
        ClientOp::HPub {
            subject: "a".into(),
            reply: None,
            headers: "NATS/1.0\r\n\r\n".into(),
            payload: "hi".into()
        }
    );
    assert_eq!(parser.parse(&mut buf).unwrap(), None);
    assert!(buf.is_empty());
}

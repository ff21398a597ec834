//! Arbitrary bytes, cut at arbitrary points, into ClientParser: it must never panic, and any
//! cutting must give the same ops and the same error as parsing the whole input at once.
//! The first input bytes choose the cut points and limits; the rest is the wire data.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use nats_proto::{ClientOp, ClientParser, ServerParser};

type Outcome = (Vec<ClientOp>, Option<Option<&'static str>>, usize);

fn feed(input: &[u8], cuts: &[usize], max_payload: usize, max_control_line: usize) -> Outcome {
    let mut parser = ClientParser::new(max_payload, max_control_line);
    let mut buf = BytesMut::new();
    let mut ops = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
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

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (header, input) = data.split_at(4);
    let max_payload = usize::from(header[0]) * 8;
    let max_control_line = 8 + usize::from(header[1]) * 4;
    let mut cuts: Vec<usize> = header[2..]
        .iter()
        .map(|&byte| usize::from(byte) * input.len() / 255)
        .collect();
    cuts.sort_unstable();

    let whole = feed(input, &[], max_payload, max_control_line);
    let split = feed(input, &cuts, max_payload, max_control_line);
    assert_eq!(whole, split, "cuts {cuts:?}");
    let bytes: Vec<usize> = (1..input.len()).collect();
    let byte_at_a_time = feed(input, &bytes, max_payload, max_control_line);
    assert_eq!(whole, byte_at_a_time);

    // The client-side parser must not panic on the same bytes either.
    let mut server_parser = ServerParser::new();
    let mut buf = BytesMut::from(input);
    while let Ok(Some(_)) = server_parser.parse(&mut buf) {}
});

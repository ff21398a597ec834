//! Parser and encoder throughput: PUB of 16 B / 128 B / 1 KB, HPUB, pipelined batches, MSG encoding.

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nats_proto::{encode_hpub, encode_msg, encode_pub, ClientParser};

fn pub_frame(size: usize) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_pub(
        &mut out,
        b"orders.created.eu",
        Some(b"_INBOX.abcdef.1"),
        &vec![b'x'; size],
    );
    out.to_vec()
}

fn parse_every(parser: &mut ClientParser, buf: &mut BytesMut) -> usize {
    let mut count = 0;
    while let Ok(Some(op)) = parser.parse(buf) {
        black_box(op);
        count += 1;
    }
    count
}

fn single_ops(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse_single");
    let mut hpub = BytesMut::new();
    encode_hpub(
        &mut hpub,
        b"orders.created",
        None,
        b"NATS/1.0\r\nNats-Msg-Id: 1234567890\r\n\r\n",
        &[b'x'; 128],
    );
    let cases = [
        ("pub_16B", pub_frame(16)),
        ("pub_128B", pub_frame(128)),
        ("pub_1KB", pub_frame(1024)),
        ("hpub_128B", hpub.to_vec()),
        ("sub", b"SUB orders.* workers 42\r\n".to_vec()),
    ];
    for (name, frame) in cases {
        group.throughput(Throughput::Bytes(frame.len() as u64));
        let mut parser = ClientParser::default();
        group.bench_function(name, |bencher| {
            bencher.iter_batched_ref(
                || BytesMut::from(&frame[..]),
                |buf| parse_every(&mut parser, buf),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn pipelined(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse_pipelined");
    for (name, size) in [("1000x_pub_16B", 16), ("1000x_pub_128B", 128)] {
        let frame = pub_frame(size);
        let batch: Vec<u8> = frame.repeat(1000);
        group.throughput(Throughput::Elements(1000));
        let mut parser = ClientParser::default();
        group.bench_function(name, |bencher| {
            bencher.iter_batched_ref(
                || BytesMut::from(&batch[..]),
                |buf| assert_eq!(parse_every(&mut parser, buf), 1000),
                BatchSize::LargeInput,
            )
        });
    }
    // The same batch arriving in 4 KB reads, as a socket delivers it.
    let batch: Vec<u8> = pub_frame(128).repeat(1000);
    group.throughput(Throughput::Elements(1000));
    let mut parser = ClientParser::default();
    group.bench_function("1000x_pub_128B_in_4KB_reads", |bencher| {
        bencher.iter(|| {
            let mut buf = BytesMut::with_capacity(8192);
            let mut count = 0;
            for chunk in batch.chunks(4096) {
                buf.extend_from_slice(chunk);
                count += parse_every(&mut parser, &mut buf);
            }
            assert_eq!(count, 1000);
        })
    });
    group.finish();
}

fn encode(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("encode");
    let payload = vec![b'x'; 128];
    group.throughput(Throughput::Elements(1));
    let mut out = BytesMut::with_capacity(1 << 20);
    group.bench_function("msg_128B", |bencher| {
        bencher.iter(|| {
            if out.len() > (1 << 19) {
                out.clear();
            }
            encode_msg(
                &mut out,
                b"orders.created.eu",
                b"17",
                Some(b"_INBOX.abcdef.1"),
                black_box(&payload),
            );
        })
    });
    group.finish();
}

criterion_group!(benches, single_ops, pipelined, encode);
criterion_main!(benches);

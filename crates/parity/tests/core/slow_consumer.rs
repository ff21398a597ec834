//! A subscriber that stops reading is closed as a slow consumer once its backlog passes
//! max_pending, while the publisher and the other subscribers carry on. Passes against the
//! real nats-server too.

use std::time::{Duration, Instant};
use test_harness::{RawClient, ServerOptions, TestServer};

#[test]
fn slow_consumer_is_cut_off_and_others_keep_receiving() {
    let server = TestServer::start(ServerOptions {
        config: Some("max_pending: 256KB\nmax_payload: 64KB\nwrite_deadline: \"1s\"\n".into()),
        ..Default::default()
    });
    let quiet = r#"{"verbose":false,"pedantic":false}"#;
    let mut slow = RawClient::connect_with(&server, quiet);
    slow.send("SUB firehose 1\r\n");
    slow.ping_collect();
    // The healthy subscriber reads in a thread and counts what it got.
    let mut healthy = RawClient::connect_with(&server, quiet);
    healthy.send("SUB firehose 1\r\n");
    healthy.ping_collect();
    let total = 20_000usize;
    let payload = vec![b'x'; 1024];
    let progress = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader_progress = progress.clone();
    let reader = std::thread::spawn(move || {
        let mut received = 0usize;
        let deadline = Instant::now() + Duration::from_secs(30);
        while received < total && Instant::now() < deadline {
            let Some(line) = healthy.read_line() else {
                break;
            };
            if let Some(size) = line.strip_prefix("MSG firehose 1 ") {
                let size: usize = size.parse().unwrap();
                healthy.read_payload(size).unwrap();
                received += 1;
                reader_progress.store(received, std::sync::atomic::Ordering::Relaxed);
            }
        }
        received
    });
    let mut publisher = RawClient::connect_with(&server, quiet);
    let mut frame = format!("PUB firehose {}\r\n", payload.len()).into_bytes();
    frame.extend_from_slice(&payload);
    frame.extend_from_slice(b"\r\n");
    let batch: Vec<u8> = frame.repeat(100);
    // Paced by the healthy subscriber (its backlog stays far below max_pending), while the
    // one that never reads falls behind by everything.
    for round in 1..=total / 100 {
        publisher.send_bytes(&batch);
        let deadline = Instant::now() + Duration::from_secs(10);
        while progress.load(std::sync::atomic::Ordering::Relaxed) + 100 < round * 100
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    // The publisher is not stalled: its PING is answered.
    publisher.timeout = Duration::from_secs(20);
    assert_eq!(publisher.ping_collect(), ["PONG"]);
    let received = reader.join().unwrap();
    assert_eq!(
        received,
        total,
        "healthy subscriber got everything; server log:\n{}",
        server.log()
    );
    // The slow one is disconnected: after draining what the kernel buffered, EOF.
    slow.timeout = Duration::from_secs(20);
    let start = Instant::now();
    let mut closed = false;
    while start.elapsed() < Duration::from_secs(20) {
        match slow.read_line() {
            Some(_) => continue,
            None => {
                closed = true;
                break;
            }
        }
    }
    assert!(closed, "slow consumer connection was closed");
}

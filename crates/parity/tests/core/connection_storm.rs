//! A connection storm: thousands of clients connecting at the same moment (every client after a
//! server restart or a network blip) are all answered promptly. nats-server listens with the
//! kernel's full accept queue (`net.core.somaxconn`); a queue of 1024 dropped the handshakes
//! past it, and those clients waited out SYN retransmits, or hung until the server gave up on
//! them (minutes).

use std::time::{Duration, Instant};
use test_harness::TestServer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// More than tokio's default accept queue of 1024, well under the open-file limit.
const CLIENTS: usize = 2_500;
/// Generous for a loaded machine: nats-server answers 2,500 in well under a second here; a
/// dropped SYN alone costs its client one second, an overflowed accept queue a minute.
const BOUND: Duration = Duration::from_secs(20);

async fn connect_and_ping(port: u16) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    assert!(line.starts_with("INFO "), "expected INFO, got {line:?}");
    reader
        .get_mut()
        .write_all(b"CONNECT {\"verbose\":false,\"protocol\":1}\r\nPING\r\n")
        .await?;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == "PONG\r\n" {
            return Ok(reader.into_inner());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_clients_connecting_at_once_all_get_their_pong() {
    let server = TestServer::core();
    let port = server.port;
    let start_line = std::sync::Arc::new(tokio::sync::Barrier::new(CLIENTS + 1));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let start_line = start_line.clone();
            tokio::spawn(async move {
                start_line.wait().await;
                tokio::time::timeout(BOUND, connect_and_ping(port)).await
            })
        })
        .collect();
    start_line.wait().await;
    let started = Instant::now();
    let mut connected = Vec::with_capacity(CLIENTS);
    let mut failed = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(Ok(stream))) => connected.push(stream),
            _ => failed += 1,
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(
        failed, 0,
        "{failed} of {CLIENTS} clients got no PONG within {BOUND:?}"
    );
    assert!(
        elapsed < BOUND,
        "{CLIENTS} clients took {elapsed:?} to all get their PONG"
    );
}

//! Figures for issue 7, ours next to nats-server in the same run (a benchmark, so `#[ignore]`):
//! KV put and get rates with 16 clients, and the catch-up rate of a mirror and of a source over
//! 1M messages. Both binaries are given by explicit paths:
//!
//! ```text
//! FIGURES_OURS=/work/target-js/release/nats-server FIGURES_REFERENCE=$(which nats-server) \
//!   cargo test --release -p parity --test jetstream key_value_figures -- --ignored --nocapture
//! ```
//! `FIGURES_MESSAGES` changes the 1M of the catch-up figures.

use async_nats::jetstream::{self, kv};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::SpawnTied;

const CLIENTS: usize = 16;
const OPERATIONS_PER_CLIENT: usize = 2000;
const KEYS: usize = 1000;
const VALUE_SIZE: usize = 128;

struct Server {
    child: Child,
    url: String,
    _store: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(binary: &PathBuf) -> Server {
    let store = tempfile::tempdir().expect("store dir");
    let port = test_harness::free_port();
    let child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_tied()
        .unwrap_or_else(|error| panic!("start {binary:?}: {error}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{binary:?} did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        child,
        url: format!("nats://127.0.0.1:{port}"),
        _store: store,
    }
}

async fn bucket(url: &str) -> (Vec<kv::Store>, async_nats::Client) {
    let admin = async_nats::connect(url).await.expect("connect");
    let context = jetstream::new(admin.clone());
    context
        .create_key_value(kv::Config {
            bucket: "FIGURES".into(),
            history: 1,
            ..Default::default()
        })
        .await
        .expect("bucket");
    let mut stores = Vec::new();
    for _ in 0..CLIENTS {
        let client = async_nats::connect(url).await.expect("connect");
        let store = jetstream::new(client)
            .get_key_value("FIGURES")
            .await
            .expect("bucket handle");
        stores.push(store);
    }
    (stores, admin)
}

/// Operations per second of 16 clients each doing `OPERATIONS_PER_CLIENT` in sequence.
async fn kv_rates(url: &str) -> (f64, f64) {
    let (stores, _admin) = bucket(url).await;
    let value = bytes::Bytes::from(vec![b'v'; VALUE_SIZE]);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (client, store) in stores.iter().cloned().enumerate() {
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            for index in 0..OPERATIONS_PER_CLIENT {
                let key = format!("k{}", (client * OPERATIONS_PER_CLIENT + index) % KEYS);
                store.put(key, value.clone()).await.expect("put");
            }
        }));
    }
    for task in tasks {
        task.await.expect("put task");
    }
    let puts = (CLIENTS * OPERATIONS_PER_CLIENT) as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (client, store) in stores.iter().cloned().enumerate() {
        tasks.push(tokio::spawn(async move {
            for index in 0..OPERATIONS_PER_CLIENT {
                let key = format!("k{}", (client * 31 + index) % KEYS);
                let entry = store.get(key).await.expect("get");
                assert!(entry.is_some(), "key present");
            }
        }));
    }
    for task in tasks {
        task.await.expect("get task");
    }
    let gets = (CLIENTS * OPERATIONS_PER_CLIENT) as f64 / started.elapsed().as_secs_f64();
    (puts, gets)
}

async fn stream_messages(client: &async_nats::Client, stream: &str) -> u64 {
    let context = jetstream::new(client.clone());
    let mut stream = context.get_stream(stream).await.expect("stream");
    stream.info().await.expect("info").state.messages
}

/// Seconds until a new stream built by `config` (a mirror or a source of ORIGIN) holds
/// `messages`, ORIGIN being full already.
async fn catch_up_seconds(
    client: &async_nats::Client,
    config: jetstream::stream::Config,
    messages: u64,
) -> f64 {
    let context = jetstream::new(client.clone());
    let name = config.name.clone();
    let started = Instant::now();
    context.create_stream(config).await.expect("create copy");
    let deadline = started + Duration::from_secs(600);
    while stream_messages(client, &name).await < messages {
        assert!(Instant::now() < deadline, "{name} did not catch up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed().as_secs_f64()
}

/// Messages per second a mirror and a source copy, over `messages` already in the origin.
async fn catch_up_rates(url: &str, messages: u64) -> (f64, f64) {
    let client = async_nats::connect(url).await.expect("connect");
    let context = jetstream::new(client.clone());
    context
        .create_stream(jetstream::stream::Config {
            name: "ORIGIN".into(),
            subjects: vec!["origin.>".into()],
            ..Default::default()
        })
        .await
        .expect("origin");
    let payload = bytes::Bytes::from(vec![b'x'; VALUE_SIZE]);
    let mut in_flight = std::collections::VecDeque::new();
    for index in 0..messages {
        let ack = context
            .publish(format!("origin.{}", index % 16), payload.clone())
            .await
            .expect("publish");
        in_flight.push_back(ack);
        if in_flight.len() >= 4096 {
            if let Some(ack) = in_flight.pop_front() {
                ack.await.expect("ack");
            }
        }
    }
    for ack in in_flight {
        ack.await.expect("ack");
    }
    assert_eq!(stream_messages(&client, "ORIGIN").await, messages);
    let mirror = catch_up_seconds(
        &client,
        jetstream::stream::Config {
            name: "MIRROR".into(),
            mirror: Some(jetstream::stream::Source {
                name: "ORIGIN".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        messages,
    )
    .await;
    let source = catch_up_seconds(
        &client,
        jetstream::stream::Config {
            name: "SOURCED".into(),
            sources: Some(vec![jetstream::stream::Source {
                name: "ORIGIN".into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        messages,
    )
    .await;
    (messages as f64 / mirror, messages as f64 / source)
}

fn binary(variable: &str) -> Option<PathBuf> {
    std::env::var_os(variable)
        .filter(|path| !path.is_empty())
        .map(PathBuf::from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by hand with FIGURES_OURS and FIGURES_REFERENCE"]
async fn figures_against_reference() {
    let (Some(ours), Some(reference)) = (binary("FIGURES_OURS"), binary("FIGURES_REFERENCE"))
    else {
        println!("skipped: set FIGURES_OURS and FIGURES_REFERENCE to server binaries");
        return;
    };
    let messages: u64 = std::env::var("FIGURES_MESSAGES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000_000);
    let mut rows = Vec::new();
    for (label, path) in [("ours", &ours), ("nats-server", &reference)] {
        let server = start(path);
        let (puts, gets) = kv_rates(&server.url).await;
        drop(server);
        let server = start(path);
        let (mirror, source) = catch_up_rates(&server.url, messages).await;
        drop(server);
        println!(
            "{label:12} kv put {puts:>9.0}/s  kv get {gets:>9.0}/s  mirror catch-up {mirror:>9.0} msg/s  source catch-up {source:>9.0} msg/s"
        );
        rows.push((puts, gets, mirror, source));
    }
    let (ours_row, reference_row) = (rows[0], rows[1]);
    println!(
        "ratio ours/nats-server: kv put {:.2}  kv get {:.2}  mirror {:.2}  source {:.2}  ({CLIENTS} clients, {messages} messages)",
        ours_row.0 / reference_row.0,
        ours_row.1 / reference_row.1,
        ours_row.2 / reference_row.2,
        ours_row.3 / reference_row.3,
    );
}

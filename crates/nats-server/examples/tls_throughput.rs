//! TLS data-path figure: one async-nats publisher and one subscriber over TLS, messages per
//! second through each given server binary, rounds alternating between them.
//!
//! `cargo run --release -p nats-server --example tls_throughput -- BIN [BIN...]`
//! (`MESSAGES`, `SIZE`, `ROUNDS` in the environment; `PLAIN=1` measures without TLS).
//! Certificates are made with rcgen in a temp dir; servers get `--tlscert/--tlskey`.

use futures::StreamExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

fn start(binary: &str, port: u16, dir: &std::path::Path, plain: bool) -> Running {
    let mut command = Command::new(binary);
    command.args(["-a", "127.0.0.1", "-p", &port.to_string()]);
    if !plain {
        command
            .arg("--tlscert")
            .arg(dir.join("server-cert.pem"))
            .arg("--tlskey")
            .arg(dir.join("server-key.pem"));
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{binary} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Running(child)
}

fn certificates(dir: &std::path::Path) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("params");
    let key = rcgen::KeyPair::generate().expect("key");
    let certificate = params.signed_by(&key, &ca, &ca_key).expect("certificate");
    std::fs::write(dir.join("ca.pem"), ca.pem()).expect("write");
    std::fs::write(dir.join("server-cert.pem"), certificate.pem()).expect("write");
    std::fs::write(dir.join("server-key.pem"), key.serialize_pem()).expect("write");
}

async fn measure(
    port: u16,
    dir: &std::path::Path,
    plain: bool,
    messages: usize,
    size: usize,
) -> f64 {
    let options = || {
        let options = async_nats::ConnectOptions::new().subscription_capacity(messages + 16);
        if plain {
            options
        } else {
            options
                .require_tls(true)
                .add_root_certificates(dir.join("ca.pem"))
        }
    };
    let url = format!("nats://127.0.0.1:{port}");
    let subscriber = options().connect(&url).await.expect("connect");
    let publisher = options().connect(&url).await.expect("connect");
    let mut subscription = subscriber.subscribe("bench").await.expect("subscribe");
    subscriber.flush().await.expect("flush");
    let payload = bytes::Bytes::from(vec![b'x'; size]);
    let started = Instant::now();
    let receiving = tokio::spawn(async move {
        let mut received = 0;
        while received < messages {
            match tokio::time::timeout(Duration::from_secs(20), subscription.next()).await {
                Ok(Some(_)) => received += 1,
                _ => break,
            }
        }
        received
    });
    for _ in 0..messages {
        publisher
            .publish("bench", payload.clone())
            .await
            .expect("publish");
    }
    publisher.flush().await.expect("flush");
    let received = receiving.await.expect("receiver");
    if received < messages {
        // A subscriber cut off as a slow consumer: say so rather than quote a rate.
        eprintln!("only {received} of {messages} messages arrived");
        return 0.0;
    }
    messages as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let binaries: Vec<String> = std::env::args().skip(1).collect();
    assert!(!binaries.is_empty(), "usage: tls_throughput BIN [BIN...]");
    let messages = setting("MESSAGES", 200_000);
    let size = setting("SIZE", 128);
    let rounds = setting("ROUNDS", 3);
    let plain = std::env::var_os("PLAIN").is_some();
    let dir = tempfile::tempdir().expect("tempdir");
    certificates(dir.path());
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); binaries.len()];
    for _ in 0..rounds {
        for (index, binary) in binaries.iter().enumerate() {
            let port = free_port();
            let _server = start(binary, port, dir.path(), plain);
            results[index].push(measure(port, dir.path(), plain, messages, size).await);
        }
    }
    for (binary, mut figures) in binaries.iter().zip(results) {
        figures.sort_by(f64::total_cmp);
        let median = figures[figures.len() / 2];
        println!(
            "{binary}: {} {size} B messages, {}: median {:.0} msgs/s over {rounds} rounds ({:?})",
            messages,
            if plain { "plain" } else { "TLS" },
            median,
            figures
                .iter()
                .map(|figure| figure.round())
                .collect::<Vec<_>>()
        );
    }
}

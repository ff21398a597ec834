//! WebSocket pub/sub throughput and request/reply latency, rnats beside nats-server: each
//! round starts both servers with the same websocket listener (`no_tls: true`) and runs the
//! same client over `ws://` against each in turn: by default the cheap raw client of `raw.rs`
//! (`--client raw`), or async-nats (`--client async-nats`), whose own CPU bounded the figure.
//!
//! Usage: websocket-bench --ours PATH --ref PATH [--rounds N] [--messages N] [--size BYTES]
//!        [--client raw|async-nats] [--transport websocket|tcp] [--placement]
//!        [--pin-clients split|same]

mod raw;

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    _directory: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self._directory);
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn start(binary: &str, name: &str) -> Result<(Server, u16)> {
    let port = free_port()?;
    let websocket = free_port()?;
    let directory = std::env::temp_dir().join(format!("ws-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory)?;
    let config = directory.join("ws.conf");
    std::fs::write(
        &config,
        // A publisher without flow control outruns one subscriber: a large max_pending keeps
        // either server from dropping it as a slow consumer mid-run.
        format!(
            "max_pending: 256MB\nwebsocket {{ listen: \"127.0.0.1:{websocket}\", no_tls: true }}\n"
        ),
    )?;
    let child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {binary}"))?;
    let server = Server {
        child,
        _directory: directory,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", websocket)).is_err() {
        if Instant::now() > deadline {
            bail!("{binary}: websocket port never opened");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if raw::plain_tcp() {
        return Ok((server, port));
    }
    Ok((server, websocket))
}

/// Messages per second from one publisher to one subscriber, both over ws://.
async fn pubsub(port: u16, messages: usize, size: usize) -> Result<f64> {
    let url = format!("ws://127.0.0.1:{port}");
    let subscriber = async_nats::connect(&url).await?;
    let publisher = async_nats::connect(&url).await?;
    let mut subscription = subscriber.subscribe("bench").await?;
    // A round trip on the subscriber's own connection (answered "no responders"): the server
    // has the SUB before the first publish. A flush only writes.
    let _ = subscriber.request("bench.sync", "".into()).await;
    let payload = bytes::Bytes::from(vec![b'x'; size]);
    let started = Instant::now();
    let receiving = tokio::spawn(async move {
        let mut count = 0;
        while count < messages {
            match tokio::time::timeout(Duration::from_secs(20), subscription.next()).await {
                Ok(Some(_)) => count += 1,
                _ => break,
            }
        }
        count
    });
    for sent in 1..=messages {
        publisher.publish("bench", payload.clone()).await?;
        // Some pacing, the same for both servers: without it the publisher outruns the
        // subscriber and either server may drop it as a slow consumer.
        if sent % 1000 == 0 {
            publisher.flush().await?;
        }
    }
    publisher.flush().await?;
    let received = receiving.await?;
    let elapsed = started.elapsed();
    if received < messages {
        bail!("only {received} of {messages} messages arrived");
    }
    Ok(messages as f64 / elapsed.as_secs_f64())
}

/// Median and p99 request/reply round trip over ws:// (requester and responder both ws).
async fn latency(port: u16, requests: usize) -> Result<(Duration, Duration)> {
    let url = format!("ws://127.0.0.1:{port}");
    let responder = async_nats::connect(&url).await?;
    let requester = async_nats::connect(&url).await?;
    let mut service = responder.subscribe("echo").await?;
    responder.flush().await?;
    let answering = responder.clone();
    let task = tokio::spawn(async move {
        while let Some(request) = service.next().await {
            if let Some(reply) = request.reply {
                let _ = answering.publish(reply, request.payload).await;
            }
        }
    });
    // The responder's SUB travels on its own connection: wait (bounded) until a request
    // finds it before timing.
    let deadline = Instant::now() + Duration::from_secs(10);
    while requester.request("echo", "ping".into()).await.is_err() {
        if Instant::now() > deadline {
            bail!("the responder never answered");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        requester.request("echo", "ping".into()).await?;
        times.push(started.elapsed());
    }
    task.abort();
    times.sort();
    Ok((times[times.len() / 2], times[times.len() * 99 / 100]))
}

/// One server's name and its rounds' throughputs, request medians and p99s.
type Samples = (&'static str, Vec<f64>, Vec<Duration>, Vec<Duration>);

fn argument(arguments: &[String], name: &str) -> Option<String> {
    arguments
        .iter()
        .position(|argument| argument == name)
        .and_then(|index| arguments.get(index + 1).cloned())
}

#[tokio::main]
async fn main() -> Result<()> {
    let arguments: Vec<String> = std::env::args().collect();
    let ours = argument(&arguments, "--ours").context("--ours PATH")?;
    let reference = argument(&arguments, "--ref").context("--ref PATH")?;
    let rounds: usize = argument(&arguments, "--rounds").map_or(Ok(5), |text| text.parse())?;
    let messages: usize =
        argument(&arguments, "--messages").map_or(Ok(200_000), |text| text.parse())?;
    let size: usize = argument(&arguments, "--size").map_or(Ok(128), |text| text.parse())?;
    let cheap = match argument(&arguments, "--client").as_deref() {
        None | Some("raw") => true,
        Some("async-nats") => false,
        Some(other) => bail!("--client raw|async-nats, not {other}"),
    };
    match argument(&arguments, "--transport").as_deref() {
        None | Some("websocket") => {}
        Some("tcp") if cheap => raw::use_plain_tcp(),
        Some(other) => bail!("--transport websocket|tcp (tcp with --client raw), not {other}"),
    }
    match argument(&arguments, "--pin-clients").as_deref() {
        None => {}
        Some("split") if cheap => raw::pin_clients(0, 1),
        Some("same") if cheap => raw::pin_clients(0, 0),
        Some(other) => bail!("--pin-clients split|same (with --client raw), not {other}"),
    }
    // Where the request phase's threads ran (raw client only; see `raw::Placement`).
    let placement = arguments.iter().any(|argument| argument == "--placement");
    let mut results: Vec<Samples> = vec![
        ("nats-server", Vec::new(), Vec::new(), Vec::new()),
        ("rnats", Vec::new(), Vec::new(), Vec::new()),
    ];
    for round in 0..rounds {
        for (index, binary) in [&reference, &ours].into_iter().enumerate() {
            let name = results[index].0;
            let (server, port) = start(binary, name)?;
            let pid = placement.then(|| server.child.id());
            let (rate, (median, p99)) = if cheap {
                let (rate, (median, p99, placed)) =
                    tokio::task::spawn_blocking(move || -> Result<_> {
                        Ok((
                            raw::pubsub(port, messages, size)?,
                            raw::latency(port, 5_000, pid)?,
                        ))
                    })
                    .await?
                    .with_context(|| format!("{name} raw client"))?;
                if placement {
                    println!(
                        "round {round} {name:<11} placement: requester with responder {:>3.0}%, \
                         server with requester {:>3.0}%, with responder {:>3.0}%",
                        placed.requester_with_responder * 100.0,
                        placed.server_with_requester * 100.0,
                        placed.server_with_responder * 100.0
                    );
                }
                (rate, (median, p99))
            } else {
                let rate = pubsub(port, messages, size)
                    .await
                    .with_context(|| format!("{name} pubsub"))?;
                let times = latency(port, 5_000)
                    .await
                    .with_context(|| format!("{name} latency"))?;
                (rate, times)
            };
            drop(server);
            println!(
                "round {round} {:<11} pubsub {:>10.0} msgs/s  request p50 {:>7.1} us  p99 {:>7.1} us",
                results[index].0,
                rate,
                median.as_secs_f64() * 1e6,
                p99.as_secs_f64() * 1e6
            );
            results[index].1.push(rate);
            results[index].2.push(median);
            results[index].3.push(p99);
        }
    }
    let median_of = |values: &mut Vec<f64>| {
        values.sort_by(|a, b| a.total_cmp(b));
        values[values.len() / 2]
    };
    let mut summary = Vec::new();
    for (name, rates, medians, p99s) in &mut results {
        medians.sort();
        p99s.sort();
        let rate = median_of(rates);
        summary.push((rate, medians[medians.len() / 2], p99s[p99s.len() / 2]));
        println!(
            "median {name:<11} pubsub {rate:>10.0} msgs/s  request p50 {:>7.1} us  p99 {:>7.1} us",
            medians[medians.len() / 2].as_secs_f64() * 1e6,
            p99s[p99s.len() / 2].as_secs_f64() * 1e6
        );
    }
    println!(
        "ratio (rnats/nats-server throughput, nats-server/rnats latency): pubsub {:.2}  p50 {:.2}  p99 {:.2}",
        summary[1].0 / summary[0].0,
        summary[0].1.as_secs_f64() / summary[1].1.as_secs_f64(),
        summary[0].2.as_secs_f64() / summary[1].2.as_secs_f64()
    );
    Ok(())
}

//! curves: scale curves of rnats beside the real nats-server (issue 8). Starts both servers
//! itself (explicit binary paths, a free 127.0.0.1 port and a fresh store each), runs every
//! point against each server alternately for a few repetitions, writes the raw figures as CSV,
//! a markdown summary of the medians, and one PNG per curve.
//!
//! Curves: core fan-out vs subscribers, JetStream publish vs message size, the durable path
//! (ours with `sync_interval: always` vs nats-server's default), consume vs subjects in the
//! stream, restart time vs store size, and the scale curves of issue 21: connections (each
//! with 10 subscriptions: fan-out rate and RSS per connection) and streams (creation, publish
//! and STREAM.INFO rates, RSS). The workloads live in workloads.rs / restart.rs / scale.rs, the
//! processes in server.rs, the drawing in plot.rs, the runs and the outputs here and in report.rs.

mod client;
mod plot;
mod report;
mod restart;
mod scale;
mod server;
mod workloads;

use anyhow::{anyhow, bail, Context, Result};
use report::Sample;
use server::{Server, ServerSpec};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: curves --ours PATH --ref PATH [--quick] [--reps N]
              [--only fanout,publish,durable,consume,restart,connections,streams]
              [--out DIR] [--work DIR]
              [--font FILE.ttf] [--plot-only] [--restart-sizes MB,MB,...]
  --ours     our nats-server binary (e.g. target/release/nats-server)
  --ref      the real nats-server binary (explicit path, not a PATH lookup)
  --quick    fewer, smaller points (about 2-3 minutes) for trying it out
  --reps     repetitions per point and server (default 3, quick 2); the median is plotted
  --out      where data/*.csv, data/summary.md and *.png go (default: bench/curves)
  --work     where the servers' stores live during the run (default: a temp dir)
  --plot-only  redraw the PNGs and the summary from the CSVs in --out/data
  --restart-sizes  stream payloads of the restart curve in MB (default 100,500,1000,5000;
             quick 20,100)";

pub const CURVES: &[&str] = &[
    "fanout",
    "publish",
    "durable",
    "consume",
    "restart",
    "connections",
    "streams",
];

struct Options {
    ours: PathBuf,
    reference: PathBuf,
    quick: bool,
    repetitions: usize,
    only: Vec<String>,
    out: PathBuf,
    work: PathBuf,
    font: Option<PathBuf>,
    plot_only: bool,
    /// Stream payloads of the restart curve, in bytes (None: the default points).
    restart_sizes: Option<Vec<u64>>,
}

fn parse_options() -> Result<Options> {
    let mut arguments = std::env::args().skip(1);
    let mut ours = None;
    let mut reference = None;
    let mut quick = false;
    let mut repetitions = None;
    let mut only: Vec<String> = CURVES.iter().map(|name| name.to_string()).collect();
    let mut out = PathBuf::from("bench/curves");
    let mut work = std::env::temp_dir().join(format!("curves-{}", std::process::id()));
    let mut font = None;
    let mut plot_only = false;
    let mut restart_sizes = None;
    while let Some(argument) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .with_context(|| format!("{argument} needs a value"))
        };
        match argument.as_str() {
            "--ours" => ours = Some(PathBuf::from(value()?)),
            "--ref" => reference = Some(PathBuf::from(value()?)),
            "--quick" => quick = true,
            "--reps" => repetitions = Some(value()?.parse().context("--reps")?),
            "--only" => only = value()?.split(',').map(str::to_string).collect(),
            "--out" => out = PathBuf::from(value()?),
            "--work" => work = PathBuf::from(value()?),
            "--font" => font = Some(PathBuf::from(value()?)),
            "--plot-only" => plot_only = true,
            "--restart-sizes" => {
                let sizes = value()?
                    .split(',')
                    .map(|megabytes| megabytes.trim().parse::<u64>().map(|mb| mb * 1_000_000))
                    .collect::<Result<Vec<u64>, _>>()
                    .context("--restart-sizes")?;
                restart_sizes = Some(sizes);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    for name in &only {
        if !CURVES.contains(&name.as_str()) {
            bail!("unknown curve {name} (curves: {})", CURVES.join(","));
        }
    }
    let (ours, reference) = match (ours, reference, plot_only) {
        (Some(ours), Some(reference), _) => (ours, reference),
        (_, _, true) => (PathBuf::new(), PathBuf::new()),
        _ => bail!("--ours and --ref are required\n{USAGE}"),
    };
    Ok(Options {
        ours,
        reference,
        quick,
        repetitions: repetitions.unwrap_or(if quick { 2 } else { 3 }),
        only,
        out,
        work,
        font,
        plot_only,
        restart_sizes,
    })
}

/// The order in which the servers take their turn: rotated by point and repetition, so
/// neither side always runs first.
fn turn_order(point: usize, repetition: usize, servers: usize) -> Vec<usize> {
    (0..servers)
        .map(|offset| (offset + point + repetition) % servers)
        .collect()
}

/// Bounds one measurement and turns its outcome into a sample.
async fn bounded<T>(
    limit: Duration,
    future: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, future).await {
        Ok(outcome) => outcome,
        Err(_) => bail!("timed out after {limit:?}"),
    }
}

/// A server that died during a measurement is started again (fresh store) for the next one.
async fn revive(server: &mut Server, work: &Path, tag: &str) -> Result<()> {
    if server.has_died() {
        eprintln!("  {} died; starting it again", server.spec.label);
        let spec = server.spec.clone();
        *server = Server::start(&spec, work, tag).await?;
    }
    Ok(())
}

struct Run<'a> {
    options: &'a Options,
    samples: Vec<Sample>,
}

impl Run<'_> {
    fn record(&mut self, sample: Sample) {
        let shown = if sample.note.is_empty() {
            format!("{:.4}", sample.value)
        } else {
            format!("ERROR {}", sample.note)
        };
        eprintln!(
            "  {} {} x={} {} rep {}: {shown}",
            sample.curve, sample.metric, sample.x, sample.server, sample.repetition
        );
        self.samples.push(sample);
    }

    fn sample(
        &self,
        curve: &str,
        metric: &str,
        x: f64,
        server: &Server,
        repetition: usize,
    ) -> Sample {
        Sample {
            curve: curve.to_string(),
            metric: metric.to_string(),
            x,
            server: server.spec.label.clone(),
            repetition,
            value: f64::NAN,
            note: String::new(),
        }
    }

    fn record_outcome(&mut self, mut sample: Sample, outcome: &Result<f64>) {
        match outcome {
            Ok(value) => sample.value = *value,
            Err(error) => sample.note = format!("{error:#}"),
        }
        self.record(sample);
    }

    async fn start_all(&self, specs: &[ServerSpec], tag: &str) -> Result<Vec<Server>> {
        let mut servers = Vec::new();
        for spec in specs {
            servers.push(Server::start(spec, &self.options.work, tag).await?);
        }
        Ok(servers)
    }

    async fn fanout(&mut self, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        let points: &[usize] = if quick {
            &[1, 10, 100]
        } else {
            &[1, 10, 100, 1000]
        };
        let deliveries: u64 = if quick { 200_000 } else { 1_000_000 };
        let mut servers = self.start_all(specs, "fanout").await?;
        for (point, &subscribers) in points.iter().enumerate() {
            let messages = (deliveries / subscribers as u64).max(500);
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    let server = &mut servers[index];
                    let url = server.url();
                    let outcome = bounded(
                        Duration::from_secs(300),
                        workloads::core_fanout(&url, subscribers, messages, 128),
                    )
                    .await;
                    let sample = self.sample(
                        "fanout",
                        "msgs_per_s",
                        subscribers as f64,
                        server,
                        repetition,
                    );
                    self.record_outcome(sample, &outcome);
                    revive(server, &self.options.work, "fanout").await?;
                }
            }
        }
        Ok(())
    }

    /// publish (both at their defaults) and durable (ours fsyncing every batch vs
    /// nats-server's default and nats-server fsyncing too): the same workload.
    async fn publish(&mut self, curve: &str, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        let sizes: &[usize] = if quick {
            &[16, 1024, 131_072, 1_048_576]
        } else {
            &[16, 128, 1024, 16_384, 131_072, 1_048_576]
        };
        let budget: u64 = if quick { 50_000_000 } else { 200_000_000 };
        let time_limit = Duration::from_secs_f64(if quick { 1.5 } else { 4.0 });
        let mut servers = self.start_all(specs, curve).await?;
        for (point, &size) in sizes.iter().enumerate() {
            let count = (budget / size as u64).clamp(100, 300_000);
            let window = (64 * 1024 * 1024 / size).clamp(8, 256);
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    let server = &mut servers[index];
                    let url = server.url();
                    let outcome = bounded(
                        Duration::from_secs(120),
                        workloads::js_publish(&url, size, count, window, time_limit),
                    )
                    .await;
                    let rates = outcome.as_ref().map(|run| run.messages_per_second);
                    let megabytes = outcome.as_ref().map(|run| run.megabytes_per_second);
                    let acked = outcome.as_ref().map(|run| run.acked as f64);
                    let sample = self.sample(curve, "msgs_per_s", size as f64, server, repetition);
                    self.record_outcome(
                        sample,
                        &rates.map_err(|error| anyhow::anyhow!("{error:#}")),
                    );
                    if let (Ok(megabytes), Ok(acked)) = (megabytes, acked) {
                        let sample =
                            self.sample(curve, "mb_per_s", size as f64, server, repetition);
                        self.record_outcome(sample, &Ok(megabytes));
                        let sample = self.sample(curve, "acked", size as f64, server, repetition);
                        self.record_outcome(sample, &Ok(acked));
                    }
                    revive(server, &self.options.work, curve).await?;
                }
            }
        }
        Ok(())
    }

    async fn consume(&mut self, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        let points: &[u64] = if quick {
            &[1, 100, 10_000]
        } else {
            &[1, 100, 10_000, 1_000_000]
        };
        let base: u64 = if quick { 50_000 } else { 200_000 };
        let mut servers = self.start_all(specs, "consume").await?;
        for (point, &subjects) in points.iter().enumerate() {
            let count = base.max(subjects);
            let mut filled = vec![false; servers.len()];
            for index in turn_order(point, 0, servers.len()) {
                let server = &mut servers[index];
                let outcome = bounded(
                    Duration::from_secs(300),
                    workloads::prefill_subjects(&server.url(), subjects, count, 128),
                )
                .await;
                filled[index] = outcome.is_ok();
                let sample =
                    self.sample("consume", "prefill_msgs_per_s", subjects as f64, server, 0);
                self.record_outcome(sample, &outcome);
                revive(server, &self.options.work, "consume").await?;
            }
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    if !filled[index] {
                        continue;
                    }
                    let server = &mut servers[index];
                    let durable = format!("CURVES_C{point}_{repetition}");
                    let outcome = bounded(
                        Duration::from_secs(300),
                        workloads::consume(&server.url(), count, 500, &durable),
                    )
                    .await;
                    let sample =
                        self.sample("consume", "msgs_per_s", subjects as f64, server, repetition);
                    self.record_outcome(sample, &outcome);
                    if server.has_died() {
                        filled[index] = false;
                    }
                    revive(server, &self.options.work, "consume").await?;
                }
            }
            for (index, server) in servers.iter().enumerate() {
                if filled[index] {
                    let _ = workloads::delete_consume_stream(&server.url()).await;
                }
            }
        }
        Ok(())
    }

    /// N connections with 10 subscriptions each, on a fresh server per run: the fan-out rate
    /// to all of them and the server's RSS per connection (with them in place, less before).
    async fn connections(&mut self, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        let limit = scale::connection_limit();
        let points: Vec<usize> = if quick {
            vec![1, 100, 2000]
        } else {
            vec![1, 100, 10_000, 20_000]
        };
        let deliveries: u64 = if quick { 200_000 } else { 1_000_000 };
        for (point, &wanted) in points.iter().enumerate() {
            let count = wanted.min(limit);
            let messages = (deliveries / count as u64).max(50);
            let x = count as f64;
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, specs.len()) {
                    let tag = format!("connections{point}");
                    let server = Server::start(&specs[index], &self.options.work, &tag).await?;
                    let before = server.rss();
                    let url = server.url();
                    let outcome = bounded(Duration::from_secs(600), async {
                        let connected = scale::connect_subscribers(&url, count).await?;
                        let with = server.rss();
                        let rate = scale::fan_out(connected, messages, 128).await?;
                        Ok((rate, with))
                    })
                    .await;
                    let rate = outcome.as_ref().map(|(rate, _)| *rate);
                    let sample = self.sample("connections", "msgs_per_s", x, &server, repetition);
                    self.record_outcome(sample, &rate.map_err(|error| anyhow!("{error:#}")));
                    if let (Ok((_, Some(with))), Some(before)) = (&outcome, before) {
                        let per_connection = with.saturating_sub(before) as f64 / x;
                        let sample = self.sample(
                            "connections",
                            "rss_per_connection_bytes",
                            x,
                            &server,
                            repetition,
                        );
                        self.record_outcome(sample, &Ok(per_connection));
                        let sample =
                            self.sample("connections", "rss_bytes", x, &server, repetition);
                        self.record_outcome(sample, &Ok(*with as f64));
                    }
                }
            }
        }
        Ok(())
    }

    /// K file streams on fresh servers per point: the creation rate (32 in flight), the RSS
    /// with them, then per repetition a publish spread over all of them and STREAM.INFO
    /// requests over all of them.
    async fn streams(&mut self, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        let points: &[usize] = if quick {
            &[1, 100, 1000]
        } else {
            &[1, 100, 1000, 10_000]
        };
        let (messages, requests) = if quick {
            (20_000, 5_000)
        } else {
            (100_000, 20_000)
        };
        for (point, &count) in points.iter().enumerate() {
            let x = count as f64;
            let tag = format!("streams{point}");
            let mut servers = self.start_all(specs, &tag).await?;
            let mut ready = vec![false; servers.len()];
            for index in turn_order(point, 0, servers.len()) {
                let server = &servers[index];
                let before = server.rss();
                let outcome = bounded(
                    Duration::from_secs(900),
                    scale::create_streams(&server.url(), count, 32),
                )
                .await;
                ready[index] = outcome.is_ok();
                let sample = self.sample("streams", "create_per_s", x, server, 0);
                self.record_outcome(sample, &outcome);
                if let (true, Some(with), Some(before)) = (ready[index], server.rss(), before) {
                    let sample = self.sample("streams", "rss_bytes", x, server, 0);
                    self.record_outcome(sample, &Ok(with as f64));
                    let per_stream = with.saturating_sub(before) as f64 / x;
                    let sample = self.sample("streams", "rss_per_stream_bytes", x, server, 0);
                    self.record_outcome(sample, &Ok(per_stream));
                }
            }
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    if !ready[index] {
                        continue;
                    }
                    let server = &mut servers[index];
                    let url = server.url();
                    let outcome = bounded(
                        Duration::from_secs(300),
                        scale::publish_over_streams(&url, count, messages, 128, 256),
                    )
                    .await;
                    let sample = self.sample("streams", "msgs_per_s", x, server, repetition);
                    self.record_outcome(sample, &outcome);
                    let outcome = bounded(
                        Duration::from_secs(300),
                        scale::info_over_streams(&url, count, requests, 64),
                    )
                    .await;
                    let sample = self.sample("streams", "info_per_s", x, server, repetition);
                    self.record_outcome(sample, &outcome);
                    if server.has_died() {
                        ready[index] = false;
                    }
                }
            }
        }
        Ok(())
    }

    async fn restart(&mut self, specs: &[ServerSpec]) -> Result<()> {
        let quick = self.options.quick;
        const MB: u64 = 1_000_000;
        let options = self.options;
        let points: &[u64] = match &options.restart_sizes {
            Some(sizes) => sizes,
            None if quick => &[20 * MB, 100 * MB],
            None => &[100 * MB, 500 * MB, 1000 * MB, 5000 * MB],
        };
        for (point, &target) in points.iter().enumerate() {
            // both stores side by side when the disk has room (with 4 GB to spare for the
            // machine's other users), else one server after the other
            let room = free_disk_bytes(&self.options.work)?;
            if room > specs.len() as u64 * target * 11 / 10 + 4_000_000_000 {
                self.restart_point(point, target, specs).await?;
            } else {
                eprintln!("  {} GB free: one server at a time", room / 1_000_000_000);
                for spec in specs {
                    self.restart_point(point, target, std::slice::from_ref(spec))
                        .await?;
                }
            }
        }
        Ok(())
    }

    async fn restart_point(
        &mut self,
        point: usize,
        target: u64,
        specs: &[ServerSpec],
    ) -> Result<()> {
        let size = 4096usize;
        let kill_repetitions = if self.options.quick { 1 } else { 2 };
        {
            let count = target / size as u64;
            let x = target as f64;
            let tag = format!("restart{point}");
            let mut servers = self.start_all(specs, &tag).await?;
            let mut held = vec![None; servers.len()];
            for index in turn_order(point, 0, servers.len()) {
                let server = &mut servers[index];
                let outcome = bounded(
                    Duration::from_secs(900),
                    restart::append(server, 0, count, size),
                )
                .await;
                if outcome.is_ok() {
                    held[index] = Some(count);
                    let sample = self.sample("restart", "store_bytes", x, server, 0);
                    self.record_outcome(sample, &Ok(server.store_bytes() as f64));
                }
                let sample = self.sample("restart", "fill_msgs_per_s", x, server, 0);
                self.record_outcome(sample, &outcome);
            }
            let limit = Duration::from_secs(600);
            for repetition in 0..self.options.repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    let Some(expected) = held[index] else {
                        continue;
                    };
                    let server = &mut servers[index];
                    let stopped = server.stop_graceful(Duration::from_secs(120)).await;
                    let sample = self.sample("restart", "stop_s", x, server, repetition);
                    self.record_outcome(sample, &stopped.map(|took| took.as_secs_f64()));
                    server.kill();
                    let outcome = restart::timed_start(server, expected, limit).await;
                    if outcome.is_err() {
                        held[index] = None;
                    } else if let Some(peak) = server.peak_rss() {
                        // a fresh process: its peak is what recovering the store cost
                        let sample = self.sample(
                            "restart",
                            "recovery_peak_rss_bytes",
                            x,
                            server,
                            repetition,
                        );
                        self.record_outcome(sample, &Ok(peak as f64));
                    }
                    let started = outcome.is_ok();
                    let sample = self.sample("restart", "restart_s", x, server, repetition);
                    self.record_outcome(sample, &outcome.map(|took| took.as_secs_f64()));
                    if started {
                        // what a lazily rebuilt duplicate window costs the first publisher
                        let outcome =
                            restart::first_deduplicated_publish(server, expected, size).await;
                        held[index] = outcome.is_ok().then_some(expected + 1);
                        let sample =
                            self.sample("restart", "first_msg_id_publish_s", x, server, repetition);
                        self.record_outcome(sample, &outcome.map(|took| took.as_secs_f64()));
                    }
                }
            }
            for repetition in 0..kill_repetitions {
                for index in turn_order(point, repetition, servers.len()) {
                    let Some(expected) = held[index] else {
                        continue;
                    };
                    let server = &mut servers[index];
                    // fresh acked writes that the kill interrupts before any graceful flush
                    let extra = 1000;
                    if let Err(error) = restart::append(server, expected, extra, size).await {
                        eprintln!("  {}: append before kill -9: {error:#}", server.spec.label);
                        held[index] = None;
                        continue;
                    }
                    server.kill();
                    let outcome = restart::timed_start(server, expected + extra, limit).await;
                    held[index] = outcome.is_ok().then_some(expected + extra);
                    let sample = self.sample("restart", "kill9_restart_s", x, server, repetition);
                    self.record_outcome(sample, &outcome.map(|took| took.as_secs_f64()));
                }
            }
            // dropping the servers stops them and removes their stores (up to 2 x 5 GB)
            drop(servers);
        }
        Ok(())
    }
}

fn free_disk_bytes(path: &Path) -> Result<u64> {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: statvfs fills the zeroed struct we own from a NUL-terminated path.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(name.as_ptr(), &mut stats) } != 0 {
        bail!("statvfs {path:?}: {}", std::io::Error::last_os_error());
    }
    Ok(stats.f_bavail as u64 * stats.f_frsize as u64)
}

async fn run(options: &Options) -> Result<Vec<Sample>> {
    for binary in [&options.ours, &options.reference] {
        if !binary.is_file() {
            bail!("{binary:?} is not a file");
        }
    }
    std::fs::create_dir_all(&options.work)?;
    let ours = ServerSpec {
        label: report::OURS.to_string(),
        binary: options.ours.clone(),
        sync_always: false,
    };
    let reference = ServerSpec {
        label: report::REFERENCE.to_string(),
        binary: options.reference.clone(),
        sync_always: false,
    };
    let mut run = Run {
        options,
        samples: Vec::new(),
    };
    for curve in &options.only {
        let started = Instant::now();
        eprintln!("curve {curve}");
        let pair = [ours.clone(), reference.clone()];
        let outcome = match curve.as_str() {
            "fanout" => run.fanout(&pair).await,
            "publish" => run.publish("publish", &pair).await,
            "durable" => {
                let durable = [
                    ServerSpec {
                        label: report::OURS_ALWAYS.to_string(),
                        sync_always: true,
                        ..ours.clone()
                    },
                    reference.clone(),
                    ServerSpec {
                        label: report::REFERENCE_ALWAYS.to_string(),
                        sync_always: true,
                        ..reference.clone()
                    },
                ];
                run.publish("durable", &durable).await
            }
            "consume" => run.consume(&pair).await,
            "restart" => run.restart(&pair).await,
            "connections" => run.connections(&pair).await,
            "streams" => run.streams(&pair).await,
            other => bail!("unknown curve {other}"),
        };
        if let Err(error) = outcome {
            eprintln!("curve {curve} stopped: {error:#}");
        }
        eprintln!(
            "curve {curve} took {:.0} s",
            started.elapsed().as_secs_f64()
        );
        let samples: Vec<Sample> = run
            .samples
            .iter()
            .filter(|sample| &sample.curve == curve)
            .cloned()
            .collect();
        report::write_csv(&options.out, curve, &samples)?;
        report::plot_curve(&options.out, curve, &samples)?;
    }
    let _ = std::fs::remove_dir_all(&options.work);
    Ok(run.samples)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let options = parse_options()?;
    let font = plot::register_font(options.font.as_deref())?;
    eprintln!("font {font:?}");
    if !options.plot_only {
        run(&options).await?;
    }
    let mut samples = Vec::new();
    for curve in CURVES {
        match report::read_csv(&options.out, curve) {
            Ok(found) => {
                if options.plot_only && options.only.iter().any(|name| name == curve) {
                    report::plot_curve(&options.out, curve, &found)?;
                }
                samples.extend(found);
            }
            Err(error) => eprintln!("no data for {curve}: {error:#}"),
        }
    }
    let summary = report::summary(&samples);
    std::fs::write(options.out.join("data").join("summary.md"), &summary)?;
    println!("{summary}");
    Ok(())
}

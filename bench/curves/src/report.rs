//! The outputs: raw samples as CSV (one file per curve under data/), the markdown summary of
//! medians and ratios, and each curve's chart definition for plot.rs. Called by main.rs.

use crate::plot::{self, Chart, Series};
use anyhow::{bail, Context, Result};
use plotters::style::RGBColor;
use std::fmt::Write as _;
use std::path::Path;

pub const OURS: &str = "rnats";
pub const REFERENCE: &str = "nats-server";
pub const OURS_ALWAYS: &str = "rnats sync always";
pub const REFERENCE_ALWAYS: &str = "nats-server sync always";

#[derive(Clone, Debug)]
pub struct Sample {
    pub curve: String,
    pub metric: String,
    pub x: f64,
    pub server: String,
    pub repetition: usize,
    /// NaN when the run failed (then `note` says why).
    pub value: f64,
    pub note: String,
}

const HEADER: &str = "curve,metric,x,server,repetition,value,note";

pub fn write_csv(out: &Path, curve: &str, samples: &[Sample]) -> Result<()> {
    let directory = out.join("data");
    std::fs::create_dir_all(&directory)?;
    let mut text = format!("{HEADER}\n");
    for sample in samples {
        let note = sample.note.replace([',', '\n', '\r'], ";");
        let value = if sample.value.is_finite() {
            format!("{}", sample.value)
        } else {
            String::new()
        };
        writeln!(
            text,
            "{},{},{},{},{},{value},{note}",
            sample.curve, sample.metric, sample.x, sample.server, sample.repetition
        )?;
    }
    std::fs::write(directory.join(format!("{curve}.csv")), text)?;
    Ok(())
}

pub fn read_csv(out: &Path, curve: &str) -> Result<Vec<Sample>> {
    let path = out.join("data").join(format!("{curve}.csv"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {path:?}"))?;
    let mut samples = Vec::new();
    for line in text.lines().skip(1).filter(|line| !line.is_empty()) {
        let fields: Vec<&str> = line.splitn(7, ',').collect();
        let [curve, metric, x, server, repetition, value, note] = fields[..] else {
            bail!("{path:?}: malformed line {line:?}");
        };
        samples.push(Sample {
            curve: curve.to_string(),
            metric: metric.to_string(),
            x: x.parse().with_context(|| format!("x in {line:?}"))?,
            server: server.to_string(),
            repetition: repetition
                .parse()
                .with_context(|| format!("repetition in {line:?}"))?,
            value: if value.is_empty() {
                f64::NAN
            } else {
                value.parse()?
            },
            note: note.to_string(),
        });
    }
    Ok(samples)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|value| value.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn unique<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut found: Vec<T> = Vec::new();
    for item in items {
        if !found.contains(&item) {
            found.push(item);
        }
    }
    found
}

/// Median of one (metric, x, server) cell, and how many of its runs failed.
fn cell(samples: &[Sample], metric: &str, x: f64, server: &str) -> (f64, usize) {
    let matching: Vec<&Sample> = samples
        .iter()
        .filter(|sample| sample.metric == metric && sample.x == x && sample.server == server)
        .collect();
    let failed = matching
        .iter()
        .filter(|sample| !sample.value.is_finite())
        .count();
    (
        median(matching.iter().map(|sample| sample.value).collect()),
        failed,
    )
}

fn x_text(curve: &str, x: f64) -> String {
    match curve {
        "restart" => plot::format_decimal_bytes(x),
        "publish" | "durable" => plot::format_bytes(x),
        _ => plot::format_count(x),
    }
}

/// Durations in seconds ("restart_s"), as opposed to rates ("msgs_per_s").
fn is_time(metric: &str) -> bool {
    metric.ends_with("_s") && !metric.ends_with("per_s")
}

fn value_text(metric: &str, value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    if is_time(metric) {
        plot::format_seconds(value)
    } else if metric == "store_bytes" {
        plot::format_decimal_bytes(value)
    } else if metric.ends_with("bytes") {
        plot::format_bytes(value)
    } else if metric == "mb_per_s" {
        format!("{value:.1}")
    } else {
        plot::format_count(value)
    }
}

/// One markdown table per (curve, metric): medians per server and the ratio (> 1 = rnats
/// better: ours/theirs for rates, theirs/ours for times and bytes).
pub fn summary(samples: &[Sample]) -> String {
    let mut text = String::new();
    for curve in unique(samples.iter().map(|sample| sample.curve.clone())) {
        let of_curve: Vec<Sample> = samples
            .iter()
            .filter(|s| s.curve == curve)
            .cloned()
            .collect();
        let servers = unique(of_curve.iter().map(|sample| sample.server.clone()));
        let ours = servers
            .iter()
            .find(|server| server.starts_with(OURS))
            .cloned();
        let theirs = servers
            .iter()
            .find(|server| server.as_str() == REFERENCE)
            .cloned();
        for metric in unique(of_curve.iter().map(|sample| sample.metric.clone())) {
            if metric == "acked" {
                continue;
            }
            let _ = writeln!(text, "\n{curve} / {metric} (median)\n");
            let x_name = match curve.as_str() {
                "fanout" => "subscribers",
                "publish" | "durable" => "payload",
                "consume" => "subjects",
                "restart" => "stream payload",
                "connections" => "connections",
                "streams" => "streams",
                _ => "x",
            };
            let _ = write!(text, "| {x_name} |");
            for server in &servers {
                let _ = write!(text, " {server} |");
            }
            let _ = writeln!(text, " ratio |");
            let _ = writeln!(text, "|{}", " --- |".repeat(servers.len() + 2));
            let xs = unique(
                of_curve
                    .iter()
                    .filter(|s| s.metric == metric)
                    .map(|s| s.x.to_bits()),
            );
            for bits in xs {
                let x = f64::from_bits(bits);
                let _ = write!(text, "| {} |", x_text(&curve, x));
                for server in &servers {
                    let (value, failed) = cell(&of_curve, &metric, x, server);
                    let errors = if failed > 0 {
                        format!(" ({failed} failed)")
                    } else {
                        String::new()
                    };
                    let _ = write!(text, " {}{errors} |", value_text(&metric, value));
                }
                let ratio = match (&ours, &theirs) {
                    (Some(ours), Some(theirs)) => {
                        let (mine, _) = cell(&of_curve, &metric, x, ours);
                        let (reference, _) = cell(&of_curve, &metric, x, theirs);
                        let smaller_is_better = is_time(&metric) || metric.ends_with("bytes");
                        let ratio = if smaller_is_better {
                            reference / mine
                        } else {
                            mine / reference
                        };
                        if ratio.is_finite() {
                            format!("{ratio:.2}")
                        } else {
                            "n/a".into()
                        }
                    }
                    _ => String::new(),
                };
                let _ = writeln!(text, " {ratio} |");
            }
        }
    }
    text
}

fn color_of(server: &str, metric: &str) -> RGBColor {
    match (server, metric) {
        (OURS | OURS_ALWAYS, "kill9_restart_s" | "info_per_s") => RGBColor(255, 127, 14),
        (OURS | OURS_ALWAYS, "create_per_s") => RGBColor(140, 20, 20),
        (OURS | OURS_ALWAYS, _) => RGBColor(214, 39, 40),
        (REFERENCE_ALWAYS, _) => RGBColor(44, 160, 44),
        (_, "kill9_restart_s" | "info_per_s") => RGBColor(148, 103, 189),
        (_, "create_per_s") => RGBColor(20, 60, 140),
        _ => RGBColor(31, 119, 180),
    }
}

/// One PNG of a curve: the file's name, its texts, the metrics drawn and the y scale.
struct ChartSpec {
    file: &'static str,
    title: &'static str,
    x_label: &'static str,
    y_label: &'static str,
    metrics: &'static [&'static str],
    log_y: bool,
}

/// The charts drawn for `curve` (most curves have one).
fn charts(curve: &str) -> Result<Vec<ChartSpec>> {
    let chart = |file, title, x_label, y_label, metrics, log_y| ChartSpec {
        file,
        title,
        x_label,
        y_label,
        metrics,
        log_y,
    };
    Ok(match curve {
        "fanout" => vec![chart(
            "fanout",
            "Core fan-out: delivered msgs/s vs subscribers (128 B, 1 publisher)",
            "subscriber connections",
            "delivered messages / s (all subscribers)",
            &["msgs_per_s"],
            false,
        )],
        "publish" => vec![chart(
            "publish",
            "JetStream async publish (file, acked) vs message size",
            "payload bytes",
            "acked messages / s (log)",
            &["msgs_per_s"],
            true,
        )],
        "durable" => vec![chart(
            "durable",
            "Durable path: rnats sync_interval always vs nats-server default",
            "payload bytes",
            "acked messages / s (log)",
            &["msgs_per_s"],
            true,
        )],
        "consume" => vec![chart(
            "consume",
            "JetStream pull consume (explicit ack) vs subjects in the stream",
            "distinct subjects in the stream",
            "consumed + acked messages / s",
            &["msgs_per_s"],
            false,
        )],
        "restart" => vec![chart(
            "restart",
            "Restart: spawn until STREAM.INFO shows every message, vs store size",
            "stream payload (4 KiB messages over 1000 subjects)",
            "seconds (log)",
            &["restart_s", "kill9_restart_s"],
            true,
        )],
        "connections" => vec![
            chart(
                "connections",
                "Connections with 10 subscriptions each: fan-out to all (128 B, 1 publisher)",
                "client connections (raw sockets, 10 subscriptions each)",
                "delivered messages / s (log)",
                &["msgs_per_s"],
                true,
            ),
            chart(
                "connections-rss",
                "Server RSS per connection (10 subscriptions each)",
                "client connections",
                "RSS with them less RSS before, per connection (log)",
                &["rss_per_connection_bytes"],
                true,
            ),
        ],
        "streams" => vec![
            chart(
                "streams",
                "File streams: create (32 in flight), publish over all, STREAM.INFO over all",
                "streams",
                "operations / s (log)",
                &["msgs_per_s", "info_per_s", "create_per_s"],
                true,
            ),
            chart(
                "streams-rss",
                "Server RSS with N file streams",
                "streams",
                "RSS (log)",
                &["rss_bytes"],
                true,
            ),
        ],
        other => bail!("no chart for {other}"),
    })
}

pub fn plot_curve(out: &Path, curve: &str, samples: &[Sample]) -> Result<()> {
    for spec in charts(curve)? {
        plot_chart(out, curve, &spec, samples)?;
    }
    Ok(())
}

fn plot_chart(out: &Path, curve: &str, spec: &ChartSpec, samples: &[Sample]) -> Result<()> {
    let mut series = Vec::new();
    for metric in spec.metrics {
        for server in unique(samples.iter().map(|sample| sample.server.clone())) {
            let xs = unique(
                samples
                    .iter()
                    .filter(|s| &s.metric == metric && s.server == server)
                    .map(|s| s.x.to_bits()),
            );
            let points: Vec<(f64, f64)> = xs
                .into_iter()
                .map(f64::from_bits)
                .map(|x| (x, cell(samples, metric, x, &server).0))
                .collect();
            if points.iter().all(|(_, y)| !y.is_finite()) {
                continue;
            }
            let label = match (curve, *metric) {
                (_, "restart_s") => format!("{server} after graceful stop"),
                (_, "kill9_restart_s") => format!("{server} after kill -9"),
                ("streams", "msgs_per_s") => format!("{server} publish"),
                (_, "info_per_s") => format!("{server} STREAM.INFO"),
                (_, "create_per_s") => format!("{server} create"),
                _ => server.clone(),
            };
            series.push(Series {
                label,
                color: color_of(&server, metric),
                points,
            });
        }
    }
    if series.is_empty() {
        eprintln!("{}: no successful point to plot", spec.file);
        return Ok(());
    }
    let bytes = spec.metrics.iter().all(|metric| metric.ends_with("bytes"));
    let chart = Chart {
        title: spec.title,
        x_label: spec.x_label,
        y_label: spec.y_label,
        x_format: if curve == "restart" {
            plot::format_decimal_bytes
        } else {
            plot::format_count
        },
        y_format: if spec.log_y && curve == "restart" {
            plot::format_seconds
        } else if bytes {
            plot::format_bytes
        } else {
            plot::format_count
        },
        log_y: spec.log_y,
        legend_left: curve == "restart",
        series,
    };
    plot::draw(&chart, &out.join(format!("{}.png", spec.file)))
}

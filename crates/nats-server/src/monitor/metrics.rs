//! `/metrics`: the monitoring figures in the Prometheus text format (OpenMetrics, through
//! prometheus-client), named and labelled as prometheus-nats-exporter names them so existing
//! dashboards work unchanged: every number of `/varz` as `gnatsd_varz_<field>`, the `/connz`
//! sums as `gnatsd_connz_*`, `/subsz` and `/routez` numbers as `gnatsd_subsz_*` and
//! `gnatsd_routez_*`, and JetStream's server, per-stream and per-consumer figures as
//! `jetstream_server_*`, `jetstream_stream_*` and `jetstream_consumer_*`. All are gauges, as the
//! exporter makes them. Built from the same producers as the JSON endpoints, at each scrape.

use super::{connz, routez, subsz, varz};
use crate::server::Server;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// The OpenMetrics text format's media type, which Prometheus negotiates.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(String, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Gauges by name, each a family over its label sets; registered once all are set.
#[derive(Default)]
struct Gauges {
    families: BTreeMap<String, (String, Family<Labels, FloatGauge>)>,
}

impl Gauges {
    fn set(&mut self, name: &str, help: &str, labels: &Labels, value: f64) {
        let (_, family) = self
            .families
            .entry(name.to_string())
            .or_insert_with(|| (help.to_string(), Family::default()));
        family.get_or_create(labels).set(value);
    }

    fn render(self) -> String {
        let mut registry = Registry::default();
        for (name, (help, family)) in self.families {
            registry.register(name, help, family);
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &registry);
        text
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// Every top-level number of `body` as `<prefix>_<field>{server_id}`, as the exporter's generic
/// collector turns an endpoint into gauges.
fn numbers(gauges: &mut Gauges, prefix: &str, body: &Value, server_labels: &Labels) {
    let Value::Object(fields) = body else {
        return;
    };
    for (field, value) in fields {
        if let Some(number) = value.as_f64() {
            gauges.set(&format!("{prefix}_{field}"), field, server_labels, number);
        }
    }
}

pub fn render(server: &Server) -> String {
    let mut gauges = Gauges::default();
    let server_labels = labels(&[("server_id", &server.server_id)]);

    let varz = varz::varz(server);
    numbers(&mut gauges, "gnatsd_varz", &varz, &server_labels);
    for field in ["server_id", "server_name", "version"] {
        if let Some(text) = varz[field].as_str() {
            let mut with_value = server_labels.clone();
            with_value.push(("value".into(), text.into()));
            gauges.set(&format!("gnatsd_varz_{field}"), field, &with_value, 1.0);
        }
    }

    let connz = connz::connz(server, &connz::ConnzOptions::default_page());
    for field in ["num_connections", "total", "offset", "limit"] {
        let value = connz[field].as_f64().unwrap_or(0.0);
        gauges.set(
            &format!("gnatsd_connz_{field}"),
            field,
            &server_labels,
            value,
        );
    }
    let connections = connz["connections"].as_array().cloned().unwrap_or_default();
    for field in [
        "pending_bytes",
        "subscriptions",
        "in_bytes",
        "out_bytes",
        "in_msgs",
        "out_msgs",
    ] {
        let sum: f64 = connections
            .iter()
            .filter_map(|connection| connection[field].as_f64())
            .sum();
        gauges.set(&format!("gnatsd_connz_{field}"), field, &server_labels, sum);
    }

    let subsz = subsz::subsz(server, &subsz::SubszOptions::default_page());
    numbers(&mut gauges, "gnatsd_subsz", &subsz, &server_labels);
    let routez = routez::routez(server, &routez::RoutezOptions::default());
    numbers(&mut gauges, "gnatsd_routez", &routez, &server_labels);

    jetstream(&mut gauges, server);
    gauges.render()
}

/// The exporter's `jsz` collector for one server without clustering: it is its own meta and
/// stream leader, and the only account is `$G`.
fn jetstream(gauges: &mut Gauges, server: &Server) {
    let jetstream = server.jetstream.get();
    let jsz = super::jsz::jsz(server, &super::jsz::JszOptions::default());
    let domain = jsz["config"]["domain"].as_str().unwrap_or("").to_string();
    let server_pairs: Vec<(&str, &str)> = vec![
        ("server_id", &server.server_id),
        ("server_name", &server.server_name),
        ("cluster", ""),
        ("domain", &domain),
        ("meta_leader", ""),
        ("is_meta_leader", "true"),
    ];
    let server_labels = labels(&server_pairs);
    let disabled = if jetstream.is_some() { 0.0 } else { 1.0 };
    let figure = |key: &str| jsz[key].as_f64().unwrap_or(0.0);
    let server_figures = [
        (
            "jetstream_server_jetstream_disabled",
            "JetStream disabled or not",
            disabled,
        ),
        (
            "jetstream_server_max_memory",
            "JetStream Max Memory",
            jsz["config"]["max_memory"].as_f64().unwrap_or(0.0),
        ),
        (
            "jetstream_server_max_storage",
            "JetStream Max Storage",
            jsz["config"]["max_storage"].as_f64().unwrap_or(0.0),
        ),
        (
            "jetstream_server_total_streams",
            "Total number of streams in JetStream",
            figure("streams"),
        ),
        (
            "jetstream_server_total_consumers",
            "Total number of consumers in JetStream",
            figure("consumers"),
        ),
        (
            "jetstream_server_total_messages",
            "Total number of stored messages in JetStream",
            figure("messages"),
        ),
        (
            "jetstream_server_total_message_bytes",
            "Total number of bytes stored in JetStream",
            figure("bytes"),
        ),
    ];
    for (name, help, value) in server_figures {
        gauges.set(name, help, &server_labels, value);
    }
    let Some(jetstream) = jetstream else {
        return;
    };
    for (stream, consumers) in jetstream.stream_details(true) {
        let mut stream_pairs = server_pairs.clone();
        stream_pairs.extend([
            ("account", "$G"),
            ("account_id", "$G"),
            ("stream_name", stream.config.name.as_str()),
            ("stream_leader", ""),
            ("is_stream_leader", "true"),
        ]);
        let stream_labels = labels(&stream_pairs);
        let state = &stream.state;
        let stream_figures = [
            (
                "jetstream_stream_total_messages",
                "Total number of messages from a stream",
                state.messages,
            ),
            (
                "jetstream_stream_total_bytes",
                "Total stored bytes from a stream",
                state.bytes,
            ),
            (
                "jetstream_stream_first_seq",
                "First sequence from a stream",
                state.first_seq,
            ),
            (
                "jetstream_stream_last_seq",
                "Last sequence from a stream",
                state.last_seq,
            ),
            (
                "jetstream_stream_consumer_count",
                "Total number of consumers from a stream",
                state.consumer_count,
            ),
        ];
        for (name, help, value) in stream_figures {
            gauges.set(name, help, &stream_labels, value as f64);
        }
        for consumer in consumers {
            let description = consumer
                .config
                .as_ref()
                .map(|config| config.description.clone())
                .unwrap_or_default();
            let created = created_text(consumer.created.unix_nanos());
            let mut consumer_pairs = stream_pairs.clone();
            consumer_pairs.extend([
                ("consumer_name", consumer.name.as_str()),
                ("consumer_leader", ""),
                ("is_consumer_leader", "true"),
                ("consumer_desc", description.as_str()),
                ("consumer_created", created.as_str()),
            ]);
            let consumer_labels = labels(&consumer_pairs);
            let consumer_figures = [
                (
                    "jetstream_consumer_delivered_consumer_seq",
                    "Latest sequence number of a stream consumer",
                    consumer.delivered.consumer_sequence,
                ),
                (
                    "jetstream_consumer_delivered_stream_seq",
                    "Latest sequence number of a stream",
                    consumer.delivered.stream_sequence,
                ),
                (
                    "jetstream_consumer_num_ack_pending",
                    "Number of pending acks from a consumer",
                    consumer.num_ack_pending,
                ),
                (
                    "jetstream_consumer_num_redelivered",
                    "Number of redelivered messages from a consumer",
                    consumer.num_redelivered,
                ),
                (
                    "jetstream_consumer_num_waiting",
                    "Number of inflight fetch requests from a pull consumer",
                    consumer.num_waiting,
                ),
                (
                    "jetstream_consumer_num_pending",
                    "Number of pending messages from a consumer",
                    consumer.num_pending,
                ),
                (
                    "jetstream_consumer_ack_floor_stream_seq",
                    "Number of ack floor stream seq from a consumer",
                    consumer.ack_floor.stream_sequence,
                ),
                (
                    "jetstream_consumer_ack_floor_consumer_seq",
                    "Number of ack floor consumer seq from a consumer",
                    consumer.ack_floor.consumer_sequence,
                ),
            ];
            for (name, help, value) in consumer_figures {
                gauges.set(name, help, &consumer_labels, value as f64);
            }
        }
    }
}

/// RFC 3339 to the second, as the exporter labels a consumer's creation time.
fn created_text(unix_nanos: i64) -> String {
    let Ok(time) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_nanos)) else {
        return String::new();
    };
    let time = time.replace_nanosecond(0).unwrap_or(time);
    time.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

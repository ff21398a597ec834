//! `/healthz`: `{"status":"ok"}` while the server serves, nats-server's checks of its options
//! (`js-enabled-only`, `js-server-only`, `js-meta-only`, `details` booleans; `account`, `stream`,
//! `consumer`) and its error bodies and statuses. In a JetStream cluster, not ok (503) until
//! this server is current with the meta leader and every replicated stream it holds is current
//! with its leader (`Meta::health`): a restarted node says ok only once caught up.

use super::query::Query;
use super::Refusal;
use crate::server::Server;
use serde_json::{json, Value};

/// The options of one `/healthz` read.
#[derive(Clone, Debug, Default)]
pub struct HealthOptions {
    pub js_enabled_only: bool,
    pub js_server_only: bool,
    pub js_meta_only: bool,
    pub details: bool,
    pub account: String,
    pub stream: String,
    pub consumer: String,
}

impl HealthOptions {
    pub fn from_query(query: &Query) -> Result<HealthOptions, Refusal> {
        Ok(HealthOptions {
            js_enabled_only: query.boolean("js-enabled-only")?,
            js_server_only: query.boolean("js-server-only")?,
            js_meta_only: query.boolean("js-meta-only")?,
            details: query.boolean("details")?,
            account: query.text("account").to_string(),
            stream: query.text("stream").to_string(),
            consumer: query.text("consumer").to_string(),
        })
    }
}

/// The HTTP status and the body (sent compact, as nats-server does).
pub fn healthz(server: &Server, options: &HealthOptions) -> (u16, Value) {
    if !options.consumer.is_empty() && options.stream.is_empty() {
        return error(
            400,
            options,
            "",
            "\"stream\" must not be empty when checking consumer health",
        );
    }
    if !options.stream.is_empty() && options.account.is_empty() {
        return error(
            400,
            options,
            "",
            "\"account\" must not be empty when checking stream health",
        );
    }
    if options.account.is_empty() {
        // Clustered JetStream: nats-server's meta and replica checks (`js-enabled-only` and
        // `js-server-only` skip them, `js-meta-only` stops after the meta group).
        if !options.js_enabled_only && !options.js_server_only {
            if let Some(meta) = server.meta.get() {
                if let Err(text) = meta.health(options.js_meta_only) {
                    return error(503, options, "JETSTREAM", &text);
                }
            }
        }
        return (200, json!({"status": "ok"}));
    }
    // One account, `$G`, which has JetStream once a stream exists (nats-server's
    // account-level JetStream appears with its first asset).
    let has_assets = server
        .jetstream
        .get()
        .is_some_and(|jetstream| !jetstream.stream_names().is_empty());
    if options.account != "$G" || !has_assets {
        let text = format!("JetStream account {:?} not found", options.account);
        return error(404, options, "ACCOUNT", &text);
    }
    if !options.stream.is_empty() {
        let found = server
            .jetstream
            .get()
            .is_some_and(|jetstream| jetstream.stream_names().contains(&options.stream));
        if !found {
            let text = format!(
                "JetStream stream '{} > {}' could not be found",
                options.account, options.stream
            );
            return error(404, options, "STREAM", &text);
        }
    }
    (200, json!({"status": "ok"}))
}

fn error(status: u16, options: &HealthOptions, kind: &str, text: &str) -> (u16, Value) {
    let word = if status == 400 {
        "error"
    } else {
        "unavailable"
    };
    if options.details && !kind.is_empty() {
        let mut entry = serde_json::Map::new();
        entry.insert("type".into(), json!(kind));
        if !options.account.is_empty() {
            entry.insert("account".into(), json!(options.account));
        }
        if kind == "STREAM" {
            entry.insert("stream".into(), json!(options.stream));
        }
        entry.insert("error".into(), json!(text));
        return (status, json!({"status": "error", "errors": [entry]}));
    }
    (status, json!({"status": word, "error": text}))
}

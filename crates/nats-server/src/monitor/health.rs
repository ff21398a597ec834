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
            // `js-enabled`: nats-server's deprecated name of the same check.
            js_enabled_only: query.boolean("js-enabled-only")? | query.boolean("js-enabled")?,
            js_server_only: query.boolean("js-server-only")?,
            js_meta_only: query.boolean("js-meta-only")?,
            details: query.boolean("details")?,
            account: query.text("account").to_string(),
            stream: query.text("stream").to_string(),
            consumer: query.text("consumer").to_string(),
        })
    }

    /// The options of a `$SYS.REQ.SERVER.<id|PING>.HEALTHZ` request body (nats-server's
    /// `HealthzOptions` JSON, unknown keys ignored); a value of the wrong type is refused
    /// with the text of Go's decoder, as nats-server answers it (code 400).
    pub fn from_json(body: &serde_json::Map<String, Value>) -> Result<HealthOptions, String> {
        let boolean = |key: &str| match body.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(other) => Err(wrong_type(key, other, "bool")),
        };
        let text = |key: &str| match body.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(other) => Err(wrong_type(key, other, "string")),
        };
        Ok(HealthOptions {
            js_enabled_only: boolean("js-enabled")? | boolean("js-enabled-only")?,
            js_server_only: boolean("js-server-only")?,
            js_meta_only: boolean("js-meta-only")?,
            account: text("account")?,
            stream: text("stream")?,
            consumer: text("consumer")?,
            details: boolean("details")?,
        })
    }
}

/// Go's `json: cannot unmarshal number into Go struct field HealthzEventOptions.account of
/// type string`.
fn wrong_type(key: &str, value: &Value, wanted: &str) -> String {
    let kind = match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    format!("json: cannot unmarshal {kind} into Go struct field HealthzEventOptions.{key} of type {wanted}")
}

/// The HTTP status and the body (sent compact, as nats-server does), checked in nats-server's
/// order: the request itself, `js-server-only`, JetStream running, `js-enabled-only`, the meta
/// group (and, without an account, this server's replicas), then the account, stream and
/// consumer named.
pub fn healthz(server: &Server, options: &HealthOptions) -> (u16, Value) {
    if !options.stream.is_empty() && options.account.is_empty() {
        let text = "\"account\" must not be empty when checking stream health";
        return error(400, options, "BAD_REQUEST", text);
    }
    if !options.consumer.is_empty() && options.stream.is_empty() {
        let text = "\"stream\" must not be empty when checking consumer health";
        return error(400, options, "BAD_REQUEST", text);
    }
    let Some(jetstream) = server.jetstream.get() else {
        return ok();
    };
    if options.js_server_only || options.js_enabled_only {
        return ok();
    }
    // Clustered JetStream: nats-server's meta check, then its replica checks (all this
    // server's without an account; `js-meta-only` stops after the meta group).
    if let Some(meta) = server.meta.get() {
        let meta_only = options.js_meta_only || !options.account.is_empty();
        if let Err(text) = meta.health(meta_only) {
            return error(503, options, "JETSTREAM", &text);
        }
    }
    if options.account.is_empty() || options.js_meta_only {
        return ok();
    }
    // In a cluster the account is found when the meta group assigned any stream of it (here
    // or elsewhere); its stream and consumer only when this server holds them.
    let assigned = server
        .meta
        .get()
        .is_some_and(|meta| meta.assigns_streams_of(&options.account));
    let found = jetstream.health_lookup(&options.account, &options.stream, &options.consumer);
    let Some((stream_found, consumer_found)) = found.or(assigned.then_some((false, false))) else {
        let text = format!("JetStream account {:?} not found", options.account);
        return error(404, options, "ACCOUNT", &text);
    };
    if !options.stream.is_empty() && !stream_found {
        let text = format!(
            "JetStream stream {:?} not found on account {:?}",
            options.stream, options.account
        );
        return error(404, options, "STREAM", &text);
    }
    if !options.consumer.is_empty() && !consumer_found {
        let text = format!(
            "JetStream consumer {:?} not found for stream {:?} on account {:?}",
            options.consumer, options.stream, options.account
        );
        return error(404, options, "CONSUMER", &text);
    }
    ok()
}

fn ok() -> (u16, Value) {
    (200, json!({"status": "ok"}))
}

fn error(status: u16, options: &HealthOptions, kind: &str, text: &str) -> (u16, Value) {
    let word = if status == 400 {
        "error"
    } else {
        "unavailable"
    };
    if options.details {
        let mut entry = serde_json::Map::new();
        entry.insert("type".into(), json!(kind));
        if kind != "BAD_REQUEST" && kind != "JETSTREAM" {
            entry.insert("account".into(), json!(options.account));
        }
        if kind == "STREAM" || kind == "CONSUMER" {
            entry.insert("stream".into(), json!(options.stream));
        }
        if kind == "CONSUMER" {
            entry.insert("consumer".into(), json!(options.consumer));
        }
        entry.insert("error".into(), json!(text));
        return (status, json!({"status": "error", "errors": [entry]}));
    }
    (status, json!({"status": word, "error": text}))
}

//! `/healthz`: `{"status":"ok"}` while the server serves, nats-server's checks of its options
//! (`js-enabled-only`, `js-server-only`, `js-meta-only`, `details` booleans; `account`, `stream`,
//! `consumer`) and its error bodies and statuses. In a JetStream cluster, not ok (503) until
//! this server is current with the meta leader (`Meta::health`) and every stream the meta group
//! placed on it (the named account's only, with an account) runs here and, replicated, is
//! current with its leader (`Meta::replica_not_current`): a restarted node says ok only once
//! caught up.

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
/// order: the request itself, `js-server-only`, JetStream running, `js-enabled-only`, then in a
/// cluster the meta group and the streams placed here ([`clustered`]), on a single server the
/// account, stream and consumer named.
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
    if let Some(meta) = server.meta.get() {
        return clustered(&meta, &jetstream, options);
    }
    if options.account.is_empty() || options.js_meta_only {
        return ok();
    }
    let found = jetstream.health_lookup(&options.account, &options.stream, &options.consumer);
    let Some((stream_found, consumer_found)) = found else {
        return account_not_found(options);
    };
    if !options.stream.is_empty() && !stream_found {
        return stream_not_found(options);
    }
    if !options.consumer.is_empty() && !consumer_found {
        return consumer_not_found(options);
    }
    ok()
}

/// Clustered JetStream, as nats-server checks it: the meta group, then every stream the meta
/// group placed on this server (the account's only when one is named; the named stream only
/// when one is named, 404 when it is not placed here): a replicated one must run here and be
/// current with its leader, an R1 one must run here. With `details` every failing stream is
/// listed, else the first one's text. A durable consumer lives in its stream's group here (no
/// group of its own as on nats-server), so it is current when its stream's replica is; a named
/// one must be found here.
fn clustered(
    meta: &crate::cluster::meta::Meta,
    jetstream: &nats_jetstream::JetStream,
    options: &HealthOptions,
) -> (u16, Value) {
    if let Err(text) = meta.health() {
        return error(503, options, "JETSTREAM", &text);
    }
    if options.js_meta_only {
        return ok();
    }
    let mut placed = if options.account.is_empty() {
        meta.streams_placed_here(None)
    } else if meta.assigns_streams_of(&options.account) {
        meta.streams_placed_here(Some(&options.account))
    } else {
        return account_not_found(options);
    };
    if !options.stream.is_empty() {
        placed.retain(|(_, stream, _)| *stream == options.stream);
        if placed.is_empty() {
            return stream_not_found(options);
        }
        let found = jetstream.health_lookup(&options.account, &options.stream, &options.consumer);
        if !options.consumer.is_empty() && !found.is_some_and(|(_, consumer)| consumer) {
            return consumer_not_found(options);
        }
    }
    let mut errors = Vec::new();
    for (account, stream, replicated) in placed {
        let reason = if replicated {
            meta.replica_not_current(&account, &stream)
        } else {
            let found = jetstream.health_lookup(&account, &stream, "");
            (!found.is_some_and(|(stream, _)| stream)).then_some("stream not found")
        };
        let Some(reason) = reason else {
            continue;
        };
        let text = format!("JetStream stream '{account} > {stream}' is not current: {reason}");
        if !options.details {
            return (503, json!({"status": "unavailable", "error": text}));
        }
        errors.push(json!({"type": "STREAM", "account": account, "stream": stream, "error": text}));
    }
    if errors.is_empty() {
        return ok();
    }
    (503, json!({"status": "error", "errors": errors}))
}

fn account_not_found(options: &HealthOptions) -> (u16, Value) {
    let text = format!("JetStream account {:?} not found", options.account);
    error(404, options, "ACCOUNT", &text)
}

fn stream_not_found(options: &HealthOptions) -> (u16, Value) {
    let text = format!(
        "JetStream stream {:?} not found on account {:?}",
        options.stream, options.account
    );
    error(404, options, "STREAM", &text)
}

fn consumer_not_found(options: &HealthOptions) -> (u16, Value) {
    let text = format!(
        "JetStream consumer {:?} not found for stream {:?} on account {:?}",
        options.consumer, options.stream, options.account
    );
    error(404, options, "CONSUMER", &text)
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

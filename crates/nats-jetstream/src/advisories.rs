//! JetStream advisories published through core routing: `$JS.EVENT.ADVISORY.STREAM.CREATED`,
//! `.UPDATED` and `.DELETED.<stream>` with nats-server's `stream_action` body. Published only
//! when someone listens, as nats-server does.

use crate::engine::Engine;
use crate::transport::Message;
use bytes::Bytes;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};

const STREAM_ACTION_TYPE: &str = "io.nats.jetstream.advisory.v1.stream_action";

/// A 22-character base62 id, unique per process run, shaped like nats-server's NUIDs.
pub(crate) fn next_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut value = (crate::time_format::now_nanos() as u128) << 32
        | u128::from(COUNTER.fetch_add(1, Ordering::Relaxed))
        | u128::from(std::process::id()) << 96;
    let mut id = String::with_capacity(22);
    for _ in 0..22 {
        id.push(DIGITS[(value % 62) as usize] as char);
        value /= 62;
    }
    id
}

impl Engine {
    /// `action` is nats-server's: `create`, `modify` or `delete`.
    pub(crate) fn advise_stream_action(&self, stream: &str, action: &str, _request: &Bytes) {
        let kind = match action {
            "create" => "CREATED",
            "delete" => "DELETED",
            _ => "UPDATED",
        };
        let subject = format!("$JS.EVENT.ADVISORY.STREAM.{kind}.{stream}");
        if !self.transport.has_interest(&subject) {
            return;
        }
        let mut body = serde_json::Map::new();
        body.insert("type".into(), json!(STREAM_ACTION_TYPE));
        body.insert("id".into(), json!(next_id()));
        body.insert("timestamp".into(), json!(crate::time_format::now_rfc3339()));
        body.insert("stream".into(), json!(stream));
        body.insert("action".into(), json!(action));
        if let Some(domain) = &self.config.domain {
            body.insert("domain".into(), json!(domain));
        }
        self.transport.publish(Message {
            subject: Bytes::from(subject),
            reply: None,
            headers: None,
            payload: Bytes::from(serde_json::Value::Object(body).to_string()),
        });
    }
}

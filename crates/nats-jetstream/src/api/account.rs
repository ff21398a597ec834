//! `$JS.API.INFO`: the account's usage and limits.

use super::Request;
use crate::engine::{Engine, API_LEVEL};
use serde_json::json;
use std::sync::atomic::Ordering;

impl Engine {
    pub(crate) fn account_info(&self, request: &Request) {
        let totals = self.totals();
        // Counted before answering, as nats-server counts the request itself.
        let total = self.api.total.load(Ordering::Relaxed) + 1;
        let mut body = serde_json::Map::new();
        body.insert(
            "type".into(),
            json!("io.nats.jetstream.api.v1.account_info_response"),
        );
        body.insert("memory".into(), json!(totals.memory));
        body.insert("storage".into(), json!(totals.storage));
        body.insert("reserved_memory".into(), json!(totals.reserved_memory));
        body.insert("reserved_storage".into(), json!(totals.reserved_storage));
        body.insert("streams".into(), json!(totals.streams));
        body.insert("consumers".into(), json!(totals.consumers));
        body.insert(
            "limits".into(),
            json!({
                "max_memory": -1,
                "max_storage": -1,
                "max_streams": -1,
                "max_consumers": -1,
                "max_ack_pending": -1,
                "memory_max_stream_bytes": -1,
                "storage_max_stream_bytes": -1,
                "max_bytes_required": false,
            }),
        );
        if let Some(domain) = &self.config.domain {
            body.insert("domain".into(), json!(domain));
        }
        body.insert(
            "api".into(),
            json!({
                "level": API_LEVEL,
                "total": total - 1,
                "errors": self.api.errors.load(Ordering::Relaxed),
            }),
        );
        self.respond(request, &serde_json::Value::Object(body), false);
    }
}

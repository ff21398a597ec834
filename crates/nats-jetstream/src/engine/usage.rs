//! The server's JetStream limits and usage as the monitoring calls and the log show them:
//! `/jsz` and `/varz` (config, limits, usage summed over the accounts, API counters), one
//! account's `$SYS` JSZ detail, the start-up banner's figures and a reload's raised maxima.
//! The counters themselves live in [`crate::resources`] and each account's registry.

use super::Engine;
use crate::level::API_LEVEL;
use crate::resources;
use crate::{JetStream, SyncPolicy};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

/// nats-server's default `sync_interval` (2 minutes), in nanoseconds.
const DEFAULT_SYNC_INTERVAL_NANOS: u64 = 120_000_000_000;
/// nats-server's default `max_consumers` per stream for an account without explicit limits.
pub(crate) const DEFAULT_MAX_CONSUMERS: i64 = 1000;

impl JetStream {
    /// Raise the server-wide `max_memory_store` / `max_file_store` (`None`: unchanged), as a
    /// config reload does: stream reservations and stored bytes are checked against the new
    /// figures at once. Returns nats-server's notices for the log.
    pub fn raise_limits(&self, max_memory: Option<i64>, max_store: Option<i64>) -> Vec<String> {
        self.engine.resources.raise(max_memory, max_store);
        let notice = |name: &str, value: Option<i64>| {
            value.map(|value| {
                format!(
                    "Reloaded: JetStream {name} = {}",
                    resources::friendly_bytes(value)
                )
            })
        };
        [
            notice("max_mem_store", max_memory),
            notice("max_file_store", max_store),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The `---- JETSTREAM ----` section nats-server logs at start-up, one log line per entry
    /// (logo included; the caller logs "Starting JetStream" before it).
    pub fn banner_lines(&self) -> Vec<String> {
        let engine = &self.engine;
        let mut lines: Vec<String> = [
            r"    _ ___ _____ ___ _____ ___ ___   _   __  __",
            r" _ | | __|_   _/ __|_   _| _ \ __| /_\ |  \/  |",
            r"| || | _|  | | \__ \ | | |   / _| / _ \| |\/| |",
            r" \__/|___| |_| |___/ |_| |_|_\___/_/ \_\_|  |_|",
            "",
            "         https://docs.nats.io/jetstream",
            "",
            "---------------- JETSTREAM ----------------",
        ]
        .iter()
        .map(|line| line.to_string())
        .collect();
        lines.push(format!("  Strict:          {}", engine.strict()));
        lines.push(format!(
            "  Max Memory:      {}",
            resources::friendly_bytes(engine.resources.limits.max_memory())
        ));
        lines.push(format!(
            "  Max Storage:     {}",
            resources::friendly_bytes(engine.resources.limits.max_store())
        ));
        lines.push(format!(
            "  Store Directory: \"{}\"",
            engine.store_root.display()
        ));
        if let Some(domain) = &engine.config.domain {
            lines.push(format!("  Domain:          {domain}"));
        }
        lines.push(format!("  API Level:       {API_LEVEL}"));
        lines.push("-------------------------------------------".to_string());
        lines
    }

    /// The body of `/jsz` (no account details).
    pub fn jsz(&self) -> Value {
        let engine = &self.engine;
        let mut body = serde_json::Map::new();
        for (key, value) in engine.stats_json() {
            body.insert(key, value);
        }
        body.insert("server_id".into(), json!(engine.identity.server_id));
        body.insert("now".into(), json!(crate::time_format::now_rfc3339()));
        body.insert("config".into(), engine.config_json());
        body.insert("limits".into(), engine.limits_json());
        let totals = engine.totals();
        body.insert("streams".into(), json!(totals.streams));
        body.insert("consumers".into(), json!(totals.consumers));
        body.insert("messages".into(), json!(totals.messages));
        body.insert("bytes".into(), json!(totals.bytes));
        body.insert("total".into(), json!(engine.accounts.load().len()));
        Value::Object(body)
    }

    /// One account's usage as nats-server's `$SYS.REQ.ACCOUNT.<name>.JSZ` shows it (its
    /// `AccountDetail` without stream details); `None` when JetStream does not serve it.
    pub fn account_detail(&self, name: &str) -> Option<Value> {
        let account = self.engine.account(name)?;
        let totals = account.registry.totals();
        let limits = account.registry.account_limits();
        // nats-server reports the account's limits as reserved, `-1` (unlimited) as a u64.
        Some(json!({
            "name": name,
            "id": name,
            "memory": totals.memory,
            "storage": totals.storage,
            "reserved_memory": limits.max_memory as u64,
            "reserved_storage": limits.max_storage as u64,
            "accounts": 0,
            "ha_assets": 0,
            "api": {
                "level": 0,
                "total": account.counters.total.load(Ordering::Relaxed),
                "errors": account.counters.errors.load(Ordering::Relaxed),
            },
        }))
    }

    /// The `jetstream` section of `/varz`.
    pub fn varz(&self) -> Value {
        let engine = &self.engine;
        json!({
            "config": engine.config_json(),
            "stats": Value::Object(engine.stats_json()),
            "limits": engine.limits_json(),
        })
    }
}

impl Engine {
    /// The `limits` of `/jsz` and `/varz`: nats-server's `JSLimitOpts`, where a batch limit
    /// shows only when the config set it (non-zero, as Go's `omitempty`).
    fn limits_json(&self) -> Value {
        let batch = &self.config.batch_limits;
        let mut limits = serde_json::Map::new();
        let configured = [
            (
                "max_batch_inflight_per_stream",
                batch.max_inflight_per_stream,
            ),
            ("max_batch_inflight_total", batch.max_inflight_total),
            ("max_batch_size", batch.max_msgs),
            (
                "max_batch_timeout",
                i64::try_from(batch.timeout.as_nanos()).unwrap_or(i64::MAX),
            ),
        ];
        for (key, value) in configured {
            if value != 0 {
                limits.insert(key.into(), json!(value));
            }
        }
        limits.insert("default_max_consumers".into(), json!(DEFAULT_MAX_CONSUMERS));
        Value::Object(limits)
    }

    pub(crate) fn strict(&self) -> bool {
        // nats-server 2.11+ is strict unless the config says `strict: false`; our config type
        // cannot tell "unset" from false, so `strict` in the config is read as "not relaxed".
        true
    }

    pub(crate) fn config_json(&self) -> Value {
        let mut config = serde_json::Map::new();
        config.insert(
            "max_memory".into(),
            json!(self.resources.limits.max_memory()),
        );
        config.insert(
            "max_storage".into(),
            json!(self.resources.limits.max_store()),
        );
        config.insert(
            "store_dir".into(),
            json!(self.store_root.display().to_string()),
        );
        // With `always`, nats-server still reports the (default) interval next to `sync_always`.
        let sync_interval = match self.config.sync_interval {
            SyncPolicy::Interval(interval) => json!(interval.as_nanos() as u64),
            SyncPolicy::Always => json!(DEFAULT_SYNC_INTERVAL_NANOS),
        };
        config.insert("sync_interval".into(), sync_interval);
        if self.config.sync_interval == SyncPolicy::Always {
            config.insert("sync_always".into(), json!(true));
        }
        if let Some(domain) = &self.config.domain {
            config.insert("domain".into(), json!(domain));
        }
        config.insert("strict".into(), json!(self.strict()));
        Value::Object(config)
    }

    /// Usage summed over every account.
    fn totals(&self) -> crate::registry::Totals {
        let mut sum = crate::registry::Totals::default();
        for account in self.accounts.load().iter() {
            let totals = account.registry.totals();
            sum.streams += totals.streams;
            sum.consumers += totals.consumers;
            sum.messages += totals.messages;
            sum.bytes += totals.bytes;
            sum.memory += totals.memory;
            sum.storage += totals.storage;
            sum.reserved_memory += totals.reserved_memory;
            sum.reserved_storage += totals.reserved_storage;
        }
        sum
    }

    pub(crate) fn stats_json(&self) -> serde_json::Map<String, Value> {
        let totals = self.totals();
        let (mut total, mut errors) = (0, 0);
        for account in self.accounts.load().iter() {
            total += account.counters.total.load(Ordering::Relaxed);
            errors += account.counters.errors.load(Ordering::Relaxed);
        }
        let mut stats = serde_json::Map::new();
        stats.insert("memory".into(), json!(totals.memory));
        stats.insert("storage".into(), json!(totals.storage));
        stats.insert("reserved_memory".into(), json!(totals.reserved_memory));
        stats.insert("reserved_storage".into(), json!(totals.reserved_storage));
        stats.insert("accounts".into(), json!(self.accounts.load().len()));
        let ha_assets = self.raft_groups.get().map_or(0, |count| count());
        stats.insert("ha_assets".into(), json!(ha_assets));
        stats.insert(
            "api".into(),
            json!({
                "level": API_LEVEL,
                "total": total,
                "errors": errors,
            }),
        );
        stats
    }
}

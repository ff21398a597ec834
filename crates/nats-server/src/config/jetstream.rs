//! The `jetstream { ... }` block of the config file, onto [`JetStreamConfig`], including the
//! server-wide `limits { ... }` (of which the `batch { ... }` publish limits are enforced).
//!
//! Called by `options.rs` for the top-level `jetstream` key. Errors follow nats-server's
//! wording (`unknown field`, `Expected a map to define ...`, Go's interface conversion text).

use super::options::{boolean, duration, integer, map, size, string};
use super::value::{ConfigError, Entry, Value};
use nats_jetstream::{BatchLimits, JetStreamConfig, SyncPolicy};
use std::path::PathBuf;
use std::time::Duration;

pub(super) fn apply_jetstream(
    config: &mut JetStreamConfig,
    warnings: &mut Vec<String>,
    entry: &Entry,
) -> Result<(), ConfigError> {
    match &entry.value {
        Value::Bool(enabled) => {
            config.enabled = *enabled;
            return Ok(());
        }
        Value::String(text) => {
            config.enabled = match text.to_ascii_lowercase().as_str() {
                "enabled" | "enable" => true,
                "disabled" | "disable" => false,
                _ => {
                    return Err(entry.error(format!(
                        "Expected 'enabled' or 'disabled' for string value, got '{text}'"
                    )))
                }
            };
            return Ok(());
        }
        Value::Map(_) => {}
        other => {
            return Err(entry.error(format!(
                "Expected map, bool or string to define JetStream, got {}",
                other.go_type_name()
            )))
        }
    }
    config.enabled = true;
    apply_block(config, warnings, entry).map_err(|error| {
        // nats-server recovers a failed type assertion inside the block at the block's own
        // position.
        if error.message.starts_with("interface conversion") {
            ConfigError {
                line: entry.line,
                column: entry.column,
                ..error
            }
        } else {
            error
        }
    })
}

fn apply_block(
    config: &mut JetStreamConfig,
    warnings: &mut Vec<String>,
    entry: &Entry,
) -> Result<(), ConfigError> {
    for (key, item) in map(entry)? {
        match key.to_ascii_lowercase().as_str() {
            "store_dir" | "storedir" | "store" => {
                config.store_dir = Some(PathBuf::from(string(item)?))
            }
            "max_memory_store" | "max_mem_store" | "max_mem" => {
                config.max_memory = Some(size(item, "max_mem_store")?)
            }
            "max_file_store" | "max_file" => config.max_store = Some(size(item, "max_file_store")?),
            "sync_interval" | "sync" => {
                config.sync_interval = match &item.value {
                    Value::String(text) if text.eq_ignore_ascii_case("always") => {
                        SyncPolicy::Always
                    }
                    _ => SyncPolicy::Interval(duration(warnings, "sync_interval", item)?),
                }
            }
            "domain" => config.domain = Some(string(item)?),
            "limits" => config.batch_limits = batch_limits(item)?,
            "strict" => {
                config.strict = match &item.value {
                    Value::Bool(flag) => *flag,
                    Value::String(text) => {
                        return Err(item.error(format!(
                            "Expected 'true' or 'false' for bool value, got '{text}'"
                        )))
                    }
                    other => {
                        return Err(item.error(format!(
                            "Expected 'true' or 'false' for bool value, got '%!s({}={})'",
                            other.go_type_name(),
                            other.go_text()
                        )))
                    }
                }
            }
            "enabled" | "enable" => config.enabled = boolean(item)?,
            "unique_tag" => config.unique_tag = Some(string(item)?),
            // Accepted and not used; checked for their kind as nats-server reads them.
            // nats-server reads these two as plain integers (`mv.(int64)`), no size strings.
            name @ ("request_queue_limit" | "info_queue_limit") => {
                let Value::Integer(limit) = item.value else {
                    return Err(item.error(format!(
                        "Expected a parseable size for {key:?}, got {}",
                        item.value.go_text()
                    )));
                };
                if name == "request_queue_limit" {
                    config.request_queue_limit = limit;
                } else {
                    config.info_queue_limit = limit;
                }
            }
            "max_buffered_msgs" | "max_buffered_size" | "max_outstanding_catchup" => {
                let parses = match &item.value {
                    Value::Integer(_) => true,
                    Value::String(text) => go_compat::size::storage_size(text).is_ok(),
                    _ => false,
                };
                if !parses {
                    return Err(item.error(format!(
                        "Expected a parseable size for {key:?}, got {}",
                        item.value.go_text()
                    )));
                }
            }
            "cipher" | "key" | "prev_key" | "extension_hint" => {
                string(item)?;
            }
            "tpm" => {}
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(())
}

/// `limits { ... }` (nats-server's `parseJetStreamLimits`). Only the batch limits are used;
/// the other keys are checked for their type as nats-server does and otherwise ignored.
fn batch_limits(entry: &Entry) -> Result<BatchLimits, ConfigError> {
    let items = go_map(entry, "JetStreamLimits")?;
    let mut limits = BatchLimits::default();
    for (key, item) in items {
        match key.to_ascii_lowercase().as_str() {
            "max_ack_pending" | "max_ha_assets" | "max_request_batch" => {
                integer(item)?;
            }
            "duplicate_window" => {
                go_duration(item)?;
            }
            "batch" => limits = batch_block(item)?,
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(limits)
}

/// `limits { batch { ... } }` (nats-server's `parseJetStreamLimitsBatch`).
fn batch_block(entry: &Entry) -> Result<BatchLimits, ConfigError> {
    let mut limits = BatchLimits::default();
    for (key, item) in go_map(entry, "batch limits")? {
        match key.to_ascii_lowercase().as_str() {
            "max_inflight_per_stream" => limits.max_inflight_per_stream = integer(item)?,
            "max_inflight_total" => limits.max_inflight_total = integer(item)?,
            "max_msgs" => limits.max_msgs = integer(item)?,
            "timeout" => limits.timeout = go_duration(item)?,
            _ if item.used_as_variable => {}
            _ => return Err(item.error(format!("unknown field \"{key}\""))),
        }
    }
    Ok(limits)
}

fn go_map<'entry>(
    entry: &'entry Entry,
    what: &str,
) -> Result<&'entry Vec<(String, Entry)>, ConfigError> {
    match &entry.value {
        Value::Map(items) => Ok(items),
        other => Err(entry.error(format!(
            "Expected a map to define {what}, got {}",
            other.go_type_name()
        ))),
    }
}

/// A duration written as a Go duration string (nats-server's `time.ParseDuration(v.(string))`).
/// A negative one is accepted and, like nats-server, taken as unset.
fn go_duration(entry: &Entry) -> Result<Duration, ConfigError> {
    let Value::String(text) = &entry.value else {
        return Err(entry.error(format!(
            "interface conversion: interface {{}} is {}, not string",
            entry.value.go_type_name()
        )));
    };
    match go_compat::duration::parse(text) {
        Ok(nanos) => Ok(Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))),
        Err(error) => Err(entry.error(error.to_string())),
    }
}

//! `jetstream` inside an account of `accounts { }`: `enabled`/`disabled`, a boolean, or a
//! limits block (`max_memory`, `max_file`, `max_streams`, `max_consumers`, `max_ack_pending`,
//! `max_bytes_required`, the per-stream byte ceilings) read as nats-server's
//! `parseJetStreamForAccount` reads it, with its error texts. Called by `accounts.rs`; knows
//! nothing of the running JetStream.

use super::value::{ConfigError, Entry, Value};
use nats_jetstream::AccountLimits;

/// The account's JetStream: `None` when disabled, else its limits (all `-1`, nats-server's
/// dynamic limits, for a plain `enabled`).
pub(super) fn parse_account_jetstream(entry: &Entry) -> Result<Option<AccountLimits>, ConfigError> {
    match &entry.value {
        Value::Bool(enabled) => Ok(enabled.then(AccountLimits::default)),
        Value::String(text) => match text.to_ascii_lowercase().as_str() {
            "enabled" | "enable" => Ok(Some(AccountLimits::default())),
            "disabled" | "disable" => Ok(None),
            _ => Err(unplaced(
                entry,
                format!("Expected 'enabled' or 'disabled' for string value, got '{text}'"),
            )),
        },
        Value::Map(items) => {
            let mut limits = AccountLimits::default();
            for (key, item) in items {
                apply_limit(&mut limits, key, item)?;
            }
            Ok(Some(limits))
        }
        other => Err(unplaced(
            entry,
            format!(
                "Expected map, bool or string to define JetStream, got {}",
                other.go_type_name()
            ),
        )),
    }
}

/// nats-server reports a wrong `jetstream` value of an account without a position.
fn unplaced(entry: &Entry, message: String) -> ConfigError {
    ConfigError {
        line: 0,
        ..entry.error(message)
    }
}

fn apply_limit(limits: &mut AccountLimits, key: &str, item: &Entry) -> Result<(), ConfigError> {
    let size = || match &item.value {
        Value::Integer(number) => Ok(*number),
        other => Err(item.error(format!(
            "Expected a parseable size for {key:?}, got {}",
            other.go_text()
        ))),
    };
    match key.to_ascii_lowercase().as_str() {
        "max_memory" | "max_mem" | "mem" | "memory" => limits.max_memory = size()?,
        "max_store" | "max_file" | "max_disk" | "store" | "disk" => limits.max_storage = size()?,
        "max_streams" | "streams" => limits.max_streams = size()?,
        "max_consumers" | "consumers" => limits.max_consumers = size()?,
        "max_ack_pending" => limits.max_ack_pending = size()?,
        "mem_max_stream_bytes" | "memory_max_stream_bytes" => {
            limits.memory_max_stream_bytes = size()?
        }
        "disk_max_stream_bytes" | "store_max_stream_bytes" => {
            limits.storage_max_stream_bytes = size()?
        }
        "max_bytes_required" | "max_stream_bytes" | "max_bytes" => match &item.value {
            Value::Bool(required) => limits.max_bytes_required = *required,
            other => {
                return Err(item.error(format!(
                    "Expected a parseable bool for {key:?}, got {}",
                    other.go_text()
                )))
            }
        },
        _ => return Err(item.error(format!("unknown field {key:?}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: Value) -> Entry {
        Entry {
            value,
            file: Default::default(),
            line: 1,
            column: 1,
            used_as_variable: false,
        }
    }

    #[test]
    fn a_limits_block_sets_each_key_and_leaves_the_rest_dynamic() {
        let block = entry(Value::Map(vec![
            ("max_mem".into(), entry(Value::Integer(1_000_000))),
            ("max_file".into(), entry(Value::Integer(2_000_000))),
            ("streams".into(), entry(Value::Integer(2))),
            ("max_bytes_required".into(), entry(Value::Bool(true))),
        ]));
        let limits = parse_account_jetstream(&block).unwrap().unwrap();
        assert_eq!(limits.max_memory, 1_000_000);
        assert_eq!(limits.max_storage, 2_000_000);
        assert_eq!(limits.max_streams, 2);
        assert_eq!(limits.max_consumers, -1);
        assert!(limits.max_bytes_required);
    }

    #[test]
    fn refusals_use_nats_server_wording() {
        let error = |value| parse_account_jetstream(&entry(value)).unwrap_err().message;
        assert_eq!(
            error(Value::Integer(5)),
            "Expected map, bool or string to define JetStream, got int64"
        );
        assert_eq!(
            error(Value::Map(vec![(
                "limits".into(),
                entry(Value::Integer(5))
            )])),
            "unknown field \"limits\""
        );
        assert_eq!(
            error(Value::Map(vec![(
                "max_streams".into(),
                entry(Value::Float(1.5))
            )])),
            "Expected a parseable size for \"max_streams\", got 1.5"
        );
    }
}

//! The `_nats.*` metadata keys nats-server adds to stream and consumer configs, and the rules for
//! them (nats-server's `jetstream_versioning.go`): `_nats.req.level` (the API level a config
//! needs, stored with the asset) and, in responses only, `_nats.ver` and `_nats.level`.

use std::collections::BTreeMap;

use crate::policy::PersistMode;
use crate::stream::StreamConfig;

/// The JetStream API level nats-server v2.15 implements (`api.level` in `$JS.API.INFO`).
pub const API_LEVEL: u32 = 5;
/// The nats-server version we speak for (reported as `_nats.ver`).
pub const SERVER_VERSION: &str = "2.15.1";

pub const REQUIRED_LEVEL_KEY: &str = "_nats.req.level";
pub const SERVER_VERSION_KEY: &str = "_nats.ver";
pub const SERVER_LEVEL_KEY: &str = "_nats.level";

/// Removes the keys that exist only in responses.
pub fn remove_dynamic(metadata: &mut BTreeMap<String, String>) {
    metadata.remove(SERVER_VERSION_KEY);
    metadata.remove(SERVER_LEVEL_KEY);
}

/// The API level a stream config needs: 1 for TTLs, 2 for counters / atomic batches / schedules /
/// async persistence, 4 for fast batch publishing.
pub fn stream_required_level(config: &StreamConfig) -> u32 {
    let mut level = 0;
    if config.allow_msg_ttl || config.subject_delete_marker_ttl.0 > 0 {
        level = level.max(1);
    }
    if config.allow_msg_counter
        || config.allow_atomic_publish
        || config.allow_msg_schedules
        || config.persist_mode == PersistMode::Async
    {
        level = level.max(2);
    }
    if config.allow_batch_publish {
        level = level.max(4);
    }
    level
}

/// What nats-server stores on create/update: dynamic keys removed, `_nats.req.level` set.
pub fn set_static_stream_metadata(config: &mut StreamConfig) {
    remove_dynamic(&mut config.metadata);
    let level = stream_required_level(config);
    config
        .metadata
        .insert(REQUIRED_LEVEL_KEY.to_string(), level.to_string());
}

/// A copy of `metadata` with the response-only keys `_nats.ver` and `_nats.level` added.
pub fn with_dynamic(metadata: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = metadata.clone();
    out.insert(SERVER_VERSION_KEY.to_string(), SERVER_VERSION.to_string());
    out.insert(SERVER_LEVEL_KEY.to_string(), API_LEVEL.to_string());
    out
}

/// A copy of the config as nats-server puts it in CREATE/UPDATE/INFO responses.
pub fn stream_config_for_response(config: &StreamConfig) -> StreamConfig {
    let mut out = config.clone();
    out.metadata = with_dynamic(&config.metadata);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        let mut config = StreamConfig::default();
        assert_eq!(stream_required_level(&config), 0);
        config.allow_msg_ttl = true;
        assert_eq!(stream_required_level(&config), 1);
        config.allow_msg_counter = true;
        assert_eq!(stream_required_level(&config), 2);
        config.allow_batch_publish = true;
        assert_eq!(stream_required_level(&config), 4);
        config
            .metadata
            .insert(SERVER_VERSION_KEY.into(), "x".into());
        set_static_stream_metadata(&mut config);
        assert_eq!(config.metadata.get(REQUIRED_LEVEL_KEY).unwrap(), "4");
        assert!(!config.metadata.contains_key(SERVER_VERSION_KEY));
        let shown = stream_config_for_response(&config);
        assert_eq!(shown.metadata.get(SERVER_LEVEL_KEY).unwrap(), "5");
    }
}

//! [`ConfigCell`]: a stream's config behind its lock, with the JSON encodings the `$JS.API`
//! answers carry kept until the config changes. A STREAM.LIST page of 256 streams otherwise
//! cloned and encoded every stream's config again (the largest part of each info), and
//! STREAM.INFO cloned it twice (the config, then the copy with the dynamic metadata).

use bytes::Bytes;
use jetstream_api::StreamConfig;
use parking_lot::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::sync::OnceLock;

/// Which form of the config an answer shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigForm {
    /// As stored (STREAM.LIST, as nats-server's `jsStreamListRequest`).
    Stored,
    /// With the response-only metadata `_nats.ver` and `_nats.level` (STREAM.INFO, CREATE,
    /// UPDATE: `metadata::stream_config_for_response`).
    Shown,
}

struct Configured {
    config: StreamConfig,
    /// The encodings by [`ConfigForm`], made on first use; cleared with every write, which
    /// holds the lock exclusively, so an encoding is never of an older config.
    encoded: [OnceLock<Bytes>; 2],
}

pub(crate) struct ConfigCell(RwLock<Configured>);

impl ConfigCell {
    pub(crate) fn new(config: StreamConfig) -> Self {
        ConfigCell(RwLock::new(Configured {
            config,
            encoded: Default::default(),
        }))
    }

    pub(crate) fn read(&self) -> MappedRwLockReadGuard<'_, StreamConfig> {
        RwLockReadGuard::map(self.0.read(), |configured| &configured.config)
    }

    /// The config to change: the encodings are dropped now, while the lock is held until the
    /// change is made.
    pub(crate) fn write(&self) -> MappedRwLockWriteGuard<'_, StreamConfig> {
        let mut configured = self.0.write();
        configured.encoded = Default::default();
        RwLockWriteGuard::map(configured, |configured| &mut configured.config)
    }

    /// The config in `form` as `encode_response` writes it, encoded on the first call after
    /// each change (under the read lock: a write waits for it to be kept).
    pub(crate) fn encoded(&self, form: ConfigForm) -> Bytes {
        let configured = self.0.read();
        let slot = match form {
            ConfigForm::Stored => &configured.encoded[0],
            ConfigForm::Shown => &configured.encoded[1],
        };
        slot.get_or_init(|| {
            let mut json = match form {
                ConfigForm::Stored => jetstream_api::json::encode_response(&configured.config),
                ConfigForm::Shown => jetstream_api::json::encode_response(
                    &jetstream_api::metadata::stream_config_for_response(&configured.config),
                ),
            };
            // Kept per stream: without the encoder's spare capacity.
            json.shrink_to_fit();
            Bytes::from(json)
        })
        .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_every_change() {
        let cell = ConfigCell::new(StreamConfig {
            name: "ORDERS".to_string(),
            subjects: vec!["orders.>".to_string()],
            ..Default::default()
        });
        let encode =
            |config: &StreamConfig| Bytes::from(jetstream_api::json::encode_response(config));
        let shown = |cell: &ConfigCell| {
            encode(&jetstream_api::metadata::stream_config_for_response(
                &cell.read(),
            ))
        };
        assert_eq!(cell.encoded(ConfigForm::Stored), encode(&cell.read()));
        assert_eq!(cell.encoded(ConfigForm::Shown), shown(&cell));
        assert!(cell.encoded(ConfigForm::Shown) != cell.encoded(ConfigForm::Stored));
        // Kept: the same buffer the second time.
        let first = cell.encoded(ConfigForm::Stored);
        assert_eq!(first.as_ptr(), cell.encoded(ConfigForm::Stored).as_ptr());

        cell.write().max_msgs = 7;
        let stored = cell.encoded(ConfigForm::Stored);
        assert!(String::from_utf8_lossy(&stored).contains("\"max_msgs\":7"));
        assert_eq!(stored, encode(&cell.read()));
        assert_eq!(cell.encoded(ConfigForm::Shown), shown(&cell));

        *cell.write() = StreamConfig {
            name: "ORDERS".to_string(),
            description: "<new>".to_string(),
            ..Default::default()
        };
        assert_eq!(cell.encoded(ConfigForm::Stored), encode(&cell.read()));
        assert!(String::from_utf8_lossy(&cell.encoded(ConfigForm::Shown)).contains("\\u003cnew"));
    }
}

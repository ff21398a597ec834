//! An account's JetStream limits at stream create and update, as nats-server checks them
//! (`jsa.checkLimits`, `checkBytesLimits`): `max_bytes` required, the per-stream byte
//! ceilings, the number of streams, the streams' consumer limit, and the bytes reserved by
//! `max_bytes` against the account's and the server's maxima; for an account with tiered
//! limits, those of the stream's replica tier, counting the streams of that tier. Also keeps the server-wide
//! reservations current as streams come and go. Called by the registry only.

use super::{reserved, Registry};
use jetstream_api::{errors, AccountLimits, ApiError, StorageType, StreamConfig};

/// nats-server's `tierName`: the tier of a stream of `replicas` replicas (`R1`, `R3`).
pub(crate) fn tier_name(replicas: i64) -> String {
    format!("R{}", replicas.max(1))
}

/// The bytes a stream's `max_bytes` reserves (nothing when unlimited).
fn reservation(config: &StreamConfig) -> i64 {
    config.max_bytes.max(0)
}

impl Registry {
    /// nats-server's `selectLimits`: an untiered account's limits, else those of the tier of a
    /// stream of `replicas` replicas (10120 when the account's JWT gives that tier none);
    /// `true` when tiered.
    pub(crate) fn tier_limits(&self, replicas: i64) -> Result<(AccountLimits, bool), ApiError> {
        let account = self.account_limits.read();
        if account.tiers.is_empty() {
            return Ok((account.limits.clone(), false));
        }
        account
            .tiers
            .get(&tier_name(replicas))
            .map(|limits| (limits.clone(), true))
            .ok_or_else(|| errors::NO_LIMITS.to_error())
    }

    /// Check `config` (a new stream, or `old` updated) against the account's limits and the
    /// server's reservations, in nats-server's order.
    pub(super) fn check_account_limits(
        &self,
        config: &StreamConfig,
        old: Option<&StreamConfig>,
    ) -> Result<(), ApiError> {
        let (limits, tiered) = self.tier_limits(config.replicas)?;
        if limits.max_bytes_required && config.max_bytes <= 0 {
            return Err(errors::STREAM_MAX_BYTES_REQUIRED.to_error());
        }
        let max_stream_bytes = match config.storage {
            StorageType::Memory => limits.memory_max_stream_bytes,
            StorageType::File => limits.storage_max_stream_bytes,
        };
        if max_stream_bytes > 0 && config.max_bytes > max_stream_bytes {
            return Err(errors::STREAM_MAX_STREAM_BYTES_EXCEEDED.to_error());
        }
        if old.is_none() && limits.max_streams > 0 {
            let streams = if tiered {
                let tier = tier_name(config.replicas);
                self.all()
                    .iter()
                    .filter(|stream| tier_name(stream.config.read().replicas) == tier)
                    .count()
            } else {
                self.streams.read().len()
            };
            if i64::try_from(streams).unwrap_or(i64::MAX) >= limits.max_streams {
                return Err(errors::MAXIMUM_STREAMS_LIMIT.to_error());
            }
        }
        if config.max_consumers > 0
            && limits.max_consumers > 0
            && config.max_consumers > limits.max_consumers
        {
            return Err(errors::MAXIMUM_CONSUMERS_LIMIT.to_error());
        }
        // An update is checked only when its reservation changes, as nats-server.
        if old.is_some_and(|old| old.max_bytes == config.max_bytes && old.storage == config.storage)
        {
            return Ok(());
        }
        self.check_bytes(config, old, &limits, tiered)
    }

    /// nats-server's `checkBytesLimits`: the account's reservations plus this stream's against
    /// the account's maximum (when it has one), the server's against the server's.
    fn check_bytes(
        &self,
        config: &StreamConfig,
        old: Option<&StreamConfig>,
        account_limits: &AccountLimits,
        tiered: bool,
    ) -> Result<(), ApiError> {
        let add = if config.max_bytes < 0 {
            1
        } else {
            config.max_bytes
        };
        let storage = config.storage;
        let tier = tiered.then(|| tier_name(config.replicas));
        let own = old
            .filter(|old| old.storage == storage)
            .map_or(0, reservation);
        let server_reserved = self.reservations.get(storage) - own;
        let (account_max, server_max, refusal) = match storage {
            StorageType::Memory => (
                account_limits.max_memory,
                self.limits.max_memory(),
                errors::MEMORY_RESOURCES_EXCEEDED,
            ),
            StorageType::File => (
                account_limits.max_storage,
                self.limits.max_store(),
                errors::STORAGE_RESOURCES_EXCEEDED,
            ),
        };
        // The account's reservations are summed over its streams only when it has a maximum
        // (an unlimited account, the default, would pay a walk of every stream per create).
        if account_max >= 0
            && reserved(self, storage, &config.name, tier.as_deref()).saturating_add(add)
                > account_max
        {
            return Err(refusal.to_error());
        }
        if server_reserved.saturating_add(add) > server_max {
            return Err(refusal.to_error());
        }
        Ok(())
    }

    /// Count (`sign` 1) or release (`sign` -1) a stream's reservation in the server's total.
    pub(super) fn reserve(&self, config: &StreamConfig, sign: i64) {
        let bytes = reservation(config);
        if bytes > 0 {
            self.reservations.add(config.storage, sign * bytes);
        }
    }
}

//! `$JS.API.INFO`: the account's usage and limits.

use super::Request;
use crate::engine::Engine;
use crate::level::API_LEVEL;
use jetstream_api::{AccountInfo, AccountInfoResponse, AccountTier, ApiStats};
use std::sync::atomic::Ordering;

impl Engine {
    pub(crate) fn account_info(&self, request: &Request) {
        let totals = self.totals();
        let info = AccountInfo {
            totals: AccountTier {
                memory: totals.memory,
                storage: totals.storage,
                reserved_memory: totals.reserved_memory,
                reserved_storage: totals.reserved_storage,
                streams: totals.streams,
                consumers: totals.consumers,
                limits: Default::default(),
            },
            domain: self.config.domain.clone().unwrap_or_default(),
            // nats-server counts a request after answering it, so INFO does not see itself.
            api: ApiStats {
                level: API_LEVEL,
                total: self.api.total.load(Ordering::Relaxed),
                errors: self.api.errors.load(Ordering::Relaxed),
                inflight: 0,
            },
            tiers: Default::default(),
        };
        self.respond(request, &AccountInfoResponse::ok(info), false);
    }
}

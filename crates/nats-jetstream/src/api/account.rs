//! `$JS.API.INFO`: the account's usage and limits.

use super::Context;
use super::Request;
use crate::level::API_LEVEL;
use jetstream_api::{AccountInfo, AccountInfoResponse, AccountTier, ApiStats};
use std::sync::atomic::Ordering;

pub(crate) fn account_info(context: &Context, request: &Request) {
    let mut totals = context.registry.totals();
    // In a cluster the meta leader answers: the stream count is the cluster's (usage figures
    // are still this server's own; docs/parity.md).
    if let Some(cluster) = context.cluster.get() {
        totals.streams = cluster.streams().len() as _;
    }
    let info = AccountInfo {
        totals: AccountTier {
            memory: totals.memory,
            storage: totals.storage,
            reserved_memory: totals.reserved_memory,
            reserved_storage: totals.reserved_storage,
            streams: totals.streams,
            consumers: totals.consumers,
            limits: context.registry.account_limits.clone(),
        },
        domain: context.domain.clone().unwrap_or_default(),
        // nats-server counts a request after answering it, so INFO does not see itself.
        api: ApiStats {
            level: API_LEVEL,
            total: context.counters.total.load(Ordering::Relaxed),
            errors: context.counters.errors.load(Ordering::Relaxed),
            inflight: 0,
        },
        tiers: Default::default(),
    };
    context.respond(request, &AccountInfoResponse::ok(info), false);
}

//! `$JS.API.INFO`: the account's usage and limits.

use super::Context;
use super::Request;
use crate::level::API_LEVEL;
use jetstream_api::{AccountInfo, AccountInfoResponse, AccountLimits, AccountTier, ApiStats};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

pub(crate) fn account_info(context: &Context, request: &Request) {
    let mut totals = context.registry.totals();
    // The bytes of every replica on every server: this server's and the others' last reports
    // (nats-server's `storageTotals`; on a single server, its own).
    let (stored, tier_stored) = context.registry.usage.cluster_wide();
    totals.memory = stored.memory.max(0) as u64;
    totals.storage = stored.storage.max(0) as u64;
    // In a cluster the meta leader answers with the cluster's figures, as nats-server's
    // `JetStreamUsage`: the streams of the meta group's assignments, in all and per tier; the
    // consumers of the streams this server leads and those the others report leading (each
    // stream's consumers run on its leader), in all and per tier of their replica count; the
    // API requests every server answered (its own and the others' reports).
    let (remote_api, remote_consumers) = *context.remote_counts.lock();
    let mut api = ApiStats {
        level: API_LEVEL,
        // nats-server counts a request after answering it, so INFO does not see itself.
        total: context.counters.total.load(Ordering::Relaxed),
        errors: context.counters.errors.load(Ordering::Relaxed),
        inflight: 0,
    };
    let cluster_tiers = context.cluster.get().map(|cluster| {
        let streams = cluster.streams();
        totals.streams = streams.len() as _;
        let mut consumers = context.registry.led_consumers();
        consumers.total += remote_consumers.total;
        for (sum, remote) in consumers.tiers.iter_mut().zip(remote_consumers.tiers) {
            *sum += remote;
        }
        totals.consumers = consumers.total;
        api.total += remote_api.total;
        api.errors += remote_api.errors;
        let mut tiers = BTreeMap::<String, (u64, u64)>::new();
        for stream in &streams {
            tiers
                .entry(crate::registry::tier_name(stream.config.replicas))
                .or_default()
                .0 += 1;
        }
        for (index, count) in consumers.tiers.iter().enumerate() {
            if *count > 0 {
                tiers
                    .entry(crate::registry::tier_name(index as i64 + 1))
                    .or_default()
                    .1 = *count;
            }
        }
        tiers
    });
    let registry = &context.registry;
    // nats-server reports an account with tiered limits per tier: its top-level `limits` are
    // then all zero (no default tier), and `tiers` holds every tier the JWT names plus any
    // tier a stream uses, each with its limits and usage.
    let account = registry.account_limits_and_tiers();
    let (limits, tiers) = if account.tiers.is_empty() {
        (account.limits, BTreeMap::new())
    } else {
        let mut tiers: BTreeMap<String, AccountTier> = account
            .tiers
            .iter()
            .map(|(name, limits)| {
                let tier = AccountTier {
                    limits: limits.clone(),
                    ..Default::default()
                };
                (name.clone(), tier)
            })
            .collect();
        for (name, usage) in registry.tier_totals() {
            let tier = tiers.entry(name).or_insert_with(|| AccountTier {
                limits: no_limits(),
                ..Default::default()
            });
            tier.reserved_memory = usage.reserved_memory;
            tier.reserved_storage = usage.reserved_storage;
            tier.streams = usage.streams;
            tier.consumers = usage.consumers;
        }
        if let Some(cluster_tiers) = &cluster_tiers {
            for tier in tiers.values_mut() {
                tier.streams = 0;
                tier.consumers = 0;
            }
            for (name, (streams, consumers)) in cluster_tiers {
                let tier = tiers.entry(name.clone()).or_insert_with(|| AccountTier {
                    limits: no_limits(),
                    ..Default::default()
                });
                tier.streams = *streams;
                tier.consumers = *consumers;
            }
        }
        for (index, bytes) in tier_stored.iter().enumerate() {
            let name = crate::registry::tier_name(index as i64 + 1);
            if let Some(tier) = tiers.get_mut(&name) {
                tier.memory = bytes.memory.max(0) as u64;
                tier.storage = bytes.storage.max(0) as u64;
            }
        }
        (no_limits(), tiers)
    };
    let info = AccountInfo {
        totals: AccountTier {
            memory: totals.memory,
            storage: totals.storage,
            reserved_memory: totals.reserved_memory,
            reserved_storage: totals.reserved_storage,
            streams: totals.streams,
            consumers: totals.consumers,
            limits,
        },
        domain: context.domain.clone().unwrap_or_default(),
        api,
        tiers,
    };
    context.respond(request, &AccountInfoResponse::ok(info), false);
}

/// nats-server's zero `JetStreamAccountLimits`: what it reports where an account has no limits
/// for a tier (the top level of a tiered account, a tier only a stream uses).
fn no_limits() -> AccountLimits {
    AccountLimits {
        max_memory: 0,
        max_storage: 0,
        max_streams: 0,
        max_consumers: 0,
        max_ack_pending: 0,
        memory_max_stream_bytes: 0,
        storage_max_stream_bytes: 0,
        max_bytes_required: false,
    }
}

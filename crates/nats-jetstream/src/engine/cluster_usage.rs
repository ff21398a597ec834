//! An account's usage in a cluster: what this server stores of each account (every replica it
//! holds, leader or not), the API requests it answered for it and the consumers of the streams
//! it leads, for the clustering layer to report to the other servers (nats-server's
//! `$JSC.ARU.<account>.<node>` updates), and the sum of their reports, which `$JS.API.INFO`
//! adds to this server's own and the publish checks hold to the account's limits
//! (`resources::Usage`). Called by nats-server's `cluster/usage.rs`; knows nothing of the wire
//! or of peers.

use super::JetStream;
pub use crate::resources::StoredBytes;
pub use crate::resources::TIERS;

/// An account's API counters (nats-server's `api.total` and `api.errors`): the requests a
/// server answered, and those it answered with an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiCounts {
    pub total: u64,
    pub errors: u64,
}

/// An account's consumers, in all and per tier of the consumer's replica count (`R1` first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumerCounts {
    pub total: u64,
    pub tiers: [u64; TIERS],
}

/// One account's usage on this server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountUsage {
    pub account: String,
    /// Whether the account's limits are tiered: nats-server then reports each tier
    /// (`R1`..`R5`), otherwise one record for the whole account.
    pub tiered: bool,
    pub total: StoredBytes,
    /// Per tier, `R1` first.
    pub tiers: [StoredBytes; TIERS],
    /// The requests this server answered for the account since it started.
    pub api: ApiCounts,
    /// The consumers of the streams this server leads (every stream of one replica it holds).
    pub consumers: ConsumerCounts,
}

/// The other servers' reports of one account, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteUsage {
    pub total: StoredBytes,
    pub tiers: [StoredBytes; TIERS],
    pub api: ApiCounts,
    pub consumers: ConsumerCounts,
}

impl RemoteUsage {
    /// Adds one server's report.
    pub fn add(&mut self, report: &RemoteUsage) {
        add_bytes(&mut self.total, report.total);
        for (sum, tier) in self.tiers.iter_mut().zip(report.tiers) {
            add_bytes(sum, tier);
        }
        self.api.total = self.api.total.saturating_add(report.api.total);
        self.api.errors = self.api.errors.saturating_add(report.api.errors);
        self.consumers.total = self.consumers.total.saturating_add(report.consumers.total);
        for (sum, tier) in self.consumers.tiers.iter_mut().zip(report.consumers.tiers) {
            *sum = sum.saturating_add(tier);
        }
    }
}

fn add_bytes(sum: &mut StoredBytes, bytes: StoredBytes) {
    sum.memory = sum.memory.saturating_add(bytes.memory);
    sum.storage = sum.storage.saturating_add(bytes.storage);
}

impl JetStream {
    /// What this server stores, answered and leads of every account it serves.
    pub fn local_usage(&self) -> Vec<AccountUsage> {
        use std::sync::atomic::Ordering;
        self.engine
            .accounts
            .load()
            .iter()
            .map(|context| {
                let usage = &context.registry.usage;
                let (total, tiers) = usage.local();
                AccountUsage {
                    account: context.registry.account_name.clone(),
                    tiered: usage.is_tiered(),
                    total,
                    tiers,
                    api: ApiCounts {
                        total: context.counters.total.load(Ordering::Relaxed),
                        errors: context.counters.errors.load(Ordering::Relaxed),
                    },
                    consumers: context.registry.led_consumers(),
                }
            })
            .collect()
    }

    /// The other servers' reports of `account`, summed (replacing the previous sum); ignored
    /// for an account this server does not serve.
    pub fn set_remote_usage(&self, account: &str, remote: &RemoteUsage) {
        if let Some(context) = self.engine.account(account) {
            context
                .registry
                .usage
                .set_remote(remote.total, remote.tiers);
            *context.remote_counts.lock() = (remote.api, remote.consumers);
        }
    }
}

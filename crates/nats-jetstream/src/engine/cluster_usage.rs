//! An account's usage in a cluster: what this server stores of each account (every replica it
//! holds, leader or not), for the clustering layer to report to the other servers
//! (nats-server's `$JSC.ARU.<account>.<node>` updates), and the sum of their reports, which
//! `$JS.API.INFO` adds to this server's own and the publish checks hold to the account's
//! limits (`resources::Usage`). Called by nats-server's `cluster/usage.rs`; knows nothing of
//! the wire or of peers.

use super::JetStream;
pub use crate::resources::StoredBytes;
pub use crate::resources::TIERS;

/// One account's bytes on this server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountUsage {
    pub account: String,
    /// Whether the account's limits are tiered: nats-server then reports each tier
    /// (`R1`..`R5`), otherwise one record for the whole account.
    pub tiered: bool,
    pub total: StoredBytes,
    /// Per tier, `R1` first.
    pub tiers: [StoredBytes; TIERS],
}

impl JetStream {
    /// What this server stores of every account it serves.
    pub fn local_usage(&self) -> Vec<AccountUsage> {
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
                }
            })
            .collect()
    }

    /// The other servers' bytes of `account`, summed (replacing the previous sum); ignored for
    /// an account this server does not serve.
    pub fn set_remote_usage(&self, account: &str, total: StoredBytes, tiers: [StoredBytes; TIERS]) {
        if let Some(context) = self.engine.account(account) {
            context.registry.usage.set_remote(total, tiers);
        }
    }
}

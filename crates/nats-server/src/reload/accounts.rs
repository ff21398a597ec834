//! A config reload's `accounts { }` and `mappings { }`, applied as nats-server's
//! `configureAccounts(true)`: accounts still configured are updated in place (their
//! connections stay; exports, imports and mappings replaced), new ones are added, and those
//! no longer configured leave the table (their users, gone or moved, are closed by their
//! readers when the authorization epoch moves, as are users moved to another account).
//!
//! Called by `reload::reload` before the new authorization is published; works on the
//! accounts table only (`accounts/table.rs`), never on connections.

use crate::accounts::{global_mappings, Account, GLOBAL_ACCOUNT};
use crate::config::Options;
use crate::server::Server;
use std::sync::Arc;

/// Make the accounts table follow `new` (the running options are `old`); the accounts taken
/// out of it are handed back (JetStream stops serving them, `jetstream.rs`). Operator mode's
/// accounts come from the resolver, not the file: nothing to do there.
pub(super) fn apply(server: &Server, old: &Options, new: &Options) -> Vec<Arc<Account>> {
    let mut removed = Vec::new();
    if server.jwt.is_some() {
        return removed;
    }
    let accounts = &server.accounts;
    for gone in &old.accounts {
        if new.accounts.iter().any(|config| config.name == gone.name) {
            continue;
        }
        if let Some(account) = accounts.remove(&gone.name) {
            tracing::debug!("Reloaded: removed account {:?}", gone.name);
            removed.push(account);
        }
    }
    for config in &new.accounts {
        let before = old.accounts.iter().find(|kept| kept.name == config.name);
        if before == Some(config) {
            continue;
        }
        let Some(account) = accounts.lookup(&config.name) else {
            accounts.add(config, server.routes());
            continue;
        };
        accounts.update(config);
        if config.name != GLOBAL_ACCOUNT
            && before.is_none_or(|before| before.mappings != config.mappings)
        {
            accounts.remap(&account, &config.mappings);
        }
    }
    if global_mappings(old) != global_mappings(new) {
        accounts.remap(accounts.global(), global_mappings(new));
    }
    removed
}

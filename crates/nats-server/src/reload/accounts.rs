//! A config reload's `accounts { }` and `mappings { }`, applied as nats-server's
//! `configureAccounts(true)`: accounts still configured are updated in place (their
//! connections stay; exports, imports and mappings replaced), new ones are added, and those
//! no longer configured leave the table (their users, gone or moved, are closed by their
//! readers when the authorization epoch moves, as are users moved to another account).
//! With JetStream running, an account whose `jetstream` settings changed is served, refused
//! or given its new limits as nats-server's `configJetStream` does (the path account JWT
//! updates take, `system::serve_jetstream`); one removed stops being served.
//!
//! Called by `reload::reload` before the new authorization is published; works on the
//! accounts table only (`accounts/table.rs`), never on connections.

use crate::accounts::{global_mappings, GLOBAL_ACCOUNT};
use crate::config::{AccountOptions, Options};
use crate::server::Server;

/// Make the accounts table follow `new` (the running options are `old`). Operator mode's
/// accounts come from the resolver, not the file: nothing to do there.
pub(super) fn apply(server: &Server, old: &Options, new: &Options) {
    if server.jwt.is_some() {
        return;
    }
    let accounts = &server.accounts;
    for gone in &old.accounts {
        if new.accounts.iter().any(|config| config.name == gone.name) {
            continue;
        }
        if let Some(account) = accounts.remove(&gone.name) {
            tracing::debug!("Reloaded: removed account {:?}", gone.name);
            if gone.jetstream {
                let refused = AccountOptions {
                    jetstream: false,
                    ..gone.clone()
                };
                crate::system::serve_jetstream(server, &account, &refused, true);
            }
        }
    }
    for config in &new.accounts {
        let before = old.accounts.iter().find(|kept| kept.name == config.name);
        if before == Some(config) {
            continue;
        }
        let Some(account) = accounts.lookup(&config.name) else {
            let account = accounts.add(config, server.routes());
            // Known to JetStream when an earlier reload removed it.
            crate::system::serve_jetstream(server, &account, config, true);
            continue;
        };
        accounts.update(config);
        let served = |config: &AccountOptions| {
            (
                config.jetstream,
                config.jetstream_limits.clone(),
                config.jetstream_tiers.clone(),
            )
        };
        if before.is_none_or(|before| served(before) != served(config)) {
            crate::system::serve_jetstream(server, &account, config, true);
        }
        if config.name != GLOBAL_ACCOUNT
            && before.is_none_or(|before| before.mappings != config.mappings)
        {
            accounts.remap(&account, &config.mappings);
        }
    }
    if global_mappings(old) != global_mappings(new) {
        accounts.remap(accounts.global(), global_mappings(new));
    }
}

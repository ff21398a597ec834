//! A config reload's JetStream, as nats-server's `configJetStream` on each account: an account
//! the new file serves and the old did not is served (its streams recovered), one it no longer
//! serves answers 10039 (its stream files kept), one whose limits changed takes them. Turning
//! `jetstream` off (or on again) in the file is the same change on every account JetStream
//! serves; the engine itself keeps running (`docs/parity.md`).
//!
//! Called by `reload::reload` after the accounts table was updated (`accounts.rs`); works
//! through the path account JWT updates take (`system::serve_jetstream`).

use crate::accounts::{Account, GLOBAL_ACCOUNT};
use crate::config::{AccountOptions, Options};
use crate::server::Server;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether `jetstream` may be turned off or on by this reload: on a single server whose
/// JetStream started with the server, and back on only with the settings it started with.
pub(super) fn check_toggle(server: &Server, new: &Options) -> Result<(), String> {
    let started = &server.options.jetstream;
    let refused = || {
        format!(
            "config reload not supported for JetStream: old={}, new={}",
            !new.jetstream.enabled, new.jetstream.enabled
        )
    };
    if server.jetstream.get().is_none() || server.meta.get().is_some() || new.cluster.is_some() {
        return Err(refused());
    }
    if new.jetstream.enabled && new.jetstream != *started {
        return Err(refused());
    }
    Ok(())
}

/// The accounts JetStream serves under `options` (as `Accounts::new` chooses them: `$G` when
/// no account is configured, else every account with `jetstream`), with their settings.
fn served(options: &Options) -> BTreeMap<String, AccountOptions> {
    let mut served = BTreeMap::new();
    if !options.jetstream.enabled {
        return served;
    }
    let configured = options
        .accounts
        .iter()
        .filter(|account| account.name != GLOBAL_ACCOUNT)
        .count();
    if configured == 0 {
        let global = options
            .accounts
            .iter()
            .find(|account| account.name == GLOBAL_ACCOUNT)
            .cloned()
            .unwrap_or(AccountOptions {
                name: GLOBAL_ACCOUNT.into(),
                ..AccountOptions::default()
            });
        served.insert(GLOBAL_ACCOUNT.into(), global);
    }
    for account in options.accounts.iter().filter(|account| account.jetstream) {
        served.insert(account.name.clone(), account.clone());
    }
    served
}

/// Serve, refuse or update every account whose JetStream differs between `old` and `new`;
/// `removed`: accounts the reload took out of the table.
pub(super) fn apply(server: &Server, old: &Options, new: &Options, removed: &[Arc<Account>]) {
    if server.jwt.is_some() {
        return;
    }
    let (before, after) = (served(old), served(new));
    let settings = |config: &AccountOptions| {
        (
            config.jetstream_limits.clone(),
            config.jetstream_tiers.clone(),
        )
    };
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for name in names {
        let (was, is) = (before.get(name), after.get(name));
        if was.map(settings) == is.map(settings) && was.is_some() == is.is_some() {
            continue;
        }
        let account = server.accounts.lookup(name).or_else(|| {
            removed
                .iter()
                .find(|account| &*account.name == name.as_str())
                .cloned()
        });
        let Some(account) = account else {
            continue;
        };
        let config = match is {
            Some(config) => AccountOptions {
                jetstream: true,
                ..config.clone()
            },
            None => AccountOptions {
                name: name.clone(),
                jetstream: false,
                ..AccountOptions::default()
            },
        };
        crate::system::serve_jetstream(server, &account, &config, true);
    }
}

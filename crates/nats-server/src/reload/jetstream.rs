//! A config reload's JetStream, as nats-server's `configJetStream` on each account: an account
//! the new file serves and the old did not is served (its streams recovered), one it no longer
//! serves answers 10039 (its stream files kept), one whose limits changed takes them. Turning
//! `jetstream` off in the file stops the engine (`stop`), turning it on starts a new one with
//! the file's settings (`start`; another `store_dir` included), in a cluster leaving or joining
//! the meta group, as nats-server's `jetStreamOption` (`jetstream_host.rs`). An account served
//! or no longer served gets or loses the `$JS.<domain>.API` mapping of a domain.
//!
//! Called by `reload::reload` after the accounts table was updated (`accounts.rs`); works
//! through the path account JWT updates take (`system::serve_jetstream`).

use crate::accounts::{global_mappings, Account, GLOBAL_ACCOUNT};
use crate::config::{AccountOptions, Options};
use crate::server::Server;
use crate::transport::ServerTransport;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Turned on (in a server started without it, or turned off by an earlier reload): a new
/// engine with the file's settings, serving the accounts the file gives JetStream (10039 in the
/// others) as at start-up, and in a cluster joining the meta group (`jetstream_host::start`).
/// Runs aside after the changes queued before it (the reload is answered first); failures are
/// logged.
pub(super) fn start(server: &Arc<Server>, new: &Options) {
    let options = new.clone();
    let served = served(new);
    let weak = Arc::downgrade(server);
    crate::jetstream_host::queue(server, async move {
        let Some(server) = weak.upgrade() else {
            return;
        };
        if server.in_lame_duck_mode() {
            return;
        }
        tracing::info!("Restarting JetStream");
        let mut accounts = Vec::new();
        let mut refused: Vec<(String, Arc<dyn nats_jetstream::Transport>)> = Vec::new();
        for account in server.accounts.iter() {
            if Arc::ptr_eq(&account, server.accounts.system()) {
                continue;
            }
            let transport = Arc::new(ServerTransport::new(Arc::downgrade(&account)));
            match served.get(&*account.name) {
                Some(options) => accounts.push(nats_jetstream::AccountSetup {
                    name: account.name.to_string(),
                    transport,
                    limits: options.jetstream_limits.clone(),
                    tiers: options.jetstream_tiers.clone(),
                }),
                None => refused.push((account.name.to_string(), transport)),
            }
        }
        if let Err(error) = crate::jetstream_host::start(&server, &options, accounts, refused).await
        {
            tracing::error!("Can't start JetStream: {error}");
        }
    });
}

/// Turned off: JetStream stops here after the changes queued before it
/// (`jetstream_host::stop`: leaderships handed over, groups and engine stopped, files kept).
pub(super) fn stop(server: &Arc<Server>) {
    let weak = Arc::downgrade(server);
    crate::jetstream_host::queue(server, async move {
        if let Some(server) = weak.upgrade() {
            crate::jetstream_host::stop(&server).await;
        }
    });
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
/// `removed`: accounts the reload took out of the table. With JetStream itself turned on or
/// off (`toggled`) only the domain mappings follow: the engine starts or stops whole.
pub(super) fn apply(
    server: &Server,
    old: &Options,
    new: &Options,
    removed: &[Arc<Account>],
    toggled: bool,
) {
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
        if !toggled {
            crate::system::serve_jetstream(server, &account, &config, true);
        }
        let mappings = if account.name.as_ref() == GLOBAL_ACCOUNT {
            global_mappings(new).to_vec()
        } else {
            new.accounts
                .iter()
                .find(|kept| kept.name == *name)
                .map(|kept| kept.mappings.clone())
                .unwrap_or_default()
        };
        server
            .accounts
            .remap_served(&account, &mappings, is.is_some());
    }
}

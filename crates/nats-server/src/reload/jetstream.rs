//! A config reload's JetStream, as nats-server's `configJetStream` on each account: an account
//! the new file serves and the old did not is served (its streams recovered), one it no longer
//! serves answers 10039 (its stream files kept), one whose limits changed takes them. Turning
//! `jetstream` off (or on again) in the file is the same change on every account JetStream
//! serves; the engine itself keeps running (`docs/parity.md`). Turned on in a single server
//! that started without it, the engine is started with the new settings (`start`). An account
//! served or no longer served gets or loses the `$JS.<domain>.API` mapping of a domain.
//!
//! Called by `reload::reload` after the accounts table was updated (`accounts.rs`); works
//! through the path account JWT updates take (`system::serve_jetstream`).

use crate::accounts::{global_mappings, Account, GLOBAL_ACCOUNT};
use crate::config::{AccountOptions, Options};
use crate::server::Server;
use crate::transport::ServerTransport;
use nats_jetstream::JetStreamConfig;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether `jetstream` may be turned off or on by this reload: on a single server (not one
/// of a cluster's), and back on with the settings it started with but for raised
/// `max_memory_store`/`max_file_store`, which are applied (`turned_on`).
pub(super) fn check_toggle(server: &Server, new: &Options) -> Result<(), String> {
    let started = &server.options.jetstream;
    let refused = || {
        format!(
            "config reload not supported for JetStream: old={}, new={}",
            !new.jetstream.enabled, new.jetstream.enabled
        )
    };
    if server.meta.get().is_some() || new.cluster.is_some() || server.options.cluster.is_some() {
        return Err(refused());
    }
    if server.jetstream.get().is_none() {
        // Started without it: turning it on starts it (`start`).
        return Ok(());
    }
    let without_limits = |config: &JetStreamConfig| JetStreamConfig {
        max_memory: None,
        max_store: None,
        ..config.clone()
    };
    // A limit set at start stays set (unset, the engine would keep the old figure).
    let limit_kept = |was: Option<i64>, is: Option<i64>| was.is_none() == is.is_none();
    if new.jetstream.enabled
        && (without_limits(&new.jetstream) != without_limits(started)
            || !limit_kept(started.max_memory, new.jetstream.max_memory)
            || !limit_kept(started.max_store, new.jetstream.max_store))
    {
        return Err(refused());
    }
    Ok(())
}

/// JetStream on again in an engine that kept running: it takes the file's limits (those it
/// started with, or raised since).
pub(super) fn turned_on(server: &Server, new: &Options) {
    if let Some(jetstream) = server.jetstream.get() {
        let _ = jetstream.raise_limits(new.jetstream.max_memory, new.jetstream.max_store);
    }
}

/// Turned on in a server started without JetStream: start the engine with the new settings,
/// serving the accounts the new file gives JetStream (10039 in the others), as at start-up
/// (`server::run`). Runs aside (the reload is answered first); failures are logged.
pub(super) fn start(server: &Arc<Server>, new: &Options) {
    let config = new.jetstream.clone();
    let served = served(new);
    let server = server.clone();
    tokio::spawn(async move {
        tracing::info!("Starting JetStream");
        let started = std::time::Instant::now();
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
        let identity = server.identity();
        match nats_jetstream::JetStream::start_accounts(config, identity, accounts, refused).await {
            Ok(jetstream) => {
                for line in jetstream.banner_lines() {
                    tracing::info!("{line}");
                }
                tracing::info!("Took {:?} to start JetStream", started.elapsed());
                let _ = server.jetstream.set(jetstream);
            }
            Err(error) => tracing::error!("Can't start JetStream: {error}"),
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

//! The accounts table: every account by name, built at start from the options and grown at
//! run time in operator mode. Readers (CONNECT, route `RS+`/`RMSG`, monitoring) load a
//! copy-on-write map without a lock; the rare writer (an account added) copies it under a
//! mutex writers alone take.

use super::{Account, DEFAULT_SYSTEM_ACCOUNT, GLOBAL_ACCOUNT, JETSTREAM_API, SYSTEM_IMPORTS};
use crate::config::{AccountOptions, MappingOptions, Options, ResponseType};
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// An account JetStream serves: its limits, and its JWT's tiers when they are tiered.
pub type ServedAccount = (
    Arc<Account>,
    nats_jetstream::AccountLimits,
    nats_jetstream::TieredLimits,
);

/// What every account built at run time gets as those built at start did.
struct Template {
    /// This server and its cluster, as an imported request's info names them.
    origin: (String, Option<String>),
    cluster_name: Option<String>,
    /// In a cluster without JetStream here, `$JS.API.>` is imported from the system account.
    jetstream_through_system: bool,
    /// With a JetStream domain, `$JS.<domain>.API.>` mapped onto `$JS.API.>`.
    domain_mapping: Option<MappingOptions>,
    /// Operator mode: an account gets its system imports at its first lookup by name.
    lazy_system_imports: bool,
}

/// Every account of the server.
pub struct Accounts {
    global: Arc<Account>,
    system: Arc<Account>,
    /// Keyed by the account's own name (no second copy of it).
    by_name: ArcSwap<HashMap<Arc<str>, Arc<Account>>>,
    /// Held by writers of `by_name` only.
    grow: Mutex<()>,
    /// The accounts JetStream serves, with their limits, sorted by name (fixed at start).
    jetstream: Vec<ServedAccount>,
    template: Template,
}

impl Accounts {
    /// JetStream is served where nats-server serves it: in `$G` when no account is configured,
    /// else in every account with `jetstream: enabled` (or a limits block), each with its
    /// limits.
    pub fn new(options: &Options, server_name: &str) -> Accounts {
        let configured = options
            .accounts
            .iter()
            .filter(|account| account.name != GLOBAL_ACCOUNT)
            .count();
        let jetstream_enabled = options.jetstream.enabled;
        let global_config = options
            .accounts
            .iter()
            .find(|account| account.name == GLOBAL_ACCOUNT && account.jetstream);
        let mut by_name = HashMap::new();
        let global = Account::new(GLOBAL_ACCOUNT);
        by_name.insert(global.name.clone(), global.clone());
        let mut jetstream = Vec::new();
        if jetstream_enabled && (configured == 0 || global_config.is_some()) {
            let limits = global_config
                .map(|config| config.jetstream_limits.clone())
                .unwrap_or_default();
            jetstream.push((global.clone(), limits, Default::default()));
        }
        let mut sorted: Vec<_> = options.accounts.iter().collect();
        sorted.sort_by(|left, right| left.name.cmp(&right.name));
        for config in sorted {
            if config.name == GLOBAL_ACCOUNT {
                continue;
            }
            let account = Account::new(&config.name);
            if jetstream_enabled && config.jetstream {
                jetstream.push((
                    account.clone(),
                    config.jetstream_limits.clone(),
                    config.jetstream_tiers.clone(),
                ));
            }
            by_name.insert(account.name.clone(), account);
        }
        jetstream.sort_by(|left, right| left.0.name.cmp(&right.0.name));
        let system_name = options
            .system_account
            .as_deref()
            .unwrap_or(DEFAULT_SYSTEM_ACCOUNT);
        let system = match by_name.get(system_name) {
            Some(system) => system.clone(),
            None => {
                let system = Account::new(system_name);
                by_name.insert(system.name.clone(), system.clone());
                system
            }
        };
        let cluster_name = options
            .cluster
            .as_ref()
            .and_then(|cluster| cluster.name.clone());
        let accounts = Accounts {
            global,
            system,
            by_name: ArcSwap::from_pointee(by_name),
            grow: Mutex::new(()),
            jetstream,
            template: Template {
                origin: (server_name.to_string(), cluster_name.clone()),
                cluster_name: cluster_name.clone(),
                jetstream_through_system: options.cluster.is_some() && !options.jetstream.enabled,
                domain_mapping: domain_mapping(options),
                lazy_system_imports: options.operator.enabled(),
            },
        };
        accounts.remap(&accounts.global, global_mappings(options));
        for config in &options.accounts {
            if let Some(account) = accounts.find(&config.name) {
                account.declare(config);
            }
        }
        for config in &options.accounts {
            if let Some(account) = accounts.find(&config.name) {
                account.build_imports(&accounts);
                if !Arc::ptr_eq(&account, &accounts.global) {
                    accounts.remap(&account, &config.mappings);
                }
            }
        }
        for account in accounts.iter() {
            let lazy = accounts.template.lazy_system_imports
                && !Arc::ptr_eq(&account, &accounts.global)
                && !accounts
                    .jetstream
                    .iter()
                    .any(|(served, _, _)| Arc::ptr_eq(served, &account));
            if !lazy {
                accounts.add_system_imports(&account);
            }
        }
        accounts
    }

    /// nats-server's service imports from the system account in an account (every one but the
    /// system account): its `$SYS.REQ.ACCOUNT.PING.*` requests, and in a cluster without
    /// JetStream here `$JS.API.>`, so this server forwards the request in the system account
    /// to the servers that have JetStream. Once per account.
    fn add_system_imports(&self, account: &Arc<Account>) {
        if Arc::ptr_eq(account, &self.system) || account.system_imports.get().is_some() {
            return;
        }
        account
            .system_imports
            .get_or_init(|| self.insert_system_imports(account));
    }

    fn insert_system_imports(&self, account: &Arc<Account>) {
        for (local, kind) in SYSTEM_IMPORTS {
            account.add_service_import(
                &self.system,
                local,
                &format!("$SYS.REQ.ACCOUNT.{}.{kind}", account.name),
                Some(ResponseType::Stream),
                None,
                Some(self.origin()),
                false,
            );
        }
        if self.template.jetstream_through_system {
            account.add_service_import(
                &self.system,
                JETSTREAM_API,
                JETSTREAM_API,
                None,
                None,
                Some(self.origin()),
                true,
            );
        }
    }

    /// Give `account` these configured subject mappings in place of its current ones (at start,
    /// or a config reload), with the JetStream domain's mapping when JetStream serves it.
    pub fn remap(&self, account: &Arc<Account>, configured: &[MappingOptions]) {
        let served = self
            .jetstream
            .iter()
            .any(|(jetstream, _, _)| Arc::ptr_eq(jetstream, account));
        self.remap_served(account, configured, served);
    }

    /// [`Self::remap`] for an account JetStream serves (`served`) or not since a config
    /// reload, whatever it was at start.
    pub fn remap_served(
        &self,
        account: &Arc<Account>,
        configured: &[MappingOptions],
        served: bool,
    ) {
        let mut mappings = configured.to_vec();
        if let Some(domain) = self.template.domain_mapping.as_ref().filter(|_| served) {
            mappings.push(domain.clone());
        }
        account.set_mappings(&mappings, self.template.cluster_name.clone());
    }

    /// Take an account out of the table (a config reload no longer has it): route traffic
    /// and new connections no longer reach it; the accounts importing from it are rebuilt
    /// without those imports. The global and system accounts stay.
    pub fn remove(&self, name: &str) -> Option<Arc<Account>> {
        let _grow = self.grow.lock();
        let account = self.find(name)?;
        if Arc::ptr_eq(&account, &self.global) || Arc::ptr_eq(&account, &self.system) {
            return None;
        }
        let mut by_name = HashMap::clone(&self.by_name.load());
        by_name.remove(name);
        self.by_name.store(Arc::new(by_name));
        for importer in self.iter() {
            if importer.imports_from(name) {
                importer.build_imports(self);
            }
        }
        Some(account)
    }

    /// This server and its cluster, as an imported request's info names them.
    pub(super) fn origin(&self) -> (String, Option<String>) {
        self.template.origin.clone()
    }

    /// Add an account at run time (operator mode: an account JWT the full resolver took), or
    /// the account already of that name. In a cluster its table announces its interest on
    /// `routes` from the start. Accounts that import from it and were built before it existed
    /// get those imports now.
    pub fn add(
        &self,
        config: &AccountOptions,
        routes: Option<&Arc<crate::route::Routes>>,
    ) -> Arc<Account> {
        let _grow = self.grow.lock();
        if let Some(existing) = self.find(&config.name) {
            return existing;
        }
        let account = Account::new(&config.name);
        if let Some(routes) = routes {
            account.router.set_routes(routes.clone());
        }
        account.declare(config);
        account.set_mappings(&config.mappings, self.template.cluster_name.clone());
        self.add_system_imports(&account);
        let mut by_name = HashMap::clone(&self.by_name.load());
        by_name.insert(account.name.clone(), account.clone());
        self.by_name.store(Arc::new(by_name));
        account.build_imports(self);
        for importer in self.iter() {
            if !Arc::ptr_eq(&importer, &account) && importer.imports_from(&config.name) {
                importer.build_imports(self);
            }
        }
        // Interest the routes announced before the account was here.
        for link in routes.map(|routes| routes.links()).unwrap_or_default() {
            link.adopt_pending(&account);
        }
        account
    }

    /// Replace the exports and imports of an account in place (its claims were updated): its
    /// connections stay, its imports are rebuilt, and so are those of the accounts importing
    /// from it (the response types of its service exports). `None`: no such account.
    pub fn update(&self, config: &AccountOptions) -> Option<Arc<Account>> {
        let _grow = self.grow.lock();
        let account = self.find(&config.name)?;
        account.declare(config);
        account.build_imports(self);
        for importer in self.iter() {
            if !Arc::ptr_eq(&importer, &account) && importer.imports_from(&config.name) {
                importer.build_imports(self);
            }
        }
        Some(account)
    }

    /// An account by name, as it is (no system imports added).
    pub(super) fn find(&self, name: &str) -> Option<Arc<Account>> {
        self.by_name.load().get(name).cloned()
    }

    pub fn global(&self) -> &Arc<Account> {
        &self.global
    }

    /// The system account (`$SYS` unless `system_account` names another).
    pub fn system(&self) -> &Arc<Account> {
        &self.system
    }

    /// The accounts JetStream serves with their limits, sorted by name (empty: JetStream is
    /// off, or on for no account).
    pub fn jetstream(&self) -> &[ServedAccount] {
        &self.jetstream
    }

    /// An account by name (route traffic, CONNECT): one atomic load, no lock (and one more
    /// for the system imports, added here the first time in operator mode).
    pub fn lookup(&self, name: &str) -> Option<Arc<Account>> {
        let account = self.by_name.load().get(name).cloned()?;
        self.add_system_imports(&account);
        Some(account)
    }

    /// Every account, in no particular order (a snapshot: one added meanwhile is not in it).
    pub fn iter(&self) -> impl Iterator<Item = Arc<Account>> {
        let snapshot = self.by_name.load_full();
        let accounts: Vec<_> = snapshot.values().cloned().collect();
        accounts.into_iter()
    }

    /// Subscriptions of every account together (/varz, /subsz).
    pub fn subscription_count(&self) -> usize {
        self.by_name
            .load()
            .values()
            .map(|account| account.router.subscription_count())
            .sum()
    }

    /// /subsz counters over every account's table.
    pub fn statistics(&self) -> Vec<(String, serde_json::Value)> {
        super::sublist_statistics(self.by_name.load().values())
    }
}

/// nats-server with a JetStream domain: every JetStream account maps `$JS.<domain>.API.>` onto
/// `$JS.API.>`, so a client's domain context reaches this server's JetStream.
fn domain_mapping(options: &Options) -> Option<MappingOptions> {
    let domain = options.jetstream.domain.as_ref()?;
    options.jetstream.enabled.then(|| MappingOptions {
        source: format!("$JS.{domain}.API.>"),
        destinations: vec![crate::config::MapDestination {
            subject: JETSTREAM_API.to_string(),
            weight: 100,
            cluster: None,
        }],
    })
}

/// The global account's mappings: the top-level `mappings { }`, else those of an
/// `accounts { $G { } }` entry.
pub fn global_mappings(options: &Options) -> &[MappingOptions] {
    if !options.mappings.is_empty() {
        return &options.mappings;
    }
    options
        .accounts
        .iter()
        .find(|account| account.name == GLOBAL_ACCOUNT)
        .map_or(&[], |account| account.mappings.as_slice())
}

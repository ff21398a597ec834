//! Accounts: each one its own subject space (an [`Account`] owns a [`Router`], so the same
//! subject in two accounts never meets). Built once at start from the options: the global
//! account `$G` (users outside any `accounts { }` entry), every configured account, and the
//! system account (`$SYS` unless `system_account` names another), which exists even when not
//! configured, as in nats-server.
//!
//! A connection resolves its account once at CONNECT and keeps an `Arc<Account>`, so routing
//! never looks an account up by name; only route traffic (which names the account on every
//! `RS+`/`RMSG`) does. Knows nothing about sockets or the route protocol.
//!
//! Stream and service imports between accounts (`exports`/`imports` in the config) are built
//! here once every account exists and run in `imports.rs` (shadow subscriptions, request
//! forwarding) and `responses.rs` (answers mapped back to the requester). Subject mappings
//! (`mappings { }`) are built here too and applied by `mappings.rs`.

pub mod imports;
pub mod mappings;
mod responses;
pub(crate) use responses::deliver_routed;

use crate::config::{ImportOptions, Options, ResponseType};
use crate::router::{Router, Subscriber};
use imports::{ImportTarget, Mapping, ServiceImport, StreamImport};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// nats-server's global account: users outside any configured account.
pub const GLOBAL_ACCOUNT: &str = "$G";
/// nats-server's default system account.
pub const DEFAULT_SYSTEM_ACCOUNT: &str = "$SYS";

/// Every JetStream API subject.
const JETSTREAM_API: &str = "$JS.API.>";

/// nats-server's service imports from the system account in every other account: the
/// subject there and the kind of `$SYS.REQ.ACCOUNT.<this account>.<kind>` it asks for.
pub const SYSTEM_IMPORTS: [(&str, &str); 3] = [
    ("$SYS.REQ.ACCOUNT.PING.CONNZ", "CONNZ"),
    ("$SYS.REQ.SERVER.PING.CONNZ", "CONNZ"),
    ("$SYS.REQ.ACCOUNT.PING.STATZ", "STATZ"),
];

/// This server and its cluster, as an imported request's info names them.
fn origin(options: &Options, server_name: &str) -> (String, Option<String>) {
    (
        server_name.to_string(),
        options
            .cluster
            .as_ref()
            .and_then(|cluster| cluster.name.clone()),
    )
}

/// One account: a name, its own subject table, what it imports and the answers it owes.
pub struct Account {
    pub name: Arc<str>,
    pub router: Router,
    /// Set once at start, after every account exists.
    imports: OnceLock<Imports>,
    /// Set at start when the account has subject mappings.
    mappings: OnceLock<mappings::Mappings>,
    responses: responses::Responses,
}

/// The imports of one account.
#[derive(Default)]
struct Imports {
    streams: Vec<Arc<StreamImport>>,
}

impl Account {
    /// An account no connection or route can reach (JetStream enabled in no account).
    pub fn unreachable() -> Arc<Account> {
        Account::new("$JS.unreachable")
    }

    fn new(name: &str) -> Arc<Account> {
        let name: Arc<str> = Arc::from(name);
        Arc::new(Account {
            router: Router::new(name.clone()),
            name,
            imports: OnceLock::new(),
            mappings: OnceLock::new(),
            responses: responses::Responses::default(),
        })
    }

    /// Enter a service import in this account's table: requests on `local` (here) go to
    /// `remote` in `exporter`.
    #[allow(clippy::too_many_arguments)]
    fn add_service_import(
        self: &Arc<Self>,
        exporter: &Arc<Account>,
        local: &str,
        remote: &str,
        response_type: Option<ResponseType>,
        threshold: Option<std::time::Duration>,
        origin: Option<(String, Option<String>)>,
        jetstream: bool,
    ) {
        let service = ServiceImport {
            importer: Arc::downgrade(self),
            exporter: Arc::downgrade(exporter),
            mapping: Mapping::new(local, remote),
            response_type: response_type.unwrap_or(ResponseType::Singleton),
            threshold: threshold.unwrap_or(crate::config::DEFAULT_RESPONSE_THRESHOLD),
            origin,
            jetstream,
        };
        let target = Arc::new(ImportTarget::Service(Arc::new(service)));
        self.router.insert(local, None, Subscriber::Import(target));
    }

    /// What this account's subject mappings make of a publish on `subject` (`None`: unmapped,
    /// which is all an account without mappings ever answers, after one atomic load).
    #[inline]
    pub fn map_subject(&self, subject: &bytes::Bytes) -> Option<mappings::Mapped> {
        self.mappings.get()?.select(subject)
    }

    fn set_mappings(&self, options: &[crate::config::MappingOptions], cluster: Option<String>) {
        if let Some(built) = mappings::Mappings::new(options, cluster) {
            let _ = self.mappings.set(built);
        }
    }

    /// Responses still mapped back to requesters of other accounts.
    pub fn pending_responses(&self) -> usize {
        self.responses.pending()
    }

    /// Build this account's imports from the checked config: stream imports kept for SUBs to
    /// shadow, service imports entered in this account's table (never announced on routes).
    fn build_imports(
        self: &Arc<Self>,
        imports: &[ImportOptions],
        accounts: &Accounts,
        options: &Options,
        server_name: &str,
    ) {
        let mut built = Imports::default();
        for import in imports {
            let Some(exporter) = accounts.lookup(&import.account) else {
                continue;
            };
            if !import.service {
                built.streams.push(Arc::new(StreamImport {
                    exporter: Arc::downgrade(exporter),
                    from: import.subject.clone(),
                    to: import.to.clone(),
                    mapping: Mapping::new(&import.subject, &import.to),
                }));
                continue;
            }
            let export = options
                .accounts
                .iter()
                .find(|account| account.name == import.account)
                .and_then(|account| {
                    let exports = || {
                        account
                            .exports
                            .iter()
                            .filter(|export| export.service.is_some())
                    };
                    exports()
                        .find(|export| export.subject == import.subject)
                        .or_else(|| {
                            exports().find(|export| {
                                nats_subject::is_subset_match(&import.subject, &export.subject)
                            })
                        })
                });
            let system = Arc::ptr_eq(exporter, accounts.system());
            self.add_service_import(
                exporter,
                &import.to,
                &import.subject,
                export.and_then(|export| export.service),
                export.map(|export| export.threshold),
                system.then(|| origin(options, server_name)),
                false,
            );
        }
        let _ = self.imports.set(built);
    }
}

/// An account JetStream serves: its limits, and its JWT's tiers when they are tiered.
pub type ServedAccount = (
    Arc<Account>,
    nats_jetstream::AccountLimits,
    nats_jetstream::TieredLimits,
);

/// Every account of the server, fixed at start.
pub struct Accounts {
    global: Arc<Account>,
    system: Arc<Account>,
    by_name: HashMap<String, Arc<Account>>,
    /// The accounts JetStream serves, with their limits, sorted by name.
    jetstream: Vec<ServedAccount>,
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
        by_name.insert(GLOBAL_ACCOUNT.to_string(), global.clone());
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
            by_name.insert(config.name.clone(), account);
        }
        jetstream.sort_by(|left, right| left.0.name.cmp(&right.0.name));
        let system_name = options
            .system_account
            .as_deref()
            .unwrap_or(DEFAULT_SYSTEM_ACCOUNT);
        let system = by_name
            .entry(system_name.to_string())
            .or_insert_with(|| Account::new(system_name))
            .clone();
        let accounts = Accounts {
            global,
            system,
            by_name,
            jetstream,
        };
        let cluster_name = options
            .cluster
            .as_ref()
            .and_then(|cluster| cluster.name.clone());
        // nats-server with a JetStream domain: every JetStream account maps `$JS.<domain>.API.>`
        // onto `$JS.API.>`, so a client's domain context reaches this server's JetStream.
        let domain_mapping = options
            .jetstream
            .domain
            .as_ref()
            .filter(|_| jetstream_enabled)
            .map(|domain| crate::config::MappingOptions {
                source: format!("$JS.{domain}.API.>"),
                destinations: vec![crate::config::MapDestination {
                    subject: JETSTREAM_API.to_string(),
                    weight: 100,
                    cluster: None,
                }],
            });
        let with_domain = |account: &Arc<Account>, configured: &[crate::config::MappingOptions]| {
            let mut mappings = configured.to_vec();
            if let Some(domain) = &domain_mapping {
                if accounts
                    .jetstream
                    .iter()
                    .any(|(jetstream, _, _)| Arc::ptr_eq(jetstream, account))
                {
                    mappings.push(domain.clone());
                }
            }
            mappings
        };
        accounts.global.set_mappings(
            &with_domain(&accounts.global, &options.mappings),
            cluster_name.clone(),
        );
        for config in &options.accounts {
            if let Some(account) = accounts.lookup(&config.name) {
                account.build_imports(&config.imports, &accounts, options, server_name);
                account.set_mappings(
                    &with_domain(account, &config.mappings),
                    cluster_name.clone(),
                );
            }
        }
        for account in accounts.iter() {
            if Arc::ptr_eq(account, &accounts.system) {
                continue;
            }
            for (local, kind) in SYSTEM_IMPORTS {
                account.add_service_import(
                    &accounts.system,
                    local,
                    &format!("$SYS.REQ.ACCOUNT.{}.{kind}", account.name),
                    Some(ResponseType::Stream),
                    None,
                    Some(origin(options, server_name)),
                    false,
                );
            }
        }
        // nats-server in a cluster: every account reaches JetStream through a service import of
        // `$JS.API.>` from the system account, so a server without JetStream forwards the
        // request in the system account to the servers that have it.
        if options.cluster.is_some() && !options.jetstream.enabled {
            for account in accounts.iter() {
                if Arc::ptr_eq(account, &accounts.system) {
                    continue;
                }
                account.add_service_import(
                    &accounts.system,
                    JETSTREAM_API,
                    JETSTREAM_API,
                    None,
                    None,
                    Some(origin(options, server_name)),
                    true,
                );
            }
        }
        accounts
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

    /// An account by name (route traffic, CONNECT).
    pub fn lookup(&self, name: &str) -> Option<&Arc<Account>> {
        self.by_name.get(name)
    }

    /// Every account, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Account>> {
        self.by_name.values()
    }

    /// Subscriptions of every account together (/varz, /subsz).
    pub fn subscription_count(&self) -> usize {
        self.iter()
            .map(|account| account.router.subscription_count())
            .sum()
    }
}

impl Accounts {
    /// /subsz counters over every account's table.
    pub fn statistics(&self) -> Vec<(String, serde_json::Value)> {
        sublist_statistics(self.iter())
    }
}

/// /subsz counters over these accounts' tables, as nats-server sums them: counts added, the
/// hit rate and average fan-out weighted, the largest fan-out kept.
pub fn sublist_statistics<'a>(
    accounts: impl Iterator<Item = &'a Arc<Account>>,
) -> Vec<(String, serde_json::Value)> {
    let mut total = nats_subject::SublistStats::default();
    let (mut hits, mut fanout) = (0.0, 0.0);
    for account in accounts {
        let stats = account.router.statistics();
        total.num_subscriptions += stats.num_subscriptions;
        total.num_cache += stats.num_cache;
        total.num_inserts += stats.num_inserts;
        total.num_removes += stats.num_removes;
        total.num_matches += stats.num_matches;
        total.max_fanout = total.max_fanout.max(stats.max_fanout);
        hits += stats.cache_hit_rate * stats.num_matches as f64;
        fanout += stats.avg_fanout * stats.num_cache as f64;
    }
    if total.num_matches > 0 {
        total.cache_hit_rate = hits / total.num_matches as f64;
    }
    if total.num_cache > 0 {
        total.avg_fanout = fanout / total.num_cache as f64;
    }
    vec![
        ("num_subscriptions".into(), total.num_subscriptions.into()),
        ("num_cache".into(), total.num_cache.into()),
        ("num_inserts".into(), total.num_inserts.into()),
        ("num_removes".into(), total.num_removes.into()),
        ("num_matches".into(), total.num_matches.into()),
        ("cache_hit_rate".into(), total.cache_hit_rate.into()),
        ("max_fanout".into(), total.max_fanout.into()),
        ("avg_fanout".into(), total.avg_fanout.into()),
    ]
}

//! Accounts: each one its own subject space (an [`Account`] owns a [`Router`], so the same
//! subject in two accounts never meets). The table (`table.rs`) is built at start from the
//! options: the global account `$G` (users outside any `accounts { }` entry), every configured
//! account, and the system account (`$SYS` unless `system_account` names another), which
//! exists even when not configured, as in nats-server. In operator mode it grows at run time
//! (an account JWT pushed to the full resolver) and an account's exports and imports are
//! replaced in place when its JWT is updated.
//!
//! A connection resolves its account once at CONNECT and keeps an `Arc<Account>`, so routing
//! never looks an account up by name; only route traffic (which names the account on every
//! `RS+`/`RMSG`) does, in a copy-on-write map read without a lock.
//! Knows nothing about sockets or the route protocol.
//!
//! Stream and service imports between accounts (`exports`/`imports` in the config) are built
//! here once their accounts exist and run in `imports.rs` (shadow subscriptions, request
//! forwarding) and `responses.rs` (answers mapped back to the requester). Subject mappings
//! (`mappings { }`) are built here too and applied by `mappings.rs`.

pub mod imports;
pub mod mappings;
mod responses;
mod table;
pub(crate) use responses::deliver_routed;
pub use table::{global_mappings, Accounts};

use crate::config::{ExportOptions, ImportOptions, ResponseType};
use crate::router::{Router, Subscriber};
use arc_swap::{ArcSwap, ArcSwapOption};
use imports::{ImportTarget, Mapping, ServiceImport, StreamImport};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

/// One account: a name, its own subject table, what it imports and the answers it owes.
pub struct Account {
    pub name: Arc<str>,
    pub router: Router,
    /// Replaced whole when the account's imports change (read when a client subscribes).
    imports: ArcSwap<Imports>,
    /// What the account exports and imports, as configured or claimed (read when imports are
    /// built, never on the message path).
    declared: Mutex<Declared>,
    /// The account's subject mappings (`None`: it has none), replaced by a config reload.
    mappings: ArcSwapOption<mappings::Mappings>,
    /// Whether `mappings` holds any: an account without them pays one relaxed load.
    mapped: AtomicBool,
    responses: responses::Responses,
    /// Set once the system imports are in this account's table: at start, or (operator mode,
    /// where nats-server registers an account only when it is first looked up) at the first
    /// lookup by name, so 10,000 preloaded accounts nobody uses carry no import trie.
    system_imports: std::sync::OnceLock<()>,
}

/// The imports of one account: stream imports for SUBs to shadow, and the service-import
/// entries it put into its own table (removed when the imports are rebuilt).
#[derive(Default)]
struct Imports {
    streams: Vec<Arc<StreamImport>>,
    services: Vec<(String, Arc<ImportTarget>)>,
}

impl Imports {
    /// No imports: one value every account without imports shares.
    fn none() -> Arc<Imports> {
        static NONE: std::sync::OnceLock<Arc<Imports>> = std::sync::OnceLock::new();
        NONE.get_or_init(|| Arc::new(Imports::default())).clone()
    }
}

/// An account's exports and imports as declared.
#[derive(Default)]
struct Declared {
    exports: Vec<ExportOptions>,
    imports: Vec<ImportOptions>,
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
            imports: ArcSwap::new(Imports::none()),
            declared: Mutex::new(Declared::default()),
            mappings: ArcSwapOption::empty(),
            mapped: AtomicBool::new(false),
            responses: responses::Responses::default(),
            system_imports: std::sync::OnceLock::new(),
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
    ) -> Arc<ImportTarget> {
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
        self.router
            .insert(local, None, Subscriber::Import(target.clone()));
        target
    }

    /// What this account's subject mappings make of a publish on `subject` (`None`: unmapped,
    /// which is all an account without mappings ever answers, after one atomic load).
    #[inline]
    pub fn map_subject(&self, subject: &bytes::Bytes) -> Option<mappings::Mapped> {
        if !self.mapped.load(Ordering::Relaxed) {
            return None;
        }
        self.mappings.load().as_ref()?.select(subject)
    }

    /// Take these subject mappings in place of the ones before (none: the account maps
    /// nothing from now on).
    fn set_mappings(&self, options: &[crate::config::MappingOptions], cluster: Option<String>) {
        let built = mappings::Mappings::new(options, cluster).map(Arc::new);
        self.mapped.store(built.is_some(), Ordering::Relaxed);
        self.mappings.store(built);
    }

    /// Responses still mapped back to requesters of other accounts.
    pub fn pending_responses(&self) -> usize {
        self.responses.pending()
    }

    /// The service export of this account an import of `subject` reaches: the one exported
    /// as that subject, else one whose pattern covers it.
    fn service_export(&self, subject: &str) -> Option<(Option<ResponseType>, std::time::Duration)> {
        let declared = self.declared.lock();
        let exports = || {
            declared
                .exports
                .iter()
                .filter(|export| export.service.is_some())
        };
        exports()
            .find(|export| export.subject == subject)
            .or_else(|| {
                exports().find(|export| nats_subject::is_subset_match(subject, &export.subject))
            })
            .map(|export| (export.service, export.threshold))
    }

    /// Take what `config` declares this account exports and imports (built by
    /// [`Account::build_imports`]).
    fn declare(&self, config: &crate::config::AccountOptions) {
        let mut declared = self.declared.lock();
        declared.exports = config.exports.clone();
        declared.imports = config.imports.clone();
    }

    /// Whether this account imports anything from `exporter`.
    fn imports_from(&self, exporter: &str) -> bool {
        self.declared
            .lock()
            .imports
            .iter()
            .any(|import| import.account == exporter)
    }

    /// (Re)build this account's imports from what it declares: stream imports kept for SUBs to
    /// shadow, service imports entered in this account's table (never announced on routes),
    /// replacing the service imports built before. An import whose exporter the table does
    /// not have is left out.
    fn build_imports(self: &Arc<Self>, accounts: &Accounts) {
        let imports = self.declared.lock().imports.clone();
        let previous = self.imports.load_full();
        let mut built = Imports::default();
        for import in &imports {
            let Some(exporter) = accounts.find(&import.account) else {
                continue;
            };
            if !import.service {
                // An import kept across the rebuild keeps its shadows delivering.
                let kept = previous
                    .streams
                    .iter()
                    .find(|kept| kept.same_as(&exporter, &import.subject, &import.to));
                built.streams.push(kept.cloned().unwrap_or_else(|| {
                    Arc::new(StreamImport {
                        exporter: Arc::downgrade(&exporter),
                        from: import.subject.clone(),
                        to: import.to.clone(),
                        mapping: Mapping::new(&import.subject, &import.to),
                        live: std::sync::atomic::AtomicBool::new(true),
                    })
                }));
                continue;
            }
            let export = exporter.service_export(&import.subject);
            let system = Arc::ptr_eq(&exporter, accounts.system());
            let target = self.add_service_import(
                &exporter,
                &import.to,
                &import.subject,
                export.and_then(|(response_type, _)| response_type),
                export.map(|(_, threshold)| threshold),
                system.then(|| accounts.origin()),
                false,
            );
            built.services.push((import.to.clone(), target));
        }
        for dropped in previous
            .streams
            .iter()
            .filter(|old| !built.streams.iter().any(|new| Arc::ptr_eq(old, new)))
        {
            dropped.live.store(false, Ordering::Relaxed);
        }
        self.imports
            .store(if built.streams.is_empty() && built.services.is_empty() {
                Imports::none()
            } else {
                Arc::new(built)
            });
        for (local, target) in &previous.services {
            self.router
                .remove(local, None, &Subscriber::Import(target.clone()));
        }
    }
}

/// /subsz counters over these accounts' tables, as nats-server sums them: counts added, the
/// hit rate and average fan-out weighted, the largest fan-out kept.
pub fn sublist_statistics<A: AsRef<Account>>(
    accounts: impl Iterator<Item = A>,
) -> Vec<(String, serde_json::Value)> {
    let mut total = nats_subject::SublistStats::default();
    let (mut hits, mut fanout) = (0.0, 0.0);
    for account in accounts {
        let stats = account.as_ref().router.statistics();
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

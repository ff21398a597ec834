//! Resource accounting: nats-server's server-wide defaults when the config sets none (75% of
//! physical memory, 75% of the free space on the store's file system), the bytes each account
//! (and the server as a whole) stores and reserves, and human-readable sizes for the banner.
//! Built by [`crate::JetStream::start`]; read by the registry (reservations) and the ingest
//! tasks (stored bytes).

use jetstream_api::{errors, AccountLimits, ApiError, StorageType};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// Server resource limits in effect (bytes): set at start, raised by a config reload
/// ([`ServerResources::raise`]).
#[derive(Debug)]
pub(crate) struct ResourceLimits {
    max_memory: AtomicI64,
    max_store: AtomicI64,
}

impl ResourceLimits {
    pub(crate) fn new(max_memory: i64, max_store: i64) -> ResourceLimits {
        ResourceLimits {
            max_memory: AtomicI64::new(max_memory),
            max_store: AtomicI64::new(max_store),
        }
    }

    pub(crate) fn max_memory(&self) -> i64 {
        self.max_memory.load(Ordering::Relaxed)
    }

    pub(crate) fn max_store(&self) -> i64 {
        self.max_store.load(Ordering::Relaxed)
    }
}

/// The server's maxima, its usage (every account's bytes) and its reservations: what each
/// account's registry is built with.
pub(crate) struct ServerResources {
    pub limits: Arc<ResourceLimits>,
    pub usage: Arc<Usage>,
    pub reservations: Arc<Reservations>,
}

impl ServerResources {
    pub(crate) fn new(max_memory: i64, max_store: i64) -> ServerResources {
        ServerResources {
            limits: Arc::new(ResourceLimits::new(max_memory, max_store)),
            usage: Arc::new(Usage::new(max_memory, max_store)),
            reservations: Arc::default(),
        }
    }

    /// New server-wide maxima (`None`: unchanged), for reservations and stored bytes alike.
    pub(crate) fn raise(&self, max_memory: Option<i64>, max_store: Option<i64>) {
        if let Some(max_memory) = max_memory {
            self.limits.max_memory.store(max_memory, Ordering::Relaxed);
        }
        if let Some(max_store) = max_store {
            self.limits.max_store.store(max_store, Ordering::Relaxed);
        }
        self.usage
            .set_maxima(self.limits.max_memory(), self.limits.max_store());
    }
}

/// nats-server's most replicas a stream may have: its tiers run from `R1` to `R5`.
pub const TIERS: usize = 5;

/// Bytes stored in memory and in files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoredBytes {
    pub memory: i64,
    pub storage: i64,
}
/// A tier's maximum where an account's tiered limits name no such tier (10120 at a publish).
const NO_TIER: i64 = i64::MIN;

/// One figure per storage type.
#[derive(Default)]
struct PerStorage {
    memory: AtomicI64,
    store: AtomicI64,
}

impl PerStorage {
    fn new(memory: i64, store: i64) -> PerStorage {
        PerStorage {
            memory: AtomicI64::new(memory),
            store: AtomicI64::new(store),
        }
    }

    fn of(&self, storage: StorageType) -> &AtomicI64 {
        match storage {
            StorageType::Memory => &self.memory,
            StorageType::File => &self.store,
        }
    }

    fn get(&self, storage: StorageType) -> i64 {
        self.of(storage).load(Ordering::Relaxed)
    }

    fn set(&self, memory: i64, store: i64) {
        self.memory.store(memory, Ordering::Relaxed);
        self.store.store(store, Ordering::Relaxed);
    }
}

/// The tier (`R1` .. `R5`) a stream of `replicas` replicas counts in, as an index.
fn tier_index(replicas: i64) -> usize {
    (replicas.clamp(1, TIERS as i64) - 1) as usize
}

/// Bytes stored against maxima: one per account, each adding into the server's own
/// (`server`, with the server's maxima), shared by every stream's ingest task. Bytes are
/// counted per replica tier as nats-server's `jsAccount` usage is: an account with tiered
/// limits holds each tier's bytes to that tier's maxima, any other account holds all its bytes
/// to its own maxima (negative: none).
pub(crate) struct Usage {
    /// The maxima of an untiered account, or the server's: set at start, and again when an
    /// account's limits (or, for the server's own, a reload) change them at run time.
    maxima: PerStorage,
    /// Whether the account's limits are tiered: then `tier_maxima` holds them (`NO_TIER`
    /// for a tier they do not name).
    tiered: AtomicBool,
    tier_maxima: [PerStorage; TIERS],
    used: PerStorage,
    tier_used: [PerStorage; TIERS],
    /// The account's bytes on the other servers of a cluster, as they last reported them
    /// (`crate::engine::cluster_usage`): nats-server's remote usage, added to this server's own
    /// where the account's usage is reported and held to its limits. Zero on a single server.
    remote: PerStorage,
    tier_remote: [PerStorage; TIERS],
    /// The server-wide usage this account's bytes also count in (`None`: this is it).
    server: Option<Arc<Usage>>,
}

impl Usage {
    pub(crate) fn new(max_memory: i64, max_store: i64) -> Usage {
        Usage {
            maxima: PerStorage::new(max_memory, max_store),
            tiered: AtomicBool::new(false),
            tier_maxima: Default::default(),
            used: PerStorage::default(),
            tier_used: Default::default(),
            remote: PerStorage::default(),
            tier_remote: Default::default(),
            server: None,
        }
    }

    /// An account's usage under its limits (`tiers` when it has tiered limits), counted in
    /// `server` too.
    pub(crate) fn within(
        server: &Arc<Usage>,
        limits: &AccountLimits,
        tiers: &crate::TieredLimits,
    ) -> Usage {
        let mut usage = Usage::new(-1, -1);
        usage.server = Some(server.clone());
        usage.set_limits(limits, tiers);
        usage
    }

    /// Replace the server's maxima, as a reload does.
    pub(crate) fn set_maxima(&self, max_memory: i64, max_store: i64) {
        self.maxima.set(max_memory, max_store);
    }

    /// Replace this account's limits, as an account JWT update does; bytes already stored
    /// stay counted in their tiers.
    pub(crate) fn set_limits(&self, limits: &AccountLimits, tiers: &crate::TieredLimits) {
        self.maxima.set(limits.max_memory, limits.max_storage);
        for (index, maxima) in self.tier_maxima.iter().enumerate() {
            match tiers.get(&crate::registry::tier_name(index as i64 + 1)) {
                Some(tier) => maxima.set(tier.max_memory, tier.max_storage),
                None => maxima.set(NO_TIER, NO_TIER),
            }
        }
        self.tiered.store(!tiers.is_empty(), Ordering::Relaxed);
    }

    /// Count `delta` bytes of a stream of `replicas` replicas.
    pub(crate) fn add(&self, storage: StorageType, replicas: i64, delta: i64) {
        self.used.of(storage).fetch_add(delta, Ordering::Relaxed);
        self.tier_used[tier_index(replicas)]
            .of(storage)
            .fetch_add(delta, Ordering::Relaxed);
        if let Some(server) = &self.server {
            server.add(storage, replicas, delta);
        }
    }

    /// Whether a message of `bytes` (as the store counts it) may not be stored in a stream of
    /// `replicas` replicas, in nats-server's words: the server already stores more than it
    /// may (10023), the account's tiered limits have no tier for the stream (10120), or the
    /// account (for tiered limits, the stream's tier) would exceed its maximum with this
    /// message (10002). As nats-server's `wouldExceedLimits`, the account's bytes are those of
    /// every replica on every server (this server's and the others' last reports), the message
    /// counts once per replica, and a tier's maximum is scaled by its replica count (a tier's
    /// limits are per replica; an untiered account's are for all its replicas together).
    pub(crate) fn refuses(
        &self,
        storage: StorageType,
        replicas: i64,
        bytes: u64,
    ) -> Option<ApiError> {
        let over = |usage: &Usage| usage.used.get(storage) > usage.maxima.get(storage);
        let Some(server) = self.server.as_deref() else {
            return over(self).then(|| errors::INSUFFICIENT_RESOURCES.to_error());
        };
        if over(server) {
            return Some(errors::INSUFFICIENT_RESOURCES.to_error());
        }
        let replicas = replicas.max(1);
        let (max, used, scale) = if self.tiered.load(Ordering::Relaxed) {
            let tier = tier_index(replicas);
            let used = self.tier_used[tier].get(storage) + self.tier_remote[tier].get(storage);
            (self.tier_maxima[tier].get(storage), used, replicas)
        } else {
            let used = self.used.get(storage) + self.remote.get(storage);
            (self.maxima.get(storage), used, 1)
        };
        if max == NO_TIER {
            return Some(errors::NO_LIMITS.to_error());
        }
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        if max >= 0
            && used.saturating_add(bytes.saturating_mul(replicas)) > max.saturating_mul(scale)
        {
            return Some(errors::ACCOUNT_RESOURCES_EXCEEDED.to_error());
        }
        None
    }

    /// The other servers' bytes of this account, summed: in all and per tier (`R1` first).
    pub(crate) fn set_remote(&self, total: StoredBytes, tiers: [StoredBytes; TIERS]) {
        self.remote.set(total.memory, total.storage);
        for (remote, tier) in self.tier_remote.iter().zip(tiers) {
            remote.set(tier.memory, tier.storage);
        }
    }

    /// This server's bytes of the account, in all and per tier (`R1` first).
    pub(crate) fn local(&self) -> (StoredBytes, [StoredBytes; TIERS]) {
        let read = |figures: &PerStorage| StoredBytes {
            memory: figures.get(StorageType::Memory),
            storage: figures.get(StorageType::File),
        };
        (
            read(&self.used),
            std::array::from_fn(|tier| read(&self.tier_used[tier])),
        )
    }

    /// The account's bytes over the cluster (this server's and the others' reports), in all
    /// and per tier (`R1` first): what `$JS.API.INFO` reports.
    pub(crate) fn cluster_wide(&self) -> (StoredBytes, [StoredBytes; TIERS]) {
        let sum = |local: &PerStorage, remote: &PerStorage| StoredBytes {
            memory: local.get(StorageType::Memory) + remote.get(StorageType::Memory),
            storage: local.get(StorageType::File) + remote.get(StorageType::File),
        };
        (
            sum(&self.used, &self.remote),
            std::array::from_fn(|tier| sum(&self.tier_used[tier], &self.tier_remote[tier])),
        )
    }

    /// Whether the account's limits are tiered (its usage is reported per tier).
    pub(crate) fn is_tiered(&self) -> bool {
        self.tiered.load(Ordering::Relaxed)
    }

    pub(crate) fn memory(&self) -> i64 {
        self.used.get(StorageType::Memory)
    }

    pub(crate) fn storage(&self) -> i64 {
        self.used.get(StorageType::File)
    }
}

/// What one message counts towards its account's usage once stored (nats-server's
/// `fileStoreMsgSize` and `memStoreMsgSize`, as the stores count `bytes`).
pub(crate) fn message_size(
    storage: StorageType,
    subject_len: usize,
    headers_len: usize,
    payload_len: usize,
) -> u64 {
    let body = subject_len + headers_len + payload_len;
    let size = match storage {
        StorageType::Memory => body + 16,
        StorageType::File if headers_len == 0 => body + 30,
        StorageType::File => body + 34,
    };
    size as u64
}

/// Bytes reserved by streams' `max_bytes` over every account of the server (nats-server's
/// `js.memReserved` / `js.storeReserved`), moved by the registries as streams come and go.
#[derive(Default)]
pub(crate) struct Reservations {
    memory: AtomicI64,
    storage: AtomicI64,
}

impl Reservations {
    fn counter(&self, storage: StorageType) -> &AtomicI64 {
        match storage {
            StorageType::Memory => &self.memory,
            StorageType::File => &self.storage,
        }
    }

    /// Add (or with a negative `delta`, release) reserved bytes.
    pub(crate) fn add(&self, storage: StorageType, delta: i64) {
        self.counter(storage).fetch_add(delta, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, storage: StorageType) -> i64 {
        self.counter(storage).load(Ordering::Relaxed)
    }
}

/// nats-server uses three quarters of the machine's memory and of the store disk by default.
const DEFAULT_SHARE_NUMERATOR: i64 = 3;
const DEFAULT_SHARE_DENOMINATOR: i64 = 4;
/// Used when the system cannot tell us (nats-server's JetStreamMaxStoreDefault is 1TB).
const FALLBACK_MAX_STORE: i64 = 1024 * 1024 * 1024 * 1024;
const FALLBACK_MAX_MEMORY: i64 = 256 * 1024 * 1024;

pub(crate) fn default_max_memory() -> i64 {
    // SAFETY: sysconf has no preconditions; negative results mean "unknown".
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages <= 0 || page_size <= 0 {
        return FALLBACK_MAX_MEMORY;
    }
    let total = (pages as i64).saturating_mul(page_size as i64);
    total / DEFAULT_SHARE_DENOMINATOR * DEFAULT_SHARE_NUMERATOR
}

pub(crate) fn default_max_store(store_dir: &Path) -> i64 {
    let Some(path) = std::ffi::CString::new(store_dir.as_os_str().as_encoded_bytes()).ok() else {
        return FALLBACK_MAX_STORE;
    };
    // SAFETY: statvfs writes into the zeroed struct we own; path is a valid C string.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    let result = unsafe { libc::statvfs(path.as_ptr(), &mut stats) };
    if result != 0 {
        return FALLBACK_MAX_STORE;
    }
    let available = (stats.f_bavail as i64).saturating_mul(stats.f_frsize as i64);
    available / DEFAULT_SHARE_DENOMINATOR * DEFAULT_SHARE_NUMERATOR
}

/// nats-server's `friendlyBytes`: 1024-based, two decimals, `B` below 1 KB.
pub(crate) fn friendly_bytes(bytes: i64) -> String {
    const UNIT: f64 = 1024.0;
    let value = bytes as f64;
    if value < UNIT {
        return format!("{bytes} B");
    }
    let prefixes = ['K', 'M', 'G', 'T', 'P', 'E'];
    let exponent = ((value.ln() / UNIT.ln()) as usize).clamp(1, prefixes.len());
    let scaled = value / UNIT.powi(exponent as i32);
    format!("{scaled:.2} {}B", prefixes[exponent - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn friendly_bytes_matches_nats_server() {
        assert_eq!(friendly_bytes(512), "512 B");
        assert_eq!(friendly_bytes(1024), "1.00 KB");
        assert_eq!(friendly_bytes(18957044736), "17.66 GB");
        assert_eq!(friendly_bytes(59857695744), "55.75 GB");
    }

    #[test]
    fn defaults_are_positive() {
        assert!(default_max_memory() > 0);
        assert!(default_max_store(Path::new("/")) > 0);
    }

    fn code(refusal: Option<ApiError>) -> u16 {
        refusal.map_or(0, |error| error.err_code)
    }

    #[test]
    fn tiered_bytes_are_held_to_their_own_tier() {
        let server = Arc::new(Usage::new(1 << 30, 1 << 30));
        let tier = |max_storage| AccountLimits {
            max_storage,
            ..AccountLimits::default()
        };
        let tiers: crate::TieredLimits = [
            ("R1".to_string(), tier(1000)),
            ("R3".to_string(), tier(500)),
        ]
        .into_iter()
        .collect();
        let account = Usage::within(&server, &AccountLimits::default(), &tiers);
        account.add(StorageType::File, 1, 900);
        assert_eq!(code(account.refuses(StorageType::File, 1, 100)), 0);
        assert_eq!(code(account.refuses(StorageType::File, 1, 101)), 10002);
        // R3 has its own 500 bytes per replica, whatever R1 holds: a message counts once for
        // each replica against three times the tier's maximum (nats-server's
        // `wouldExceedLimits`).
        assert_eq!(code(account.refuses(StorageType::File, 3, 500)), 0);
        assert_eq!(code(account.refuses(StorageType::File, 3, 501)), 10002);
        account.add(StorageType::File, 3, 1200);
        assert_eq!(code(account.refuses(StorageType::File, 3, 100)), 0);
        assert_eq!(code(account.refuses(StorageType::File, 3, 101)), 10002);
        assert_eq!(code(account.refuses(StorageType::File, 2, 1)), 10120);
        assert_eq!((account.storage(), server.storage()), (2100, 2100));
        // The other servers' reports count too.
        let mut tiers = [StoredBytes::default(); TIERS];
        tiers[0].storage = 50;
        let remote = StoredBytes {
            memory: 0,
            storage: 50,
        };
        account.set_remote(remote, tiers);
        assert_eq!(code(account.refuses(StorageType::File, 1, 50)), 0);
        assert_eq!(code(account.refuses(StorageType::File, 1, 51)), 10002);
        assert_eq!(account.cluster_wide().0.storage, 2150);
        // Untiered again: every tier's bytes, on every server, count against the account's
        // own maximum, and a message once per replica.
        account.set_limits(&tier(2200), &Default::default());
        assert_eq!(code(account.refuses(StorageType::File, 3, 16)), 0);
        assert_eq!(code(account.refuses(StorageType::File, 3, 17)), 10002);
        assert_eq!(code(account.refuses(StorageType::File, 1, 51)), 10002);
    }
}

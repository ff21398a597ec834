//! Resource accounting: nats-server's server-wide defaults when the config sets none (75% of
//! physical memory, 75% of the free space on the store's file system), the bytes each account
//! (and the server as a whole) stores and reserves, and human-readable sizes for the banner.
//! Built by [`crate::JetStream::start`]; read by the registry (reservations) and the ingest
//! tasks (stored bytes).

use jetstream_api::{errors, ApiError, StorageType};
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
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

/// Bytes stored against a maximum: one per account (its own limits, negative for none),
/// each adding into the server's own (`server`, with the server's maxima), shared by every
/// stream's ingest task.
pub(crate) struct Usage {
    /// The maxima: set at start, and again when an account's limits (or, for the server's
    /// own, a reload) change them at run time.
    max_memory: AtomicI64,
    max_store: AtomicI64,
    memory_used: AtomicI64,
    store_used: AtomicI64,
    /// The server-wide usage this account's bytes also count in (`None`: this is it).
    server: Option<Arc<Usage>>,
}

impl Usage {
    pub(crate) fn new(max_memory: i64, max_store: i64) -> Usage {
        Usage {
            max_memory: AtomicI64::new(max_memory),
            max_store: AtomicI64::new(max_store),
            memory_used: AtomicI64::new(0),
            store_used: AtomicI64::new(0),
            server: None,
        }
    }

    /// An account's usage: its own maxima (negative: none of its own), counted in `server` too.
    pub(crate) fn within(server: &Arc<Usage>, max_memory: i64, max_store: i64) -> Usage {
        let mut usage = Usage::new(max_memory, max_store);
        usage.server = Some(server.clone());
        usage
    }

    /// Replace this account's maxima (negative: none), as an account JWT update does.
    pub(crate) fn set_maxima(&self, max_memory: i64, max_store: i64) {
        self.max_memory.store(max_memory, Ordering::Relaxed);
        self.max_store.store(max_store, Ordering::Relaxed);
    }

    fn max(&self, storage: StorageType) -> i64 {
        match storage {
            StorageType::Memory => self.max_memory.load(Ordering::Relaxed),
            StorageType::File => self.max_store.load(Ordering::Relaxed),
        }
    }

    fn used(&self, storage: StorageType) -> i64 {
        match storage {
            StorageType::Memory => self.memory(),
            StorageType::File => self.storage(),
        }
    }

    pub(crate) fn add(&self, storage: StorageType, delta: i64) {
        match storage {
            StorageType::Memory => self.memory_used.fetch_add(delta, Ordering::Relaxed),
            StorageType::File => self.store_used.fetch_add(delta, Ordering::Relaxed),
        };
        if let Some(server) = &self.server {
            server.add(storage, delta);
        }
    }

    /// Whether a message of `bytes` (as the store counts it) may not be stored, in
    /// nats-server's words: the server already stores more than it may (10023), or the
    /// account would with this message (10002).
    pub(crate) fn refuses(&self, storage: StorageType, bytes: u64) -> Option<ApiError> {
        let server = self.server.as_deref().unwrap_or(self);
        if server.used(storage) > server.max(storage) {
            return Some(errors::INSUFFICIENT_RESOURCES.to_error());
        }
        let own = self.max(storage);
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        if self.server.is_some() && own >= 0 && self.used(storage).saturating_add(bytes) > own {
            return Some(errors::ACCOUNT_RESOURCES_EXCEEDED.to_error());
        }
        None
    }

    pub(crate) fn memory(&self) -> i64 {
        self.memory_used.load(Ordering::Relaxed)
    }

    pub(crate) fn storage(&self) -> i64 {
        self.store_used.load(Ordering::Relaxed)
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
}

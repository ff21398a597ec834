//! Account resource limits: nats-server's defaults when the config sets none (75% of physical
//! memory, 75% of the free space on the store's file system), and human-readable sizes for the
//! banner. Called once by [`crate::JetStream::start`].

use jetstream_api::StorageType;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};

/// Server-wide JetStream usage against the configured maxima, shared by every stream's ingest
/// thread (bytes stored) and the API (bytes reserved by `max_bytes`).
pub(crate) struct Usage {
    pub max_memory: i64,
    pub max_store: i64,
    memory_used: AtomicI64,
    store_used: AtomicI64,
}

impl Usage {
    pub(crate) fn new(max_memory: i64, max_store: i64) -> Usage {
        Usage {
            max_memory,
            max_store,
            memory_used: AtomicI64::new(0),
            store_used: AtomicI64::new(0),
        }
    }

    pub(crate) fn add(&self, storage: StorageType, delta: i64) {
        match storage {
            StorageType::Memory => self.memory_used.fetch_add(delta, Ordering::Relaxed),
            StorageType::File => self.store_used.fetch_add(delta, Ordering::Relaxed),
        };
    }

    pub(crate) fn memory(&self) -> i64 {
        self.memory_used.load(Ordering::Relaxed)
    }

    pub(crate) fn storage(&self) -> i64 {
        self.store_used.load(Ordering::Relaxed)
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

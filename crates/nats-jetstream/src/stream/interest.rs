//! Who still wants a stream's messages: the consumers register their filter subjects and a
//! handle the stream asks "do you still need message `seq`?". Interest retention stores only
//! what some registration wants and removes what none needs any more.
//!
//! Who calls it: consumers register and deregister (the consumer layer); the stream's ingest
//! task asks [`Interest::wants`] for each publish and [`Interest::needed`] after acks. The
//! stream layer knows only the [`InterestHolder`] trait, never the consumer type.
//! Lock order: [`Interest::needed`] takes each holder's own locks, so it is never called with
//! the stream's store locked.

use parking_lot::RwLock;
use std::sync::Arc;

/// A consumer as interest retention sees it.
pub(crate) trait InterestHolder: Send + Sync {
    /// Whether this holder still needs message `seq` stored on `subject`.
    fn needs(&self, seq: u64, subject: &str) -> bool;
}

struct Registration {
    id: u64,
    /// Filter subjects; empty: everything.
    filters: Vec<String>,
    holder: Arc<dyn InterestHolder>,
}

/// The registrations of one stream.
#[derive(Default)]
pub(crate) struct Interest {
    registrations: RwLock<Vec<Registration>>,
}

impl Interest {
    /// Register a holder's filters under `id` (the handle for [`Interest::remove`]).
    pub(crate) fn add(&self, id: u64, filters: Vec<String>, holder: Arc<dyn InterestHolder>) {
        self.registrations.write().push(Registration {
            id,
            filters,
            holder,
        });
    }

    pub(crate) fn remove(&self, id: u64) {
        self.registrations
            .write()
            .retain(|registration| registration.id != id);
    }

    pub(crate) fn count(&self) -> usize {
        self.registrations.read().len()
    }

    /// Whether some registration's filters take `subject` (interest retention stores it).
    pub(crate) fn wants(&self, subject: &str) -> bool {
        self.registrations.read().iter().any(|registration| {
            registration.filters.is_empty()
                || registration
                    .filters
                    .iter()
                    .any(|filter| filter.is_empty() || crate::subject::matches(filter, subject))
        })
    }

    /// Whether some holder still needs message `seq` on `subject`. Never call it with a store
    /// locked: each holder takes its own state lock.
    pub(crate) fn needed(&self, seq: u64, subject: &str) -> bool {
        let holders: Vec<Arc<dyn InterestHolder>> = self
            .registrations
            .read()
            .iter()
            .map(|registration| registration.holder.clone())
            .collect();
        holders.iter().any(|holder| holder.needs(seq, subject))
    }
}

//! The last `max_closed_clients` closed client connections (nats-server's default 10,000), for
//! `/connz?state=closed|all` and the `$SYS` CONNZ requests. An entry is written once, when a
//! connection is removed (`Server::unregister_client`, or refused over `max_connections`);
//! nothing on the message path touches it. The oldest entry goes when the ring is full.

use super::record::ConnectionRecord;
use crate::client::{ClientShared, ClientSubscription, CloseReason};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// nats-server's `DEFAULT_MAX_CLOSED_CLIENTS`.
pub const DEFAULT_MAX_CLOSED_CLIENTS: i64 = 10_000;

pub struct ClosedConnections {
    capacity: usize,
    entries: Mutex<VecDeque<Arc<ConnectionRecord>>>,
}

impl ClosedConnections {
    /// Keeps `capacity` entries; none when it is not positive.
    pub fn new(capacity: i64) -> ClosedConnections {
        ClosedConnections {
            capacity: usize::try_from(capacity).unwrap_or(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// Save `client` as it closes, with the subscriptions it held.
    pub fn record(
        &self,
        client: &ClientShared,
        subscriptions: &[Arc<ClientSubscription>],
        reason: CloseReason,
    ) {
        if self.capacity == 0 {
            return;
        }
        let entry = Arc::new(ConnectionRecord::closed(client, subscriptions, reason));
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    /// The kept entries, oldest first.
    pub fn list(&self) -> Vec<Arc<ConnectionRecord>> {
        self.entries.lock().iter().cloned().collect()
    }
}

//! The cache resolver's bookkeeping of its directory, as nats-server's `expirationTracker`
//! (`server/dirstore.go`, with `evictOnLimit`): when each stored account's file expires (`ttl`
//! after it was last stored, or else its JWT's `exp`, or never) and the order in which they were
//! stored or first used after a restart, so at most `limit` files are kept (the least recently
//! used one is removed to make room for a new account) and expired files are removed every `ttl / 2` (at most a minute).
//! As in nats-server only the files go: an account already loaded stays, and is fetched again
//! when a later start needs it.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// nats-server's `limit` of a cache resolver configured without one (or with 0).
pub const DEFAULT_LIMIT: usize = 1_000;

/// One stored file.
struct Tracked {
    expires: Option<SystemTime>,
    /// When it was last stored or read, on the tracker's own clock.
    stored: u64,
    /// Read from the directory at start and not used since: its first use reads the file in
    /// nats-server (the account is fetched then), which counts.
    unread: bool,
}

pub struct Tracker {
    limit: usize,
    ttl: Duration,
    /// The clock (counts stores) and the files by account key.
    files: Mutex<(u64, HashMap<String, Tracked>)>,
}

impl Tracker {
    pub fn new(limit: usize, ttl: Duration) -> Tracker {
        Tracker {
            limit: if limit == 0 { DEFAULT_LIMIT } else { limit },
            ttl,
            files: Mutex::new((0, HashMap::new())),
        }
    }

    /// How often expired files are looked for: `ttl / 2`, at most (and without a `ttl`) a
    /// minute.
    pub fn check_interval(&self) -> Duration {
        let half = self.ttl / 2;
        if half.is_zero() || half > Duration::from_secs(60) {
            Duration::from_secs(60)
        } else {
            half
        }
    }

    /// Before `key` is stored: the account whose file must go to make room (no longer
    /// tracked once returned); `None` when `key` is held already or there is room.
    pub fn make_room(&self, key: &str) -> Option<String> {
        let mut files = self.files.lock();
        if files.1.contains_key(key) || files.1.len() < self.limit {
            return None;
        }
        let oldest = files
            .1
            .iter()
            .min_by_key(|(_, tracked)| tracked.stored)
            .map(|(oldest, _)| oldest.clone())?;
        files.1.remove(&oldest);
        Some(oldest)
    }

    /// `key`'s file was stored (`loaded`: read at start) holding `jwt`.
    pub fn track(&self, key: &str, jwt: &str, loaded: bool) {
        let expires = if self.ttl.is_zero() {
            super::decode::<serde_json::Value>(jwt)
                .ok()
                .filter(|claims| claims.exp > 0)
                .map(|claims| UNIX_EPOCH + Duration::from_secs(claims.exp.unsigned_abs()))
        } else {
            SystemTime::now().checked_add(self.ttl)
        };
        let mut files = self.files.lock();
        files.0 += 1;
        let stored = files.0;
        files.1.insert(
            key.to_string(),
            Tracked {
                expires,
                stored,
                unread: loaded,
            },
        );
    }

    /// `key`'s account is used for the first time since its file was read at start: as
    /// nats-server's `updateTrack` when its cache resolver loads an account from the file, it
    /// becomes the most recently used, and with a `ttl` its expiry starts again.
    pub fn used(&self, key: &str) {
        let mut files = self.files.lock();
        files.0 += 1;
        let clock = files.0;
        if let Some(tracked) = files.1.get_mut(key).filter(|tracked| tracked.unread) {
            tracked.unread = false;
            tracked.stored = clock;
            if !self.ttl.is_zero() {
                tracked.expires = SystemTime::now().checked_add(self.ttl);
            }
        }
    }

    pub fn untrack(&self, key: &str) {
        self.files.lock().1.remove(key);
    }

    /// The accounts whose files expired by `now` (no longer tracked once returned).
    pub fn expired(&self, now: SystemTime) -> Vec<String> {
        let mut files = self.files.lock();
        let expired: Vec<String> = files
            .1
            .iter()
            .filter(|(_, tracked)| tracked.expires.is_some_and(|expires| expires <= now))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            files.1.remove(key);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_stored_file_makes_room_and_expired_ones_go() {
        let tracker = Tracker::new(2, Duration::from_secs(10));
        tracker.track("A", "", false);
        tracker.track("B", "", false);
        assert_eq!(tracker.make_room("A"), None, "held already");
        tracker.track("A", "", false);
        assert_eq!(tracker.make_room("C").as_deref(), Some("B"));
        tracker.track("C", "", false);
        assert_eq!(tracker.make_room("D").as_deref(), Some("A"));
        let later = SystemTime::now() + Duration::from_secs(11);
        assert_eq!(tracker.expired(SystemTime::now()), Vec::<String>::new());
        assert_eq!(tracker.expired(later), vec!["C".to_string()]);
        assert_eq!(tracker.check_interval(), Duration::from_secs(5));
        assert_eq!(Tracker::new(0, Duration::ZERO).limit, DEFAULT_LIMIT);
    }

    #[test]
    fn the_first_use_of_a_file_read_at_start_counts_once() {
        let tracker = Tracker::new(2, Duration::ZERO);
        tracker.track("A", "", true);
        tracker.track("B", "", true);
        tracker.used("A");
        assert_eq!(tracker.make_room("C").as_deref(), Some("B"));
        tracker.track("C", "", false);
        tracker.used("C");
        tracker.used("A");
        assert_eq!(
            tracker.make_room("D").as_deref(),
            Some("A"),
            "used once only"
        );
    }
}

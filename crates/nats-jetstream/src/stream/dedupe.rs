//! The duplicate window: `Nats-Msg-Id` -> the sequence it was stored at, forgotten once older
//! than `duplicate_window`, and the last stored message's id ([`Dedupe`], one per stream,
//! `Stream::dedupe`). The ingest task fills it as it stores; an R1 stream's is rebuilt from the
//! store on start so it survives restarts. A replicated stream's followers fill theirs as they
//! apply the leader's batches and snapshots (`replication/mod.rs`), as nats-server's replicas
//! track message ids, so a new leader has its window at once instead of reading it back from
//! its store (`Ingest::take_leadership`).

use std::collections::{HashMap, VecDeque};

/// A stream's duplicate window and last message id. A leaf lock: taken under the store's lock
/// (the ingest task's batch, a replica's apply), never held while another lock is taken.
#[derive(Default)]
pub(crate) struct Dedupe {
    pub window: DuplicateWindow,
    /// The id of the last message stored (empty when it had none).
    pub last_msg_id: String,
    /// The window holds every id the store's messages within it carry (and those removed
    /// since): false until it was read back from the store or filled from an empty one.
    pub complete: bool,
}

impl Dedupe {
    /// A message applied from the log (a replica following its leader, or restoring a
    /// snapshot): its id, if its headers carry one, goes into the window unless already older
    /// than `window` before `now`.
    pub(crate) fn applied_message(
        &mut self,
        seq: u64,
        timestamp: i64,
        headers: &[u8],
        now: i64,
        window: i64,
    ) {
        let id = msg_id(headers);
        self.last_msg_id.clear();
        if let Some(id) = id {
            self.last_msg_id.push_str(id);
            if window > 0 && timestamp >= now - window {
                self.window.insert(id, seq, timestamp);
            }
        }
    }

    /// The ingest task stored (or skipped) `seq`, with `msg_id` if the publish had one.
    pub(crate) fn stored(&mut self, msg_id: Option<&str>, seq: u64, timestamp: i64) {
        self.last_msg_id.clear();
        if let Some(id) = msg_id {
            self.last_msg_id.push_str(id);
            self.window.insert(id, seq, timestamp);
        }
    }

    /// Empty, and complete only if the store it describes is empty too.
    pub(crate) fn reset(&mut self, complete: bool) {
        self.window = DuplicateWindow::default();
        self.last_msg_id.clear();
        self.complete = complete;
    }
}

/// The `Nats-Msg-Id` a stored message's headers carry, if any.
pub(crate) fn msg_id(headers: &[u8]) -> Option<&str> {
    if headers.is_empty() {
        None
    } else {
        super::headers::PublishHeaders::parse(headers).msg_id
    }
}

#[derive(Default)]
pub(crate) struct DuplicateWindow {
    by_id: HashMap<String, (u64, i64)>,
    /// Insertion order (timestamps ascending) for cheap expiry from the front.
    order: VecDeque<(i64, String)>,
}

impl DuplicateWindow {
    /// The sequence a message with this id was stored at, if still within the window.
    pub(crate) fn get(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).map(|(seq, _)| *seq)
    }

    pub(crate) fn insert(&mut self, id: &str, seq: u64, timestamp: i64) {
        if self
            .by_id
            .insert(id.to_string(), (seq, timestamp))
            .is_none()
        {
            self.order.push_back((timestamp, id.to_string()));
        }
    }

    /// Forget every id stored before `now - window`.
    pub(crate) fn expire(&mut self, now: i64, window: i64) {
        if window <= 0 {
            self.by_id.clear();
            self.order.clear();
            return;
        }
        let horizon = now - window;
        while let Some((timestamp, _)) = self.order.front() {
            if *timestamp >= horizon {
                break;
            }
            if let Some((timestamp, id)) = self.order.pop_front() {
                if self
                    .by_id
                    .get(&id)
                    .is_some_and(|(_, stored)| *stored == timestamp)
                {
                    self.by_id.remove(&id);
                }
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_within_window_only() {
        let mut window = DuplicateWindow::default();
        window.insert("a", 1, 100);
        window.insert("b", 2, 200);
        assert_eq!(window.get("a"), Some(1));
        window.expire(250, 100);
        assert_eq!(window.get("a"), None);
        assert_eq!(window.get("b"), Some(2));
        assert_eq!(window.len(), 1);
    }
}

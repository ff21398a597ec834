//! The duplicate window: `Nats-Msg-Id` -> the sequence it was stored at, forgotten once older
//! than `duplicate_window`. Owned by the stream task; rebuilt from the store on start so it
//! survives restarts.

use std::collections::{HashMap, VecDeque};

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

//! Snapshots larger than [`CHUNK`] cross the transport in chunks, one at a time, each answered
//! before the next is sent, so a follower catching up from a large stream's snapshot never puts
//! more than one chunk on the route between the two servers. (Sent whole, a 1 GiB stream's
//! snapshot overran the route's 64 MiB pending limit: the route was closed as a slow consumer
//! and dialed again, over and over, and the wiped follower never caught up.)
//!
//! The sender (`network.rs`, `full_snapshot`) sends chunks in order; the receiving group keeps
//! one snapshot in assembly ([`Incoming`]) and installs it when its last chunk arrives. A chunk
//! that does not continue the snapshot in assembly is refused and the assembly dropped: the
//! leader's replication then sends the snapshot again from its start.

use std::sync::Mutex;

use bytes::Bytes;

use crate::types::{LogId, Vote};

/// The most snapshot bytes in one message.
pub(crate) const CHUNK: usize = 1 << 20;
/// The most memory reserved up front for a snapshot in assembly (it grows past this as its
/// chunks arrive): a bad `total` must not allocate it all at once.
const RESERVE_LIMIT: u64 = 64 << 20;

/// Which snapshot a chunk belongs to: the leader's vote, the snapshot's last log id and size.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SnapshotKey {
    pub(crate) vote: Vote,
    pub(crate) last_log_id: Option<LogId>,
    pub(crate) total: u64,
}

struct Partial {
    key: SnapshotKey,
    data: Vec<u8>,
}

/// What a chunk completed.
pub(crate) enum Received {
    /// More chunks are to come.
    More,
    /// The last chunk: the whole snapshot.
    Complete(Bytes),
}

/// The snapshot a group is receiving in chunks, if any.
#[derive(Default)]
pub(crate) struct Incoming {
    partial: Mutex<Option<Partial>>,
}

impl Incoming {
    /// Adds the chunk at `offset` of the snapshot `key`. A chunk at offset 0 starts a new
    /// assembly (whatever was in assembly is dropped); any other must continue the one in
    /// assembly exactly, or it is refused.
    pub(crate) fn add(
        &self,
        key: SnapshotKey,
        offset: u64,
        chunk: &[u8],
    ) -> Result<Received, String> {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if offset == 0 {
            let reserve = key.total.min(RESERVE_LIMIT) as usize;
            *partial = Some(Partial {
                key: key.clone(),
                data: Vec::with_capacity(reserve),
            });
        }
        let continues = partial
            .as_ref()
            .is_some_and(|p| p.key == key && p.data.len() as u64 == offset);
        let end = offset.saturating_add(chunk.len() as u64);
        if !continues || end > key.total {
            *partial = None;
            return Err(format!(
                "snapshot chunk at {offset} of {} does not continue the snapshot in assembly",
                key.total
            ));
        }
        let Some(assembly) = partial.as_mut() else {
            return Err("no snapshot in assembly".to_string());
        };
        assembly.data.extend_from_slice(chunk);
        if end < key.total {
            return Ok(Received::More);
        }
        let done = partial.take().map(|p| p.data).unwrap_or_default();
        Ok(Received::Complete(Bytes::from(done)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(total: u64) -> SnapshotKey {
        SnapshotKey {
            vote: Vote::new(1, 1),
            last_log_id: None,
            total,
        }
    }

    #[test]
    fn chunks_in_order_assemble_the_snapshot() {
        let incoming = Incoming::default();
        assert!(matches!(incoming.add(key(5), 0, b"ab"), Ok(Received::More)));
        assert!(matches!(incoming.add(key(5), 2, b"cd"), Ok(Received::More)));
        match incoming.add(key(5), 4, b"e") {
            Ok(Received::Complete(bytes)) => assert_eq!(&bytes[..], b"abcde"),
            _ => panic!("not complete"),
        }
    }

    #[test]
    fn a_chunk_out_of_order_is_refused_and_the_assembly_dropped() {
        let incoming = Incoming::default();
        assert!(incoming.add(key(5), 0, b"ab").is_ok());
        assert!(incoming.add(key(5), 3, b"d").is_err(), "a gap");
        assert!(
            incoming.add(key(5), 2, b"cd").is_err(),
            "the assembly was dropped"
        );
        assert!(incoming.add(key(6), 0, b"ab").is_ok(), "a new one starts");
        assert!(incoming.add(key(5), 2, b"cd").is_err(), "another snapshot");
        assert!(incoming.add(key(2), 0, b"abc").is_err(), "past its end");
    }
}

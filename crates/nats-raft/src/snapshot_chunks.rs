//! Snapshots larger than [`CHUNK`] cross the transport in chunks, one at a time, each answered
//! before the next is sent, so a follower catching up from a large stream's snapshot never puts
//! more than one chunk on the route between the two servers. (Sent whole, a 1 GiB stream's
//! snapshot overran the route's 64 MiB pending limit: the route was closed as a slow consumer
//! and dialed again, over and over, and the wiped follower never caught up.)
//!
//! The sender (`network.rs`, `full_snapshot`) reads its chunks from the snapshot's file and sends
//! them in order; the receiving group keeps one snapshot in assembly ([`Incoming`]), written to a
//! temporary file as its chunks arrive (`snapshot_file.rs`: never whole in memory), and installs
//! it when its last chunk arrives. A chunk that does not continue the snapshot in assembly is
//! refused and the assembly dropped (its file removed): the leader's replication then sends the
//! snapshot again from its start.

use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::snapshot_file::{SequentialWriter, SnapshotFile};
use crate::types::{LogId, SnapshotMeta, Vote};

/// The most snapshot bytes in one message.
pub(crate) const CHUNK: usize = 1 << 20;

/// Which snapshot a chunk belongs to: the leader's vote, the snapshot's last log id and size.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SnapshotKey {
    pub(crate) vote: Vote,
    pub(crate) last_log_id: Option<LogId>,
    pub(crate) total: u64,
}

struct Partial {
    key: SnapshotKey,
    file: SequentialWriter,
}

/// What a chunk completed.
pub(crate) enum Received {
    /// More chunks are to come.
    More,
    /// The last chunk: the whole snapshot, in its (temporary) file.
    Complete(SnapshotFile),
}

/// The snapshot a group is receiving in chunks, if any.
pub(crate) struct Incoming {
    /// The group's directory, where the snapshot in assembly is written.
    directory: PathBuf,
    partial: Mutex<Option<Partial>>,
}

impl Incoming {
    pub(crate) fn new(directory: PathBuf) -> Incoming {
        Incoming {
            directory,
            partial: Mutex::new(None),
        }
    }

    /// A snapshot sent whole, in its (temporary) file.
    pub(crate) fn whole(&self, meta: &SnapshotMeta, data: &[u8]) -> io::Result<SnapshotFile> {
        let mut file = SequentialWriter::create(&self.directory, meta, data.len() as u64)?;
        file.write(data)?;
        file.finish()
    }

    /// Adds the chunk at `offset` of the snapshot `key`. A chunk at offset 0 starts a new
    /// assembly (whatever was in assembly is dropped); any other must continue the one in
    /// assembly exactly, or it is refused.
    pub(crate) fn add(
        &self,
        key: SnapshotKey,
        meta: &SnapshotMeta,
        offset: u64,
        chunk: &[u8],
    ) -> Result<Received, String> {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        if offset == 0 {
            *partial = None;
            let file = SequentialWriter::create(&self.directory, meta, key.total)
                .map_err(|error| format!("snapshot file: {error}"))?;
            *partial = Some(Partial {
                key: key.clone(),
                file,
            });
        }
        let continues = partial
            .as_ref()
            .is_some_and(|p| p.key == key && p.file.written() == offset);
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
        if let Err(error) = assembly.file.write(chunk) {
            *partial = None;
            return Err(format!("snapshot file: {error}"));
        }
        if end < key.total {
            return Ok(Received::More);
        }
        let Some(done) = partial.take() else {
            return Err("no snapshot in assembly".to_string());
        };
        done.file
            .finish()
            .map(Received::Complete)
            .map_err(|error| format!("snapshot file: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StoredMembership;
    use std::io::Read;

    fn key(total: u64) -> SnapshotKey {
        SnapshotKey {
            vote: Vote::new(1, 1),
            last_log_id: None,
            total,
        }
    }

    fn meta() -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: None,
            last_membership: StoredMembership::default(),
        }
    }

    fn files(directory: &std::path::Path) -> usize {
        std::fs::read_dir(directory).expect("read dir").count()
    }

    #[test]
    fn chunks_in_order_assemble_the_snapshot_in_a_file() {
        let directory = tempfile::tempdir().expect("tempdir");
        let incoming = Incoming::new(directory.path().to_path_buf());
        let add = |offset, chunk| incoming.add(key(5), &meta(), offset, chunk);
        assert!(matches!(add(0, b"ab"), Ok(Received::More)));
        assert!(matches!(add(2, b"cd"), Ok(Received::More)));
        let Ok(Received::Complete(file)) = add(4, b"e") else {
            panic!("not complete");
        };
        let mut data = Vec::new();
        file.reader().read_to_end(&mut data).expect("read");
        assert_eq!(&data[..], b"abcde");
        assert_eq!(files(directory.path()), 1, "the assembled file");
        drop(file);
        assert_eq!(
            files(directory.path()),
            0,
            "a temporary file goes with its handle"
        );
    }

    #[test]
    fn a_chunk_out_of_order_is_refused_and_the_assembly_dropped() {
        let directory = tempfile::tempdir().expect("tempdir");
        let incoming = Incoming::new(directory.path().to_path_buf());
        let add = |total, offset, chunk| incoming.add(key(total), &meta(), offset, chunk);
        assert!(add(5, 0, b"ab").is_ok());
        assert!(add(5, 3, b"d").is_err(), "a gap");
        assert_eq!(files(directory.path()), 0, "the dropped assembly's file");
        assert!(add(5, 2, b"cd").is_err(), "the assembly was dropped");
        assert!(add(6, 0, b"ab").is_ok(), "a new one starts");
        assert!(add(5, 2, b"cd").is_err(), "another snapshot");
        assert!(add(2, 0, b"abc").is_err(), "past its end");
        assert_eq!(files(directory.path()), 0);
    }
}

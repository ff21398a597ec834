//! The application's [`StateMachine`] trait and its adapter to openraft's `RaftStateMachine`.
//!
//! The adapter keeps the Raft bookkeeping (last applied log id, last membership, the current
//! snapshot) and hands the application only its own payloads and opaque snapshot bytes. The current
//! snapshot is kept in `<group dir>/snapshot` (checksummed, replaced atomically); on start the
//! application is restored from it and openraft re-applies the committed entries after it. The
//! current snapshot's bytes are kept in memory once (shared by the adapter and its builders) and
//! handed out without copying: a large stream's snapshot is neither read back from disk for each
//! transmission to a follower nor copied on its way to and from the file.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{RaftSnapshotBuilder, Snapshot};

use crate::checked_file;
use crate::codec::{Reader, Writer};
use crate::types::{EntryPayload, LogId, SnapshotMeta, StoredMembership, TypeConfig};

/// The application side of a group: receives committed entries in log order, and produces or
/// restores snapshots as opaque bytes.
///
/// Calls come from one task at a time (openraft's state-machine worker); `snapshot` runs between
/// applies, so it sees a state that matches an exact log index.
pub trait StateMachine: Send + 'static {
    /// Applies the committed proposal at log `index`. An error stops the group (it goes offline and
    /// is reported), as a Raft node cannot skip a committed entry.
    fn apply(&mut self, index: u64, payload: Bytes) -> io::Result<()>;

    /// The whole state as bytes, as of the last applied index.
    fn snapshot(&mut self) -> io::Result<Bytes>;

    /// Replaces the whole state with a snapshot made by [`StateMachine::snapshot`] (possibly on
    /// another node).
    fn restore(&mut self, snapshot: Bytes) -> io::Result<()>;
}

type Shared = Arc<Mutex<Box<dyn StateMachine>>>;

/// The current snapshot, shared by the adapter and the builders it makes.
type Current = Arc<Mutex<Option<(SnapshotMeta, Bytes)>>>;

/// Makes `(meta, data)` the current snapshot unless the current one is newer (a builder that
/// finishes after a snapshot from the leader was installed does not replace it).
fn set_current(current: &Current, meta: &SnapshotMeta, data: &Bytes) {
    let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
    if current
        .as_ref()
        .is_some_and(|(held, _)| held.last_log_id > meta.last_log_id)
    {
        return;
    }
    *current = Some((meta.clone(), data.clone()));
}

fn lock(machine: &Shared) -> MutexGuard<'_, Box<dyn StateMachine>> {
    machine
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) type StoredSnapshot =
    Snapshot<crate::types::LeaderId, u64, openraft::impls::EmptyNode, Bytes>;

/// openraft's view of the application's state machine.
pub(crate) struct StateMachineAdapter {
    machine: Shared,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: Current,
    snapshot_path: PathBuf,
    /// Dropped with the adapter, when openraft's state machine worker has quit: the group's
    /// shutdown waits for it, so no entry of a stopped group is applied after it returns.
    _alive: tokio::sync::oneshot::Sender<()>,
}

impl StateMachineAdapter {
    /// Restores the application from the snapshot in `directory`, if there is one.
    pub(crate) fn open(
        directory: &Path,
        machine: Box<dyn StateMachine>,
        alive: tokio::sync::oneshot::Sender<()>,
    ) -> io::Result<Self> {
        let snapshot_path = directory.join("snapshot");
        let current = read_snapshot(&snapshot_path)?;
        let machine: Shared = Arc::new(Mutex::new(machine));
        let mut adapter = StateMachineAdapter {
            machine,
            last_applied: None,
            membership: StoredMembership::default(),
            current: Current::default(),
            snapshot_path,
            _alive: alive,
        };
        if let Some((meta, data)) = current {
            lock(&adapter.machine).restore(data.clone())?;
            adapter.last_applied = meta.last_log_id;
            adapter.membership = meta.last_membership.clone();
            set_current(&adapter.current, &meta, &data);
        }
        Ok(adapter)
    }
}

/// Builds a snapshot from bytes taken when the builder was made.
pub(crate) struct SnapshotBuilder {
    meta: SnapshotMeta,
    data: io::Result<Bytes>,
    snapshot_path: PathBuf,
    current: Current,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    type SnapshotData = Bytes;

    async fn build_snapshot(&mut self) -> Result<StoredSnapshot, io::Error> {
        let data = match &self.data {
            Ok(data) => data.clone(),
            Err(error) => return Err(io::Error::new(error.kind(), error.to_string())),
        };
        let path = self.snapshot_path.clone();
        let meta = self.meta.clone();
        let data_for_file = data.clone();
        tokio::task::spawn_blocking(move || write_snapshot(&path, &meta, &data_for_file))
            .await
            .unwrap_or_else(|join_error| Err(io::Error::other(join_error.to_string())))?;
        set_current(&self.current, &self.meta, &data);
        Ok(Snapshot {
            meta: self.meta.clone(),
            snapshot: data,
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineAdapter {
    type SnapshotData = Bytes;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<S>(&mut self, mut entries: S) -> Result<(), io::Error>
    where
        S: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>>
            + Unpin
            + openraft::OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(proposal) => {
                    lock(&self.machine).apply(entry.log_id.index, proposal.0)?;
                }
                EntryPayload::Membership(membership) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), membership);
                }
            }
            self.last_applied = Some(entry.log_id);
            if let Some(responder) = responder {
                responder.send(());
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            meta: SnapshotMeta {
                last_log_id: self.last_applied,
                last_membership: self.membership.clone(),
            },
            data: lock(&self.machine).snapshot(),
            snapshot_path: self.snapshot_path.clone(),
            current: self.current.clone(),
        }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Bytes,
    ) -> Result<(), io::Error> {
        lock(&self.machine).restore(snapshot.clone())?;
        let path = self.snapshot_path.clone();
        let meta_for_file = meta.clone();
        let data_for_file = snapshot.clone();
        tokio::task::spawn_blocking(move || write_snapshot(&path, &meta_for_file, &data_for_file))
            .await
            .unwrap_or_else(|join_error| Err(io::Error::other(join_error.to_string())))?;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        set_current(&self.current, meta, &snapshot);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<StoredSnapshot>, io::Error> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        Ok(current.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: data.clone(),
        }))
    }
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"NRS1";

/// The file holds the meta, the data's length (u32) and the data; the data is written from where
/// it is, not copied behind the meta.
fn write_snapshot(path: &Path, meta: &SnapshotMeta, data: &Bytes) -> io::Result<()> {
    let length = u32::try_from(data.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("snapshot of {} bytes: over the file's 4 GiB", data.len()),
        )
    })?;
    let mut writer = Writer::new();
    writer.snapshot_meta(meta);
    let mut header = writer.finish().to_vec();
    header.extend_from_slice(&length.to_le_bytes());
    checked_file::write_parts(path, SNAPSHOT_MAGIC, &[&header, data])
}

fn read_snapshot(path: &Path) -> io::Result<Option<(SnapshotMeta, Bytes)>> {
    let Some(body) = checked_file::read(path, SNAPSHOT_MAGIC)? else {
        return Ok(None);
    };
    let malformed = |_| checked_file::malformed(path, "snapshot");
    let mut reader = Reader::new(&body);
    let meta = reader.snapshot_meta().map_err(malformed)?;
    let data = body.slice_ref(reader.bytes().map_err(malformed)?);
    Ok(Some((meta, data)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(crate::types::log_id(3, 7, 42)),
            last_membership: StoredMembership::default(),
        }
    }

    /// The snapshot file is written in parts now; its bytes are what joining meta and data wrote
    /// before, so files of earlier builds read back, and the data comes back as written.
    #[test]
    fn the_snapshot_file_keeps_its_form_and_reads_back() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("snapshot");
        let data = Bytes::from((0..100_000u32).map(|i| i as u8).collect::<Vec<u8>>());
        write_snapshot(&path, &meta(), &data).expect("write");
        let written = std::fs::read(&path).expect("read");

        let joined = directory.path().join("joined");
        let mut writer = Writer::new();
        writer.snapshot_meta(&meta());
        writer.bytes(&data);
        checked_file::write(&joined, SNAPSHOT_MAGIC, &writer.finish()).expect("write joined");
        assert_eq!(written, std::fs::read(&joined).expect("read joined"));

        let (read_meta, read_data) = read_snapshot(&path).expect("read").expect("a snapshot");
        assert_eq!(read_meta.last_log_id, meta().last_log_id);
        assert_eq!(read_data, data);
    }
}

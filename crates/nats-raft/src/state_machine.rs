//! The application's [`StateMachine`] trait and its adapter to openraft's `RaftStateMachine`.
//!
//! The adapter keeps the Raft bookkeeping (last applied log id, last membership, the current
//! snapshot) and hands the application only its own payloads and opaque snapshot bytes. The current
//! snapshot is kept in `<group dir>/snapshot` (checksummed, replaced atomically); on start the
//! application is restored from it and openraft re-applies the committed entries after it.

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
    current: Option<(SnapshotMeta, Bytes)>,
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
            current: None,
            snapshot_path,
            _alive: alive,
        };
        if let Some((meta, data)) = current {
            lock(&adapter.machine).restore(data.clone())?;
            adapter.last_applied = meta.last_log_id;
            adapter.membership = meta.last_membership.clone();
            adapter.current = Some((meta, data));
        }
        Ok(adapter)
    }
}

/// Builds a snapshot from bytes taken when the builder was made.
pub(crate) struct SnapshotBuilder {
    meta: SnapshotMeta,
    data: io::Result<Bytes>,
    snapshot_path: PathBuf,
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
        self.current = Some((meta.clone(), snapshot));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<StoredSnapshot>, io::Error> {
        if let Some(on_disk) = read_snapshot(&self.snapshot_path)? {
            self.current = Some(on_disk);
        }
        Ok(self.current.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: data.clone(),
        }))
    }
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"NRS1";

fn write_snapshot(path: &Path, meta: &SnapshotMeta, data: &Bytes) -> io::Result<()> {
    let mut writer = Writer::new();
    writer.snapshot_meta(meta);
    writer.bytes(data);
    checked_file::write(path, SNAPSHOT_MAGIC, &writer.finish())
}

fn read_snapshot(path: &Path) -> io::Result<Option<(SnapshotMeta, Bytes)>> {
    let Some(body) = checked_file::read(path, SNAPSHOT_MAGIC)? else {
        return Ok(None);
    };
    let malformed = |_| checked_file::malformed(path, "snapshot");
    let mut reader = Reader::new(&body);
    let meta = reader.snapshot_meta().map_err(malformed)?;
    let data = Bytes::copy_from_slice(reader.bytes().map_err(malformed)?);
    Ok(Some((meta, data)))
}

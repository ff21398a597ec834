//! The application's [`StateMachine`] trait and its adapter to openraft's `RaftStateMachine`.
//!
//! The adapter keeps the Raft bookkeeping (last applied log id, last membership, the current
//! snapshot) and hands the application only its own payloads and opaque snapshot bytes. The current
//! snapshot is kept in `<group dir>/snapshot` (`snapshot_file.rs`); on start the application is
//! restored from it and openraft re-applies the committed entries after it. A snapshot is never
//! whole in memory: the application writes it to a file and restores it from a reader, the
//! sender reads its chunks from the file and a receiver writes them to one.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{RaftSnapshotBuilder, Snapshot};

use crate::snapshot_file::{self, BuildWriter, SnapshotFile, SnapshotOut};
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

    /// Writes the whole state, as of the last applied index, to `out` (a file: write it in
    /// pieces rather than building it whole in memory; positions count from the snapshot's
    /// start, and what was written last, wherever the position, ends it).
    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> io::Result<()>;

    /// Replaces the whole state with a snapshot written by [`StateMachine::snapshot`] (possibly
    /// on another node), read from `snapshot` (buffered) to its end.
    fn restore(&mut self, snapshot: &mut dyn io::Read) -> io::Result<()>;
}

type Shared = Arc<Mutex<Box<dyn StateMachine>>>;

/// The current snapshot, shared by the adapter and the builders it makes.
type Current = Arc<Mutex<Option<(SnapshotMeta, SnapshotFile)>>>;

/// Makes `(meta, data)` the current snapshot, its file moved to `path`, unless the current one
/// is newer (a builder that finishes after a snapshot from the leader was installed replaces
/// neither it nor its file: its own file goes with its last handle).
fn set_current(
    current: &Current,
    path: &Path,
    meta: &SnapshotMeta,
    data: &SnapshotFile,
) -> io::Result<()> {
    let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
    if current
        .as_ref()
        .is_some_and(|(held, _)| held.last_log_id > meta.last_log_id)
    {
        return Ok(());
    }
    data.persist(path)?;
    *current = Some((meta.clone(), data.clone()));
    Ok(())
}

fn lock(machine: &Shared) -> MutexGuard<'_, Box<dyn StateMachine>> {
    machine
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) type StoredSnapshot =
    Snapshot<crate::types::LeaderId, u64, openraft::impls::EmptyNode, SnapshotFile>;

/// Runs blocking file work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join_error| Err(io::Error::other(join_error.to_string())))
}

/// openraft's view of the application's state machine.
pub(crate) struct StateMachineAdapter {
    machine: Shared,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: Current,
    directory: PathBuf,
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
        snapshot_file::remove_leftovers(directory)?;
        let snapshot_path = snapshot_file::current_path(directory);
        let current = snapshot_file::open(&snapshot_path)?;
        let machine: Shared = Arc::new(Mutex::new(machine));
        let mut adapter = StateMachineAdapter {
            machine,
            last_applied: None,
            membership: StoredMembership::default(),
            current: Current::default(),
            directory: directory.to_path_buf(),
            snapshot_path,
            _alive: alive,
        };
        if let Some((meta, data)) = current {
            lock(&adapter.machine).restore(&mut data.reader())?;
            adapter.last_applied = meta.last_log_id;
            adapter.membership = meta.last_membership.clone();
            set_current(&adapter.current, &adapter.snapshot_path, &meta, &data)?;
        }
        Ok(adapter)
    }
}

/// Finishes a snapshot the application wrote when the builder was made.
pub(crate) struct SnapshotBuilder {
    meta: SnapshotMeta,
    written: Option<io::Result<BuildWriter>>,
    snapshot_path: PathBuf,
    current: Current,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    type SnapshotData = SnapshotFile;

    async fn build_snapshot(&mut self) -> Result<StoredSnapshot, io::Error> {
        let writer = match self.written.take() {
            Some(Ok(writer)) => writer,
            Some(Err(error)) => return Err(error),
            None => return Err(io::Error::other("snapshot already built")),
        };
        let data = blocking(move || writer.finish()).await?;
        let (current, path, meta) = (
            self.current.clone(),
            self.snapshot_path.clone(),
            self.meta.clone(),
        );
        let data_for_current = data.clone();
        blocking(move || set_current(&current, &path, &meta, &data_for_current)).await?;
        Ok(Snapshot {
            meta: self.meta.clone(),
            snapshot: data,
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineAdapter {
    type SnapshotData = SnapshotFile;
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

    /// The application writes its snapshot to a file here, between applies (it must match the
    /// last applied index); the builder completes and syncs the file on a blocking thread.
    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        let meta = SnapshotMeta {
            last_log_id: self.last_applied,
            last_membership: self.membership.clone(),
        };
        let written = BuildWriter::create(&self.directory, &meta).and_then(|mut writer| {
            lock(&self.machine).snapshot(&mut writer)?;
            Ok(writer)
        });
        SnapshotBuilder {
            meta,
            written: Some(written),
            snapshot_path: self.snapshot_path.clone(),
            current: self.current.clone(),
        }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: SnapshotFile,
    ) -> Result<(), io::Error> {
        lock(&self.machine).restore(&mut snapshot.reader())?;
        let (current, path, meta_for_current) = (
            self.current.clone(),
            self.snapshot_path.clone(),
            meta.clone(),
        );
        blocking(move || set_current(&current, &path, &meta_for_current, &snapshot)).await?;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
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

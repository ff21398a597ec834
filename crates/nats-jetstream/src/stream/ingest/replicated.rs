//! The ingest task of a replicated stream: the leader decides and applies as an R1 stream does,
//! records the entries of each batch (`Ingest::apply`), and at the end of the batch proposes them;
//! the PubAcks, the answers to commands (purge, delete, update) and the consumers' wake-up wait
//! for the commit. Up to [`IN_FLIGHT`] batches are proposed at once: the next one is decided and
//! appended while the one before it is on its way to a quorum's disks; past that, publishes that
//! arrive meanwhile make the next batch larger, so the log's group commit covers them together.
//! A follower takes no publishes and no commands but config updates (kept for when it leads); it
//! neither expires nor fires schedules (the leader's entries do that).

use super::super::replication::{codec, ProposeFuture, Replica, ReplicationError};
use super::{announce, send_acks, Ingest};
use crate::stream::StreamCommand;
use bytes::{Bytes, BytesMut};
use nats_store::StreamStore;
use std::collections::VecDeque;
use tokio::sync::watch;

/// How many batches a leader keeps proposed at once. While one is on its way to a quorum's
/// disks the next is appended and sent behind it, so a batch no longer waits a whole commit
/// before it leaves; past this many, what arrives forms a larger batch (one log entry, one
/// share of the group commit) for when the oldest commits.
pub(super) const IN_FLIGHT: usize = 2;

/// A batch proposed and not yet committed, and what goes out once it is.
struct InFlight {
    commit: ProposeFuture,
    acks: Vec<(Bytes, Bytes)>,
    answers: Vec<Box<dyn FnOnce(bool) + Send>>,
    /// The stream's last sequence with the batch applied.
    last: u64,
}

/// The replicated part of the ingest task's state.
pub(super) struct ReplicaState {
    replica: Replica,
    leadership: watch::Receiver<Option<u64>>,
    /// `Replicator::elected`: while it holds without the leadership, what arrives waits for it.
    elected: watch::Receiver<bool>,
    /// The leadership this task last took (its in-memory state was rebuilt then); forgotten
    /// when its store went ahead of the log, so that even the same leadership number (a
    /// replicator reusing it) is taken afresh after the rebuild.
    leading: Option<u64>,
    /// The entries applied since the last proposal, behind a batch header.
    batch: Vec<u8>,
    /// PubAcks waiting for the batch's commit.
    acks: Vec<(Bytes, Bytes)>,
    /// Answers to commands (purge, delete, update) waiting for the batch's commit; called with
    /// whether it committed.
    answers: Vec<Box<dyn FnOnce(bool) + Send>>,
    next_id: u64,
    /// The batches proposed and not yet committed, oldest first (at most [`IN_FLIGHT`]).
    in_flight: VecDeque<InFlight>,
    /// The Raft term the batches in flight were submitted in: a batch is decided on top of
    /// the ones before it, so it may enter the log only in their term (none of them
    /// committed, it must not either).
    term: Option<u64>,
    /// The task withdrew the stream's subscriptions before refusing publishes
    /// ([`Ingest::withdraw_before_refusing`]): taken again with this server's next leadership
    /// (also the same one resumed: a sole voter goes on leading).
    withdrawn: bool,
}

impl ReplicaState {
    pub(super) fn new(replica: Replica) -> ReplicaState {
        let leadership = replica.replicator.leadership();
        let elected = replica.replicator.elected();
        let mut batch = Vec::with_capacity(64 * 1024);
        codec::start_batch(&mut batch);
        // Batch ids only need to differ from other leaders' while one is in flight: start
        // from a mixed clock reading.
        let next_id = (crate::time_format::now_nanos() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ReplicaState {
            replica,
            leadership,
            elected,
            leading: None,
            batch,
            acks: Vec::new(),
            answers: Vec::new(),
            next_id,
            in_flight: VecDeque::new(),
            term: None,
            withdrawn: false,
        }
    }

    /// The store holds entries that may never commit (and the duplicate window their message
    /// ids): the replica is rebuilt, and the next leadership starts from the rebuilt store.
    fn diverged(&mut self) {
        self.leading = None;
        self.replica.shared.mark_diverged();
        self.replica.replicator.rebuilt();
    }

    /// Whether the next entry is the first of a batch (nothing recorded since the last
    /// proposal).
    pub(super) fn opens_batch(&self) -> bool {
        !codec::has_entries(&self.batch)
    }

    /// Records one applied entry for the next proposal.
    pub(super) fn record(&mut self, entry: &crate::stream::apply::StreamEntry<'_>) {
        codec::encode(entry, &mut self.batch);
    }
}

/// What the task may do with its next batch.
pub(super) enum Role {
    /// Not replicated, or the leader as before.
    Decide,
    /// Leader in a new term: rebuild the in-memory state from the store first.
    TookLeadership,
    /// A follower (or a leader whose store went ahead of the log).
    Follow,
}

impl Ingest {
    /// Answers a command: at once on an R1 stream, once the batch is committed on a replicated
    /// one (never, when it does not commit: the requester hears nothing, as from a deposed
    /// nats-server leader).
    pub(super) fn answer_command<T: Send + 'static>(
        &mut self,
        reply: tokio::sync::oneshot::Sender<T>,
        result: T,
    ) {
        match self.replica.as_mut() {
            None => {
                let _ = reply.send(result);
            }
            Some(state) => state.answers.push(Box::new(move |committed| {
                if committed {
                    let _ = reply.send(result);
                }
            })),
        }
    }

    /// [`Ingest::role`], once the batches in flight are settled if the task no longer leads as
    /// when it proposed them (they are answered, or given up and the replica rebuilt, first).
    pub(super) async fn current_role(&mut self) -> Role {
        // Said before the leadership is read: a handover that saw `false` after it stopped the
        // leadership knows the next read here sees that.
        self.set_deciding(true);
        if self.in_flight() > 0 && !self.leads_as_before() {
            self.drain_in_flight().await;
        }
        let mut role = self.role();
        if matches!(role, Role::Follow) {
            self.set_deciding(false);
            // Elected, its election's entry not yet applied: what arrived waits for the
            // leadership rather than being refused (the stream subscribed at the election).
            while matches!(role, Role::Follow) && self.awaits_leadership() {
                let Some(state) = self.replica.as_mut() else {
                    break;
                };
                let changed = tokio::select! {
                    changed = state.leadership.changed() => changed,
                    changed = state.elected.changed() => changed,
                };
                if changed.is_err() {
                    break;
                }
                self.set_deciding(true);
                role = self.role();
                if matches!(role, Role::Follow) {
                    self.set_deciding(false);
                }
            }
        }
        role
    }

    /// Elected and not leading yet (nor diverged): the leadership is on its way.
    fn awaits_leadership(&self) -> bool {
        self.replica.as_ref().is_some_and(|state| {
            *state.elected.borrow()
                && state.leadership.borrow().is_none()
                && !state.replica.shared.is_diverged()
        })
    }

    /// See `ReplicaShared::deciding`.
    pub(super) fn set_deciding(&self, deciding: bool) {
        if let Some(state) = self.replica.as_ref() {
            state.replica.shared.set_deciding(deciding);
        }
    }

    /// Whether the task still leads as when it decided its last batch.
    fn leads_as_before(&self) -> bool {
        let Some(state) = self.replica.as_ref() else {
            return true;
        };
        let leadership = *state.leadership.borrow();
        leadership.is_some() && leadership == state.leading && !state.replica.shared.is_diverged()
    }

    fn role(&mut self) -> Role {
        let Some(state) = self.replica.as_mut() else {
            return Role::Decide;
        };
        let term = *state.leadership.borrow_and_update();
        match term {
            Some(term) if !state.replica.shared.is_diverged() => {
                if state.leading == Some(term) {
                    Role::Decide
                } else {
                    state.leading = Some(term);
                    Role::TookLeadership
                }
            }
            _ => {
                state.leading = None;
                if term.is_none() {
                    // No leadership here: the leadership watch subscribes with the next one.
                    state.withdrawn = false;
                }
                Role::Follow
            }
        }
    }

    /// Before publishes are refused because this leader stops (10009) or cannot store them
    /// (10077): the stream's subscriptions go first, so their withdrawal (`RS-` on every route,
    /// queued there before the refusals' replies) reaches the publishers' servers ahead of the
    /// refusals. A publish sent on a refusal then finds no interest at its server: "no
    /// responders", or the next leader's subscription. Withdrawn after the refusals (by the
    /// leadership watch, `subscribe_while_leading`, a moment later), that publish could cross a
    /// route to this server after the subscription went and be dropped unanswered (issue 15:
    /// 4 of 10 runs of the full-disk leader cases). They come back with the next leadership:
    /// the watch's, or the same one resumed here ([`Ingest::take_leadership`]).
    fn withdraw_before_refusing(&mut self) {
        if let Some(state) = self.replica.as_mut() {
            state.withdrawn = true;
            self.stream.withdraw_subjects();
        }
    }

    /// Whether the task withdrew the subscriptions and has not taken a leadership since: it
    /// checks its role every [`super::failure::RETRY_INTERVAL`] meanwhile, publishes being
    /// what would otherwise wake it.
    pub(super) fn withdrawn(&self) -> bool {
        self.replica.as_ref().is_some_and(|state| state.withdrawn)
    }

    /// A new leadership: what the task keeps in memory (account usage) is read again from the
    /// store, which now holds every committed entry. The duplicate window and the last message
    /// id were kept as this replica applied its leaders' batches and snapshots
    /// (`Dedupe::complete`), as nats-server's replicas track message ids: read back from the
    /// store only if not (a replica's window is complete from its empty start on; the scan is
    /// the fallback). Subscriptions withdrawn before a refusal are taken again.
    pub(super) fn take_leadership(&mut self) {
        self.recover();
        if !self.stream.dedupe.lock().complete {
            self.load_duplicate_window();
        }
        if let Some(state) = self.replica.as_mut() {
            if std::mem::take(&mut state.withdrawn) {
                self.stream.resubscribe();
            }
        }
    }

    /// A message queued while this server led, not stored: its backlog released, and a
    /// publisher told at once (`refuse`: 10009), so that it retries on the next leader instead
    /// of waiting out its timeout.
    fn drop_queued(&self, message: crate::transport::Message, refuse: bool) {
        self.stream
            .backlog
            .release(message.payload.len() + message.headers.as_ref().map_or(0, |h| h.len()));
        let reply = message.reply.filter(|reply| !reply.is_empty());
        if let (true, false, Some(reply)) = (refuse, self.config.no_ack, reply) {
            let refused = self.error_ack(jetstream_api::errors::CLUSTER_NOT_LEADER.to_error());
            send_acks(&*self.context.transport, [(reply, refused)]);
        }
    }

    /// A follower's answer to its queue (what arrived while it led): publishes refused with
    /// 10009 (nats-server drops them unanswered, and its publisher waits out its timeout),
    /// sourced messages dropped, commands refused as not the leader. True on Stop.
    pub(super) fn follow(&mut self, batch: &mut Vec<StreamCommand>) -> bool {
        let not_leader = || jetstream_api::errors::CLUSTER_NOT_LEADER.to_error();
        if batch
            .iter()
            .any(|command| matches!(command, StreamCommand::Publish(_)))
        {
            self.withdraw_before_refusing();
        }
        for command in batch.drain(..) {
            match command {
                StreamCommand::Publish(message) => self.drop_queued(message, true),
                StreamCommand::Sourced(message) => self.drop_queued(message, false),
                StreamCommand::Purge { reply, .. } => {
                    let _ = reply.send(Err(not_leader()));
                }
                StreamCommand::DeleteMessage { reply, .. } => {
                    let _ = reply.send(Err(not_leader()));
                }
                // The meta group's update reaches every replica: a follower keeps the config
                // (for when it leads); its store takes it from the leader's log entry.
                StreamCommand::UpdateConfig { config, reply } => {
                    self.set_config(*config);
                    let _ = reply.send(Ok(()));
                }
                StreamCommand::Acked { .. }
                | StreamCommand::InterestReleased
                | StreamCommand::Mirror(_) => {}
                stop @ StreamCommand::Stop { .. } => {
                    let store_handle = self.stream.store.clone();
                    let mut store = store_handle.write();
                    return self.execute(&mut **store, stop);
                }
            }
        }
        false
    }

    /// The replicated commit: the batch's writes reach the store's files (the log, not the
    /// store, is what must be durable before a PubAck), the PubAcks wait for the proposal.
    pub(super) fn commit_replicated(&mut self, store: &mut dyn StreamStore) {
        let dirty = std::mem::replace(&mut self.dirty, false);
        if dirty {
            if let Err(error) = store.flush() {
                // The entries are recorded but not all written: this replica is rebuilt from
                // the log rather than retried. None of the batch was proposed: its publishers
                // are told it was not stored (a full disk: 503 / 10077 and the reason).
                tracing::error!(stream = %self.config.name, %error, "replicated stream write failed");
                if let Some(state) = self.replica.as_mut() {
                    state.diverged();
                }
                if !self.pending_acks.is_empty() {
                    self.withdraw_before_refusing();
                }
                let refusal = jetstream_api::errors::STREAM_STORE_FAILED
                    .with_err(super::failure::failure_text(&error));
                let refused = self.error_ack(refusal);
                let acks = std::mem::take(&mut self.pending_acks);
                let refusals = acks.into_iter().map(|(reply, _)| (reply, refused.clone()));
                send_acks(&*self.context.transport, refusals);
                return;
            }
            self.update_usage(store);
        }
        if let Some(state) = self.replica.as_mut() {
            state.acks.append(&mut self.pending_acks);
        }
    }

    /// Proposes what the last batch applied: once the log has it (in order behind the batches
    /// still in flight) the task goes on; its PubAcks, the answers to its commands and the
    /// consumers' wake-up wait for its commit ([`Ingest::committed`]). Nothing to log: what
    /// waits goes out behind the last batch in flight, or at once.
    pub(super) async fn replicate(&mut self) {
        let Some(state) = self.replica.as_mut() else {
            return;
        };
        let transport = self.context.transport.clone();
        if !codec::has_entries(&state.batch) {
            // Nothing to log (duplicates, refusals): it waits for the batches before it.
            match state.in_flight.back_mut() {
                Some(last) => {
                    last.acks.append(&mut state.acks);
                    last.answers.append(&mut state.answers);
                }
                None => {
                    send_acks(&*transport, state.acks.drain(..));
                    for answer in state.answers.drain(..) {
                        answer(true);
                    }
                }
            }
            return;
        }
        state.next_id = state.next_id.wrapping_add(1);
        let id = state.next_id;
        let last = self.stream.store.raw_state().last_seq;
        codec::finish_batch(&mut state.batch, id, last);
        let mut payload = BytesMut::with_capacity(state.batch.len());
        payload.extend_from_slice(&state.batch);
        codec::start_batch(&mut state.batch);
        let acks = std::mem::take(&mut state.acks);
        let answers = std::mem::take(&mut state.answers);
        state.replica.shared.applied_locally(id);
        let term = state.term.filter(|_| !state.in_flight.is_empty());
        match state
            .replica
            .replicator
            .submit(payload.freeze(), term)
            .await
        {
            Ok((term, commit)) => {
                state.term = Some(term);
                state.in_flight.push_back(InFlight {
                    commit,
                    acks,
                    answers,
                    last,
                });
            }
            Err(error) => self.not_committed(error, acks, answers),
        }
    }

    /// Batches proposed and not committed yet.
    pub(super) fn in_flight(&self) -> usize {
        self.replica
            .as_ref()
            .map_or(0, |state| state.in_flight.len())
    }

    /// The outcome of the oldest batch in flight (pending for ever with none). Cancel safe: the
    /// batch stays in flight until [`Ingest::committed`] takes it.
    pub(super) async fn oldest_commit(&mut self) -> Result<(), ReplicationError> {
        match self
            .replica
            .as_mut()
            .and_then(|state| state.in_flight.front_mut())
        {
            Some(oldest) => oldest.commit.as_mut().await,
            None => std::future::pending().await,
        }
    }

    /// The oldest batch in flight has its outcome: committed, its PubAcks and answers go out
    /// and the consumers are woken; otherwise it and every batch behind it (decided on top of
    /// it) are lost to this leader, and the replica is rebuilt.
    pub(super) fn committed(&mut self, outcome: Result<(), ReplicationError>) {
        let Some(state) = self.replica.as_mut() else {
            return;
        };
        let Some(batch) = state.in_flight.pop_front() else {
            return;
        };
        match outcome {
            Ok(()) => {
                self.stream.store.committed();
                announce(&self.stream, batch.last);
                send_acks(&*self.context.transport, batch.acks);
                for answer in batch.answers {
                    answer(true);
                }
            }
            Err(error) => self.not_committed(error, batch.acks, batch.answers),
        }
    }

    /// Waits for every batch in flight (before the task changes role or runs a command that
    /// must follow what was proposed).
    pub(super) async fn drain_in_flight(&mut self) {
        while self.in_flight() > 0 {
            let outcome = self.oldest_commit().await;
            self.committed(outcome);
        }
    }

    /// A batch did not commit: its PubAcks are not sent (it may still commit through the next
    /// leader: its publishers time out, as when a nats-server leader fails) unless the group
    /// refused it before its log (this node was handing its leadership over): then none of it
    /// can commit and they are told so (10009) at once, to retry on the next leader; or this
    /// node's disk is full: told so (10077). The batches behind it were decided on top of it:
    /// they are given up whatever becomes of them, unanswered (their publishers time out) or,
    /// on a full disk, told so too; the replica is rebuilt.
    fn not_committed(
        &mut self,
        error: ReplicationError,
        acks: Vec<(Bytes, Bytes)>,
        answers: Vec<Box<dyn FnOnce(bool) + Send>>,
    ) {
        let Some(state) = self.replica.as_mut() else {
            return;
        };
        tracing::warn!(stream = %self.config.name, %error, "replicated batch not committed; rebuilding the replica");
        let mut acks = acks;
        for batch in state.in_flight.drain(..) {
            for answer in batch.answers {
                answer(false);
            }
            if matches!(error, ReplicationError::NoSpace(_)) {
                acks.extend(batch.acks);
            }
        }
        for answer in answers {
            answer(false);
        }
        state.term = None;
        state.diverged();
        let refusal = match &error {
            ReplicationError::NotLeader => {
                Some(jetstream_api::errors::CLUSTER_NOT_LEADER.to_error())
            }
            // This node's disk is full: answered at once (the batch may still commit through
            // the next leader if it reached the others' logs: a publisher retrying with its
            // message id is deduplicated there).
            ReplicationError::NoSpace(reason) => {
                Some(jetstream_api::errors::STREAM_STORE_FAILED.with_err(reason.clone()))
            }
            _ => None,
        };
        if let Some(refusal) = refusal.filter(|_| !acks.is_empty()) {
            self.withdraw_before_refusing();
            let refused = self.error_ack(refusal);
            let refusals = acks.into_iter().map(|(reply, _)| (reply, refused.clone()));
            send_acks(&*self.context.transport, refusals);
        }
    }
}

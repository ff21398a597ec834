//! A peer's message to this group ([`RaftGroup::handle_message`]): decoded by kind, handed to
//! openraft, the reply encoded; snapshots sent in chunks assembled in a file on the way
//! (`snapshot_chunks.rs`).

use std::sync::atomic::Ordering;

use openraft::async_runtime::watch::WatchReceiver;

use bytes::Bytes;

use super::{AppendReply, RaftGroup};
use crate::codec::{Reader, Writer};
use crate::network::{encode_transfer_reply, kind, refused, REPLY_OK};
use crate::state_machine::StoredSnapshot;

impl RaftGroup {
    /// Handles one message from a peer (what [`Network::send`] delivered) and returns the reply to
    /// send back.
    pub async fn handle_message(&self, message: Bytes) -> Bytes {
        match self.dispatch(message).await {
            Ok(reply) => reply,
            Err(text) => refused(&text),
        }
    }

    /// Hands a leader's append ([`crate::is_append_request`]) to openraft now and returns the
    /// wait for its reply, which resolves once its entries are on this node's disk (as
    /// [`RaftGroup::handle_message`]'s). A transport that submits one sender's appends in their
    /// order, each before the reply to the one before, lets this node write (and fsync, group
    /// committed) an append while it receives the next: the leader keeps several in flight
    /// (`network.rs`, `stream_append`). The replies must be sent in the requests' order.
    pub async fn submit_append(&self, message: Bytes) -> AppendReply {
        match self.submit_append_request(&message).await {
            Ok(reply) => reply,
            Err(text) => Box::pin(std::future::ready(refused(&text))),
        }
    }

    async fn submit_append_request(&self, message: &[u8]) -> Result<AppendReply, String> {
        let decode = |error: crate::codec::DecodeError| error.to_string();
        let body = match message.split_first() {
            Some((&kind::APPEND, body)) => body,
            _ => return Err("not an append request".to_string()),
        };
        let request = Reader::new(body).append_request().map_err(decode)?;
        let leader_commit = request.leader_commit.as_ref().map(|log_id| log_id.index);
        let term = request.vote.leader_id().term;
        let last = request.entries.last().map(|entry| entry.log_id.index);
        crate::timeline::step!(
            self.group,
            "received entries={} last={last:?}",
            request.entries.len()
        );
        let group = self.group.clone();
        let response = self
            .raft
            .submit_append_entries(request)
            .await
            .map_err(|error| error.to_string())?;
        let raft = self.raft.clone();
        let leader_contact = self.leader_contact.clone();
        Ok(Box::pin(async move {
            let response = match response.await {
                Ok(response) => response,
                Err(error) => return refused(&error.to_string()),
            };
            crate::timeline::step!(group, "answer last={last:?}");
            if matches!(response, openraft::raft::AppendEntriesResponse::Success) {
                let applied = raft
                    .metrics()
                    .borrow_watched()
                    .last_applied
                    .as_ref()
                    .map(|log_id| log_id.index);
                leader_contact.record(term, leader_commit, applied);
            }
            let mut writer = Writer::new();
            writer.u8(REPLY_OK);
            writer.append_response(&response);
            writer.finish()
        }))
    }

    /// Installs a snapshot the leader sent (whole or assembled from chunks); the vote to answer.
    async fn install_snapshot(
        &self,
        vote: crate::types::Vote,
        meta: crate::types::SnapshotMeta,
        data: crate::snapshot_file::SnapshotFile,
    ) -> Result<crate::types::Vote, String> {
        let snapshot = StoredSnapshot {
            meta,
            snapshot: data,
        };
        let response = self
            .raft
            .install_full_snapshot(vote, snapshot)
            .await
            .map_err(|error| error.to_string())?;
        Ok(response.vote)
    }

    async fn dispatch(&self, message: Bytes) -> Result<Bytes, String> {
        let Some((&kind, body)) = message.split_first() else {
            return Err("empty raft message".to_string());
        };
        let protected = self.supervision.protected_until.load(Ordering::Acquire) > 0;
        let decode = |error: crate::codec::DecodeError| error.to_string();
        let mut reader = Reader::new(body);
        let mut writer = Writer::new();
        writer.u8(REPLY_OK);
        match kind {
            kind::APPEND => return Ok(self.submit_append(message.clone()).await.await),
            kind::VOTE | kind::PRE_VOTE => {
                if protected {
                    return Err("catching up to its recorded commit: not voting".to_string());
                }
                let mut request = reader.vote_request().map_err(decode)?;
                let unleased = self.leader_lost() || self.asked_by_own_leader(&request);
                if kind == kind::VOTE && unleased {
                    // Our leader is unreachable from here too, or is the candidate (restarted,
                    // `restarted_leader.rs`): its lease protects nothing.
                    request.leadership_transfer = true;
                }
                let response = if kind == kind::VOTE {
                    self.raft.vote(request).await
                } else {
                    self.raft
                        .pre_vote(request.clone())
                        .await
                        .map(|mut response| {
                            // The same for a pre-vote (openraft's always honours the lease): the
                            // vote that follows is granted above, the log and term permitting.
                            if !response.vote_granted
                                && unleased
                                && request.last_log_id >= response.last_log_id
                                && request.vote > response.vote
                            {
                                response.vote_granted = true;
                            }
                            response
                        })
                };
                writer.vote_response(&response.map_err(|error| error.to_string())?);
            }
            kind::SNAPSHOT => {
                let vote = reader.vote().map_err(decode)?;
                let meta = reader.snapshot_meta().map_err(decode)?;
                let data = message.slice_ref(reader.bytes().map_err(decode)?);
                let (incoming, file_meta) = (self.incoming_snapshot.clone(), meta.clone());
                let data = on_blocking_thread(move || {
                    incoming
                        .whole(&file_meta, &data)
                        .map_err(|error| format!("snapshot file: {error}"))
                })
                .await?;
                writer.vote(&self.install_snapshot(vote, meta, data).await?);
            }
            kind::SNAPSHOT_CHUNK => {
                let vote = reader.vote().map_err(decode)?;
                let meta = reader.snapshot_meta().map_err(decode)?;
                let offset = reader.u64().map_err(decode)?;
                let total = reader.u64().map_err(decode)?;
                let chunk = message.slice_ref(reader.bytes().map_err(decode)?);
                let key = crate::snapshot_chunks::SnapshotKey {
                    vote,
                    last_log_id: meta.last_log_id,
                    total,
                };
                let (incoming, file_meta) = (self.incoming_snapshot.clone(), meta.clone());
                let received =
                    on_blocking_thread(move || incoming.add(key, &file_meta, offset, &chunk))
                        .await?;
                match received {
                    crate::snapshot_chunks::Received::More => {}
                    crate::snapshot_chunks::Received::Complete(data) => {
                        writer.vote(&self.install_snapshot(vote, meta, data).await?);
                    }
                }
            }
            kind::TRANSFER_LEADER => {
                if protected {
                    return Err("catching up to its recorded commit: not leading".to_string());
                }
                let from = reader.vote().map_err(decode)?;
                let to = reader.u64().map_err(decode)?;
                let last = reader.option_log_id().map_err(decode)?;
                let request = openraft::raft::TransferLeaderRequest::new(from, to, last);
                let response = self
                    .raft
                    .handle_transfer_leader(request)
                    .await
                    .map_err(|error| error.to_string())?;
                encode_transfer_reply(&mut writer, &response);
            }
            _ => return Err(format!("unknown raft message kind {kind}")),
        }
        Ok(writer.finish())
    }
}

/// Runs a snapshot file's writes (and the sync of a finished one, up to the whole snapshot) off
/// the async workers.
async fn on_blocking_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(error.to_string()))
}

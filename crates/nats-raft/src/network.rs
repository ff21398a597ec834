//! The transport seam: the application's [`Network`] trait, and openraft's network traits on top of
//! it.
//!
//! A message is opaque bytes addressed to (group, node); the receiving side hands it to that
//! group's [`crate::RaftGroup::handle_message`] and sends the returned bytes back as the reply.
//! openraft keeps one replication pipeline per follower and waits for each reply before the next
//! request, so a transport that delivers one sender's messages in order keeps per-follower order.
//! The nats-server crate is meant to implement [`Network`] over routes (request/reply on internal
//! subjects); tests implement it over channels.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::FuturesOrdered;
use futures::StreamExt;
use openraft::base::{BoxFuture, BoxStream};
use openraft::errors::{
    NetworkError as RaftNetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::impls::EmptyNode;
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::TransferLeaderError;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult,
    TransferLeaderRequest, TransferLeaderResponse, VoteRequest, VoteResponse,
};

use crate::codec::{DecodeError, Reader, Writer};
use crate::snapshot_chunks::CHUNK;
use crate::state_machine::StoredSnapshot;
use crate::types::{Entry, EntryPayload, NodeId, TypeConfig, Vote};

/// Why a message got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// The node cannot be reached now (no route, partitioned, connection closed).
    #[error("node unreachable: {0}")]
    Unreachable(String),
    /// No reply within the time allowed.
    #[error("request timed out")]
    Timeout,
}

/// A reply on its way back.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Result<Bytes, NetworkError>> + Send>>;

/// How a group's messages reach other nodes. One implementation serves every group of a node.
pub trait Network: Send + Sync + 'static {
    /// Sends `message` to group `group` on node `target`; resolves to the bytes that node's
    /// [`crate::RaftGroup::handle_message`] returned. Messages from one sender to one (group,
    /// target) must be delivered in the order they were sent.
    fn send(&self, group: &str, target: NodeId, message: Bytes) -> ReplyFuture;

    /// Whether `target` can be reached at all now (false: its connection is gone, so a leader
    /// there is lost to this node). A voter that lost its leader grants votes within openraft's
    /// lease once the leader's own lease ran out (see [`crate::RaftGroup::leader_unreachable`]).
    /// True unless the transport knows.
    fn reachable(&self, _target: NodeId) -> bool {
        true
    }

    /// When this node last received anything from `target` (a request or a reply), if the
    /// transport knows. A leader's lease counts from a send time a quorum acknowledged, so
    /// `lost_quorum` after this moment it has run out as far as this node's word goes
    /// ([`crate::OVERRIDE_MARGIN`]). `None`: not heard since this node's groups started.
    fn last_heard(&self, _target: NodeId) -> Option<tokio::time::Instant> {
        None
    }
}

/// Message kinds, the first byte of every request.
pub(crate) mod kind {
    pub(crate) const APPEND: u8 = 1;
    pub(crate) const VOTE: u8 = 2;
    pub(crate) const PRE_VOTE: u8 = 3;
    pub(crate) const SNAPSHOT: u8 = 4;
    pub(crate) const TRANSFER_LEADER: u8 = 5;
    /// One chunk of a snapshot larger than `snapshot_chunks::CHUNK`.
    pub(crate) const SNAPSHOT_CHUNK: u8 = 6;
}

/// Whether `message` (a request as [`Network::send`] carries it) asks for a vote or a pre-vote:
/// a transport may hold such a request for a group it does not run yet, instead of refusing
/// it, when the group is about to start there (a new group's first campaign).
pub fn is_vote_request(message: &[u8]) -> bool {
    matches!(message.first(), Some(&kind::VOTE | &kind::PRE_VOTE))
}

/// Whether `message` (a request as [`Network::send`] carries it) asks this node to take over
/// leadership. Its handling waits, up to the election timeout, for this node's log to hold the
/// leader's last entry, which the same sender's appends bring: a transport that answers one
/// sender's requests one at a time must not hold those appends behind it.
pub fn is_transfer_leader_request(message: &[u8]) -> bool {
    message.first() == Some(&kind::TRANSFER_LEADER)
}

/// Whether `message` (a request as [`Network::send`] carries it) is a leader's append: a
/// transport may hand the next appends of the same sender to the group
/// ([`crate::RaftGroup::submit_append`]) before this one is answered, and must send the replies
/// in the order of the requests.
pub fn is_append_request(message: &[u8]) -> bool {
    message.first() == Some(&kind::APPEND)
}

/// Reply status, the first byte of every reply.
pub(crate) const REPLY_OK: u8 = 0;
pub(crate) const REPLY_REFUSED: u8 = 1;

/// An error text in a refused reply, as an `std::error::Error` for openraft.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

pub(crate) struct NetworkFactory {
    pub(crate) group: Arc<str>,
    pub(crate) network: Arc<dyn Network>,
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, _node: &EmptyNode) -> PeerClient {
        PeerClient {
            group: self.group.clone(),
            target,
            network: self.network.clone(),
        }
    }
}

/// openraft's client for one peer of one group.
pub(crate) struct PeerClient {
    group: Arc<str>,
    target: NodeId,
    network: Arc<dyn Network>,
}

enum CallError {
    Network(NetworkError),
    Refused(String),
    Decode(DecodeError),
}

impl From<CallError> for RPCError<TypeConfig> {
    fn from(error: CallError) -> Self {
        match error {
            CallError::Network(error) => RPCError::Unreachable(Unreachable::new(&error)),
            CallError::Refused(text) => RPCError::Unreachable(Unreachable::new(&Refused(text))),
            CallError::Decode(error) => RPCError::Network(RaftNetworkError::new(&error)),
        }
    }
}

impl From<CallError> for StreamingError<TypeConfig> {
    fn from(error: CallError) -> Self {
        match error {
            CallError::Network(error) => StreamingError::Unreachable(Unreachable::new(&error)),
            CallError::Refused(text) => {
                StreamingError::Unreachable(Unreachable::new(&Refused(text)))
            }
            CallError::Decode(error) => StreamingError::Network(RaftNetworkError::new(&error)),
        }
    }
}

impl PeerClient {
    /// A client of `target` outside openraft's core (`stall_handover.rs`).
    pub(crate) fn new(group: Arc<str>, target: NodeId, network: Arc<dyn Network>) -> PeerClient {
        PeerClient {
            group,
            target,
            network,
        }
    }

    /// Sends one request and returns the reply body after the OK status byte.
    async fn call(&self, message: Bytes, option: &RPCOption) -> Result<Bytes, CallError> {
        self.send_now(message, option).await
    }

    /// Sends one request now (requests sent one after another reach the target in that order)
    /// and returns the wait for the reply body after the OK status byte.
    fn send_now(
        &self,
        message: Bytes,
        option: &RPCOption,
    ) -> impl Future<Output = Result<Bytes, CallError>> + Send + 'static {
        let reply = self.network.send(&self.group, self.target, message);
        let ttl = option.hard_ttl();
        async move {
            let reply = match tokio::time::timeout(ttl, reply).await {
                Ok(reply) => reply.map_err(CallError::Network)?,
                Err(_) => return Err(CallError::Network(NetworkError::Timeout)),
            };
            match reply.first() {
                Some(&REPLY_OK) => Ok(reply.slice(1..)),
                Some(&REPLY_REFUSED) => Err(CallError::Refused(
                    String::from_utf8_lossy(&reply[1..]).into_owned(),
                )),
                _ => Err(CallError::Decode(DecodeError("bad reply status"))),
            }
        }
    }

    /// Sends one append now, cut to [`APPEND_BYTES`] of entries (at least one), and returns
    /// whether it was cut and the wait for its response. A cut append's response is openraft's
    /// `PartialSuccess` up to its last entry, and its commit index stops there.
    fn send_append(
        &self,
        mut rpc: AppendEntriesRequest<TypeConfig>,
        option: &RPCOption,
    ) -> (
        bool,
        impl Future<Output = Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>>>
            + Send
            + 'static,
    ) {
        let sent = prefix_within(&rpc.entries, APPEND_BYTES);
        let cut = (sent < rpc.entries.len()).then(|| {
            rpc.entries.truncate(sent);
            let last = rpc.entries.last().map(|entry| entry.log_id);
            if rpc.leader_commit > last {
                rpc.leader_commit = last;
            }
            last
        });
        let message = request(kind::APPEND, |writer| writer.append_request(&rpc));
        let last = rpc.entries.last().map(|entry| entry.log_id.index);
        crate::timeline::step!(
            self.group,
            "send to={} prev={:?} last={last:?} entries={} bytes={}",
            self.target,
            rpc.prev_log_id.map(|log_id| log_id.index),
            rpc.entries.len(),
            message.len()
        );
        let reply = self.send_now(message, option);
        let (group, target) = (self.group.clone(), self.target);
        let response = async move {
            let reply = reply.await?;
            crate::timeline::step!(group, "answered by={target} last={last:?}");
            let response = Reader::new(&reply)
                .append_response()
                .map_err(CallError::Decode)?;
            Ok(match (response, cut) {
                (AppendEntriesResponse::Success, Some(last)) => {
                    AppendEntriesResponse::PartialSuccess(last)
                }
                (response, _) => response,
            })
        };
        (cut.is_some(), response)
    }
}

/// How many appends a leader keeps on their way to one follower ([`PeerClient`]'s
/// `stream_append`): the follower writes and fsyncs one (group committed with what else came)
/// while the next ones travel, instead of the leader waiting a whole round trip and fsync before
/// it sends what its log took meanwhile.
pub const APPENDS_IN_FLIGHT: usize = 8;

type StreamAppendItem = Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>;
type AppendWait = Pin<Box<dyn Future<Output = (StreamAppendItem, bool)> + Send>>;

/// The state of one pipelined append stream to a follower.
struct AppendPipeline<S> {
    client: PeerClient,
    input: S,
    option: RPCOption,
    /// The appends sent and not answered, oldest first, each with whether the stream ends after
    /// it (a cut append: what follows it is sent by the next stream, from where it stopped).
    in_flight: FuturesOrdered<AppendWait>,
    /// An append that must be cut, waiting for those before it to be answered.
    held: Option<AppendEntriesRequest<TypeConfig>>,
    /// Nothing more is sent (the input ended, or a cut append was sent).
    done_sending: bool,
}

impl<S> AppendPipeline<S>
where
    S: futures::Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
{
    /// Sends `rpc` now, unless it must be cut while others are in flight: held until they are
    /// answered (nothing is sent behind a cut append).
    fn send(&mut self, rpc: AppendEntriesRequest<TypeConfig>) {
        let cut = prefix_within(&rpc.entries, APPEND_BYTES) < rpc.entries.len();
        if cut && !self.in_flight.is_empty() {
            self.held = Some(rpc);
            return;
        }
        let prev = rpc.prev_log_id;
        let last = rpc.entries.last().map(|entry| entry.log_id).or(prev);
        let (cut, response) = self.client.send_append(rpc, &self.option);
        self.done_sending |= cut;
        self.in_flight.push_back(Box::pin(async move {
            let item = response
                .await
                .map(|response| response.into_stream_result(prev, last));
            (item, cut)
        }));
    }

    /// The next response in the order the appends were sent, sending what the input offers
    /// meanwhile; `None` once nothing more is sent and every append is answered.
    async fn next(&mut self) -> Option<(StreamAppendItem, bool)> {
        loop {
            if self.in_flight.is_empty() {
                if let Some(rpc) = self.held.take() {
                    self.send(rpc);
                    continue;
                }
                if self.done_sending {
                    return None;
                }
                match self.input.next().await {
                    Some(rpc) => self.send(rpc),
                    None => self.done_sending = true,
                }
                continue;
            }
            let room = !self.done_sending
                && self.held.is_none()
                && self.in_flight.len() < APPENDS_IN_FLIGHT;
            tokio::select! {
                biased;
                answered = self.in_flight.next() => return answered,
                rpc = self.input.next(), if room => match rpc {
                    Some(rpc) => self.send(rpc),
                    None => self.done_sending = true,
                },
            }
        }
    }
}

/// The most entry bytes in one append message (see `append_entries`).
pub(crate) const APPEND_BYTES: usize = 4 << 20;

/// How many of `entries`, from the first, fit in `limit` bytes of payload (at least one).
fn prefix_within(entries: &[Entry], limit: usize) -> usize {
    let mut bytes = 0;
    for (count, entry) in entries.iter().enumerate() {
        bytes += match &entry.payload {
            EntryPayload::Normal(proposal) => proposal.0.len() + 64,
            _ => 256,
        };
        if bytes > limit && count > 0 {
            return count;
        }
    }
    entries.len()
}

fn request(kind: u8, body: impl FnOnce(&mut Writer)) -> Bytes {
    let mut writer = Writer::new();
    writer.u8(kind);
    body(&mut writer);
    writer.finish()
}

impl RaftNetworkV2<TypeConfig> for PeerClient {
    type SnapshotData = crate::snapshot_file::SnapshotFile;

    /// At most [`APPEND_BYTES`] of entries go in one message (at least one entry): a catch-up
    /// of 300 entries (openraft's batch) of large stream batches would otherwise overrun a
    /// route's pending limit. The follower's acceptance of a prefix is openraft's
    /// `PartialSuccess` up to its last entry, and the prefix's commit index stops there.
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.send_append(rpc, &option).1.await
    }

    /// Pipelined: up to [`APPENDS_IN_FLIGHT`] appends on their way at once, sent in order (the
    /// transport keeps one sender's order) and answered in order (the follower's
    /// `submit_append` replies in order). The stream ends after an error, a conflict or a
    /// higher vote (openraft starts the next one from what was acknowledged; the appends still
    /// in flight are dropped, and the follower refuses those that no longer follow its log),
    /// and after a cut append.
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<'s, Result<BoxStream<'s, StreamAppendItem>, RPCError<TypeConfig>>>
    where
        S: futures::Stream<Item = AppendEntriesRequest<TypeConfig>>
            + openraft::OptionalSend
            + Unpin
            + 'static,
    {
        let pipeline = AppendPipeline {
            client: PeerClient::new(self.group.clone(), self.target, self.network.clone()),
            input,
            option,
            in_flight: FuturesOrdered::new(),
            held: None,
            done_sending: false,
        };
        let responses = futures::stream::unfold(Some(pipeline), |pipeline| async move {
            let mut pipeline = pipeline?;
            let (item, cut) = pipeline.next().await?;
            let go_on = item.as_ref().is_ok_and(|result| result.is_ok()) && !cut;
            Some((item, go_on.then_some(pipeline)))
        });
        let responses: BoxStream<'s, StreamAppendItem> = Box::pin(responses);
        Box::pin(std::future::ready(Ok(responses)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let message = request(kind::VOTE, |writer| writer.vote_request(&rpc));
        let reply = self.call(message, &option).await?;
        Reader::new(&reply)
            .vote_response()
            .map_err(|error| CallError::Decode(error).into())
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let message = request(kind::PRE_VOTE, |writer| writer.vote_request(&rpc));
        let reply = self.call(message, &option).await?;
        Reader::new(&reply)
            .vote_response()
            .map_err(|error| CallError::Decode(error).into())
    }

    /// A snapshot up to `snapshot_chunks::CHUNK` goes as one message (meta and the
    /// application's bytes); a larger one in chunks, each answered before the next is sent
    /// (`snapshot_chunks.rs`), the last answered with the follower's vote once installed. Each
    /// chunk is read from the snapshot's file when it is sent: one chunk in memory at a time.
    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: StoredSnapshot,
        cancel: impl Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let mut cancel = std::pin::pin!(cancel);
        let total = snapshot.snapshot.len();
        let whole = total <= CHUNK as u64;
        let mut offset = 0u64;
        loop {
            let end = (offset + CHUNK as u64).min(total);
            let file = snapshot.snapshot.clone();
            let read = tokio::task::spawn_blocking(move || {
                let mut chunk = vec![0u8; (end - offset) as usize];
                file.read_at(offset, &mut chunk).map(|()| chunk)
            });
            let chunk = match read.await {
                Ok(Ok(chunk)) => chunk,
                Ok(Err(error)) => {
                    return Err(StreamingError::Network(RaftNetworkError::new(&error)))
                }
                Err(error) => return Err(StreamingError::Network(RaftNetworkError::new(&error))),
            };
            let message = if whole {
                request(kind::SNAPSHOT, |writer| {
                    writer.vote(&vote);
                    writer.snapshot_meta(&snapshot.meta);
                    writer.bytes(&chunk);
                })
            } else {
                request(kind::SNAPSHOT_CHUNK, |writer| {
                    writer.vote(&vote);
                    writer.snapshot_meta(&snapshot.meta);
                    writer.u64(offset);
                    writer.u64(total);
                    writer.bytes(&chunk);
                })
            };
            drop(chunk);
            let reply = tokio::select! {
                closed = &mut cancel => return Err(StreamingError::Closed(closed)),
                reply = self.call(message, &option) => reply?,
            };
            if end == total {
                let vote = Reader::new(&reply).vote().map_err(CallError::Decode)?;
                return Ok(SnapshotResponse::new(vote));
            }
            offset = end;
        }
    }

    async fn transfer_leader(
        &mut self,
        request_to_send: TransferLeaderRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<TypeConfig>, RPCError<TypeConfig>> {
        let message = request(kind::TRANSFER_LEADER, |writer| {
            writer.vote(request_to_send.from_leader());
            writer.u64(*request_to_send.to_node_id());
            writer.option_log_id(request_to_send.last_log_id());
        });
        let reply = self.call(message, &option).await?;
        decode_transfer_reply(&reply).map_err(|error| CallError::Decode(error).into())
    }
}

pub(crate) fn encode_transfer_reply(
    writer: &mut Writer,
    reply: &TransferLeaderResponse<TypeConfig>,
) {
    match reply {
        Ok(()) => writer.u8(0),
        Err(TransferLeaderError::VoteChanged { expected, actual }) => {
            writer.u8(1);
            writer.vote(expected);
            writer.vote(actual);
        }
        Err(TransferLeaderError::LogNotFlushed { expected, actual }) => {
            writer.u8(2);
            writer.option_log_id(expected.as_ref());
            writer.option_log_id(actual.as_ref());
        }
    }
}

fn decode_transfer_reply(reply: &[u8]) -> Result<TransferLeaderResponse<TypeConfig>, DecodeError> {
    let mut reader = Reader::new(reply);
    Ok(match reader.u8()? {
        0 => Ok(()),
        1 => Err(TransferLeaderError::VoteChanged {
            expected: reader.vote()?,
            actual: reader.vote()?,
        }),
        2 => Err(TransferLeaderError::LogNotFlushed {
            expected: reader.option_log_id()?,
            actual: reader.option_log_id()?,
        }),
        _ => return Err(DecodeError("bad transfer reply")),
    })
}

/// A refused reply carrying `text`: what a transport sends back for a message it cannot hand to
/// any group (e.g. a group this node does not run), so the sender fails fast instead of timing
/// out.
pub fn refused(text: &str) -> Bytes {
    let mut writer = Writer::new();
    writer.u8(REPLY_REFUSED);
    let mut bytes = writer.finish().to_vec();
    bytes.extend_from_slice(text.as_bytes());
    Bytes::from(bytes)
}

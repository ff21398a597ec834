//! Binary encoding of log entries, votes and Raft RPCs: one format for the log files and the wire.
//!
//! Little-endian fixed-width integers, `u32` length prefixes, a tag byte for options and enums.
//! Decoding never panics on foreign bytes: every read is bounds-checked and returns
//! [`DecodeError`].

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest, VoteResponse};

use crate::types::{
    log_id, Entry, EntryPayload, LogId, Membership, NodeId, Proposal, SnapshotMeta,
    StoredMembership, TypeConfig, Vote,
};

/// Bytes that do not decode as what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed raft encoding: {0}")]
pub struct DecodeError(pub &'static str);

/// Appends values to a buffer.
pub(crate) struct Writer {
    buffer: BytesMut,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Writer {
            buffer: BytesMut::with_capacity(64),
        }
    }

    pub(crate) fn finish(self) -> Bytes {
        self.buffer.freeze()
    }

    pub(crate) fn u8(&mut self, value: u8) {
        self.buffer.put_u8(value);
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.buffer.put_u64_le(value);
    }

    pub(crate) fn bool(&mut self, value: bool) {
        self.u8(u8::from(value));
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.buffer.put_u32_le(value.len() as u32);
        self.buffer.put_slice(value);
    }

    pub(crate) fn log_id(&mut self, value: &LogId) {
        self.u64(value.leader_id.term);
        self.u64(value.leader_id.node_id);
        self.u64(value.index);
    }

    pub(crate) fn option_log_id(&mut self, value: Option<&LogId>) {
        match value {
            None => self.u8(0),
            Some(log_id) => {
                self.u8(1);
                self.log_id(log_id);
            }
        }
    }

    pub(crate) fn vote(&mut self, value: &Vote) {
        self.u64(value.leader_id.term);
        self.u64(value.leader_id.node_id);
        self.bool(value.committed);
    }

    pub(crate) fn membership(&mut self, value: &Membership) {
        let configs = value.get_joint_config();
        self.u64(configs.len() as u64);
        for config in configs {
            self.u64(config.len() as u64);
            for node in config {
                self.u64(*node);
            }
        }
        let nodes: Vec<NodeId> = value.nodes().map(|(id, _)| *id).collect();
        self.u64(nodes.len() as u64);
        for node in nodes {
            self.u64(node);
        }
    }

    pub(crate) fn stored_membership(&mut self, value: &StoredMembership) {
        self.option_log_id(value.log_id().as_ref());
        self.membership(value.membership());
    }

    pub(crate) fn entry(&mut self, value: &Entry) {
        self.log_id(&value.log_id);
        match &value.payload {
            EntryPayload::Blank => self.u8(0),
            EntryPayload::Normal(proposal) => {
                self.u8(1);
                self.bytes(&proposal.0);
            }
            EntryPayload::Membership(membership) => {
                self.u8(2);
                self.membership(membership);
            }
        }
    }

    pub(crate) fn snapshot_meta(&mut self, value: &SnapshotMeta) {
        self.option_log_id(value.last_log_id.as_ref());
        self.stored_membership(&value.last_membership);
    }

    pub(crate) fn append_request(&mut self, value: &AppendEntriesRequest<TypeConfig>) {
        self.vote(&value.vote);
        self.option_log_id(value.prev_log_id.as_ref());
        self.option_log_id(value.leader_commit.as_ref());
        self.u64(value.entries.len() as u64);
        for entry in &value.entries {
            self.entry(entry);
        }
    }

    pub(crate) fn append_response(&mut self, value: &AppendEntriesResponse<TypeConfig>) {
        match value {
            AppendEntriesResponse::Success => self.u8(0),
            AppendEntriesResponse::PartialSuccess(matched) => {
                self.u8(1);
                self.option_log_id(matched.as_ref());
            }
            AppendEntriesResponse::Conflict => self.u8(2),
            AppendEntriesResponse::HigherVote(vote) => {
                self.u8(3);
                self.vote(vote);
            }
        }
    }

    pub(crate) fn vote_request(&mut self, value: &VoteRequest<TypeConfig>) {
        self.vote(&value.vote);
        self.option_log_id(value.last_log_id.as_ref());
        self.bool(value.leadership_transfer);
    }

    pub(crate) fn vote_response(&mut self, value: &VoteResponse<TypeConfig>) {
        self.vote(&value.vote);
        self.bool(value.vote_granted);
        self.option_log_id(value.last_log_id.as_ref());
    }
}

/// Reads values back from a byte slice.
pub(crate) struct Reader<'a> {
    input: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Reader { input }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    fn take(&mut self, length: usize) -> Result<&'a [u8], DecodeError> {
        if self.input.len() < length {
            return Err(DecodeError("truncated"));
        }
        let (head, rest) = self.input.split_at(length);
        self.input = rest;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        let mut buffer = [0u8; 4];
        buffer.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(buffer))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut buffer = [0u8; 8];
        buffer.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(buffer))
    }

    pub(crate) fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError("bad bool")),
        }
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let length = self.u32()? as usize;
        self.take(length)
    }

    /// A count that cannot ask for more items than bytes remain (each item is at least a byte).
    fn count(&mut self) -> Result<usize, DecodeError> {
        let count = self.u64()?;
        if count > self.input.len() as u64 {
            return Err(DecodeError("count beyond input"));
        }
        Ok(count as usize)
    }

    pub(crate) fn log_id(&mut self) -> Result<LogId, DecodeError> {
        let term = self.u64()?;
        let node = self.u64()?;
        let index = self.u64()?;
        Ok(log_id(term, node, index))
    }

    pub(crate) fn option_log_id(&mut self) -> Result<Option<LogId>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.log_id()?)),
            _ => Err(DecodeError("bad option tag")),
        }
    }

    pub(crate) fn vote(&mut self) -> Result<Vote, DecodeError> {
        let term = self.u64()?;
        let node = self.u64()?;
        let committed = self.bool()?;
        Ok(if committed {
            Vote::new_committed(term, node)
        } else {
            Vote::new(term, node)
        })
    }

    pub(crate) fn membership(&mut self) -> Result<Membership, DecodeError> {
        let config_count = self.count()?;
        let mut configs = Vec::with_capacity(config_count);
        for _ in 0..config_count {
            let node_count = self.count()?;
            let mut config = BTreeSet::new();
            for _ in 0..node_count {
                config.insert(self.u64()?);
            }
            configs.push(config);
        }
        let node_count = self.count()?;
        let mut nodes = BTreeSet::new();
        for _ in 0..node_count {
            nodes.insert(self.u64()?);
        }
        Membership::new(configs, nodes).map_err(|_| DecodeError("inconsistent membership"))
    }

    pub(crate) fn stored_membership(&mut self) -> Result<StoredMembership, DecodeError> {
        let log_id = self.option_log_id()?;
        let membership = self.membership()?;
        Ok(StoredMembership::new(log_id, membership))
    }

    pub(crate) fn entry(&mut self) -> Result<Entry, DecodeError> {
        let log_id = self.log_id()?;
        let payload = match self.u8()? {
            0 => EntryPayload::Blank,
            1 => EntryPayload::Normal(Proposal(Bytes::copy_from_slice(self.bytes()?))),
            2 => EntryPayload::Membership(self.membership()?),
            _ => return Err(DecodeError("bad entry kind")),
        };
        Ok(Entry { log_id, payload })
    }

    pub(crate) fn snapshot_meta(&mut self) -> Result<SnapshotMeta, DecodeError> {
        let last_log_id = self.option_log_id()?;
        let last_membership = self.stored_membership()?;
        Ok(SnapshotMeta {
            last_log_id,
            last_membership,
        })
    }

    pub(crate) fn append_request(
        &mut self,
    ) -> Result<AppendEntriesRequest<TypeConfig>, DecodeError> {
        let vote = self.vote()?;
        let prev_log_id = self.option_log_id()?;
        let leader_commit = self.option_log_id()?;
        let count = self.count()?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            entries.push(self.entry()?);
        }
        Ok(AppendEntriesRequest {
            vote,
            prev_log_id,
            entries,
            leader_commit,
        })
    }

    pub(crate) fn append_response(
        &mut self,
    ) -> Result<AppendEntriesResponse<TypeConfig>, DecodeError> {
        Ok(match self.u8()? {
            0 => AppendEntriesResponse::Success,
            1 => AppendEntriesResponse::PartialSuccess(self.option_log_id()?),
            2 => AppendEntriesResponse::Conflict,
            3 => AppendEntriesResponse::HigherVote(self.vote()?),
            _ => return Err(DecodeError("bad append response")),
        })
    }

    pub(crate) fn vote_request(&mut self) -> Result<VoteRequest<TypeConfig>, DecodeError> {
        let vote = self.vote()?;
        let last_log_id = self.option_log_id()?;
        let mut request = VoteRequest::new(vote, last_log_id);
        request.leadership_transfer = self.bool()?;
        Ok(request)
    }

    pub(crate) fn vote_response(&mut self) -> Result<VoteResponse<TypeConfig>, DecodeError> {
        let vote = self.vote()?;
        let granted = self.bool()?;
        let last_log_id = self.option_log_id()?;
        Ok(VoteResponse::new(vote, last_log_id, granted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_truncation_is_an_error() {
        let membership = Membership::new_with_defaults(
            vec![BTreeSet::from([1, 2, 3])],
            BTreeSet::from([1, 2, 3]),
        );
        let entries = [
            Entry {
                log_id: log_id(3, 2, 7),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: log_id(3, 2, 8),
                payload: EntryPayload::Normal(Proposal(Bytes::from_static(b"hello"))),
            },
            Entry {
                log_id: log_id(4, 1, 9),
                payload: EntryPayload::Membership(membership),
            },
        ];
        for entry in entries {
            let mut writer = Writer::new();
            writer.entry(&entry);
            let encoded = writer.finish();
            let decoded = Reader::new(&encoded).entry().expect("decodes");
            assert_eq!(decoded.log_id, entry.log_id);
            assert_eq!(decoded.payload, entry.payload);
            for cut in 0..encoded.len() {
                assert!(
                    Reader::new(&encoded[..cut]).entry().is_err(),
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn a_huge_count_is_refused_without_allocating() {
        let mut writer = Writer::new();
        writer.vote(&Vote::new(1, 1));
        writer.u8(0);
        writer.u8(0);
        writer.u64(u64::MAX);
        let encoded = writer.finish();
        assert!(Reader::new(&encoded).append_request().is_err());
    }
}

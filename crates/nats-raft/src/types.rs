//! The openraft type configuration of every group, and the crate's own small public types.
//!
//! Everything named `Raft*`/`Log*`/`Vote*` here is crate-private: callers see node ids as `u64`
//! and payloads as [`Bytes`].

use std::fmt;

use bytes::Bytes;

/// A node's id inside a group. A wiped node must come back under a new id (openraft treats a
/// reverted log under the same id as corruption).
pub type NodeId = u64;

/// An application payload carried by one log entry.
#[derive(Clone, PartialEq, Eq)]
pub struct Proposal(pub Bytes);

impl fmt::Debug for Proposal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Proposal({} bytes)", self.0.len())
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} bytes", self.0.len())
    }
}

openraft::declare_raft_types!(
    /// The type configuration shared by all groups.
    pub(crate) TypeConfig:
        D = Proposal,
        R = (),
        NodeId = NodeId,
        Node = openraft::impls::EmptyNode,
);

pub(crate) type LogId =
    openraft::impls::LogId<openraft::impls::leader_id_adv::LeaderId<u64, NodeId>>;
pub(crate) type LeaderId = openraft::impls::leader_id_adv::LeaderId<u64, NodeId>;
pub(crate) type Vote = openraft::impls::Vote<LeaderId>;
pub(crate) type EntryPayload = openraft::EntryPayload<Proposal, NodeId, openraft::impls::EmptyNode>;
pub(crate) type Entry = openraft::Entry<LeaderId, EntryPayload>;
pub(crate) type Membership = openraft::Membership<NodeId, openraft::impls::EmptyNode>;
pub(crate) type StoredMembership =
    openraft::StoredMembership<LeaderId, NodeId, openraft::impls::EmptyNode>;
pub(crate) type SnapshotMeta = openraft::SnapshotMeta<LeaderId, NodeId, openraft::impls::EmptyNode>;

pub(crate) fn log_id(term: u64, node: NodeId, index: u64) -> LogId {
    LogId::new(
        LeaderId {
            term,
            node_id: node,
        },
        index,
    )
}

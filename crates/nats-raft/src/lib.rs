//! nats-raft: the Raft engine adapter. One [`RaftGroup`] per replicated asset, on openraft
//! (pinned exactly; no other workspace crate names an openraft type).
//!
//! What lives here: the group handle ([`RaftGroup`]: start/stop, `propose`, status and waits,
//! leader transfer, serialised membership changes, supervision), the log on files (`log_file`:
//! checksummed segments, metadata with vote and commit index; `log_store`: group commit, one fsync
//! before the `IOFlushed` callbacks it covers), the binary codec for entries and RPCs (`codec`),
//! the application seams [`StateMachine`] and [`Network`], and commit-index protection (a node
//! whose log ends before its recorded commit neither votes nor campaigns until it has caught up).
//!
//! Who calls it: the server's clustering layer (meta group, stream groups), which implements
//! [`Network`] over routes and [`StateMachine`] over the stream store; tests implement both in
//! memory.
//!
//! What it must not know: NATS subjects, routes, JetStream, the stream store. Payloads and
//! snapshots are opaque bytes.

mod checked_file;
mod codec;
mod config;
mod group;
mod in_order;
mod leader_contact;
mod leadership;
mod leading_since;
mod lease;
mod log_file;
mod log_store;
mod meta_record;
mod network;
mod snapshot_chunks;
mod snapshot_file;
mod stall_handover;
mod state_machine;
mod tick_driver;
mod timeline;
mod types;

pub use codec::DecodeError;
pub use config::GroupConfig;
pub use group::{
    AppendReply, Committing, FollowerProgress, GroupStatus, LogCounters, LogSize, RaftGroup,
    RaftGroupError, RecoveryReport, Role, OVERRIDE_MARGIN,
};
pub use in_order::InOrder;
pub use lease::LeaderLease;
pub use log_file::TornTail;
pub use network::{
    is_append_request, is_transfer_leader_request, is_vote_request, refused as refused_reply,
    Network, NetworkError, ReplyFuture, APPENDS_IN_FLIGHT,
};
pub use snapshot_file::SnapshotOut;
pub use state_machine::StateMachine;
pub use tick_driver::TickDriver;
pub use types::NodeId;

//! [`GroupConfig`]: how one Raft group starts on this node (membership at bootstrap, its
//! directory, timings), and the openraft [`Config`] made from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openraft::{Config, SnapshotPolicy};

use crate::group::RaftGroupError;
use crate::tick_driver::TickDriver;
use crate::types::NodeId;

/// How to start one group on this node.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// The group's name, the same on every node (the transport addresses groups by it).
    pub group: String,
    /// This node's id in the group.
    pub node_id: NodeId,
    /// The voters the group starts with. Used only when `bootstrap` is set and the directory holds
    /// no log yet; every founding member may bootstrap with the same list.
    pub members: Vec<NodeId>,
    /// Found the group with `members` if the log is empty. Off for a node that joins an existing
    /// group (it waits to be added by the leader).
    pub bootstrap: bool,
    /// Where the group's log, metadata and snapshot live (created if missing).
    pub directory: PathBuf,
    /// How often a leader sends heartbeats.
    pub heartbeat_interval: Duration,
    /// A follower that hears no leader for a random time in this range starts an election.
    pub election_timeout: (Duration, Duration),
    /// A snapshot is built after this many applied entries since the last one.
    pub snapshot_after_entries: u64,
    /// A follower further behind than this many entries gets the snapshot instead of entries.
    pub snapshot_lag_threshold: u64,
    /// A leader that has not heard from a quorum for this long no longer reports itself as
    /// leading in [`RaftGroup::leading`] (openraft keeps the role; nats-server's leader steps
    /// down on lost quorum). By then the other voters may elect a leader of their own.
    pub lost_quorum: Duration,
    /// A leadership resumed by a restart (openraft's committed vote for itself, no election)
    /// leads in [`RaftGroup::leading`] only once a quorum acknowledged it (meanwhile the
    /// others may have elected a leader in a later term). On by default.
    pub resumed_needs_quorum: bool,
    /// Hand the group's tick and heartbeats to this node-wide driver (`tick_driver.rs`); its
    /// interval must be `heartbeat_interval`. `None`: openraft's own tick task.
    pub tick_driver: Option<Arc<TickDriver>>,
}

impl GroupConfig {
    /// NATS-like defaults: heartbeat 500 ms, election 2-4 s, a snapshot every 5,000 entries.
    pub fn new(
        group: impl Into<String>,
        node_id: NodeId,
        members: Vec<NodeId>,
        directory: PathBuf,
    ) -> Self {
        GroupConfig {
            group: group.into(),
            node_id,
            members,
            bootstrap: true,
            directory,
            heartbeat_interval: Duration::from_millis(500),
            election_timeout: (Duration::from_secs(2), Duration::from_secs(4)),
            snapshot_after_entries: 5_000,
            snapshot_lag_threshold: 5_000,
            lost_quorum: Duration::from_secs(2),
            resumed_needs_quorum: true,
            tick_driver: None,
        }
    }

    pub(crate) fn raft_config(&self) -> Result<Config, RaftGroupError> {
        // The leader's lease must run out before a voter that acknowledged it may vote for
        // another on its timers (openraft's leader lease: the election timeout's maximum, from
        // when the voter heard the round, after it was sent). A campaign on a lost route waits
        // out `lost_quorum` itself (`RaftGroup::leader_unreachable`).
        if self.lost_quorum > self.election_timeout.1 {
            return Err(RaftGroupError::Config(format!(
                "lost_quorum {:?} above the election timeout's maximum {:?}: a leader would \
                 answer reads after the others may have elected another",
                self.lost_quorum, self.election_timeout.1
            )));
        }
        let config = Config {
            cluster_name: self.group.clone(),
            heartbeat_interval: self.heartbeat_interval.as_millis() as u64,
            election_timeout_min: self.election_timeout.0.as_millis() as u64,
            election_timeout_max: self.election_timeout.1.as_millis() as u64,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_after_entries),
            replication_lag_threshold: self.snapshot_lag_threshold,
            max_in_snapshot_log_to_keep: 0,
            // Lazily allocated, but a bound keeps a flooded group from taking all memory.
            api_channel_size: Some(4_096),
            notification_channel_size: Some(4_096),
            // openraft's per-stage latency record (runtime statistics we never read) is a ring
            // of this many batches per stage, six stages, resident once the log has passed
            // through it: 1,024 (the default) is 147 KiB in every group.
            log_stage_capacity: Some(16),
            install_snapshot_timeout: 30_000,
            // A voter whose election timer fires asks first whether it could win, and raises its
            // term only if a quorum would grant: one cut off alone, or removed from the group
            // and never told, does not campaign with ever higher terms and depose the leader
            // when it is back in touch. (A campaign on a route's loss, `leader_unreachable`,
            // asks for the votes directly.)
            enable_pre_vote: Some(true),
            ..Config::default()
        };
        config
            .validate()
            .map_err(|error| RaftGroupError::Config(error.to_string()))
    }
}

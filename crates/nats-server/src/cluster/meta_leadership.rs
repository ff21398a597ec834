//! The meta group's leadership as this server sees it: whether it leads for the API and its
//! own duties ([`Meta::leads`], [`Meta::leads_within`]), who leads ([`Meta::leader_name`]),
//! whether the API sees a working leader ([`Meta::unavailable`], [`Meta::leader_missing`],
//! [`Meta::leader_within`]), and
//! the tasks that follow leader changes (the log line for each new leader, and on a leadership
//! a quorum confirmed here the `$JS.EVENT.ADVISORY.DOMAIN.LEADER_ELECTED` advisory and the
//! members' records, `incarnation.rs`). Started with the group by `Meta::start` (`meta.rs`).

use std::time::Duration;

use nats_raft::{GroupStatus, NodeId, Role};
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::meta::{Meta, META_QUORUM_LOST};

const ADVISORY_SUBJECT: &str = "$JS.EVENT.ADVISORY.DOMAIN.LEADER_ELECTED";
/// How often [`Meta::leader_within`] looks again when nothing it is woken by happened.
const AVAILABLE_POLL: Duration = Duration::from_millis(50);

impl Meta {
    /// Whether this server leads the meta group for the API and its own duties now: openraft's
    /// leader, everything before its leadership applied, and confirmed by a quorum within
    /// its lease (`META_LEASE`, 1.5 s, `meta.rs`) (a leadership resumed by a restart
    /// only once a quorum answered: until then the others may have a leader of a later term,
    /// which answers).
    pub fn leads(&self) -> bool {
        self.leading.borrow().is_some()
    }

    /// Whether this server leads (as [`Meta::leads`]) within `timeout`: at once when it does;
    /// while openraft has it leading and a quorum has not confirmed that yet (just elected, its
    /// first heartbeat round out), once they do; false as soon as it is not openraft's leader,
    /// or is but [`Meta::unavailable`] (no quorum's word for [`META_QUORUM_LOST`]).
    pub(super) async fn leads_within(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut leading = self.leading.clone();
        loop {
            if leading.borrow_and_update().is_some() {
                return true;
            }
            if self.group.status().role != Role::Leader || self.unavailable() {
                return false;
            }
            let wake = (tokio::time::Instant::now() + Duration::from_millis(50)).min(deadline);
            if let Ok(Err(_)) = tokio::time::timeout_at(wake, leading.changed()).await {
                return false;
            }
            if tokio::time::Instant::now() >= deadline {
                return leading.borrow().is_some();
            }
        }
    }

    /// Whether the meta group has no working leader from here: none known once the group has
    /// run [`META_QUORUM_LOST`] in this process (as nats-server's `isLeaderless`: a server just
    /// restarted has not heard the leader yet), or this leader has not heard from a quorum for
    /// a while since it took the role (it keeps the role in openraft; nats-server's leader
    /// steps down). A leader just elected, its first heartbeat round not yet acknowledged, is
    /// available.
    pub(super) fn unavailable(&self) -> bool {
        let status = self.group.status();
        leader_missing(&status)
            && (status.role == Role::Leader || self.started.elapsed() > META_QUORUM_LOST)
    }

    /// Whether this server sees no working meta leader now ([`Meta::unavailable`] however
    /// briefly the group has run here).
    pub(super) fn leader_missing(&self) -> bool {
        leader_missing(&self.group.status())
    }

    /// Whether this server sees a working meta leader ([`Meta::leader_missing`] no longer
    /// holds) within `timeout`: woken when it hears of a leader, and every [`AVAILABLE_POLL`]
    /// for the rest (a leader's quorum regained, its own election).
    pub(super) async fn leader_within(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if !self.leader_missing() {
                return true;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            let slice = (deadline - now).min(AVAILABLE_POLL);
            let _ = self
                .group
                .wait_for(slice, |status| {
                    status.leader.is_some() && status.role != Role::Leader
                })
                .await;
        }
    }

    /// The name of the current leader, if there is one.
    pub fn leader_name(&self) -> Option<String> {
        self.group.status().leader.map(|node| self.name_of(node))
    }

    fn leader_elected_advisory(&self, status: &GroupStatus) -> Value {
        let replicas: Vec<Value> = status
            .voters
            .iter()
            .map(|node| self.replica(*node, status))
            .collect();
        json!({
            "type": "io.nats.jetstream.advisory.v1.domain_leader_elected",
            "id": crate::security::identity::new_nuid(),
            "timestamp": go_compat::time_text::rfc3339_nano(OffsetDateTime::now_utc()),
            "leader": self.own_peer,
            "replicas": replicas,
            "cluster": self.cluster_name,
        })
    }
}

/// No working leader in `status`: none known (a follower, a candidate), or this leader without a
/// quorum's acknowledgement for [`META_QUORUM_LOST`] since it took the role.
fn leader_missing(status: &GroupStatus) -> bool {
    match status.role {
        Role::Leader if status.voters.len() > 1 => status
            .without_quorum_for()
            .is_some_and(|age| age > META_QUORUM_LOST),
        Role::Leader => false,
        _ => status.leader.is_none(),
    }
}

/// Logs leader changes.
pub(super) async fn watch_leader(meta: std::sync::Weak<Meta>) {
    let mut last: Option<(u64, Option<NodeId>)> = None;
    loop {
        let Some(strong) = meta.upgrade() else {
            return;
        };
        let group = strong.group.clone();
        drop(strong);
        let previous = last;
        let status = match group
            .wait_for(Duration::from_secs(60), |status| {
                Some((status.term, status.leader)) != previous && status.leader.is_some()
            })
            .await
        {
            Ok(status) => status,
            Err(nats_raft::RaftGroupError::Timeout) => continue,
            Err(_) => return,
        };
        last = Some((status.term, status.leader));
        let Some(meta) = meta.upgrade() else {
            return;
        };
        if status.role == Role::Leader {
            tracing::info!(
                "JetStream cluster new metadata leader: {}",
                meta.server_name
            );
        } else if let Some(leader) = status.leader {
            tracing::info!(
                "JetStream cluster new metadata leader: {}",
                meta.name_of(leader)
            );
        }
    }
}

/// When a quorum confirmed a new leadership of this server ([`Meta::leads`]): sends the
/// leader-elected advisory and records the members' servers in the meta log at once (a member
/// killed before its record committed could not be recognised after a wipe).
pub(super) async fn follow_leadership(
    meta: std::sync::Weak<Meta>,
    mut leading: tokio::sync::watch::Receiver<Option<u64>>,
) {
    let mut last = None;
    loop {
        let now = *leading.borrow_and_update();
        if now.is_some() && now != last {
            let Some(meta) = meta.upgrade() else {
                return;
            };
            let status = meta.group.status();
            meta.publish(
                ADVISORY_SUBJECT,
                None,
                meta.leader_elected_advisory(&status),
            );
            meta.record_members(&status);
        }
        last = now;
        if leading.changed().await.is_err() {
            return;
        }
    }
}

//! The meta group's leadership as this server sees it: whether it leads for the API and its
//! own duties ([`Meta::leads`], [`Meta::leads_within`]), who leads ([`Meta::leader_name`]), and
//! the tasks that follow leader changes (the log line for each new leader, and on a leadership
//! a quorum confirmed here the `$JS.EVENT.ADVISORY.DOMAIN.LEADER_ELECTED` advisory and the
//! members' records, `incarnation.rs`). Started with the group by `Meta::start` (`meta.rs`).

use std::time::Duration;

use nats_raft::{GroupStatus, NodeId, Role};
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::meta::Meta;

const ADVISORY_SUBJECT: &str = "$JS.EVENT.ADVISORY.DOMAIN.LEADER_ELECTED";

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
    /// first heartbeat round out), once they do; false as soon as it is not openraft's leader.
    pub(super) async fn leads_within(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut leading = self.leading.clone();
        loop {
            if leading.borrow_and_update().is_some() {
                return true;
            }
            if self.group.status().role != Role::Leader {
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

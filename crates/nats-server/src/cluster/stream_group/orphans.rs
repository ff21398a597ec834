//! Group directories no assignment names any more ([`sweep_when_current`]): a replicated
//! stream's group directory under `_js_` whose assignment was removed while this server was down
//! (the stream deleted, this server taken off its peers) is not met by the meta log this server
//! catches up with when the leader sends a snapshot instead of the entries, nor when the server
//! stopped between the removal and the deletion of the files. Once this server is current with
//! the meta group (it knows the cluster's assignments), the directories of groups that no
//! assignment places on this server, and that no group here runs, are removed.
//!
//! nats-server does the same with its streams recovered from disk (`checkForOrphans`, 30 s after
//! its meta recovery, once its meta group has a leader and is current; and on a meta snapshot
//! that catches it up, `getOrphans`). Ours recovers no stream from disk: a directory is all that
//! is left of an orphan.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use nats_raft::Role;

use super::StreamGroups;
use crate::cluster::meta::Meta;

/// How often the sweep checks whether this server is current with the meta group.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Waits until this server is current with the meta group (its leader for the API, or a
/// follower caught up with a leader it hears from: `Meta::health`), then removes the group
/// directories no assignment places here. Once per start of the meta group; ends with it.
pub(in crate::cluster) async fn sweep_when_current(meta: Weak<Meta>) {
    loop {
        let Some(meta) = meta.upgrade() else {
            return;
        };
        let follower = meta.group().status().role != Role::Leader;
        if meta.leads() || (follower && meta.health().is_ok()) {
            remove_orphans(&meta);
            return;
        }
        drop(meta);
        tokio::time::sleep(CHECK_EVERY).await;
    }
}

/// Removes (in the background) the group directories under `_js_` of groups neither placed on
/// this server by the meta state (on this incarnation or an earlier one of this server) nor
/// running here; checked and renamed under the assignments' lock, so no assignment applied
/// meanwhile can name one (a group's name is new with every stream created, and an entry
/// applied later that names an existing group finds it assigned here already).
fn remove_orphans(meta: &Meta) {
    let assignments = meta.assignments.lock();
    let assigned: BTreeSet<&str> = assignments
        .placed_on_server(&meta.server_name, &meta.own_peer, None)
        .into_iter()
        .map(|record| record.group.name.as_str())
        .collect();
    let removed = meta.stream_groups.remove_unassigned(&assigned);
    drop(assignments);
    for name in removed {
        tracing::warn!(group = %name, "JetStream cluster: orphaned stream group directory (no assignment here), removed");
    }
}

impl StreamGroups {
    /// Removes the group directories under the root that are not in `assigned` and whose group
    /// does not run here (a group closed meanwhile removes its own); the names removed.
    fn remove_unassigned(&self, assigned: &BTreeSet<&str>) -> Vec<String> {
        let running: BTreeSet<String> = self
            .groups
            .lock()
            .values()
            .map(|group| group.name.clone())
            .collect();
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let orphan = is_group_name(&name)
                && entry.file_type().is_ok_and(|kind| kind.is_dir())
                && !assigned.contains(name.as_str())
                && !running.contains(&name);
            if !orphan {
                continue;
            }
            match nats_store::remove_dir_soon(&entry.path()) {
                Ok(()) => removed.push(name),
                Err(error) => {
                    tracing::warn!(group = %name, %error, "removing an orphaned stream group directory")
                }
            }
        }
        removed
    }
}

/// A stream group's directory name (`S-R<replicas>F-<suffix>`, `placement.rs`): the meta
/// group's `_meta_`, trash names (with a `.`) and anything else are left alone.
fn is_group_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("S-R") else {
        return false;
    };
    let Some((replicas, suffix)) = rest.split_once("F-") else {
        return false;
    };
    !replicas.is_empty()
        && replicas.bytes().all(|byte| byte.is_ascii_digit())
        && !suffix.is_empty()
        && suffix.bytes().all(|byte| byte.is_ascii_alphanumeric())
}

/// Keeps the sweep's task alive only as long as the meta group: spawned by `Meta::start`.
pub(in crate::cluster) fn spawn(meta: &Arc<Meta>) {
    tokio::spawn(sweep_when_current(Arc::downgrade(meta)));
}

#[cfg(test)]
mod tests {
    use super::is_group_name;

    #[test]
    fn only_stream_group_names_are_taken_for_groups() {
        for name in ["S-R3F-abcd1234", "S-R1F-Zx9", "S-R12F-a"] {
            assert!(is_group_name(name), "{name}");
        }
        for name in [
            "_meta_",
            "S-R3F-abcd1234.deleted.4242.7",
            "S-R3F-",
            "S-RF-abc",
            "S-R3-abc",
            "C-R3F-abcd1234",
            "notes",
        ] {
            assert!(!is_group_name(name), "{name}");
        }
    }
}

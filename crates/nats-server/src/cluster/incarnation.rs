//! A server's incarnation: which identity its JetStream store speaks for in Raft.
//!
//! A Raft member must not take part under an identity whose votes and log it forgot: a server
//! whose store was wiped and that came back under the same node id could vote twice in a term,
//! and its leaders would find its log gone back (openraft takes that as corruption). So the
//! store keeps an incarnation number (`<store>/jetstream/incarnation`), and the node id is that
//! of the server name and the incarnation ([`peer::incarnation_peer_id`]):
//!
//! - a store with a meta group but no incarnation file (one from before incarnations) is
//!   incarnation 0, the node id of the name alone, as nats-server's peer id;
//! - a store without a meta group (a new server, or a wiped one: the two look the same from
//!   here) takes a new random incarnation, written before the meta group starts.
//!
//! The meta leader, hearing a server announce itself under a new incarnation while a member
//! holds its name under an earlier one, adds the new one (as any newcomer) and then
//! [`Meta::retire`]s the old one: out of the meta group, and in every stream group that had it,
//! the new incarnation in its place (the same server, caught up by the group as any new peer).
//!
//! The leader matches the old member to the server by the name it announced, and records each
//! member's server (name and incarnation) in the meta log ([`Operation::Member`], once per
//! member heard from): a leader that never heard an old incarnation announce itself (it
//! restarted since, or another server led then) still recognises it by that record. Incarnation
//! 0 (the name hash) is recognised without one.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nats_raft::{GroupStatus, NodeId};
use parking_lot::Mutex;

use super::assignments::{Entry, Operation};
use super::meta::Meta;
use super::peer;

/// A server heard from within this is running (it announces itself every 5 s once the meta
/// group is formed).
const ALIVE_WINDOW: std::time::Duration = std::time::Duration::from_secs(15);

/// The incarnation file's name, in the JetStream store root.
const FILE: &str = "incarnation";

/// This server's incarnation: read from `store_root`, or decided and written there (durably)
/// when the store has none. `meta_directory` is the meta group's directory in that store.
pub fn load_or_create(store_root: &Path, meta_directory: &Path) -> Result<u64, String> {
    let path = store_root.join(FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            return text.trim().parse::<u64>().map_err(|_| {
                format!(
                    "JetStream store incarnation file {} is not a number",
                    path.display()
                )
            })
        }
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("reading {}: {error}", path.display()));
        }
        Err(_) => {}
    }
    let incarnation = if meta_directory.exists() {
        0
    } else {
        loop {
            let number: u64 = rand::random();
            if number != 0 {
                break number;
            }
        }
    };
    let written = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(store_root)?;
        let temporary = store_root.join(format!("{FILE}.tmp"));
        let mut file = std::fs::File::create(&temporary)?;
        writeln!(file, "{incarnation}")?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(store_root)?.sync_all()
    })();
    written.map_err(|error| format!("writing {}: {error}", path.display()))?;
    if incarnation != 0 {
        tracing::info!("JetStream store has no meta group: new incarnation {incarnation}");
    }
    Ok(incarnation)
}

impl Meta {
    /// The node of the server named `name`: its latest incarnation heard from, else the meta
    /// member the meta log recorded under that name (a leader restarted a moment ago has not
    /// heard the others announce themselves yet, but its log names their incarnations).
    pub(super) fn node_of_name(&self, name: &str) -> Option<NodeId> {
        let heard = self
            .known
            .lock()
            .iter()
            .filter(|(_, known)| known.name == name)
            .max_by_key(|(_, known)| known.heard)
            .and_then(|(peer, _)| peer::node_id(peer));
        heard.or_else(|| self.recorded_member_named(name))
    }

    /// The current meta member (voter or learner) the meta log recorded as the server `name`.
    fn recorded_member_named(&self, name: &str) -> Option<NodeId> {
        let status = self.group.status();
        let assignments = self.assignments.lock();
        let found = status.members().find(|node| {
            assignments
                .member(&peer::peer_of(*node))
                .is_some_and(|member| member.name == name)
        });
        found
    }

    /// The peer id of the server named `name`: its node as [`Meta::node_of_name`] finds it,
    /// else nats-server's peer id of the name.
    pub(super) fn peer_of_name(&self, name: &str) -> String {
        self.node_of_name(name)
            .map_or_else(|| peer::peer_id(name), peer::peer_of)
    }

    /// The server name the meta log recorded for member `peer`.
    pub(super) fn recorded_name(&self, peer: &str) -> Option<String> {
        self.assignments
            .lock()
            .member(peer)
            .map(|member| member.name.clone())
    }

    /// Whether a later incarnation of the same server announced itself after `peer` did (or,
    /// `peer` not heard from here, after the meta log recorded it).
    pub(super) fn superseded(&self, peer: &str) -> bool {
        let recorded = self.recorded_name(peer);
        let known = self.known.lock();
        let own = known.get(peer);
        let name = match own {
            Some(own) => own.name.clone(),
            None => match known
                .values()
                .find(|other| peer::peer_id(&other.name) == peer)
            {
                // Not heard from here: an incarnation 0 whose server announced a later one.
                Some(other) => return other.incarnation != 0,
                // Not heard from here: the server the meta log recorded it as, superseded by
                // an incarnation of that server heard from lately (not one heard before a wipe
                // whose hellos ended: the recorded member may be the later one).
                None => {
                    let Some(name) = recorded else {
                        return false;
                    };
                    return known.iter().any(|(other_peer, other)| {
                        other_peer != peer
                            && other.name == name
                            && other.heard.elapsed() < ALIVE_WINDOW
                    });
                }
            },
        };
        let heard = own.map(|own| own.heard);
        known.iter().any(|(other_peer, other)| {
            other_peer != peer && other.name == name && heard.is_none_or(|at| other.heard > at)
        })
    }

    /// Members superseded by a later incarnation that is a voter: (old, new) node ids.
    fn retirable(&self, status: &GroupStatus) -> Vec<(NodeId, NodeId)> {
        let own = self.group.node_id();
        let members: Vec<NodeId> = status.members().filter(|node| *node != own).collect();
        let mut pairs = Vec::new();
        for old in members {
            let old_peer = peer::peer_of(old);
            if !self.superseded(&old_peer) {
                continue;
            }
            let name = self.name_of(old);
            let name = if name == old_peer {
                // Not heard from here: the server whose incarnation 0 it is.
                let known = self.known.lock();
                known
                    .values()
                    .find(|other| peer::peer_id(&other.name) == old_peer)
                    .map(|other| other.name.clone())
                    .unwrap_or(name)
            } else {
                name
            };
            if let Some(new) = self.node_of_name(&name) {
                if new != old && status.voters.contains(&new) {
                    pairs.push((old, new));
                }
            }
        }
        pairs
    }

    /// Leader: starts [`Meta::retire`] for every member superseded by a voter, unless one for
    /// it runs already (`retiring`).
    pub(super) fn retire_superseded(
        self: &Arc<Self>,
        status: &GroupStatus,
        retiring: &Arc<Mutex<BTreeSet<NodeId>>>,
    ) {
        for (old, new) in self.retirable(status) {
            if !retiring.lock().insert(old) {
                continue;
            }
            let retiring = retiring.clone();
            let meta = self.clone();
            tokio::spawn(async move {
                meta.retire(old, new).await;
                retiring.lock().remove(&old);
            });
        }
    }

    /// Leader: records in the meta log the server of every member heard from whose record is
    /// missing or differs, one run at a time (`recording_members`), when every member reads
    /// `member` entries (`features.rs`). Called when a quorum confirmed a new leadership
    /// (`meta.rs` `follow_leadership`) and at each announcement or tick while leading.
    pub(super) fn record_members(self: &Arc<Self>, status: &GroupStatus) {
        let recording = &self.recording_members;
        let unrecorded: Vec<(String, String, u64)> = {
            let known = self.known.lock();
            let assignments = self.assignments.lock();
            status
                .members()
                .map(peer::peer_of)
                .filter_map(|peer| {
                    let server = known.get(&peer)?;
                    let recorded = assignments.member(&peer).is_some_and(|member| {
                        member.name == server.name && member.incarnation == server.incarnation
                    });
                    (!recorded).then(|| (peer, server.name.clone(), server.incarnation))
                })
                .collect()
        };
        if unrecorded.is_empty() {
            return;
        }
        // Older rnats builds cannot apply a `member` entry (`features.rs`).
        let members = status.members();
        if !self.reads(super::features::Feature::MemberRecords, members) {
            return;
        }
        if recording.swap(true, Ordering::AcqRel) {
            return;
        }
        let (meta, recording) = (self.clone(), recording.clone());
        // All at once (the group batches them into one append): a new leader records the
        // members within one commit round of taking the role.
        tokio::spawn(async move {
            let mut proposals = tokio::task::JoinSet::new();
            for (peer, name, incarnation) in unrecorded {
                let entry = Entry::new(Operation::Member {
                    peer,
                    name,
                    incarnation,
                });
                proposals.spawn(super::placement::propose(meta.group.clone(), entry));
            }
            while proposals.join_next().await.is_some() {}
            recording.store(false, Ordering::Release);
        });
    }

    /// Replaces the member `old` by `new`, a later incarnation of the same server that is a
    /// voter already: `old` leaves the meta group, and every stream that had it gets `new` in
    /// its place (a [`Operation::ReplacePeer`] each, carried out by the stream's group).
    async fn retire(self: Arc<Self>, old: NodeId, new: NodeId) {
        let _serial = self.membership.lock().await;
        let (old_peer, new_peer) = (peer::peer_of(old), peer::peer_of(new));
        let name = self.name_of(new);
        tracing::info!(
            "JetStream cluster replacing {name}'s earlier incarnation {old_peer} by {new_peer}"
        );
        if let Err(error) = self.group.remove_member(old).await {
            tracing::debug!("removing {old_peer} from the meta group: {error}");
            return;
        }
        let held: Vec<(String, String, i64, bool)> = {
            let assignments = self.assignments.lock();
            assignments
                .held_by(&old_peer)
                .into_iter()
                .filter_map(|(account, stream)| {
                    let record = assignments.stream(&account, &stream)?;
                    let has_new = record.group.peers.contains(&new_peer);
                    Some((account, stream, record.created, has_new))
                })
                .collect()
        };
        for (account, stream, created, has_new) in held {
            let entry = Entry::new(Operation::ReplacePeer {
                account: account.clone(),
                name: stream.clone(),
                created,
                removed: old_peer.clone(),
                added: (!has_new).then(|| new_peer.clone()),
            });
            if let Err(error) = super::placement::propose(self.group.clone(), entry).await {
                tracing::warn!(
                    "JetStream cluster could not put {name}'s new incarnation in stream '{account} > {stream}': {}",
                    error.description
                );
            }
        }
    }
}
